// The strict JSON reader behind the wire styles: nodes whose scalars keep their tokens as
// written, so restyling never changes a number, a literal or an escape.
#include "emulator/json_tree.hpp"

#include <string>
#include <utility>

namespace infergate::emulator::json_tree {
namespace {

// The emulator's own JSON nests a few levels; anything deeper is written as it is.
constexpr int kMaxDepth = 256;

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

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

namespace {

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

}  // namespace

bool parse(std::string_view text, std::vector<Node>& nodes) {
    return Parser(text, nodes).document();
}

}  // namespace infergate::emulator::json_tree
