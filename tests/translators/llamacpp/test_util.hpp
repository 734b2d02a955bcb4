#pragma once
// Shared helpers for the llama.cpp codec tests.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/framing/framing.hpp"
#include "translators/llamacpp/codec.hpp"

namespace llamacpp_test {

inline const infergate::translators::Codec& llama() {
    return infergate::translators::llamacpp::codec();
}

inline std::string fixture(const std::string& name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/llamacpp/" + name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The `data:` payloads of an SSE fixture, through the real scanner (comment lines skipped).
inline std::vector<std::string> sse_payloads(const std::string& name) {
    infergate::framing::SseScanner scanner;
    std::vector<infergate::framing::SseEvent> events;
    scanner.feed(fixture(name), events);
    scanner.finish(events);
    std::vector<std::string> out;
    for (const auto& e : events) {
        out.push_back(e.data);
    }
    return out;
}

}  // namespace llamacpp_test
