// Log probabilities through the SGLang codec, both directions (docs/dialects.md, "Log
// probabilities"). The wire shapes are SGLang's own: meta_info keys and their order from
// python/sglang/srt/managers/tokenizer_manager.py (add_logprob_to_meta_info: [logprob, token_id,
// text] triples, text null unless return_text_in_logprobs; detokenize_top_logprobs_tokens: null
// for a position without alternatives), the incremental slicing from
// _slice_streaming_output_meta_info (output lists only; output_token_logprobs_length stays the
// total), and logprob_start_len from io_struct.py / schedule_batch.py (-1: generated tokens only).

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/logprob_util.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stream_state.hpp"
#include "translators/sglang/codec.hpp"

namespace {

using logprob_test::alt;
using logprob_test::entry;

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::TokenAlternative;
using infergate::canonical::TokenLogprob;
using infergate::translators::UpstreamOptions;

const infergate::translators::Codec& sglang() {
    return infergate::translators::sglang::codec();
}

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
    auto r = sglang().encode_request(req, options);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

// lm-evaluation-harness local-completions, loglikelihood: what it sends to /v1/completions.
GenerationRequest lm_eval_request(Prompt prompt) {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    req.kind = RequestKind::completion;
    req.model = "m";
    req.prompts.push_back(std::move(prompt));
    req.prompt_is_list = true;  // lm-eval sends "prompt": [ ... ]
    req.sampling.max_tokens = 1;
    req.sampling.temperature = 0.0;
    req.sampling.seed = 1234;
    req.return_logprob = true;  // "logprobs": 1, as the OpenAI decoder reads it
    req.top_logprobs = 1;
    req.echo = true;
    req.prompt_logprob_start = 0;  // echo with logprobs
    return req;
}

}  // namespace

TEST_CASE("sglang logprobs: an SGLang client's logprob fields decode to the canonical ones") {
    GenerationRequest req = decode_ok(
        R"({"text":"Hi","return_logprob":true,"top_logprobs_num":2,"logprob_start_len":0,)"
        R"("return_text_in_logprobs":true,"token_ids_logprob":[5]})");
    CHECK(req.return_logprob == true);
    CHECK(req.top_logprobs == 2);
    CHECK(req.prompt_logprob_start == 0);
    CHECK(req.logprob_text);
    // token_ids_logprob has no canonical form: an extra that only an SGLang backend takes.
    REQUIRE(req.extras.size() == 1);
    CHECK(req.extras[0].key == "token_ids_logprob");
    CHECK_FALSE(req.extras[0].inert);

    // A start of 3: the prompt's entries from index 3; -1 (the default): generated only.
    CHECK(decode_ok(R"({"text":"Hi","return_logprob":true,"logprob_start_len":3})")
              .prompt_logprob_start == 3);
    req = decode_ok(R"({"text":"Hi","return_logprob":true,"logprob_start_len":-1})");
    CHECK_FALSE(req.prompt_logprob_start);
    REQUIRE(req.extras.size() == 1);
    CHECK(req.extras[0].inert);

    // Without return_logprob SGLang reads none of them: inert extras, nothing asked elsewhere.
    req = decode_ok(
        R"({"text":"Hi","top_logprobs_num":2,"logprob_start_len":0,"return_text_in_logprobs":true})");
    CHECK_FALSE(req.top_logprobs);
    CHECK_FALSE(req.prompt_logprob_start);
    CHECK_FALSE(req.logprob_text);
    REQUIRE(req.extras.size() == 3);
    for (const auto& e : req.extras) {
        CHECK(e.inert);
    }
    // ... and they still reach an SGLang backend as sent.
    CHECK(encode_ok(req) == R"({"text":"Hi","sampling_params":{},"stream":false,)"
                            R"("top_logprobs_num":2,"logprob_start_len":0,)"
                            R"("return_text_in_logprobs":true})");

    auto bad = sglang().decode_request(R"({"text":"Hi","logprob_start_len":-2})");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().param == "logprob_start_len");
}

TEST_CASE("sglang logprobs: what an SGLang backend is asked") {
    // lm-eval's loglikelihood request: prompt entries from 0 with text, one alternative.
    CHECK(encode_ok(lm_eval_request(Prompt{"The sky is", {}, false})) ==
          R"({"text":["The sky is"],"sampling_params":{"max_new_tokens":1,"temperature":0.0,)"
          R"("sampling_seed":1234},"stream":false,"return_logprob":true,"top_logprobs_num":1,)"
          R"("return_text_in_logprobs":true,"logprob_start_len":0})");

    // An echo of a text prompt without logprobs asks nothing: the client's encoder echoes it.
    GenerationRequest echo = lm_eval_request(Prompt{"x", {}, false});
    echo.return_logprob.reset();
    echo.top_logprobs.reset();
    echo.prompt_logprob_start.reset();
    CHECK(encode_ok(echo).find("logprob") == std::string::npos);
    // A token-id prompt has no text to echo: its entries' texts are asked for.
    echo.prompts = {Prompt{{}, {1, 2, 3}, true}};
    CHECK(encode_ok(echo) ==
          R"({"input_ids":[[1,2,3]],"sampling_params":{"max_new_tokens":1,"temperature":0.0,)"
          R"("sampling_seed":1234},"stream":false,"return_logprob":true,)"
          R"("return_text_in_logprobs":true,"logprob_start_len":0})");

    // A TGI client's details: logprobs where the backend has them, and SGLang has them.
    GenerationRequest tgi;
    tgi.dialect = Dialect::tgi;
    tgi.prompts.push_back(Prompt{"x", {}, false});
    tgi.logprobs_if_available = true;
    CHECK(encode_ok(tgi).find(R"("return_logprob":true,"return_text_in_logprobs":true})") !=
          std::string::npos);
    tgi.logprobs_if_available = false;
    CHECK(encode_ok(tgi).find("return_logprob") == std::string::npos);

    // An SGLang client's own choices pass as it made them (no text unless it asked).
    CHECK(
        encode_ok(decode_ok(
            R"({"text":"Hi","return_logprob":true,"top_logprobs_num":2,"logprob_start_len":1})")) ==
        R"({"text":"Hi","sampling_params":{},"stream":false,"return_logprob":true,)"
        R"("top_logprobs_num":2,"logprob_start_len":1})");
}

TEST_CASE("sglang logprobs: encode_response writes SGLang's meta_info keys in its order") {
    GenerationRequest req =
        decode_ok(R"({"text":"Hi there","return_logprob":true,"top_logprobs_num":1,)"
                  R"("logprob_start_len":0,"return_text_in_logprobs":true})");
    GenerationResult result;
    Choice c;
    c.text = " ok";
    c.finish.kind = FinishKind::length;
    c.usage = {2, 1, 0};
    c.id = "rid";
    c.prompt_logprobs = {entry("Hi", 10, std::nullopt), entry(" there", 11, -2.5)};
    // Two alternatives from the backend: the client asked for one.
    c.logprobs = {entry(" ok", 12, -0.25, {alt(" ok", 12, -0.25), alt(" no", 13, -1.5)})};
    c.prompt_logprobs[1].top = {alt(" there", 11, -2.5)};
    result.choices.push_back(c);
    std::string out;
    sglang().encode_response(result, req, out);
    CHECK(out ==
          R"({"text":" ok","meta_info":{"id":"rid","finish_reason":{"type":"length","length":1},)"
          R"("prompt_tokens":2,"input_token_logprobs":[[null,10,"Hi"],[-2.5,11," there"]],)"
          R"("output_token_logprobs":[[-0.25,12," ok"]],"output_token_logprobs_length":1,)"
          R"("input_top_logprobs":[null,[[-2.5,11," there"]]],)"
          R"("output_top_logprobs":[[[-0.25,12," ok"]]],)"
          R"("completion_tokens":1,"cached_tokens":0}})");

    // Without return_text_in_logprobs the texts are null; without top_logprobs_num no top keys;
    // a backend that gave nothing: empty lists, never invented numbers.
    req = decode_ok(R"({"text":"Hi","return_logprob":true})");
    result.choices[0].prompt_logprobs.clear();
    out.clear();
    sglang().encode_response(result, req, out);
    CHECK(out.find(R"("prompt_tokens":2,"input_token_logprobs":[],)"
                   R"("output_token_logprobs":[[-0.25,12,null]],"output_token_logprobs_length":1,)"
                   R"("completion_tokens":1)") != std::string::npos);
    result.choices[0].logprobs.clear();
    out.clear();
    sglang().encode_response(result, req, out);
    CHECK(out.find(R"("input_token_logprobs":[],"output_token_logprobs":[],)"
                   R"("output_token_logprobs_length":0,"completion_tokens")") != std::string::npos);
    // n = 2 from a backend that reports the prompt's entries once (on the first sample):
    // SGLang repeats them in each sample.
    GenerationRequest two = decode_ok(
        R"({"text":"Hi","return_logprob":true,"logprob_start_len":0,"sampling_params":{"n":2}})");
    GenerationResult samples;
    samples.choices.resize(2);
    samples.choices[0].prompt_logprobs = {entry("Hi", 10, std::nullopt)};
    samples.choices[1].index = 1;
    out.clear();
    sglang().encode_response(samples, two, out);
    size_t seen = 0;
    for (size_t at = out.find(R"("input_token_logprobs":[[null,10,null]])");
         at != std::string::npos;
         at = out.find(R"("input_token_logprobs":[[null,10,null]])", at + 1)) {
        ++seen;
    }
    CHECK(seen == 2);
    // Not asked: no logprob keys at all.
    out.clear();
    sglang().encode_response(result, decode_ok(R"({"text":"Hi"})"), out);
    CHECK(out.find("logprobs") == std::string::npos);
}

TEST_CASE("sglang logprobs: decode_response reads the triples, per batch item") {
    // The shape add_logprob_to_meta_info writes for return_logprob, top_logprobs_num 2,
    // logprob_start_len 0, return_text_in_logprobs; the first prompt token has no logprob.
    const std::string item =
        R"({"text":" blue","meta_info":{"id":"a","finish_reason":{"type":"length","length":1},)"
        R"("prompt_tokens":3,"weight_version":"default","total_retractions":0,)"
        R"("input_token_logprobs":[[null,791,"The"],[-7.1,13180," sky"],[-1.2,374," is"]],)"
        R"("output_token_logprobs":[[-0.5,6437," blue"]],"output_token_logprobs_length":1,)"
        R"("input_top_logprobs":[null,[[-3.0,315," of"],[-3.5,574," was"]],)"
        R"([[-1.2,374," is"],[-2.0,574," was"]]],)"
        R"("output_top_logprobs":[[[-0.5,6437," blue"],[-1.7,18004," clear"]]],)"
        R"("reasoning_tokens":0,"completion_tokens":1,"cached_tokens":0}})";
    GenerationRequest req = lm_eval_request(Prompt{"The sky is", {}, false});
    auto r = sglang().decode_response(item, req);
    REQUIRE(r.ok());
    const Choice& c = r->choices[0];
    REQUIRE(c.prompt_logprobs.size() == 3);
    CHECK_FALSE(c.prompt_logprobs[0].logprob);
    CHECK(c.prompt_logprobs[0].token == "The");
    CHECK(c.prompt_logprobs[0].top.empty());
    CHECK(c.prompt_logprobs[1].logprob == -7.1);
    CHECK(c.prompt_logprobs[1].id == 13180);
    REQUIRE(c.prompt_logprobs[1].top.size() == 2);
    CHECK(c.prompt_logprobs[1].top[1].token == " was");
    REQUIRE(c.logprobs.size() == 1);
    CHECK(c.logprobs[0].token == " blue");
    CHECK(c.logprobs[0].logprob == -0.5);
    REQUIRE(c.logprobs[0].top.size() == 2);
    CHECK(c.logprobs[0].top[1].logprob == -1.7);

    // A batch: one meta_info per item, each its own entries.
    const std::string other =
        R"({"text":"x","meta_info":{"id":"b","finish_reason":null,"prompt_tokens":1,)"
        R"("input_token_logprobs":[],"output_token_logprobs":[[-0.1,7,"x"]],)"
        R"("output_token_logprobs_length":1,"completion_tokens":1,"cached_tokens":0}})";
    r = sglang().decode_response("[" + item + "," + other + "]", req);
    REQUIRE(r.ok());
    REQUIRE(r->choices.size() == 2);
    CHECK(r->choices[0].logprobs.size() == 1);
    CHECK(r->choices[1].prompt_logprobs.empty());
    REQUIRE(r->choices[1].logprobs.size() == 1);
    CHECK(r->choices[1].logprobs[0].id == 7);

    // Not SGLang's shape: a 502 naming the key.
    r = sglang().decode_response(
        R"({"text":"x","meta_info":{"id":"b","output_token_logprobs":[["x",1,null]]}})", req);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().message.find("output_token_logprobs[0]") != std::string::npos);
}

TEST_CASE("sglang logprobs: a cumulative stream emits each entry once, the prompt's first") {
    StreamState state;
    std::vector<StreamEvent> out;
    // SGLang's default streaming: every event carries every entry so far.
    sglang().decode_stream_event(
        R"({"text":" a","output_ids":[1],"meta_info":{"id":"r","finish_reason":null,)"
        R"("prompt_tokens":2,"input_token_logprobs":[[null,5,"P"],[-1.0,6,"Q"]],)"
        R"("output_token_logprobs":[[-0.1,1," a"]],"output_token_logprobs_length":1,)"
        R"("completion_tokens":1,"cached_tokens":0}})",
        state, out);
    sglang().decode_stream_event(
        R"({"text":" a b","output_ids":[1,2],"meta_info":{"id":"r","finish_reason":null,)"
        R"("prompt_tokens":2,"input_token_logprobs":[[null,5,"P"],[-1.0,6,"Q"]],)"
        R"("output_token_logprobs":[[-0.1,1," a"],[-0.2,2," b"]],)"
        R"("output_token_logprobs_length":2,"completion_tokens":2,"cached_tokens":0}})",
        state, out);
    REQUIRE(out.size() == 2);
    REQUIRE(out[0].prompt_logprobs.size() == 2);
    CHECK_FALSE(out[0].prompt_logprobs[0].logprob);
    REQUIRE(out[0].logprobs.size() == 1);
    CHECK(out[0].logprobs[0].token == " a");
    CHECK(out[1].prompt_logprobs.empty());
    REQUIRE(out[1].logprobs.size() == 1);
    CHECK(out[1].logprobs[0].token == " b");
    CHECK(out[1].logprobs[0].logprob == -0.2);
}

TEST_CASE("sglang logprobs: an incremental stream's sliced lists emit all their entries") {
    StreamState state;
    std::vector<StreamEvent> out;
    // --incremental-streaming-output: output lists sliced to this event's tokens, the length key
    // still the total.
    sglang().decode_stream_event(
        R"({"text":" a","output_ids":[1],"meta_info":{"id":"r","finish_reason":null,)"
        R"("prompt_tokens":2,"input_token_logprobs":[],)"
        R"("output_token_logprobs":[[-0.1,1," a"]],"output_token_logprobs_length":1,)"
        R"("completion_tokens":1,"cached_tokens":0}})",
        state, out);
    sglang().decode_stream_event(
        R"({"text":" b c","output_ids":[2,3],"meta_info":{"id":"r","finish_reason":null,)"
        R"("prompt_tokens":2,"input_token_logprobs":[],)"
        R"("output_token_logprobs":[[-0.2,2," b"],[-0.3,3," c"]],)"
        R"("output_token_logprobs_length":3,"completion_tokens":3,"cached_tokens":0}})",
        state, out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].logprobs.size() == 1);
    REQUIRE(out[1].logprobs.size() == 2);
    CHECK(out[1].logprobs[0].token == " b");
    CHECK(out[1].logprobs[1].token == " c");
    CHECK(state.choices[0].logprobs_seen == 3);
}

TEST_CASE("sglang logprobs: the client stream re-sends every entry so far, as SGLang does") {
    StreamState state;
    infergate::canonical::set_logprob_request(
        state,
        decode_ok(R"({"text":"P","return_logprob":true,"top_logprobs_num":1,"logprob_start_len":0,)"
                  R"("return_text_in_logprobs":true})"));
    StreamEvent first;
    first.text = " a";
    first.usage.completion_tokens = 1;
    first.usage.prompt_tokens = 1;
    first.prompt_logprobs = {entry("P", 5, std::nullopt)};
    first.logprobs = {entry(" a", 1, -0.1, {alt(" a", 1, -0.1), alt(" z", 9, -3.0)})};
    StreamEvent second;
    second.text = " b";
    second.usage.completion_tokens = 2;
    second.logprobs = {entry(" b", 2, -0.2)};
    std::string out;
    sglang().encode_stream_event(first, state, out);
    sglang().encode_stream_event(second, state, out);
    CHECK(out ==
          "data: {\"text\":\" a\",\"meta_info\":{\"id\":\"\",\"finish_reason\":null,"
          "\"prompt_tokens\":1,\"input_token_logprobs\":[[null,5,\"P\"]],"
          "\"output_token_logprobs\":[[-0.1,1,\" a\"]],\"output_token_logprobs_length\":1,"
          "\"input_top_logprobs\":[null],\"output_top_logprobs\":[[[-0.1,1,\" a\"]]],"
          "\"completion_tokens\":1,\"cached_tokens\":null}}\n\n"
          "data: {\"text\":\" a b\",\"meta_info\":{\"id\":\"\",\"finish_reason\":null,"
          "\"prompt_tokens\":1,\"input_token_logprobs\":[[null,5,\"P\"]],"
          "\"output_token_logprobs\":[[-0.1,1,\" a\"],[-0.2,2,\" b\"]],"
          "\"output_token_logprobs_length\":2,\"input_top_logprobs\":[null],"
          "\"output_top_logprobs\":[[[-0.1,1,\" a\"]],null],"
          "\"completion_tokens\":2,\"cached_tokens\":null}}\n\n");

    // A client that did not ask gets no logprob keys, whatever the backend sent.
    StreamState plain;
    out.clear();
    sglang().encode_stream_event(first, plain, out);
    CHECK(out.find("logprobs") == std::string::npos);
}
