#pragma once
// The one owner of stream framing. Incremental scanners that split SSE and NDJSON streams into
// whole events across arbitrary read boundaries, and the writers for both.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::framing {

// One SSE event: its `event:` name (empty when none) and its `data:` lines joined with '\n'.
struct SseEvent {
    std::string event;
    std::string data;
};

// Incremental SSE parser (WHATWG rules that matter to LLM servers): LF, CR and CRLF line ends
// (also a CRLF split across two feeds); `data:` with or without one following space (only one is
// stripped); several `data:` lines joined with '\n'; a field line without a colon is a field
// with an empty value; comment lines (`:` first) and keep-alives ignored; `id:`/`retry:` and
// unknown fields ignored; an event ends at a blank line; events with no data line are dropped
// (`data:` alone gives data ""). Whole lines inside one feed are parsed in place; only the
// unfinished tail is copied. A line longer than `max_buffer`, or an event whose data grows past
// it, turns `overflowed()` true: the stream should then be treated as broken, and further input
// is ignored. The rule is stated per line, so the result does not depend on how the bytes were
// split. Not thread-safe: one scanner per stream.
class SseScanner {
public:
    explicit SseScanner(size_t max_buffer = 4 * 1024 * 1024) : max_buffer_(max_buffer) {}
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
    size_t max_buffer_;
    std::string pending_;      // bytes of an unfinished line
    bool skip_lf_ = false;     // the last byte was CR: a following LF belongs to it
    SseEvent current_;
    bool has_data_ = false;
    bool overflowed_ = false;
};

// Incremental splitter for newline-delimited records (NDJSON; also NUL-delimited records as the
// vLLM legacy server and very old SGLang sent). Blank records are skipped; a trailing CR is
// removed. A record longer than `max_buffer` turns `overflowed()` true, as for SseScanner.
// `finish()` delivers a last record that had no delimiter. Not thread-safe: one per stream.
class RecordScanner {
public:
    explicit RecordScanner(size_t max_buffer = 4 * 1024 * 1024) : max_buffer_(max_buffer) {}
    void feed(std::string_view bytes, std::vector<std::string>& out);
    void finish(std::vector<std::string>& out);
    bool overflowed() const { return overflowed_; }
    bool has_partial() const { return !pending_.empty(); }

private:
    void overflow();
    size_t max_buffer_;
    std::string pending_;
    bool overflowed_ = false;
};

// Writers. `json` must be one line (compact JSON never contains a raw newline).
void write_sse_data(std::string_view json, std::string& out);              // "data: J\n\n"
void write_sse_event(std::string_view name, std::string_view json, std::string& out);
void write_ndjson(std::string_view json, std::string& out);                // "J\n"

// In-place form of write_sse_data for encoders that serialize JSON straight into `out`:
// begin_sse_data(out); <append one line of JSON>; end_sse_data(out);
inline void begin_sse_data(std::string& out) { out.append("data: "); }
inline void end_sse_data(std::string& out) { out.append("\n\n"); }
// The OpenAI-family terminator, "data: [DONE]\n\n".
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace infergate::framing
