// Ollama requests: client bodies to canonical, canonical to upstream bodies.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/ollama/test_util.hpp"
#include "translators/openai/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::RequestKind;
using infergate::translators::Framing;
using infergate::translators::UpstreamOptions;
namespace ollama = infergate::translators::ollama;

GenerationRequest decode_ok(const infergate::translators::Codec& codec, std::string_view body) {
    auto r = codec.decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return r.value();
}

void check_400(const infergate::translators::Codec& codec, std::string_view body,
               std::string_view param, std::string_view words) {
    auto r = codec.decode_request(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == param);
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
}

}  // namespace

TEST_CASE("ollama codecs identify themselves") {
    CHECK(ollama::generate_codec().dialect() == Dialect::ollama_generate);
    CHECK(ollama::chat_codec().dialect() == Dialect::ollama_chat);
    CHECK(ollama::generate_codec().framing() == Framing::ndjson);
    CHECK(ollama::chat_codec().framing() == Framing::ndjson);
}

TEST_CASE("ollama generate: decode a templated prompt as a one-turn chat, stream by default") {
    GenerationRequest req =
        decode_ok(ollama::generate_codec(),
                  R"({"model":"llama3.2","prompt":"Why?","system":"Be brief.","keep_alive":"5m",
            "options":{"num_predict":50,"temperature":0.2,"top_k":20,"top_p":0.9,"min_p":0.05,
                       "stop":["\n","END"],"seed":7,"repeat_penalty":1.1,
                       "presence_penalty":0.5,"frequency_penalty":0.25,"num_ctx":4096}})");
    CHECK(req.dialect == Dialect::ollama_generate);
    CHECK(req.kind == RequestKind::chat);
    CHECK(req.model == "llama3.2");
    CHECK(req.stream);
    REQUIRE(req.messages.size() == 2);
    CHECK(req.messages[0].role == "system");
    CHECK(req.messages[0].content == "Be brief.");
    CHECK(req.messages[1].role == "user");
    CHECK(req.messages[1].content == "Why?");
    CHECK(req.sampling.max_tokens == 50);
    CHECK(req.sampling.temperature == 0.2);
    CHECK(req.sampling.top_k == 20);
    CHECK(req.sampling.top_p == 0.9);
    CHECK(req.sampling.min_p == 0.05);
    CHECK(req.sampling.seed == 7);
    CHECK(req.sampling.repetition_penalty == 1.1);
    CHECK(req.sampling.presence_penalty == 0.5);
    CHECK(req.sampling.frequency_penalty == 0.25);
    CHECK(req.sampling.stop == std::vector<std::string>{"\n", "END"});
    REQUIRE(req.sampling_extras.size() == 1);
    CHECK(req.sampling_extras[0].key == "num_ctx");
    REQUIRE(req.extras.size() == 1);
    CHECK(req.extras[0].key == "keep_alive");
    CHECK(req.extras[0].json == "\"5m\"");
}

TEST_CASE("ollama generate: raw prompt is a completion; num_predict -1 means no budget") {
    GenerationRequest req = decode_ok(
        ollama::generate_codec(), R"({"model":"m","prompt":"Once upon","raw":true,"stream":false,)"
                                  R"("options":{"num_predict":-1}})");
    CHECK(req.kind == RequestKind::completion);
    REQUIRE(req.prompts.size() == 1);
    CHECK(req.prompts[0].text == "Once upon");
    CHECK_FALSE(req.stream);
    CHECK_FALSE(req.sampling.max_tokens.has_value());
    CHECK(decode_ok(ollama::generate_codec(), R"({"model":"m","prompt":"x","images":["aGk="]})")
              .non_text_content);
}

TEST_CASE("ollama chat: decode the docs request") {
    GenerationRequest req =
        decode_ok(ollama::chat_codec(), ollama_test::fixture("chat_request.json"));
    CHECK(req.dialect == Dialect::ollama_chat);
    CHECK(req.kind == RequestKind::chat);
    CHECK_FALSE(req.stream);
    REQUIRE(req.messages.size() == 1);
    CHECK(req.messages[0].content == "why is the sky blue?");
    CHECK(decode_ok(ollama::chat_codec(),
                    R"({"model":"m","messages":[{"role":"user","content":"a","images":["x"]}]})")
              .non_text_content);
}

TEST_CASE("ollama request decode: every 400 names the field") {
    const auto& gen = ollama::generate_codec();
    const auto& chat = ollama::chat_codec();
    check_400(gen, "{", "", "malformed JSON");
    check_400(gen, "[]", "", "JSON object");
    check_400(gen, R"({"prompt":"x"})", "model", "model is required");
    check_400(gen, R"({"model":3,"prompt":"x"})", "model", "must be");
    check_400(gen, R"({"model":"m"})", "prompt", "does not load models");
    check_400(gen, R"({"model":"m","prompt":""})", "prompt", "does not load models");
    check_400(gen, R"({"model":"m","prompt":"","keep_alive":0})", "prompt", "does not load");
    check_400(gen, R"({"model":"m","prompt":5})", "prompt", "must be");
    check_400(gen, R"({"model":"m","prompt":"x","stream":"yes"})", "stream", "must be");
    check_400(gen, R"({"model":"m","prompt":"x","raw":true,"system":"s"})", "system", "raw");
    check_400(gen, R"({"model":"m","prompt":"x","raw":true,"template":"t"})", "template", "raw");
    check_400(gen, R"({"model":"m","prompt":"x","options":[]})", "options", "must be an object");
    check_400(gen, R"({"model":"m","prompt":"x","options":{"num_predict":-3}})",
              "options.num_predict", "must be");
    check_400(gen, R"({"model":"m","prompt":"x","options":{"temperature":"hot"}})",
              "options.temperature", "must be");
    check_400(gen, R"({"model":"m","prompt":"x","options":{"top_p":2}})", "options.top_p",
              "must be");
    check_400(gen, R"({"model":"m","prompt":"x","options":{"stop":[1]}})", "options.stop[0]",
              "must be a string");
    check_400(gen, R"({"model":"m","prompt":"x","options":{"stop":7}})", "options.stop",
              "array of strings");
    check_400(gen, R"({"model":"m","prompt":"x","top_logprobs":21})", "top_logprobs", "between");
    check_400(chat, R"({"model":"m"})", "messages", "does not load models");
    check_400(chat, R"({"model":"m","messages":[]})", "messages", "does not load models");
    check_400(chat, R"({"model":"m","messages":{}})", "messages", "must be an array");
    check_400(chat, R"({"model":"m","messages":[3]})", "messages[0]", "must be an object");
    check_400(chat, R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role",
              "required");
    check_400(chat, R"({"model":"m","messages":[{"role":"user","content":[]}]})",
              "messages[0].content", "must be");
}

TEST_CASE("ollama upstream: a raw completion goes to /api/generate with raw and a budget") {
    // An OpenAI completions client that names no max_tokens expects 16 tokens.
    auto req = infergate::translators::openai::completions_codec().decode_request(
        R"({"model":"gpt","prompt":"Hello","temperature":0.5,"stop":"\n","seed":3})");
    REQUIRE(req.ok());
    const auto& codec = ollama::generate_codec();
    CHECK(codec.upstream_path(*req) == "/api/generate");
    UpstreamOptions options;
    options.model = "llama3.2:latest";
    auto body = codec.encode_request(*req, options);
    REQUIRE(body.ok());
    CHECK(*body == R"({"model":"llama3.2:latest","prompt":"Hello","raw":true,"stream":false,)"
                   R"("options":{"num_predict":16,"temperature":0.5,"seed":3,"stop":["\n"]}})");
    options.stream = true;
    CHECK(codec.encode_request(*req, options)->find(R"("stream":true)") != std::string::npos);
}

TEST_CASE("ollama upstream: chat goes to /api/chat with string content") {
    auto req = infergate::translators::openai::chat_codec().decode_request(
        R"({"model":"gpt","messages":[{"role":"developer","content":"Be nice."},
            {"role":"user","content":[{"type":"text","text":"Hi"}]}],
            "max_completion_tokens":9,"top_p":0.5,"presence_penalty":1})");
    REQUIRE(req.ok());
    const auto& codec = ollama::generate_codec();  // the route follows the request
    CHECK(codec.upstream_path(*req) == "/api/chat");
    auto body = codec.encode_request(*req, {});
    REQUIRE(body.ok());
    CHECK(*body == R"({"model":"gpt","messages":[{"role":"system","content":"Be nice."},)"
                   R"({"role":"user","content":"Hi"}],"stream":false,)"
                   R"("options":{"num_predict":9,"top_p":0.5,"presence_penalty":1.0}})");
}

TEST_CASE("ollama upstream: same-dialect pass-through keeps the generate shape and extras") {
    auto req = ollama::generate_codec().decode_request(
        R"({"model":"m","prompt":"Why?","system":"S","keep_alive":"5m","format":"json",
            "options":{"num_ctx":4096,"repeat_penalty":1.2}})");
    REQUIRE(req.ok());
    CHECK(ollama::chat_codec().upstream_path(*req) == "/api/generate");
    UpstreamOptions options;
    options.stream = true;
    auto body = ollama::chat_codec().encode_request(*req, options);
    REQUIRE(body.ok());
    CHECK(*body ==
          R"({"model":"m","system":"S","prompt":"Why?","stream":true,)"
          R"("options":{"repeat_penalty":1.2,"num_ctx":4096},"keep_alive":"5m","format":"json"})");
    // Another dialect's extras never reach Ollama.
    auto oa = infergate::translators::openai::chat_codec().decode_request(
        R"({"model":"g","messages":[{"role":"user","content":"x"}],)"
        R"("response_format":{"type":"text"}})");
    REQUIRE(oa.ok());
    CHECK(ollama::chat_codec().encode_request(*oa, {})->find("response_format") ==
          std::string::npos);
}

TEST_CASE("ollama upstream: what cannot be translated is a clear 400") {
    const auto& codec = ollama::generate_codec();
    auto expect_400 = [&](const GenerationRequest& req, std::string_view param,
                          std::string_view words) {
        auto r = codec.encode_request(req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().param == param);
        CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
    };
    GenerationRequest base;
    base.kind = RequestKind::completion;
    base.prompts.push_back({"hi", {}, false});
    REQUIRE(codec.encode_request(base, {}).ok());

    GenerationRequest r = base;
    r.prompts[0] = {"", {1, 2, 3}, true};
    expect_400(r, "prompt", "text only");
    r = base;
    r.prompts.push_back({"second", {}, false});
    expect_400(r, "prompt", "one prompt");
    r = base;
    r.sampling.n = 2;
    expect_400(r, "n", "n > 1");
    r = base;
    r.echo = true;  // the client encoder's: it has the prompt's text
    CHECK(codec.encode_request(r, {}).ok());
    r.return_logprob = true;
    r.prompt_logprob_start = 0;
    expect_400(r, "echo", "the prompt's log probabilities");
    r = base;
    r.dialect = infergate::canonical::Dialect::openai_chat;
    r.return_logprob = true;
    r.top_logprobs = 21;
    expect_400(r, "top_logprobs", "at most 20");
    r = base;
    r.sampling.ignore_eos = true;
    expect_400(r, "ignore_eos", "no equivalent");
    r = base;
    r.sampling.stop_token_ids = {2};
    expect_400(r, "stop_token_ids", "stop strings");
    r = base;
    r.sampling.min_tokens = 4;
    expect_400(r, "min_tokens", "no equivalent");
    r = base;
    r.item_sampling.resize(2);
    r.item_sampling[1].temperature = 0.1;
    expect_400(r, "sampling_params", "differ");
    r = base;
    r.kind = RequestKind::chat;
    r.prompts.clear();
    expect_400(r, "messages", "no messages");
    r.messages.push_back(infergate::canonical::text_message("user", "x"));
    r.non_text_content = true;  // parts other than chat images
    r.untranslated_parts = true;
    expect_400(r, "messages", "non-text");
}
