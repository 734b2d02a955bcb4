// translators/sglang/stream_decode.cpp: cumulative SGLang streams to canonical deltas (and,
// re-encoded, back to the same events).

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "translators/sglang/codec.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;

const infergate::translators::Codec& sglang() {
    return infergate::translators::sglang::codec();
}

// The `data:` payloads of a well-formed fixture (the SSE scanner itself is tested elsewhere).
std::vector<std::string> sse_payloads(const char* name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/sglang/" + name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string all = ss.str();
    std::vector<std::string> out;
    size_t at = 0;
    while (at < all.size()) {
        const size_t end = all.find("\n\n", at);
        REQUIRE(end != std::string::npos);
        const std::string event = all.substr(at, end - at);
        REQUIRE(event.rfind("data: ", 0) == 0);
        out.push_back(event.substr(6));
        at = end + 2;
    }
    return out;
}

std::vector<StreamEvent> decode_all(const std::vector<std::string>& payloads, StreamState& state) {
    std::vector<StreamEvent> out;
    for (const std::string& p : payloads) {
        sglang().decode_stream_event(p, state, out);
    }
    return out;
}
}  // namespace

TEST_CASE("sglang decode_stream_event: a cumulative capture becomes per-token deltas") {
    const std::vector<std::string> payloads = sse_payloads("generate_stream.sse");
    REQUIRE(payloads.size() == 33);
    StreamState state;
    const std::vector<StreamEvent> events = decode_all(payloads, state);
    REQUIRE(events.size() == 33);
    const std::vector<std::string> tokens = {
        " Paris",  ".",       " It",  " is",     " the",     " largest", " city", " in",
        " Europe", " and",    " the", " second", " largest", " city",    " in",   " the",
        " world",  ".",       " It",  " is",     " located", " in",      " the",  " south",
        " of",     " France", ",",    " on",     " the",     " banks",   " of",   " the"};
    std::string joined;
    for (size_t i = 0; i < 32; ++i) {
        const StreamEvent& ev = events[i];
        CAPTURE(i);
        CHECK(ev.type == StreamEvent::Type::chunk);
        CHECK(ev.index == 0);
        CHECK(ev.text == tokens[i]);
        CHECK(ev.usage.completion_tokens == static_cast<int64_t>(i + 1));
        CHECK(ev.usage.prompt_tokens == 5);
        CHECK(ev.usage.cached_tokens == 2);
        CHECK(ev.finish.has_value() == (i == 31));
        joined += ev.text;
    }
    REQUIRE(events[31].finish.has_value());
    CHECK(events[31].finish->kind == FinishKind::length);
    CHECK(events[31].finish->length == 32);
    CHECK(events[32].type == StreamEvent::Type::done);
    CHECK(joined == state.choices[0].text);
    CHECK(state.choices.size() == 1);
    CHECK(state.choices[0].completion_tokens == 32);
    CHECK(state.choices[0].tokens_exact);
    CHECK(state.choices[0].id == "be6daa5d895e403eb6334fb3a116b933");
    CHECK(state.aggregate_usage() == Usage{5, 32, 2});
}

TEST_CASE("sglang decode_stream_event: a batch stream with index") {
    StreamState state;
    const std::vector<StreamEvent> events =
        decode_all(sse_payloads("generate_stream_batch.sse"), state);
    REQUIRE(events.size() == 8);
    std::string text[2];
    int finishes[2] = {0, 0};
    for (const StreamEvent& ev : events) {
        if (ev.type == StreamEvent::Type::done) {
            continue;
        }
        REQUIRE(ev.type == StreamEvent::Type::chunk);
        REQUIRE((ev.index == 0 || ev.index == 1));
        text[ev.index] += ev.text;
        finishes[ev.index] += ev.finish ? 1 : 0;
    }
    CHECK(text[0] == " Paris. It is");
    CHECK(text[1] == " 2");
    CHECK(finishes[0] == 1);
    CHECK(finishes[1] == 1);
    // Item 1 ends on EOS with an event that adds no text but carries the finish and the count.
    const StreamEvent& eos = events[5];
    CHECK(eos.index == 1);
    CHECK(eos.text.empty());
    REQUIRE(eos.finish.has_value());
    CHECK(eos.finish->kind == FinishKind::stop);
    CHECK(eos.finish->matched_token == 151645);
    CHECK(eos.usage.completion_tokens == 3);
    CHECK(events[1].text == " ");
    CHECK(events[3].text == "2");
    REQUIRE(state.choices.size() == 2);
    CHECK(state.choices[1].id == "9a8b7c6d5e4f40312a1b0c9d8e7f6a5b");
    state.n = 1;
    CHECK(state.aggregate_usage() == Usage{9, 7, 2});
}

TEST_CASE("sglang decode_stream_event: text that is not a continuation sends nothing for it") {
    StreamState state;
    std::vector<StreamEvent> out;
    const char* stream[] = {
        // A detokenizer correction: the replacement character becomes the real one.
        R"({"text": "caf\ufffd", "meta_info": {"completion_tokens": 1, "finish_reason": null}})",
        R"({"text": "café", "meta_info": {"completion_tokens": 2, "finish_reason": null}})",
        R"({"text": "café au lait.#", "meta_info": {"completion_tokens": 5}})",
        // The stop string "##" fired: SGLang trims it, so the final text is shorter.
        R"({"text": "café au lait.", "meta_info": {"completion_tokens": 6,
            "finish_reason": {"type": "stop", "matched": "##"}}})",
    };
    for (const char* data : stream) {
        sglang().decode_stream_event(data, state, out);
    }
    REQUIRE(out.size() == 4);
    CHECK(out[0].text == "caf\xEF\xBF\xBD");
    CHECK(out[1].text.empty());
    CHECK(out[1].usage.completion_tokens == 2);
    CHECK(out[2].text == " au lait.#");  // diffed against the corrected text
    CHECK(out[3].text.empty());
    REQUIRE(out[3].finish.has_value());
    CHECK(out[3].finish->matched_text == "##");
    CHECK(state.choices[0].text == "café au lait.");
}

TEST_CASE("sglang decode_stream_event: errors") {
    StreamState state;
    std::vector<StreamEvent> out;
    sglang().decode_stream_event(R"({"error": {"message": "prompt is too long"}})", state, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].type == StreamEvent::Type::error);
    CHECK(out[0].error.status == 502);
    CHECK(out[0].error.type == "upstream_error");
    CHECK(out[0].error.message == "prompt is too long");

    out.clear();
    sglang().decode_stream_event(R"({"error": {"message": "slow down", "code": 429}})", state, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].error.status == 429);
    CHECK(out[0].error.type == "rate_limit_error");

    const std::pair<const char*, const char*> malformed[] = {
        {R"({"text": "abc", "meta_info": )", "malformed stream data"},
        {"[1, 2]", "not an object"},
        {R"({"meta_info": {}})", "'text'"},
        {R"({"text": "a", "index": 100000000})", "index"},
        {R"({"text": "a", "index": -1})", "index"},
        {R"({"text": "a", "meta_info": {"completion_tokens": "3"}})", "completion_tokens"},
        {R"({"text": "a", "meta_info": {"finish_reason": true}})", "finish_reason"},
    };
    for (const auto& [data, fragment] : malformed) {
        CAPTURE(data);
        out.clear();
        StreamState fresh;
        sglang().decode_stream_event(data, fresh, out);
        REQUIRE(out.size() == 1);
        CHECK(out[0].type == StreamEvent::Type::error);
        CHECK(out[0].error.status == 502);
        CHECK(out[0].error.message.find("malformed stream data") != std::string::npos);
        CHECK_MESSAGE(out[0].error.message.find(fragment) != std::string::npos,
                      out[0].error.message);
        CHECK(fresh.choices.size() <= 1);
    }
}

TEST_CASE("sglang stream: decode then re-encode reproduces the cumulative events") {
    const std::vector<std::string> payloads = sse_payloads("generate_stream.sse");
    StreamState upstream;
    StreamState client;
    client.request_ids = {"be6daa5d895e403eb6334fb3a116b933"};
    std::string wire;
    for (const StreamEvent& ev : decode_all(payloads, upstream)) {
        sglang().encode_stream_event(ev, client, wire);
    }
    sglang().encode_stream_end(client, wire);
    // Every upstream event, minus the keys infergate does not carry (output_ids, weight_version,
    // e2e_latency).
    std::string expected;
    for (const std::string& p : payloads) {
        if (p == "[DONE]") {
            expected += "data: [DONE]\n\n";
            continue;
        }
        std::string e = p;
        const auto ids = e.find(",\"output_ids\":[");
        e.erase(ids, e.find(']', ids) + 1 - ids);
        const auto wv = e.find(",\"weight_version\":\"default\"");
        e.erase(wv, std::string_view(",\"weight_version\":\"default\"").size());
        if (const auto lat = e.find(",\"e2e_latency\":"); lat != std::string::npos) {
            e.erase(lat, e.find('}', lat) - lat);
        }
        expected += "data: " + e + "\n\n";
    }
    CHECK(wire == expected);
}

TEST_CASE("sglang decode_stream_event holds back a tail that may start a stop string") {
    const auto& codec = infergate::translators::sglang::codec();
    infergate::canonical::StreamState state;
    state.stop = {" so long"};
    std::vector<infergate::canonical::StreamEvent> out;
    auto text_of = [&](std::string_view data) {
        out.clear();
        codec.decode_stream_event(data, state, out);
        REQUIRE(out.size() == 1);
        return out[0].text;
    };
    const std::string meta = R"(,"meta_info":{"finish_reason":null,"completion_tokens":1}})";
    CHECK(text_of(R"({"text":" one")" + meta) == " one");
    // " so" may be the start of " so long": held back.
    CHECK(text_of(R"({"text":" one so")" + meta) == "");
    // It was not: released together with what follows.
    CHECK(text_of(R"({"text":" one so far")" + meta) == " so far");
    CHECK(text_of(R"({"text":" one so far so lo")" + meta) == "");
    // The server trims the matched stop string in its final text: nothing of it leaks.
    CHECK(
        text_of(
            R"({"text":" one so far","meta_info":{"finish_reason":{"type":"stop","matched":" so long"},"completion_tokens":5}})") ==
        "");
    CHECK(out[0].finish.has_value());
}

TEST_CASE("sglang decode_stream_event releases held text when the stream finishes") {
    const auto& codec = infergate::translators::sglang::codec();
    infergate::canonical::StreamState state;
    state.stop = {"###"};
    std::vector<infergate::canonical::StreamEvent> out;
    codec.decode_stream_event(R"({"text":"a #","meta_info":{"finish_reason":null}})", state, out);
    codec.decode_stream_event(
        R"({"text":"a ##","meta_info":{"finish_reason":{"type":"length","length":2}}})", state,
        out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].text == "a ");
    CHECK(out[1].text == "##");
}

TEST_CASE("sglang decode_stream_event: --incremental-streaming-output (each event's own text)") {
    // output_ids holds this event's tokens only: fewer than completion_tokens says so, even
    // when a delta happens to be a prefix of the text so far ("a" after "ab").
    {
        StreamState state;
        std::vector<StreamEvent> out;
        const char* stream[] = {
            R"({"text": "ab", "output_ids": [1, 2], "meta_info": {"completion_tokens": 2}})",
            R"({"text": "a", "output_ids": [3], "meta_info": {"completion_tokens": 3}})",
            R"({"text": " world", "output_ids": [4], "meta_info": {"completion_tokens": 4,
                "finish_reason": {"type": "length", "length": 4}}})",
        };
        for (const char* data : stream) {
            sglang().decode_stream_event(data, state, out);
        }
        REQUIRE(out.size() == 3);
        CHECK(out[0].text == "ab");
        CHECK(out[1].text == "a");
        CHECK(out[2].text == " world");
        CHECK(state.delta_text == true);
        CHECK(state.choices[0].text == "aba world");
    }
    // Without output_ids: text that neither extends nor corrects the text so far is a delta.
    {
        StreamState state;
        std::vector<StreamEvent> out;
        for (const char* data : {R"({"text": "Hello", "meta_info": {"completion_tokens": 1}})",
                                 R"({"text": " there", "meta_info": {"completion_tokens": 2}})",
                                 R"({"text": "Hel", "meta_info": {"completion_tokens": 3}})"}) {
            sglang().decode_stream_event(data, state, out);
        }
        REQUIRE(out.size() == 3);
        CHECK(out[1].text == " there");
        CHECK(out[2].text == "Hel");  // once known, every event is a delta
        CHECK(state.choices[0].text == "Hello thereHel");
    }
    // Cumulative output_ids (as many as completion_tokens) settle it the other way.
    {
        StreamState state;
        std::vector<StreamEvent> out;
        for (
            const char* data :
            {R"({"text": "Hi", "output_ids": [1, 2], "meta_info": {"completion_tokens": 2}})",
             R"({"text": "Hi!", "output_ids": [1, 2, 3], "meta_info": {"completion_tokens": 3}})"}) {
            sglang().decode_stream_event(data, state, out);
        }
        CHECK(state.delta_text == false);
        REQUIRE(out.size() == 2);
        CHECK(out[1].text == "!");
    }
}
