// Ollama NDJSON streams: upstream lines to canonical events, canonical events to client lines.

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/ollama/test_util.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using infergate::translators::Codec;
namespace ollama = infergate::translators::ollama;
using Type = StreamEvent::Type;

std::vector<StreamEvent> decode(const Codec& codec, std::string_view stream, StreamState& state) {
    std::vector<StreamEvent> events;
    for (const std::string& line : ollama_test::lines(stream)) {
        codec.decode_stream_event(line, state, events);
    }
    return events;
}

StreamEvent chunk(std::string text) {
    StreamEvent ev;
    ev.text = std::move(text);
    return ev;
}

StreamState client_state() {
    StreamState s;
    s.model = "llama3.2";
    s.created = 1691176965;
    return s;
}

}  // namespace

TEST_CASE("ollama decode_stream_event: the docs stream") {
    StreamState state;
    auto events =
        decode(ollama::generate_codec(), ollama_test::fixture("generate_stream.ndjson"), state);
    REQUIRE(events.size() == 8);
    std::string text;
    for (size_t i = 0; i < 7; ++i) {
        CHECK(events[i].type == Type::chunk);
        CHECK(events[i].index == 0);
        text += events[i].text;
        CHECK(events[i].finish.has_value() == (i == 6));
    }
    CHECK(text == "That's a fantastic question!");
    CHECK(events[6].text == "!");  // text on the final line is still passed on
    CHECK(events[6].finish->kind == FinishKind::stop);
    CHECK(events[6].usage == Usage{});  // no counts in this sample: unknown, not 0
    CHECK(events[7].type == Type::done);
}

TEST_CASE("ollama decode_stream_event: final object with counts; mid-stream error") {
    StreamState state;
    std::vector<StreamEvent> events;
    ollama::chat_codec().decode_stream_event(ollama_test::fixture("generate_stream_final.json"),
                                             state, events);
    REQUIRE(events.size() == 2);
    CHECK(events[0].text.empty());
    CHECK(events[0].finish->kind == FinishKind::stop);
    CHECK(events[0].usage.prompt_tokens == 26);
    CHECK(events[0].usage.completion_tokens == 259);
    CHECK(events[1].type == Type::done);

    events = decode(ollama::generate_codec(), ollama_test::fixture("generate_stream_error.ndjson"),
                    state);
    REQUIRE(events.size() == 5);
    CHECK(events[3].text == "can");
    CHECK(events[4].type == Type::error);
    CHECK(events[4].error.status == 502);
    CHECK(events[4].error.message == "an error was encountered while running the model");
}

TEST_CASE("ollama decode_stream_event: chat lines, length finish, malformed data") {
    StreamState state;
    state.max_tokens = 4;
    auto events =
        decode(ollama::chat_codec(),
               "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n"
               "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":false}\n"
               "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
               "\"done_reason\":\"length\",\"prompt_eval_count\":5,\"eval_count\":4}\n",
               state);
    REQUIRE(events.size() == 3);  // the empty delta carries nothing
    CHECK(events[0].text == "Hi");
    CHECK(events[1].finish->kind == FinishKind::length);
    CHECK(events[1].finish->length == 4);
    CHECK(events[1].usage.completion_tokens == 4);

    auto bad = [&](std::string_view line, std::string_view words) {
        std::vector<StreamEvent> out;
        ollama::generate_codec().decode_stream_event(line, state, out);
        REQUIRE(out.size() == 1);
        CHECK(out[0].type == Type::error);
        CHECK(out[0].error.status == 502);
        CHECK_MESSAGE(out[0].error.message.find(words) != std::string::npos, out[0].error.message);
    };
    bad("{nope", "malformed stream data");
    bad("\"x\"", "expected a JSON object");
    bad(R"({"response":"x"})", "boolean 'done'");
    bad(R"({"response":7,"done":false})", "not a string");
    bad(R"({"response":"","done":true,"done_reason":"load"})", "load");
}

TEST_CASE("ollama encode_stream_event: exact NDJSON lines, final line with counts") {
    StreamState state = client_state();
    std::string out;
    const Codec& gen = ollama::generate_codec();
    gen.encode_stream_event(chunk("Hel"), state, out);
    gen.encode_stream_event(chunk(""), state, out);  // nothing to say
    StreamEvent last = chunk("lo");
    last.finish = FinishReason{};
    last.finish->kind = FinishKind::length;
    gen.encode_stream_event(last, state, out);
    StreamEvent usage;
    usage.type = Type::usage;
    usage.usage.prompt_tokens = 3;
    usage.usage.completion_tokens = 2;
    gen.encode_stream_event(usage, state, out);
    StreamEvent done;
    done.type = Type::done;
    gen.encode_stream_event(done, state, out);
    gen.encode_stream_end(state, out);
    gen.encode_stream_end(state, out);  // idempotent
    CHECK(out ==
          "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45Z\",\"response\":\"Hel\","
          "\"done\":false}\n"
          "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45Z\",\"response\":\"lo\","
          "\"done\":false}\n"
          "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45Z\",\"response\":\"\","
          "\"done\":true,\"done_reason\":\"length\",\"prompt_eval_count\":3,\"eval_count\":2}\n");
}

TEST_CASE("ollama encode_stream: chat lines, measured timing, unknown counts omitted") {
    StreamState state = client_state();
    std::string out;
    const Codec& chat = ollama::chat_codec();
    StreamEvent ev = chunk("Hi");
    ev.finish = FinishReason{};
    ev.finish->kind = FinishKind::stop;
    ev.usage.prompt_tokens = 7;  // a running count without an exact completion count
    chat.encode_stream_event(ev, state, out);
    chat.encode_stream_event(chunk("ignored after the finish"), state, out);
    ollama::Timing timing;
    timing.total_ns = 1000;
    timing.eval_ns = 400;
    ollama::encode_stream_end(chat, state, timing, out);
    CHECK(out ==
          "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45Z\",\"message\":"
          "{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n"
          "{\"model\":\"llama3.2\",\"created_at\":\"2023-08-04T19:22:45Z\",\"message\":"
          "{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\","
          "\"total_duration\":1000,\"prompt_eval_count\":7,\"eval_duration\":400}\n");
}

TEST_CASE("ollama encode_stream_error: one error line, nothing after") {
    StreamState state = client_state();
    std::string out;
    Error e;
    e.message = "backend went away";
    StreamEvent ev;
    ev.type = Type::error;
    ev.error = e;
    ollama::generate_codec().encode_stream_event(ev, state, out);
    ollama::generate_codec().encode_stream_end(state, out);
    ollama::generate_codec().encode_stream_error(e, state, out);
    CHECK(out == "{\"error\":\"backend went away\"}\n");
}

TEST_CASE("ollama stream round trip: canonical -> ollama lines -> canonical") {
    for (const Codec* codec : {&ollama::generate_codec(), &ollama::chat_codec()}) {
        StreamState client = client_state();
        std::string wire;
        codec->encode_stream_event(chunk("Once "), client, wire);
        StreamEvent last = chunk("upon");
        last.finish = FinishReason{};
        last.finish->kind = FinishKind::length;
        last.usage.prompt_tokens = 4;
        last.usage.completion_tokens = 2;
        codec->encode_stream_event(last, client, wire);
        codec->encode_stream_end(client, wire);

        StreamState upstream;
        auto events = decode(*codec, wire, upstream);
        REQUIRE(events.size() == 4);
        CHECK(events[0].text + events[1].text + events[2].text == "Once upon");
        REQUIRE(events[2].finish.has_value());
        CHECK(events[2].finish->kind == FinishKind::length);
        CHECK(events[2].usage.prompt_tokens == 4);
        CHECK(events[2].usage.completion_tokens == 2);
        CHECK(events[3].type == Type::done);
    }
}

// Issue 16 item 7: a streamed tool call (Ollama sends it on a line of its own, content "")
// reaches an Ollama client; another dialect's client gets an in-band error naming it.
TEST_CASE("ollama same dialect stream: tool_calls lines come through") {
    constexpr std::string_view wire =
        "{\"model\":\"m\",\"created_at\":\"2025-05-27T19:23:48Z\",\"message\":{\"role\":"
        "\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"get_weather\","
        "\"arguments\":{\"city\":\"Toronto\"}}}]},\"done\":false}\n"
        "{\"model\":\"m\",\"created_at\":\"2025-05-27T19:23:48Z\",\"message\":{\"role\":"
        "\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,\"prompt_eval_"
        "count\":3,\"eval_count\":9}\n";
    StreamState dec;
    dec.client = infergate::canonical::Dialect::ollama_chat;
    const auto events = decode(ollama::chat_codec(), wire, dec);
    StreamState enc = client_state();
    std::string out;
    for (const auto& ev : events) {
        ollama::chat_codec().encode_stream_event(ev, enc, out);
    }
    ollama::chat_codec().encode_stream_end(enc, out);
    CHECK(out.find(R"("message":{"role":"assistant","content":"","tool_calls":[{"function":)"
                   R"({"name":"get_weather","arguments":{"city":"Toronto"}}}]},"done":false})") !=
          std::string::npos);
    CHECK(out.find(R"("done":true,"done_reason":"stop")") != std::string::npos);

    StreamState other;
    other.client = infergate::canonical::Dialect::tgi;  // no tool calls in its dialect
    const auto lost = decode(ollama::chat_codec(), wire, other);
    REQUIRE_FALSE(lost.empty());
    CHECK(lost.front().type == Type::error);
    CHECK(lost.front().error.message.find("tool_calls") != std::string::npos);
}
