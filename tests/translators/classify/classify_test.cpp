#include <doctest/doctest.h>

#include "translators/classify.hpp"

using infergate::canonical::Dialect;
using infergate::translators::classify_generate_body;

TEST_CASE("POST /generate bodies are told apart by their top-level keys") {
    CHECK(classify_generate_body(R"({"text":"hi","sampling_params":{"max_new_tokens":8}})").value() ==
          Dialect::sglang);
    CHECK(classify_generate_body(R"({"input_ids":[1,2,3]})").value() == Dialect::sglang);
    CHECK(classify_generate_body(R"({"sampling_params":{},"rid":"x"})").value() == Dialect::sglang);
    CHECK(classify_generate_body(R"({"inputs":"hi","parameters":{"max_new_tokens":8}})").value() ==
          Dialect::tgi);
    CHECK(classify_generate_body(R"({"inputs":"hi"})").value() == Dialect::tgi);
    CHECK(classify_generate_body(R"({"prompt":"hi","max_tokens":8,"stream":true})").value() ==
          Dialect::vllm_legacy);
    // Marker names deeper in the body do not count.
    CHECK(classify_generate_body(R"({"inputs":"x","parameters":{"text":1,"prompt":2}})").value() ==
          Dialect::tgi);
    // sampling_params must be an object to mark SGLang.
    CHECK(classify_generate_body(R"({"prompt":"x","sampling_params":null})").value() ==
          Dialect::vllm_legacy);
}

TEST_CASE("mixed or markerless bodies are refused with the three shapes named") {
    auto mixed = classify_generate_body(R"({"inputs":"a","text":"b"})");
    REQUIRE_FALSE(mixed);
    CHECK(mixed.error().status == 400);
    CHECK(mixed.error().message.find("mixes SGLang's text/input_ids/sampling_params and TGI's inputs") !=
          std::string::npos);
    CHECK(mixed.error().message.find("vLLM's demo server") != std::string::npos);
    auto none = classify_generate_body(R"({"max_tokens":3})");
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("none of") != std::string::npos);
    CHECK_FALSE(classify_generate_body(R"({"prompt":"a","sampling_params":{}})"));
}

TEST_CASE("a body that is not a JSON object is left to the SGLang codec's parse error") {
    CHECK(classify_generate_body("not json").value() == Dialect::sglang);
    CHECK(classify_generate_body("[1,2]").value() == Dialect::sglang);
    CHECK(classify_generate_body("").value() == Dialect::sglang);
}

TEST_CASE("a body nested too deep is left to the SGLang codec's depth error, without recursing") {
    // Half a million levels would overflow the stack of a recursive SAX pass (the proxy
    // crashed on this body before the depth bound).
    const std::string deep(500000, '[');
    CHECK(classify_generate_body(deep).value() == Dialect::sglang);
    std::string nested = R"({"inputs":)";
    for (int i = 0; i < 100; ++i) {
        nested += R"({"a":)";
    }
    CHECK(classify_generate_body(nested + "1" + std::string(101, '}')).value() == Dialect::sglang);
    // Within the bound the keys still decide.
    CHECK(classify_generate_body(R"({"inputs":[[[["x"]]]]})").value() == Dialect::tgi);
}
