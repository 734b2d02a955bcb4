#pragma once
// What a stream adds up to: the whole answer a gathered stream makes (apply_to_result), and the
// token counts a relayed stream reports (TokenTally), for the metrics. Pure; the proxy feeds
// them the decoded events.

#include <cstdint>
#include <optional>
#include <vector>

#include "translators/canonical/types.hpp"

namespace infergate::canonical {

// Token counts as the backend reports them in a stream: per-choice running counts and the
// final aggregate, whichever arrives.
struct TokenTally {
    int n = 1;
    std::vector<int64_t> completion;  // per choice; -1 = never reported
    std::vector<std::optional<int64_t>> prompt;
    std::vector<std::optional<int64_t>> cached;
    std::vector<std::optional<int64_t>> reasoning;  // per choice, where reported
    std::optional<Usage> final_usage;
    // Takes one decoded event; returns the tokens a content chunk carried (its running count's
    // increase; 1 when the backend reports no running count).
    int64_t add(const StreamEvent& ev);
    Usage total() const;
};

// Adds a piece of a streamed tool call to the calls it belongs to (a new call when its index
// is past the last; the pieces' arguments fragments appended in order).
void add_tool_call_delta(std::vector<ToolCall>& calls, const ToolCallDelta& piece);

// Whether a client of `d` can be given an assistant's tool calls in its own shape.
bool takes_tool_calls(Dialect d);
// Whether a client of `d` has a place for an assistant's reasoning (the chat dialects: OpenAI's
// reasoning_content as vLLM and SGLang write it, Ollama's thinking, Anthropic's thinking blocks).
// Other clients get the answer without it (docs/dialects.md, "Reasoning").
inline bool takes_reasoning(Dialect d) {
    return takes_tool_calls(d);
}

// Adds one decoded event to a whole answer: its text, token ids and logprob entries to its
// choice, its finish and counts; a usage event sets the aggregate.
void apply_to_result(const StreamEvent& ev, GenerationResult& result);

}  // namespace infergate::canonical
