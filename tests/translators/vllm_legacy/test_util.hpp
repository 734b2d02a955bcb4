#pragma once
// Shared by the vLLM legacy codec tests.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "translators/vllm_legacy/codec.hpp"

namespace vllm_legacy_test {

inline const infergate::translators::Codec& codec() {
    return infergate::translators::vllm_legacy::codec();
}

inline std::string fixture(const char* name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/vllm_legacy/" + name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace vllm_legacy_test
