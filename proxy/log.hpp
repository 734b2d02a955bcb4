#pragma once
// Minimal leveled logging to stderr. Each call writes one whole line with a single write, so
// lines from different threads never interleave. Safe from any thread.

#include <string_view>

namespace infergate::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

void set_level(Level level);
bool parse_level(std::string_view text, Level& out);
bool enabled(Level level);
void write(Level level, std::string_view message);

inline void debug(std::string_view m) { write(Level::debug, m); }
inline void info(std::string_view m) { write(Level::info, m); }
inline void warn(std::string_view m) { write(Level::warn, m); }
inline void error(std::string_view m) { write(Level::error, m); }

}  // namespace infergate::log
