#include "emulator/json_style.hpp"

#include <algorithm>
#include <utility>

namespace infergate::emulator {
namespace {

// The emulator's own JSON nests a few levels; anything deeper is written as it is.
constexpr int kMaxDepth = 256;

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_structural(char c) {
    return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':';
}

// Length of the UTF-8 sequence starting at s[i] (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 when it is not one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (i + len > s.size() || b(1) < lo || b(1) > hi) {
        return 0;
    }
    for (std::size_t k = 2; k < len; ++k) {
        if (b(k) < 0x80 || b(k) > 0xbf) {
            return 0;
        }
    }
    return len;
}

// A parsed value. Scalars keep their token as written, so numbers, literals and string escapes
// are copied, never re-encoded.
struct Node {
    char kind = 's';                // '{', '[' or 's' (string, number, literal)
    std::string_view raw;           // scalars: the token
    std::vector<std::size_t> kids;  // arrays: items; objects: key, value, key, value, ...
};

class Parser {
public:
    Parser(std::string_view text, std::vector<Node>& nodes) : s_(text), nodes_(nodes) {}

    // One JSON text with optional whitespace around it; the root is nodes[0].
    bool document() {
        std::size_t root = 0;
        if (!value(root, 0)) {
            return false;
        }
        skip_ws();
        return pos_ == s_.size();
    }

private:
    void skip_ws() {
        while (pos_ < s_.size() && is_ws(s_[pos_])) {
            ++pos_;
        }
    }
    bool peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

    bool value(std::size_t& index, int depth) {
        skip_ws();
        if (pos_ >= s_.size() || depth > kMaxDepth) {
            return false;
        }
        const char c = s_[pos_];
        if (c == '{' || c == '[') {
            return container(index, depth, c);
        }
        const std::size_t start = pos_;
        bool ok = false;
        if (c == '"') {
            ok = string_token();
        } else if (c == '-' || is_digit(c)) {
            ok = number_token();
        } else {
            ok = literal("true") || literal("false") || literal("null");
        }
        if (!ok) {
            return false;
        }
        index = nodes_.size();
        nodes_.push_back(Node{'s', s_.substr(start, pos_ - start), {}});
        return true;
    }

    bool container(std::size_t& index, int depth, char open) {
        const char close = open == '{' ? '}' : ']';
        index = nodes_.size();
        nodes_.push_back(Node{open, {}, {}});
        std::vector<std::size_t> kids;
        ++pos_;
        skip_ws();
        if (peek(close)) {
            ++pos_;
            return true;
        }
        for (;;) {
            if (open == '{') {
                skip_ws();
                std::size_t key = 0;
                if (!peek('"') || !value(key, depth + 1)) {
                    return false;
                }
                kids.push_back(key);
                skip_ws();
                if (!peek(':')) {
                    return false;
                }
                ++pos_;
            }
            std::size_t item = 0;
            if (!value(item, depth + 1)) {
                return false;
            }
            kids.push_back(item);
            skip_ws();
            if (peek(',')) {
                ++pos_;
                continue;
            }
            if (!peek(close)) {
                return false;
            }
            ++pos_;
            nodes_[index].kids = std::move(kids);
            return true;
        }
    }

    bool string_token() {
        ++pos_;  // the opening quote
        while (pos_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return true;
            }
            if (c == '\\') {
                if (pos_ + 1 >= s_.size()) {
                    return false;
                }
                const char e = s_[pos_ + 1];
                if (e == 'u') {
                    if (pos_ + 6 > s_.size()) {
                        return false;
                    }
                    for (std::size_t k = 2; k < 6; ++k) {
                        if (!is_hex(s_[pos_ + k])) {
                            return false;
                        }
                    }
                    pos_ += 6;
                } else if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos) {
                    pos_ += 2;
                } else {
                    return false;
                }
                continue;
            }
            if (c < 0x20) {
                return false;
            }
            if (c >= 0x80) {
                const std::size_t len = utf8_length(s_, pos_);
                if (len == 0) {
                    return false;
                }
                pos_ += len;
                continue;
            }
            ++pos_;
        }
        return false;
    }

    bool digits() {
        const std::size_t start = pos_;
        while (pos_ < s_.size() && is_digit(s_[pos_])) {
            ++pos_;
        }
        return pos_ > start;
    }

    bool number_token() {
        if (peek('-')) {
            ++pos_;
        }
        if (peek('0')) {
            ++pos_;
        } else if (!digits()) {
            return false;
        }
        if (peek('.')) {
            ++pos_;
            if (!digits()) {
                return false;
            }
        }
        if (peek('e') || peek('E')) {
            ++pos_;
            if (peek('+') || peek('-')) {
                ++pos_;
            }
            if (!digits()) {
                return false;
            }
        }
        return true;
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) {
            return false;
        }
        pos_ += word.size();
        return true;
    }

    std::string_view s_;
    std::vector<Node>& nodes_;
    std::size_t pos_ = 0;
};

// A string token as written, or with '/' and every non-ASCII code point escaped.
void append_string(std::string_view raw, bool ascii, std::string& out) {
    if (!ascii) {
        out += raw;
        return;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    auto escape = [&](std::uint32_t unit) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) {
            out.push_back(kHex[(unit >> shift) & 0xf]);
        }
    };
    for (std::size_t i = 0; i < raw.size();) {
        const auto c = static_cast<unsigned char>(raw[i]);
        if (c == '\\') {
            const std::size_t n = raw[i + 1] == 'u' ? 6 : 2;  // an escape stays as it is
            out.append(raw.substr(i, n));
            i += n;
        } else if (c == '/') {
            out += "\\/";
            ++i;
        } else if (c < 0x80) {
            out.push_back(static_cast<char>(c));
            ++i;
        } else {
            const std::size_t len = utf8_length(raw, i);  // validated by the parser
            std::uint32_t cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0f : 0x1f);
            for (std::size_t k = 1; k < len; ++k) {
                cp = (cp << 6) | (static_cast<unsigned char>(raw[i + k]) & 0x3f);
            }
            i += len;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                escape(0xd800 + (cp >> 10));
                escape(0xdc00 + (cp & 0x3ff));
            } else {
                escape(cp);
            }
        }
    }
}

class Emitter {
public:
    Emitter(const std::vector<Node>& nodes, const JsonLayout& layout, StyleRng& rng,
            std::string& out)
        : nodes_(nodes), layout_(layout), rng_(rng), out_(out) {}

    void node(std::size_t index, int depth) {
        const Node& n = nodes_[index];
        if (n.kind == 's') {
            if (n.raw.front() == '"') {
                append_string(n.raw, layout_.ascii, out_);
            } else {
                out_ += n.raw;
            }
            return;
        }
        const bool object = n.kind == '{';
        const std::size_t count = object ? n.kids.size() / 2 : n.kids.size();
        out_.push_back(n.kind);
        if (count == 0) {
            out_.push_back(object ? '}' : ']');
            return;
        }
        const bool pretty = layout_.style == JsonStyle::kPretty;
        std::vector<std::size_t> order(count);
        for (std::size_t i = 0; i < count; ++i) {
            order[i] = i;
        }
        if (object && pretty) {
            for (std::size_t i = count - 1; i > 0; --i) {  // Fisher-Yates
                std::swap(order[i], order[rng_.below(i + 1)]);
            }
        }
        const bool lines = pretty && !layout_.one_line;
        for (std::size_t i = 0; i < count; ++i) {
            if (i > 0) {
                out_ += lines ? "," : ", ";
            }
            if (lines) {
                newline(depth + 1);
            }
            if (object) {
                node(n.kids[2 * order[i]], depth + 1);
                out_ += ": ";
                node(n.kids[2 * order[i] + 1], depth + 1);
            } else {
                node(n.kids[order[i]], depth + 1);
            }
        }
        if (lines) {
            newline(depth);
        }
        out_.push_back(object ? '}' : ']');
    }

private:
    void newline(int depth) {
        out_.push_back('\n');
        out_.append(static_cast<std::size_t>(depth) * 2, ' ');
    }

    const std::vector<Node>& nodes_;
    const JsonLayout& layout_;
    StyleRng& rng_;
    std::string& out_;
};

// Compact keeps the dialect's own bytes (vLLM's json.dumps error events stay spaced); only the
// string escapes change.
void copy_with_escapes(std::string_view in, bool ascii, std::string& out) {
    for (std::size_t i = 0; i < in.size();) {
        if (in[i] != '"') {
            out.push_back(in[i++]);
            continue;
        }
        std::size_t end = i + 1;
        while (in[end] != '"') {
            end += in[end] == '\\' ? 2 : 1;
        }
        append_string(in.substr(i, end + 1 - i), ascii, out);
        i = end + 1;
    }
}

}  // namespace

std::uint64_t StyleRng::next() {
    std::uint64_t x = (state_ += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

bool restyle_json(std::string_view in, const JsonLayout& layout, StyleRng& rng, std::string& out) {
    out.clear();
    std::vector<Node> nodes;
    if (!Parser(in, nodes).document()) {
        return false;
    }
    if (layout.style == JsonStyle::kCompact) {
        copy_with_escapes(in, layout.ascii, out);
    } else {
        Emitter(nodes, layout, rng, out).node(0, 0);
    }
    return true;
}

void json_token_gaps(std::string_view json, std::vector<std::size_t>& gaps) {
    gaps.clear();
    std::size_t pos = 0;
    for (;;) {
        while (pos < json.size() && is_ws(json[pos])) {
            ++pos;
        }
        if (pos >= json.size()) {
            break;
        }
        if (json[pos] == '"') {
            ++pos;
            while (pos < json.size() && json[pos] != '"') {
                pos += json[pos] == '\\' ? 2 : 1;
            }
            ++pos;
        } else if (is_structural(json[pos])) {
            ++pos;
        } else {
            while (pos < json.size() && !is_ws(json[pos]) && !is_structural(json[pos])) {
                ++pos;
            }
        }
        gaps.push_back(std::min(pos, json.size()));
    }
    if (!gaps.empty()) {
        gaps.pop_back();  // after the last token is the end of the text
    }
}

}  // namespace infergate::emulator
