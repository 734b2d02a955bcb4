#pragma once
// Helpers shared by the Anthropic codec tests.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "translators/anthropic/codec.hpp"
#include "translators/canonical/json.hpp"
#include "translators/framing/framing.hpp"

namespace anthropic_test {

inline const infergate::translators::Codec& codec() {
    return infergate::translators::anthropic::codec();
}

inline std::string fixture(std::string_view name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/anthropic/" + std::string(name),
                     std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Splits a stream with the proxy's own scanner (so `event:` lines are handled as in production).
inline std::vector<infergate::framing::SseEvent> sse_events(std::string_view stream) {
    infergate::framing::SseScanner scanner;
    std::vector<infergate::framing::SseEvent> events;
    scanner.feed(stream, events);
    scanner.finish(events);
    return events;
}

inline std::vector<infergate::canonical::StreamEvent> decode_stream(
    std::string_view stream, infergate::canonical::StreamState& state) {
    std::vector<infergate::canonical::StreamEvent> events;
    for (const auto& e : sse_events(stream)) {
        codec().decode_stream_event(e.data, state, events);
    }
    return events;
}

}  // namespace anthropic_test
