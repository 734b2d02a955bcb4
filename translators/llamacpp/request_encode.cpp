// llama.cpp /completion requests (api-dialects §7.3): writing one for a llama-server backend,
// and refusing what /completion cannot do faithfully.

#include <algorithm>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::Prompt;
using OptErr = std::optional<Error>;

void write_prompt(json::Writer& w, const Prompt& p) {
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

void write_number(json::Writer& w, std::string_view k, const std::optional<double>& v) {
    if (v) {
        wire::key(w, k);
        w.Double(*v);
    }
}

void write_int(json::Writer& w, std::string_view k, const std::optional<int64_t>& v) {
    if (v) {
        wire::key(w, k);
        w.Int64(*v);
    }
}

// What llama.cpp's /completion cannot do faithfully, with what would work instead.
OptErr refuse(const GenerationRequest& req) {
    if (req.kind == canonical::RequestKind::chat) {
        return canonical::bad_request(
            "chat requests cannot be sent to llama.cpp's /completion; route them to the "
            "backend's /v1/chat/completions");
    }
    const canonical::SamplingParams& s = req.sampling;
    if (s.n > 1) {
        const std::string param = canonical::client_param(req.dialect, "n");
        return canonical::bad_request(
            "'" + param +
                "': n > 1 is not supported towards a llama.cpp /completion backend (its support "
                "varies by build); send n = 1 or one request per sample",
            param);
    }
    for (const canonical::SamplingParams& item : req.item_sampling) {
        if (!(item == req.item_sampling.front())) {
            return canonical::bad_request(
                "llama.cpp applies one set of sampling parameters to a whole batch; send the "
                "items with different sampling_params as separate requests",
                "sampling_params");
        }
    }
    if (req.prompts.empty()) {
        return canonical::bad_request("the request has no prompt", "prompt");
    }
    static constexpr std::string_view kBackend = "a llama.cpp backend";
    // Generated tokens' logprobs only (n_probs): this engine has no prompt logprobs. An echo
    // without them is the client encoder's own (it has the prompt's text).
    if (auto e = canonical::refuse_logprobs(req, kBackend, {.generated = true, .prompt = false})) {
        return e;
    }
    const auto unsupported = [&req](std::string_view param, std::string_view instead) {
        return canonical::unsupported_setting(req.dialect, param, kBackend, instead);
    };
    if (!s.stop_token_ids.empty()) {
        return unsupported("stop_token_ids", "use stop strings");
    }
    if (s.min_tokens && *s.min_tokens > 0) {
        return unsupported("min_tokens", "leave it out");
    }
    if (s.keep_stop_str && *s.keep_stop_str) {
        return unsupported("include_stop_str_in_output",
                           "keeping the stop string in the output is not possible (llama.cpp "
                           "always trims it); send the request without stop strings, or without "
                           "include_stop_str_in_output / no_stop_trim");
    }
    if (!s.skip_special_tokens.value_or(true)) {
        return unsupported(
            "skip_special_tokens",
            "llama-server writes special tokens only when started with --special; leave it out");
    }
    if (req.dialect != Dialect::llamacpp) {
        return canonical::refuse_foreign_extras(req, "a llama.cpp backend", {}, true);
    }
    return std::nullopt;
}

}  // namespace

std::string_view LlamacppCodec::upstream_path(const GenerationRequest& /*req*/) const {
    // Chat never reaches this encoder (encode_request refuses it): the proxy sends chat to
    // llama.cpp's /v1/chat/completions.
    return "/completion";
}

Result<std::string> LlamacppCodec::encode_request(const GenerationRequest& req,
                                                  const UpstreamOptions& options) const {
    if (OptErr e = refuse(req)) {
        return *e;
    }
    // Another family's structured output as llama.cpp's json_schema (its grammar is GBNF).
    canonical::OutputFormat format;
    if (req.dialect != Dialect::llamacpp) {
        auto fmt = canonical::output_format_for(
            req, "a llama.cpp backend", {canonical::OutputFormat::Kind::regex},
            "llama.cpp takes a JSON schema or a GBNF grammar, no regular expression");
        if (!fmt) {
            return fmt.error();
        }
        format = std::move(fmt.value());
    }
    const canonical::SamplingParams& s =
        req.item_sampling.empty() ? req.sampling : req.item_sampling.front();
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "prompt");
    // A list of one is written as that prompt: llama-server answers both alike (one result is
    // sent as an object, not a list), and the client still gets its dialect's answer to a list.
    if (req.prompts.size() > 1) {
        w.StartArray();
        for (const Prompt& p : req.prompts) {
            write_prompt(w, p);
        }
        w.EndArray();
    } else {
        write_prompt(w, req.prompts.front());
    }
    const std::string& model = options.model.empty() ? req.model : options.model;
    if (!model.empty()) {
        wire::key(w, "model");
        wire::string(w, model);
    }
    // Always explicit: llama.cpp's default (-1) means "until EOS", which is not what a client of
    // a dialect with a finite default expects.
    wire::key(w, "n_predict");
    w.Int64(s.max_tokens ? *s.max_tokens : canonical::default_max_tokens(req.dialect).value_or(-1));
    write_number(w, "temperature", s.temperature);
    write_int(w, "top_k", s.top_k);
    write_number(w, "top_p", s.top_p);
    write_number(w, "min_p", s.min_p);
    write_int(w, "seed", s.seed);
    write_number(w, "repeat_penalty", s.repetition_penalty);
    write_int(w, "repeat_last_n", s.repeat_last_n);
    write_number(w, "presence_penalty", s.presence_penalty);
    write_number(w, "frequency_penalty", s.frequency_penalty);
    write_number(w, "typical_p", s.typical_p);
    if (!s.logit_bias.empty()) {
        // The [[id, bias], ...] form: the only one llama-server reads before 2026 (an OpenAI-style
        // object is ignored there).
        wire::key(w, "logit_bias");
        w.StartArray();
        for (const canonical::LogitBias& b : s.logit_bias) {
            w.StartArray();
            w.Int64(b.token);
            w.Double(b.bias);
            w.EndArray();
        }
        w.EndArray();
    }
    if (s.ignore_eos) {
        wire::key(w, "ignore_eos");
        w.Bool(*s.ignore_eos);
    }
    if (!s.stop.empty()) {
        // Always a list: the native route silently ignores a string (api-dialects §10.6).
        wire::key(w, "stop");
        w.StartArray();
        for (const std::string& stop : s.stop) {
            wire::string(w, stop);
        }
        w.EndArray();
    }
    if (canonical::wants_logprobs(req)) {
        // n_probs is both the switch and the number of alternatives: at least 1 to get the
        // chosen token's logprob; the client encoder writes no more alternatives than asked.
        // (TGI's details only welcome logprobs: not asked here, as llama-server sorts the whole
        // vocabulary for every token it reports; its TGI clients get null logprobs.)
        wire::key(w, "n_probs");
        w.Int64(std::max<int64_t>(1, req.top_logprobs.value_or(0)));
    }
    if (format.kind != canonical::OutputFormat::Kind::none) {
        wire::key(w, "json_schema");
        json::write_raw(w, format.kind == canonical::OutputFormat::Kind::json_schema
                               ? std::string_view(format.schema)
                               : canonical::kAnyObjectSchema);
    }
    wire::key(w, "stream");
    w.Bool(options.stream);
    if (req.dialect == Dialect::llamacpp) {
        // Same family: keys we do not model (cache_prompt, grammar, mirostat, ...) mean the same.
        for (const canonical::Extra& x : req.extras) {
            wire::key(w, x.key);
            json::write_raw(w, x.json);
        }
    }
    w.EndObject();
    return out;
}

}  // namespace infergate::translators::llamacpp
