// Wire styles: the same answers in other byte layouts that real servers and the specs allow, so
// that a client is tested against variation instead of against one writer's habits. What a style
// may change: JSON spacing, key order and escapes (json_style.hpp), SSE and NDJSON framing
// (EventStyler below), how bytes are cut into writes and chunks, and 1xx responses before the
// answer (Conn). All knobs off, the emulator writes exactly what it always wrote.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/json_style.hpp"

namespace infergate::emulator {

// --sse-style variants, combinable.
enum SseVariant : std::uint16_t {
    kSseCrlf = 1 << 0,        // lines end "\r\n"
    kSseCr = 1 << 1,          // lines end "\r"
    kSseNoSpace = 1 << 2,     // "data:x" (every field written without the optional space)
    kSseMultiline = 1 << 3,   // every JSON payload split over several data: lines
    kSseComments = 1 << 4,    // ": ping" comment blocks between events (sse-starlette)
    kSseFields = 1 << 5,      // id: and retry: lines, and "event: message" where no event: is
    kSseBom = 1 << 6,         // a UTF-8 BOM before the first event
    kSseNoBlankEnd = 1 << 7,  // the last event ends at EOF without its blank line
};

// --ndjson-style variants (Ollama NDJSON and vLLM legacy records), combinable.
enum NdjsonVariant : std::uint8_t {
    kNdjsonCrlf = 1 << 0,      // records end "\r\n" (newline delimiter only)
    kNdjsonBlank = 1 << 1,     // an empty record between records
    kNdjsonNoEolEnd = 1 << 2,  // the last record ends at EOF without its delimiter
};

// 1xx responses written before every final response.
enum InterimCode : std::uint8_t {
    kInterim100 = 1 << 0,  // 100 Continue
    kInterim103 = 1 << 1,  // 103 Early Hints with a Link header
};

inline constexpr int kDefaultSplitMax = 7;

struct WireStyle {
    JsonStyle json = JsonStyle::kCompact;
    bool ascii_escapes = false;  // --json-escape ascii
    std::uint16_t sse = 0;       // SseVariant bits
    std::uint8_t ndjson = 0;     // NdjsonVariant bits
    std::uint8_t interim = 0;    // InterimCode bits
    int split_max = 0;           // writes (and chunks) of 1..split_max bytes; 0 = off
    std::uint64_t seed = 1;      // --style-seed: key shuffles, split points, piece sizes

    // False for the emulator's own layout: then nothing on the write path looks at the style.
    bool active() const {
        return json != JsonStyle::kCompact || ascii_escapes || sse != 0 || ndjson != 0 ||
               interim != 0 || split_max > 0;
    }
};

// Option and header values. Each returns false on a bad value and says why in `error`.
bool parse_json_style(std::string_view text, JsonStyle& out, std::string& error);
bool parse_json_escape(std::string_view text, bool& ascii, std::string& error);
bool parse_sse_style(std::string_view text, std::uint16_t& out, std::string& error);
bool parse_ndjson_style(std::string_view text, std::uint8_t& out, std::string& error);
bool parse_interim(std::string_view text, std::uint8_t& out, std::string& error);

// Rewrites the events of one stream in a style. Input events are complete, as the dialect
// encoders write them ("event: x\ndata: {...}\n\n", "data:{...}\n\n", "{...}\n", "{...}\0").
class EventStyler {
public:
    enum class Framing { kSse, kRecords };

    void begin(Framing framing) {
        framing_ = framing;
        events_ = 0;
    }
    // Appends the styled `event` to `out`; `last` marks the stream's final event.
    void event(std::string_view event, bool last, const WireStyle& style, StyleRng& rng,
               std::string& out);

private:
    struct Field {
        std::string_view line;
        std::string_view name;   // the whole line when it has no ':'
        std::string_view value;  // without the one optional space
        bool space = false;      // written with that space
    };

    void sse_event(std::string_view event, bool last, const WireStyle& style, StyleRng& rng,
                   std::string& out);
    void record(std::string_view event, bool last, const WireStyle& style, StyleRng& rng,
                std::string& out);
    void parse_fields(std::string_view event);
    void choose_cuts(std::string_view json, StyleRng& rng);
    void write_data(std::string_view prefix, std::string_view payload, std::string_view eol,
                    std::string& out) const;
    // `payload` restyled into json_, or copied there as it is when it is not JSON.
    std::string_view styled_payload(std::string_view payload, const WireStyle& style, bool one_line,
                                    StyleRng& rng, bool& is_json);

    Framing framing_ = Framing::kSse;
    int events_ = 0;
    std::vector<Field> fields_;
    std::string data_;
    std::string json_;
    std::vector<std::size_t> gaps_;
    std::vector<std::size_t> cuts_;
};

}  // namespace infergate::emulator
