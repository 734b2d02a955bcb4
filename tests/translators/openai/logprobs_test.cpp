// Log probabilities and echo in the OpenAI dialects, both ways: the client's completions object
// {text_offset, token_logprobs, tokens, top_logprobs} as vLLM's _create_completion_logprobs
// writes it (vllm/entrypoints/openai/serving_completion.py), the chat object {content: [...]}
// (serving_chat.py _create_chat_logprobs), the request settings, and an OpenAI-compatible
// backend's answers read into the canonical entries.

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/logprob_util.hpp"
#include "translators/canonical/json.hpp"
#include "translators/openai/codec.hpp"

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
using infergate::canonical::TokenAlternative;
using infergate::canonical::TokenLogprob;
using infergate::translators::Codec;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;
namespace openai = infergate::translators::openai;
namespace json = infergate::json;

const Codec& completions() {
    return openai::completions_codec();
}
const Codec& chat() {
    return openai::chat_codec();
}

std::string fixture(std::string_view name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/openai/" + std::string(name),
                     std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

GenerationRequest decode_req(const Codec& codec, std::string_view body) {
    INFO(body);
    auto r = codec.decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    return std::move(r.value());
}

std::string encode_req(const Codec& codec, const GenerationRequest& req, Flavor flavor) {
    UpstreamOptions options;
    options.flavor = flavor;
    auto r = codec.encode_request(req, options);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    return r.value();
}

// The compact JSON of `key` in the first choice of an encoded answer.
std::string choice_member(const std::string& body, std::string_view key) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(body, doc));
    const json::Value* choices = json::find(doc, "choices");
    REQUIRE(choices != nullptr);
    REQUIRE(choices->IsArray());
    REQUIRE(choices->Size() > 0);
    const json::Value* v = json::find((*choices)[0], key);
    REQUIRE(v != nullptr);
    return json::to_string(*v);
}

// lm-evaluation-harness's loglikelihood request (local-completions), with a text prompt.
constexpr std::string_view kHarness =
    R"({"model":"tiny","prompt":["The cat"],"max_tokens":1,"temperature":0,"logprobs":1,)"
    R"("seed":1234,"echo":true})";

// The canonical answer to it: the prompt's two entries (the first has no logprob) and one token.
GenerationResult harness_result() {
    GenerationResult r;
    r.id = "cmpl-1";
    r.model = "tiny";
    Choice& c = r.choices.emplace_back();
    c.text = " sat";
    c.finish.kind = FinishKind::length;
    c.prompt_logprobs = {entry("The", std::nullopt, std::nullopt),
                         entry(" cat", std::nullopt, -2.5,
                               {alt(" dog", std::nullopt, -1.5), alt(" cat", std::nullopt, -2.5)})};
    c.logprobs = {entry(" sat", std::nullopt, -0.75,
                        {alt(" sat", std::nullopt, -0.75), alt(" ran", std::nullopt, -1.25)})};
    return r;
}

constexpr std::string_view kHarnessLogprobs =
    R"({"text_offset":[0,3,7],"token_logprobs":[null,-2.5,-0.75],"tokens":["The"," cat"," sat"],)"
    R"("top_logprobs":[null,{" cat":-2.5," dog":-1.5},{" sat":-0.75}]})";

}  // namespace

TEST_SUITE("openai logprobs: request decode (client)") {
    TEST_CASE(
        "completions logprobs is the number of alternatives; echo with it scores the prompt") {
        GenerationRequest req = decode_req(completions(), kHarness);
        CHECK(req.return_logprob == true);
        CHECK(req.top_logprobs == 1);
        CHECK(req.echo);
        CHECK(req.prompt_logprob_start == 0);

        req = decode_req(completions(), R"({"prompt":"a","logprobs":0})");
        CHECK(req.return_logprob == true);  // 0: the chosen token's logprob only
        CHECK(req.top_logprobs == 0);
        CHECK_FALSE(req.prompt_logprob_start.has_value());

        req = decode_req(completions(), R"({"prompt":"a","echo":true})");
        CHECK_FALSE(req.return_logprob.has_value());
        CHECK_FALSE(req.prompt_logprob_start.has_value());

        req = decode_req(completions(), R"({"prompt":"a","logprobs":null,"echo":true})");
        CHECK_FALSE(req.prompt_logprob_start.has_value());

        auto bad = completions().decode_request(R"({"prompt":"a","logprobs":6})");
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().param == "logprobs");
    }

    TEST_CASE("a token-id prompt's echo asks for its entries, whose texts are its text") {
        GenerationRequest req =
            decode_req(completions(), R"({"prompt":[464,3797],"max_tokens":1,"echo":true})");
        CHECK(req.prompt_logprob_start == 0);
        CHECK_FALSE(req.return_logprob.has_value());
        // The client did not ask for logprobs: none are written, the text comes from the entries.
        std::string out;
        completions().encode_response(harness_result(), req, out);
        CHECK(choice_member(out, "text") == R"("The cat sat")");
        CHECK(choice_member(out, "logprobs") == "null");
        // A backend without the prompt's entries: 400 naming echo.
        UpstreamOptions options;
        options.flavor = Flavor::llamacpp;
        auto r = completions().encode_request(req, options);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "echo");
        // vLLM is asked for them (echo with logprobs 0).
        const std::string body = encode_req(completions(), req, Flavor::vllm);
        CHECK(body.find(R"("echo":true,"logprobs":0)") != std::string::npos);
    }

    TEST_CASE("chat logprobs and top_logprobs") {
        GenerationRequest req = decode_req(
            chat(),
            R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3})");
        CHECK(req.return_logprob == true);
        CHECK(req.top_logprobs == 3);
        CHECK_FALSE(req.prompt_logprob_start.has_value());
        auto bad = chat().decode_request(
            R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":3})");
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().param == "top_logprobs");
    }
}

TEST_SUITE("openai logprobs: response encode (client)") {
    TEST_CASE("the harness's loglikelihood answer: prompt entries first, offsets over the echo") {
        const GenerationRequest req = decode_req(completions(), kHarness);
        std::string out;
        completions().encode_response(harness_result(), req, out);
        CHECK(choice_member(out, "text") == R"("The cat sat")");
        // " sat" is its own top 1: the dict holds it once (a Python dict keyed by text).
        CHECK(choice_member(out, "logprobs") == kHarnessLogprobs);
    }

    TEST_CASE("without echo the offsets start at the generated text; at most N alternatives") {
        GenerationRequest req = decode_req(completions(), R"({"prompt":"x","logprobs":1})");
        GenerationResult r;
        Choice& c = r.choices.emplace_back();
        c.text = "éa";
        c.logprobs = {entry("é", std::nullopt, -0.5,
                            {alt("e", std::nullopt, -0.25), alt("é", std::nullopt, -0.5),
                             alt("è", std::nullopt, -3)}),
                      entry("a", std::nullopt, -1, {alt("a", std::nullopt, -1)})};
        std::string out;
        completions().encode_response(r, req, out);
        // text_offset counts code points (Python len), not bytes.
        CHECK(choice_member(out, "logprobs") ==
              R"({"text_offset":[0,1],"token_logprobs":[-0.5,-1.0],"tokens":["é","a"],)"
              R"("top_logprobs":[{"é":-0.5,"e":-0.25},{"a":-1.0}]})");

        req = decode_req(completions(), R"({"prompt":"x","logprobs":0})");
        out.clear();
        completions().encode_response(r, req, out);
        CHECK(choice_member(out, "logprobs") ==
              R"({"text_offset":[0,1],"token_logprobs":[-0.5,-1.0],"tokens":["é","a"],)"
              R"("top_logprobs":[{"é":-0.5},{"a":-1.0}]})");
    }

    TEST_CASE("null when not asked; empty lists when asked and the backend gave none") {
        GenerationResult r;
        r.choices.emplace_back().text = "hi";
        r.choices.back().logprobs = {entry("hi", std::nullopt, -1)};
        std::string out;
        completions().encode_response(r, decode_req(completions(), R"({"prompt":"x"})"), out);
        CHECK(choice_member(out, "logprobs") == "null");
        out.clear();
        chat().encode_response(
            r, decode_req(chat(), R"({"messages":[{"role":"user","content":"x"}]})"), out);
        CHECK(choice_member(out, "logprobs") == "null");

        r.choices.back().logprobs.clear();
        out.clear();
        completions().encode_response(
            r, decode_req(completions(), R"({"prompt":"x","logprobs":2})"), out);
        CHECK(choice_member(out, "logprobs") ==
              R"({"text_offset":[],"token_logprobs":[],"tokens":[],"top_logprobs":[]})");
        out.clear();
        chat().encode_response(
            r,
            decode_req(chat(), R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})"),
            out);
        CHECK(choice_member(out, "logprobs") == R"({"content":[]})");
    }

    TEST_CASE("echo when the backend gave no prompt entries: offsets still count the prompt") {
        const GenerationRequest req = decode_req(completions(), kHarness);
        GenerationResult r = harness_result();
        r.choices[0].prompt_logprobs.clear();
        std::string out;
        completions().encode_response(r, req, out);
        CHECK(choice_member(out, "logprobs") ==
              R"({"text_offset":[7],"token_logprobs":[-0.75],"tokens":[" sat"],)"
              R"("top_logprobs":[{" sat":-0.75}]})");
    }

    TEST_CASE("max_tokens 0 with echo scores the prompt alone (vLLM: only return the prompt)") {
        GenerationRequest req = decode_req(
            completions(), R"({"prompt":"The cat","max_tokens":0,"logprobs":1,"echo":true})");
        // A backend that had to be asked for one token generated it: it is not shown.
        std::string out;
        completions().encode_response(harness_result(), req, out);
        CHECK(choice_member(out, "text") == R"("The cat")");
        CHECK(choice_member(out, "logprobs") ==
              R"({"text_offset":[0,3],"token_logprobs":[null,-2.5],"tokens":["The"," cat"],)"
              R"("top_logprobs":[null,{" cat":-2.5," dog":-1.5}]})");
    }

    TEST_CASE("a token-id prompt is echoed from its entries' texts; -inf is written -9999.0") {
        GenerationRequest req = decode_req(
            completions(), R"({"prompt":[464,3797],"max_tokens":1,"logprobs":0,"echo":true})");
        GenerationResult r = harness_result();
        r.choices[0].logprobs[0].logprob = -std::numeric_limits<double>::infinity();
        std::string out;
        completions().encode_response(r, req, out);
        CHECK(choice_member(out, "text") == R"("The cat sat")");
        CHECK(
            choice_member(out, "logprobs") ==
            R"({"text_offset":[0,3,7],"token_logprobs":[null,-2.5,-9999.0],)"
            R"("tokens":["The"," cat"," sat"],"top_logprobs":[null,{" cat":-2.5},{" sat":-9999.0}]})");
    }

    TEST_CASE("chat: {content: [{token, logprob, bytes, top_logprobs}]} with N alternatives") {
        GenerationRequest req = decode_req(
            chat(),
            R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":1})");
        GenerationResult r;
        Choice& c = r.choices.emplace_back();
        c.text = "Hi";
        c.logprobs = {entry("Hi", std::nullopt, -0.5,
                            {alt("Hi", std::nullopt, -0.5), alt("Hello", std::nullopt, -1.5)})};
        std::string out;
        chat().encode_response(r, req, out);
        CHECK(choice_member(out, "logprobs") ==
              R"({"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],)"
              R"("top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]}]}]})");
    }
}

TEST_SUITE("openai logprobs: request encode (upstream)") {
    TEST_CASE("the harness's request reaches vLLM as it was sent: echo and logprobs") {
        GenerationRequest req = decode_req(completions(), kHarness);
        const std::string body = encode_req(completions(), req, Flavor::vllm);
        CHECK(body.find(R"("echo":true)") != std::string::npos);
        CHECK(body.find(R"("logprobs":1)") != std::string::npos);
    }

    TEST_CASE("an SGLang client's prompt logprobs: echo upstream; refused where there are none") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {Prompt{"The cat", {}, false}};
        req.return_logprob = true;
        req.top_logprobs = 2;
        req.prompt_logprob_start = 0;
        CHECK(encode_req(completions(), req, Flavor::vllm) ==
              R"({"prompt":"The cat","max_tokens":128,"echo":true,"logprobs":2})");
        CHECK(encode_req(completions(), req, Flavor::sglang).find(R"("echo":true)") !=
              std::string::npos);
        for (Flavor f : {Flavor::llamacpp, Flavor::tgi}) {
            UpstreamOptions options;
            options.flavor = f;
            auto r = completions().encode_request(req, options);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error().status == 400);
            CHECK(r.error().param == "logprob_start_len");
        }
        // TGI's completions route has no logprobs at all.
        req.prompt_logprob_start.reset();
        UpstreamOptions options;
        options.flavor = Flavor::tgi;
        auto r = completions().encode_request(req, options);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "return_logprob");
        // llama.cpp reports nothing with 0 alternatives: it is asked for one.
        req.top_logprobs = 0;
        CHECK(encode_req(completions(), req, Flavor::llamacpp).find(R"("logprobs":1)") !=
              std::string::npos);
    }

    TEST_CASE("the OpenAI API's limits: 5 alternatives on completions, 20 on chat") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {Prompt{"a", {}, false}};
        req.return_logprob = true;
        req.top_logprobs = 6;
        UpstreamOptions options;
        options.flavor = Flavor::openai;
        auto r = completions().encode_request(req, options);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == "top_logprobs_num");
        req.top_logprobs = 5;
        CHECK(encode_req(completions(), req, Flavor::openai).find(R"("logprobs":5)") !=
              std::string::npos);
        CHECK(encode_req(completions(), req, Flavor::vllm).find(R"("logprobs":5)") !=
              std::string::npos);
    }

    TEST_CASE("echo alone is never sent: the client's encoder echoes (no doubled prompt)") {
        GenerationRequest req;
        req.dialect = Dialect::tgi;  // return_full_text
        req.prompts = {Prompt{"The cat", {}, false}};
        req.echo = true;
        CHECK(encode_req(completions(), req, Flavor::vllm).find("echo") == std::string::npos);
    }

    TEST_CASE("chat: logprobs true and top_logprobs; llama.cpp at least one alternative") {
        GenerationRequest req;
        req.dialect = Dialect::ollama_chat;
        req.kind = RequestKind::chat;
        req.messages = {infergate::canonical::text_message("user", "hi")};
        req.return_logprob = true;
        const std::string body = encode_req(chat(), req, Flavor::vllm);
        CHECK(body.find(R"("logprobs":true)") != std::string::npos);
        CHECK(body.find("top_logprobs") == std::string::npos);
        CHECK(
            encode_req(chat(), req, Flavor::llamacpp).find(R"("logprobs":true,"top_logprobs":1)") !=
            std::string::npos);
        req.top_logprobs = 3;
        CHECK(encode_req(chat(), req, Flavor::tgi).find(R"("logprobs":true,"top_logprobs":3)") !=
              std::string::npos);
        // The prompt's logprobs cannot come from a chat route.
        req.prompt_logprob_start = 0;
        UpstreamOptions options;
        options.flavor = Flavor::vllm;
        auto r = chat().encode_request(req, options);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
    }
}

TEST_SUITE("openai logprobs: response decode (upstream)") {
    TEST_CASE("vLLM's echo answer: the prompt's entries and text come off; round trip is exact") {
        const GenerationRequest req = decode_req(completions(), kHarness);
        auto r = completions().decode_response(fixture("vllm_completions_echo_logprobs.json"), req);
        REQUIRE(r.ok());
        REQUIRE(r->choices.size() == 1);
        const Choice& c = r->choices[0];
        CHECK(c.text == " sat");
        REQUIRE(c.prompt_logprobs.size() == 2);
        CHECK(c.prompt_logprobs[0].token == "The");
        CHECK_FALSE(c.prompt_logprobs[0].logprob.has_value());
        CHECK(c.prompt_logprobs[1].logprob == -2.5);
        // The dict's entries, most likely first.
        REQUIRE(c.prompt_logprobs[1].top.size() == 2);
        CHECK(c.prompt_logprobs[1].top[0].token == " dog");
        REQUIRE(c.logprobs.size() == 1);
        CHECK(c.logprobs[0].token == " sat");
        CHECK(c.logprobs[0].logprob == -0.75);

        // Encoded for the same client, the logprobs object is the backend's (greedy: the chosen
        // token is its own top 1, one dict entry).
        std::string out;
        completions().encode_response(r.value(), req, out);
        CHECK(choice_member(out, "text") == R"("The cat sat")");
        CHECK(choice_member(out, "logprobs") == kHarnessLogprobs);
    }

    TEST_CASE("an SGLang client's logprob_start_len keeps the prompt entries from there") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {Prompt{"The cat", {}, false}};
        req.return_logprob = true;
        req.prompt_logprob_start = 1;
        auto r = completions().decode_response(fixture("vllm_completions_echo_logprobs.json"), req);
        REQUIRE(r.ok());
        REQUIRE(r->choices[0].prompt_logprobs.size() == 1);
        CHECK(r->choices[0].prompt_logprobs[0].token == " cat");
        CHECK(r->choices[0].text == " sat");
    }

    TEST_CASE("a token-id prompt: its length splits the entries, their texts the echoed text") {
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {Prompt{{}, {464, 3797}, true}};
        req.return_logprob = true;
        req.prompt_logprob_start = 0;
        std::string body = fixture("vllm_completions_echo_logprobs.json");
        body.replace(body.find(R"("prompt_tokens":2)"), 17, R"("prompt_tokens":9)");
        auto r = completions().decode_response(body, req);
        REQUIRE(r.ok());
        CHECK(r->choices[0].prompt_logprobs.size() == 2);
        CHECK(r->choices[0].logprobs.size() == 1);
        CHECK(r->choices[0].text == " sat");
    }

    TEST_CASE("the chat form, on chat and on llama.cpp's completions route") {
        GenerationRequest req;
        req.dialect = Dialect::ollama_generate;
        req.prompts = {Prompt{"x", {}, false}};
        req.return_logprob = true;
        const std::string body =
            R"({"choices":[{"index":0,"text":"Hi","logprobs":{"content":[{"id":9,"token":"Hi",)"
            R"("bytes":[72,105],"logprob":-0.5,"top_logprobs":[{"id":9,"token":"Hi","bytes":)"
            R"([72,105],"logprob":-0.5}]}]},"finish_reason":"stop"}]})";
        auto r = completions().decode_response(body, req);
        REQUIRE(r.ok());
        REQUIRE(r->choices[0].logprobs.size() == 1);
        CHECK(r->choices[0].logprobs[0].id == 9);
        CHECK(r->choices[0].logprobs[0].top.size() == 1);

        req.kind = RequestKind::chat;
        const std::string chat_body =
            R"({"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},)"
            R"("logprobs":{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],)"
            R"("top_logprobs":[]}]},"finish_reason":"stop"}]})";
        auto rc = chat().decode_response(chat_body, req);
        REQUIRE(rc.ok());
        REQUIRE(rc->choices[0].logprobs.size() == 1);
        CHECK(rc->choices[0].logprobs[0].logprob == -0.5);
    }

    TEST_CASE("malformed logprobs are a 502 that says where") {
        const std::string body =
            R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[]},)"
            R"("finish_reason":"stop"}]})";
        auto r = completions().decode_response(body, GenerationRequest{});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 502);
        CHECK(r.error().message.find("choices[0].logprobs.token_logprobs") != std::string::npos);
    }
}

namespace {

using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;

// The `data:` payloads of an SSE body.
std::vector<std::string> payloads(const std::string& sse) {
    std::vector<std::string> out;
    for (size_t at = sse.find("data: "); at != std::string::npos; at = sse.find("data: ", at)) {
        const size_t end = sse.find("\n\n", at);
        out.push_back(sse.substr(at + 6, end - at - 6));
        at = end;
    }
    return out;
}

std::string member_of(const std::string& payload, std::string_view key) {
    return choice_member(payload, key);
}

}  // namespace

TEST_SUITE("openai logprobs: streams") {
    TEST_CASE("completions client: echo and prompt entries on the first chunk, offsets continue") {
        GenerationRequest req = decode_req(
            completions(), R"({"prompt":"The cat","max_tokens":2,"logprobs":1,"echo":true,)"
                           R"("stream":true})");
        StreamState state;
        state.n = 1;
        state.max_tokens = req.sampling.max_tokens;
        openai::init_stream_state(state, req);
        const GenerationResult whole = harness_result();
        StreamEvent first;
        first.text = " sat";
        first.logprobs = whole.choices[0].logprobs;
        first.prompt_logprobs = whole.choices[0].prompt_logprobs;
        StreamEvent second;
        second.text = " on";
        second.logprobs = {entry(" on", std::nullopt, -0.5, {alt(" on", std::nullopt, -0.5)})};
        second.finish = infergate::canonical::FinishReason{};
        second.finish->kind = FinishKind::length;
        std::string out;
        completions().encode_stream_event(first, state, out);
        completions().encode_stream_event(second, state, out);
        const auto chunks = payloads(out);
        REQUIRE(chunks.size() == 3);  // text, text, finish
        CHECK(member_of(chunks[0], "text") == R"("The cat sat")");
        CHECK(member_of(chunks[0], "logprobs") == kHarnessLogprobs);
        CHECK(member_of(chunks[1], "text") == R"(" on")");
        CHECK(member_of(chunks[1], "logprobs") ==
              R"({"text_offset":[11],"token_logprobs":[-0.5],"tokens":[" on"],)"
              R"("top_logprobs":[{" on":-0.5}]})");
        CHECK(member_of(chunks[2], "logprobs") == "null");
        CHECK(member_of(chunks[2], "finish_reason") == R"("length")");
    }

    TEST_CASE("completions client: each choice echoes its own prompt (index / n)") {
        GenerationRequest req =
            decode_req(completions(), R"({"prompt":["A:","B:"],"n":2,"echo":true,"stream":true})");
        StreamState state;
        openai::init_stream_state(state, req);
        std::string out;
        for (int i = 0; i < 4; ++i) {
            StreamEvent ev;
            ev.index = i;
            ev.text = std::to_string(i);
            completions().encode_stream_event(ev, state, out);
            ev.text = "+";
            completions().encode_stream_event(ev, state, out);
        }
        const auto chunks = payloads(out);
        REQUIRE(chunks.size() == 8);
        CHECK(member_of(chunks[0], "text") == R"("A:0")");
        CHECK(member_of(chunks[1], "text") == R"("+")");
        CHECK(member_of(chunks[2], "text") == R"("A:1")");
        CHECK(member_of(chunks[4], "text") == R"("B:2")");
        CHECK(member_of(chunks[6], "text") == R"("B:3")");
    }

    TEST_CASE("completions client: null when not asked; echo without logprobs still counts") {
        GenerationRequest req =
            decode_req(completions(), R"({"prompt":"Hi","echo":true,"stream":true})");
        StreamState state;
        openai::init_stream_state(state, req);
        StreamEvent ev;
        ev.text = "!";
        std::string out;
        completions().encode_stream_event(ev, state, out);
        const auto chunks = payloads(out);
        REQUIRE(chunks.size() == 1);
        CHECK(member_of(chunks[0], "text") == R"("Hi!")");
        CHECK(member_of(chunks[0], "logprobs") == "null");
    }

    TEST_CASE("completions client: max_tokens 0 with echo streams the prompt alone") {
        GenerationRequest req = decode_req(
            completions(),
            R"({"prompt":"The cat","max_tokens":0,"logprobs":1,"echo":true,"stream":true})");
        StreamState state;
        state.max_tokens = req.sampling.max_tokens;
        openai::init_stream_state(state, req);
        StreamEvent ev;
        ev.text = " sat";  // the token a backend had to be asked for
        ev.logprobs = harness_result().choices[0].logprobs;
        ev.prompt_logprobs = harness_result().choices[0].prompt_logprobs;
        ev.finish = infergate::canonical::FinishReason{};
        ev.finish->kind = FinishKind::length;
        std::string out;
        completions().encode_stream_event(ev, state, out);
        const auto chunks = payloads(out);
        REQUIRE(chunks.size() == 2);
        CHECK(member_of(chunks[0], "text") == R"("The cat")");
        CHECK(member_of(chunks[0], "logprobs") ==
              R"({"text_offset":[0,3],"token_logprobs":[null,-2.5],"tokens":["The"," cat"],)"
              R"("top_logprobs":[null,{" cat":-2.5," dog":-1.5}]})");
    }

    TEST_CASE("chat client: the delta's logprobs, the empty form when the backend sent none") {
        GenerationRequest req =
            decode_req(chat(), R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,)"
                               R"("top_logprobs":1,"stream":true})");
        StreamState state;
        openai::init_stream_state(state, req);
        StreamEvent ev;
        ev.text = "Hi";
        ev.logprobs = {entry("Hi", std::nullopt, -0.5,
                             {alt("Hi", std::nullopt, -0.5), alt("Yo", std::nullopt, -2)})};
        StreamEvent bare;
        bare.text = "!";
        std::string out;
        chat().encode_stream_event(ev, state, out);
        chat().encode_stream_event(bare, state, out);
        const auto chunks = payloads(out);
        REQUIRE(chunks.size() == 3);  // role, "Hi", "!"
        CHECK(member_of(chunks[0], "logprobs") == "null");
        CHECK(member_of(chunks[1], "logprobs") ==
              R"({"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],)"
              R"("top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]}]}]})");
        CHECK(member_of(chunks[2], "logprobs") == R"({"content":[]})");
    }

    TEST_CASE(
        "vLLM's echo stream decoded: the prompt's text and entries come off the first chunk") {
        // As completion_stream_generator writes them (serving_completion.py): the first chunk
        // is prompt text + first token with the prompt's entries in front; later text_offsets
        // restart from the generated text's length (vLLM does not count the echo there).
        const std::string first =
            R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"tiny","choices":)"
            R"([{"index":0,"text":"The cat sat","logprobs":{"text_offset":[0,3,7],)"
            R"("token_logprobs":[null,-2.5,-0.75],"tokens":["The"," cat"," sat"],)"
            R"("top_logprobs":[null,{" cat":-2.5," dog":-1.5},{" sat":-0.75}]},)"
            R"("finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":2,)"
            R"("completion_tokens":1,"total_tokens":3}})";
        const std::string second =
            R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"tiny","choices":)"
            R"([{"index":0,"text":" on","logprobs":{"text_offset":[4],"token_logprobs":[-0.5],)"
            R"("tokens":[" on"],"top_logprobs":[{" on":-0.5}]},"finish_reason":"length",)"
            R"("stop_reason":null}],"usage":{"prompt_tokens":2,"completion_tokens":2,)"
            R"("total_tokens":4}})";
        GenerationRequest req;
        req.dialect = Dialect::sglang;
        req.prompts = {Prompt{"The cat", {}, false}};
        req.return_logprob = true;
        req.prompt_logprob_start = 0;
        StreamState state;
        openai::init_stream_state(state, req);
        std::vector<StreamEvent> events;
        completions().decode_stream_event(first, state, events);
        completions().decode_stream_event(second, state, events);
        REQUIRE(events.size() == 2);
        CHECK(events[0].text == " sat");
        REQUIRE(events[0].prompt_logprobs.size() == 2);
        CHECK(events[0].prompt_logprobs[1].token == " cat");
        REQUIRE(events[0].logprobs.size() == 1);
        CHECK(events[0].logprobs[0].token == " sat");
        CHECK(events[1].text == " on");
        CHECK(events[1].prompt_logprobs.empty());
        REQUIRE(events[1].logprobs.size() == 1);
        CHECK(events[1].logprobs[0].logprob == -0.5);

        // Without prompt logprobs asked nothing is split off.
        StreamState plain;
        events.clear();
        completions().decode_stream_event(first, plain, events);
        REQUIRE(events.size() == 1);
        CHECK(events[0].text == "The cat sat");
        CHECK(events[0].logprobs.size() == 3);
    }
}
