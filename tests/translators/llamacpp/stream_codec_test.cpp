// translators/llamacpp/stream_codec.cpp: /completion SSE streams to canonical events and back.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/translators/llamacpp/test_util.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using llamacpp_test::llama;
using llamacpp_test::sse_payloads;

using Type = StreamEvent::Type;

std::vector<StreamEvent> decode_all(const std::vector<std::string>& payloads, StreamState& s) {
    std::vector<StreamEvent> out;
    for (const std::string& p : payloads) {
        llama().decode_stream_event(p, s, out);
    }
    return out;
}

StreamEvent chunk(int index, std::string text, Usage usage = {}) {
    StreamEvent ev;
    ev.index = index;
    ev.text = std::move(text);
    ev.usage = usage;
    return ev;
}

StreamEvent finished(StreamEvent ev, FinishKind kind, std::optional<std::string> word = {}) {
    FinishReason f;
    f.kind = kind;
    f.matched_text = std::move(word);
    ev.finish = f;
    return ev;
}

std::string encode_all(const std::vector<StreamEvent>& events, StreamState& s) {
    std::string out;
    for (const StreamEvent& ev : events) {
        llama().encode_stream_event(ev, s, out);
    }
    llama().encode_stream_end(s, out);
    return out;
}

}  // namespace

TEST_CASE("llamacpp decode_stream_event: the §11.11 sample (comments, no [DONE])") {
    StreamState s;
    const std::vector<StreamEvent> ev =
        decode_all(sse_payloads("completion_stream_ollama_test.sse"), s);
    REQUIRE(ev.size() == 4);
    CHECK(ev[0].type == Type::chunk);
    CHECK(ev[0].text == "Hello");
    CHECK_FALSE(ev[0].finish);
    CHECK(ev[1].text == " world");
    CHECK(ev[2].type == Type::chunk);
    CHECK(ev[2].text.empty());
    REQUIRE(ev[2].finish);
    CHECK(ev[2].finish->kind == FinishKind::stop);
    CHECK_FALSE(ev[2].finish->matched_text);
    CHECK(ev[3].type == Type::done);
    CHECK(s.choices[0].text == "Hello world");
    CHECK(s.choices[0].completion_tokens == 2);  // counted per event: the sample has no counts
}

TEST_CASE("llamacpp decode_stream_event: running counts and a stop word") {
    StreamState s;
    const std::vector<StreamEvent> ev = decode_all(sse_payloads("completion_stream_word.sse"), s);
    REQUIRE(ev.size() == 5);
    std::string text;
    for (int i = 0; i < 3; ++i) {
        CHECK(ev[i].type == Type::chunk);
        CHECK(ev[i].usage.completion_tokens == i + 1);
        CHECK(ev[i].usage.prompt_tokens == 5);
        text += ev[i].text;
    }
    CHECK(text == " Paris, the");
    CHECK(ev[3].text.empty());
    REQUIRE(ev[3].finish);
    CHECK(ev[3].finish->kind == FinishKind::stop);
    CHECK(ev[3].finish->matched_text == " city");
    CHECK(ev[3].usage == Usage{5, 4, 0});
    CHECK(ev[4].type == Type::done);
}

TEST_CASE("llamacpp decode_stream_event: an old build repeating the text in the final event") {
    StreamState s;
    s.max_tokens = 2;
    const std::vector<StreamEvent> ev =
        decode_all(sse_payloads("completion_stream_old_repeat.sse"), s);
    REQUIRE(ev.size() == 4);
    CHECK(ev[0].text + ev[1].text + ev[2].text == "Hi there");  // not "Hi thereHi there"
    REQUIRE(ev[2].finish);
    CHECK(ev[2].finish->kind == FinishKind::length);
    CHECK(ev[2].finish->length == 2);
    CHECK(ev[2].usage.completion_tokens == 2);
    CHECK(ev[3].type == Type::done);

    // A final event whose content is new text is still appended.
    StreamState t;
    const auto only =
        decode_all({R"({"content":"whole","stop":true,"stop_type":"eos","tokens_predicted":1})"},
                   t);
    REQUIRE(only.size() == 2);
    CHECK(only[0].text == "whole");
}

TEST_CASE("llamacpp decode_stream_event: batches route by index and end at connection close") {
    StreamState s;
    s.batch = true;
    const auto ev = decode_all(
        {R"({"index":1,"content":"b","stop":false,"tokens_predicted":1,"tokens_evaluated":2})",
         R"({"index":0,"content":"a","stop":false,"tokens_predicted":1,"tokens_evaluated":3})",
         R"({"index":1,"content":"","stop":true,"stop_type":"limit","tokens_predicted":1})",
         R"({"index":1,"content":"late","stop":false})",
         R"({"index":0,"content":"","stop":true,"stop_type":"eos","tokens_predicted":1})"},
        s);
    REQUIRE(ev.size() == 4);  // the event after index 1's finish is dropped; no done
    CHECK(ev[0].index == 1);
    CHECK(ev[1].index == 0);
    CHECK(ev[2].index == 1);
    CHECK(ev[2].finish->kind == FinishKind::length);
    CHECK(ev[3].index == 0);
    CHECK(ev[3].finish->kind == FinishKind::stop);
    for (const auto& e : ev) {
        CHECK(e.type == Type::chunk);
    }
}

TEST_CASE("llamacpp decode_stream_event: in-band errors and malformed events") {
    StreamState s;
    std::vector<StreamEvent> out;
    llama().decode_stream_event(
        R"({"error":{"code":500,"message":"slot died","type":"server_error"}})", s, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].type == Type::error);
    CHECK(out[0].error.status == 500);
    CHECK(out[0].error.type == "server_error");
    CHECK(out[0].error.message == "slot died");

    const char* bad[] = {
        "not json",
        "[1]",
        R"({"content":5,"stop":false})",
        R"({"content":"a","stop":"no"})",
        R"({"index":-1,"content":"a"})",
        R"({"index":99999999,"content":"a"})",
        R"({"content":"a","tokens_predicted":"1"})",
        R"({"content":"","stop":true,"stop_type":"weird"})",
    };
    for (const char* data : bad) {
        INFO(data);
        StreamState t;
        out.clear();
        llama().decode_stream_event(data, t, out);
        REQUIRE(out.size() == 1);
        CHECK(out[0].type == Type::error);
        CHECK(out[0].error.status == 502);
        CHECK(out[0].error.type == "upstream_error");
    }
}

TEST_CASE("llamacpp encode_stream_event: exact bytes, no [DONE]") {
    StreamState s;
    s.model = "m";
    std::string out;
    llama().encode_stream_event(chunk(0, "Hi", Usage{5, 1, std::nullopt}), s, out);
    CHECK(out ==
          "data: {\"index\":0,\"content\":\"Hi\",\"stop\":false,\"tokens_predicted\":1,"
          "\"tokens_evaluated\":5}\n\n");
    out.clear();
    llama().encode_stream_event(
        finished(chunk(0, "!", Usage{5, 2, 3}), FinishKind::stop, std::string("\n")), s, out);
    CHECK(out ==
          "data: {\"index\":0,\"content\":\"!\",\"stop\":false,\"tokens_predicted\":2,"
          "\"tokens_evaluated\":5}\n\n"
          "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":true,\"model\":\"m\","
          "\"tokens_predicted\":2,\"tokens_evaluated\":5,\"stop_type\":\"word\","
          "\"stopping_word\":\"\\n\",\"timings\":{\"cache_n\":3,"
          "\"prompt_n\":2,\"prompt_ms\":0.0,\"prompt_per_token_ms\":0.0,\"prompt_per_second\":0.0,"
          "\"predicted_n\":2,\"predicted_ms\":0.0,\"predicted_per_token_ms\":0.0,\"predicted_per_"
          "second\":0.0}}\n\n");
    out.clear();
    StreamEvent done;
    done.type = Type::done;
    llama().encode_stream_event(done, s, out);
    llama().encode_stream_end(s, out);
    llama().encode_stream_end(s, out);
    CHECK(out.empty());  // the final event already went out; nothing else, no [DONE]
    CHECK(s.ended);
}

TEST_CASE("llamacpp encode: a finish without counts waits for the usage event") {
    StreamState s;
    std::string out;
    llama().encode_stream_event(chunk(0, "a"), s, out);
    llama().encode_stream_event(finished(chunk(0, "b"), FinishKind::length), s, out);
    CHECK(out ==
          "data: {\"index\":0,\"content\":\"a\",\"stop\":false}\n\n"
          "data: {\"index\":0,\"content\":\"b\",\"stop\":false}\n\n");
    out.clear();
    StreamEvent usage;
    usage.type = Type::usage;
    usage.usage = Usage{4, 7, std::nullopt};
    llama().encode_stream_event(usage, s, out);
    CHECK(out ==
          "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":true,\"model\":\"\","
          "\"tokens_predicted\":7,\"tokens_evaluated\":4,\"stop_type\":\"limit\","
          "\"stopping_word\":\"\",\"timings\":{\"prompt_n\":4,\"prompt_ms\":0.0,\"prompt_per_token_"
          "ms\":0.0,\"prompt_per_second\":0.0,\"predicted_n\":7,\"predicted_ms\":0.0,\"predicted_"
          "per_token_ms\":0.0,\"predicted_per_second\":0.0}}\n\n");
    out.clear();
    llama().encode_stream_end(s, out);
    CHECK(out.empty());
}

TEST_CASE("llamacpp encode_stream_end: every choice gets its stop:true event once") {
    StreamState s;
    std::string out = encode_all({chunk(0, "x")}, s);
    CHECK(out ==
          "data: {\"index\":0,\"content\":\"x\",\"stop\":false}\n\n"
          "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":true,\"model\":\"\","
          "\"tokens_predicted\":1,\"stop_type\":\"none\",\"stopping_word\":\"\","
          "\"timings\":{\"prompt_n\":0,\"prompt_ms\":0.0,\"prompt_per_token_ms\":0.0,\"prompt_per_"
          "second\":0.0,\"predicted_n\":1,\"predicted_ms\":0.0,\"predicted_per_token_ms\":0.0,"
          "\"predicted_per_second\":0.0}}\n\n");
    StreamState empty;
    CHECK(encode_all({}, empty).find("\"stop\":true") != std::string::npos);
    // A held finish is flushed at the end with the best count there is.
    StreamState held;
    out = encode_all({finished(chunk(0, "y"), FinishKind::stop)}, held);
    CHECK(out.find("\"stop_type\":\"eos\"") != std::string::npos);
    CHECK(out.find("\"stop_type\":\"none\"") == std::string::npos);
}

TEST_CASE("llamacpp encode_stream_error: in-band error, then nothing") {
    StreamState s;
    std::string out;
    llama().encode_stream_event(chunk(0, "x", Usage{1, 1, std::nullopt}), s, out);
    out.clear();
    Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = "backend went away";
    StreamEvent ev;
    ev.type = Type::error;
    ev.error = e;
    llama().encode_stream_event(ev, s, out);
    CHECK(out ==
          "data: {\"error\":{\"code\":502,\"message\":\"backend went away\","
          "\"type\":\"server_error\"}}\n\n");
    CHECK(s.ended);
    llama().encode_stream_end(s, out);
    llama().encode_stream_error(e, s, out);
    llama().encode_stream_event(chunk(0, "more"), s, out);
    CHECK(out.find("more") == std::string::npos);
    CHECK(out.find("\"stop\":true") == std::string::npos);
}

TEST_CASE("llamacpp: stream round trip keeps text, counts and finish") {
    for (const char* name : {"completion_stream_word.sse", "completion_stream_ollama_test.sse",
                             "completion_stream_old_repeat.sse"}) {
        INFO(name);
        StreamState up;
        up.max_tokens = 2;
        const std::vector<StreamEvent> first = decode_all(sse_payloads(name), up);
        StreamState client;
        const std::string wire = encode_all(first, client);
        CHECK(wire.find("[DONE]") == std::string::npos);
        std::vector<std::string> payloads;
        for (size_t at = 0; at < wire.size();) {
            const size_t end = wire.find("\n\n", at);
            REQUIRE(end != std::string::npos);
            REQUIRE(wire.compare(at, 6, "data: ") == 0);
            payloads.push_back(wire.substr(at + 6, end - at - 6));
            at = end + 2;
        }
        StreamState down;
        down.max_tokens = 2;
        const std::vector<StreamEvent> again = decode_all(payloads, down);
        CHECK(down.choices[0].text == up.choices[0].text);
        CHECK(down.choices[0].completion_tokens == up.choices[0].completion_tokens);
        REQUIRE_FALSE(again.empty());
        CHECK(again.back().type == Type::done);
        const StreamEvent& fin_a = first[first.size() - 2];
        const StreamEvent& fin_b = again[again.size() - 2];
        REQUIRE(fin_a.finish);
        REQUIRE(fin_b.finish);
        CHECK(*fin_a.finish == *fin_b.finish);
    }
}

// Issue 16 item 4: a llama.cpp client in front of a llama.cpp backend gets every event with the
// engine's own members (ids, id_slot, generation_settings, truncated, tokens_cached, timings).
TEST_CASE("llamacpp same dialect stream: the real engine's events come through") {
    const auto payloads = sse_payloads("completion_stream_real_c392e509.sse");
    StreamState dec;
    dec.client = infergate::canonical::Dialect::llamacpp;
    const auto events = decode_all(payloads, dec);
    StreamState enc;
    enc.model = "tiny-llama";
    std::string out;
    for (const auto& ev : events) {
        llama().encode_stream_event(ev, enc, out);
    }
    llama().encode_stream_end(enc, out);
    infergate::framing::SseScanner scanner;
    std::vector<infergate::framing::SseEvent> got;
    scanner.feed(out, got);
    REQUIRE(got.size() == payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
        infergate::json::Document g;
        infergate::json::Document w;
        REQUIRE(!infergate::json::parse(got[i].data, g, "got"));
        REQUIRE(!infergate::json::parse(payloads[i], w, "want"));
        for (const auto& m : w.GetObject()) {
            const std::string_view k = infergate::json::view(m.name);
            INFO("event " << i << " member " << std::string(k));
            const infergate::json::Value* v = infergate::json::find(g, k);
            REQUIRE(v != nullptr);
            CHECK(infergate::json::to_string(*v) == infergate::json::to_string(m.value));
        }
    }
}

TEST_CASE("llamacpp decode_stream_event: token ids, and cached tokens from the final timings") {
    StreamState dec;
    const auto events = decode_all(sse_payloads("completion_stream_real_c392e509.sse"), dec);
    REQUIRE(events.size() == 6);  // four tokens, the final event, done
    CHECK(events[0].token_ids == std::vector<int64_t>{14747});
    CHECK(events[3].token_ids == std::vector<int64_t>{26428});
    CHECK(events[4].usage.cached_tokens == 1);
    CHECK(events[4].carried.empty());  // no client dialect said: nothing kept
}
