// vLLM legacy requests: decoding a client's flat /generate body, and encoding a canonical request
// for a vLLM legacy backend (api-dialects §3.2, §9).

#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/vllm_legacy/codec_impl.hpp"

namespace infergate::translators::vllm_legacy {

using canonical::Extra;
using canonical::Prompt;
using canonical::RequestKind;
using canonical::SamplingParams;

namespace {

// vLLM SamplingParams keys this codec understands, beyond prompt and stream.
constexpr std::string_view kKnownKeys[] = {
    "n",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "stop_token_ids",
    "ignore_eos",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "min_tokens",
    "skip_special_tokens",
    "include_stop_str_in_output",
    "logit_bias",
};

bool is_known_key(std::string_view k) {
    for (std::string_view known : kKnownKeys) {
        if (k == known) {
            return true;
        }
    }
    return k == "prompt" || k == "stream";
}

// `stop`: a string or a list of strings (vLLM accepts both).
std::optional<Error> read_stop(const json::Value& body, std::vector<std::string>& out) {
    const json::Value* v = json::find(body, "stop");
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (v->IsString()) {
        out.emplace_back(json::view(*v));
        return std::nullopt;
    }
    if (!v->IsArray()) {
        return canonical::bad_request("'stop' must be a string or a list of strings, not " +
                                          std::string(json::type_name(*v)),
                                      "stop");
    }
    for (const json::Value& s : v->GetArray()) {
        if (!s.IsString()) {
            return canonical::bad_request("'stop' must be a list of strings; it contains " +
                                              std::string(json::type_name(s)),
                                          "stop");
        }
        out.emplace_back(json::view(s));
    }
    return std::nullopt;
}

// logit_bias: {"<token id>": bias}, as vLLM's OpenAI server reads it. The demo server itself
// cannot take it (the encoder says why); other backends can.
std::optional<Error> read_logit_bias(const json::Value& body, SamplingParams& sp) {
    const json::Value* v = json::find(body, "logit_bias");
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsObject()) {
        return canonical::bad_request(
            "'logit_bias' must be an object that maps token ids to biases, not " +
                std::string(json::type_name(*v)),
            "logit_bias");
    }
    std::vector<std::pair<std::string, double>> members;
    for (const auto& m : v->GetObject()) {
        if (!m.value.IsNumber()) {
            return canonical::bad_request(
                "'logit_bias' values must be numbers; it contains " + json::to_string(m.value),
                "logit_bias");
        }
        members.emplace_back(std::string(json::view(m.name)), m.value.GetDouble());
    }
    if (auto bad = canonical::logit_bias_from_object(members, sp.logit_bias)) {
        return canonical::bad_request(
            "'logit_bias' keys must be token ids (decimal integers), not \"" + *bad + "\"",
            "logit_bias");
    }
    return std::nullopt;
}

std::optional<Error> read_stop_token_ids(const json::Value& body, std::vector<int64_t>& out) {
    const json::Value* v = json::find(body, "stop_token_ids");
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsArray()) {
        return canonical::bad_request("'stop_token_ids' must be a list of token ids, not " +
                                          std::string(json::type_name(*v)),
                                      "stop_token_ids");
    }
    for (const json::Value& t : v->GetArray()) {
        if (!t.IsInt64() || t.GetInt64() < 0) {
            return canonical::bad_request(
                "'stop_token_ids' must contain non-negative integers; it contains " +
                    json::to_string(t),
                "stop_token_ids");
        }
        out.push_back(t.GetInt64());
    }
    return std::nullopt;
}

std::optional<Error> read_sampling(const json::Value& body, SamplingParams& sp) {
    std::optional<Error> err;
    // An explicit null reads as "not given" (the real server would take max_tokens: null as
    // "until the context is full"; the canonical model cannot say that, so it gets 16).
    sp.max_tokens = json::get_int(body, "max_tokens", "max_tokens", err, 1);
    sp.temperature = json::get_number(body, "temperature", "temperature", err, 0.0);
    sp.top_p = json::get_number(body, "top_p", "top_p", err, 0.0, 1.0);
    sp.top_k = json::get_int(body, "top_k", "top_k", err, -1);
    sp.min_p = json::get_number(body, "min_p", "min_p", err, 0.0, 1.0);
    sp.seed = json::get_int(body, "seed", "seed", err);
    sp.presence_penalty = json::get_number(body, "presence_penalty", "presence_penalty", err,
                                           -2.0, 2.0);
    sp.frequency_penalty = json::get_number(body, "frequency_penalty", "frequency_penalty", err,
                                            -2.0, 2.0);
    sp.repetition_penalty = json::get_number(body, "repetition_penalty", "repetition_penalty",
                                             err, 0.0);
    sp.min_tokens = json::get_int(body, "min_tokens", "min_tokens", err, 0);
    sp.ignore_eos = json::get_bool(body, "ignore_eos", "ignore_eos", err);
    sp.skip_special_tokens = json::get_bool(body, "skip_special_tokens", "skip_special_tokens",
                                            err);
    sp.keep_stop_str = json::get_bool(body, "include_stop_str_in_output",
                                      "include_stop_str_in_output", err);
    if (auto n = json::get_int(body, "n", "n", err, 1, wire::kMaxChoices)) {
        sp.n = static_cast<int>(*n);
    }
    if (err) {
        return err;
    }
    if (auto e = read_stop(body, sp.stop)) {
        return e;
    }
    if (auto e = read_logit_bias(body, sp)) {
        return e;
    }
    return read_stop_token_ids(body, sp.stop_token_ids);
}

}  // namespace

Result<GenerationRequest> VllmLegacyCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse(body, doc)) {
        return *err;
    }
    if (!doc.IsObject()) {
        return canonical::bad_request("the request body must be a JSON object, not " +
                                      std::string(json::type_name(doc)));
    }
    GenerationRequest req;
    req.dialect = Dialect::vllm_legacy;
    req.kind = RequestKind::completion;

    const json::Value* prompt = json::find(doc, "prompt");
    if (prompt == nullptr || prompt->IsNull()) {
        return canonical::bad_request("'prompt' is required: a string", "prompt");
    }
    if (!prompt->IsString()) {
        // The demo server takes exactly one text prompt; lists and token ids are other
        // dialects' features (OpenAI /v1/completions takes both).
        return canonical::bad_request("'prompt' must be one string, not " +
                                          std::string(json::type_name(*prompt)) +
                                          " (send one request per prompt; token-id prompts "
                                          "need an OpenAI /v1/completions endpoint)",
                                      "prompt");
    }
    Prompt p;
    p.text = std::string(json::view(*prompt));
    req.prompts.push_back(std::move(p));

    std::optional<Error> err;
    req.stream = json::get_bool(doc, "stream", "stream", err).value_or(false);
    if (err) {
        return *err;
    }
    if (auto e = read_sampling(doc, req.sampling)) {
        return *e;
    }
    for (const auto& m : doc.GetObject()) {
        const std::string_view k = json::view(m.name);
        if (is_known_key(k)) {
            continue;
        }
        if (!wire::is_passthrough_key(k)) {
            // The real server 500s here (SamplingParams(**rest) raises a TypeError).
            return canonical::bad_request("unknown key '" + std::string(k) +
                                              "': the vLLM /generate body takes 'prompt', "
                                              "'stream' and vLLM SamplingParams keys",
                                          std::string(k));
        }
        // The settings vLLM's SamplingParams takes at their defaults (or, like detokenize and
        // output_kind, shaping only what the demo server never returns) are inert.
        static constexpr canonical::InertRule kInert[] = {
            {"use_beam_search", "false"}, {"best_of", "1"},
            {"length_penalty", "1|1.0"},  {"early_stopping", "false"},
            {"detokenize", "true"},       {"spaces_between_special_tokens", "true"},
            {"bad_words", "[]"},          {"output_kind", "*"},
            {"flat_logprobs", "*"},       {"extra_args", "{}"}};
        std::string value = json::to_string(m.value);
        const bool inert = canonical::is_inert(k, value, kInert);
        req.extras.push_back(Extra{std::string(k), std::move(value), inert});
    }
    return req;
}

std::string_view VllmLegacyCodec::upstream_path(const GenerationRequest& /*req*/) const {
    return "/generate";
}

namespace {

std::optional<Error> refuse(const GenerationRequest& req) {
    if (req.kind == RequestKind::chat) {
        return canonical::bad_request(
            "this backend is a vLLM legacy /generate server, which takes a raw text prompt and "
            "applies no chat template; send chat requests to a backend with a chat route",
            "messages");
    }
    if (req.prompts.empty()) {
        return canonical::bad_request("a vLLM legacy backend needs a text prompt", "prompt");
    }
    if (req.prompts.size() > 1) {
        return canonical::bad_request(
            "this backend (vLLM legacy /generate) takes one prompt per request; the request has " +
                std::to_string(req.prompts.size()) + " — send them one at a time",
            "prompt");
    }
    if (req.prompts[0].is_tokens) {
        return canonical::bad_request(
            "this backend (vLLM legacy /generate) takes text prompts only; send the prompt as a "
            "string",
            "prompt");
    }
    // Its answer is text only. (Its own clients' logprobs are read by the real server and
    // answered with text only too, so they pass.)
    if (req.dialect != Dialect::vllm_legacy) {
        if (auto err = canonical::refuse_logprobs(req, "vLLM's demo server (/generate)", {})) {
            return std::move(*err);
        }
    }
    if (req.non_text_content) {
        return canonical::bad_request(
            "this backend (vLLM legacy /generate) takes text only", "prompt");
    }
    const SamplingParams& sp = req.item_sampling.empty() ? req.sampling : req.item_sampling[0];
    static constexpr std::string_view kBackend = "vLLM's demo server (/generate)";
    if (!sp.logit_bias.empty()) {
        // It builds SamplingParams(**body), whose logit_bias needs integer keys, which JSON
        // cannot write (vLLM's OpenAI server converts them; the demo server does not, and fails
        // with a 500 even for its own clients; releases before V1 have no logit_bias at all).
        return canonical::unsupported_setting(req.dialect, "logit_bias", kBackend,
                                              "use `vllm serve` (its OpenAI API takes it)");
    }
    if (sp.typical_p.value_or(1.0) != 1.0) {
        return canonical::unsupported_setting(req.dialect, "typical_p", kBackend,
                                              "use top_p or min_p, or leave typical_p at 1 (off)");
    }
    if (sp.repeat_last_n && canonical::penalties_active(sp)) {
        return canonical::unsupported_setting(
            req.dialect, "repeat_last_n", kBackend,
            "its penalties look at the whole text; leave repeat_last_n out");
    }
    if (req.dialect != Dialect::vllm_legacy) {
        return canonical::refuse_foreign_extras(req, "vLLM's demo server (/generate)");
    }
    return std::nullopt;
}

}  // namespace

Result<std::string> VllmLegacyCodec::encode_request(const GenerationRequest& req,
                                                    const UpstreamOptions& options) const {
    if (auto e = refuse(req)) {
        return *e;
    }
    // One prompt, so at most one per-item settings object; it wins if present.
    const SamplingParams& sp = req.item_sampling.empty() ? req.sampling : req.item_sampling[0];
    std::string body;
    body.reserve(req.prompts[0].text.size() + 256);
    json::StringOut os{&body};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "prompt");
    wire::string(w, req.prompts[0].text);
    // The legacy server's default is false, but say it: the exchange may stream a
    // non-streaming client's request (and the reverse).
    wire::key(w, "stream");
    w.Bool(options.stream);
    wire::key(w, "n");
    w.Int(sp.n > 0 ? sp.n : 1);
    // The client's default output length, always explicit. A dialect whose default is "until
    // the context is full" gets null, which is exactly what vLLM's SamplingParams means by it.
    wire::key(w, "max_tokens");
    if (auto m = sp.max_tokens ? sp.max_tokens : canonical::default_max_tokens(req.dialect)) {
        w.Int64(*m);
    } else {
        w.Null();
    }
    json::write_optional(w, "temperature", sp.temperature);
    json::write_optional(w, "top_p", sp.top_p);
    json::write_optional(w, "top_k", sp.top_k);
    json::write_optional(w, "min_p", sp.min_p);
    json::write_optional(w, "seed", sp.seed);
    json::write_optional(w, "presence_penalty", sp.presence_penalty);
    json::write_optional(w, "frequency_penalty", sp.frequency_penalty);
    json::write_optional(w, "repetition_penalty", sp.repetition_penalty);
    json::write_optional(w, "min_tokens", sp.min_tokens);
    json::write_optional(w, "ignore_eos", sp.ignore_eos);
    json::write_optional(w, "skip_special_tokens", sp.skip_special_tokens);
    json::write_optional(w, "include_stop_str_in_output", sp.keep_stop_str);
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
        for (int64_t t : sp.stop_token_ids) {
            w.Int64(t);
        }
        w.EndArray();
    }
    if (req.dialect == Dialect::vllm_legacy) {
        // Only a vLLM-legacy client's extra SamplingParams keys mean anything here.
        for (const Extra& e : req.extras) {
            if (!e.json.empty() && wire::is_passthrough_key(e.key)) {
                wire::key(w, e.key);
                json::write_raw(w, e.json);
            }
        }
    }
    w.EndObject();
    return body;
}

}  // namespace infergate::translators::vllm_legacy
