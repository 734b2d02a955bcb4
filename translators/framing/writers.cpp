// The stream writers: SSE data lines, named events and comments, NDJSON records, and the test for
// the [DONE] sentinel that the SSE writers' terminator ends a stream with.

#include "translators/framing/framing.hpp"

namespace infergate::framing {

// No reserve(): callers append many events to one buffer, and an exact-size reserve per call
// would defeat the string's geometric growth on some standard libraries.

void write_sse_data(std::string_view json, std::string& out) {
    begin_sse_data(out);
    out.append(json);
    end_sse_data(out);
}

void write_sse_data_lines(std::string_view data, std::string& out) {
    for (;;) {
        const size_t nl = data.find('\n');
        out.append("data: ");
        out.append(data.substr(0, nl));
        out.push_back('\n');
        if (nl == std::string_view::npos) {
            break;
        }
        data.remove_prefix(nl + 1);
    }
    out.push_back('\n');
}

void write_sse_comment(std::string_view text, std::string& out) {
    out.push_back(':');
    out.append(text);
    out.append("\n\n");
}

bool is_done_sentinel(std::string_view data) {
    constexpr std::string_view kSpace = " \t\r\n";
    const size_t first = data.find_first_not_of(kSpace);
    if (first == std::string_view::npos) {
        return false;
    }
    return data.substr(first, data.find_last_not_of(kSpace) + 1 - first) == "[DONE]";
}

void write_sse_event(std::string_view name, std::string_view json, std::string& out) {
    out.append("event: ");
    out.append(name);
    out.append("\ndata: ");
    out.append(json);
    out.append("\n\n");
}

void write_ndjson(std::string_view json, std::string& out) {
    out.append(json);
    out.push_back('\n');
}

}  // namespace infergate::framing
