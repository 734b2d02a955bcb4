#pragma once
// Log probabilities across dialects: the request questions every codec asks, and the one JSON
// shape four dialects share for a token entry ({token, logprob, bytes, top_logprobs}: OpenAI
// chat, llama.cpp's /completion and chat route, Ollama). docs/dialects.md, "Log probabilities".

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/canonical/stream_state.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::canonical {

// The client wants the generated tokens' log probabilities.
inline bool wants_logprobs(const GenerationRequest& req) {
    return req.return_logprob.value_or(false) || req.top_logprobs.value_or(0) > 0;
}
// Ask the backend for them: wanted, or welcome where the backend has them (TGI's details).
inline bool ask_logprobs(const GenerationRequest& req) {
    return wants_logprobs(req) || req.logprobs_if_available;
}
// The client wants the prompt's too (an echo with logprobs, SGLang logprob_start_len >= 0, TGI
// decoder_input_details).
inline bool wants_prompt_logprobs(const GenerationRequest& req) {
    return req.prompt_logprob_start.has_value();
}
// How many alternatives per token the client asked for (0 when none).
inline size_t top_count(const GenerationRequest& req) {
    return static_cast<size_t>(std::max<int64_t>(0, req.top_logprobs.value_or(0)));
}

// Copies the request's log-probability settings into a stream state (the exchange does it for
// the upstream decoder's state and the client encoder's).
inline void set_logprob_request(StreamState& s, const GenerationRequest& req) {
    s.logprobs = wants_logprobs(req);
    s.logprobs_if_available = req.logprobs_if_available;
    s.top_logprobs = top_count(req);
    s.prompt_logprob_start = req.prompt_logprob_start;
    s.logprob_text = req.logprob_text;
    s.post_sampling_probs = req.post_sampling_probs;
    // OpenAI completions' echo: its stream encoder puts each prompt in front of its choices, and
    // an OpenAI backend's echo (asked only for the prompt's entries) comes off in its decoder.
    s.echo = req.echo && req.dialect == Dialect::openai_completions;
    if (s.echo || s.prompt_logprob_start) {
        s.prompts = req.prompts;
    }
}

// How a decoder reads numbers: exactly when log probabilities are carried (an engine's 17-digit
// logprob keeps its digits), fast otherwise (json::Numbers).
inline json::Numbers exact_numbers(const GenerationRequest& req) {
    return ask_logprobs(req) || wants_prompt_logprobs(req) ? json::Numbers::exact
                                                           : json::Numbers::fast;
}
inline json::Numbers exact_numbers(const StreamState& s) {
    return s.logprobs || s.logprobs_if_available || s.prompt_logprob_start ? json::Numbers::exact
                                                                           : json::Numbers::fast;
}

// What Python's len() gives for `s`: its code points (the unit of OpenAI's text_offset). Bytes
// that are not UTF-8 count one each.
size_t code_points(std::string_view s);

// A logprob as JSON can carry it: -inf (a banned token) becomes -9999.0, as vLLM writes it
// (JSON has no infinities; RapidJSON would refuse to write one).
double finite_logprob(double logprob);

// The logprob a client is written for `t`: the engine's, or the log of llama.cpp's post-sampling
// probability, finite; nullopt when there is none (the first prompt token).
std::optional<double> logprob_value(const TokenAlternative& t);

// The 400 for a client that asked for log probabilities a backend cannot give: `what` names the
// client's parameter as it wrote it ("logprobs", "echo", "parameters.decoder_input_details").
Error no_logprobs(std::string_view what, std::string_view backend, std::string_view instead);

// Where a client of `client` asked for the prompt's log probabilities: "echo" (with logprobs)
// for OpenAI, "logprob_start_len" for SGLang, "parameters.decoder_input_details" for TGI.
std::string prompt_logprob_param(Dialect client);

// What a backend can give, for refuse_logprobs.
struct LogprobSupport {
    bool generated = false;  // each generated token's logprob and alternatives
    bool prompt = false;     // the prompt tokens' (SGLang, vLLM's echo, TGI's prefill)
};
// The 400 for a request that wants log probabilities (or an echo of a token-id prompt, whose
// text only prompt entries can give) that `backend` cannot report; nullopt when it can. Every
// backend encoder calls it, so a request is never answered without what it asked for.
std::optional<Error> refuse_logprobs(const GenerationRequest& req, std::string_view backend,
                                     LogprobSupport support);

}  // namespace infergate::canonical

namespace infergate::json {

// How a dialect writes the {token, logprob, bytes, top_logprobs} entry.
struct TokenEntryStyle {
    bool id = false;          // llama.cpp: "id" first
    bool omit_empty = false;  // Ollama (omitempty): no "bytes" or "top_logprobs" when empty
    bool top = true;          // write the alternatives list at all (OpenAI chat: always)
    bool probs = false;       // llama.cpp post_sampling_probs: "prob" / "top_probs"
};

// Writes logprob_value(t), or null (a template: some codecs write with a stack-allocated writer).
template <class W>
void write_logprob(W& w, const canonical::TokenAlternative& t) {
    if (const std::optional<double> v = canonical::logprob_value(t)) {
        w.Double(*v);
    } else {
        w.Null();
    }
}

// Writes one entry (and its alternatives, at most `max_top`). `bytes` are the token's raw bytes
// when the engine sent them, else its text's.
void write_token_entry(Writer& w, const canonical::TokenLogprob& t, const TokenEntryStyle& style,
                       size_t max_top);
void write_token_entries(Writer& w, const std::vector<canonical::TokenLogprob>& entries,
                         const TokenEntryStyle& style, size_t max_top);

// Reads an array of such entries at `path` (any of the four dialects' spellings: with or without
// "id", "bytes" absent or null, "logprob" or llama.cpp's "prob", "top_logprobs" or "top_probs").
// An error names what is wrong, for an upstream_error.
std::optional<std::string> read_token_entries(const Value& list, std::string_view path,
                                              std::vector<canonical::TokenLogprob>& out);

}  // namespace infergate::json
