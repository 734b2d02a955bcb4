// translators/sglang/request_decode.cpp and sampling_decode.cpp: decoding and validating SGLang /generate bodies.

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

const infergate::translators::Codec& sglang() { return infergate::translators::sglang::codec(); }

GenerationRequest decode_ok(std::string_view body) {
    auto r = sglang().decode_request(body);
    INFO(std::string(body));
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

struct BadCase {
    const char* body;
    const char* param;     // the field the error must name
    const char* fragment;  // a part of the message
};

}  // namespace

TEST_CASE("sglang decode_request: the docs' single text request") {
    const GenerationRequest req = decode_ok(
        R"({"text": "The capital of France is", "sampling_params": {"temperature": 0, )"
        R"("max_new_tokens": 32}})");
    CHECK(req.dialect == Dialect::sglang);
    CHECK(req.kind == RequestKind::completion);
    REQUIRE(req.prompts.size() == 1);
    CHECK(req.prompts[0].text == "The capital of France is");
    CHECK_FALSE(req.prompts[0].is_tokens);
    CHECK_FALSE(req.prompt_is_list);
    CHECK(req.sampling.temperature == 0.0);
    CHECK(req.sampling.max_tokens == 32);
    CHECK_FALSE(req.sampling.top_p.has_value());
    CHECK(req.sampling.n == 1);
    CHECK_FALSE(req.stream);
    CHECK(req.item_sampling.empty());
    CHECK(req.extras.empty());
    CHECK(req.model.empty());
}

TEST_CASE("sglang decode_request: every known sampling key and top-level field") {
    const GenerationRequest req = decode_ok(R"({
        "text": ["a", "b"], "stream": true, "rid": ["r1", "r2"], "return_logprob": true,
        "top_logprobs_num": 3, "lora_path": "adapter-1", "logprob_start_len": -1,
        "sampling_params": {"max_new_tokens": 64, "min_new_tokens": 2, "temperature": 0.7,
            "top_p": 0.9, "top_k": 40, "min_p": 0.05, "frequency_penalty": -0.5,
            "presence_penalty": 1.5, "repetition_penalty": 1.1, "n": 2, "sampling_seed": 1234,
            "stop": ["\n\n", "###"], "stop_token_ids": [151645, 151643], "ignore_eos": true,
            "skip_special_tokens": false, "json_schema": "{\"type\": \"object\"}",
            "regex": null, "no_stop_trim": true, "logit_bias": {"42": -100},
            "custom_params": null}})");
    CHECK(req.prompt_is_list);
    REQUIRE(req.prompts.size() == 2);
    CHECK(req.prompts[1].text == "b");
    CHECK(req.stream);
    CHECK(req.request_ids == std::vector<std::string>{"r1", "r2"});
    CHECK(req.return_logprob == true);
    CHECK(req.top_logprobs == 3);
    const SamplingParams& sp = req.sampling;
    CHECK(sp.max_tokens == 64);
    CHECK(sp.min_tokens == 2);
    CHECK(sp.temperature == doctest::Approx(0.7));
    CHECK(sp.top_p == doctest::Approx(0.9));
    CHECK(sp.top_k == 40);
    CHECK(sp.min_p == doctest::Approx(0.05));
    CHECK(sp.frequency_penalty == doctest::Approx(-0.5));
    CHECK(sp.presence_penalty == doctest::Approx(1.5));
    CHECK(sp.repetition_penalty == doctest::Approx(1.1));
    CHECK(sp.n == 2);
    CHECK(sp.seed == 1234);
    CHECK(sp.stop == std::vector<std::string>{"\n\n", "###"});
    CHECK(sp.stop_token_ids == std::vector<int64_t>{151645, 151643});
    CHECK(sp.ignore_eos == true);
    CHECK(sp.skip_special_tokens == false);
    CHECK(sp.keep_stop_str == true);  // no_stop_trim: vLLM's include_stop_str_in_output
    CHECK(sp.logit_bias == std::vector<infergate::canonical::LogitBias>{{42, -100}});
    // SGLang-only sampling keys survive as raw JSON; null ones mean "default" and are dropped.
    REQUIRE(req.sampling_extras.size() == 1);
    CHECK(req.sampling_extras[0].key == "json_schema");
    CHECK(req.sampling_extras[0].json == R"("{\"type\": \"object\"}")");
    CHECK_FALSE(req.sampling_extras[0].inert);
    // Unknown top-level keys survive too; logprob_start_len at SGLang's default (-1) is inert
    // (sglang's own bench_serving sends it), a LoRA adapter is not.
    REQUIRE(req.extras.size() == 2);
    CHECK(req.extras[0].key == "lora_path");
    CHECK_FALSE(req.extras[0].inert);
    CHECK(req.extras[1].key == "logprob_start_len");
    CHECK(req.extras[1].inert);
    CHECK(req.extras[0].json == R"("adapter-1")");
    CHECK(req.extras[1].key == "logprob_start_len");
    CHECK(req.extras[1].json == "-1");
}

TEST_CASE("sglang decode_request: null values mean the default") {
    const GenerationRequest req = decode_ok(
        R"({"text": "x", "stream": null, "rid": null, "sampling_params": {"temperature": null,
            "max_new_tokens": null, "stop": null, "n": null, "top_k": null}})");
    CHECK(req.sampling == SamplingParams{});
    CHECK_FALSE(req.stream);
    CHECK(req.request_ids.empty());
    const GenerationRequest none = decode_ok(R"({"text": "x", "sampling_params": null})");
    CHECK(none.sampling == SamplingParams{});
}

TEST_CASE("sglang decode_request: token-id prompts, single and batched") {
    const GenerationRequest one = decode_ok(R"({"input_ids": [0, 151643, 7]})");
    REQUIRE(one.prompts.size() == 1);
    CHECK(one.prompts[0].is_tokens);
    CHECK(one.prompts[0].token_ids == std::vector<int64_t>{0, 151643, 7});
    CHECK_FALSE(one.prompt_is_list);

    const GenerationRequest many = decode_ok(R"({"input_ids": [[1, 2], [3]], "rid": "only"})");
    REQUIRE(many.prompts.size() == 2);
    CHECK(many.prompt_is_list);
    CHECK(many.prompts[1].token_ids == std::vector<int64_t>{3});
    CHECK(many.request_ids == std::vector<std::string>{"only"});

    const GenerationRequest listed = decode_ok(R"({"text": ["solo"]})");
    CHECK(listed.prompt_is_list);
    CHECK(listed.prompts.size() == 1);
}

TEST_CASE("sglang decode_request: a sampling_params list per batch item") {
    SUBCASE("all equal: stored once") {
        const GenerationRequest req = decode_ok(
            R"({"text": ["a", "b"], "sampling_params": [{"temperature": 0.5, "n": 2},
                {"temperature": 0.5, "n": 2}]})");
        CHECK(req.item_sampling.empty());
        CHECK(req.sampling.temperature == 0.5);
        CHECK(req.sampling.n == 2);
    }
    SUBCASE("different: one per item") {
        const GenerationRequest req = decode_ok(
            R"({"text": ["a", "b"], "sampling_params": [{"max_new_tokens": 8},
                {"max_new_tokens": 16, "stop": "x"}]})");
        REQUIRE(req.item_sampling.size() == 2);
        CHECK(req.item_sampling[0].max_tokens == 8);
        CHECK(req.item_sampling[1].max_tokens == 16);
        CHECK(req.item_sampling[1].stop == std::vector<std::string>{"x"});
        CHECK(req.sampling.max_tokens == 8);
    }
    SUBCASE("a single prompt with a one-element list") {
        const GenerationRequest req =
            decode_ok(R"({"text": "a", "sampling_params": [{"top_k": -1}]})");
        CHECK(req.item_sampling.empty());
        CHECK(req.sampling.top_k == -1);
    }
}

TEST_CASE("sglang decode_request: errors are 400s naming the field") {
    const BadCase cases[] = {
        {R"({"text": )", "", "malformed JSON"},
        {R"([{"text": "a"}])", "", "must be a JSON object"},
        {R"({})", "text", "Either text, input_ids or input_embeds should be provided."},
        {R"({"text": null, "sampling_params": {}})", "text", "Either text, input_ids"},
        {R"({"input_embeds": [[0.1, 0.2]]})", "input_embeds", "cannot be proxied"},
        {R"({"text": "a", "input_embeds": [[0.1]]})", "input_embeds", "send the prompt as"},
        {R"({"text": "a", "input_ids": [1]})", "input_ids", "not both"},
        {R"({"text": []})", "text", "empty list"},
        {R"({"text": 5})", "text", "a string or a list of strings"},
        {R"({"text": ["a", 1]})", "text[1]", "must be a string"},
        {R"({"input_ids": []})", "input_ids", "empty list"},
        {R"({"input_ids": "1 2 3"})", "input_ids", "list of token ids"},
        {R"({"input_ids": [1, "2"]})", "input_ids[1]", "token id"},
        {R"({"input_ids": [1, -2]})", "input_ids[1]", "token id"},
        {R"({"input_ids": [[1], []]})", "input_ids[1]", "empty list"},
        {R"({"input_ids": [[1], 2]})", "input_ids[1]", "list of token ids"},
        {R"({"input_ids": [[1], [2, 3.5]]})", "input_ids[1][1]", "token id"},
        {R"({"text": "a", "sampling_params": 5})", "sampling_params", "object or a list"},
        {R"({"text": ["a", "b"], "sampling_params": [{}]})", "sampling_params", "one object per"},
        {R"({"text": "a", "sampling_params": [{}, {}]})", "sampling_params", "1 prompt"},
        {R"({"text": ["a", "b"], "sampling_params": [{}, 3]})", "sampling_params[1]",
         "must be an object"},
        {R"({"text": ["a", "b"], "sampling_params": [{"n": 2}, {"n": 3}]})",
         "sampling_params[1].n", "same n"},
        {R"({"text": ["a", "b"], "sampling_params": [{"regex": "a+"}, {"regex": "b+"}]})",
         "sampling_params[1]", "same for every prompt"},
        {R"({"text": ["a", "b"], "sampling_params": [{}, {"top_p": 0}]})",
         "sampling_params[1].top_p", "(0, 1]"},
        {R"({"text": "a", "sampling_params": {"temperature": "hot"}})",
         "sampling_params.temperature", "must be a number"},
        {R"({"text": "a", "sampling_params": {"temperature": -0.1}})",
         "sampling_params.temperature", "between"},
        {R"({"text": "a", "sampling_params": {"top_p": 0}})", "sampling_params.top_p", "(0, 1]"},
        {R"({"text": "a", "sampling_params": {"top_p": 1.5}})", "sampling_params.top_p",
         "(0, 1]"},
        {R"({"text": "a", "sampling_params": {"top_p": "x"}})", "sampling_params.top_p",
         "must be a number"},
        {R"({"text": "a", "sampling_params": {"top_k": 0}})", "sampling_params.top_k", "-1"},
        {R"({"text": "a", "sampling_params": {"top_k": -2}})", "sampling_params.top_k", "-1"},
        {R"({"text": "a", "sampling_params": {"top_k": 2.5}})", "sampling_params.top_k",
         "integer"},
        {R"({"text": "a", "sampling_params": {"min_p": 1.5}})", "sampling_params.min_p",
         "between"},
        {R"({"text": "a", "sampling_params": {"frequency_penalty": 2.5}})",
         "sampling_params.frequency_penalty", "between"},
        {R"({"text": "a", "sampling_params": {"presence_penalty": -3}})",
         "sampling_params.presence_penalty", "between"},
        {R"({"text": "a", "sampling_params": {"repetition_penalty": 0}})",
         "sampling_params.repetition_penalty", "(0, 2]"},
        {R"({"text": "a", "sampling_params": {"repetition_penalty": 2.5}})",
         "sampling_params.repetition_penalty", "(0, 2]"},
        {R"({"text": "a", "sampling_params": {"max_new_tokens": -1}})",
         "sampling_params.max_new_tokens", ">= 0"},
        {R"({"text": "a", "sampling_params": {"max_new_tokens": "16"}})",
         "sampling_params.max_new_tokens", "integer"},
        {R"({"text": "a", "sampling_params": {"min_new_tokens": -1}})",
         "sampling_params.min_new_tokens", ">= 0"},
        {R"({"text": "a", "sampling_params": {"min_new_tokens": 9, "max_new_tokens": 8}})",
         "sampling_params.min_new_tokens", "must not exceed max_new_tokens"},
        {R"({"text": "a", "sampling_params": {"n": 0}})", "sampling_params.n", "between 1"},
        {R"({"text": "a", "sampling_params": {"sampling_seed": 1.5}})",
         "sampling_params.sampling_seed", "integer"},
        {R"({"text": "a", "sampling_params": {"stop": 5}})", "sampling_params.stop",
         "a string or a list of strings"},
        {R"({"text": "a", "sampling_params": {"stop": ["a", 1]}})", "sampling_params.stop[1]",
         "must be a string"},
        {R"({"text": "a", "sampling_params": {"stop_token_ids": 2}})",
         "sampling_params.stop_token_ids", "list of token ids"},
        {R"({"text": "a", "sampling_params": {"stop_token_ids": [2, "x"]}})",
         "sampling_params.stop_token_ids[1]", "token id"},
        {R"({"text": "a", "sampling_params": {"ignore_eos": "yes"}})",
         "sampling_params.ignore_eos", "boolean"},
        {R"({"text": "a", "sampling_params": {"skip_special_tokens": 1}})",
         "sampling_params.skip_special_tokens", "boolean"},
        {R"({"text": "a", "sampling_params": {"seed": 42}})", "sampling_params.seed",
         "use 'sampling_seed' instead"},
        {R"({"text": "a", "sampling_params": {"max_tokens": 42}})", "sampling_params.max_tokens",
         "use 'max_new_tokens' instead"},
        {R"({"text": "a", "sampling_params": {"top_logprobs": 2}})",
         "sampling_params.top_logprobs", "top_logprobs_num"},
        {R"({"text": "a", "sampling_params": {"temprature": 0.5}})",
         "sampling_params.temprature", "unknown sampling parameter"},
        {R"({"text": ["a"], "sampling_params": [{"best_of": 2}]})",
         "sampling_params[0].best_of", "HTTP 500"},
        {R"({"text": "a", "stream": "yes"})", "stream", "boolean"},
        {R"({"text": "a", "rid": 5})", "rid", "a string or a list"},
        {R"({"text": "a", "rid": ["x", 5]})", "rid[1]", "must be a string"},
        {R"({"text": "a", "return_logprob": "x"})", "return_logprob", "boolean"},
        {R"({"text": "a", "top_logprobs_num": -1})", "top_logprobs_num", ">= 0"},
        {R"({"text": "a", "model": 5})", "model", "string"},
    };
    for (const BadCase& c : cases) {
        CAPTURE(c.body);
        auto r = sglang().decode_request(c.body);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().type == "invalid_request_error");
        CHECK(r.error().param == c.param);
        CHECK_MESSAGE(r.error().message.find(c.fragment) != std::string::npos,
                      r.error().message);
        if (*c.param != '\0' && std::string_view(c.param) != "text") {
            // The message itself names the field too, so a person reading only it can fix it.
            CHECK_MESSAGE(r.error().message.find(c.param) != std::string::npos,
                          r.error().message);
        }
    }
}
