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
// `created_at`. Codecs are pure, so they cannot measure time: the virtual Codec functions omit
// every duration (Ollama itself omits zero-valued metrics, so clients accept their absence) and
// write `created_at` from the whole-second `created` of the result / stream state. An exchange
// that measured the request calls the overloads below instead, passing what it measured.
struct Timing {
    std::optional<int64_t> created_unix_ns;  // replaces `created` (seconds) in created_at
    std::optional<int64_t> total_ns;
    std::optional<int64_t> load_ns;
    std::optional<int64_t> prompt_eval_ns;
    std::optional<int64_t> eval_ns;
};

// Client side with measured timing. `codec` must be generate_codec() or chat_codec().
void encode_response(const Codec& codec, const GenerationResult& result,
                     const GenerationRequest& req, const Timing& timing, std::string& out);
void encode_stream_end(const Codec& codec, StreamState& state, const Timing& timing,
                       std::string& out);

// RFC 3339 UTC with up to nine fractional digits, trailing zeros trimmed as Go's
// time.RFC3339Nano does ("2023-08-04T19:22:45.499127Z").
std::string format_created_at(int64_t unix_ns);

}  // namespace infergate::translators::ollama
