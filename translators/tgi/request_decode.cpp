// TGI GenerateRequest bodies from TGI clients (api-dialects §5.3): {"inputs": str,
// "parameters": {...}, "stream"?: bool}, read and validated with TGI's own bounds (§10.13).

#include <cstdint>

#include "translators/tgi/codec.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace wire {

// TGI answers its own validation failures with 422 (api-dialects §5.6), so a TGI client gets the
// status its server would have sent.
Error invalid(std::string message, std::string param) {
    Error e = canonical::bad_request(std::move(message), std::move(param));
    e.status = 422;
    return e;
}

}  // namespace wire

namespace {

using canonical::Extra;
using canonical::Prompt;
using canonical::RequestKind;
using canonical::SamplingParams;
using wire::invalid;

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
    sp.frequency_penalty =
        json::get_number(p, "frequency_penalty", "parameters.frequency_penalty", err, -2.0, 2.0);
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
                return invalid(
                    "'" + at + "' must be a string, got " + std::string(json::type_name(s)), at);
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

}  // namespace

Result<GenerationRequest> TgiCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse(body, doc)) {
        return *err;  // axum rejects broken JSON with 400 before TGI code runs (§5.6)
    }
    if (!doc.IsObject()) {
        return invalid(
            "the request body must be a JSON object, got " + std::string(json::type_name(doc)), "");
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
            return invalid(
                "'parameters' must be an object, got " + std::string(json::type_name(*params)),
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

}  // namespace infergate::translators::tgi
