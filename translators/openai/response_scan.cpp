#include "translators/openai/response_scan.hpp"

#include <cstdint>
#include <cstring>

#include "translators/canonical/json.hpp"

namespace infergate::translators::openai {

namespace {

// What the value being read is to the caller.
enum class Role {
    other,    // anything: validated and skipped
    root,     // the document: must be an object
    choices,  // the first top-level "choices": must be an array of objects
    usage,    // the first top-level "usage": its counts are read when it is an object
    details,  // usage's first "prompt_tokens_details": its cached_tokens is read
    count,    // a count: read when it is an int64
};

// A recursive-descent validator of RFC 8259 JSON over the raw bytes. It accepts nothing that
// RapidJSON (as json::parse runs it) rejects; whatever it does not judge makes it fail, and the
// caller falls back to the full decode.
class Scanner {
public:
    explicit Scanner(std::string_view body) : p_(body.data()), end_(body.data() + body.size()) {}

    std::optional<canonical::Usage> run() {
        ws();
        if (!value(Role::root, 0) || !choices_) {
            return std::nullopt;
        }
        ws();
        if (p_ != end_) {
            return std::nullopt;  // trailing bytes
        }
        return usage_;
    }

private:
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
    static bool hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    // A string; `raw` gets its bytes between the quotes, `escaped` whether it had escapes.
    bool string(std::string_view& raw, bool& escaped) {
        const char* p = p_ + 1;  // past the opening quote
        const char* const start = p;
        escaped = false;
        for (;;) {
            p = plain_run(p);
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
            // A backslash.
            escaped = true;
            if (++p == end_) {
                return false;
            }
            const char e = *p;
            if (e == 'u') {
                if (end_ - p < 5 || !hex(p[1]) || !hex(p[2]) || !hex(p[3]) || !hex(p[4])) {
                    return false;
                }
                // Surrogates (paired or not): not judged here.
                const char second = static_cast<char>(p[2] | 0x20);
                if ((p[1] | 0x20) == 'd' &&
                    (second == '8' || second == '9' || (second >= 'a' && second <= 'f'))) {
                    return false;
                }
                p += 5;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                ++p;
            } else {
                return false;
            }
        }
    }

    // The first byte at or after `p` that ends a run of plain string bytes: a quote, a backslash,
    // a control character, or the end.
    const char* plain_run(const char* p) const {
        return json::detail::find_string_special(p, end_);
    }

    // A number; `integer` holds it when it is an integer that fits in int64.
    bool number(std::optional<int64_t>& integer) {
        const bool minus = *p_ == '-';
        if (minus) {
            ++p_;
        }
        if (p_ == end_ || *p_ < '0' || *p_ > '9') {
            return false;
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
            if (p_ == end_ || *p_ < '0' || *p_ > '9') {
                return false;
            }
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
                ++p_;
            }
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            fraction = true;
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
                ++p_;
            }
            if (p_ == end_ || *p_ < '0' || *p_ > '9') {
                return false;
            }
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
                ++p_;
            }
        }
        if (!fraction && fits && (minus || v != INT64_MIN)) {
            integer = minus ? v : -v;
        }
        return true;
    }

    bool value(Role role, int depth) {
        if (p_ == end_) {
            return false;
        }
        const char c = *p_;
        if (c == '{') {
            return object(role, depth + 1);
        }
        if (c == '[') {
            return array(role, depth + 1);
        }
        if (role == Role::root || role == Role::choices) {
            return false;  // the wrong shape: the full decode says so
        }
        if (c == '"') {
            std::string_view raw;
            bool escaped = false;
            return string(raw, escaped);
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            std::optional<int64_t> integer;
            if (!number(integer)) {
                return false;
            }
            if (role == Role::count && count_ != nullptr) {
                *count_ = integer;
            }
            return true;
        }
        return literal("true", 4) || literal("false", 5) || literal("null", 4);
    }

    bool object(Role role, int depth) {
        if (depth > json::kMaxDepth) {
            return false;
        }
        ++p_;  // '{'
        ws();
        if (p_ != end_ && *p_ == '}') {
            ++p_;
            return role != Role::choices;
        }
        if (role == Role::choices) {
            return false;
        }
        for (;;) {
            if (p_ == end_ || *p_ != '"') {
                return false;
            }
            std::string_view key;
            bool escaped = false;
            if (!string(key, escaped) || escaped) {
                return false;  // an escaped key may equal a name read here: not judged
            }
            ws();
            if (p_ == end_ || *p_ != ':') {
                return false;
            }
            ++p_;
            ws();
            count_ = nullptr;
            Role member = Role::other;
            if (role == Role::root) {
                if (key == "choices" && !seen_choices_) {
                    seen_choices_ = true;
                    member = Role::choices;
                } else if (key == "usage" && !seen_usage_) {
                    seen_usage_ = true;
                    member = Role::usage;
                }
            } else if (role == Role::usage) {
                if (key == "prompt_tokens" && !seen_prompt_) {
                    seen_prompt_ = true;
                    member = Role::count;
                    count_ = &usage_.prompt_tokens;
                } else if (key == "completion_tokens" && !seen_completion_) {
                    seen_completion_ = true;
                    member = Role::count;
                    count_ = &usage_.completion_tokens;
                } else if (key == "prompt_tokens_details" && !seen_details_) {
                    seen_details_ = true;
                    member = Role::details;
                }
            } else if (role == Role::details && key == "cached_tokens" && !seen_cached_) {
                seen_cached_ = true;
                member = Role::count;
                count_ = &usage_.cached_tokens;
            }
            if (!value(member, depth)) {
                return false;
            }
            if (const Next next = after_item('}'); next != Next::more) {
                return next == Next::closed;
            }
        }
    }

    bool array(Role role, int depth) {
        if (depth > json::kMaxDepth || role == Role::root) {
            return false;
        }
        if (role == Role::choices) {
            choices_ = true;
        }
        ++p_;  // '['
        ws();
        if (p_ != end_ && *p_ == ']') {
            ++p_;
            return true;
        }
        for (;;) {
            // The elements of choices must be objects (read as anything else is).
            if (role == Role::choices && (p_ == end_ || *p_ != '{')) {
                return false;
            }
            if (!value(Role::other, depth)) {
                return false;
            }
            if (const Next next = after_item(']'); next != Next::more) {
                return next == Next::closed;
            }
        }
    }

    // After a member or an element: a comma (another follows), the closer, or an error.
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

    const char* p_;
    const char* end_;
    canonical::Usage usage_;
    std::optional<int64_t>* count_ = nullptr;  // where the count being read goes
    bool choices_ = false;
    bool seen_choices_ = false;
    bool seen_usage_ = false;
    bool seen_prompt_ = false;
    bool seen_completion_ = false;
    bool seen_details_ = false;
    bool seen_cached_ = false;
};

}  // namespace

std::optional<canonical::Usage> scan_response_usage(std::string_view body) {
    return Scanner(body).run();
}

}  // namespace infergate::translators::openai
