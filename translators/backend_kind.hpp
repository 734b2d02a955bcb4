#pragma once
// The API a backend speaks, as the configuration names it (config::BackendDialect is this type).
// Here, not in config/, because the pairing table (translators/pairing.hpp) is pure and reads it.

#include <string_view>

namespace infergate::translators {

// `auto_detect` probes its info routes at start-up. `openai` is any OpenAI-compatible server
// (vLLM's `vllm serve`, the hosted API, ...); the others are the engines' native APIs. `tei` is
// Hugging Face text-embeddings-inference: embeddings and the tokenizer, no generation.
enum class BackendDialect {
    auto_detect,
    openai,
    sglang,
    tgi,
    ollama,
    llamacpp,
    vllm_legacy,
    anthropic,
    tei
};

// How a backend of this dialect is sent the operator's key, and the version header its API
// requires (a client's own version header wins).
struct BackendHeaders {
    std::string_view key_header = "Authorization";
    std::string_view key_prefix = "Bearer ";
    std::string_view version_header;  // empty: none
    std::string_view version;
};

constexpr BackendHeaders backend_headers(BackendDialect d) {
    if (d == BackendDialect::anthropic) {
        // The Messages API version infergate's Anthropic codec writes.
        return BackendHeaders{"x-api-key", "", "anthropic-version", "2023-06-01"};
    }
    return BackendHeaders{};
}

}  // namespace infergate::translators
