#include "translators/pairing.hpp"

#include "translators/embedding.hpp"

namespace infergate::translators {

using canonical::Dialect;

namespace {

// Chat goes to a chat route on every backend that has one: the backend applies the model's own
// chat template, which the proxy does not have.
std::optional<Dialect> chat_route(BackendDialect backend) {
    switch (backend) {
        case BackendDialect::ollama:
            return Dialect::ollama_chat;
        case BackendDialect::anthropic:
            return Dialect::anthropic;
        case BackendDialect::vllm_legacy:
            return std::nullopt;
        // SGLang, TGI and llama.cpp serve chat through their OpenAI-compatible layers.
        default:
            return Dialect::openai_chat;
    }
}

// Raw completions go to a raw (untemplated) route.
std::optional<Dialect> completion_route(BackendDialect backend) {
    switch (backend) {
        case BackendDialect::sglang:
            return Dialect::sglang;
        case BackendDialect::tgi:
            return Dialect::tgi;
        case BackendDialect::ollama:
            return Dialect::ollama_generate;  // with raw: true
        case BackendDialect::llamacpp:
            return Dialect::llamacpp;
        case BackendDialect::vllm_legacy:
            return Dialect::vllm_legacy;
        case BackendDialect::anthropic:
            return std::nullopt;
        default:
            return Dialect::openai_completions;
    }
}

// What a generation gets from a backend that has no generation route.
Error no_generation(std::string_view backend) {
    return no_endpoint(std::string(backend.empty() ? "the backend" : backend) + " (TEI)",
                       "generation",
                       "a vLLM, SGLang, TGI, Ollama, llama.cpp or Anthropic backend (name a model "
                       "one of them serves); text-embeddings-inference serves embeddings and its "
                       "tokenizer only");
}

}  // namespace

Pairing pair_dialects(Dialect front, canonical::RequestKind kind, BackendDialect backend, int n) {
    Pairing p;
    if (backend == BackendDialect::tei) {
        p.refusal = no_generation({});
        return p;
    }
    if (kind == canonical::RequestKind::chat) {
        if (auto d = chat_route(backend)) {
            p.back = *d;
        } else {
            p.refusal = canonical::bad_request(
                "the backend is vLLM's legacy demo server (POST /generate), which has no chat "
                "route and no chat template, so a chat request cannot be served faithfully; "
                "send a raw completion (POST /v1/completions, or /generate with the prompt "
                "already templated), or run the model behind `vllm serve`",
                "messages");
            return p;
        }
    } else if (auto d = completion_route(backend)) {
        p.back = *d;
    } else {
        p.refusal = canonical::bad_request(
            "the backend speaks Anthropic's Messages API, which has no raw (untemplated) "
            "completion, so a raw prompt cannot be served faithfully; send a chat request "
            "(POST /v1/chat/completions, /v1/messages or /api/chat)",
            "prompt");
        return p;
    }
    const bool openai_layer =
        p.back == Dialect::openai_chat || p.back == Dialect::openai_completions;
    if (n > 1 && openai_layer &&
        (backend == BackendDialect::tgi || backend == BackendDialect::llamacpp)) {
        // TGI's chat route accepts n and ignores it; llama.cpp's honours it only in some builds.
        p.refusal = canonical::bad_request(
            std::string(backend == BackendDialect::tgi ? "TGI" : "llama.cpp") +
                "'s OpenAI-compatible chat route generates one answer per request (it would "
                "silently ignore n); send n = 1, or one request per answer",
            "n");
        return p;
    }
    // TGI's OpenAI layer is not OpenAI on the wire (empty ids, "stop_sequence" and "eos_token"
    // finish reasons, the matched stop string left in the text): it is translated.
    p.fast_path = p.back == front && backend != BackendDialect::tgi &&
                  (front == Dialect::openai_completions || front == Dialect::openai_chat ||
                   front == Dialect::sglang);
    return p;
}

Flavor openai_flavor(BackendDialect backend, Flavor probed, std::string_view host) {
    switch (backend) {
        case BackendDialect::tgi:
            return Flavor::tgi;
        case BackendDialect::llamacpp:
            return Flavor::llamacpp;
        case BackendDialect::sglang:
            return Flavor::sglang;
        default:
            break;
    }
    if (probed == Flavor::generic &&
        (host == "api.openai.com" || host.ends_with(".openai.azure.com"))) {
        return Flavor::openai;
    }
    return probed;
}

bool accepts_stream_options(const BackendFacts& backend) {
    if (backend.probed != Flavor::generic) {
        return true;
    }
    if (backend.dialect == BackendDialect::tgi || backend.dialect == BackendDialect::llamacpp) {
        return true;
    }
    return backend.host == "api.openai.com" || backend.host.ends_with(".openai.azure.com");
}

Plan plan_generation(Dialect front, const canonical::GenerationRequest& req,
                     const BackendFacts& backend) {
    Plan p;
    static_cast<Pairing&>(p) = pair_dialects(front, req.kind, backend.dialect, req.sampling.n);
    if (p.refusal && backend.dialect == BackendDialect::tei) {
        p.refusal = no_generation(backend.name);
    }
    if (p.refusal) {
        return p;
    }
    p.flavor = openai_flavor(backend.dialect, backend.probed, backend.host);
    p.stream_options = accepts_stream_options(backend);
    const bool openai_back =
        p.back == Dialect::openai_chat || p.back == Dialect::openai_completions;
    if (p.fast_path) {
        p.edit_body = front != Dialect::sglang;
        if (req.stream && p.edit_body) {
            p.ask_usage = !req.include_usage && p.stream_options;
            p.ask_running = !req.continuous_usage && has_running_usage(backend.probed);
            p.rewrite_ids = req.sampling.n > 1;
        }
        return p;
    }
    p.gather = !req.stream && front == Dialect::sglang && p.back == Dialect::openai_completions &&
               (req.prompt_is_list || req.sampling.n > 1);
    p.trim_stops = backend.dialect == BackendDialect::tgi && openai_back &&
                   !req.sampling.keep_stop_str.value_or(false) && !req.sampling.stop.empty();
    return p;
}

}  // namespace infergate::translators
