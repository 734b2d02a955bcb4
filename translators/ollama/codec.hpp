#pragma once
// Ollama native API (api-dialects §6, §10.12): POST /api/generate and POST /api/chat, NDJSON
// streams that are on by default.

#include <cstdint>
#include <optional>
#include <string>

#include "translators/codec.hpp"

namespace infergate::translators::ollama {

// POST /api/generate.
const Codec& generate_codec();
// POST /api/chat.
const Codec& chat_codec();

// Wall-clock facts an Ollama client expects in the final object (`total_duration`,
// `load_duration`, `prompt_eval_duration`, `eval_duration`, integer nanoseconds) and a precise
// `created_at`: what the exchange measured, from GenerationResult::timing and
// StreamState::timing. Durations not measured are omitted (Ollama itself omits zero-valued
// metrics, so clients accept their absence); without created_unix_ns, `created_at` comes from
// the whole-second `created`.
using Timing = canonical::Timing;

// Client side with explicit timing (tests). `codec` must be generate_codec() or chat_codec().
void encode_response(const Codec& codec, const GenerationResult& result,
                     const GenerationRequest& req, const Timing& timing, std::string& out);
void encode_stream_end(const Codec& codec, StreamState& state, const Timing& timing,
                       std::string& out);

// RFC 3339 UTC with up to nine fractional digits, trailing zeros trimmed as Go's
// time.RFC3339Nano does ("2023-08-04T19:22:45.499127Z").
std::string format_created_at(int64_t unix_ns);

}  // namespace infergate::translators::ollama
