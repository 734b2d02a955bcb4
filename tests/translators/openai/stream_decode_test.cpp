// translators/openai/stream_decode.cpp: backend SSE payloads to canonical events.

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/openai/test_util.hpp"

namespace {

using openai_test::chat;
using openai_test::completions;
using openai_test::decode_stream;
using openai_test::fixture;

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using infergate::translators::Codec;
namespace openai = infergate::translators::openai;
using Type = StreamEvent::Type;

std::vector<StreamEvent> decode_one(const Codec& codec, std::string_view payload) {
    StreamState state;
    std::vector<StreamEvent> events;
    codec.decode_stream_event(payload, state, events);
    return events;
}

}  // namespace

TEST_SUITE("openai stream decode (upstream)") {
    TEST_CASE("§11.1 captured: text, length finish, usage 79/1, done") {
        StreamState state;
        const auto events = decode_stream(chat(), fixture("chat_stream_max_tokens.sse"), state);
        REQUIRE(events.size() == 4);  // the role-only first chunk yields nothing
        CHECK(events[0].type == Type::chunk);
        CHECK(events[0].index == 0);
        CHECK(events[0].text == "{\"");
        CHECK_FALSE(events[0].finish);
        CHECK(events[1].type == Type::chunk);
        CHECK(events[1].text.empty());
        REQUIRE(events[1].finish);
        CHECK(events[1].finish->kind == FinishKind::length);
        CHECK(events[2].type == Type::usage);
        CHECK(events[2].usage.prompt_tokens == 79);
        CHECK(events[2].usage.completion_tokens == 1);
        CHECK(events[3].type == Type::done);
    }

    TEST_CASE("§11.2 captured: Foo, !, stop, usage 9/2, done") {
        StreamState state;
        const auto events = decode_stream(chat(), fixture("chat_stream_logprobs.sse"), state);
        REQUIRE(events.size() == 5);
        CHECK(events[0].text == "Foo");
        CHECK(events[1].text == "!");
        CHECK_FALSE(events[1].finish);
        REQUIRE(events[2].finish);
        CHECK(events[2].finish->kind == FinishKind::stop);
        CHECK_FALSE(events[2].finish->matched_text);
        CHECK(events[3].type == Type::usage);
        CHECK(events[3].usage.prompt_tokens == 9);
        CHECK(events[3].usage.completion_tokens == 2);
        CHECK(events[4].type == Type::done);
    }

    TEST_CASE("vLLM completions stream: running usage per chunk, finish on the last text") {
        StreamState state;
        state.max_tokens = 5;
        const auto events = decode_stream(
            completions(), fixture("vllm_completions_stream_continuous_usage.sse"), state);
        REQUIRE(events.size() == 7);
        const char* texts[] = {" Paris", ".", " It", " is", " also"};
        for (int i = 0; i < 5; ++i) {
            CAPTURE(i);
            CHECK(events[i].type == Type::chunk);
            CHECK(events[i].text == texts[i]);
            CHECK(events[i].usage.prompt_tokens == 6);
            CHECK(events[i].usage.completion_tokens == i + 1);
            CHECK(events[i].finish.has_value() == (i == 4));
        }
        CHECK(events[4].finish->kind == FinishKind::length);
        CHECK(events[4].finish->length == 5);
        CHECK(events[5].type == Type::usage);
        CHECK(events[5].usage.completion_tokens == 5);
        CHECK(events[6].type == Type::done);
    }

    TEST_CASE("SGLang chat: a separate empty-delta finish chunk with matched_stop") {
        auto events = decode_one(chat(), R"({"id":"1","choices":[{"index":1,"delta":{},
            "finish_reason":"stop","matched_stop":"###"}]})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].index == 1);
        CHECK(events[0].finish->matched_text == "###");
        events = decode_one(chat(), R"({"choices":[{"index":0,"delta":{"content":null},
            "finish_reason":"stop","matched_stop":128009}]})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].finish->matched_token == 128009);
        // vLLM's stop_reason on a chat chunk.
        events = decode_one(chat(), R"({"choices":[{"index":0,"delta":{"content":"x"},
            "finish_reason":"stop","stop_reason":"\n"}]})");
        CHECK(events[0].text == "x");
        CHECK(events[0].finish->matched_text == "\n");
    }

    TEST_CASE("role-only deltas yield nothing unless they finish") {
        CHECK(decode_one(chat(), R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})")
                  .empty());
        CHECK(decode_one(chat(), R"({"choices":[{"index":0,"delta":{"role":"assistant",
            "content":""},"finish_reason":null}],"usage":null})")
                  .empty());
        const auto events = decode_one(
            chat(),
            R"({"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"length"}]})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].text.empty());
        CHECK(events[0].finish->kind == FinishKind::length);
    }

    TEST_CASE("TGI-style empty finish_reason means none; eos_token means stop") {
        CHECK(decode_one(completions(), R"({"choices":[{"index":0,"text":"","finish_reason":""}]})")
                  .empty());
        auto events =
            decode_one(completions(), R"({"choices":[{"index":0,"text":"a","finish_reason":""}]})");
        REQUIRE(events.size() == 1);
        CHECK_FALSE(events[0].finish);
        events = decode_one(completions(),
                            R"({"choices":[{"index":0,"text":"","finish_reason":"eos_token"}]})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].finish->kind == FinishKind::stop);
    }

    TEST_CASE("several choices in one chunk; index defaults to the position") {
        const auto events =
            decode_one(completions(), R"({"choices":[{"text":"a"},{"index":3,"text":"b"}]})");
        REQUIRE(events.size() == 2);
        CHECK(events[0].index == 0);
        CHECK(events[1].index == 3);
        CHECK(events[1].text == "b");
    }

    TEST_CASE("usage with an empty choices list is a usage event; cached tokens kept") {
        const auto events = decode_one(chat(), R"({"choices":[],"usage":{"prompt_tokens":4,
            "completion_tokens":2,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":3}}})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].type == Type::usage);
        CHECK(events[0].usage == Usage{4, 2, 3});
        CHECK(decode_one(chat(), R"({"choices":[]})").empty());
    }

    TEST_CASE("[DONE], with or without surrounding blanks") {
        for (std::string_view d : {"[DONE]", " [DONE]\r\n"}) {
            const auto events = decode_one(chat(), d);
            REQUIRE(events.size() == 1);
            CHECK(events[0].type == Type::done);
        }
    }

    TEST_CASE("in-band errors: nested, string, flat, TGI") {
        auto events = decode_one(chat(), R"({"error":{"message":"boom","type":"BadRequestError",)"
                                         R"("param":null,"code":400}})");
        REQUIRE(events.size() == 1);
        CHECK(events[0].type == Type::error);
        CHECK(events[0].error.status == 400);
        CHECK(events[0].error.message == "boom");

        events = decode_one(chat(), R"({"error":"Unauthorized"})");
        CHECK(events[0].error.status == 502);
        CHECK(events[0].error.message == "Unauthorized");

        events = decode_one(completions(), R"({"object":"error","message":"old vLLM",)"
                                           R"("type":"InternalServerError","code":500})");
        CHECK(events[0].type == Type::error);
        CHECK(events[0].error.status == 500);
        CHECK(events[0].error.message == "old vLLM");

        events = decode_one(chat(), R"({"error":{"message":"m","http_status_code":422}})");
        CHECK(events[0].error.status == 422);
    }

    TEST_CASE("malformed data is an error event, not a crash") {
        for (std::string_view d : {"{\"choices\":[", "", "42", R"({"choices":[7]})"}) {
            INFO(d);
            const auto events = decode_one(completions(), d);
            REQUIRE(events.size() == 1);
            CHECK(events[0].type == Type::error);
            CHECK(events[0].error.status == 502);
            CHECK(events[0].error.message.rfind("the backend sent malformed stream data: ", 0) ==
                  0);
        }
    }
}
