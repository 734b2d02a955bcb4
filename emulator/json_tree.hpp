// A JSON text read into nodes that keep every scalar token as written (json_tree.cpp): what
// json_style.cpp re-lays out without re-encoding a value, and the lexical helpers both share.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace infergate::emulator::json_tree {

inline bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
inline bool is_structural(char c) {
    return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':';
}

// Length of the UTF-8 sequence starting at s[i] (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 when it is not one.
std::size_t utf8_length(std::string_view s, std::size_t i);

// A parsed value. Scalars keep their token as written, so numbers, literals and string escapes
// are copied, never re-encoded.
struct Node {
    char kind = 's';                // '{', '[' or 's' (string, number, literal)
    std::string_view raw;           // scalars: the token
    std::vector<std::size_t> kids;  // arrays: items; objects: key, value, key, value, ...
};

// Reads one JSON text with optional whitespace around it into `nodes`; the root is nodes[0].
// Returns false when `text` is not one valid JSON text (RFC 8259, strict UTF-8).
bool parse(std::string_view text, std::vector<Node>& nodes);

}  // namespace infergate::emulator::json_tree
