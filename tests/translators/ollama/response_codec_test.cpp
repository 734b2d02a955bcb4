// Ollama whole responses and errors, both directions.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/ollama/test_util.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
namespace ollama = infergate::translators::ollama;

GenerationResult decode_ok(const infergate::translators::Codec& codec, std::string_view body,
                           const GenerationRequest& req = {}) {
    auto r = codec.decode_response(body, req);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return r.value();
}

void check_502(std::string_view body, std::string_view words) {
    auto r = ollama::generate_codec().decode_response(body, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().type == "upstream_error");
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
}

}  // namespace

TEST_CASE("ollama decode_response: the docs samples") {
    GenerationResult g =
        decode_ok(ollama::generate_codec(), ollama_test::fixture("generate_response.json"));
    REQUIRE(g.choices.size() == 1);
    CHECK(g.model == "gemma4");
    CHECK(g.choices[0].text == "Hello! How can I help you today?");
    CHECK(g.choices[0].finish.kind == FinishKind::stop);
    CHECK(g.usage.prompt_tokens == 11);
    CHECK(g.usage.completion_tokens == 18);
    CHECK_FALSE(g.usage.cached_tokens.has_value());

    GenerationResult c =
        decode_ok(ollama::chat_codec(), ollama_test::fixture("chat_response.json"));
    CHECK(c.choices[0].text == "Hello! How are you today?");
    CHECK(c.choices[0].finish.kind == FinishKind::stop);  // no done_reason: an older server
    CHECK(c.usage.prompt_tokens == 26);
    CHECK(c.usage.completion_tokens == 298);
}

TEST_CASE("ollama decode_response: length finish carries the budget; missing counts stay unknown") {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    GenerationResult r = decode_ok(
        ollama::generate_codec(),
        R"({"model":"m","response":"abc","done":true,"done_reason":"length","eval_count":16})",
        req);
    CHECK(r.choices[0].finish.kind == FinishKind::length);
    CHECK(r.choices[0].finish.length == 16);  // OpenAI completions' default budget
    CHECK_FALSE(r.usage.prompt_tokens.has_value());
    CHECK(r.usage.completion_tokens == 16);
}

TEST_CASE("ollama decode_response: every 502 path") {
    check_502("not json", "malformed response");
    check_502("[1]", "expected a JSON object");
    check_502(R"({"done":true})", "neither");
    check_502(R"({"response":3,"done":true})", "neither");
    check_502(R"({"response":"x","done":false})", "unfinished");
    check_502(R"({"response":"x"})", "unfinished");
    check_502(ollama_test::fixture("unload_response.json"), "unload");
    check_502(R"({"response":"","done":true,"done_reason":"load"})", "load");
    check_502(R"({"error":"model 'x' not found"})", "model 'x' not found");
}

TEST_CASE("ollama decode_error: the {\"error\": text} envelope") {
    Error e = ollama::generate_codec().decode_error(404, R"({"error":"model 'x' not found"})");
    CHECK(e.status == 404);
    CHECK(e.message == "model 'x' not found");
    CHECK(e.type == "not_found_error");
    e = ollama::chat_codec().decode_error(503, "");
    CHECK(e.status == 503);
    CHECK(e.message.find("empty body") != std::string::npos);
}

TEST_CASE("ollama encode_response: exact bytes for generate and chat") {
    GenerationRequest req;
    req.model = "llama3.2";
    GenerationResult result;
    result.model = "served-name";
    result.created = 1702390423;
    auto& c = result.choices.emplace_back();
    c.text = "Hi \"there\"";
    c.finish.kind = FinishKind::length;
    result.usage.prompt_tokens = 26;
    result.usage.completion_tokens = 298;
    std::string out;
    ollama::generate_codec().encode_response(result, req, out);
    CHECK(out ==
          R"({"model":"llama3.2","created_at":"2023-12-12T14:13:43Z","response":"Hi \"there\"",)"
          R"("done":true,"done_reason":"length","prompt_eval_count":26,"eval_count":298})");
    out.clear();
    ollama::Timing timing;
    timing.created_unix_ns = 1702390423416799000;
    timing.total_ns = 5191566416;
    timing.load_ns = 2154458;
    timing.prompt_eval_ns = 383809000;
    timing.eval_ns = 4799921000;
    result.choices[0].finish.kind = FinishKind::stop;
    result.usage.prompt_tokens.reset();  // unknown: omitted, never 0
    ollama::encode_response(ollama::chat_codec(), result, req, timing, out);
    CHECK(out ==
          R"({"model":"llama3.2","created_at":"2023-12-12T14:13:43.416799Z",)"
          R"("message":{"role":"assistant","content":"Hi \"there\""},"done":true,)"
          R"("done_reason":"stop","total_duration":5191566416,"load_duration":2154458,)"
          R"("prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000})");
}

TEST_CASE("ollama format_created_at follows Go's RFC3339Nano") {
    CHECK(ollama::format_created_at(0) == "1970-01-01T00:00:00Z");
    CHECK(ollama::format_created_at(1691176965499127000) == "2023-08-04T19:22:45.499127Z");
    CHECK(ollama::format_created_at(951782400000000001) == "2000-02-29T00:00:00.000000001Z");
    CHECK(ollama::format_created_at(-1) == "1969-12-31T23:59:59.999999999Z");
}

TEST_CASE("ollama round trip: canonical -> ollama -> canonical keeps text, counts, finish") {
    for (const auto* codec : {&ollama::generate_codec(), &ollama::chat_codec()}) {
        for (FinishKind kind : {FinishKind::stop, FinishKind::length}) {
            GenerationRequest req;
            req.model = "m";
            req.sampling.max_tokens = 5;
            GenerationResult result;
            auto& c = result.choices.emplace_back();
            c.text = "ünïcode \n text";
            c.finish.kind = kind;
            result.usage.prompt_tokens = 3;
            result.usage.completion_tokens = 5;
            std::string out;
            codec->encode_response(result, req, out);
            GenerationResult back = decode_ok(*codec, out, req);
            CHECK(back.choices[0].text == c.text);
            CHECK(back.choices[0].finish.kind == kind);
            CHECK(back.usage == result.usage);
        }
    }
}

TEST_CASE("ollama encode_error: Ollama's error shape") {
    Error e;
    e.status = 400;
    e.message = "model is \"required\"";
    std::string out;
    ollama::chat_codec().encode_error(e, out);
    CHECK(out == R"({"error":"model is \"required\""})");
}

// Issue 16 item 7 (the tool-calling example of Ollama's docs/api.md): an Ollama client in front
// of an Ollama backend gets the tool calls; an OpenAI chat client gets them translated (issue
// 13); a client whose dialect does not take them yet a 502 that names them.
TEST_CASE("ollama same dialect: tool_calls come back whole, or a 502 that says why") {
    constexpr std::string_view body =
        R"({"model":"llama3.2","created_at":"2024-07-22T20:33:28.123648Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_current_weather","arguments":{"format":"celsius","location":"Paris, FR"}}}]},"done_reason":"stop","done":true,"total_duration":885095291,"load_duration":3753500,"prompt_eval_count":122,"prompt_eval_duration":328493000,"eval_count":33,"eval_duration":552222000})";
    GenerationRequest req;
    req.dialect = Dialect::ollama_chat;
    req.model = "llama3.2";
    const GenerationResult r = decode_ok(ollama::chat_codec(), body, req);
    std::string out;
    ollama::chat_codec().encode_response(r, req, out);
    CHECK(out.find(R"("message":{"role":"assistant","content":"","tool_calls":[{"function":)"
                   R"({"name":"get_current_weather","arguments":{"format":"celsius",)"
                   R"("location":"Paris, FR"}}}]})") != std::string::npos);

    GenerationRequest openai = req;
    openai.dialect = Dialect::openai_chat;
    const GenerationResult translated = decode_ok(ollama::chat_codec(), body, openai);
    REQUIRE(translated.choices[0].tool_calls.size() == 1);
    CHECK(translated.choices[0].tool_calls[0].arguments ==
          R"({"format":"celsius","location":"Paris, FR"})");
    GenerationRequest tgi = req;  // a client with no tool calls in its dialect
    tgi.dialect = Dialect::tgi;
    auto lost = ollama::chat_codec().decode_response(body, tgi);
    REQUIRE_FALSE(lost.ok());
    CHECK(lost.error().status == 502);
    CHECK(lost.error().message.find("tool_calls") != std::string::npos);
}

TEST_CASE("ollama same dialect: generate's context comes back") {
    constexpr std::string_view body =
        R"({"model":"m","created_at":"2023-08-04T19:22:45.499127Z","response":"Hi","done":true,"done_reason":"stop","context":[1,2,3],"eval_count":1})";
    GenerationRequest req;
    req.dialect = Dialect::ollama_generate;
    const GenerationResult r = decode_ok(ollama::generate_codec(), body, req);
    std::string out;
    ollama::generate_codec().encode_response(r, req, out);
    CHECK(out.find(R"("context":[1,2,3])") != std::string::npos);
}
