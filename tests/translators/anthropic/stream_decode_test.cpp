// translators/anthropic/stream_decode.cpp: decode the SDK fixtures, unknown events, a tool call
// another dialect's client cannot take, and every 502 path.

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/anthropic/test_util.hpp"

namespace {

using anthropic_test::codec;
using anthropic_test::decode_stream;
using anthropic_test::fixture;
using anthropic_test::sse_events;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using Type = StreamEvent::Type;

void check_malformed(std::string_view data, std::string_view says) {
    INFO(data);
    StreamState state;
    std::vector<StreamEvent> events;
    codec().decode_stream_event(data, state, events);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == Type::error);
    CHECK(events[0].error.status == 502);
    CHECK(events[0].error.type == "upstream_error");
    CHECK(events[0].error.message.find(says) != std::string::npos);
}

}  // namespace

TEST_CASE("anthropic decode_stream_event: SDK text stream (§11.4)") {
    StreamState state;
    std::vector<StreamEvent> events = decode_stream(fixture("basic_response.sse"), state);
    REQUIRE(events.size() == 8);
    // The ping (after content_block_start) is a keep-alive, passed on to the client.
    REQUIRE(events[1].type == Type::keepalive);
    CHECK(events[1].text == " ping");
    events.erase(events.begin() + 1);
    CHECK(events[0].type == Type::chunk);  // message_start: the prompt count, no text
    CHECK(events[0].text.empty());
    CHECK(events[0].usage.prompt_tokens == 11);
    CHECK_FALSE(events[0].usage.completion_tokens);
    std::string all;
    for (int i = 1; i <= 3; ++i) {
        CHECK(events[i].type == Type::chunk);
        CHECK_FALSE(events[i].finish);
        all += events[i].text;
    }
    CHECK(all == "Hello there!");
    CHECK(events[4].type == Type::chunk);
    REQUIRE(events[4].finish);
    CHECK(events[4].finish->kind == FinishKind::stop);
    CHECK_FALSE(events[4].finish->matched_text);
    CHECK(events[4].usage.completion_tokens == 6);
    CHECK(events[4].usage.prompt_tokens == 11);
    CHECK(events[5].type == Type::usage);
    CHECK(events[5].usage.prompt_tokens == 11);
    CHECK(events[5].usage.completion_tokens == 6);
    CHECK(events[6].type == Type::done);
}

TEST_CASE("anthropic decode_stream_event: mid-stream error (§11.5)") {
    StreamState state;
    const std::vector<StreamEvent> events = decode_stream(fixture("error_event.sse"), state);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == Type::error);
    CHECK(events[0].error.status == 529);
    CHECK(events[0].error.type == "overloaded_error");
    CHECK(events[0].error.message == "Overloaded");
}

TEST_CASE("anthropic decode_stream_event: stop sequences, other blocks, unknown events") {
    StreamState state;
    state.max_tokens = 50;
    std::vector<StreamEvent> events;
    const std::string_view datas[] = {
        R"({"type":"content_block_delta","index":0,)"
        R"("delta":{"type":"thinking_delta","thinking":"x"}})",
        R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})",
        R"({"type":"some_future_event"})",
        R"({"type":"message_delta","delta":{"stop_reason":"stop_sequence",)"
        R"("stop_sequence":"###"},"usage":{"output_tokens":3}})",
        R"({"type":"message_delta","delta":{"stop_reason":"max_tokens"},)"
        R"("usage":{"output_tokens":4}})"};
    for (std::string_view data : datas) {
        codec().decode_stream_event(data, state, events);
    }
    REQUIRE(events.size() == 4);
    REQUIRE(events[0].finish);
    CHECK(events[0].finish->matched_text == "###");
    CHECK_FALSE(events[2].finish);  // a finish goes out once
    CHECK(events[2].usage.completion_tokens == 4);

    StreamState s2;
    s2.max_tokens = 50;
    events.clear();
    codec().decode_stream_event(
        R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},)"
        R"("usage":{"input_tokens":20,"output_tokens":50}})",
        s2, events);
    REQUIRE(events.size() == 2);
    CHECK(events[0].finish->kind == FinishKind::length);
    CHECK(events[0].finish->length == 50);
    CHECK(events[1].usage.prompt_tokens == 20);
}

TEST_CASE("anthropic decode_stream_event: malformed events are 502 errors") {
    check_malformed("{", "malformed");
    check_malformed("[1]", "'type'");
    check_malformed(R"({"type":1})", "'type'");
    check_malformed(R"({"type":"content_block_delta","index":0})", "delta");
    check_malformed(R"({"type":"content_block_delta","delta":{"type":"text_delta"}})", "'text'");
    check_malformed(R"({"type":"message_delta","delta":{"stop_reason":7}})", "stop_reason");
    check_malformed(R"({"type":"message_delta","usage":{"output_tokens":"x"}})", "output_tokens");
    check_malformed(R"({"type":"message_start","message":{"usage":{"input_tokens":1.5}}})",
                    "input_tokens");
}

// Item 7: a translated pair says it would lose the tool call instead of a silent 200.
TEST_CASE("anthropic decode stream: a tool call for another dialect's client is an error") {
    StreamState dec;
    dec.client = infergate::canonical::Dialect::tgi;  // (OpenAI, Ollama: tool_stream_test)
    const auto events = decode_stream(fixture("tool_use_stream.sse"), dec);
    bool errored = false;
    for (const auto& ev : events) {
        if (ev.type == Type::error) {
            errored = true;
            CHECK(ev.error.status == 502);
            CHECK(ev.error.message.find("tool_use") != std::string::npos);
            CHECK(ev.error.message.find("tgi") != std::string::npos);
        }
        CHECK(ev.carried.empty());
    }
    CHECK(errored);
}
