#pragma once
// The one owner of stream framing. Incremental scanners that split SSE and NDJSON streams into
// whole events across arbitrary read boundaries, and the writers for both.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::framing {

// One SSE event: its `event:` name (empty when none) and its `data:` lines joined with '\n'. A
// scanner that reports comments gives each comment line as an event with `comment` set and the
// text after the colon in `data`.
struct SseEvent {
    std::string event;
    std::string data;
    bool comment = false;
};

// Skips a UTF-8 byte order mark at the very start of a stream, however the stream is split
// (WHATWG's event-stream decoding strips it; RFC 8259 lets a JSON parser ignore it).
class BomSkipper {
public:
    // `bytes` without the part of a BOM it holds. A BOM prefix that turns out not to be one comes
    // back through `restored` (bytes the caller must read before `bytes`).
    std::string_view skip(std::string_view bytes, std::string_view& restored);
    // End of the stream: the prefix of a BOM still held (the stream was shorter than a BOM).
    std::string_view finish();

private:
    size_t matched_ = 0;
    bool done_ = false;
};

// Incremental SSE parser (WHATWG rules that matter to LLM servers): LF, CR and CRLF line ends
// (also a CRLF split across two feeds); `data:` with or without one following space (only one is
// stripped); several `data:` lines joined with '\n'; a field line without a colon is a field
// with an empty value; comment lines (`:` first) and keep-alives ignored; `id:`/`retry:` and
// unknown fields ignored; an event ends at a blank line; events with no data line are dropped
// (`data:` alone gives data ""); a UTF-8 BOM at the start of the stream is skipped. An
// `error:` field (llama-server reports a failure inside a 200 stream as `error: {json}`, which
// WHATWG clients would ignore) is delivered as an event whose data is `{"error": <value>}`, the
// in-band error envelope the decoders read (a value that is not an object becomes its
// message). With
// `report_comments`, each comment line (a keep-alive such as `: ping`) is delivered as an event
// of its own, so that a proxy can pass it on. Whole lines inside one feed are parsed in place; only
// the unfinished tail is copied. A line longer than `max_buffer`, or an event whose data grows past
// it, turns `overflowed()` true: the stream should then be treated as broken, and further input
// is ignored. The rule is stated per line, so the result does not depend on how the bytes were
// split. Not thread-safe: one scanner per stream.
class SseScanner {
public:
    explicit SseScanner(size_t max_buffer = 4 * 1024 * 1024, bool report_comments = false)
        : max_buffer_(max_buffer), report_comments_(report_comments) {}
    // Appends every event completed by `bytes` to `out` (which is not cleared).
    void feed(std::string_view bytes, std::vector<SseEvent>& out);
    // End of input: an unterminated last line is still a line, and an event that was not closed
    // by a blank line is still delivered when it has data. Leaves the scanner empty.
    void finish(std::vector<SseEvent>& out);
    bool overflowed() const { return overflowed_; }
    // True when bytes are buffered that do not yet form a whole event.
    bool has_partial() const;

private:
    void take_line(std::string_view line, std::vector<SseEvent>& out);
    void dispatch(std::vector<SseEvent>& out);
    void overflow();
    void feed_lines(std::string_view bytes, std::vector<SseEvent>& out);
    size_t max_buffer_;
    bool report_comments_;
    BomSkipper bom_;
    std::string pending_;      // bytes of an unfinished line
    bool skip_lf_ = false;     // the last byte was CR: a following LF belongs to it
    SseEvent current_;
    bool has_data_ = false;
    bool error_field_ = false;  // the data came from `error:` lines
    bool overflowed_ = false;
};

// `{"error": value}` for an SSE `error:` field's value: the value as it is when it is a JSON
// object, else the message of one (escaped as a JSON string).
std::string error_envelope(std::string_view value);

// Incremental splitter for newline-delimited records (NDJSON; also NUL-delimited records as the
// vLLM legacy server and very old SGLang sent). Blank records are skipped; a trailing CR is
// removed; a UTF-8 BOM at the start of the stream is skipped. A record longer than `max_buffer`
// turns `overflowed()` true, as for SseScanner. `finish()` delivers a last record that had no
// delimiter. Not thread-safe: one per stream.
class RecordScanner {
public:
    explicit RecordScanner(size_t max_buffer = 4 * 1024 * 1024) : max_buffer_(max_buffer) {}
    void feed(std::string_view bytes, std::vector<std::string>& out);
    void finish(std::vector<std::string>& out);
    bool overflowed() const { return overflowed_; }
    bool has_partial() const { return !pending_.empty(); }

private:
    void overflow();
    void feed_records(std::string_view bytes, std::vector<std::string>& out);
    size_t max_buffer_;
    BomSkipper bom_;
    std::string pending_;
    bool overflowed_ = false;
};

// Writers. `json` must be one line (compact JSON never contains a raw newline).
void write_sse_data(std::string_view json, std::string& out);              // "data: J\n\n"
// Any payload: each of its lines (split at '\n') a `data:` line of its own, as WHATWG reads them.
void write_sse_data_lines(std::string_view data, std::string& out);
// A comment line, "<text>" being what followed the colon: ":<text>\n\n".
void write_sse_comment(std::string_view text, std::string& out);
void write_sse_event(std::string_view name, std::string_view json, std::string& out);
void write_ndjson(std::string_view json, std::string& out);                // "J\n"

// In-place form of write_sse_data for encoders that serialize JSON straight into `out`:
// begin_sse_data(out); <append one line of JSON>; end_sse_data(out);
inline void begin_sse_data(std::string& out) { out.append("data: "); }
inline void end_sse_data(std::string& out) { out.append("\n\n"); }
// The OpenAI-family terminator, "data: [DONE]\n\n".
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// Whether an event's data is the `[DONE]` sentinel, with any whitespace around it.
bool is_done_sentinel(std::string_view data);

}  // namespace infergate::framing
