#pragma once
// Log probabilities in the OpenAI dialects (internal to translators/openai/): the completions
// object {text_offset, token_logprobs, tokens, top_logprobs} as vLLM's
// _create_completion_logprobs writes it (serving_completion.py), the chat object {content: [...]}
// as its _create_chat_logprobs does (serving_chat.py), and their readers for a backend's answer.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"

namespace infergate::translators::openai {

// Writes the completions logprobs object for `prompt` entries (an echo; the first has no
// logprob: null, and a null top dict) followed by `generated` ones. `offset` is the code-point
// offset of the first entry in the text the client sees, and is advanced past every token
// written (a stream continues from it). Each top_logprobs dict holds the chosen token and at
// most `top` alternatives, keyed by token text (a repeated text keeps its first place and its
// last value, as a Python dict built from them does).
void write_completion_logprobs(json::Writer& w, const std::vector<canonical::TokenLogprob>* prompt,
                               const std::vector<canonical::TokenLogprob>& generated,
                               size_t& offset, size_t top);

// The same object with empty lists: the client asked, the backend gave nothing.
void write_empty_completion_logprobs(json::Writer& w);

// Writes the chat logprobs object {"content": [...]} (at most `top` alternatives per token).
void write_chat_logprobs(json::Writer& w, const std::vector<canonical::TokenLogprob>& entries,
                         size_t top);

// Reads a choice's `logprobs` from an OpenAI-compatible backend: the completions object
// (tokens, token_logprobs, top_logprobs dicts, text_offset) or the chat object {content: [...]}
// that llama.cpp's and TGI's OpenAI routes write on both routes. Null or absent reads as nothing.
// An error names what is wrong, for an upstream_error.
std::optional<std::string> read_logprobs(const json::Value* logprobs, std::string_view path,
                                         std::vector<canonical::TokenLogprob>& out);

// A backend asked for the prompt's logprobs echoed the prompt (vLLM and SGLang: `echo` with
// `logprobs`): the first entries of `entries` are the prompt's and `text` begins with its text.
// Moves those entries from index `start` on to `prompt_out` (the rest are dropped) and strips the
// text. How many are the prompt's: a token-id prompt's length, else `prompt_tokens` (the
// backend's count for this prompt, when known), else the entries whose text lies within the
// prompt's text. The text stripped is the prompt's own, or the prompt entries' token texts.
void split_echoed_prompt(std::string& text, std::vector<canonical::TokenLogprob>& entries,
                         std::vector<canonical::TokenLogprob>& prompt_out,
                         const canonical::Prompt* prompt, std::optional<int64_t> prompt_tokens,
                         int64_t start);

// A token's text offsets as the completions object counts them (code points of the token
// texts): the total over `entries`.
size_t token_text_length(const std::vector<canonical::TokenLogprob>& entries);

}  // namespace infergate::translators::openai
