// translators/vllm_legacy/stream_codec.cpp: the Codec hooks vLLM legacy overrides (the prompt
// its records echo, on both sides; the token budget and the end of a stream with no
// terminator).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/translators/vllm_legacy/test_util.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::Prompt;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::translators::vllm_legacy::stream_prompt;
using vllm_legacy_test::codec;

GenerationRequest request(Dialect client, std::optional<int64_t> max_tokens) {
    GenerationRequest req;
    req.dialect = client;
    req.prompts.push_back(Prompt{"San Francisco is a", {}, false});
    req.sampling.max_tokens = max_tokens;
    return req;
}

}  // namespace

TEST_CASE("vllm_legacy init_client_stream: every record echoes the prompt") {
    StreamState enc;
    codec().init_client_stream(enc, request(Dialect::vllm_legacy, 5));
    CHECK(stream_prompt(enc) == "San Francisco is a");
    CHECK_FALSE(enc.max_tokens);  // the encoder's budget is the proxy's business
    StreamEvent ev;
    ev.text = " city";
    std::string out;
    codec().encode_stream_event(ev, enc, out);
    CHECK(out.find(R"("San Francisco is a city")") != std::string::npos);

    StreamState empty;
    codec().init_client_stream(empty, GenerationRequest{});  // no prompt: nothing to echo
    CHECK(stream_prompt(empty).empty());
}

TEST_CASE("vllm_legacy init_upstream_stream: the prompt and the budget the backend was sent") {
    StreamState own;
    codec().init_upstream_stream(own, request(Dialect::openai_chat, 5));
    CHECK(stream_prompt(own) == "San Francisco is a");
    CHECK(own.max_tokens == 5);  // the client's
    StreamState sglang;
    codec().init_upstream_stream(sglang, request(Dialect::sglang, std::nullopt));
    CHECK(sglang.max_tokens == 128);  // the client dialect's default, written upstream
    StreamState chat;
    codec().init_upstream_stream(chat, request(Dialect::openai_chat, std::nullopt));
    CHECK(chat.max_tokens == 16);  // none: the server's own

    StreamState empty;
    codec().init_upstream_stream(empty, GenerationRequest{});
    CHECK(stream_prompt(empty).empty());
    CHECK_FALSE(empty.max_tokens);
}

TEST_CASE("vllm_legacy decode_stream_end: a clean end of the body finishes the stream") {
    StreamState dec;
    codec().init_upstream_stream(dec, request(Dialect::vllm_legacy, 2));
    std::vector<StreamEvent> out;
    codec().decode_stream_event(R"({"text":["San Francisco is a city"]})", dec, out);
    codec().decode_stream_event(R"({"text":["San Francisco is a city in"]})", dec, out);
    REQUIRE(out.size() == 2);
    codec().decode_stream_end(dec, out);
    REQUIRE(out.size() == 4);
    REQUIRE(out[2].finish);
    CHECK(out[2].finish->kind == FinishKind::length);  // two records, budget two
    CHECK(out[3].type == StreamEvent::Type::done);
    codec().decode_stream_end(dec, out);
    CHECK(out.size() == 4);  // idempotent
}
