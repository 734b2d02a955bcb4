// JSON written in another, equally valid layout: the same values with Python json.dumps spacing,
// pretty-printed with shuffled key order, or with ASCII-only escapes. Every JSON text the
// emulator writes passes through restyle_json when a wire style asks for it (docs/emulator.md,
// "Wire styles"); the dialect files keep writing their own bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::emulator {

enum class JsonStyle : std::uint8_t {
    kCompact,  // the bytes as the dialect writes them (compact, or json.dumps where it is)
    kSpaced,   // json.dumps defaults: ", " and ": ", keys in order
    kPretty,   // indented over several lines, keys of every object shuffled
};

// A small deterministic generator (splitmix64): key shuffles, split points, piece sizes.
class StyleRng {
public:
    explicit StyleRng(std::uint64_t seed = 1) : state_(seed) {}
    void reseed(std::uint64_t seed) { state_ = seed; }
    std::uint64_t next();
    // Uniform in [0, n), n > 0.
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

private:
    std::uint64_t state_;
};

struct JsonLayout {
    JsonStyle style = JsonStyle::kCompact;
    // Non-ASCII as \uXXXX (surrogate pairs above the BMP, like Python's ensure_ascii) and '/' as
    // "\/" (PHP's default, allowed by RFC 8259).
    bool ascii = false;
    // kPretty on one line (spaced, keys shuffled): NDJSON records cannot hold a newline.
    bool one_line = false;
};

// Writes `in` in `layout` to `out` (cleared first). Returns false and leaves `out` empty when `in`
// is not one JSON text (a [DONE] payload, the garbage fault's bytes, plain text): the caller then
// writes it as it is. The values never change: number and literal tokens are copied, escapes in
// strings are kept, only the layout, the key order and the escaping of '/' and non-ASCII differ.
bool restyle_json(std::string_view in, const JsonLayout& layout, StyleRng& rng, std::string& out);

// Offsets in `json` (a valid JSON text) right after each token but the last, where a line break
// may go without changing the value: the places a multi-line SSE payload may be cut.
void json_token_gaps(std::string_view json, std::vector<std::size_t>& gaps);

}  // namespace infergate::emulator
