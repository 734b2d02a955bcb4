// translators/sglang/response_codec.cpp: whole /generate responses, both directions, against the
// captured sample of api-dialects §11.7.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "translators/sglang/codec.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;

const infergate::translators::Codec& sglang() { return infergate::translators::sglang::codec(); }

std::string fixture(const char* name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/sglang/" + name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
        s.pop_back();
    }
    return s;
}

GenerationRequest single_request() {
    GenerationRequest req;
    req.dialect = Dialect::sglang;
    req.prompts.push_back(Prompt{"The capital of France is", {}, false});
    req.sampling.max_tokens = 32;
    req.sampling.temperature = 0.0;
    return req;
}

GenerationRequest batch_request(int prompts, int n) {
    GenerationRequest req;
    req.dialect = Dialect::sglang;
    for (int i = 0; i < prompts; ++i) {
        req.prompts.push_back(Prompt{"p" + std::to_string(i), {}, false});
    }
    req.prompt_is_list = prompts > 1;
    req.sampling.n = n;
    return req;
}

std::string encode(const GenerationResult& result, const GenerationRequest& req) {
    std::string out;
    sglang().encode_response(result, req, out);
    return out;
}

}  // namespace

TEST_CASE("sglang response: the captured §11.7 sample decodes and re-encodes byte for byte") {
    const GenerationRequest req = single_request();
    auto decoded = sglang().decode_response(fixture("generate_response.json"), req);
    REQUIRE_MESSAGE(decoded.ok(), decoded.error().message);
    const GenerationResult& result = decoded.value();
    REQUIRE(result.choices.size() == 1);
    const Choice& c = result.choices[0];
    CHECK(c.index == 0);
    CHECK(c.text ==
          " Paris. It is the largest city in Europe and the second largest city in the world. "
          "It is located in the south of France, on the banks of the");
    CHECK(c.id == "be6daa5d895e403eb6334fb3a116b933");
    CHECK(c.finish.kind == FinishKind::length);
    CHECK(c.finish.length == 32);
    CHECK(c.usage.prompt_tokens == 5);
    CHECK(c.usage.completion_tokens == 32);
    CHECK(c.usage.cached_tokens == 2);
    CHECK(result.id == "be6daa5d895e403eb6334fb3a116b933");
    CHECK(result.usage.prompt_tokens == 5);
    CHECK(result.usage.completion_tokens == 32);
    CHECK(result.usage.cached_tokens == 2);

    CHECK(encode(result, req) == fixture("generate_response.compact.json"));
}

TEST_CASE("sglang encode_response: finish_reason objects") {
    const GenerationRequest req = single_request();
    GenerationResult result;
    result.id = "r";
    result.choices.resize(1);
    Choice& c = result.choices[0];
    c.text = "x";
    c.usage.prompt_tokens = 3;
    c.usage.completion_tokens = 4;
    c.usage.cached_tokens = 0;
    const auto meta = [&] {
        const std::string out = encode(result, req);
        const auto at = out.find("\"finish_reason\":");
        REQUIRE(at != std::string::npos);
        const auto end = out.find(",\"prompt_tokens\"");
        return out.substr(at + 16, end - at - 16);
    };
    c.finish.kind = FinishKind::stop;
    c.finish.matched_text = "\n\n";
    CHECK(meta() == R"({"type":"stop","matched":"\n\n"})");
    c.finish.matched_text.reset();
    c.finish.matched_token = 151645;
    CHECK(meta() == R"({"type":"stop","matched":151645})");
    c.finish.matched_token.reset();
    CHECK(meta() == R"({"type":"stop","matched":null})");
    c.finish.kind = FinishKind::length;
    CHECK(meta() == R"({"type":"length","length":4})");  // from the completion tokens
    c.finish.length = 16;
    CHECK(meta() == R"({"type":"length","length":16})");
    c.finish = {};
    c.finish.kind = FinishKind::abort;
    c.finish.message = "client disconnected";
    CHECK(meta() == R"({"type":"abort","message":"client disconnected"})");
    c.finish.kind = FinishKind::tool_calls;
    CHECK(meta() == R"({"type":"stop","matched":null})");
    c.finish.kind = FinishKind::content_filter;
    CHECK(meta() == R"({"type":"stop","matched":null})");
    c.finish.kind = FinishKind::none;
    CHECK(meta() == "null");
}

TEST_CASE("sglang encode_response: a result from an OpenAI upstream") {
    GenerationRequest req = single_request();
    req.dialect = Dialect::sglang;
    req.request_ids = {"my-rid"};
    GenerationResult result;
    result.id = "cmpl-123";
    result.choices.resize(1);
    result.choices[0].text = "Paris";
    result.choices[0].finish.kind = FinishKind::stop;
    result.usage.prompt_tokens = 5;
    result.usage.completion_tokens = 2;  // no per-choice counts: the aggregate is the choice's
    CHECK(encode(result, req) ==
          R"({"text":"Paris","meta_info":{"id":"my-rid","finish_reason":{"type":"stop",)"
          R"("matched":null},"prompt_tokens":5,"completion_tokens":2,"cached_tokens":null}})");
    req.request_ids.clear();
    CHECK(encode(result, req).find(R"("id":"cmpl-123")") != std::string::npos);
}

TEST_CASE("sglang encode_response: batches and n > 1 are arrays in index order") {
    GenerationRequest req = batch_request(2, 2);
    GenerationResult result;
    result.id = "cmpl-9";
    result.usage.prompt_tokens = 10;
    result.usage.completion_tokens = 8;
    for (int i = 0; i < 4; ++i) {
        Choice c;
        c.index = i;
        c.text = "t" + std::to_string(i);
        c.id = "c" + std::to_string(i);
        c.finish.kind = FinishKind::length;
        c.usage.completion_tokens = 2;
        result.choices.push_back(c);
    }
    // Aggregate counts cannot be split over several choices: what a choice lacks stays null.
    CHECK(encode(result, req) ==
          R"([{"text":"t0","meta_info":{"id":"c0","finish_reason":{"type":"length","length":2},)"
          R"("prompt_tokens":null,"completion_tokens":2,"cached_tokens":null}},)"
          R"({"text":"t1","meta_info":{"id":"c1","finish_reason":{"type":"length","length":2},)"
          R"("prompt_tokens":null,"completion_tokens":2,"cached_tokens":null}},)"
          R"({"text":"t2","meta_info":{"id":"c2","finish_reason":{"type":"length","length":2},)"
          R"("prompt_tokens":null,"completion_tokens":2,"cached_tokens":null}},)"
          R"({"text":"t3","meta_info":{"id":"c3","finish_reason":{"type":"length","length":2},)"
          R"("prompt_tokens":null,"completion_tokens":2,"cached_tokens":null}}])");

    // A one-element list prompt still answers with a list, as SGLang does.
    GenerationRequest listed = batch_request(1, 1);
    listed.prompt_is_list = true;
    GenerationResult one;
    one.choices.resize(1);
    one.choices[0].text = "a";
    const std::string out = encode(one, listed);
    CHECK(out.front() == '[');
    CHECK(out.back() == ']');
    // n > 1 on one prompt too.
    CHECK(encode(result, batch_request(1, 4)).front() == '[');
}

TEST_CASE("sglang decode_response: arrays, n > 1 and prompt tokens counted once per prompt") {
    const GenerationRequest req = batch_request(2, 2);
    const char* body = R"([
      {"text": "a", "meta_info": {"id": "i0", "finish_reason": {"type": "stop", "matched": 2},
       "prompt_tokens": 7, "completion_tokens": 1, "cached_tokens": 3}},
      {"text": "b", "meta_info": {"id": "i1", "finish_reason": {"type": "stop", "matched": "\n"},
       "prompt_tokens": 7, "completion_tokens": 2, "cached_tokens": 3}},
      {"text": "c", "meta_info": {"id": "i2", "finish_reason": {"type": "abort",
       "message": "bad", "status_code": 400, "err_type": null},
       "prompt_tokens": 4, "completion_tokens": 3, "cached_tokens": 0}},
      {"text": "d", "meta_info": {"id": "i3", "finish_reason": {"type": "length", "length": 4},
       "prompt_tokens": 4, "completion_tokens": 4, "cached_tokens": 0}}])";
    auto r = sglang().decode_response(body, req);
    REQUIRE_MESSAGE(r.ok(), r.error().message);
    REQUIRE(r->choices.size() == 4);
    CHECK(r->id == "i0");
    CHECK(r->choices[1].index == 1);
    CHECK(r->choices[3].id == "i3");
    CHECK(r->choices[0].finish.matched_token == 2);
    CHECK(r->choices[1].finish.matched_text == "\n");
    CHECK(r->choices[2].finish.kind == FinishKind::abort);
    CHECK(r->choices[2].finish.message == "bad");
    CHECK(r->choices[3].finish.length == 4);
    CHECK(r->usage.completion_tokens == 10);
    CHECK(r->usage.prompt_tokens == 11);  // 7 + 4, not 22
    CHECK(r->usage.cached_tokens == 3);
}

TEST_CASE("sglang decode_response: the pre-Sept-2024 string finish reasons") {
    const GenerationRequest req = single_request();
    const auto finish_of = [&](const char* value) {
        const std::string body = std::string(R"({"text": "x", "meta_info": {"finish_reason": )") +
                                 value + R"(, "prompt_tokens": 1, "completion_tokens": 1}})";
        auto r = sglang().decode_response(body, req);
        REQUIRE_MESSAGE(r.ok(), r.error().message);
        return r->choices[0].finish;
    };
    CHECK(finish_of(R"("length")").kind == FinishKind::length);
    CHECK(finish_of(R"("FINISH_LENGTH: 32")").length == 32);
    CHECK(finish_of(R"("stop")").kind == FinishKind::stop);
    CHECK(finish_of(R"("eos_token")").kind == FinishKind::stop);
    CHECK(finish_of(R"("FINISH_MATCHED_STR: ###")").kind == FinishKind::stop);
    CHECK(finish_of(R"("abort")").kind == FinishKind::abort);
    CHECK(finish_of("null").kind == FinishKind::none);
    CHECK(finish_of(R"({"type": "stop", "matched": [151645, 151643]})").matched_token == 151645);
}

TEST_CASE("sglang decode_response: what is not SGLang output is a 502 saying why") {
    const GenerationRequest req = single_request();
    const std::pair<const char*, const char*> cases[] = {
        {"<html>Bad Gateway</html>", "malformed JSON"},
        {"", "empty"},
        {"42", "not an object or an array"},
        {"[]", "empty list"},
        {R"([{"text": "a", "meta_info": {}}, 3])", "item 1"},
        {R"({"generated_text": "TGI answered"})", "no 'text'"},
        {R"({"text": ["vLLM legacy"]})", "got an array"},
        {R"({"output_ids": [1, 2], "meta_info": {}})", "--skip-tokenizer-init"},
        {R"({"text": "a"})", "meta_info"},
        {R"({"text": "a", "meta_info": {"finish_reason": 5}})", "finish_reason"},
        {R"({"text": "a", "meta_info": {"finish_reason": {"matched": 1}}})", "finish_reason"},
        {R"({"text": "a", "meta_info": {"prompt_tokens": "5"}})", "meta_info.prompt_tokens"},
        {R"({"error": {"message": "prompt too long"}})", "prompt too long"},
    };
    for (const auto& [body, fragment] : cases) {
        CAPTURE(body);
        auto r = sglang().decode_response(body, req);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 502);
        CHECK(r.error().type == "upstream_error");
        CHECK_MESSAGE(r.error().message.find(fragment) != std::string::npos, r.error().message);
    }
}
