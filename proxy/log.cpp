#include "proxy/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

namespace infergate::log {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::info)};
constexpr std::string_view kNames[] = {"debug", "info", "warn", "error"};
}  // namespace

void set_level(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

bool parse_level(std::string_view text, Level& out) {
    for (int i = 0; i < 4; ++i) {
        if (text == kNames[i]) {
            out = static_cast<Level>(i);
            return true;
        }
    }
    return false;
}

bool enabled(Level level) {
    return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void write(Level level, std::string_view message) {
    if (!enabled(level)) {
        return;
    }
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[40];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string line;
    line.reserve(message.size() + 64);
    line += stamp;
    line += '.';
    line += static_cast<char>('0' + ms / 100);
    line += static_cast<char>('0' + ms / 10 % 10);
    line += static_cast<char>('0' + ms % 10);
    line += "Z ";
    line += kNames[static_cast<int>(level)];
    line += ' ';
    line += message;
    line += '\n';
    [[maybe_unused]] auto n = ::write(2, line.data(), line.size());
}

}  // namespace infergate::log
