// Small pieces every dialect's wire code shares: how much generated text may be shown after k
// tokens (stop-string hold-back), delta bookkeeping, timestamps and stand-in token ids.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/generator.hpp"
#include "emulator/json_util.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

// Bytes of raw_text produced by the first `tokens` tokens.
std::size_t raw_len_after(const Output& out, int tokens);

// vLLM's detokenizer: holds back `holdback` bytes (len(longest stop) - 1) while running.
std::size_t visible_holdback(const Output& out, int tokens, bool last, std::size_t holdback);
std::size_t stop_holdback(const StopRules& rules);

// Ollama's runner and llama.cpp's server: hold back exactly the tail that is a prefix of some
// stop string (a partial match), so a stop string never leaks and nothing else is delayed.
std::size_t visible_partial_stop(const Output& out, int tokens, bool last,
                                 const std::vector<std::string>& stops);

// The text between c.text_sent and `visible` (never moving backwards); advances c.text_sent.
std::string_view take_delta(ChoiceState& c, std::size_t visible);

// Go's time.Time JSON form: RFC 3339, UTC, nanoseconds with trailing zeros trimmed.
std::string rfc3339_now();
std::int64_t nanos_between(std::chrono::steady_clock::time_point from,
                           std::chrono::steady_clock::time_point to);

// Token ids of a text prompt as the tokenizer gives them without matching special tokens
// (tokenizer.hpp's token_ids), one per whitespace-separated word, so counts match
// prompt_from_text.
std::vector<std::int64_t> pseudo_token_ids(std::string_view text);

// usage.prompt_tokens_details = {"cached_tokens": N}: the prompt tokens the prefix cache served.
void write_cached_details(JsonWriter& w, int cached);
// The same as vLLM (--enable-prompt-tokens-details) and SGLang (--enable-cache-report) fill it:
// only when N > 0; otherwise null, or nothing where the dump excludes None (`null_when_none`).
void write_cached_details_if_any(JsonWriter& w, int cached, bool null_when_none);

// [A-Za-z0-9]{n} from a per-thread generator (Anthropic ids).
std::string random_alnum(std::size_t n);

// GET /v1/models as every OpenAI-compatible server shapes it: {"object":"list","data":[{"id",
// "object":"model","created","owned_by", ...}]}; `extra` writes each server's own fields.
std::string model_list_body(std::string_view id, std::int64_t created, std::string_view owned_by,
                            const std::function<void(JsonWriter&)>& extra = {});

}  // namespace infergate::emulator
