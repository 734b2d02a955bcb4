#pragma once
// Shared helpers for the TGI codec tests: fixture reading and the codec under test.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "translators/tgi/codec.hpp"

namespace tgi_test {

inline const infergate::translators::Codec& tgi() { return infergate::translators::tgi::codec(); }

inline std::string fixture(const char* name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/tgi/" + name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
        s.pop_back();
    }
    return s;
}

// The `data:` payloads of a fixture (TGI writes no space after the colon).
inline std::vector<std::string> sse_payloads(const char* name) {
    const std::string all = fixture(name) + "\n\n";
    std::vector<std::string> out;
    size_t at = 0;
    while (at < all.size()) {
        const size_t end = all.find("\n\n", at);
        REQUIRE(end != std::string::npos);
        const std::string event = all.substr(at, end - at);
        REQUIRE(event.rfind("data:", 0) == 0);
        out.push_back(event.substr(5));
        at = end + 2;
    }
    return out;
}

}  // namespace tgi_test
