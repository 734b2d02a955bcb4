// translators/openai/request_decode.cpp and sampling_decode.cpp: OpenAI client bodies to the
// canonical request, and the 400 for every field that is wrong.

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

struct BadCase {
    std::string_view body;
    std::string_view param;  // also required to appear in the message
};

void check_bad(const Codec& codec, const BadCase& c) {
    INFO(c.body);
    auto r = codec.decode_request(c.body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().param == c.param);
    INFO(r.error().message);
    CHECK(r.error().message.find(c.param) != std::string::npos);
}

std::string extra(const GenerationRequest& req, std::string_view key) {
    for (const auto& e : req.extras) {
        if (e.key == key) {
            return e.json;
        }
    }
    return "<absent>";
}

}  // namespace

TEST_SUITE("openai request decode: completions") {
    TEST_CASE("string prompt, model, dialect and kind") {
        const auto req = decode_ok(completions(), R"({"model":"m1","prompt":"Hello"})");
        CHECK(req.dialect == Dialect::openai_completions);
        CHECK(req.kind == RequestKind::completion);
        CHECK(req.model == "m1");
        REQUIRE(req.prompts.size() == 1);
        CHECK(req.prompts[0].text == "Hello");
        CHECK_FALSE(req.prompts[0].is_tokens);
        CHECK_FALSE(req.prompt_is_list);
        CHECK(req.extras.empty());
        CHECK(req.sampling == SamplingParams{});
        CHECK_FALSE(req.stream);
    }

    TEST_CASE("model absent is empty; empty string prompt is allowed") {
        const auto req = decode_ok(completions(), R"({"prompt":""})");
        CHECK(req.model.empty());
        REQUIRE(req.prompts.size() == 1);
        CHECK(req.prompts[0].text.empty());
    }

    TEST_CASE("list of strings is a batch, even with one element") {
        auto req = decode_ok(completions(), R"({"prompt":["only"]})");
        CHECK(req.prompt_is_list);
        REQUIRE(req.prompts.size() == 1);
        CHECK(req.prompts[0].text == "only");

        req = decode_ok(completions(), R"({"prompt":["a","b"]})");
        CHECK(req.prompt_is_list);
        REQUIRE(req.prompts.size() == 2);
        CHECK(req.prompts[1].text == "b");
    }

    TEST_CASE("a single token list is ONE prompt") {
        const auto req = decode_ok(completions(), R"({"prompt":[1,2,3]})");
        CHECK_FALSE(req.prompt_is_list);
        REQUIRE(req.prompts.size() == 1);
        CHECK(req.prompts[0].is_tokens);
        CHECK(req.prompts[0].token_ids == std::vector<int64_t>{1, 2, 3});
    }

    TEST_CASE("a list of token lists is a batch") {
        const auto req = decode_ok(completions(), R"({"prompt":[[1],[2,3]]})");
        CHECK(req.prompt_is_list);
        REQUIRE(req.prompts.size() == 2);
        CHECK(req.prompts[0].is_tokens);
        CHECK(req.prompts[1].token_ids == std::vector<int64_t>{2, 3});
    }

    TEST_CASE("every sampling field") {
        const auto req = decode_ok(completions(), R"({
            "prompt": "x", "max_tokens": 0, "temperature": 0.7, "top_p": 0.9, "n": 3,
            "stop": "\n", "seed": -5, "presence_penalty": -2, "frequency_penalty": 1.5,
            "echo": true, "logprobs": 2, "top_k": -1, "min_p": 0.05, "repetition_penalty": 2,
            "ignore_eos": true, "min_tokens": 4, "stop_token_ids": [2, 128009],
            "skip_special_tokens": false, "stream": true,
            "stream_options": {"include_usage": true, "continuous_usage_stats": true}})");
        const SamplingParams& s = req.sampling;
        CHECK(s.max_tokens == 0);
        CHECK(s.temperature == 0.7);
        CHECK(s.top_p == 0.9);
        CHECK(s.n == 3);
        CHECK(s.stop == std::vector<std::string>{"\n"});
        CHECK(s.seed == -5);
        CHECK(s.presence_penalty == -2.0);
        CHECK(s.frequency_penalty == 1.5);
        CHECK(req.echo);
        CHECK(req.top_logprobs == 2);
        CHECK(req.return_logprob == true);
        CHECK(s.top_k == -1);
        CHECK(s.min_p == 0.05);
        CHECK(s.repetition_penalty == 2.0);
        CHECK(s.ignore_eos == true);
        CHECK(s.min_tokens == 4);
        CHECK(s.stop_token_ids == std::vector<int64_t>{2, 128009});
        CHECK(s.skip_special_tokens == false);
        CHECK(req.stream);
        CHECK(req.include_usage);
        CHECK(req.continuous_usage);
        CHECK(req.extras.empty());
    }

    TEST_CASE("stop as a list; integral doubles count as integers; top_k 0 and 1") {
        auto req = decode_ok(completions(),
                             R"({"prompt":"x","stop":["a","b"],"max_tokens":16.0,"top_k":0})");
        CHECK(req.sampling.stop == std::vector<std::string>{"a", "b"});
        CHECK(req.sampling.max_tokens == 16);
        CHECK(req.sampling.top_k == 0);
        req = decode_ok(completions(), R"({"prompt":"x","top_k":1,"stream_options":null})");
        CHECK(req.sampling.top_k == 1);
    }

    TEST_CASE("unknown keys are kept raw for pass-through") {
        const auto req = decode_ok(completions(), R"({"prompt":"x","user":"u-1",
            "logit_bias":{"50256": -100},"suffix":null,"best_of":2,"messages":[1]})");
        CHECK(extra(req, "user") == R"("u-1")");
        CHECK(extra(req, "suffix") == "null");
        CHECK(extra(req, "best_of") == "2");
        CHECK(extra(req, "messages") == "[1]");  // a chat key means nothing on this route
        CHECK(extra(req, "prompt") == "<absent>");
        CHECK(extra(req, "logit_bias") == "<absent>");  // canonical
        CHECK(req.sampling.logit_bias == std::vector<LogitBias>{{50256, -100}});
        REQUIRE(req.extras.size() == 4);
        // Inert: what the OpenAI API reads without changing the text, or at its "off" value.
        for (const auto& e : req.extras) {
            INFO(e.key);
            CHECK(e.inert == (e.key == "user" || e.key == "suffix"));
        }
    }

    TEST_CASE("logit_bias: token-id keys, biases from -100 to 100, read as Python reads it") {
        auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"x"}],
            "logit_bias":{"7":1,"13":-100,"007":2.5,"7":3,"0":100}})");
        // "7" keeps its first place with its last value; "007" is token 7 again (int("007")).
        CHECK(req.sampling.logit_bias == std::vector<LogitBias>{{7, 2.5}, {13, -100}, {0, 100}});
        req = decode_ok(completions(), R"({"prompt":"x","logit_bias":{}})");
        CHECK(req.sampling.logit_bias.empty());
        req = decode_ok(completions(), R"({"prompt":"x","logit_bias":null})");
        CHECK(req.sampling.logit_bias.empty());
        const BadCase cases[] = {
            {R"({"prompt":"x","logit_bias":[[1,2]]})", "logit_bias"},
            {R"({"prompt":"x","logit_bias":{"a":1}})", "logit_bias"},
            {R"({"prompt":"x","logit_bias":{"-1":1}})", "logit_bias"},
            {R"({"prompt":"x","logit_bias":{"99999999999":1}})", "logit_bias"},
            {R"({"prompt":"x","logit_bias":{"1":101}})", "logit_bias"},
            {R"({"prompt":"x","logit_bias":{"1":"5"}})", "logit_bias"},
        };
        for (const BadCase& c : cases) {
            check_bad(completions(), c);
        }
    }

    TEST_CASE("stream_options: include_usage is off unless asked; {} without stream passes") {
        auto req = decode_ok(completions(), R"({"prompt":"x","stream":true,"stream_options":{}})");
        CHECK_FALSE(req.include_usage);
        CHECK_FALSE(req.continuous_usage);
        // vLLM only refuses a non-empty object without stream (an empty dict is falsy there).
        req = decode_ok(completions(), R"({"prompt":"x","stream_options":{}})");
        CHECK_FALSE(req.stream);
    }

    TEST_CASE("every 400 names the field") {
        const BadCase cases[] = {
            {R"({})", "prompt"},
            {R"({"prompt":null})", "prompt"},
            {R"({"prompt":5})", "prompt"},
            {R"({"prompt":{}})", "prompt"},
            {R"({"prompt":[]})", "prompt"},
            {R"({"prompt":["a",1]})", "prompt"},
            {R"({"prompt":[1,"a"]})", "prompt"},
            {R"({"prompt":[[1],"a"]})", "prompt"},
            {R"({"prompt":[[1],[]]})", "prompt"},
            {R"({"prompt":[-1]})", "prompt"},
            {R"({"prompt":[1.5]})", "prompt"},
            {R"({"prompt":[[1,"a"]]})", "prompt"},
            {R"({"prompt":[true]})", "prompt"},
            {R"({"prompt":[null]})", "prompt"},
            {R"({"prompt":"x","model":5})", "model"},
            {R"({"prompt":"x","max_tokens":-1})", "max_tokens"},
            {R"({"prompt":"x","max_tokens":"16"})", "max_tokens"},
            {R"({"prompt":"x","max_tokens":1.5})", "max_tokens"},
            {R"({"prompt":"x","temperature":2.5})", "temperature"},
            {R"({"prompt":"x","temperature":"hot"})", "temperature"},
            {R"({"prompt":"x","top_p":-0.1})", "top_p"},
            {R"({"prompt":"x","top_p":1.01})", "top_p"},
            {R"({"prompt":"x","n":0})", "n"},
            {R"({"prompt":"x","n":129})", "n"},
            {R"({"prompt":"x","stop":5})", "stop"},
            {R"({"prompt":"x","stop":["a",1]})", "stop"},
            {R"({"prompt":"x","seed":"x"})", "seed"},
            {R"({"prompt":"x","seed":1.5})", "seed"},
            {R"({"prompt":"x","presence_penalty":3})", "presence_penalty"},
            {R"({"prompt":"x","frequency_penalty":-2.5})", "frequency_penalty"},
            {R"({"prompt":"x","stream":"yes"})", "stream"},
            {R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options"},
            {R"({"prompt":"x","stream":false,"stream_options":{"include_usage":true}})",
             "stream_options"},
            {R"({"prompt":"x","stream":true,"stream_options":true})", "stream_options"},
            {R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})",
             "stream_options.include_usage"},
            {R"({"prompt":"x","stream":true,"stream_options":{"continuous_usage_stats":"y"}})",
             "stream_options.continuous_usage_stats"},
            {R"({"prompt":"x","echo":"yes"})", "echo"},
            {R"({"prompt":"x","logprobs":6})", "logprobs"},
            {R"({"prompt":"x","logprobs":true})", "logprobs"},
            {R"({"prompt":"x","top_k":-2})", "top_k"},
            {R"({"prompt":"x","top_k":0.5})", "top_k"},
            {R"({"prompt":"x","min_p":1.5})", "min_p"},
            {R"({"prompt":"x","repetition_penalty":0})", "repetition_penalty"},
            {R"({"prompt":"x","repetition_penalty":2.5})", "repetition_penalty"},
            {R"({"prompt":"x","ignore_eos":1})", "ignore_eos"},
            {R"({"prompt":"x","min_tokens":-1})", "min_tokens"},
            {R"({"prompt":"x","stop_token_ids":[-1]})", "stop_token_ids"},
            {R"({"prompt":"x","stop_token_ids":"2"})", "stop_token_ids"},
            {R"({"prompt":"x","skip_special_tokens":"no"})", "skip_special_tokens"},
        };
        for (const BadCase& c : cases) {
            check_bad(completions(), c);
        }
    }

    TEST_CASE("bodies that are not a JSON object") {
        for (std::string_view body : {"", "{", "[1]", "\"x\"", R"({"prompt":"x"} junk)"}) {
            INFO(body);
            auto r = completions().decode_request(body);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error().status == 400);
        }
    }

    TEST_CASE("the first wrong field is the one reported") {
        auto r = completions().decode_request(R"({"prompt":"x","temperature":9,"top_p":9})");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "temperature");
    }
}

TEST_SUITE("openai request decode: chat") {
    TEST_CASE("messages with string, part-array, null and absent content") {
        const auto req = decode_ok(chat(), R"({"model":"gpt","messages":[
            {"role":"system","content":"be brief"},
            {"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
            {"role":"user","content":"hi","name":"ann"},
            {"role":"assistant","content":null},
            {"role":"tool"}]})");
        CHECK(req.dialect == Dialect::openai_chat);
        CHECK(req.kind == RequestKind::chat);
        CHECK(req.model == "gpt");
        REQUIRE(req.messages.size() == 5);
        CHECK(req.messages[0].role == "system");
        CHECK(req.messages[0].content == "be brief");
        CHECK(req.messages[1].content == "a\nb");
        CHECK(req.messages[2].name == "ann");
        CHECK(req.messages[3].content.empty());
        CHECK(req.messages[4].role == "tool");
        CHECK_FALSE(req.non_text_content);
        CHECK(req.prompts.empty());
    }

    TEST_CASE("non-text parts are flagged, not rejected") {
        const auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":[
            {"type":"text","text":"what is this?"},
            {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]})");
        CHECK(req.non_text_content);
        CHECK(req.messages[0].content == "what is this?");
    }

    TEST_CASE("max_completion_tokens is preferred over max_tokens") {
        auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"x"}],
            "max_tokens":10,"max_completion_tokens":20})");
        CHECK(req.sampling.max_tokens == 20);
        req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"x"}],"max_tokens":10})");
        CHECK(req.sampling.max_tokens == 10);
    }

    TEST_CASE("logprobs is a bool with top_logprobs; completions-only keys become extras") {
        const auto req = decode_ok(chat(), R"({"messages":[{"role":"user","content":"x"}],
            "logprobs":true,"top_logprobs":20,"echo":true,"prompt":"p","tools":[]})");
        CHECK(req.return_logprob == true);
        CHECK(req.top_logprobs == 20);
        CHECK_FALSE(req.echo);
        CHECK(extra(req, "echo") == "true");
        CHECK(extra(req, "prompt") == R"("p")");
        CHECK(extra(req, "tools") == "[]");
    }

    TEST_CASE("every 400 names the field") {
        const BadCase cases[] = {
            {R"({})", "messages"},
            {R"({"messages":null})", "messages"},
            {R"({"messages":[]})", "messages"},
            {R"({"messages":"hi"})", "messages"},
            {R"({"messages":[1]})", "messages[0]"},
            {R"({"messages":[{"content":"x"}]})", "messages[0].role"},
            {R"({"messages":[{"role":"user","content":"x"},{"role":"bot","content":"x"}]})",
             "messages[1].role"},
            {R"({"messages":[{"role":5,"content":"x"}]})", "messages[0].role"},
            {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
            {R"({"messages":[{"role":"user","content":[{"text":"x"}]}]})",
             "messages[0].content[0].type"},
            {R"({"messages":[{"role":"user","content":["x"]}]})", "messages[0].content[0].type"},
            {R"({"messages":[{"role":"user","content":[{"type":"text","text":5}]}]})",
             "messages[0].content[0].text"},
            {R"({"messages":[{"role":"user","content":"x","name":5}]})", "messages[0].name"},
            {R"({"messages":[{"role":"user","content":"x"}],"logprobs":1})", "logprobs"},
            {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":21,"logprobs":true})",
             "top_logprobs"},
            {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", "top_logprobs"},
            {R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":-1})",
             "max_completion_tokens"},
            {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"5"})", "max_tokens"},
            {R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"a":1}})",
             "stream_options"},
            {R"({"messages":[{"role":"user","content":"x"}],"temperature":-1})", "temperature"},
        };
        for (const BadCase& c : cases) {
            check_bad(chat(), c);
        }
    }
}
