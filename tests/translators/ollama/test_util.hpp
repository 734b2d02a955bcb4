#pragma once
// Helpers shared by the Ollama codec tests.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "translators/ollama/codec.hpp"

namespace ollama_test {

inline std::string fixture(std::string_view name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/ollama/" + std::string(name),
                     std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::vector<std::string> lines(std::string_view s) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < s.size()) {
        size_t end = s.find('\n', pos);
        if (end == std::string_view::npos) {
            end = s.size();
        }
        if (end > pos) {
            out.emplace_back(s.substr(pos, end - pos));
        }
        pos = end + 1;
    }
    return out;
}

}  // namespace ollama_test
