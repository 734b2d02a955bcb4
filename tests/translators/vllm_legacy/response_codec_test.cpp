// translators/vllm_legacy/response_codec.cpp: {"text": [prompt + output]} both ways, and errors.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/vllm_legacy/test_util.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using vllm_legacy_test::codec;
using vllm_legacy_test::fixture;

GenerationRequest request_for(std::string prompt) {
    GenerationRequest req;
    req.dialect = Dialect::vllm_legacy;
    Prompt p;
    p.text = std::move(prompt);
    req.prompts.push_back(std::move(p));
    return req;
}

void check_502(std::string_view body, const std::string& words,
               const std::string& prompt = "San Francisco is a") {
    auto r = codec().decode_response(body, request_for(prompt));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().type == "upstream_error");
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
}

}  // namespace

TEST_CASE("vllm_legacy decodes the golden response with the prompt stripped") {
    auto r = codec().decode_response(fixture("generate_response.json"),
                                     request_for("San Francisco is a"));
    REQUIRE(r.ok());
    REQUIRE(r->choices.size() == 1);
    CHECK(r->choices[0].index == 0);
    CHECK(r->choices[0].text == " city in Northern California ...");
    CHECK(r->choices[0].finish.kind == FinishKind::none);
    CHECK_FALSE(r->usage.prompt_tokens);
    CHECK_FALSE(r->usage.completion_tokens);
    CHECK_FALSE(r->choices[0].usage.completion_tokens);
}

TEST_CASE("vllm_legacy encodes a response: prompt echoed, one string per choice, nothing else") {
    GenerationResult result;
    result.id = "cmpl-1";
    result.model = "m";
    result.usage.completion_tokens = 9;
    for (int i = 0; i < 2; ++i) {
        Choice c;
        c.index = i;
        c.text = i == 0 ? " city" : " \"hill\"\n";
        c.finish.kind = FinishKind::length;
        result.choices.push_back(c);
    }
    std::string out;
    codec().encode_response(result, request_for("SF is a"), out);
    CHECK(out == R"({"text":["SF is a city","SF is a \"hill\"\n"]})");

    // Round trip canonical -> wire -> canonical keeps the text; counts and finish are not on
    // this wire, so they come back unknown.
    auto back = codec().decode_response(out, request_for("SF is a"));
    REQUIRE(back.ok());
    REQUIRE(back->choices.size() == 2);
    CHECK(back->choices[0].text == " city");
    CHECK(back->choices[1].text == " \"hill\"\n");
    CHECK(back->choices[1].index == 1);
    CHECK(back->choices[1].finish.kind == FinishKind::none);
    CHECK_FALSE(back->usage.completion_tokens);
}

TEST_CASE("vllm_legacy golden response re-encodes to the same text") {
    const std::string golden = fixture("generate_response.json");
    auto r = codec().decode_response(golden, request_for("San Francisco is a"));
    REQUIRE(r.ok());
    std::string out;
    codec().encode_response(*r, request_for("San Francisco is a"), out);
    CHECK(out == R"({"text":["San Francisco is a city in Northern California ..."]})");
}

TEST_CASE("vllm_legacy malformed upstream responses are 502s") {
    check_502("{", "malformed response");
    check_502("[]", "not an object");
    check_502(R"({"generated_text":"x"})", "no 'text' list");
    check_502(R"({"text":"San Francisco is a x"})", "no 'text' list");
    check_502(R"({"text":[]})", "empty 'text' list");
    check_502(R"({"text":[1]})", "text[0] is an integer");
    check_502(R"({"text":["San Francisco is a x","Los Angeles"]})",
              "text[1] does not start with the prompt");
    // An empty prompt is a prefix of everything.
    auto r = codec().decode_response(R"({"text":["abc"]})", request_for(""));
    REQUIRE(r.ok());
    CHECK(r->choices[0].text == "abc");
}

TEST_CASE("vllm_legacy error bodies") {
    std::string out;
    codec().encode_error(infergate::canonical::bad_request("unknown key 'x'", "x"), out);
    CHECK(out == R"({"error":"unknown key 'x'"})");

    // The real server's plain-text 500, and our own JSON form, both decode.
    Error e = codec().decode_error(500, "Internal Server Error");
    CHECK(e.status == 500);
    CHECK(e.message == "Internal Server Error");
    e = codec().decode_error(400, out);
    CHECK(e.status == 400);
    CHECK(e.message == "unknown key 'x'");
}
