// translators/llamacpp/request_decode.cpp and request_encode.cpp: decoding /completion bodies and
// writing them upstream.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "tests/translators/llamacpp/test_util.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::translators::UpstreamOptions;
using llamacpp_test::llama;

GenerationRequest decode_ok(std::string_view body) {
    auto r = llama().decode_request(body);
    INFO(std::string(body));
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

std::string encode_ok(const GenerationRequest& req, UpstreamOptions opts = {}) {
    auto r = llama().encode_request(req, opts);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return r.value();
}

GenerationRequest text_request(Dialect d, std::string text) {
    GenerationRequest req;
    req.dialect = d;
    Prompt p;
    p.text = std::move(text);
    req.prompts.push_back(p);
    return req;
}

}  // namespace

TEST_CASE("llamacpp decode_request: a string prompt with every modelled field") {
    const GenerationRequest req = decode_ok(
        R"({"prompt": "Building a website can be done in 10 simple steps:", "n_predict": 128,)"
        R"( "max_tokens": 5, "temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05,)"
        R"( "stop": ["\n", "", "###"], "seed": 42, "repeat_penalty": 1.1, "presence_penalty": 0.5,)"
        R"( "frequency_penalty": 0.25, "n_probs": 3, "stream": true, "cache_prompt": false,)"
        R"( "ignore_eos": true, "model": "m", "grammar": "root ::= \"a\""})");
    CHECK(req.dialect == Dialect::llamacpp);
    CHECK(req.kind == RequestKind::completion);
    REQUIRE(req.prompts.size() == 1);
    CHECK_FALSE(req.prompt_is_list);
    CHECK(req.prompts[0].text == "Building a website can be done in 10 simple steps:");
    CHECK_FALSE(req.prompts[0].is_tokens);
    CHECK(req.sampling.max_tokens == 128);  // n_predict wins over its alias
    CHECK(req.sampling.temperature == 0.7);
    CHECK(req.sampling.top_k == 40);
    CHECK(req.sampling.top_p == 0.9);
    CHECK(req.sampling.min_p == 0.05);
    CHECK(req.sampling.stop == std::vector<std::string>{"\n", "###"});  // empty strings dropped
    CHECK(req.sampling.seed == 42);
    CHECK(req.sampling.repetition_penalty == 1.1);
    CHECK(req.sampling.presence_penalty == 0.5);
    CHECK(req.sampling.frequency_penalty == 0.25);
    CHECK(req.sampling.ignore_eos == true);
    CHECK(req.top_logprobs == 3);
    CHECK(req.stream);
    CHECK(req.model == "m");
    REQUIRE(req.extras.size() == 2);
    CHECK(req.extras[0].key == "cache_prompt");
    CHECK(req.extras[0].json == "false");
    CHECK(req.extras[1].key == "grammar");
    CHECK(req.extras[1].json == R"("root ::= \"a\"")");
}

TEST_CASE("llamacpp decode_request: defaults, aliases and the -1 sentinels") {
    GenerationRequest req = decode_ok(R"({"prompt": "x"})");
    CHECK_FALSE(req.sampling.max_tokens);  // -1: until EOS
    CHECK_FALSE(req.stream);
    CHECK(req.sampling.n == 1);
    CHECK(req.extras.empty());

    req = decode_ok(R"({"prompt": "x", "max_tokens": 7, "seed": -1, "logprobs": 2})");
    CHECK(req.sampling.max_tokens == 7);
    CHECK_FALSE(req.sampling.seed);
    CHECK(req.top_logprobs == 2);

    req = decode_ok(R"({"prompt": "x", "n_predict": -1, "max_tokens": 9, "n_cmpl": 3})");
    CHECK_FALSE(req.sampling.max_tokens);
    CHECK(req.sampling.n == 3);
}

TEST_CASE("llamacpp decode_request: string stop is taken as a list of one (documented)") {
    CHECK(decode_ok(R"({"prompt": "x", "stop": "END"})").sampling.stop ==
          std::vector<std::string>{"END"});
    CHECK(decode_ok(R"({"prompt": "x", "stop": ""})").sampling.stop.empty());
}

TEST_CASE("llamacpp decode_request: prompt shapes") {
    GenerationRequest req = decode_ok(R"({"prompt": [12, 34, 56]})");
    REQUIRE(req.prompts.size() == 1);
    CHECK_FALSE(req.prompt_is_list);
    CHECK(req.prompts[0].is_tokens);
    CHECK(req.prompts[0].token_ids == std::vector<int64_t>{12, 34, 56});

    req = decode_ok(R"({"prompt": ["a", [1, 2], "b"]})");
    CHECK(req.prompt_is_list);
    REQUIRE(req.prompts.size() == 3);
    CHECK(req.prompts[0].text == "a");
    CHECK(req.prompts[1].token_ids == std::vector<int64_t>{1, 2});
    CHECK(req.prompts[2].text == "b");

    req = decode_ok(R"({"prompt": ["only"]})");
    CHECK(req.prompt_is_list);
    CHECK(req.prompts.size() == 1);
}

TEST_CASE("llamacpp decode_request: every 400 names its field") {
    struct Case {
        const char* body;
        const char* param;
        const char* fragment;
    };
    const Case cases[] = {
        {R"({"prompt": )", "", "malformed JSON"},
        {R"(["x"])", "", "JSON object"},
        {R"({})", "prompt", "required"},
        {R"({"prompt": null})", "prompt", "required"},
        {R"({"prompt": []})", "prompt", "empty"},
        {R"({"prompt": 5})", "prompt", "string or an array"},
        {R"({"prompt": [12, "text", 56]})", "prompt", "not both"},
        {R"({"prompt": ["a", [1, "b"]]})", "prompt[1]", "not both"},
        {R"({"prompt": [{"prompt_string": "a", "multimodal_data": []}]})", "prompt[0]",
         "multimodal"},
        {R"({"prompt": ["a", true]})", "prompt[1]", "string or an array"},
        {R"({"prompt": "x", "stop": 5})", "stop", "array of strings"},
        {R"({"prompt": "x", "stop": ["a", 1]})", "stop[1]", "must be a string"},
        {R"({"prompt": "x", "temperature": "hot"})", "temperature", ""},
        {R"({"prompt": "x", "n_predict": -2})", "n_predict", ""},
        {R"({"prompt": "x", "max_tokens": "many"})", "max_tokens", ""},
        {R"({"prompt": "x", "top_p": 2})", "top_p", ""},
        {R"({"prompt": "x", "min_p": -1})", "min_p", ""},
        {R"({"prompt": "x", "top_k": 1.5})", "top_k", ""},
        {R"({"prompt": "x", "seed": "s"})", "seed", ""},
        {R"({"prompt": "x", "repeat_penalty": []})", "repeat_penalty", ""},
        {R"({"prompt": "x", "n_probs": -1})", "n_probs", ""},
        {R"({"prompt": "x", "ignore_eos": 1})", "ignore_eos", ""},
        {R"({"prompt": "x", "stream": "yes"})", "stream", ""},
        {R"({"prompt": "x", "model": 5})", "model", ""},
        {R"({"prompt": "x", "n_cmpl": 0})", "n_cmpl", ""},
    };
    for (const Case& c : cases) {
        INFO(c.body);
        auto r = llama().decode_request(c.body);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().type == "invalid_request_error");
        CHECK(r.error().param == c.param);
        CHECK(r.error().message.find(c.fragment) != std::string::npos);
    }
}

TEST_CASE("llamacpp encode_request: exact bytes for a llama.cpp client's request") {
    const GenerationRequest req = decode_ok(
        R"({"prompt": "Hi", "n_predict": 8, "temperature": 0.5, "top_k": 3, "top_p": 0.75,)"
        R"( "min_p": 0.125, "seed": 7, "repeat_penalty": 1.5, "presence_penalty": 0.25,)"
        R"( "frequency_penalty": 0.5, "ignore_eos": false, "stop": "END", "n_probs": 2,)"
        R"( "cache_prompt": true, "stream": true})");
    UpstreamOptions opts;
    opts.stream = true;
    CHECK(encode_ok(req, opts) ==
          R"({"prompt":"Hi","n_predict":8,"temperature":0.5,"top_k":3,"top_p":0.75,)"
          R"("min_p":0.125,"seed":7,"repeat_penalty":1.5,"presence_penalty":0.25,)"
          R"("frequency_penalty":0.5,"ignore_eos":false,"stop":["END"],"n_probs":2,)"
          R"("stream":true,"cache_prompt":true})");
    CHECK(llama().upstream_path(req) == "/completion");
}

TEST_CASE("llamacpp encode_request: n_predict from the client dialect's default") {
    // OpenAI completions default 16, SGLang 128; OpenAI chat and llama.cpp say "unlimited" (-1).
    CHECK(encode_ok(text_request(Dialect::openai_completions, "a")) ==
          R"({"prompt":"a","n_predict":16,"stream":false})");
    CHECK(encode_ok(text_request(Dialect::sglang, "a")) ==
          R"({"prompt":"a","n_predict":128,"stream":false})");
    CHECK(encode_ok(text_request(Dialect::llamacpp, "a")) ==
          R"({"prompt":"a","n_predict":-1,"stream":false})");
}

TEST_CASE("llamacpp encode_request: other dialects' requests") {
    GenerationRequest req = text_request(Dialect::openai_completions, "a");
    req.model = "gpt-x";
    req.sampling.max_tokens = 4;
    req.sampling.repetition_penalty = 1.25;
    req.sampling.stop = {"x", "y"};
    req.extras.push_back({"user", R"("u")", true});  // another family's, inert: not forwarded
    Prompt ids;
    ids.is_tokens = true;
    ids.token_ids = {1, 2};
    req.prompts.push_back(ids);
    UpstreamOptions opts;
    opts.model = "local";
    CHECK(encode_ok(req, opts) ==
          R"({"prompt":["a",[1,2]],"model":"local","n_predict":4,"repeat_penalty":1.25,)"
          R"("stop":["x","y"],"stream":false})");

    req = text_request(Dialect::sglang, "z");
    req.prompt_is_list = true;
    req.model = "m";
    req.item_sampling = {req.sampling, req.sampling};  // all alike: fine
    // A list of one is that prompt: llama-server answers it as it answers a single prompt.
    CHECK(encode_ok(req) == R"({"prompt":"z","model":"m","n_predict":128,"stream":false})");

    // Structured output is translated (json_schema); another family's unknown key is refused.
    req = text_request(Dialect::openai_completions, "a");
    req.extras.push_back({"response_format", R"({"type":"json_object"})"});
    CHECK(encode_ok(req) == R"({"prompt":"a","n_predict":16,"json_schema":{"type":"object"},)"
                            R"("stream":false})");
    req.extras.push_back({"best_of", "2"});
    auto refused = llama().encode_request(req, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().param == "best_of");
}

TEST_CASE("llamacpp encode_request: what cannot be translated is a clear 400") {
    auto refused = [](const GenerationRequest& req, const char* fragment) {
        auto r = llama().encode_request(req, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().message.find(fragment) != std::string::npos);
    };
    GenerationRequest req = text_request(Dialect::openai_chat, "");
    req.kind = RequestKind::chat;
    refused(req, "/v1/chat/completions");

    req = text_request(Dialect::openai_completions, "a");
    req.sampling.n = 2;
    refused(req, "n > 1");

    req = text_request(Dialect::sglang, "a");
    req.item_sampling.resize(2);
    req.item_sampling[1].temperature = 0.1;
    refused(req, "one set of sampling parameters");

    // An echo is the client encoder's (it has the prompt's text); the prompt's logprobs, which
    // an echo with logprobs asks for, llama-server does not report.
    req = text_request(Dialect::openai_completions, "a");
    req.echo = true;
    CHECK(llama().encode_request(req, {}).ok());
    req.return_logprob = true;
    req.top_logprobs = 1;
    req.prompt_logprob_start = 0;
    refused(req, "the prompt's log probabilities");
    CHECK(llama().encode_request(req, {}).error().param == "echo");
    req = text_request(Dialect::sglang, "a");
    req.return_logprob = true;
    req.prompt_logprob_start = 3;
    CHECK(llama().encode_request(req, {}).error().param == "logprob_start_len");
    // A token-id prompt has no text to echo.
    req = text_request(Dialect::openai_completions, "");
    req.prompts[0] = {"", {1, 2}, true};
    req.echo = true;
    refused(req, "send the prompt as text");

    req = text_request(Dialect::sglang, "a");
    req.sampling.stop_token_ids = {2};
    refused(req, "stop_token_ids");

    req = text_request(Dialect::sglang, "a");
    req.sampling.min_tokens = 3;
    refused(req, "'sampling_params.min_new_tokens'");  // named as the SGLang client wrote it

    req = text_request(Dialect::sglang, "a");
    req.sampling.keep_stop_str = true;
    refused(req, "stop string");

    req = text_request(Dialect::sglang, "a");
    req.prompts.clear();
    refused(req, "no prompt");
}
