// TGI GenerateRequest bodies for TGI backends (api-dialects §5.3, §10.5, §10.13): what a TGI
// backend cannot honour is refused, the rest written as {"inputs", "parameters", "stream"}.

#include <cmath>
#include <cstdint>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::Extra;
using canonical::RequestKind;
using canonical::SamplingParams;
using wire::invalid;

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
        return canonical::refuse_foreign_extras(req, "a TGI backend", {}, true);
    }
    return std::nullopt;
}

}  // namespace

Result<std::string> TgiCodec::encode_request(const GenerationRequest& req,
                                             const UpstreamOptions& options) const {
    const SamplingParams& sp = req.item_sampling.empty() ? req.sampling : req.item_sampling[0];
    if (auto err = untranslatable(req, sp)) {
        return *err;
    }
    if (auto err = check_logprobs(req, sp, options.stream)) {
        return *err;
    }
    // Another family's structured output as TGI's grammar.
    canonical::OutputFormat format;
    if (req.dialect != Dialect::tgi) {
        auto fmt = canonical::output_format_for(
            req, "a TGI backend", {canonical::OutputFormat::Kind::json_object},
            "TGI's grammar takes only a JSON schema with properties; send a schema");
        if (!fmt) {
            return fmt.error();
        }
        format = std::move(fmt.value());
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
        } else if (!top_p && !top_k &&
                   (req.dialect == Dialect::openai_completions ||
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
    if (format.kind != canonical::OutputFormat::Kind::none) {
        wire::key(w, "grammar");
        json::write_raw(w, canonical::tgi_grammar(format));
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
