// The OpenAI layers of TGI and llama.cpp: what their bodies and chunks are written from and the
// writers (compat_openai_wire.cpp); the handler parses and checks the request and picks the
// answer (compat_openai.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/chat_extras.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/openai_request.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

struct CompatContext {
    const OaiRequest& req;
    bool tgi = false;
    std::string id;
    std::int64_t created = 0;
    int prompt_tokens = 0;
    int cached_tokens = 0;  // of prompt_tokens, from the prefix cache
    int completion_tokens = 0;
    // --prefix-cache: llama.cpp's usage has prompt_tokens_details (as llama-server builds since
    // late 2025 write it, always); TGI reports no cached tokens.
    bool cache_report = false;
    LlamaTimes times;
    // TGI chat: `logprobs` (probs.n = top_logprobs); llama.cpp: n_probs > 0.
    LlamaProbs probs;
    bool logprobs = false;
    // Chat: tool calls, reasoning (llama.cpp) or a set text (chat_extras.hpp).
    const ChatPlan* plan = nullptr;
    std::string tool_id;  // TGI's: one id for every chunk of the call

    bool calls() const { return plan != nullptr && !plan->calls.empty(); }
};

// Tokens [from, to) of a choice whose logprobs a chunk or an answer carries.
struct TokenRange {
    int from = 0;
    int to = 0;
};

// The stream's chunks, TGI's (one per token) or llama.cpp's (a role chunk first, timings last).
class CompatEncoder final : public EventEncoder {
public:
    explicit CompatEncoder(CompatContext& ctx) : ctx_(ctx) {}

    void on_start(std::vector<ChoiceState>& choices, EventList& out) override;
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override;
    void on_end(std::vector<ChoiceState>& choices, EventList& out) override;

private:
    void text_step(ChoiceState& c, int tokens, bool last, EventList& out);
    void lead_chunk(EventList& out, const ChoiceState& c, const LeadSpan& span) const;
    std::string& begin(EventList& out) const;
    void chunk(EventList& out, const ChoiceState& c, std::string_view text,
               std::optional<std::string_view> finish, bool role, bool usage,
               const ChoiceState* timings,
               std::optional<TokenRange> logprobs = std::nullopt) const;

    CompatContext& ctx_;
    std::vector<LeadSpan> spans_;
};

// The whole (non-stream) answer.
void render_response(const CompatContext& ctx, const std::vector<ChoiceState>& choices,
                     std::string& body);

}  // namespace infergate::emulator
