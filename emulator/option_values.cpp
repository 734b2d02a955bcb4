// Option values shared by the command line and the X-Emulator-* headers, and the fault modes.
#include "emulator/option_values.hpp"

#include <charconv>

#include "emulator/options.hpp"

namespace infergate::emulator {

bool parse_int(std::string_view text, int min_value, int& out) {
    int value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || value < min_value) {
        return false;
    }
    out = value;
    return true;
}

bool parse_eos_after(std::string_view text, std::optional<int>& out) {
    if (text == "none" || text == "-1") {
        out.reset();
        return true;
    }
    int value = 0;
    if (!parse_int(text, 0, value)) {
        return false;
    }
    out = value;
    return true;
}

bool parse_delimiter(std::string_view text, bool& nul) {
    if (text == "nul" || text == "\\0") {
        nul = true;
    } else if (text == "newline" || text == "\\n") {
        nul = false;
    } else {
        return false;
    }
    return true;
}

namespace {

bool parse_seed(std::string_view text, std::uint64_t& out) {
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) {
        return false;
    }
    out = value;
    return true;
}

bool parse_switch(std::string_view text, bool& out) {
    if (text == "1" || text == "true" || text == "on") {
        out = true;
    } else if (text == "0" || text == "false" || text == "off") {
        out = false;
    } else {
        return false;
    }
    return true;
}

}  // namespace

bool apply_style_option(std::string_view name, std::string_view value, WireStyle& style,
                        bool& known, std::string& error) {
    known = true;
    if (name == "json-style") {
        return parse_json_style(value, style.json, error);
    }
    if (name == "json-escape") {
        return parse_json_escape(value, style.ascii_escapes, error);
    }
    if (name == "sse-style") {
        return parse_sse_style(value, style.sse, error);
    }
    if (name == "ndjson-style") {
        return parse_ndjson_style(value, style.ndjson, error);
    }
    if (name == "interim") {
        return parse_interim(value, style.interim, error);
    }
    if (name == "split-writes") {
        if (!parse_int(value, 0, style.split_max)) {
            error = "want the largest piece in bytes (>= 1), or 0 for whole writes";
            return false;
        }
        return true;
    }
    if (name == "early-hints") {
        bool on = false;
        if (!parse_switch(value, on)) {
            error = "want 1 or 0";
            return false;
        }
        style.interim = static_cast<std::uint8_t>(on ? style.interim | kInterim103
                                                     : style.interim & ~kInterim103);
        return true;
    }
    if (name == "style-seed") {
        if (!parse_seed(value, style.seed)) {
            error = "want an unsigned 64-bit number";
            return false;
        }
        return true;
    }
    known = false;
    return false;
}

std::optional<Fault> parse_fault(std::string_view text) {
    if (text.empty() || text == "none") {
        return Fault{};
    }
    if (text.starts_with("status:")) {
        int status = 0;
        if (!parse_int(text.substr(7), 100, status) || status > 599) {
            return std::nullopt;
        }
        return Fault{FaultKind::kStatus, status};
    }
    static constexpr std::pair<std::string_view, FaultKind> kModes[] = {
        {"reset", FaultKind::kReset},
        {"reset_midstream", FaultKind::kResetMidstream},
        {"close_midstream", FaultKind::kCloseMidstream},
        {"stall", FaultKind::kStall},
        {"stall_midstream", FaultKind::kStallMidstream},
        {"garbage", FaultKind::kGarbage},
        {"error_event", FaultKind::kErrorEvent},
    };
    for (const auto& [name, kind] : kModes) {
        if (text == name) {
            return Fault{kind, 0};
        }
    }
    return std::nullopt;
}

}  // namespace infergate::emulator
