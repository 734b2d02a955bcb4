#include "translators/canonical/types.hpp"

#include "translators/canonical/stream_state.hpp"

namespace infergate::canonical {

std::string_view to_string(Dialect d) {
    switch (d) {
        case Dialect::sglang: return "sglang";
        case Dialect::openai_completions: return "openai_completions";
        case Dialect::openai_chat: return "openai_chat";
        case Dialect::tgi: return "tgi";
        case Dialect::ollama_generate: return "ollama_generate";
        case Dialect::ollama_chat: return "ollama_chat";
        case Dialect::llamacpp: return "llamacpp";
        case Dialect::vllm_legacy: return "vllm_legacy";
        case Dialect::anthropic: return "anthropic";
    }
    return "unknown";
}

std::optional<int64_t> default_max_tokens(Dialect d) {
    switch (d) {
        case Dialect::sglang: return 128;
        case Dialect::openai_completions: return 16;
        case Dialect::vllm_legacy: return 16;
        case Dialect::openai_chat:
        case Dialect::tgi:
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
        case Dialect::llamacpp:
        case Dialect::anthropic: return std::nullopt;
    }
    return std::nullopt;
}

Error bad_request(std::string message, std::string param) {
    Error e;
    e.status = 400;
    e.message = std::move(message);
    e.type = "invalid_request_error";
    e.param = std::move(param);
    return e;
}

Usage StreamState::aggregate_usage() const {
    if (usage_final) {
        return usage;
    }
    Usage total;
    const int per_prompt = n > 0 ? n : 1;
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceState& c = choices[i];
        total.completion_tokens = total.completion_tokens.value_or(0) + c.completion_tokens;
        if (i % static_cast<size_t>(per_prompt) == 0) {
            if (c.prompt_tokens) {
                total.prompt_tokens = total.prompt_tokens.value_or(0) + *c.prompt_tokens;
            }
            if (c.cached_tokens) {
                total.cached_tokens = total.cached_tokens.value_or(0) + *c.cached_tokens;
            }
        }
    }
    if (!total.prompt_tokens && usage.prompt_tokens) {
        total.prompt_tokens = usage.prompt_tokens;
    }
    return total;
}

}  // namespace infergate::canonical
