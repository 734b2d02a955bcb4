#pragma once
// A validating cursor over raw JSON bytes, and the member spans of an object found with it: for
// the paths that read or edit a few members of a peer's JSON without building a document (the
// same-dialect fast path). It accepts what json::parse accepts (RFC 8259: whitespace anywhere
// between tokens, any key order, every escape, numbers in any valid form; a high surrogate
// escape must be followed by a low one, as RapidJSON requires), except that it does not reject
// numbers too large for a double (json::parse does: Python and JavaScript parsers do not), and it
// refuses raw bytes 0x1A-0x1F in strings, as RFC 8259 and Python do (RapidJSON 1.1's SSE2 scan
// lets them through).
// Depth is bounded by json::kMaxDepth. Pure: no allocation but the span vector.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"

namespace infergate::json {

class Cursor {
public:
    explicit Cursor(std::string_view text)
        : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

    size_t offset() const { return static_cast<size_t>(p_ - begin_); }
    bool at_end() const { return p_ == end_; }
    char peek() const { return *p_; }  // only when !at_end()

    void ws() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
            ++p_;
        }
    }

    bool literal(const char* word, size_t n) {
        if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) {
            return false;
        }
        p_ += n;
        return true;
    }

    // A string at the cursor (which is on its opening quote); `raw` gets the bytes between the
    // quotes, `escaped` whether it had escapes.
    bool string(std::string_view& raw, bool& escaped) {
        const char* p = p_ + 1;
        const char* const start = p;
        escaped = false;
        for (;;) {
            p = detail::find_string_special(p, end_);
            if (p == end_) {
                return false;  // unterminated
            }
            const auto c = static_cast<unsigned char>(*p);
            if (c == '"') {
                raw = std::string_view(start, static_cast<size_t>(p - start));
                p_ = p + 1;
                return true;
            }
            if (c < 0x20) {
                return false;  // a raw control character
            }
            escaped = true;
            p = escape(p);
            if (p == nullptr) {
                return false;
            }
        }
    }

    // A number at the cursor; `integer` (when given) holds it when it is an integer that fits
    // in int64.
    bool number(std::optional<int64_t>* integer) {
        const bool minus = *p_ == '-';
        if (minus) {
            ++p_;
        }
        if (p_ == end_ || *p_ < '0' || *p_ > '9') {
            return false;
        }
        if (integer == nullptr) {
            return skip_number();
        }
        // Accumulated negatively: INT64_MIN has no positive counterpart.
        int64_t v = 0;
        bool fits = true;
        if (*p_ == '0') {
            ++p_;
        } else {
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
                const int d = *p_ - '0';
                if (v < (INT64_MIN + d) / 10) {
                    fits = false;
                } else {
                    v = v * 10 - d;
                }
                ++p_;
            }
        }
        bool fraction = false;
        if (p_ != end_ && *p_ == '.') {
            fraction = true;
            ++p_;
            if (!digits()) {
                return false;
            }
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            fraction = true;
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
                ++p_;
            }
            if (!digits()) {
                return false;
            }
        }
        if (integer != nullptr && !fraction && fits && (minus || v != INT64_MIN)) {
            *integer = minus ? v : -v;
        }
        return true;
    }

    // The rest of a number whose first digit is at the cursor, validated, nothing read.
    bool skip_number() {
        if (*p_ == '0') {
            ++p_;
        } else {
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
                ++p_;
            }
        }
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            if (!digits()) {
                return false;
            }
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
                ++p_;
            }
            if (!digits()) {
                return false;
            }
        }
        return true;
    }

    // Any value at the cursor, validated and skipped. `depth`: the nesting of its container.
    bool skip_value(int depth);

    // After a member or an element: a comma (another follows, the cursor is on it), the
    // closer (consumed), or anything else (bad).
    enum class Next { more, closed, bad };
    Next after_item(char closer) {
        ws();
        if (p_ == end_) {
            return Next::bad;
        }
        if (*p_ == closer) {
            ++p_;
            return Next::closed;
        }
        if (*p_ != ',') {
            return Next::bad;
        }
        ++p_;
        ws();
        return Next::more;
    }

    // Consumes one byte (the caller has checked what it is).
    void advance() { ++p_; }

private:
    static bool hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
    static unsigned hex4(const char* p);
    bool digits() {
        if (p_ == end_ || *p_ < '0' || *p_ > '9') {
            return false;
        }
        while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
            ++p_;
        }
        return true;
    }
    // The escape at `p` (a backslash) checked; the byte after it, or null when invalid.
    const char* escape(const char* p) const;

    const char* begin_;
    const char* p_;
    const char* end_;
};

// One member of an object, as offsets into the scanned text.
struct MemberSpan {
    size_t key_begin;    // the key's opening quote
    size_t key_end;      // past its closing quote
    size_t value_begin;  // the value's first byte
    size_t value_end;    // past its last byte
    bool key_escaped;    // the key has escapes: compare it with key_is()
};

struct ObjectSpans {
    size_t open = 0;   // the '{'
    size_t close = 0;  // the '}'
    std::vector<MemberSpan> members;
};

// `text` holds exactly one JSON object (whitespace around it allowed), valid as a whole: its
// top-level members' spans go to `out`. False for anything else.
bool scan_object(std::string_view text, ObjectSpans& out);
// The object that starts at offset `open` of `text` (already known to be inside valid JSON, or
// validated here: the object itself is), its members' spans to `out`.
bool scan_object_at(std::string_view text, size_t open, ObjectSpans& out);

// Whether member `m`'s key (decoded, escapes and all) is `key`.
bool key_is(std::string_view text, const MemberSpan& m, std::string_view key);

// The decoded bytes of a JSON string's contents (`raw`, between the quotes, already validated).
std::string unescape(std::string_view raw);

}  // namespace infergate::json
