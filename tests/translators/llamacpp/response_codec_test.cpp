// translators/llamacpp/response_codec.cpp: whole /completion responses and error bodies.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/llamacpp/test_util.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using llamacpp_test::fixture;
using llamacpp_test::llama;

GenerationRequest request(Dialect d, std::optional<int64_t> max_tokens = std::nullopt) {
    GenerationRequest req;
    req.dialect = d;
    req.prompts.push_back(Prompt{"p", {}, false});
    req.sampling.max_tokens = max_tokens;
    return req;
}

GenerationResult decode_ok(std::string_view body, const GenerationRequest& req) {
    auto r = llama().decode_response(body, req);
    INFO(std::string(body));
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

std::string encode(const GenerationResult& result, const GenerationRequest& req) {
    std::string out;
    llama().encode_response(result, req, out);
    return out;
}

}  // namespace

TEST_CASE("llamacpp decode_response: the §7.4 sample") {
    const GenerationResult r =
        decode_ok(fixture("completion_response.json"), request(Dialect::llamacpp, 32));
    CHECK(r.model == "<alias>");
    REQUIRE(r.choices.size() == 1);
    CHECK(r.choices[0].text == "<generated text, stop word excluded>");
    CHECK(r.choices[0].finish.kind == FinishKind::length);
    CHECK(r.choices[0].finish.length == 32);
    CHECK(r.usage.prompt_tokens == 12);
    CHECK(r.usage.completion_tokens == 32);
    CHECK(r.usage.cached_tokens == 0);
    CHECK(r.choices[0].usage == r.usage);
}

TEST_CASE("llamacpp decode_response: a batch comes back as choices by index") {
    const GenerationResult r =
        decode_ok(fixture("completion_response_batch.json"), request(Dialect::llamacpp));
    REQUIRE(r.choices.size() == 2);
    CHECK(r.model == "qwen2.5-0.5b");
    CHECK(r.choices[0].index == 0);
    CHECK(r.choices[0].text == " Paris");
    CHECK(r.choices[0].finish.kind == FinishKind::stop);
    CHECK(r.choices[0].finish.matched_text == ".");
    CHECK(r.choices[0].usage.cached_tokens == 3);
    CHECK(r.choices[1].index == 1);
    CHECK(r.choices[1].text == "2");
    CHECK(r.choices[1].finish.kind == FinishKind::stop);
    CHECK_FALSE(r.choices[1].finish.matched_text);
    CHECK(r.usage.prompt_tokens == 9);
    CHECK(r.usage.completion_tokens == 4);
    CHECK(r.usage.cached_tokens == 3);
}

TEST_CASE("llamacpp decode_response: stop_type none and the old boolean flags") {
    const GenerationRequest req = request(Dialect::openai_completions);  // budget 16
    auto finish = [&](const char* body) { return decode_ok(body, req).choices[0].finish; };
    CHECK(finish(R"({"content":"a","stop_type":"none","tokens_predicted":16})").kind ==
          FinishKind::length);
    CHECK(finish(R"({"content":"a","stop_type":"none","tokens_predicted":16})").length == 16);
    CHECK(finish(R"({"content":"a","stop_type":"none","tokens_predicted":3})").kind ==
          FinishKind::stop);
    CHECK(finish(R"({"content":"a","tokens_predicted":3})").kind == FinishKind::stop);
    CHECK(finish(R"({"content":"a","stopped_limit":true,"stopped_eos":false})").kind ==
          FinishKind::length);
    const auto word = finish(R"({"content":"a","stopped_word":true,"stopping_word":"\n"})");
    CHECK(word.kind == FinishKind::stop);
    CHECK(word.matched_text == "\n");
    CHECK(finish(R"({"content":"a","stopped_eos":true})").kind == FinishKind::stop);
}

TEST_CASE("llamacpp decode_response: malformed upstream data is a 502") {
    const char* bodies[] = {
        "not json",
        "5",
        "[]",
        R"({"stop": true})",
        R"({"content": 5})",
        R"({"content": "a", "tokens_predicted": "3"})",
        R"({"content": "a", "tokens_evaluated": 1.5})",
        R"({"content": "a", "timings": {"cache_n": "x"}})",
        R"({"content": "a", "stop_type": "exploded"})",
        R"({"content": "a", "stop_type": 1})",
        R"({"content": "a", "stopping_word": 1})",
        R"({"error": {"code": 500, "message": "boom"}})",
        R"([{"content": "a"}, 3])",
    };
    for (const char* body : bodies) {
        INFO(body);
        auto r = llama().decode_response(body, request(Dialect::llamacpp));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 502);
        CHECK(r.error().type == "upstream_error");
        CHECK(r.error().message.find("llama.cpp") != std::string::npos);
    }
}

TEST_CASE("llamacpp encode_response: exact bytes") {
    GenerationResult r;
    r.model = "m";
    Choice c;
    c.text = "Paris";
    c.finish.kind = FinishKind::stop;
    c.finish.matched_text = "\n";
    r.choices.push_back(c);
    r.usage = {5, 2, 1};
    CHECK(
        encode(r, request(Dialect::llamacpp)) ==
        R"({"index":0,"content":"Paris","tokens":[],"stop":true,"model":"m","tokens_predicted":2,)"
        R"("tokens_evaluated":5,"stop_type":"word","stopping_word":"\n",)"
        R"("timings":{"cache_n":1,"prompt_n":4,"prompt_ms":0.0,"prompt_per_token_ms":0.0,"prompt_per_second":0.0,"predicted_n":2,"predicted_ms":0.0,"predicted_per_token_ms":0.0,"predicted_per_second":0.0}})");

    // Unknown counts are left out, never invented; length is "limit".
    r.usage = {};
    r.choices[0].finish = {};
    r.choices[0].finish.kind = FinishKind::length;
    CHECK(
        encode(r, request(Dialect::llamacpp)) ==
        R"({"index":0,"content":"Paris","tokens":[],"stop":true,"model":"m","stop_type":"limit",)"
        R"("stopping_word":"","timings":{"prompt_n":0,"prompt_ms":0.0,"prompt_per_token_ms":0.0,"prompt_per_second":0.0,"predicted_n":0,"predicted_ms":0.0,"predicted_per_token_ms":0.0,"predicted_per_second":0.0}})");

    // A list prompt gets a list back, even with one element.
    GenerationRequest list = request(Dialect::llamacpp);
    list.prompt_is_list = true;
    r.choices[0].finish.kind = FinishKind::stop;
    r.choices[0].usage = {3, 1, std::nullopt};
    CHECK(
        encode(r, list) ==
        R"([{"index":0,"content":"Paris","tokens":[],"stop":true,"model":"m","tokens_predicted":1,)"
        R"("tokens_evaluated":3,"stop_type":"eos","stopping_word":"",)"
        R"("timings":{"prompt_n":3,"prompt_ms":0.0,"prompt_per_token_ms":0.0,"prompt_per_second":0.0,"predicted_n":1,"predicted_ms":0.0,"predicted_per_token_ms":0.0,"predicted_per_second":0.0}}])");
}

TEST_CASE("llamacpp: response round trips canonical -> llama.cpp -> canonical") {
    const GenerationRequest req = request(Dialect::llamacpp, 32);
    for (const char* name : {"completion_response.json", "completion_response_batch.json"}) {
        INFO(name);
        const GenerationResult first = decode_ok(fixture(name), req);
        GenerationRequest client = req;
        client.prompt_is_list = first.choices.size() > 1;
        const GenerationResult again = decode_ok(encode(first, client), req);
        REQUIRE(again.choices.size() == first.choices.size());
        for (size_t i = 0; i < first.choices.size(); ++i) {
            CHECK(again.choices[i].text == first.choices[i].text);
            CHECK(again.choices[i].finish == first.choices[i].finish);
            CHECK(again.choices[i].usage == first.choices[i].usage);
        }
        CHECK(again.usage == first.usage);
        CHECK(again.model == first.model);
    }
    // Every finish kind survives (tool_calls and content_filter degrade to EOS).
    for (FinishKind kind : {FinishKind::stop, FinishKind::length}) {
        GenerationResult r;
        r.choices.push_back(Choice{});
        r.choices[0].text = "t";
        r.choices[0].finish.kind = kind;
        r.choices[0].usage = {1, 32, std::nullopt};
        CHECK(decode_ok(encode(r, req), req).choices[0].finish.kind == kind);
    }
}

TEST_CASE("llamacpp encode_error and decode_error") {
    std::string out;
    Error e = infergate::canonical::bad_request("'prompt' is required", "prompt");
    llama().encode_error(e, out);
    CHECK(out == R"({"error":{"code":400,"message":"'prompt' is required",)"
                 R"("type":"invalid_request_error"}})");

    out.clear();
    e = {};
    e.status = 502;
    e.type = "upstream_error";
    e.message = "bad \"gateway\"";
    llama().encode_error(e, out);
    CHECK(out == R"({"error":{"code":502,"message":"bad \"gateway\"","type":"server_error"}})");

    out.clear();
    e.status = 503;
    e.type = "overloaded";
    llama().encode_error(e, out);
    CHECK(out.find(R"("type":"unavailable_error")") != std::string::npos);

    struct Case {
        const char* file;
        int status;
        const char* type;
        const char* message;
    };
    for (const Case& c : {Case{"error_400.json", 400, "invalid_request_error",
                               "Failed to parse grammar"},
                          Case{"error_401.json", 401, "authentication_error", "Invalid API Key"},
                          Case{"error_501.json", 501, "not_supported_error",
                               "This server does not support metrics endpoint."},
                          Case{"error_503.json", 503, "unavailable_error", "Loading model"}}) {
        INFO(c.file);
        const std::string body = fixture(c.file);
        const Error d = llama().decode_error(c.status, body);
        CHECK(d.status == c.status);
        CHECK(d.type == c.type);
        CHECK(d.message == c.message);
        // And back out in llama.cpp's own shape, byte for byte modulo spacing.
        std::string again;
        llama().encode_error(d, again);
        CHECK(again == "{\"error\":{\"code\":" + std::to_string(c.status) + ",\"message\":\"" +
                           c.message + "\",\"type\":\"" + c.type + "\"}}");
    }
}

TEST_CASE("llamacpp encode: timings carry the durations the exchange measured, as numbers") {
    GenerationResult r;
    r.model = "m";
    Choice c;
    c.text = "Paris";
    c.finish = infergate::canonical::FinishReason{FinishKind::length};
    c.usage.prompt_tokens = 4;
    c.usage.completion_tokens = 2;
    r.choices.push_back(c);
    r.usage = c.usage;
    // A stream's view: 10 ms to the first token, 20 ms from there to the last.
    r.timing.prompt_eval_ns = 10'000'000;
    r.timing.eval_ns = 20'000'000;
    r.timing.total_ns = 31'000'000;
    const std::string body = encode(r, request(Dialect::llamacpp));
    CHECK(body.find(R"("timings":{"prompt_n":4,"prompt_ms":10.0,"prompt_per_token_ms":2.5,)"
                    R"("prompt_per_second":400.0,"predicted_n":2,"predicted_ms":20.0,)"
                    R"("predicted_per_token_ms":10.0,"predicted_per_second":100.0}})") !=
          std::string::npos);
    // A whole answer shows only its total: it counts as prediction, the prompt's rates are 0.
    r.timing.prompt_eval_ns.reset();
    r.timing.eval_ns.reset();
    const std::string whole = encode(r, request(Dialect::llamacpp));
    CHECK(whole.find(R"("prompt_ms":0.0,"prompt_per_token_ms":0.0,"prompt_per_second":0.0,)"
                     R"("predicted_n":2,"predicted_ms":31.0,)") != std::string::npos);
    CHECK(whole.find("null") == std::string::npos);
}

// Issue 16 item 4: what the real llama-server answers reaches a llama.cpp client whole, and the
// cached part of the prompt (tokens_evaluated - timings.prompt_n) reaches every dialect.
TEST_CASE("llamacpp decode_response: the real engine's answer, cached tokens from prompt_n") {
    const GenerationResult r =
        decode_ok(fixture("completion_real_c392e509.json"), request(Dialect::openai_completions));
    CHECK(r.usage.prompt_tokens == 2);
    CHECK(r.usage.cached_tokens == 1);    // tokens_evaluated 2 - timings.prompt_n 1
    CHECK(r.choices[0].carried.empty());  // an OpenAI client cannot take llama.cpp's members
}

TEST_CASE("llamacpp same dialect: id_slot, generation_settings, truncated, ... come through") {
    const GenerationRequest req = request(Dialect::llamacpp);
    GenerationResult r = decode_ok(fixture("completion_real_c392e509.json"), req);
    r.model = "tiny-llama";
    const std::string out = encode(r, req);
    infergate::json::Document got;
    infergate::json::Document want;
    REQUIRE(!infergate::json::parse(out, got, "out"));
    REQUIRE(!infergate::json::parse(fixture("completion_real_c392e509.json"), want, "fixture"));
    // Every member of the backend's answer, with the backend's value (its timings included:
    // prompt_n is what the slot evaluated, not the whole prompt).
    for (const auto& m : want.GetObject()) {
        const std::string_view k = infergate::json::view(m.name);
        INFO(std::string(k));
        const infergate::json::Value* v = infergate::json::find(got, k);
        REQUIRE(v != nullptr);
        CHECK(infergate::json::to_string(*v) == infergate::json::to_string(m.value));
    }
    CHECK(got.MemberCount() == want.MemberCount());
}

TEST_CASE("llamacpp encode_response from another backend: prompt_n is the uncached part") {
    GenerationResult r;
    r.model = "m";
    Choice& c = r.choices.emplace_back();
    c.text = "x";
    c.token_ids = {7, 8};
    c.finish.kind = FinishKind::length;
    r.usage.prompt_tokens = 10;
    r.usage.completion_tokens = 2;
    r.usage.cached_tokens = 6;
    const std::string out = encode(r, request(Dialect::llamacpp));
    CHECK(out.find(R"("tokens":[7,8])") != std::string::npos);
    CHECK(out.find(R"("cache_n":6,"prompt_n":4,)") != std::string::npos);
    // Values only a llama.cpp backend knows are left out, not made up.
    for (const char* k : {"id_slot", "generation_settings", "truncated", "tokens_cached"}) {
        CHECK(out.find(k) == std::string::npos);
    }
}
