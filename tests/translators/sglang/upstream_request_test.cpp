// translators/sglang/upstream_request.cpp: writing /generate bodies for a real SGLang server.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "translators/sglang/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::canonical::SamplingParams;
using infergate::translators::UpstreamOptions;

const infergate::translators::Codec& sglang() { return infergate::translators::sglang::codec(); }

GenerationRequest decode_ok(std::string_view body) {
    auto r = sglang().decode_request(body);
    INFO(std::string(body));
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

std::string encode_ok(const GenerationRequest& req, bool stream = false) {
    UpstreamOptions options;
    options.stream = stream;
    options.model = "served-model";
    auto r = sglang().encode_request(req, options);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

GenerationRequest openai_completion(std::string prompt) {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    req.kind = RequestKind::completion;
    req.model = "qwen2.5";
    req.prompts.push_back(Prompt{std::move(prompt), {}, false});
    return req;
}

}  // namespace

TEST_CASE("sglang encode_request: an OpenAI-completions request made explicit for SGLang") {
    GenerationRequest req = openai_completion("Say hi");
    req.sampling.seed = 42;
    req.sampling.temperature = 0.5;
    // No max_tokens: the OpenAI default (16) must be written, SGLang's own is 128.
    CHECK(encode_ok(req) ==
          R"({"text":"Say hi","sampling_params":{"max_new_tokens":16,"temperature":0.5,)"
          R"("sampling_seed":42},"stream":false})");

    req.sampling.max_tokens = 5;
    req.stream = true;
    const std::string body = encode_ok(req, /*stream=*/true);
    CHECK(body == R"({"text":"Say hi","sampling_params":{"max_new_tokens":5,"temperature":0.5,)"
                  R"("sampling_seed":42},"stream":true})");
    CHECK(body.find("model") == std::string::npos);
    CHECK(body.find("\"seed\"") == std::string::npos);
}

TEST_CASE("sglang encode_request: every sampling key, batches and token prompts") {
    GenerationRequest req = openai_completion("a");
    req.prompts.push_back(Prompt{"b", {}, false});
    req.prompt_is_list = true;
    SamplingParams& sp = req.sampling;
    sp.max_tokens = 0;
    sp.min_tokens = 1;
    sp.temperature = 1.25;
    sp.top_p = 0.5;
    sp.top_k = 0;  // "off" for vLLM-style clients; SGLang spells it -1
    sp.min_p = 0.1;
    sp.frequency_penalty = 0.25;
    sp.presence_penalty = -0.25;
    sp.repetition_penalty = 1.5;
    sp.seed = 7;
    sp.ignore_eos = false;
    sp.skip_special_tokens = true;
    sp.stop = {"\n", "END"};
    sp.stop_token_ids = {2};
    sp.n = 3;
    req.return_logprob = true;
    req.top_logprobs = 2;
    sp.logit_bias = {{50256, -100}, {7, 2.5}};
    req.sampling_extras = {{"json_schema", R"({"type":"object"})"}};  // another client's:
    req.sampling_extras[0].inert = true;  // inert here, so it is not sent
    req.extras = {{"user", R"("x")", true}};
    CHECK(encode_ok(req) ==
          R"({"text":["a","b"],"sampling_params":{"max_new_tokens":0,"min_new_tokens":1,)"
          R"("temperature":1.25,"top_p":0.5,"top_k":-1,"min_p":0.1,"frequency_penalty":0.25,)"
          R"("presence_penalty":-0.25,"repetition_penalty":1.5,"sampling_seed":7,)"
          R"("ignore_eos":false,"skip_special_tokens":true,"stop":["\n","END"],)"
          R"("stop_token_ids":[2],"n":3,"logit_bias":{"50256":-100.0,"7":2.5}},)"
          R"("stream":false,"return_logprob":true,"top_logprobs_num":2,)"
          R"("return_text_in_logprobs":true})");
    // Another client's setting that SGLang cannot take is refused, never dropped.
    req.extras = {{"best_of", "2"}};
    auto refused = sglang().encode_request(req, UpstreamOptions{});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().status == 400);
    CHECK(refused.error().param == "best_of");
    req.extras.clear();
    req.sampling_extras[0].inert = false;
    refused = sglang().encode_request(req, UpstreamOptions{});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().param == "json_schema");  // an OpenAI client's: no prefix
}

TEST_CASE("sglang encode_request: an SGLang client passes through unchanged in meaning") {
    const GenerationRequest req = decode_ok(
        R"({"text": "The capital of France is", "model": "ignored-by-sglang",
            "sampling_params": {"temperature": 0, "max_new_tokens": 32, "regex": "[A-Z]+",
                                "stop": "."},
            "stream": true, "rid": "abc", "lora_path": "adapter", "logprob_start_len": -1,
            "return_logprob": [false]})");
    CHECK(req.model == "ignored-by-sglang");
    CHECK(encode_ok(req, /*stream=*/true) ==
          R"({"text":"The capital of France is","sampling_params":{"max_new_tokens":32,)"
          R"("temperature":0.0,"stop":["."],"regex":"[A-Z]+"},"stream":true,"rid":"abc",)"
          R"("lora_path":"adapter","logprob_start_len":-1,"return_logprob":[false]})");
    // The proxy may turn streaming off upstream regardless of what the client asked.
    CHECK(encode_ok(req, /*stream=*/false).find(R"("stream":false)") != std::string::npos);

    const GenerationRequest batch =
        decode_ok(R"({"text": ["a", "b"], "rid": ["r1", "r2"]})");
    CHECK(encode_ok(batch) ==
          R"({"text":["a","b"],"sampling_params":{},"stream":false,"rid":["r1","r2"]})");
}

TEST_CASE("sglang encode_request: what SGLang's /generate cannot do is a 400") {
    UpstreamOptions options;
    GenerationRequest chat;
    chat.dialect = Dialect::openai_chat;
    chat.kind = RequestKind::chat;
    chat.messages.push_back(infergate::canonical::text_message("user", "hi"));
    auto r = sglang().encode_request(chat, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().message.find("/v1/chat/completions") != std::string::npos);

    GenerationRequest mixed = openai_completion("x");
    mixed.prompts.push_back(Prompt{{}, {1}, true});
    r = sglang().encode_request(mixed, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("mix") != std::string::npos);

    GenerationRequest empty = openai_completion("x");
    empty.prompts.clear();
    r = sglang().encode_request(empty, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);

    GenerationRequest uneven = openai_completion("x");
    uneven.item_sampling.resize(2);
    r = sglang().encode_request(uneven, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "sampling_params");
}
