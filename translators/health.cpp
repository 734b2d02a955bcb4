#include "translators/health.hpp"

#include "translators/pairing.hpp"

namespace infergate::translators {

canonical::Result<HealthCall> health_call(BackendDialect backend, bool deep,
                                          const std::string& model, Flavor flavor) {
    HealthCall call;
    if (!deep) {
        switch (backend) {
            case BackendDialect::ollama:
                call.path = "/";
                break;  // "Ollama is running"
            case BackendDialect::anthropic:
                call.path = "/v1/models";
                break;  // no health route
            default:
                call.path = "/health";
                break;
        }
        return call;
    }
    if (backend == BackendDialect::sglang) {
        call.path = "/health_generate";
        return call;
    }
    if (backend == BackendDialect::tei) {
        // No generation there: one embedding is its real work.
        call.post = true;
        call.path = "/embed";
        call.body = R"({"inputs":"ping"})";
        return call;
    }
    canonical::GenerationRequest ping;
    ping.model = model;
    ping.sampling.max_tokens = 1;
    ping.kind = backend == BackendDialect::anthropic ? canonical::RequestKind::chat
                                                     : canonical::RequestKind::completion;
    ping.dialect = ping.kind == canonical::RequestKind::chat
                       ? canonical::Dialect::openai_chat
                       : canonical::Dialect::openai_completions;
    ping.prompts.push_back(canonical::Prompt{"ping", {}, false});
    ping.messages.push_back(canonical::text_message("user", "ping"));
    const Pairing pairing = pair_dialects(ping.dialect, ping.kind, backend);
    if (pairing.refusal) {
        return *pairing.refusal;
    }
    const Codec& back = codec_for(pairing.back);
    auto body = back.encode_request(ping, UpstreamOptions{model, flavor, false});
    if (!body) {
        return body.error();
    }
    call.post = true;
    call.path = std::string(back.upstream_path(ping));
    call.body = std::move(body.value());
    return call;
}

bool answers_info_route(BackendDialect backend, std::string_view path) {
    if (backend == BackendDialect::sglang) {
        return path == "/get_model_info" || path == "/get_server_info";
    }
    if (backend == BackendDialect::llamacpp) {
        return path == "/props";
    }
    return false;
}

}  // namespace infergate::translators
