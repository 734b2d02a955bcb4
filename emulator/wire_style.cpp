#include "emulator/wire_style.hpp"

#include <charconv>

namespace infergate::emulator {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') {
        s.remove_prefix(1);
    }
    while (!s.empty() && s.back() == ' ') {
        s.remove_suffix(1);
    }
    return s;
}

// A comma-separated list of names from `table` ("none" or empty = no bits).
template <typename Bits, std::size_t N>
bool parse_list(std::string_view text, const std::pair<std::string_view, Bits> (&table)[N],
                Bits& out, std::string& error) {
    Bits bits = 0;
    text = trim(text);
    if (text.empty() || text == "none") {
        out = 0;
        return true;
    }
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view item = trim(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        bool known = false;
        for (const auto& [name, bit] : table) {
            if (item == name) {
                bits = static_cast<Bits>(bits | bit);
                known = true;
            }
        }
        if (!known) {
            error = "unknown variant '" + std::string(item) + "'; want a comma-separated list of";
            for (std::size_t i = 0; i < N; ++i) {
                error += (i == 0 ? " " : ", ");
                error += table[i].first;
            }
            error += ", or none";
            return false;
        }
    }
    out = bits;
    return true;
}

}  // namespace

bool parse_json_style(std::string_view text, JsonStyle& out, std::string& error) {
    if (text == "compact") {
        out = JsonStyle::kCompact;
    } else if (text == "spaced") {
        out = JsonStyle::kSpaced;
    } else if (text == "pretty") {
        out = JsonStyle::kPretty;
    } else {
        error = "want compact, spaced or pretty";
        return false;
    }
    return true;
}

bool parse_json_escape(std::string_view text, bool& ascii, std::string& error) {
    if (text == "ascii") {
        ascii = true;
    } else if (text == "none") {
        ascii = false;
    } else {
        error = "want none or ascii";
        return false;
    }
    return true;
}

bool parse_sse_style(std::string_view text, std::uint16_t& out, std::string& error) {
    static constexpr std::pair<std::string_view, std::uint16_t> kNames[] = {
        {"crlf", kSseCrlf},         {"cr", kSseCr},
        {"nospace", kSseNoSpace},   {"multiline", kSseMultiline},
        {"comments", kSseComments}, {"fields", kSseFields},
        {"bom", kSseBom},           {"noblank-end", kSseNoBlankEnd},
    };
    std::uint16_t bits = 0;
    if (!parse_list(text, kNames, bits, error)) {
        return false;
    }
    if ((bits & kSseCrlf) != 0 && (bits & kSseCr) != 0) {
        error = "crlf and cr exclude each other (one line end per stream)";
        return false;
    }
    out = bits;
    return true;
}

bool parse_ndjson_style(std::string_view text, std::uint8_t& out, std::string& error) {
    static constexpr std::pair<std::string_view, std::uint8_t> kNames[] = {
        {"crlf", kNdjsonCrlf}, {"blank", kNdjsonBlank}, {"noeol-end", kNdjsonNoEolEnd}};
    return parse_list(text, kNames, out, error);
}

bool parse_interim(std::string_view text, std::uint8_t& out, std::string& error) {
    static constexpr std::pair<std::string_view, std::uint8_t> kCodes[] = {{"100", kInterim100},
                                                                           {"103", kInterim103}};
    return parse_list(text, kCodes, out, error);
}

void EventStyler::event(std::string_view event, bool last, const WireStyle& style, StyleRng& rng,
                        std::string& out) {
    if (event.empty()) {
        return;
    }
    if (framing_ == Framing::kSse) {
        sse_event(event, last, style, rng, out);
    } else {
        record(event, last, style, rng, out);
    }
    ++events_;
}

std::string_view EventStyler::styled_payload(std::string_view payload, const WireStyle& style,
                                             bool one_line, StyleRng& rng, bool& is_json) {
    const JsonLayout layout{style.json, style.ascii_escapes, one_line};
    is_json = restyle_json(payload, layout, rng, json_);
    if (!is_json) {
        json_.assign(payload);  // [DONE], garbage, anything that is not JSON: as it is
    }
    return json_;
}

void EventStyler::parse_fields(std::string_view event) {
    // The encoders write one field per '\n'-ended line and a blank line after the event.
    fields_.clear();
    while (!event.empty()) {
        const auto nl = event.find('\n');
        const std::string_view line = event.substr(0, nl);
        event = nl == std::string_view::npos ? std::string_view() : event.substr(nl + 1);
        if (line.empty()) {
            break;
        }
        Field f{line, line, {}, false};
        if (const auto colon = line.find(':'); colon != std::string_view::npos) {
            f.name = line.substr(0, colon);
            f.value = line.substr(colon + 1);
            f.space = !f.value.empty() && f.value.front() == ' ';
            f.value.remove_prefix(f.space ? 1 : 0);
        }
        fields_.push_back(f);
    }
}

void EventStyler::choose_cuts(std::string_view json, StyleRng& rng) {
    cuts_.clear();
    json_token_gaps(json, gaps_);
    for (std::size_t gap : gaps_) {
        if (json[gap] != '\n' && rng.below(3) == 0) {
            cuts_.push_back(gap);
        }
    }
    if (cuts_.empty() && !gaps_.empty()) {  // at least one cut per payload
        const std::size_t gap = gaps_[rng.below(gaps_.size())];
        if (json[gap] != '\n') {
            cuts_.push_back(gap);
        }
    }
}

void EventStyler::sse_event(std::string_view event, bool last, const WireStyle& style,
                            StyleRng& rng, std::string& out) {
    const std::uint16_t v = style.sse;
    const std::string_view eol = (v & kSseCrlf) != 0 ? "\r\n" : (v & kSseCr) != 0 ? "\r" : "\n";
    const bool nospace = (v & kSseNoSpace) != 0;
    const bool fields = (v & kSseFields) != 0;
    parse_fields(event);
    // WHATWG: the data lines of one event join with '\n' into one payload.
    data_.clear();
    const Field* first_data = nullptr;
    bool has_event = false;
    for (const Field& f : fields_) {
        if (f.name == "data") {
            if (first_data != nullptr) {
                data_.push_back('\n');
            }
            data_ += f.value;
            first_data = first_data != nullptr ? first_data : &f;
        }
        has_event = has_event || f.name == "event";
    }
    bool is_json = false;
    const std::string_view payload = styled_payload(data_, style, false, rng, is_json);
    cuts_.clear();
    if ((v & kSseMultiline) != 0 && is_json) {
        choose_cuts(payload, rng);  // between JSON tokens only: the value stays the same
    }

    if (events_ == 0 && (v & kSseBom) != 0) {
        out += "\xEF\xBB\xBF";
    }
    if (events_ > 0 && (v & kSseComments) != 0) {
        out += ": ping";  // sse-starlette's keep-alive: a comment, then a blank line
        out += eol;
        out += eol;
    }
    if (fields) {
        out += nospace ? "id:" : "id: ";
        out += std::to_string(events_ + 1);
        out += eol;
    }
    for (const Field& f : fields_) {
        if (f.name == "data" && &f != first_data) {
            continue;  // every data line went out with the first one
        }
        if (&f == first_data) {
            if (fields && !has_event) {
                // "message" is the type of an event without event:, so a correct client sees
                // no change; Anthropic's own event names stay as they are.
                out += nospace ? "event:message" : "event: message";
                out += eol;
            }
            write_data(nospace || !f.space ? "data:" : "data: ", payload, eol, out);
        } else if (f.line.front() == ':') {
            out += f.line;  // a comment stays as it is
            out += eol;
        } else {
            out += f.name;
            out += f.space && !nospace ? ": " : ":";
            out += f.value;
            out += eol;
        }
    }
    if (fields) {
        out += nospace ? "retry:3000" : "retry: 3000";
        out += eol;
    }
    if (!(last && (v & kSseNoBlankEnd) != 0)) {
        out += eol;
    }
}

// One data: line per line of the payload (sse-starlette's split of a multi-line payload), and a
// new line at every cut.
void EventStyler::write_data(std::string_view prefix, std::string_view payload,
                             std::string_view eol, std::string& out) const {
    std::size_t start = 0;
    std::size_t next_cut = 0;
    for (std::size_t i = 0; i <= payload.size(); ++i) {
        const bool cut = next_cut < cuts_.size() && cuts_[next_cut] == i;
        next_cut += cut ? 1 : 0;
        if (i == payload.size() || payload[i] == '\n' || (cut && i > start)) {
            out += prefix;
            out += payload.substr(start, i - start);
            out += eol;
            start = i < payload.size() && payload[i] == '\n' ? i + 1 : i;
        }
    }
}

void EventStyler::record(std::string_view event, bool last, const WireStyle& style, StyleRng& rng,
                         std::string& out) {
    const char delim = event.back();
    const bool delimited = delim == '\n' || delim == '\0';
    const std::string_view body = delimited ? event.substr(0, event.size() - 1) : event;
    const std::string_view end = delim == '\n' && (style.ndjson & kNdjsonCrlf) != 0
                                     ? std::string_view("\r\n")
                                     : event.substr(event.size() - 1);
    if (events_ > 0 && delimited && (style.ndjson & kNdjsonBlank) != 0) {
        out += end;  // an empty record
    }
    bool is_json = false;
    out += styled_payload(body, style, true, rng, is_json);
    if (delimited && !(last && (style.ndjson & kNdjsonNoEolEnd) != 0)) {
        out += end;
    }
}

}  // namespace infergate::emulator
