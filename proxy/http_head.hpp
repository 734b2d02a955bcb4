#pragma once
// HTTP/1.1 header blocks written straight into one string, sent with the body as one gather
// write: building a Beast message (an allocation and a tree insertion per field) and serialising
// it cost more than the rest of a small request. Used for the client's responses and the
// backend's requests.

#include <charconv>
#include <string>
#include <string_view>

#include "proxy/net.hpp"

namespace infergate::http_head {

// The next item of a comma-separated header value (RFC 9110 §5.6.1), without the spaces and tabs
// around it, taken off the front of `rest`; false when `rest` is used up. Empty items are
// returned as empty.
inline bool next_list_item(std::string_view& rest, std::string_view& item) {
    if (rest.empty()) {
        return false;
    }
    const size_t comma = rest.find(',');
    item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
        item.remove_prefix(1);
    }
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
        item.remove_suffix(1);
    }
    return true;
}

inline void field(std::string& out, std::string_view name, std::string_view value) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
}

inline void content_length(std::string& out, size_t length) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, length).ptr;
    field(out, "Content-Length", std::string_view(digits, static_cast<size_t>(end - digits)));
}

inline void status_line(std::string& out, unsigned version, unsigned status) {
    out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    const char code[3] = {static_cast<char>('0' + status / 100 % 10),
                          static_cast<char>('0' + status / 10 % 10),
                          static_cast<char>('0' + status % 10)};
    out.append(code, 3);
    out += ' ';
    out += http::obsolete_reason(static_cast<http::status>(status));
    out += "\r\n";
}

}  // namespace infergate::http_head
