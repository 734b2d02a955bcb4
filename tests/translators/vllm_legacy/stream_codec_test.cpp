// translators/vllm_legacy/stream_codec.cpp: cumulative, prompt-prefixed records <-> deltas.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/translators/vllm_legacy/test_util.hpp"
#include "translators/framing/framing.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::framing::RecordScanner;
using infergate::translators::Framing;
using infergate::translators::vllm_legacy::decode_stream_end;
using infergate::translators::vllm_legacy::ends_at_eof;
using infergate::translators::vllm_legacy::set_stream_prompt;
using infergate::translators::vllm_legacy::stream_prompt;
using vllm_legacy_test::codec;
using vllm_legacy_test::fixture;

const char* const kPrompt = "San Francisco is a";

std::vector<std::string> records(const std::string& bytes) {
    RecordScanner scanner;
    std::vector<std::string> out;
    scanner.feed(bytes, out);
    scanner.finish(out);
    return out;
}

StreamEvent chunk(int index, std::string text) {
    StreamEvent ev;
    ev.index = index;
    ev.text = std::move(text);
    return ev;
}

// Decodes every record and the clean end; returns the events and the text per choice.
std::vector<StreamEvent> decode_all(const std::vector<std::string>& recs, StreamState& state,
                                    std::vector<std::string>& texts) {
    std::vector<StreamEvent> out;
    for (const auto& r : recs) {
        codec().decode_stream_event(r, state, out);
    }
    decode_stream_end(state, out);
    for (const auto& ev : out) {
        if (ev.type == StreamEvent::Type::chunk) {
            if (texts.size() <= static_cast<size_t>(ev.index)) {
                texts.resize(static_cast<size_t>(ev.index) + 1);
            }
            texts[static_cast<size_t>(ev.index)] += ev.text;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("vllm_legacy stream framing and end-of-body contract") {
    CHECK(codec().framing() == Framing::ndjson);
    CHECK(ends_at_eof());
    StreamState s;
    s.model = "shown-model";
    set_stream_prompt(s, kPrompt);
    CHECK(stream_prompt(s) == kPrompt);
}

TEST_CASE("vllm_legacy decodes the golden n=2 stream, newline and NUL delimited alike") {
    for (const char* name : {"generate_stream_n2.ndjson", "generate_stream_n2_nul.bin"}) {
        CAPTURE(name);
        const auto recs = records(fixture(name));
        REQUIRE(recs.size() == 4);
        StreamState state;
        state.n = 2;
        set_stream_prompt(state, kPrompt);
        std::vector<std::string> texts;
        const auto events = decode_all(recs, state, texts);
        REQUIRE(texts.size() == 2);
        CHECK(texts[0] == " city in Northern California");
        CHECK(texts[1] == " hilly place.");
        // Record 1: both choices; 2: both; 3: both; 4: only choice 0 grew; then, at the end of
        // the body, one finishing chunk per choice and done.
        REQUIRE(events.size() == 10);
        CHECK(events[0].index == 0);
        CHECK(events[0].text == " city");
        CHECK(events[1].index == 1);
        CHECK(events[1].text == " hilly");
        CHECK(events[6].text == " California");
        for (int i : {7, 8}) {
            CHECK(events[i].index == i - 7);
            CHECK(events[i].text.empty());
            REQUIRE(events[i].finish);
            // No budget known to the state: the clean end is a stop.
            CHECK(events[i].finish->kind == infergate::canonical::FinishKind::stop);
        }
        CHECK(events[9].type == StreamEvent::Type::done);
        for (const auto& ev : events) {
            CHECK_FALSE(ev.usage.completion_tokens);  // never reported as a count
            CHECK(ev.type != StreamEvent::Type::error);
        }
        for (int i = 0; i < 7; ++i) {
            CHECK_FALSE(events[i].finish);
        }
        // The clean end is idempotent.
        std::vector<StreamEvent> more;
        decode_stream_end(state, more);
        CHECK(more.empty());
    }
}

TEST_CASE("vllm_legacy stream end: a choice that used its whole budget finished on length") {
    const auto recs = records(fixture("generate_stream_n2.ndjson"));
    StreamState state;
    state.n = 2;
    state.max_tokens = 4;  // choice 0 grew in 4 records, choice 1 in 3
    set_stream_prompt(state, kPrompt);
    std::vector<std::string> texts;
    const auto events = decode_all(recs, state, texts);
    REQUIRE(events.size() == 10);
    REQUIRE(events[7].finish);
    CHECK(events[7].finish->kind == infergate::canonical::FinishKind::length);
    CHECK(events[7].finish->length == 4);
    REQUIRE(events[8].finish);
    CHECK(events[8].finish->kind == infergate::canonical::FinishKind::stop);
}

TEST_CASE("vllm_legacy stream decode: corrections and held-back stop tails") {
    StreamState state;
    set_stream_prompt(state, "P:");
    state.stop = {"END"};
    std::vector<StreamEvent> out;
    codec().decode_stream_event(R"({"text": ["P: abc E"]})", state, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].text == " abc ");  // "E" may start "END": held back
    out.clear();
    codec().decode_stream_event(R"({"text": ["P: abc EX"]})", state, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].text == "EX");
    out.clear();
    // Non-prefix correction: nothing is emitted for it; later records diff against it.
    codec().decode_stream_event(R"({"text": ["P: abd"]})", state, out);
    CHECK(out.empty());
    codec().decode_stream_event(R"({"text": ["P: abd!"]})", state, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].text == "!");
    out.clear();
    // A tail still held at the end of the body is released there, before done.
    codec().decode_stream_event(R"({"text": ["P: abd!EN"]})", state, out);
    CHECK(out.empty());
    decode_stream_end(state, out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].text == "EN");
    CHECK(out[1].type == StreamEvent::Type::done);
    // Blank records and a trailing NUL are ignored.
    out.clear();
    StreamState fresh;
    codec().decode_stream_event("\n", fresh, out);
    codec().decode_stream_event(std::string_view("\0", 1), fresh, out);
    CHECK(out.empty());
}

TEST_CASE("vllm_legacy malformed stream records are 502 error events") {
    auto expect_error = [](std::string_view record, const std::string& words) {
        StreamState state;
        set_stream_prompt(state, kPrompt);
        std::vector<StreamEvent> out;
        codec().decode_stream_event(record, state, out);
        REQUIRE(out.size() == 1);
        CHECK(out[0].type == StreamEvent::Type::error);
        CHECK(out[0].error.status == 502);
        CHECK(out[0].error.type == "upstream_error");
        CHECK_MESSAGE(out[0].error.message.find(words) != std::string::npos,
                      out[0].error.message);
        CHECK(state.choices.empty());  // a bad record leaves no trace in the state
    };
    expect_error("{\"text\": [", "malformed stream record");
    expect_error("[\"x\"]", "not an object");
    expect_error(R"({"text": "San Francisco is a x"})", "without a 'text' list");
    expect_error(R"({"text": []})", "without a 'text' list");
    expect_error(R"({"text": ["San Francisco is a x", null]})", "text[1] is null");
    expect_error(R"({"text": ["San Francisco is a x", "Oakland"]})",
                 "text[1] does not start with the prompt");
    expect_error(R"({"error": "boom"})", "boom");
}

TEST_CASE("vllm_legacy encodes cumulative prompt-prefixed records: exact bytes") {
    StreamState state;
    state.n = 2;
    state.model = "m";
    set_stream_prompt(state, "Hi");
    std::string out;
    codec().encode_stream_event(chunk(0, " a"), state, out);
    CHECK(out == "{\"text\":[\"Hi a\",\"Hi\"]}\n");
    out.clear();
    codec().encode_stream_event(chunk(1, " \"b\""), state, out);
    CHECK(out == "{\"text\":[\"Hi a\",\"Hi \\\"b\\\"\"]}\n");
    out.clear();
    // Empty deltas, finishes, usage and done put nothing on this wire.
    StreamEvent fin = chunk(0, "");
    fin.finish = FinishReason{FinishKind::stop, {}, {}, {}, {}};
    codec().encode_stream_event(fin, state, out);
    StreamEvent usage;
    usage.type = StreamEvent::Type::usage;
    usage.usage.completion_tokens = 3;
    codec().encode_stream_event(usage, state, out);
    StreamEvent done;
    done.type = StreamEvent::Type::done;
    codec().encode_stream_event(done, state, out);
    CHECK(out.empty());
    codec().encode_stream_event(chunk(0, "!"), state, out);
    CHECK(out == "{\"text\":[\"Hi a!\",\"Hi \\\"b\\\"\"]}\n");
    out.clear();
    // No terminator, and the end is idempotent.
    codec().encode_stream_end(state, out);
    CHECK(out.empty());
    CHECK(state.ended);
    codec().encode_stream_event(chunk(0, "late"), state, out);
    CHECK(out.empty());
}

TEST_CASE("vllm_legacy stream end and errors") {
    StreamState empty;
    set_stream_prompt(empty, "Q");
    std::string out;
    codec().encode_stream_end(empty, out);
    CHECK(out == "{\"text\":[\"Q\"]}\n");  // a text-less stream still owes one record
    out.clear();
    codec().encode_stream_end(empty, out);
    CHECK(out.empty());

    StreamState state;
    set_stream_prompt(state, "Q");
    codec().encode_stream_event(chunk(0, "a"), state, out);
    out.clear();
    Error e;
    e.status = 502;
    e.message = "the backend went away";
    codec().encode_stream_error(e, state, out);
    CHECK(out == "{\"error\":\"the backend went away\"}\n");
    out.clear();
    codec().encode_stream_error(e, state, out);
    codec().encode_stream_end(state, out);
    CHECK(out.empty());
}

TEST_CASE("vllm_legacy stream round trip: canonical -> records -> canonical") {
    const std::vector<StreamEvent> in = {chunk(0, "Hel"), chunk(1, "Wo"), chunk(0, "lo"),
                                         chunk(1, "rld\n"), chunk(0, " \xC3\xA9t\xC3\xA9")};
    StreamState enc;
    enc.n = 2;
    set_stream_prompt(enc, "say: ");
    std::string wire;
    for (const auto& ev : in) {
        codec().encode_stream_event(ev, enc, wire);
    }
    codec().encode_stream_end(enc, wire);
    StreamState dec;
    dec.n = 2;
    set_stream_prompt(dec, "say: ");
    std::vector<std::string> texts;
    const auto events = decode_all(records(wire), dec, texts);
    REQUIRE(texts.size() == 2);
    CHECK(texts[0] == "Hello \xC3\xA9t\xC3\xA9");
    CHECK(texts[1] == "World\n");
    CHECK(events.back().type == StreamEvent::Type::done);

    // And the golden stream re-encodes to records carrying the same cumulative texts.
    StreamState gdec;
    set_stream_prompt(gdec, kPrompt);
    std::vector<std::string> golden;
    const auto gevents = decode_all(records(fixture("generate_stream_n2.ndjson")), gdec, golden);
    StreamState genc;
    genc.n = 2;
    set_stream_prompt(genc, kPrompt);
    std::string rewire;
    for (const auto& ev : gevents) {
        codec().encode_stream_event(ev, genc, rewire);
    }
    codec().encode_stream_end(genc, rewire);
    const auto recs = records(rewire);
    REQUIRE(recs.size() == 7);
    CHECK(recs.back() == R"({"text":["San Francisco is a city in Northern California",)"
                         R"("San Francisco is a hilly place."]})");
}
