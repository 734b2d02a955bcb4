// SGLang POST /generate requests to a real SGLang server: the canonical request written with only
// the keys SGLang accepts, and the client dialect's defaults made explicit (api-dialects §4.3,
// §4.4, §10.4, §10.5).

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::bad_request;
using canonical::Extra;
using canonical::Prompt;
using canonical::RequestKind;
using canonical::SamplingParams;

// The output length the client expects when it named none (api-dialects §10.4): SGLang's own
// default is 128, so an OpenAI-completions client that omits max_tokens must get 16 explicitly.
std::optional<int64_t> client_default_max_tokens(canonical::Dialect d) {
    if (d == canonical::Dialect::sglang) {
        return std::nullopt;  // same dialect: the server's own default is the client's
    }
    return canonical::default_max_tokens(d);
}

// Writes only keys SGLang's SamplingParams accepts: anything else fails the request there.
// `format`: another family's structured output (SGLang's own clients' keys pass as they are).
void write_sampling(wire::Writer& w, const SamplingParams& sp, const GenerationRequest& req,
                    const canonical::OutputFormat& format) {
    w.StartObject();
    if (const auto budget =
            sp.max_tokens ? sp.max_tokens : client_default_max_tokens(req.dialect)) {
        wire::key(w, "max_new_tokens");
        w.Int64(*budget);
    } else if (req.dialect != canonical::Dialect::sglang) {
        // The client's dialect means "until EOS or the end of the context" (Ollama, llama.cpp,
        // TGI): null says so to SGLang (its scheduler then stops at the context length); left
        // out, SGLang would stop after 128 tokens.
        wire::key(w, "max_new_tokens");
        w.Null();
    }
    json::write_optional(w, "min_new_tokens", sp.min_tokens);
    json::write_optional(w, "temperature", sp.temperature);
    json::write_optional(w, "top_p", sp.top_p);
    if (sp.top_k) {
        // vLLM-style clients disable top-k with 0, which SGLang rejects; -1 means the same there.
        wire::key(w, "top_k");
        w.Int64(*sp.top_k == 0 ? -1 : *sp.top_k);
    }
    json::write_optional(w, "min_p", sp.min_p);
    json::write_optional(w, "frequency_penalty", sp.frequency_penalty);
    json::write_optional(w, "presence_penalty", sp.presence_penalty);
    json::write_optional(w, "repetition_penalty", sp.repetition_penalty);
    json::write_optional(w, "sampling_seed", sp.seed);
    json::write_optional(w, "ignore_eos", sp.ignore_eos);
    json::write_optional(w, "skip_special_tokens", sp.skip_special_tokens);
    json::write_optional(w, "no_stop_trim", sp.keep_stop_str);
    if (!sp.stop.empty()) {
        wire::key(w, "stop");
        w.StartArray();
        for (const std::string& s : sp.stop) {
            wire::string(w, s);
        }
        w.EndArray();
    }
    if (!sp.stop_token_ids.empty()) {
        wire::key(w, "stop_token_ids");
        w.StartArray();
        for (const int64_t id : sp.stop_token_ids) {
            w.Int64(id);
        }
        w.EndArray();
    }
    if (sp.n != 1) {
        wire::key(w, "n");
        w.Int(sp.n);
    }
    if (!sp.logit_bias.empty()) {
        wire::key(w, "logit_bias");
        w.StartObject();
        for (const canonical::LogitBias& b : sp.logit_bias) {
            wire::key(w, std::to_string(b.token));
            w.Double(b.bias);
        }
        w.EndObject();
    }
    if (format.kind == canonical::OutputFormat::Kind::regex) {
        wire::key(w, "regex");
        wire::string(w, format.regex);
    } else if (format.kind != canonical::OutputFormat::Kind::none) {
        // A string holding the schema; "any JSON object" as SGLang's own OpenAI layer sends it.
        wire::key(w, "json_schema");
        wire::string(w, format.kind == canonical::OutputFormat::Kind::json_schema
                            ? std::string_view(format.schema)
                            : canonical::kAnyObjectSchema);
    }
    if (req.dialect == canonical::Dialect::sglang) {
        // Only an SGLang client's own sampling keys (json_schema, regex, ...) mean anything here;
        // another client's are refused by encode_request unless they are inert.
        for (const Extra& e : req.sampling_extras) {
            if (!e.json.empty() && wire::is_passthrough_sampling_key(e.key)) {
                wire::key(w, e.key);
                w.RawValue(e.json.data(), e.json.size(), rapidjson::kObjectType);
            }
        }
    }
    w.EndObject();
}

// Settings SGLang's SamplingParams has no field for.
std::optional<canonical::Error> check_settings(const SamplingParams& sp, Dialect client) {
    static constexpr std::string_view kBackend = "SGLang's /generate";
    if (sp.typical_p.value_or(1.0) != 1.0) {
        return canonical::unsupported_setting(client, "typical_p", kBackend,
                                              "use top_p or min_p, or leave typical_p at 1 (off)");
    }
    if (sp.repeat_last_n && canonical::penalties_active(sp)) {
        return canonical::unsupported_setting(
            client, "repeat_last_n", kBackend,
            "its penalties look at the whole text; leave repeat_last_n out");
    }
    return std::nullopt;
}

void write_prompt(wire::Writer& w, const Prompt& p) {
    if (!p.is_tokens) {
        wire::string(w, p.text);
        return;
    }
    w.StartArray();
    for (const int64_t id : p.token_ids) {
        w.Int64(id);
    }
    w.EndArray();
}

// Top-level keys this encoder writes itself (or must never send); a pass-through extra must not
// duplicate them. return_logprob and top_logprobs_num may legitimately arrive as per-item lists in
// `extras`, which the canonical fields cannot hold.
bool is_written_top_level(std::string_view key, const GenerationRequest& req) {
    if (key == "return_logprob") {
        return req.return_logprob.has_value();
    }
    if (key == "top_logprobs_num") {
        return req.top_logprobs.has_value();
    }
    if (key == "logprob_start_len") {
        return req.prompt_logprob_start.has_value();
    }
    if (key == "return_text_in_logprobs") {
        return req.logprob_text;
    }
    return key == "text" || key == "input_ids" || key == "input_embeds" ||
           key == "sampling_params" || key == "stream" || key == "rid" || key == "model";
}

// The prompt's entries are wanted: for their logprobs, or, for an echo of a token-id prompt,
// for their texts (the client's encoder echoes the prompt from them; SGLang's /generate does not
// echo, and a text prompt is echoed from the request itself).
bool needs_prompt_entries(const GenerationRequest& req, bool tokens) {
    return canonical::wants_prompt_logprobs(req) || (req.echo && tokens);
}

}  // namespace

Result<std::string> SglangCodec::encode_request(const GenerationRequest& req,
                                                const UpstreamOptions& options) const {
    if (req.kind == RequestKind::chat) {
        return bad_request("chat requests go to SGLang's /v1/chat/completions: /generate takes "
                           "raw text or token ids and applies no chat template",
                           "messages");
    }
    if (req.prompts.empty()) {
        return bad_request("the request has no prompt", "prompt");
    }
    const bool tokens = req.prompts.front().is_tokens;
    size_t prompt_bytes = 0;
    for (const Prompt& p : req.prompts) {
        if (p.is_tokens != tokens) {
            return bad_request("SGLang's /generate cannot mix text and token-id prompts in one "
                               "request; send them separately",
                               "prompt");
        }
        prompt_bytes += p.is_tokens ? p.token_ids.size() * 8 : p.text.size() + 8;
    }
    if (!req.item_sampling.empty() && req.item_sampling.size() != req.prompts.size()) {
        return bad_request("the request has " + std::to_string(req.item_sampling.size()) +
                               " per-prompt sampling settings for " +
                               std::to_string(req.prompts.size()) + " prompts",
                           "sampling_params");
    }
    if (auto err = check_settings(req.sampling, req.dialect)) {
        return std::move(*err);
    }
    for (const SamplingParams& sp : req.item_sampling) {
        if (auto err = check_settings(sp, req.dialect)) {
            return std::move(*err);
        }
    }
    canonical::OutputFormat format;
    if (req.dialect != Dialect::sglang) {
        if (auto err = canonical::refuse_foreign_extras(req, "an SGLang backend", {}, true)) {
            return std::move(*err);
        }
        // SGLang takes every kind.
        auto fmt = canonical::output_format_for(req, "an SGLang backend", {}, {});
        if (!fmt) {
            return fmt.error();
        }
        format = std::move(fmt.value());
    }
    const bool single = !req.prompt_is_list && req.prompts.size() == 1;

    std::string body;
    body.reserve(prompt_bytes + 256);
    wire::OutWriter w(body);
    w->StartObject();
    wire::key(*w, tokens ? "input_ids" : "text");
    if (single) {
        write_prompt(*w, req.prompts.front());
    } else {
        w->StartArray();
        for (const Prompt& p : req.prompts) {
            write_prompt(*w, p);
        }
        w->EndArray();
    }
    wire::key(*w, "sampling_params");
    if (req.item_sampling.empty()) {
        write_sampling(*w, req.sampling, req, format);
    } else {
        w->StartArray();
        for (const SamplingParams& sp : req.item_sampling) {
            write_sampling(*w, sp, req, format);
        }
        w->EndArray();
    }
    wire::key(*w, "stream");
    w->Bool(options.stream);
    if (!req.request_ids.empty()) {
        wire::key(*w, "rid");
        if (single && req.request_ids.size() == 1) {
            wire::string(*w, req.request_ids.front());
        } else {
            w->StartArray();
            for (const std::string& rid : req.request_ids) {
                wire::string(*w, rid);
            }
            w->EndArray();
        }
    }
    if (req.dialect == Dialect::sglang) {
        json::write_optional(*w, "return_logprob", req.return_logprob);
        json::write_optional(*w, "top_logprobs_num", req.top_logprobs);
        json::write_optional(*w, "logprob_start_len", req.prompt_logprob_start);
        if (req.logprob_text) {
            wire::key(*w, "return_text_in_logprobs");
            w->Bool(true);
        }
    } else if (const bool prompt_entries = needs_prompt_entries(req, tokens);
               canonical::ask_logprobs(req) || prompt_entries) {
        wire::key(*w, "return_logprob");
        w->Bool(true);
        if (const size_t top = canonical::top_count(req); top > 0) {
            wire::key(*w, "top_logprobs_num");
            w->Uint64(top);
        }
        // Token texts, not ids: every other dialect shows a token as text.
        wire::key(*w, "return_text_in_logprobs");
        w->Bool(true);
        if (prompt_entries) {
            wire::key(*w, "logprob_start_len");
            w->Int64(req.prompt_logprob_start.value_or(0));
        }
    }
    if (req.dialect == Dialect::sglang) {
        // Only an SGLang client's unknown keys mean anything to an SGLang server.
        for (const Extra& e : req.extras) {
            if (!e.json.empty() && !is_written_top_level(e.key, req)) {
                wire::key(*w, e.key);
                w->RawValue(e.json.data(), e.json.size(), rapidjson::kObjectType);
            }
        }
    }
    w->EndObject();
    return body;
}

}  // namespace infergate::translators::sglang
