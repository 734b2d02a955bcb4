// Upstream side: what an OpenAI-compatible backend's layer (TGI's, llama.cpp's, vLLM's, ...)
// cannot honour, refused with a 400 that names the setting and says what works instead.

#include <string>

#include "translators/canonical/logprobs.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/request_codec.hpp"

namespace infergate::translators::openai {

using canonical::bad_request;
using canonical::SamplingParams;

namespace {

// Which OpenAI-compatible layers report logprobs: TGI's completions route has no logprobs
// field (router/src/lib.rs CompletionRequest); llama.cpp's and TGI's refuse or ignore `echo`, so
// neither gives the prompt's (llama.cpp utils.hpp: "Unsupported param: echo").
bool has_logprobs(Flavor flavor, Api api) {
    return !(flavor == Flavor::tgi && api == Api::completions);
}
bool has_prompt_logprobs(Flavor flavor, Api api) {
    return api == Api::completions && flavor != Flavor::tgi && flavor != Flavor::llamacpp;
}

// How a client of `d` asked for the prompt's logprobs.
std::string prompt_logprobs_param(canonical::Dialect d) {
    switch (d) {
        case canonical::Dialect::openai_completions:
            return "echo";
        case canonical::Dialect::sglang:
            return "logprob_start_len";
        case canonical::Dialect::tgi:
            return "parameters.decoder_input_details";
        default:
            return canonical::client_param(d, "logprobs");
    }
}

}  // namespace

// The backend's name in messages.
std::string_view backend_name(Flavor flavor) {
    switch (flavor) {
        case Flavor::tgi:
            return "TGI's OpenAI-compatible chat route";
        case Flavor::llamacpp:
            return "llama.cpp's OpenAI-compatible chat route";
        case Flavor::vllm:
            return "a vLLM backend";
        case Flavor::sglang:
            return "SGLang's OpenAI-compatible route";
        case Flavor::openai:
            return "the OpenAI API";
        case Flavor::generic:
            break;
    }
    return "an OpenAI-compatible backend";
}

// TGI's chat route reads `presence_penalty` as a repetition penalty of presence_penalty + 2
// (router/src/lib.rs, ChatRequest::try_into_generate) and has no top_k, min_p, typical_p or
// logit_bias (logit_bias is parsed and never used); llama.cpp's reads every /completion
// setting under llama.cpp's names but has no min_tokens, stop token ids or way to keep the stop
// string or special tokens; vLLM, SGLang and the OpenAI API have no typical_p or penalty window.
std::optional<canonical::Error> check_settings(const SamplingParams& s, Flavor flavor,
                                               canonical::Dialect client) {
    const std::string_view name = backend_name(flavor);
    const auto unsupported_setting = [client](std::string_view param, std::string_view backend,
                                              std::string_view instead) {
        return canonical::unsupported_setting(client, param, backend, instead);
    };
    if (flavor != Flavor::llamacpp) {
        if (s.typical_p.value_or(1.0) != 1.0) {
            return unsupported_setting("typical_p", name,
                                       "use top_p or min_p, or leave typical_p at 1 (off)");
        }
        if (s.repeat_last_n && canonical::penalties_active(s)) {
            return unsupported_setting(
                "repeat_last_n", name,
                "its penalties look at the whole text; leave repeat_last_n out");
        }
    }
    if (flavor == Flavor::tgi) {
        if (s.top_k.value_or(0) > 0) {
            return unsupported_setting("top_k", name, "use top_p, or the native /generate route");
        }
        if (s.min_p.value_or(0) > 0) {
            return unsupported_setting("min_p", name, "use top_p");
        }
        if (s.presence_penalty.value_or(0) != 0) {
            return unsupported_setting(
                "presence_penalty", name,
                "it reads presence_penalty as a repetition penalty; use frequency_penalty or "
                "repetition_penalty");
        }
        if (!s.logit_bias.empty()) {
            return unsupported_setting("logit_bias", name,
                                       "it accepts logit_bias but never applies it; leave it out");
        }
        if (s.top_p && *s.top_p <= 0) {
            return unsupported_setting("top_p", name, "TGI requires 0 < top_p; raise it");
        }
        if (s.ignore_eos.value_or(false)) {
            return unsupported_setting("ignore_eos", name, "leave it out");
        }
    }
    if (flavor == Flavor::tgi || flavor == Flavor::llamacpp) {
        if (s.n > 1) {
            // TGI's route ignores n, llama.cpp's refuses it (translators/pairing.cpp says so
            // first).
            return unsupported_setting("n", name, "it makes one answer per request; use n = 1");
        }
        if (s.min_tokens.value_or(0) > 0) {
            return unsupported_setting("min_tokens", name, "leave it out");
        }
        if (!s.stop_token_ids.empty()) {
            return unsupported_setting("stop_token_ids", name, "use stop strings");
        }
        if (!s.skip_special_tokens.value_or(true)) {
            return unsupported_setting("skip_special_tokens", name,
                                       "it never writes special tokens; leave it out");
        }
    }
    if (flavor == Flavor::llamacpp && s.keep_stop_str.value_or(false)) {
        return unsupported_setting("include_stop_str_in_output", name,
                                   "llama.cpp always cuts the matched stop string; leave it out");
    }
    return std::nullopt;
}

// Ask for logprobs: wanted, or welcome where the backend has them (TGI's details).
bool logprobs_sent(const GenerationRequest& req, Flavor flavor, Api api) {
    return (canonical::ask_logprobs(req) || canonical::wants_prompt_logprobs(req)) &&
           has_logprobs(flavor, api);
}

// The 400 for log probabilities the backend's OpenAI layer cannot give; nullopt when it can.
std::optional<canonical::Error> check_logprobs(const GenerationRequest& req, Flavor flavor,
                                               Api api) {
    if (canonical::wants_prompt_logprobs(req) && !has_prompt_logprobs(flavor, api)) {
        return canonical::no_logprobs(
            prompt_logprobs_param(req.dialect),
            std::string(backend_name(flavor)) + " (for the prompt's tokens)",
            "a vLLM or SGLang backend gives them (/v1/completions with echo and logprobs)");
    }
    // The OpenAI API's own limits (its reference: logprobs at most 5, top_logprobs 20).
    const size_t most = api == Api::completions ? 5 : 20;
    if (flavor == Flavor::openai && canonical::top_count(req) > most) {
        const std::string param = req.dialect == canonical::Dialect::sglang
                                      ? "top_logprobs_num"
                                      : canonical::client_param(req.dialect, "logprobs");
        return bad_request("'" + param + "' asks for " + std::to_string(canonical::top_count(req)) +
                               " alternatives per token; the OpenAI API gives at most " +
                               std::to_string(most) + ": ask for " + std::to_string(most) +
                               " or fewer",
                           param);
    }
    if (canonical::wants_logprobs(req) && !has_logprobs(flavor, api)) {
        return canonical::no_logprobs(canonical::client_param(req.dialect, "logprobs"),
                                      backend_name(flavor),
                                      "its chat route does, as do vLLM, SGLang and llama.cpp");
    }
    return std::nullopt;
}

std::optional<canonical::Error> check_upstream_settings(const GenerationRequest& req,
                                                        Flavor flavor) {
    const SamplingParams* sampling = shared_sampling(req);
    return sampling == nullptr ? std::nullopt : check_settings(*sampling, flavor, req.dialect);
}

}  // namespace infergate::translators::openai
