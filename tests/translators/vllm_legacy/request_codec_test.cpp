// translators/vllm_legacy/request_codec.cpp: client bodies in, upstream bodies out.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/vllm_legacy/test_util.hpp"
#include "translators/sglang/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::translators::UpstreamOptions;
using vllm_legacy_test::codec;
using vllm_legacy_test::fixture;

void check_400(const std::string& body, const std::string& param, const std::string& words) {
    auto r = codec().decode_request(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == param);
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
}

GenerationRequest text_request(Dialect d, std::string prompt) {
    GenerationRequest req;
    req.dialect = d;
    Prompt p;
    p.text = std::move(prompt);
    req.prompts.push_back(std::move(p));
    return req;
}

}  // namespace

TEST_CASE("vllm_legacy decodes the example client's request") {
    auto r = codec().decode_request(fixture("api_client_request.json"));
    REQUIRE(r.ok());
    CHECK(r->dialect == Dialect::vllm_legacy);
    CHECK(r->kind == RequestKind::completion);
    REQUIRE(r->prompts.size() == 1);
    CHECK(r->prompts[0].text == "San Francisco is a");
    CHECK_FALSE(r->prompt_is_list);
    CHECK(r->sampling.n == 4);
    CHECK(r->sampling.temperature == 0.0);
    CHECK(r->sampling.max_tokens == 16);
    CHECK_FALSE(r->stream);
    REQUIRE(r->extras.size() == 1);
    CHECK(r->extras[0].key == "use_beam_search");
    CHECK(r->extras[0].json == "true");
}

TEST_CASE("vllm_legacy decodes every top-level sampling key") {
    auto r = codec().decode_request(
        R"({"prompt":"hi","stream":true,"n":2,"max_tokens":5,"temperature":0.7,"top_p":0.9,)"
        R"("top_k":-1,"min_p":0.05,"seed":7,"stop":"\n","stop_token_ids":[2,3],"ignore_eos":true,)"
        R"("presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,)"
        R"("min_tokens":1,"skip_special_tokens":false,"include_stop_str_in_output":true,)"
        R"("logprobs":3})");
    REQUIRE(r.ok());
    const auto& sp = r->sampling;
    CHECK(r->stream);
    CHECK(sp.n == 2);
    CHECK(sp.max_tokens == 5);
    CHECK(sp.temperature == 0.7);
    CHECK(sp.top_p == 0.9);
    CHECK(sp.top_k == -1);
    CHECK(sp.min_p == 0.05);
    CHECK(sp.seed == 7);
    CHECK(sp.stop == std::vector<std::string>{"\n"});
    CHECK(sp.stop_token_ids == std::vector<int64_t>{2, 3});
    CHECK(sp.ignore_eos == true);
    CHECK(sp.presence_penalty == 0.5);
    CHECK(sp.frequency_penalty == -0.5);
    CHECK(sp.repetition_penalty == 1.1);
    CHECK(sp.min_tokens == 1);
    CHECK(sp.skip_special_tokens == false);
    CHECK(sp.keep_stop_str == true);
    REQUIRE(r->extras.size() == 1);
    CHECK(r->extras[0].key == "logprobs");
    // No max_tokens: the canonical request says "not given"; encoders use 16 for this dialect.
    auto d = codec().decode_request(R"({"prompt":"x","stop":["a","b"]})");
    REQUIRE(d.ok());
    CHECK_FALSE(d->sampling.max_tokens);
    CHECK(d->sampling.stop == std::vector<std::string>{"a", "b"});
}

TEST_CASE("vllm_legacy client request errors are 400s naming the field") {
    check_400("{", "", "malformed JSON");
    check_400("[1]", "", "JSON object");
    check_400(R"({"max_tokens":3})", "prompt", "required");
    check_400(R"({"prompt":null})", "prompt", "required");
    check_400(R"({"prompt":["a","b"]})", "prompt", "one string");
    check_400(R"({"prompt":[1,2,3]})", "prompt", "token-id");
    check_400(R"({"prompt":"a","stream":"yes"})", "stream", "");
    check_400(R"({"prompt":"a","n":0})", "n", "");
    check_400(R"({"prompt":"a","max_tokens":"16"})", "max_tokens", "");
    check_400(R"({"prompt":"a","temperature":-1})", "temperature", "");
    check_400(R"({"prompt":"a","top_p":1.5})", "top_p", "");
    check_400(R"({"prompt":"a","stop":5})", "stop", "string or a list");
    check_400(R"({"prompt":"a","stop":["x",1]})", "stop", "list of strings");
    check_400(R"({"prompt":"a","stop_token_ids":"2"})", "stop_token_ids", "list of token ids");
    check_400(R"({"prompt":"a","stop_token_ids":[-1]})", "stop_token_ids", "non-negative");
    check_400(R"({"prompt":"a","bogus":1})", "bogus", "unknown key 'bogus'");
    check_400(R"({"prompt":"a","sampling_params":{}})", "sampling_params", "unknown key");
}

TEST_CASE("vllm_legacy upstream request: exact bytes, explicit defaults") {
    CHECK(codec().upstream_path(GenerationRequest{}) == "/generate");
    // An OpenAI completions client that named no max_tokens expects 16.
    auto req = text_request(Dialect::openai_completions, "Say \"hi\"");
    req.sampling.temperature = 0.5;
    req.sampling.stop = {"\n"};
    UpstreamOptions opt;
    opt.stream = true;
    opt.model = "served-model";  // the legacy server has no model field
    auto body = codec().encode_request(req, opt);
    REQUIRE(body.ok());
    CHECK(*body ==
          R"({"prompt":"Say \"hi\"","stream":true,"n":1,"max_tokens":16,"temperature":0.5,)"
          R"("stop":["\n"]})");

    // A client whose default is "until the context is full" gets null: vLLM's meaning of it.
    auto chat_default = text_request(Dialect::llamacpp, "x");
    body = codec().encode_request(chat_default, UpstreamOptions{});
    REQUIRE(body.ok());
    CHECK(*body == R"({"prompt":"x","stream":false,"n":1,"max_tokens":null})");

    // SGLang's default is 128.
    body = codec().encode_request(text_request(Dialect::sglang, "x"), UpstreamOptions{});
    REQUIRE(body.ok());
    CHECK(body->find(R"("max_tokens":128)") != std::string::npos);
}

TEST_CASE("vllm_legacy same-dialect request round trip keeps every key") {
    const std::string in =
        R"({"prompt":"p","stream":true,"n":2,"max_tokens":5,"temperature":0.7,"top_p":0.9,)"
        R"("top_k":3,"min_p":0.05,"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,)"
        R"("repetition_penalty":1.1,"min_tokens":1,"ignore_eos":true,"skip_special_tokens":false,)"
        R"("include_stop_str_in_output":true,"stop":["a"],"stop_token_ids":[2],)"
        R"("use_beam_search":false,"logprobs":3})";
    auto req = codec().decode_request(in);
    REQUIRE(req.ok());
    UpstreamOptions opt;
    opt.stream = true;
    auto out = codec().encode_request(*req, opt);
    REQUIRE(out.ok());
    CHECK(*out == in);
    auto again = codec().decode_request(*out);
    REQUIRE(again.ok());
    CHECK(again->sampling == req->sampling);
}

TEST_CASE("vllm_legacy upstream refuses what it cannot carry with a 400") {
    auto expect_400 = [](const GenerationRequest& req, const std::string& param,
                         const std::string& words) {
        auto r = codec().encode_request(req, UpstreamOptions{});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().param == param);
        CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
    };
    GenerationRequest chat;
    chat.dialect = Dialect::openai_chat;
    chat.kind = RequestKind::chat;
    expect_400(chat, "messages", "chat");

    GenerationRequest none;
    expect_400(none, "prompt", "needs a text prompt");

    auto batch = text_request(Dialect::openai_completions, "a");
    batch.prompts.push_back(batch.prompts[0]);
    batch.prompt_is_list = true;
    expect_400(batch, "prompt", "one prompt per request");

    GenerationRequest tokens;
    tokens.dialect = Dialect::openai_completions;
    Prompt p;
    p.is_tokens = true;
    p.token_ids = {1, 2, 3};
    tokens.prompts.push_back(p);
    expect_400(tokens, "prompt", "text prompts only");

    auto lp = text_request(Dialect::openai_completions, "a");
    lp.top_logprobs = 2;
    expect_400(lp, "logprobs", "logprobs");

    // Extras of another dialect never reach the vLLM server: inert ones are left out, the
    // others refused.
    auto sg = infergate::translators::sglang::codec().decode_request(
        R"({"text":"a","log_metrics":false,"sampling_params":{"max_new_tokens":4}})");
    REQUIRE(sg.ok());
    auto body = codec().encode_request(*sg, UpstreamOptions{});
    REQUIRE(body.ok());
    CHECK(*body == R"({"prompt":"a","stream":false,"n":1,"max_tokens":4})");
    sg = infergate::translators::sglang::codec().decode_request(
        R"({"text":"a","lora_path":"x","sampling_params":{"max_new_tokens":4}})");
    REQUIRE(sg.ok());
    expect_400(*sg, "lora_path", "lora_path");
}
