#include "translators/canonical/accumulate.hpp"

#include <algorithm>

namespace infergate::canonical {

int64_t TokenTally::add(const StreamEvent& ev) {
    if (ev.type == StreamEvent::Type::usage) {
        final_usage = ev.usage;
        return 0;
    }
    if (ev.type != StreamEvent::Type::chunk || ev.index < 0) {
        return 0;
    }
    const auto i = static_cast<size_t>(ev.index);
    if (i >= completion.size()) {
        completion.resize(i + 1, -1);
        prompt.resize(i + 1);
        cached.resize(i + 1);
        reasoning.resize(i + 1);
    }
    if (ev.usage.reasoning_tokens) {
        reasoning[i] = ev.usage.reasoning_tokens;
    }
    if (ev.usage.prompt_tokens) {
        prompt[i] = ev.usage.prompt_tokens;
    }
    if (ev.usage.cached_tokens) {
        cached[i] = ev.usage.cached_tokens;
    }
    if (ev.usage.completion_tokens) {
        const int64_t before = std::max<int64_t>(completion[i], 0);
        completion[i] = *ev.usage.completion_tokens;
        return std::max<int64_t>(*ev.usage.completion_tokens - before, 0);
    }
    // No running count from this backend: one per chunk.
    return ev.text.empty() && ev.tool_calls.empty() && ev.reasoning.empty() ? 0 : 1;
}

Usage TokenTally::total() const {
    if (final_usage && final_usage->completion_tokens) {
        return *final_usage;
    }
    Usage u;
    const size_t per_prompt = static_cast<size_t>(std::max(1, n));
    for (size_t i = 0; i < completion.size(); ++i) {
        if (completion[i] >= 0) {
            u.completion_tokens = u.completion_tokens.value_or(0) + completion[i];
        }
        if (reasoning[i]) {
            u.reasoning_tokens = u.reasoning_tokens.value_or(0) + *reasoning[i];
        }
        if (i % per_prompt == 0) {  // the prompt counts once per prompt, not per choice
            if (prompt[i]) {
                u.prompt_tokens = u.prompt_tokens.value_or(0) + *prompt[i];
            }
            if (cached[i]) {
                u.cached_tokens = u.cached_tokens.value_or(0) + *cached[i];
            }
        }
    }
    if (final_usage && !u.prompt_tokens) {
        u.prompt_tokens = final_usage->prompt_tokens;
    }
    return u;
}

void add_tool_call_delta(std::vector<ToolCall>& calls, const ToolCallDelta& piece) {
    if (piece.index < 0) {
        return;  // (a decoder's defect; it must not size the list)
    }
    if (static_cast<size_t>(piece.index) >= calls.size()) {
        calls.resize(static_cast<size_t>(piece.index) + 1);
    }
    ToolCall& call = calls[static_cast<size_t>(piece.index)];
    if (!piece.id.empty()) {
        call.id = piece.id;
    }
    if (!piece.name.empty()) {
        call.name = piece.name;
    }
    call.arguments += piece.arguments;
}

bool takes_tool_calls(Dialect d) {
    return d == Dialect::openai_chat || d == Dialect::ollama_chat || d == Dialect::anthropic ||
           d == Dialect::openai_responses;
}

void apply_to_result(const StreamEvent& ev, GenerationResult& result) {
    if (ev.type == StreamEvent::Type::usage) {
        result.usage = ev.usage;
        return;
    }
    if (ev.type != StreamEvent::Type::chunk || ev.index < 0) {
        return;  // (a negative index would be a decoder's defect; it must not size the list)
    }
    if (static_cast<size_t>(ev.index) >= result.choices.size()) {
        const size_t old = result.choices.size();
        result.choices.resize(static_cast<size_t>(ev.index) + 1);
        for (size_t i = old; i < result.choices.size(); ++i) {
            result.choices[i].index = static_cast<int>(i);
        }
    }
    Choice& c = result.choices[static_cast<size_t>(ev.index)];
    c.text += ev.text;
    c.reasoning += ev.reasoning;
    for (const ToolCallDelta& piece : ev.tool_calls) {
        add_tool_call_delta(c.tool_calls, piece);
    }
    c.token_ids.insert(c.token_ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    c.prompt_logprobs.insert(c.prompt_logprobs.end(), ev.prompt_logprobs.begin(),
                             ev.prompt_logprobs.end());
    if (ev.finish) {
        c.finish = *ev.finish;
    }
    if (ev.usage.completion_tokens) {
        c.usage.completion_tokens = ev.usage.completion_tokens;
    }
    if (ev.usage.prompt_tokens) {
        c.usage.prompt_tokens = ev.usage.prompt_tokens;
    }
    if (ev.usage.cached_tokens) {
        c.usage.cached_tokens = ev.usage.cached_tokens;
    }
    if (ev.usage.reasoning_tokens) {
        c.usage.reasoning_tokens = ev.usage.reasoning_tokens;
    }
}

}  // namespace infergate::canonical
