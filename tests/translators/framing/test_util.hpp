#pragma once
// Shared helpers for the framing tests: a printable SseEvent, one-shot and piecewise scanning,
// and the SSE captures the scanner tests share.

#include <doctest/doctest.h>

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "translators/framing/framing.hpp"

namespace infergate::framing {

// A comparable, printable copy of SseEvent. The operators are hidden friends so that doctest's
// expression templates find them by argument-dependent lookup; SseEvent converts implicitly, so
// `out[0] == ev(...)` works on raw scanner output too.
struct Ev {
    Ev(std::string_view e, std::string_view d) : event(e), data(d) {}
    Ev(const SseEvent& e) : event(e.event), data(e.data) {}  // NOLINT(google-explicit-constructor)
    std::string event;
    std::string data;
    friend bool operator==(const Ev& a, const Ev& b) = default;
    friend std::ostream& operator<<(std::ostream& os, const Ev& e) {
        return os << "{event=\"" << e.event << "\" data=\"" << e.data << "\"}";
    }
};

using Events = std::vector<Ev>;
using Records = std::vector<std::string>;

inline Ev ev(std::string_view event, std::string_view data) {
    return Ev(event, data);
}

// Builds a string from a literal that contains NUL bytes, without counting them by hand.
template <size_t N>
inline std::string bytes(const char (&literal)[N]) {
    return std::string(literal, N - 1);
}

// doctest prints both sides of a failed CHECK; this makes event lists readable in INFO too.
inline std::string describe(const Events& events) {
    std::ostringstream os;
    os << "[";
    for (const auto& e : events) {
        os << e << " ";
    }
    os << "]";
    return os.str();
}

inline Events to_events(const std::vector<SseEvent>& raw) {
    return Events(raw.begin(), raw.end());
}

inline Events scan_once(std::string_view wire, bool finish = true) {
    SseScanner scanner;
    std::vector<SseEvent> out;
    scanner.feed(wire, out);
    if (finish) {
        scanner.finish(out);
    }
    return to_events(out);
}

// Feeds `wire` in pieces of `step` bytes (1 = byte by byte).
inline Events scan_in_steps(std::string_view wire, size_t step, bool finish = true) {
    SseScanner scanner;
    std::vector<SseEvent> out;
    for (size_t i = 0; i < wire.size(); i += step) {
        scanner.feed(wire.substr(i, step), out);
    }
    if (finish) {
        scanner.finish(out);
    }
    return to_events(out);
}

inline Records records_once(std::string_view wire) {
    RecordScanner scanner;
    Records out;
    scanner.feed(wire, out);
    scanner.finish(out);
    return out;
}

inline Records records_in_steps(std::string_view wire, size_t step) {
    RecordScanner scanner;
    Records out;
    for (size_t i = 0; i < wire.size(); i += step) {
        scanner.feed(wire.substr(i, step), out);
    }
    scanner.finish(out);
    return out;
}

// api-dialects.md §11.4, verbatim, including the interleaved `event: ping` and the missing blank
// line after the last event.
inline constexpr std::string_view kAnthropic =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":"
    "\"msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK\",\"type\":\"message\",\"role\":\"assistant\","
    "\"content\":[],\"model\":\"claude-3-opus-latest\",\"stop_reason\":null,"
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}";

// A stream that mixes every rule; used for the split-invariance checks.
inline constexpr std::string_view kMixed =
    ": keep-alive\r\n"
    "data:{\"token\":{\"text\":\"Hi\"}}\r\n"
    "\r\n"
    "event: ping\r"
    "data: {}\r"
    "\r"
    "id: 7\n"
    "retry: 100\n"
    "data: line one\n"
    "data:  two\n"
    "bogus: x\n"
    "\n"
    "event: only-a-name\n"
    "\n"
    "data\n"
    "\n"
    "data: [DONE]\n"
    "\n";

}  // namespace infergate::framing
