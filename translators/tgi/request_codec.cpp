// TGI GenerateRequest bodies (api-dialects §5.3): {"inputs": str, "parameters": {...},
// "stream"?: bool}, decoded from TGI clients and encoded for TGI backends (§10.5, §10.13).

#include <cmath>
#include <cstdint>

#include "translators/canonical/logprobs.hpp"
#include "translators/tgi/codec.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::Extra;
using canonical::Prompt;
using canonical::RequestKind;
using canonical::SamplingParams;

// TGI answers its own validation failures with 422 (api-dialects §5.6), so a TGI client gets the
// status its server would have sent.
Error invalid(std::string message, std::string param) {
    Error e = canonical::bad_request(std::move(message), std::move(param));
    e.status = 422;
    return e;
}

Error as_422(Error e) {
    e.status = 422;
    return e;
}

std::optional<Error> read_parameters(const json::Value& p, GenerationRequest& req) {
    std::optional<Error> err;
    SamplingParams& sp = req.sampling;
    // TGI's own bounds: strictly positive values and an open (0, 1) top_p (§10.13).
    sp.max_tokens = json::get_int(p, "max_new_tokens", "parameters.max_new_tokens", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.max_tokens && *sp.max_tokens <= 0) {
        return invalid("'parameters.max_new_tokens' must be strictly positive",
                       "parameters.max_new_tokens");
    }
    sp.temperature = json::get_number(p, "temperature", "parameters.temperature", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.temperature && *sp.temperature <= 0) {
        return invalid("'parameters.temperature' must be strictly positive",
                       "parameters.temperature");
    }
    sp.top_p = json::get_number(p, "top_p", "parameters.top_p", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.top_p && !(*sp.top_p > 0 && *sp.top_p < 1)) {
        return invalid("'parameters.top_p' must be > 0.0 and < 1.0", "parameters.top_p");
    }
    sp.top_k = json::get_int(p, "top_k", "parameters.top_k", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.top_k && *sp.top_k <= 0) {
        return invalid("'parameters.top_k' must be strictly positive", "parameters.top_k");
    }
    sp.repetition_penalty =
        json::get_number(p, "repetition_penalty", "parameters.repetition_penalty", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.repetition_penalty && *sp.repetition_penalty <= 0) {
        return invalid("'parameters.repetition_penalty' must be strictly positive",
                       "parameters.repetition_penalty");
    }
    sp.frequency_penalty = json::get_number(p, "frequency_penalty",
                                            "parameters.frequency_penalty", err, -2.0, 2.0);
    sp.typical_p = json::get_number(p, "typical_p", "parameters.typical_p", err);
    if (err) {
        return as_422(*err);
    }
    if (sp.typical_p && !(*sp.typical_p > 0 && *sp.typical_p < 1)) {
        return invalid("'parameters.typical_p' must be > 0.0 and < 1.0", "parameters.typical_p");
    }
    sp.seed = json::get_int(p, "seed", "parameters.seed", err, 0);
    const std::optional<bool> do_sample =
        json::get_bool(p, "do_sample", "parameters.do_sample", err);
    const std::optional<bool> details = json::get_bool(p, "details", "parameters.details", err);
    const std::optional<bool> full_text =
        json::get_bool(p, "return_full_text", "parameters.return_full_text", err);
    const std::optional<bool> prefill =
        json::get_bool(p, "decoder_input_details", "parameters.decoder_input_details", err);
    const std::optional<int64_t> top_n =
        json::get_int(p, "top_n_tokens", "parameters.top_n_tokens", err, 0, UINT32_MAX);
    if (err) {
        return as_422(*err);
    }
    // Log probabilities (router/src/lib.rs Details, StreamResponse): `details` shows each
    // token's logprob where the backend has one (never a refusal); top_n_tokens the most likely
    // alternatives per token; decoder_input_details the prompt's tokens (which also turns
    // details on, server.rs generate_internal). The server caps top_n_tokens with
    // --max-top-n-tokens (default 5), which a gateway in front of another engine need not copy.
    req.logprobs_if_available = details.value_or(false) || prefill.value_or(false);
    if (top_n.value_or(0) > 0) {
        req.top_logprobs = top_n;
    }
    if (prefill.value_or(false)) {
        req.prompt_logprob_start = 0;
    }
    if (const json::Value* stop = json::find(p, "stop"); stop != nullptr && !stop->IsNull()) {
        if (!stop->IsArray()) {
            return invalid("'parameters.stop' must be a list of strings, got " +
                               std::string(json::type_name(*stop)),
                           "parameters.stop");
        }
        for (rapidjson::SizeType i = 0; i < stop->Size(); ++i) {
            const json::Value& s = (*stop)[i];
            const std::string at = "parameters.stop[" + std::to_string(i) + "]";
            if (!s.IsString()) {
                return invalid("'" + at + "' must be a string, got " +
                                   std::string(json::type_name(s)),
                               at);
            }
            sp.stop.emplace_back(json::view(s));
        }
    }
    // TGI keeps the matched stop string in the output (§10.6); ask other backends for the same.
    if (!sp.stop.empty()) {
        sp.keep_stop_str = true;
    }
    // TGI decodes greedily when `parameters` is present and neither do_sample nor a sampling
    // warper is set (§5.3); canonical says greedy with temperature 0, which every encoder maps.
    const json::Value* typical = json::find(p, "typical_p");
    const bool warpers =
        sp.temperature || sp.top_p || sp.top_k || (typical != nullptr && !typical->IsNull());
    if (!do_sample.value_or(false) && !warpers) {
        sp.temperature = 0.0;
    }
    // `details` is TGI's opt-in to finish reasons and counts, like OpenAI's include_usage; the
    // exchange copies include_usage into StreamState, where the stream encoder reads it back.
    req.include_usage = details.value_or(false) || prefill.value_or(false);
    req.echo = full_text.value_or(false);
    if (!full_text) {
        req.extras.push_back(Extra{std::string(kFullTextUnsetExtra), "true", true});
    }

    for (auto it = p.MemberBegin(); it != p.MemberEnd(); ++it) {
        const std::string_view key = json::view(it->name);
        // clang-format off
        static constexpr std::string_view kKnown[] = {
            "max_new_tokens", "temperature", "top_p", "top_k", "repetition_penalty",
            "frequency_penalty", "seed", "do_sample", "details", "return_full_text", "stop",
            "typical_p", "top_n_tokens", "decoder_input_details"};
        // clang-format on
        bool known = false;
        for (const std::string_view k : kKnown) {
            known = known || key == k;
        }
        if (!known && !it->value.IsNull()) {
            // TGI's own extras (best_of, truncate, watermark, top_n_tokens, grammar,
            // decoder_input_details, adapter_id) and unknown keys alike, so that a TGI → TGI
            // exchange forwards them. Keys TGI does not read (its GenerateParameters ignores
            // them) and TGI's own at their defaults are inert: other backends go without.
            std::string value = json::to_string(it->value);
            static constexpr std::string_view kTgiOwn[] = {"best_of",   "truncate",
                                                           "watermark", "top_n_tokens",
                                                           "grammar",   "decoder_input_details",
                                                           "adapter_id"};
            bool own = false;
            for (const std::string_view k : kTgiOwn) {
                own = own || key == k;
            }
            static constexpr canonical::InertRule kInert[] = {{"best_of", "1"},
                                                              {"watermark", "false"},
                                                              {"decoder_input_details", "false"},
                                                              {"top_n_tokens", "0"}};
            const bool inert = !own || canonical::is_inert(key, value, kInert);
            req.sampling_extras.push_back(Extra{std::string(key), std::move(value), inert});
        }
    }
    return std::nullopt;
}

// Where a client of `d` asked for the prompt's log probabilities, and for alternatives.
std::string prompt_logprobs_param(Dialect d) {
    switch (d) {
        case Dialect::sglang:
            return "logprob_start_len";
        case Dialect::tgi:
            return "parameters.decoder_input_details";
        default:
            return "echo";  // OpenAI completions: echo with logprobs
    }
}
std::string top_param(Dialect d) {
    switch (d) {
        case Dialect::openai_completions:
            return "logprobs";
        case Dialect::openai_chat:
            return "top_logprobs";
        case Dialect::sglang:
            return "top_logprobs_num";
        case Dialect::tgi:
            return "parameters.top_n_tokens";
        case Dialect::llamacpp:
            return "n_probs";
        default:
            return "top_logprobs";
    }
}

// TGI's default --max-top-n-tokens: a larger top_n_tokens fails there with a 422 naming
// `top_n_tokens`, which a client of another dialect never sent.
constexpr int64_t kMaxTopNTokens = 5;

std::optional<Error> check_logprobs(const GenerationRequest& req, const SamplingParams& sp,
                                    bool stream) {
    if (canonical::wants_prompt_logprobs(req) && stream && req.dialect == Dialect::tgi) {
        // A TGI client on /generate_stream: TGI's own validation error.
        return invalid("`decoder_input_details` == true is not supported when streaming tokens",
                       "parameters.decoder_input_details");
    }
    if (canonical::wants_prompt_logprobs(req) && stream) {
        // TGI refuses decoder_input_details on streams (ValidationError::PrefillDetailsStream).
        return canonical::no_logprobs(
            prompt_logprobs_param(req.dialect), "TGI's /generate_stream",
            "TGI reports the prompt's log probabilities only without streaming: send the request "
            "with \"stream\": false");
    }
    if (req.dialect != Dialect::tgi && req.top_logprobs.value_or(0) > kMaxTopNTokens) {
        const std::string param = top_param(req.dialect);
        return canonical::bad_request(
            "'" + param + "' asks for " + std::to_string(*req.top_logprobs) +
                " alternatives per token; a TGI backend gives at most " +
                std::to_string(kMaxTopNTokens) + " (its --max-top-n-tokens default): send " +
                std::to_string(kMaxTopNTokens) + " or fewer",
            param);
    }
    if (sp.max_tokens && *sp.max_tokens == 0) {
        // TGI requires max_new_tokens >= 1 (ValidationError::NegativeMaxNewTokens). Asking for
        // one token and dropping it would bill a token and report a finish that did not happen;
        // a request that only scores its prompt needs a backend that can generate nothing.
        const std::string param = canonical::client_param(req.dialect, "max_tokens");
        return canonical::bad_request(
            "'" + param +
                "' is 0, but TGI generates at least one token (max_new_tokens must be "
                "strictly positive): send 1 or more, or use an SGLang or vLLM backend to score a "
                "prompt alone",
            param);
    }
    return std::nullopt;
}

void write_number(json::Writer& w, std::string_view key, double v) {
    wire::key(w, key);
    w.Double(v);
}

// Refuses settings a TGI backend has no way to honour (api-dialects §5.3, §10.5).
std::optional<Error> untranslatable(const GenerationRequest& req, const SamplingParams& sp) {
    if (req.kind == RequestKind::chat) {
        return canonical::bad_request(
            "a chat request cannot be sent to TGI's native /generate (it applies no chat "
            "template); route it to the backend's /v1/chat/completions (dialect openai_chat)",
            "messages");
    }
    // A list of one (LangChain's OpenAI class always sends a list) is that one prompt; the
    // client still gets the answer its dialect gives a list.
    if (req.prompts.size() != 1) {
        return canonical::bad_request(
            "TGI's /generate takes exactly one prompt per request; send the prompts one at a "
            "time or use an OpenAI-completions backend",
            "prompt");
    }
    if (req.prompts[0].is_tokens) {
        return canonical::bad_request(
            "TGI's /generate accepts text prompts only, not token ids; send the prompt as text",
            "prompt");
    }
    if (req.prompts[0].text.empty()) {
        return canonical::bad_request("TGI rejects an empty prompt", "prompt");
    }
    static constexpr std::string_view kBackend = "TGI's /generate";
    const auto unsupported = [&req](std::string_view param, std::string_view instead) {
        return canonical::unsupported_setting(req.dialect, param, kBackend, instead);
    };
    const auto invalid_value = [&req](std::string_view param, std::string_view rule) {
        const std::string path = canonical::client_param(req.dialect, param);
        return canonical::bad_request(
            "TGI requires " + std::string(rule) + "; change '" + path + "' or leave it out", path);
    };
    if (sp.n > 1) {
        return unsupported("n", "it makes one completion per request; use n = 1");
    }
    if (sp.ignore_eos.value_or(false)) {
        return unsupported("ignore_eos", "leave it unset");
    }
    if (!sp.stop_token_ids.empty()) {
        return unsupported("stop_token_ids", "use stop strings instead");
    }
    if (sp.min_tokens.value_or(0) > 0) {
        return unsupported("min_tokens", "leave it unset");
    }
    if (sp.min_p.value_or(0) > 0) {
        return unsupported("min_p", "use top_p or top_k instead");
    }
    if (sp.presence_penalty.value_or(0) != 0) {
        return unsupported("presence_penalty",
                           "use frequency_penalty or repetition_penalty instead");
    }
    if (sp.top_p && *sp.top_p <= 0) {
        return invalid_value("top_p", "0 < top_p");
    }
    if (sp.seed && *sp.seed < 0) {
        return invalid_value("seed", "a non-negative seed");
    }
    if (sp.typical_p && *sp.typical_p <= 0) {
        return invalid_value("typical_p", "0 < typical_p");
    }
    if (sp.repeat_last_n && canonical::penalties_active(sp)) {
        return unsupported("repeat_last_n",
                           "its penalties look at the whole text; leave repeat_last_n out");
    }
    if (!sp.logit_bias.empty()) {
        return unsupported("logit_bias", "TGI has no logit bias; leave it out");
    }
    if (!sp.skip_special_tokens.value_or(true)) {
        return unsupported("skip_special_tokens", "TGI never writes special tokens; leave it out");
    }
    if (req.dialect != Dialect::tgi) {
        return canonical::refuse_foreign_extras(req, "a TGI backend");
    }
    return std::nullopt;
}

}  // namespace

Result<GenerationRequest> TgiCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse(body, doc)) {
        return *err;  // axum rejects broken JSON with 400 before TGI code runs (§5.6)
    }
    if (!doc.IsObject()) {
        return invalid("the request body must be a JSON object, got " +
                           std::string(json::type_name(doc)),
                       "");
    }
    GenerationRequest req;
    req.dialect = Dialect::tgi;
    req.kind = RequestKind::completion;
    const json::Value* inputs = json::find(doc, "inputs");
    if (inputs == nullptr || !inputs->IsString()) {
        return invalid(inputs == nullptr ? "'inputs' is required"
                                         : "'inputs' must be a string, got " +
                                               std::string(json::type_name(*inputs)),
                       "inputs");
    }
    if (inputs->GetStringLength() == 0) {
        return invalid("'inputs' cannot be empty", "inputs");
    }
    req.prompts.push_back(Prompt{std::string(json::view(*inputs)), {}, false});

    std::optional<Error> err;
    req.stream = json::get_bool(doc, "stream", "stream", err).value_or(false);
    if (err) {
        return as_422(*err);
    }
    const json::Value* params = json::find(doc, "parameters");
    if (params != nullptr && !params->IsNull()) {
        if (!params->IsObject()) {
            return invalid("'parameters' must be an object, got " +
                               std::string(json::type_name(*params)),
                           "parameters");
        }
        if (auto e = read_parameters(*params, req)) {
            return *e;
        }
    }
    // Without `parameters` TGI samples (do_sample defaults to true): canonical leaves
    // temperature unset, the "client did not say" that means default sampling everywhere.
    if (req.prompt_logprob_start && req.stream) {
        // TGI's ValidationError::PrefillDetailsStream (router/src/validation.rs).
        return invalid("`decoder_input_details` == true is not supported when streaming tokens",
                       "parameters.decoder_input_details");
    }
    if (req.echo && req.stream) {
        return invalid(
            "'parameters.return_full_text' is not supported on streams by this gateway (the "
            "stream encoder has no prompt to prepend); prepend the prompt yourself",
            "parameters.return_full_text");
    }
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view key = json::view(it->name);
        if (key != "inputs" && key != "parameters" && key != "stream") {
            // TGI reads nothing else at the top level: inert everywhere.
            req.extras.push_back(Extra{std::string(key), json::to_string(it->value), true});
        }
    }
    return req;
}

Result<std::string> TgiCodec::encode_request(const GenerationRequest& req,
                                             const UpstreamOptions& options) const {
    const SamplingParams& sp = req.item_sampling.empty() ? req.sampling : req.item_sampling[0];
    if (auto err = untranslatable(req, sp)) {
        return *err;
    }
    if (auto err = check_logprobs(req, sp, options.stream)) {
        return *err;
    }
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "inputs");
    wire::string(w, req.prompts[0].text);
    wire::key(w, "parameters");
    w.StartObject();
    // Always: the finish reason and token counts only come with details (§10.13).
    wire::key(w, "details");
    w.Bool(true);
    const std::optional<int64_t> max =
        sp.max_tokens ? sp.max_tokens : canonical::default_max_tokens(req.dialect);
    if (max) {
        wire::key(w, "max_new_tokens");
        w.Int64(*max);
    }
    // Sampling (§10.5): temperature 0 is greedy, which TGI spells do_sample: false without a
    // temperature (it rejects 0), and without warpers, which would switch sampling back on.
    const bool greedy = sp.temperature && *sp.temperature <= 0;
    if (greedy) {
        wire::key(w, "do_sample");
        w.Bool(false);
    } else {
        const bool top_p = sp.top_p && *sp.top_p < 1;  // TGI rejects 1.0, which means "off"
        const bool top_k = sp.top_k && *sp.top_k > 0;  // 0 / -1 mean "off" elsewhere
        wire::key(w, "do_sample");
        w.Bool(true);
        if (sp.temperature) {
            write_number(w, "temperature", *sp.temperature);
        } else if (!top_p && !top_k && (req.dialect == Dialect::openai_completions ||
                                        req.dialect == Dialect::openai_chat)) {
            // TGI's default with `parameters` present is greedy; OpenAI clients expect 1.0.
            write_number(w, "temperature", 1.0);
        }
        if (top_p) {
            write_number(w, "top_p", *sp.top_p);
        }
        if (top_k) {
            wire::key(w, "top_k");
            w.Int64(*sp.top_k);
        }
        if (sp.typical_p && *sp.typical_p < 1) {  // TGI refuses 1, which means off
            write_number(w, "typical_p", *sp.typical_p);
        }
    }
    if (sp.repetition_penalty) {
        write_number(w, "repetition_penalty", *sp.repetition_penalty);
    }
    if (sp.frequency_penalty && *sp.frequency_penalty != 0) {
        write_number(w, "frequency_penalty", *sp.frequency_penalty);
    }
    if (sp.seed) {
        wire::key(w, "seed");
        w.Int64(*sp.seed);
    }
    if (!sp.stop.empty()) {
        wire::key(w, "stop");
        w.StartArray();
        for (const std::string& s : sp.stop) {
            wire::string(w, s);
        }
        w.EndArray();
    }
    // details (always sent) carries each token's logprob; these ask for the rest.
    if (const size_t top = canonical::top_count(req); top > 0) {
        wire::key(w, "top_n_tokens");
        w.Uint64(top);
    }
    if (canonical::wants_prompt_logprobs(req)) {
        wire::key(w, "decoder_input_details");
        w.Bool(true);
    }
    if (req.dialect == Dialect::tgi) {
        // TGI → TGI: its own parameters pass through (nothing else would understand them).
        for (const Extra& e : req.sampling_extras) {
            if (e.key == "details" || (options.stream && e.key == "decoder_input_details")) {
                continue;  // TGI refuses decoder_input_details on streams
            }
            wire::key(w, e.key);
            json::write_raw(w, e.json);
        }
    }
    w.EndObject();
    // /generate ignores it; it makes the body right for POST / as well.
    wire::key(w, "stream");
    w.Bool(options.stream);
    w.EndObject();
    return out;
}

}  // namespace infergate::translators::tgi
