// translators/tgi/response_codec.cpp: whole /generate answers against the §11.8 samples.

#include <doctest/doctest.h>

#include "tests/translators/tgi/test_util.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using tgi_test::fixture;
using tgi_test::tgi;

GenerationRequest request(std::vector<std::string> stop = {}) {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    req.prompts.push_back(Prompt{"The capital city of France", {}, false});
    req.sampling.stop = std::move(stop);
    return req;
}

GenerationResult decode_ok(const std::string& body, const GenerationRequest& req) {
    auto r = tgi().decode_response(body, req);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    REQUIRE(r->choices.size() == 1);
    return r.value();
}

void check_502(const std::string& body) {
    CAPTURE(body);
    auto r = tgi().decode_response(body, request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().type == "upstream_error");
    CHECK(r.error().message.find("TGI") != std::string::npos);
}

}  // namespace

TEST_CASE("tgi decode_response: the quicktour answer, no details") {
    const auto r = decode_ok(fixture("generate_response.json"), request());
    CHECK(r.choices[0].text ==
          "\n\nDeep Learning is a subset of Machine Learning that is concerned with the "
          "development of algorithms that can");
    CHECK(r.choices[0].finish.kind == FinishKind::none);
    CHECK_FALSE(r.usage.completion_tokens.has_value());
    CHECK_FALSE(r.usage.prompt_tokens.has_value());  // only in the x-prompt-tokens header
}

TEST_CASE("tgi decode_response: details give the finish reason and count") {
    const auto r = decode_ok(fixture("generate_response_details.json"), request());
    CHECK(r.choices[0].text == " for /api/v1/projects/1");
    CHECK(r.choices[0].finish.kind == FinishKind::length);
    CHECK(r.choices[0].usage.completion_tokens == 10);
    CHECK(r.usage.completion_tokens == 10);
}

TEST_CASE("tgi decode_response: POST / list and a matched stop string trimmed") {
    const std::string body =
        R"([{"generated_text":" is Par","details":{"finish_reason":"stop_sequence","generated_tokens":3,"seed":null,"prefill":[],"tokens":[]}}])";
    const auto r = decode_ok(body, request({"Pa", "Par", "xyz"}));
    CHECK(r.choices[0].text == " is ");
    CHECK(r.choices[0].finish.kind == FinishKind::stop);
    CHECK(r.choices[0].finish.matched_text == "Par");  // the longest that fits
    // a client that keeps stop strings (a TGI client) gets the text as TGI wrote it
    auto keep = request({"Par"});
    keep.sampling.keep_stop_str = true;
    const auto kept = decode_ok(body, keep);
    CHECK(kept.choices[0].text == " is Par");
    CHECK(kept.choices[0].finish.matched_text == "Par");
    // the §11.8 compat sample: a bare list without details
    const auto compat = decode_ok(fixture("compat_stop_response.json"), request({"Par"}));
    CHECK(compat.choices[0].text == "The capital city of France is Par");
}

TEST_CASE("tgi decode_response: eos_token is a stop without a string") {
    const auto r = decode_ok(
        R"({"generated_text":"Paris.","details":{"finish_reason":"eos_token","generated_tokens":3}})",
        request({"."}));
    CHECK(r.choices[0].text == "Paris.");  // not trimmed: no stop string fired
    CHECK(r.choices[0].finish.kind == FinishKind::stop);
    CHECK_FALSE(r.choices[0].finish.matched_text.has_value());
}

TEST_CASE("tgi decode_response: malformed bodies are 502s") {
    check_502("not json");
    check_502("42");
    check_502("[]");
    check_502(R"([{"generated_text":"a"},{"generated_text":"b"}])");
    check_502(R"({"text":"sglang?"})");
    check_502(R"({"generated_text":7})");
    check_502(R"({"generated_text":"a","details":[]})");
    check_502(R"({"generated_text":"a","details":{"finish_reason":"abort"}})");
    check_502(R"({"generated_text":"a","details":{}})");
    check_502(R"({"generated_text":"a","details":{"finish_reason":"length","generated_tokens":-1}})");
    auto err = tgi().decode_response(R"({"error":"boom","error_type":"generation"})", request());
    REQUIRE_FALSE(err.ok());
    CHECK(err.error().status == 502);
    CHECK(err.error().code == "generation");
}

TEST_CASE("tgi encode_response: exact bytes, details only when asked, list on POST /") {
    GenerationResult result;
    Choice c;
    c.text = " is Par";
    c.finish.kind = FinishKind::stop;
    c.finish.matched_text = "Par";
    c.usage.completion_tokens = 3;
    result.choices.push_back(c);
    result.usage.completion_tokens = 3;

    auto plain = tgi().decode_request(R"({"inputs":"The capital city of France"})");
    REQUIRE(plain.ok());
    std::string out;
    tgi().encode_response(result, *plain, out);
    CHECK(out == R"({"generated_text":" is Par"})");

    auto detailed = tgi().decode_request(
        R"({"inputs":"The capital city of France","parameters":{"details":true,"seed":9,"stop":["Par"]}})");
    REQUIRE(detailed.ok());
    out.clear();
    tgi().encode_response(result, *detailed, out);
    CHECK(out ==
          R"({"generated_text":" is Par","details":{"finish_reason":"stop_sequence","generated_tokens":3,"seed":9,"prefill":[],"tokens":[]}})");

    auto compat = tgi().decode_request(
        R"({"inputs":"The capital city of France","parameters":{"return_full_text":true}})");
    REQUIRE(compat.ok());
    infergate::translators::tgi::mark_route(*compat, "/");
    out.clear();
    tgi().encode_response(result, *compat, out);
    CHECK(out == fixture("compat_stop_response.json"));  // the issue #332 answer, byte for byte

    GenerationResult length;
    Choice l;
    l.text = "abc";
    l.finish.kind = FinishKind::length;
    length.choices.push_back(l);  // no count known: 0, never a guess
    out.clear();
    tgi().encode_response(length, *detailed, out);
    CHECK(out ==
          R"({"generated_text":"abc","details":{"finish_reason":"length","generated_tokens":0,"seed":9,"prefill":[],"tokens":[]}})");
    GenerationResult empty;
    out.clear();
    tgi().encode_response(empty, *plain, out);
    CHECK(out == R"({"generated_text":""})");
}

TEST_CASE("tgi round trip: canonical -> TGI body -> canonical") {
    for (const auto kind : {FinishKind::length, FinishKind::stop}) {
        GenerationResult result;
        Choice c;
        c.text = "Deep learning \"is\" \xC3\xA9\n";
        c.finish.kind = kind;
        c.usage.completion_tokens = 12;
        result.choices.push_back(c);
        auto req = tgi().decode_request(R"({"inputs":"q","parameters":{"details":true}})");
        REQUIRE(req.ok());
        std::string body;
        tgi().encode_response(result, *req, body);
        const auto back = decode_ok(body, *req);
        CHECK(back.choices[0].text == c.text);
        CHECK(back.choices[0].finish.kind == kind);
        CHECK(back.choices[0].usage.completion_tokens == 12);
    }
}
