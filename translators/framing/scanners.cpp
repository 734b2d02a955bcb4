// The stream scanners: BomSkipper, SseScanner (SSE events) and RecordScanner (NDJSON and
// NUL-delimited records), which cut a byte stream into whole events across read boundaries.

#include "translators/framing/framing.hpp"

#include <cstring>
#include <utility>

namespace infergate::framing {

namespace {

// After a line or record of unusual size, the pending buffer is released rather than kept: a
// proxy holds one scanner per live stream, and one 4 MiB outlier should not pin 4 MiB for the
// rest of a long stream. Ordinary lines stay well below this, so the buffer is reused.
constexpr size_t kKeepCapacity = size_t{64} * 1024;

void clear_pending(std::string& pending) {
    if (pending.capacity() > kKeepCapacity) {
        std::string().swap(pending);
    } else {
        pending.clear();
    }
}

// Finds the next occurrence of either of two delimiter bytes in [begin, end). Each delimiter's
// next position is remembered, so a stream that only ever uses one of them (LF-only SSE, or
// CR-only) does not rescan the rest of the buffer for the other on every line: the total work
// for a buffer is O(n) however many lines it holds.
class DelimiterFinder {
public:
    DelimiterFinder(char a, char b, const char* end) : a_(a), b_(b), end_(end) {}

    // The first delimiter at or after `from`, or `end` when there is none.
    const char* next(const char* from) {
        if (next_a_ < from) {
            next_a_ = find(from, a_);
        }
        if (next_b_ < from) {
            next_b_ = find(from, b_);
        }
        return next_a_ < next_b_ ? next_a_ : next_b_;
    }

private:
    const char* find(const char* from, char c) const {
        const void* hit = std::memchr(from, c, static_cast<size_t>(end_ - from));
        return hit != nullptr ? static_cast<const char*>(hit) : end_;
    }

    char a_;
    char b_;
    const char* end_;
    // nullptr compares below every position in the buffer, so the first call searches.
    const char* next_a_ = nullptr;
    const char* next_b_ = nullptr;
};

bool is_blank(std::string_view record) {
    return record.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

}  // namespace

// ---- SseScanner ---------------------------------------------------------------------------

// Overflow rule: a line longer than max_buffer_ (whether it arrives whole or in pieces) or an
// event whose joined data grows past max_buffer_. Stating it on the line rather than on "what is
// pending right now" keeps the result independent of how the network split the bytes, which the
// fuzzer checks.
std::string_view BomSkipper::skip(std::string_view bytes, std::string_view& restored) {
    static constexpr char kBom[] = "\xEF\xBB\xBF";
    restored = {};
    while (!done_ && !bytes.empty()) {
        if (bytes.front() != kBom[matched_]) {
            done_ = true;
            restored = std::string_view(kBom, matched_);  // a prefix of a BOM, then not one
            break;
        }
        bytes.remove_prefix(1);
        if (++matched_ == 3) {
            done_ = true;
        }
    }
    return bytes;
}

std::string_view BomSkipper::finish() {
    static constexpr char kBom[] = "\xEF\xBB\xBF";
    const std::string_view held = done_ ? std::string_view() : std::string_view(kBom, matched_);
    done_ = true;
    return held;
}

void SseScanner::feed(std::string_view bytes, std::vector<SseEvent>& out) {
    std::string_view restored;
    bytes = bom_.skip(bytes, restored);
    if (!restored.empty()) {
        feed_lines(restored, out);
    }
    feed_lines(bytes, out);
}

void SseScanner::feed_lines(std::string_view bytes, std::vector<SseEvent>& out) {
    if (overflowed_ || bytes.empty()) {
        return;
    }
    const char* p = bytes.data();
    const char* const end = p + bytes.size();
    if (skip_lf_) {
        // The previous feed ended in CR; an LF here completes that CRLF, it is not a blank line.
        skip_lf_ = false;
        if (*p == '\n') {
            ++p;
        }
    }
    DelimiterFinder finder('\n', '\r', end);
    while (p < end) {
        const char* eol = finder.next(p);
        if (eol == end) {
            break;
        }
        const std::string_view piece(p, static_cast<size_t>(eol - p));
        p = eol + 1;
        if (*eol == '\r') {
            if (p == end) {
                skip_lf_ = true;
            } else if (*p == '\n') {
                ++p;
            }
        }
        if (pending_.size() + piece.size() > max_buffer_) {
            overflow();
            return;
        }
        if (pending_.empty()) {
            take_line(piece, out);  // the common case: the whole line is here, parse it in place
        } else {
            pending_.append(piece);
            take_line(pending_, out);
            clear_pending(pending_);
        }
        if (overflowed_) {
            return;
        }
    }
    const auto rest = static_cast<size_t>(end - p);
    if (rest == 0) {
        return;
    }
    if (pending_.size() + rest > max_buffer_) {
        overflow();
        return;
    }
    pending_.append(p, rest);
}

void SseScanner::finish(std::vector<SseEvent>& out) {
    feed_lines(bom_.finish(), out);
    if (overflowed_) {
        return;
    }
    if (!pending_.empty()) {
        // The last line had no line end; it is still a line.
        take_line(pending_, out);
        clear_pending(pending_);
    }
    if (has_data_ && !overflowed_) {
        dispatch(out);
    }
    current_.event.clear();
    current_.data.clear();
    has_data_ = false;
    error_field_ = false;
    skip_lf_ = false;
}

bool SseScanner::has_partial() const {
    return !pending_.empty() || has_data_ || !current_.event.empty();
}

void SseScanner::take_line(std::string_view line, std::vector<SseEvent>& out) {
    if (line.empty()) {
        if (has_data_) {
            dispatch(out);
        } else {
            // WHATWG: an event without data is dropped, and its name must not leak into the next.
            current_.event.clear();
        }
        return;
    }
    if (line.front() == ':') {
        if (report_comments_) {
            SseEvent& c = out.emplace_back();
            c.comment = true;
            c.data.assign(line.substr(1));
        }
        return;  // comment or keep-alive: not part of the event
    }
    std::string_view field = line;
    std::string_view value;
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
        field = line.substr(0, colon);
        value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') {
            value.remove_prefix(1);  // exactly one space: the rest belongs to the value
        }
    }
    if (field == "error" && !(has_data_ && !error_field_)) {
        // llama-server's in-stream failure; see the class comment.
        error_field_ = true;
        field = "data";
    }
    if (field == "data") {
        const size_t grown = current_.data.size() + value.size() + (has_data_ ? 1 : 0);
        if (grown > max_buffer_) {
            overflow();
            return;
        }
        if (has_data_) {
            current_.data.push_back('\n');
        }
        current_.data.append(value);
        has_data_ = true;
    } else if (field == "event") {
        current_.event.assign(value);
    }
    // `id`, `retry` and unknown fields carry nothing a translating proxy needs.
}

std::string error_envelope(std::string_view value) {
    const size_t first = value.find_first_not_of(" \t\r\n");
    std::string out = "{\"error\":";
    if (first != std::string_view::npos && value[first] == '{') {
        out.append(value);
    } else {
        out.append("{\"message\":\"");
        for (const char ch : value) {
            const auto c = static_cast<unsigned char>(ch);
            if (c == '"' || c == '\\') {
                out.push_back('\\');
                out.push_back(ch);
            } else if (c < 0x20) {
                static const char* const kHex = "0123456789abcdef";
                out.append("\\u00");
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 0xf]);
            } else {
                out.push_back(ch);
            }
        }
        out.append("\"}");
    }
    out.push_back('}');
    return out;
}

void SseScanner::dispatch(std::vector<SseEvent>& out) {
    if (error_field_) {
        current_.data = error_envelope(current_.data);
        error_field_ = false;
    }
    out.push_back(std::move(current_));
    // A moved-from string is valid but unspecified; make the next event start empty.
    current_.event.clear();
    current_.data.clear();
    has_data_ = false;
}

void SseScanner::overflow() {
    overflowed_ = true;
    // The stream is broken from here on; give the memory back now rather than at destruction.
    std::string().swap(pending_);
    current_ = SseEvent{};
    has_data_ = false;
    error_field_ = false;
    skip_lf_ = false;
}

// ---- RecordScanner ------------------------------------------------------------------------

namespace {

void emit_record(std::string_view record, std::vector<std::string>& out) {
    if (!record.empty() && record.back() == '\r') {
        record.remove_suffix(1);
    }
    if (!is_blank(record)) {
        out.emplace_back(record);
    }
}

}  // namespace

// Same overflow rule as SseScanner: a record longer than max_buffer_, however it was split.
void RecordScanner::feed(std::string_view bytes, std::vector<std::string>& out) {
    std::string_view restored;
    bytes = bom_.skip(bytes, restored);
    if (!restored.empty()) {
        feed_records(restored, out);
    }
    feed_records(bytes, out);
}

void RecordScanner::feed_records(std::string_view bytes, std::vector<std::string>& out) {
    if (overflowed_ || bytes.empty()) {
        return;
    }
    const char* p = bytes.data();
    const char* const end = p + bytes.size();
    DelimiterFinder finder('\n', '\0', end);
    while (p < end) {
        const char* eol = finder.next(p);
        if (eol == end) {
            break;
        }
        const std::string_view piece(p, static_cast<size_t>(eol - p));
        p = eol + 1;
        if (pending_.size() + piece.size() > max_buffer_) {
            overflow();
            return;
        }
        if (pending_.empty()) {
            emit_record(piece, out);
        } else {
            pending_.append(piece);
            emit_record(pending_, out);
            clear_pending(pending_);
        }
    }
    const auto rest = static_cast<size_t>(end - p);
    if (rest == 0) {
        return;
    }
    if (pending_.size() + rest > max_buffer_) {
        overflow();
        return;
    }
    pending_.append(p, rest);
}

void RecordScanner::finish(std::vector<std::string>& out) {
    feed_records(bom_.finish(), out);
    if (overflowed_ || pending_.empty()) {
        return;
    }
    emit_record(pending_, out);
    clear_pending(pending_);
}

void RecordScanner::overflow() {
    overflowed_ = true;
    std::string().swap(pending_);
}

}  // namespace infergate::framing
