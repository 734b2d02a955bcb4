#include "translators/canonical/json_scan.hpp"

namespace infergate::json {

unsigned Cursor::hex4(const char* p) {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
        const char c = p[i];
        v <<= 4;
        v |= c <= '9' ? static_cast<unsigned>(c - '0')
                      : static_cast<unsigned>((c | 0x20) - 'a' + 10);
    }
    return v;
}

const char* Cursor::escape(const char* p) const {
    if (++p == end_) {
        return nullptr;
    }
    const char e = *p;
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
        e == 't') {
        return p + 1;
    }
    if (e != 'u' || end_ - p < 5 || !hex(p[1]) || !hex(p[2]) || !hex(p[3]) || !hex(p[4])) {
        return nullptr;
    }
    const unsigned code = hex4(p + 1);
    p += 5;
    if (code >= 0xD800 && code <= 0xDBFF) {
        // A high surrogate must be followed by a low one (RapidJSON rejects it otherwise; a lone
        // low surrogate it accepts, and so does this).
        if (end_ - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex(p[2]) || !hex(p[3]) || !hex(p[4]) ||
            !hex(p[5])) {
            return nullptr;
        }
        const unsigned low = hex4(p + 2);
        if (low < 0xDC00 || low > 0xDFFF) {
            return nullptr;
        }
        p += 6;
    }
    return p;
}

bool Cursor::skip_value(int depth) {
    if (p_ == end_) {
        return false;
    }
    const char c = *p_;
    if (c == '"') {
        std::string_view raw;
        bool escaped = false;
        return string(raw, escaped);
    }
    if (c == '{' || c == '[') {
        if (depth + 1 > kMaxDepth) {
            return false;
        }
        const char closer = c == '{' ? '}' : ']';
        ++p_;
        ws();
        if (p_ != end_ && *p_ == closer) {
            ++p_;
            return true;
        }
        for (;;) {
            if (c == '{') {
                std::string_view key;
                bool escaped = false;
                if (p_ == end_ || *p_ != '"' || !string(key, escaped)) {
                    return false;
                }
                ws();
                if (p_ == end_ || *p_ != ':') {
                    return false;
                }
                ++p_;
                ws();
            }
            if (!skip_value(depth + 1)) {
                return false;
            }
            if (const Next next = after_item(closer); next != Next::more) {
                return next == Next::closed;
            }
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        return number(nullptr);
    }
    return literal("true", 4) || literal("false", 5) || literal("null", 4);
}

namespace {

// The object at the cursor (on its '{'), members recorded; `depth` of the object itself.
bool members(Cursor& cur, int depth, ObjectSpans& out) {
    out.members.clear();
    out.open = cur.offset();
    cur.advance();  // '{'
    cur.ws();
    if (!cur.at_end() && cur.peek() == '}') {
        out.close = cur.offset();
        cur.advance();
        return true;
    }
    for (;;) {
        if (cur.at_end() || cur.peek() != '"') {
            return false;
        }
        MemberSpan m{};
        m.key_begin = cur.offset();
        std::string_view key;
        if (!cur.string(key, m.key_escaped)) {
            return false;
        }
        m.key_end = cur.offset();
        cur.ws();
        if (cur.at_end() || cur.peek() != ':') {
            return false;
        }
        cur.advance();
        cur.ws();
        m.value_begin = cur.offset();
        if (!cur.skip_value(depth)) {
            return false;
        }
        m.value_end = cur.offset();
        out.members.push_back(m);
        cur.ws();
        if (cur.at_end()) {
            return false;
        }
        if (cur.peek() == '}') {
            out.close = cur.offset();
            cur.advance();
            return true;
        }
        if (cur.after_item('}') != Cursor::Next::more) {
            return false;
        }
    }
}

}  // namespace

bool scan_object(std::string_view text, ObjectSpans& out) {
    Cursor cur(text);
    cur.ws();
    if (cur.at_end() || cur.peek() != '{' || !members(cur, 1, out)) {
        return false;
    }
    cur.ws();
    return cur.at_end();
}

bool scan_object_at(std::string_view text, size_t open, ObjectSpans& out) {
    if (open >= text.size() || text[open] != '{') {
        return false;
    }
    Cursor cur(text.substr(open));
    if (!members(cur, 1, out)) {
        return false;
    }
    out.open += open;
    out.close += open;
    for (MemberSpan& m : out.members) {
        m.key_begin += open;
        m.key_end += open;
        m.value_begin += open;
        m.value_end += open;
    }
    return true;
}

namespace {

void append_utf8(unsigned code, std::string& out) {
    if (code < 0x80) {
        out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (code >> 6)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (code >> 12)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (code >> 18)));
        out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
}

unsigned hex_value(std::string_view four) {
    unsigned v = 0;
    for (const char c : four) {
        v = (v << 4) | (c <= '9' ? static_cast<unsigned>(c - '0')
                                 : static_cast<unsigned>((c | 0x20) - 'a' + 10));
    }
    return v;
}

}  // namespace

std::string unescape(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\') {
            out.push_back(raw[i]);
            continue;
        }
        const char e = raw[++i];
        switch (e) {
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'u': {
                unsigned code = hex_value(raw.substr(i + 1, 4));
                i += 4;
                if (code >= 0xD800 && code <= 0xDBFF && raw.substr(i + 1, 2) == "\\u") {
                    const unsigned low = hex_value(raw.substr(i + 3, 4));
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    i += 6;
                }
                append_utf8(code, out);
                break;
            }
            default:
                out.push_back(e);
                break;  // " \ /
        }
    }
    return out;
}

bool key_is(std::string_view text, const MemberSpan& m, std::string_view key) {
    const std::string_view raw = text.substr(m.key_begin + 1, m.key_end - m.key_begin - 2);
    if (!m.key_escaped) {
        return raw == key;
    }
    return unescape(raw) == key;
}

}  // namespace infergate::json
