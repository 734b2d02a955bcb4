#pragma once
// Helpers shared by the OpenAI codec tests.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "translators/openai/codec.hpp"

namespace openai_test {

using infergate::canonical::GenerationRequest;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::translators::Codec;

inline const infergate::translators::Codec& completions() {
    return infergate::translators::openai::completions_codec();
}
inline const infergate::translators::Codec& chat() {
    return infergate::translators::openai::chat_codec();
}

inline GenerationRequest decode_ok(const Codec& codec, std::string_view body) {
    INFO(body);
    auto r = codec.decode_request(body);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

inline std::string fixture(std::string_view name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/openai/" + std::string(name),
                     std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The `data:` payloads of a stream written the way OpenAI-family servers write it
// ("data: <json>\n\n"); the real scanner lives in translators/framing.
inline std::vector<std::string> sse_payloads(std::string_view stream) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < stream.size()) {
        size_t end = stream.find("\n\n", pos);
        if (end == std::string_view::npos) {
            end = stream.size();
        }
        std::string_view event = stream.substr(pos, end - pos);
        REQUIRE(event.rfind("data: ", 0) == 0);
        out.emplace_back(event.substr(6));
        pos = end + 2;
    }
    return out;
}

inline std::vector<StreamEvent> decode_stream(const Codec& codec, std::string_view stream,
                                              StreamState& state) {
    std::vector<StreamEvent> events;
    for (const std::string& payload : sse_payloads(stream)) {
        codec.decode_stream_event(payload, state, events);
    }
    return events;
}

}  // namespace openai_test
