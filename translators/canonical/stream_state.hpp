#pragma once
// Per-stream state, owned by the exchange (one instance for the upstream decoder, one for the
// client encoder). Codecs are stateless; everything they must remember between events of one
// stream lives here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "translators/canonical/types.hpp"

namespace infergate::canonical {

struct ChoiceState {
    std::string text;                  // all text of this choice so far (cumulative)
    size_t sent = 0;                   // cumulative decoders: bytes of `text` already emitted
    int64_t completion_tokens = 0;     // running count for this choice
    bool tokens_exact = false;         // false while completion_tokens is only a chunk count
    std::optional<int64_t> prompt_tokens;
    std::optional<int64_t> cached_tokens;
    bool role_sent = false;            // OpenAI chat: the role-only chunk went out
    bool finished = false;             // a finish reason went out (never send two)
    std::optional<FinishReason> held_finish;  // finish held back until exact counts arrive
    std::string id;                           // per-choice id (SGLang meta_info.id)
    // TGI: the last token event, held back while it may turn out to be the last one (which
    // carries generated_text): its index and id; its text is text[sent..].
    std::optional<int64_t> held_token_index;
    std::optional<int64_t> held_token_id;
    // Log probabilities. Decoders of cumulative lists (SGLang): output entries already emitted
    // and whether the prompt's went out. Encoders of cumulative lists (SGLang): every entry so
    // far, re-sent on each event.
    size_t logprobs_seen = 0;
    bool prompt_logprobs_seen = false;
    std::vector<TokenLogprob> logprobs;
    std::vector<TokenLogprob> prompt_logprobs;
    // OpenAI completions logprobs: code points of text_offset written so far (the client's
    // encoder); the prompt was echoed, or its entries split off (first chunk of the choice).
    size_t text_offset = 0;
    bool prompt_done = false;
    // Tool calls. Encoders: the calls of this choice so far, assembled from their pieces (a
    // client dialect that takes whole calls gets each once it is complete), and how many went
    // out. Decoders: how many calls the backend made so far (the next call's index).
    std::vector<ToolCall> calls;
    size_t calls_sent = 0;
    int blocks = 0;       // Anthropic: content blocks started (the next block's index)
    int text_block = -1;  // Anthropic: index of the open text block, -1 when none is open
    int tool_block = -1;  // Anthropic: index of the open tool_use block, -1 when none is open
    int thinking_block = -1;  // Anthropic: index of the open thinking block, -1 when none is
    // Responses API: the text of its open message or reasoning item (blocks, text_block,
    // thinking_block and tool_block count and place its output items as Anthropic's blocks).
    std::string item_text;
};

struct StreamState {
    // Client-facing identity, set by the exchange before the first event.
    std::string id;
    std::string model;
    int64_t created = 0;

    // What the request asked for.
    int n = 1;                       // choices per prompt
    bool batch = false;              // SGLang: list input or n > 1 (events carry "index")
    bool include_usage = false;      // OpenAI: client asked for the usage chunk
    bool continuous_usage = false;   // OpenAI: client asked for usage on every chunk
    std::optional<int64_t> max_tokens;
    std::vector<std::string> request_ids;  // SGLang rids
    std::string prompt;  // the prompt text, for dialects whose wire echoes it (vLLM legacy)
    // The request's log-probability settings (GenerationRequest's, copied by
    // canonical::set_logprob_request on both states): what a client encoder writes, and what a
    // decoder was asked for (prompt entries to expect, an echo to strip).
    bool logprobs = false;  // wants_logprobs
    bool logprobs_if_available = false;
    size_t top_logprobs = 0;  // top_count
    std::optional<int64_t> prompt_logprob_start;
    bool logprob_text = false;
    bool post_sampling_probs = false;
    // OpenAI completions echo (client encoder: put in front; upstream decoder: strip): each
    // prompt, as the request has it (a token-id prompt's text comes from its entries).
    bool echo = false;
    std::vector<Prompt> prompts;
    // Stop strings the upstream trims. A cumulative decoder holds back a tail that may still
    // turn out to be the start of one, because text sent as a delta can never be taken back.
    std::vector<std::string> stop;

    // SGLang: the backend streams each event's own text, not the text so far (it runs with
    // --incremental-streaming-output). Found from the stream itself; unset until it is known.
    std::optional<bool> delta_text;

    // The client's dialect, set by the exchange on the upstream decoder's state: a decoder
    // keeps what only a client of its own dialect can take (canonical::Carried) when they match.
    std::optional<Dialect> client;

    // The Responses API's client encoder: the request's settings its events repeat (owned by
    // the request, which outlives the stream), the next event's sequence_number, and the output
    // items done so far (JSON, comma-separated) for the final response object.
    const GenerationRequest::Responses* responses = nullptr;
    int64_t sequence = 0;
    std::string output_items;

    std::vector<ChoiceState> choices;
    Timing timing;            // measured by the exchange, set before encode_stream_end
    Usage usage;              // aggregate usage as reported by the upstream, if it did
    bool usage_final = false; // `usage` came from the upstream's final report
    bool content_seen = false;  // a content-bearing chunk went out
    bool ended = false;         // the terminator went out

    ChoiceState& choice(int index) {
        if (index < 0) {
            index = 0;
        }
        if (static_cast<size_t>(index) >= choices.size()) {
            choices.resize(static_cast<size_t>(index) + 1);
        }
        return choices[static_cast<size_t>(index)];
    }

    // The request's aggregate usage: the upstream's final report if there was one, else the sum
    // over choices (prompt tokens counted once per prompt, i.e. once per `n` choices).
    Usage aggregate_usage() const;
};

}  // namespace infergate::canonical
