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

// Incremental SSE parser (WHATWG rules that matter to LLM servers): LF, CR and CRLF line ends;
// `data:` with or without one following space; comment lines (`:` first) and keep-alives
// ignored; `id:`/`retry:` ignored; an event ends at a blank line; events with no data are
// dropped. Bytes are buffered up to `max_buffer`; past that `overflowed()` turns true and the
// stream should be treated as broken.
class SseScanner {
public:
    explicit SseScanner(size_t max_buffer = 4 * 1024 * 1024) : max_buffer_(max_buffer) {}
    // Appends every event completed by `bytes` to `out` (which is not cleared).
    void feed(std::string_view bytes, std::vector<SseEvent>& out);
    // End of input: an event that was not closed by a blank line is still delivered.
    void finish(std::vector<SseEvent>& out);
    bool overflowed() const { return overflowed_; }
    // True when bytes are buffered that do not yet form a whole event.
    bool has_partial() const;

private:
    void take_line(std::string_view line, std::vector<SseEvent>& out);
    size_t max_buffer_;
    std::string pending_;      // bytes of an unfinished line
    bool skip_lf_ = false;     // the last byte was CR: a following LF belongs to it
    SseEvent current_;
    bool has_data_ = false;
    bool overflowed_ = false;
};

// Incremental splitter for newline-delimited records (NDJSON; also NUL-delimited records as the
// vLLM legacy server and very old SGLang sent). Blank records are skipped; a trailing CR is
// removed.
class RecordScanner {
public:
    explicit RecordScanner(size_t max_buffer = 4 * 1024 * 1024) : max_buffer_(max_buffer) {}
    void feed(std::string_view bytes, std::vector<std::string>& out);
    void finish(std::vector<std::string>& out);
    bool overflowed() const { return overflowed_; }
    bool has_partial() const { return !pending_.empty(); }

private:
    size_t max_buffer_;
    std::string pending_;
    bool overflowed_ = false;
};

// Writers. `json` must be one line (compact JSON never contains a raw newline).
void write_sse_data(std::string_view json, std::string& out);              // "data: J\n\n"
void write_sse_event(std::string_view name, std::string_view json, std::string& out);
void write_ndjson(std::string_view json, std::string& out);                // "J\n"

}  // namespace infergate::framing
