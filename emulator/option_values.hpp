// The option values the command line and the X-Emulator-* headers share: numbers, the EOS limit,
// the legacy delimiter and the wire-style options (options.cpp reads argv, knob_headers.cpp the
// headers).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "emulator/wire_style.hpp"

namespace infergate::emulator {

// A decimal number >= min_value, the whole text.
bool parse_int(std::string_view text, int min_value, int& out);

// --eos-after and its header accept "none" so a request can switch off a CLI default.
bool parse_eos_after(std::string_view text, std::optional<int>& out);

// "nul" / "\0" or "newline" / "\n".
bool parse_delimiter(std::string_view text, bool& nul);

// The wire-style options, shared by the command line and the X-Emulator-* headers. Returns false
// with the reason in `error` for a bad value; `known` is false for a name that is not one.
bool apply_style_option(std::string_view name, std::string_view value, WireStyle& style,
                        bool& known, std::string& error);

}  // namespace infergate::emulator
