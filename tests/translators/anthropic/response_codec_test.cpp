// Anthropic whole responses and errors: decode the captured samples, encode exact bytes,
// round-trip canonical → Anthropic → canonical, every 502 path.

#include <string>
#include <string_view>

#include "tests/translators/anthropic/test_util.hpp"

namespace {

using anthropic_test::codec;
using anthropic_test::fixture;
using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::RequestKind;

GenerationRequest request() {
    GenerationRequest req;
    req.dialect = Dialect::anthropic;
    req.kind = RequestKind::chat;
    req.model = "claude-x";
    req.sampling.max_tokens = 64;
    return req;
}

GenerationResult decode_ok(std::string_view body) {
    INFO(body);
    auto r = codec().decode_response(body, request());
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

void check_502(std::string_view body, std::string_view says) {
    INFO(body);
    auto r = codec().decode_response(body, request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().type == "upstream_error");
    CHECK(r.error().message.find(says) != std::string::npos);
}

GenerationResult result(std::string text, FinishKind kind) {
    GenerationResult res;
    res.id = "abc";
    res.model = "served";
    Choice c;
    c.text = std::move(text);
    c.finish.kind = kind;
    res.choices.push_back(std::move(c));
    res.usage.prompt_tokens = 12;
    res.usage.completion_tokens = 5;
    return res;
}

std::string encode(const GenerationResult& res) {
    std::string out;
    codec().encode_response(res, request(), out);
    return out;
}

std::string encode_error(const Error& e) {
    std::string out;
    codec().encode_error(e, out);
    return out;
}

}  // namespace

TEST_CASE("anthropic decode_response: captured message (§11.6)") {
    const GenerationResult res = decode_ok(fixture("message_response.json"));
    CHECK(res.id == "msg_01MkoP42QB7TUf5m2NVVK2kE");
    CHECK(res.model == "claude-sonnet-4-5-20250929");
    REQUIRE(res.choices.size() == 1);
    CHECK(res.choices[0].text == R"({"product_name": "Green Tea", "price": 5.50, "quantity": 2})");
    CHECK(res.choices[0].finish.kind == FinishKind::stop);
    CHECK_FALSE(res.choices[0].finish.matched_text);
    CHECK(res.usage.prompt_tokens == 249);
    CHECK(res.usage.completion_tokens == 26);
    CHECK(res.usage.cached_tokens == 0);
    CHECK(res.choices[0].usage == res.usage);

    // Re-encoded for an Anthropic client: the backend's own message, its usage as it wrote it.
    CHECK(encode(res) ==
          R"({"id":"msg_01MkoP42QB7TUf5m2NVVK2kE","type":"message","role":"assistant",)"
          R"("model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":)"
          R"("{\"product_name\": \"Green Tea\", \"price\": 5.50, \"quantity\": 2}"}],)"
          R"("stop_reason":"end_turn","stop_sequence":null,)"
          R"("usage":{"input_tokens":249,"cache_creation_input_tokens":0,)"
          R"("cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,)"
          R"("ephemeral_1h_input_tokens":0},"output_tokens":26,"service_tier":"standard",)"
          R"("inference_geo":"not_available"}})");
    // For another dialect's client nothing is carried: it gets the canonical counts.
    infergate::canonical::GenerationResult plain = res;
    plain.choices[0].carried = {};
    CHECK(encode(plain).ends_with(
        R"("usage":{"input_tokens":249,"cache_read_input_tokens":0,"output_tokens":26}})"));
}

TEST_CASE("anthropic decode_response: stop reasons, text blocks, cache counts") {
    GenerationResult r =
        decode_ok(R"({"id":"msg_1","content":[{"type":"thinking","thinking":"hm"},)"
                  R"({"type":"text","text":"a"},{"type":"text","text":"b"}],)"
                  R"("stop_reason":"stop_sequence","stop_sequence":"###",)"
                  R"("usage":{"input_tokens":3,"cache_creation_input_tokens":4,)"
                  R"("cache_read_input_tokens":5,"output_tokens":2}})");
    CHECK(r.choices[0].text == "ab");
    CHECK(r.choices[0].finish.kind == FinishKind::stop);
    CHECK(r.choices[0].finish.matched_text == "###");
    CHECK(r.usage.prompt_tokens == 12);
    CHECK(r.usage.cached_tokens == 5);
    CHECK(r.usage.completion_tokens == 2);

    struct Case {
        std::string_view reason;
        FinishKind kind;
    };
    for (const Case c :
         {Case{"end_turn", FinishKind::stop}, Case{"pause_turn", FinishKind::stop},
          Case{"max_tokens", FinishKind::length},
          Case{"model_context_window_exceeded", FinishKind::length},
          Case{"tool_use", FinishKind::tool_calls}, Case{"refusal", FinishKind::content_filter}}) {
        r = decode_ok(R"({"content":[],"stop_reason":")" + std::string(c.reason) + "\"}");
        CHECK(r.choices[0].finish.kind == c.kind);
    }
    r = decode_ok(R"({"content":[],"stop_reason":"max_tokens"})");
    CHECK(r.choices[0].finish.length == 64);
    r = decode_ok(R"({"content":[],"stop_reason":null})");
    CHECK(r.choices[0].finish.kind == FinishKind::none);
}

TEST_CASE("anthropic decode_response: malformed bodies are 502s") {
    check_502("{", "malformed");
    check_502("[]", "not an object");
    check_502(R"({"stop_reason":"end_turn"})", "'content'");
    check_502(R"({"content":[{"text":"x"}]})", "'type'");
    check_502(R"({"content":[{"type":"text"}]})", "'text'");
    check_502(R"({"content":[],"stop_reason":3})", "stop_reason");
    check_502(R"({"content":[],"usage":{"output_tokens":"2"}})", "usage.output_tokens");
    check_502(R"({"content":[],"usage":{"input_tokens":-1}})", "usage.input_tokens");
    check_502(R"({"content":[],"usage":[]})", "usage");
}

TEST_CASE("anthropic decode_response: an error envelope is an error") {
    auto r = codec().decode_response(fixture("rate_limit_error.json"), request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 429);
    CHECK(r.error().type == "rate_limit_error");
}

TEST_CASE("anthropic decode_error: captured 429 (§11.6)") {
    const Error e = codec().decode_error(429, fixture("rate_limit_error.json"));
    CHECK(e.status == 429);
    CHECK(e.type == "rate_limit_error");
    CHECK(e.message.rfind("This request would exceed", 0) == 0);
    // Re-encoded for an Anthropic client it keeps its type.
    CHECK(encode_error(e).find(R"({"type":"error","error":{"type":"rate_limit_error",)") == 0);
}

TEST_CASE("anthropic encode_response: stop reasons and ids") {
    CHECK(encode(result("Hi", FinishKind::stop)) ==
          R"({"id":"msg_abc","type":"message","role":"assistant","model":"served",)"
          R"("content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn",)"
          R"("stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":5}})");
    GenerationResult r = result("Hi", FinishKind::stop);
    r.choices[0].finish.matched_text = "###";
    r.model.clear();
    r.usage.cached_tokens = 10;
    CHECK(encode(r) ==
          R"({"id":"msg_abc","type":"message","role":"assistant","model":"claude-x",)"
          R"("content":[{"type":"text","text":"Hi"}],"stop_reason":"stop_sequence",)"
          R"("stop_sequence":"###","usage":{"input_tokens":2,"cache_read_input_tokens":10,)"
          R"("output_tokens":5}})");
    CHECK(encode(result("", FinishKind::length)).find(R"("stop_reason":"max_tokens")") !=
          std::string::npos);
    CHECK(encode(result("", FinishKind::tool_calls)).find(R"("stop_reason":"tool_use")") !=
          std::string::npos);
    CHECK(encode(result("", FinishKind::content_filter)).find(R"("stop_reason":"refusal")") !=
          std::string::npos);
    CHECK(encode(result("", FinishKind::none)).find(R"("stop_reason":null)") != std::string::npos);
    r = result("x", FinishKind::stop);
    r.id = "msg_kept";
    CHECK(encode(r).rfind(R"({"id":"msg_kept",)", 0) == 0);
}

TEST_CASE("anthropic round trip: canonical → Anthropic body → canonical") {
    for (const FinishKind kind : {FinishKind::stop, FinishKind::length, FinishKind::tool_calls,
                                  FinishKind::content_filter}) {
        GenerationResult in = result("Bonjour \"monde\" \xc3\xa9\n", kind);
        if (kind == FinishKind::stop) {
            in.choices[0].finish.matched_text = "</s>";
        }
        in.usage.cached_tokens = 4;
        const GenerationResult out = decode_ok(encode(in));
        CHECK(out.choices[0].text == in.choices[0].text);
        CHECK(out.choices[0].finish.kind == kind);
        CHECK(out.choices[0].finish.matched_text == in.choices[0].finish.matched_text);
        CHECK(out.usage == in.usage);
    }
}

TEST_CASE("anthropic encode_error: shapes and type mapping") {
    CHECK(
        encode_error(infergate::canonical::bad_request("'max_tokens' is required", "max_tokens")) ==
        R"({"type":"error","error":{"type":"invalid_request_error",)"
        R"("message":"'max_tokens' is required"}})");
    struct Case {
        int status;
        std::string_view type;
        std::string_view want;
    };
    for (const Case c :
         {Case{401, "authentication_error", "authentication_error"},
          Case{401, "invalid_request_error", "invalid_request_error"},
          Case{401, "whatever", "authentication_error"}, Case{403, "", "permission_error"},
          Case{404, "", "not_found_error"}, Case{413, "", "request_too_large"},
          Case{429, "", "rate_limit_error"}, Case{429, "overloaded", "overloaded_error"},
          Case{422, "validation", "invalid_request_error"},
          Case{500, "invalid_request_error", "api_error"}, Case{502, "upstream_error", "api_error"},
          Case{503, "", "overloaded_error"}, Case{529, "", "overloaded_error"},
          Case{504, "", "timeout_error"}}) {
        Error e;
        e.status = c.status;
        e.type = std::string(c.type);
        e.message = "m";
        INFO(c.status << " " << c.type);
        CHECK(encode_error(e) == R"({"type":"error","error":{"type":")" + std::string(c.want) +
                                     R"(","message":"m"}})");
    }
}

// Issue 16 item 7: the tool_use block reaches an Anthropic client; another dialect's client
// gets a 502 that names what would be lost instead of a 200 without the call.
TEST_CASE("anthropic same dialect: a tool_use answer comes back whole") {
    const std::string body = fixture("tool_use_response.json");
    const GenerationResult res = decode_ok(body);
    CHECK(res.choices[0].finish.kind == FinishKind::tool_calls);
    infergate::json::Document got;
    infergate::json::Document want;
    const std::string out = encode(res);
    REQUIRE(!infergate::json::parse(out, got, "out"));
    REQUIRE(!infergate::json::parse(body, want, "fixture"));
    CHECK(infergate::json::to_string(got) == infergate::json::to_string(want));

    // A client with no tool calls in its dialect is told, not given a 200 without them.
    GenerationRequest tgi = request();
    tgi.dialect = Dialect::tgi;
    auto r = codec().decode_response(body, tgi);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().message.find("tool_use") != std::string::npos);
    // One that has them gets them (roundtrip/chat_history_test: the shapes).
    GenerationRequest openai = request();
    openai.dialect = Dialect::openai_chat;
    auto translated = codec().decode_response(body, openai);
    REQUIRE(translated.ok());
    REQUIRE(translated->choices[0].tool_calls.size() == 1);
}
