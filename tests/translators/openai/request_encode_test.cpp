// translators/openai/request_encode.cpp and request_checks.cpp: the canonical request to an
// OpenAI-compatible backend's body, and what each backend's layer refuses.

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/openai/test_util.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::LogitBias;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::canonical::SamplingParams;
using infergate::translators::Codec;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;
using openai_test::chat;
using openai_test::completions;
using openai_test::decode_ok;
namespace openai = infergate::translators::openai;

std::string encode_ok(const Codec& codec, const GenerationRequest& req,
                      const UpstreamOptions& options) {
    auto r = codec.encode_request(req, options);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return r.value();
}

Prompt text_prompt(std::string text) {
    Prompt p;
    p.text = std::move(text);
    return p;
}

}  // namespace

TEST_SUITE("openai request encode (upstream)") {
    TEST_CASE("routes") {
        GenerationRequest req;
        CHECK(completions().upstream_path(req) == "/v1/completions");
        CHECK(chat().upstream_path(req) == "/v1/chat/completions");
        CHECK(completions().dialect() == Dialect::openai_completions);
        CHECK(chat().dialect() == Dialect::openai_chat);
    }

    TEST_CASE("an SGLang-origin request: 128-token default, seed, ignore_eos, usage opt-in") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.kind = RequestKind::completion;
        req.prompts.push_back(text_prompt("Hello"));
        req.sampling.seed = 42;
        req.sampling.ignore_eos = true;
        req.sampling.temperature = 0.5;
        req.extras.push_back({"log_metrics", "true", true});  // inert: never sent to OpenAI
        UpstreamOptions options{"served-model", Flavor::sglang, true};

        CHECK(encode_ok(completions(), req, options) ==
              R"({"model":"served-model","prompt":"Hello","max_tokens":128,"temperature":0.5,)"
              R"("seed":42,"ignore_eos":true,"stream":true,)"
              R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");

        options.flavor = Flavor::vllm;
        CHECK(
            encode_ok(completions(), req, options)
                .find(R"("stream_options":{"include_usage":true,"continuous_usage_stats":true})") !=
            std::string::npos);

        options.flavor = Flavor::generic;
        CHECK(encode_ok(completions(), req, options)
                  .find(R"("stream":true,"stream_options":{"include_usage":true}})") !=
              std::string::npos);

        options.stream = false;
        const std::string body = encode_ok(completions(), req, options);
        CHECK(body ==
              R"({"model":"served-model","prompt":"Hello","max_tokens":128,"temperature":0.5,)"
              R"("seed":42,"ignore_eos":true})");
        CHECK(body.find("stream") == std::string::npos);

        // An SGLang-only setting that changes the text cannot be dropped: a 400 names it.
        req.extras.push_back({"lora_path", R"("a")"});
        auto refused = completions().encode_request(req, options);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().status == 400);
        CHECK(refused.error().param == "lora_path");
        req.extras.pop_back();
        req.sampling_extras.push_back({"regex", R"("a+")"});
        refused = completions().encode_request(req, options);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().param == "sampling_params.regex");
    }

    TEST_CASE("the client's own max_tokens wins; model falls back to the client's") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.model = "client-model";
        req.prompts.push_back(text_prompt("Hi"));
        req.sampling.max_tokens = 7;
        CHECK(encode_ok(completions(), req, {}) ==
              R"({"model":"client-model","prompt":"Hi","max_tokens":7})");
        req.model.clear();
        CHECK(encode_ok(completions(), req, {}) == R"({"prompt":"Hi","max_tokens":7})");
    }

    TEST_CASE("OpenAI completions default of 16 tokens is made explicit") {
        const auto req = decode_ok(completions(), R"({"model":"m","prompt":"x"})");
        CHECK(encode_ok(completions(), req, {}) == R"({"model":"m","prompt":"x","max_tokens":16})");
    }

    TEST_CASE("every prompt form survives decode then encode") {
        for (std::string_view prompt :
             {R"("x")", R"(["x"])", R"(["a","b"])", R"([1,2])", R"([[1],[2,3]])", R"([[7]])"}) {
            INFO(prompt);
            const std::string body = R"({"prompt":)" + std::string(prompt) + R"(,"max_tokens":1})";
            const auto req = decode_ok(completions(), body);
            CHECK(encode_ok(completions(), req, {}) == body);
        }
    }

    TEST_CASE("every sampling field and extras of an OpenAI completions request") {
        const auto req = decode_ok(completions(), R"({"model":"m","prompt":"x","max_tokens":5,
            "temperature":0.7,"top_p":0.9,"n":2,"stop":"\n","seed":1,"presence_penalty":0.5,
            "frequency_penalty":-0.5,"echo":true,"logprobs":3,"top_k":40,"min_p":0.1,
            "repetition_penalty":1.1,"ignore_eos":false,"min_tokens":2,"stop_token_ids":[2],
            "skip_special_tokens":true,"user":"u","logit_bias":{"1":-100},"stream":true,
            "stream_options":{"include_usage":false}})");
        UpstreamOptions options{"served", Flavor::vllm, true};
        CHECK(encode_ok(completions(), req, options) ==
              R"({"model":"served","prompt":"x","max_tokens":5,"temperature":0.7,"top_p":0.9,)"
              R"("n":2,"stop":["\n"],"seed":1,"presence_penalty":0.5,"frequency_penalty":-0.5,)"
              R"("logit_bias":{"1":-100.0},"echo":true,"logprobs":3,"top_k":40,"min_p":0.1,)"
              R"("repetition_penalty":1.1,"ignore_eos":false,"min_tokens":2,"stop_token_ids":[2],)"
              R"("skip_special_tokens":true,"user":"u","stream":true,)"
              R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
    }

    TEST_CASE("chat: max_completion_tokens for the OpenAI API, max_tokens for every other server") {
        const auto req = decode_ok(chat(), R"({"model":"m","messages":[
            {"role":"system","content":"s"},{"role":"user","content":"u","name":"n"}],
            "max_completion_tokens":9,"logprobs":true,"top_logprobs":2,"tool_choice":"none"})");
        const std::string head = R"({"model":"m","messages":[{"role":"system","content":"s"},)"
                                 R"({"role":"user","content":"u","name":"n"}],)";
        CHECK(encode_ok(chat(), req, {"", Flavor::vllm, false}) ==
              head + R"("max_tokens":9,"logprobs":true,"top_logprobs":2,"tool_choice":"none"})");
        CHECK(encode_ok(chat(), req, {"", Flavor::sglang, false}).find(R"("max_tokens":9)") !=
              std::string::npos);
        CHECK(encode_ok(chat(), req, {"", Flavor::openai, false}) ==
              head + R"("max_completion_tokens":9,"logprobs":true,"top_logprobs":2,)"
                     R"("tool_choice":"none"})");
        // llama-server before 2026 reads max_tokens only (it ran 4,079 tokens for a budget of 16
        // sent as max_completion_tokens); TGI refuses the two names together; a server that is
        // not known may be either kind: the one name they all read.
        for (const Flavor f : {Flavor::llamacpp, Flavor::tgi, Flavor::generic}) {
            const std::string body = encode_ok(chat(), req, {"", f, false});
            CHECK(body.find(R"("max_tokens":9)") != std::string::npos);
            CHECK(body.find("max_completion_tokens") == std::string::npos);
        }
    }

    TEST_CASE("chat without a budget leaves it to the backend (the model maximum)") {
        const auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"u"}]})");
        CHECK(encode_ok(chat(), req, {"m", Flavor::generic, false}) ==
              R"({"model":"m","messages":[{"role":"user","content":"u"}]})");
    }

    TEST_CASE("chat cannot go to a completions route, nor a raw prompt to a chat route") {
        const auto chat_req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"u"}]})");
        auto r = completions().encode_request(chat_req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().message.find("chat") != std::string::npos);

        const auto raw_req = decode_ok(completions(), R"({"prompt":"x"})");
        r = chat().encode_request(raw_req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().message.find("raw prompt cannot be sent to a chat route faithfully") !=
              std::string::npos);
    }

    TEST_CASE("non-text content is refused only when translating") {
        auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":[
            {"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]})");
        CHECK(chat().encode_request(req, {}).ok());
        req.dialect = Dialect::sglang;  // as if another dialect produced it
        auto r = chat().encode_request(req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "messages");
    }

    TEST_CASE("per-item sampling: one shared set is sent, differing sets are refused") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {text_prompt("a"), text_prompt("b")};
        req.prompt_is_list = true;
        SamplingParams item;
        item.max_tokens = 3;
        item.temperature = 0.0;
        req.item_sampling = {item, item};
        CHECK(encode_ok(completions(), req, {}) ==
              R"({"prompt":["a","b"],"max_tokens":3,"temperature":0.0})");

        req.item_sampling[1].temperature = 1.0;
        auto r = completions().encode_request(req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().message ==
              "per-item sampling_params differ; an OpenAI backend takes one set per request — "
              "send one sampling_params object");
    }

    TEST_CASE("token and text prompts cannot share one OpenAI request") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {text_prompt("a"), Prompt{{}, {1, 2}, true}};
        auto r = completions().encode_request(req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "prompt");
        req.prompts.clear();
        CHECK_FALSE(completions().encode_request(req, {}).ok());
    }

    TEST_CASE("SGLang logprob settings become completions logprobs") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {text_prompt("a")};
        req.return_logprob = true;
        req.top_logprobs = 4;
        CHECK(encode_ok(completions(), req, {}) ==
              R"({"prompt":"a","max_tokens":128,"logprobs":4})");
        // Alternatives alone still ask (canonical::wants_logprobs); nothing asked, nothing sent.
        req.return_logprob = false;
        req.top_logprobs.reset();
        CHECK(encode_ok(completions(), req, {}) == R"({"prompt":"a","max_tokens":128})");
    }
}
