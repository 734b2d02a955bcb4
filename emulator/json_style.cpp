#include "emulator/json_style.hpp"

#include <algorithm>
#include <utility>

#include "emulator/json_tree.hpp"

namespace infergate::emulator {
namespace {

using json_tree::is_structural;
using json_tree::is_ws;
using json_tree::Node;
using json_tree::utf8_length;

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
    if (!json_tree::parse(in, nodes)) {
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
