#pragma once
// Exchange's private parts, shared by exchange.cpp and exchange_io.cpp only.

#include <array>
#include <chrono>
#include <memory>
#include <optional>

#include "proxy/disconnect_watch.hpp"
#include "proxy/exchange.hpp"
#include "proxy/upstream_parser.hpp"
#include "proxy/upstream_pool.hpp"

namespace infergate {

inline constexpr size_t kUpstreamReadBuffer = 16 * 1024;

struct Exchange::Upstream {
    std::unique_ptr<UpstreamConnection> conn;
    std::optional<UpstreamResponseParser> parser;
    std::array<char, kUpstreamReadBuffer> buf;
    std::optional<std::chrono::steady_clock::time_point> deadline;

    int status() const { return parser->status(); }
};

}  // namespace infergate
