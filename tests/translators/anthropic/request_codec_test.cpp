// Anthropic requests: client bodies to canonical (decode_request) and canonical to an Anthropic
// backend's body (encode_request).

#include <string>
#include <string_view>

#include "tests/translators/anthropic/test_util.hpp"

namespace {

using anthropic_test::codec;
using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::RequestKind;
using infergate::translators::UpstreamOptions;

GenerationRequest decode_ok(std::string_view body) {
    INFO(body);
    auto r = codec().decode_request(body);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

void check_bad(const std::string& body, std::string_view param) {
    INFO(body);
    auto r = codec().decode_request(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().param == param);
    if (!param.empty()) {
        CHECK(r.error().message.find(param) != std::string::npos);
    }
}

GenerationRequest chat_request(Dialect dialect) {
    GenerationRequest req;
    req.dialect = dialect;
    req.kind = RequestKind::chat;
    req.model = "claude-x";
    return req;
}

std::string encode_ok(const GenerationRequest& req, UpstreamOptions options = {}) {
    auto r = codec().encode_request(req, options);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return r.value();
}

void check_refused(const GenerationRequest& req, std::string_view param) {
    auto r = codec().encode_request(req, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == param);
    CHECK_FALSE(r.error().message.empty());
}

}  // namespace

TEST_CASE("anthropic decode_request: full request") {
    const GenerationRequest req = decode_ok(R"({
        "model": "claude-3-opus-latest", "max_tokens": 1024,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hel"},
                                              {"type": "text", "text": "lo"}]},
            {"role": "user", "content": "Again"}],
        "stop_sequences": ["###", "END"], "temperature": 0.5, "top_p": 0.9, "top_k": 40,
        "stream": true, "metadata": {"user_id": "u1"}})");
    CHECK(req.dialect == Dialect::anthropic);
    CHECK(req.kind == RequestKind::chat);
    CHECK(req.model == "claude-3-opus-latest");
    CHECK(req.sampling.max_tokens == 1024);
    CHECK(req.sampling.temperature == 0.5);
    CHECK(req.sampling.top_p == 0.9);
    CHECK(req.sampling.top_k == 40);
    CHECK(req.sampling.stop == std::vector<std::string>{"###", "END"});
    CHECK(req.stream);
    CHECK_FALSE(req.non_text_content);
    REQUIRE(req.messages.size() == 4);
    CHECK(req.messages[0].role == "system");
    CHECK(req.messages[0].content == "Be brief.");
    CHECK(req.messages[1].role == "user");
    CHECK(req.messages[2].role == "assistant");
    CHECK(req.messages[2].content == "Hello");
    CHECK(req.messages[3].content == "Again");
    REQUIRE(req.extras.size() == 1);
    CHECK(req.extras[0].key == "metadata");
    CHECK(req.extras[0].json == R"({"user_id":"u1"})");
}

TEST_CASE("anthropic decode_request: system blocks and non-text content") {
    const GenerationRequest req = decode_ok(R"({
        "model": "m", "max_tokens": 5,
        "system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}],
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
             "data": "AAAA"}},
            {"type": "text", "text": "What is this?"}]}]})");
    REQUIRE(req.messages.size() == 2);
    CHECK(req.messages[0].content == "AB");
    CHECK(req.messages[1].content == "What is this?");
    CHECK(req.non_text_content);
    CHECK_FALSE(req.stream);
}

TEST_CASE("anthropic decode_request: 400s name the field") {
    const std::string_view msgs = R"("messages":[{"role":"user","content":"x"}])";
    auto body = [&](std::string_view fields) {
        return "{\"model\":\"m\",\"max_tokens\":8," + std::string(fields) + "}";
    };
    check_bad(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", "max_tokens");
    check_bad(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"}]})", "model");
    check_bad(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})",
              "max_tokens");
    check_bad(R"({"model":"m","max_tokens":"8","messages":[]})", "max_tokens");
    check_bad(body(std::string(msgs) + R"(,"temperature":1.5)"), "temperature");
    check_bad(body(std::string(msgs) + R"(,"top_p":2)"), "top_p");
    check_bad(body(std::string(msgs) + R"(,"top_k":-1)"), "top_k");
    check_bad(body(std::string(msgs) + R"(,"stream":"yes")"), "stream");
    check_bad(body(std::string(msgs) + R"(,"stop_sequences":"###")"), "stop_sequences");
    check_bad(body(std::string(msgs) + R"(,"stop_sequences":["a",1])"), "stop_sequences[1]");
    check_bad(body(std::string(msgs) + R"(,"system":5)"), "system");
    check_bad(body(R"("messages":[])"), "messages");
    check_bad(R"({"model":"m","max_tokens":8})", "messages");
    check_bad(body(R"("messages":[{"role":"system","content":"x"}])"), "messages[0].role");
    check_bad(body(R"("messages":["x"])"), "messages[0]");
    check_bad(body(R"("messages":[{"role":"user"}])"), "messages[0].content");
    check_bad(body(R"("messages":[{"role":"user","content":7}])"), "messages[0].content");
    check_bad(body(R"("messages":[{"role":"user","content":[{"text":"x"}]}])"),
              "messages[0].content[0].type");
    check_bad(body(R"("messages":[{"role":"user","content":[{"type":"text","text":1}]}])"),
              "messages[0].content[0].text");
    check_bad("[1]", "");
    check_bad(R"({"model": "m",)", "");
}

TEST_CASE("anthropic encode_request: exact body, system lifted, same-role turns merged") {
    GenerationRequest req = chat_request(Dialect::openai_chat);
    req.messages = {infergate::canonical::text_message("system", "Be brief."),
                    infergate::canonical::text_message("user", "Hi"),
                    infergate::canonical::text_message("user", "there"),
                    infergate::canonical::text_message("assistant", "Hello"),
                    infergate::canonical::text_message("developer", "No emoji."),
                    infergate::canonical::text_message("user", "Again")};
    req.sampling.temperature = 0.5;
    req.sampling.top_k = -1;  // OpenAI-family "off": not sent
    req.sampling.stop = {"###"};
    req.sampling.seed = 7;  // dropped: no equivalent, and harmless
    req.extras.push_back({"user", R"("u")", true});  // another family's, inert: left out
    UpstreamOptions options;
    options.stream = true;
    CHECK(encode_ok(req, options) ==
          R"({"model":"claude-x","max_tokens":4096,"system":"Be brief.\n\nNo emoji.",)"
          R"("messages":[{"role":"user","content":"Hi\n\nthere"},)"
          R"({"role":"assistant","content":"Hello"},{"role":"user","content":"Again"}],)"
          R"("stop_sequences":["###"],"temperature":0.5,"stream":true})");
    // One that changes the answer is refused, never dropped.
    req.extras.push_back({"response_format", R"({"type":"json_object"})"});
    auto refused = codec().encode_request(req, options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().status == 400);
    CHECK(refused.error().param == "response_format");
}

TEST_CASE("anthropic encode_request: max_tokens, model override, same-family extras") {
    GenerationRequest req = chat_request(Dialect::sglang);
    req.messages = {infergate::canonical::text_message("user", "Hi")};
    CHECK(encode_ok(req).find(R"("max_tokens":128,)") != std::string::npos);
    req.sampling.max_tokens = 7;
    req.sampling.top_p = 0.25;
    req.sampling.top_k = 3;
    UpstreamOptions options;
    options.model = "claude-served";
    CHECK(encode_ok(req, options) ==
          R"({"model":"claude-served","max_tokens":7,"messages":[{"role":"user","content":"Hi"}],)"
          R"("top_p":0.25,"top_k":3,"stream":false})");

    GenerationRequest same =
        decode_ok(R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"}],)"
                  R"("metadata":{"user_id":"u"},"stream":true})");
    options = {};
    options.stream = true;
    CHECK(encode_ok(same, options) ==
          R"({"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x"}],)"
          R"("metadata":{"user_id":"u"},"stream":true})");
}

TEST_CASE("anthropic encode_request: what cannot be translated is a 400") {
    GenerationRequest base = chat_request(Dialect::openai_chat);
    base.messages = {infergate::canonical::text_message("user", "Hi")};
    CHECK(codec().encode_request(base, {}).ok());

    GenerationRequest raw = base;
    raw.kind = RequestKind::completion;
    raw.prompts.push_back({"The capital of France is", {}, false});
    check_refused(raw, "prompt");

    GenerationRequest r = base;
    r.sampling.n = 2;
    check_refused(r, "n");
    r = base;
    r.sampling.temperature = 1.5;
    check_refused(r, "temperature");
    r = base;
    r.messages.push_back(infergate::canonical::text_message("function", "42"));
    check_refused(r, "messages");  // (a tool result is a tool_result block: chat_history_test)
    r = base;
    r.messages = {infergate::canonical::text_message("system", "only a system prompt")};
    check_refused(r, "messages");
    r = base;
    r.non_text_content = true;  // parts other than images (audio, files)
    r.untranslated_parts = true;
    check_refused(r, "messages");
    r.dialect = Dialect::anthropic;
    check_refused(r, "messages");
    r = base;
    r.sampling.presence_penalty = 0.5;
    check_refused(r, "presence_penalty");
    r = base;
    r.sampling.presence_penalty = 0;  // the neutral value is fine
    CHECK(codec().encode_request(r, {}).ok());
    r = base;
    r.sampling.ignore_eos = true;
    check_refused(r, "ignore_eos");
    r = base;
    r.sampling.stop_token_ids = {2};
    check_refused(r, "stop_token_ids");
    r = base;
    r.return_logprob = true;
    check_refused(r, "logprobs");
}

TEST_CASE("anthropic upstream_path") {
    CHECK(codec().upstream_path(chat_request(Dialect::openai_chat)) == "/v1/messages");
    CHECK(codec().dialect() == Dialect::anthropic);
}
