// translators/anthropic/stream_encode.cpp: exact event bytes, the SDK stream re-encoded, the finish
// held until exact counts, the tail exactly once, round trips and same-dialect tool_use blocks.

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

StreamEvent text(std::string t) {
    StreamEvent ev;
    ev.text = std::move(t);
    return ev;
}

StreamEvent finish(FinishKind kind, std::optional<std::string> matched = std::nullopt) {
    StreamEvent ev;
    ev.finish = FinishReason{};
    ev.finish->kind = kind;
    ev.finish->matched_text = std::move(matched);
    return ev;
}

StreamEvent usage(int64_t prompt, int64_t completion) {
    StreamEvent ev;
    ev.type = Type::usage;
    ev.usage.prompt_tokens = prompt;
    ev.usage.completion_tokens = completion;
    return ev;
}

StreamState client_state() {
    StreamState s;
    s.id = "msg_1";
    s.model = "m";
    return s;
}

std::string encode(const std::vector<StreamEvent>& events, StreamState& state) {
    std::string out;
    for (const StreamEvent& ev : events) {
        codec().encode_stream_event(ev, state, out);
    }
    codec().encode_stream_end(state, out);
    return out;
}

constexpr std::string_view kBlockStart =
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
    "\n\n";
constexpr std::string_view kBlockStop =
    "event: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":0})"
    "\n\n";
constexpr std::string_view kStop =
    "event: message_stop\n"
    R"(data: {"type":"message_stop"})"
    "\n\n";

std::string start(int64_t input, int64_t output) {
    return "event: message_start\n"
           R"(data: {"type":"message_start","message":{"id":"msg_1","type":"message",)"
           R"("role":"assistant","content":[],"model":"m","stop_reason":null,)"
           R"("stop_sequence":null,"usage":{"input_tokens":)" +
           std::to_string(input) + R"(,"output_tokens":)" + std::to_string(output) + "}}}\n\n" +
           std::string(kBlockStart);
}

std::string delta(std::string_view t) {
    return "event: content_block_delta\n"
           R"(data: {"type":"content_block_delta","index":0,)"
           R"("delta":{"type":"text_delta","text":")" +
           std::string(t) + "\"}}\n\n";
}

std::string tail(std::string_view reason_json, std::string_view usage_json) {
    return std::string(kBlockStop) + "event: message_delta\n" +
           R"(data: {"type":"message_delta","delta":{"stop_reason":)" + std::string(reason_json) +
           "},\"usage\":" + std::string(usage_json) + "}\n\n" + std::string(kStop);
}

}  // namespace

TEST_CASE("anthropic encode_stream_event: the SDK stream re-encodes byte for byte") {
    StreamState up;
    const std::vector<StreamEvent> events = decode_stream(fixture("basic_response.sse"), up);
    StreamState state;
    state.id = "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK";
    state.model = "claude-3-opus-latest";
    std::string want = fixture("basic_response.sse") + "\n\n";
    // The ping goes on too, where the API wrote it.
    // message_start goes out before any text exists, so it honestly says 0 output tokens.
    const std::string one = R"("output_tokens":1})";
    want.replace(want.find(one), one.size(), R"("output_tokens":0})");
    CHECK(encode(events, state) == want);
}

TEST_CASE("anthropic encode_stream_event: finish held until usage, input_tokens at the end") {
    // An OpenAI-style upstream: deltas without counts, the finish chunk, then the usage chunk.
    StreamState state = client_state();
    std::string out;
    codec().encode_stream_event(text("Hi"), state, out);
    CHECK(out == start(0, 0) + delta("Hi"));
    out.clear();
    codec().encode_stream_event(finish(FinishKind::length), state, out);
    CHECK(out.empty());  // held: message_delta must carry the real output count
    codec().encode_stream_event(usage(79, 1), state, out);
    CHECK(out ==
          tail(R"("max_tokens","stop_sequence":null)", R"({"input_tokens":79,"output_tokens":1})"));
    CHECK(state.ended);
    out.clear();
    StreamEvent done;
    done.type = Type::done;
    codec().encode_stream_event(done, state, out);
    codec().encode_stream_end(state, out);
    codec().encode_stream_end(state, out);
    CHECK(out.empty());
}

TEST_CASE("anthropic encode_stream_event: usage before the finish, and exact counts") {
    StreamState state = client_state();
    const std::string out =
        encode({text("a"), usage(5, 2), finish(FinishKind::stop, "###")}, state);
    CHECK(out == start(0, 0) + delta("a") +
                     tail(R"("stop_sequence","stop_sequence":"###")",
                          R"({"input_tokens":5,"output_tokens":2})"));

    // SGLang-style chunks with running counts: prompt known at the start; the tail waits for
    // the final usage or the end (the running count may lack the EOS token the final counts).
    StreamState s2 = client_state();
    StreamEvent first = text("x");
    first.usage.prompt_tokens = 4;
    first.usage.completion_tokens = 1;
    StreamEvent last = finish(FinishKind::tool_calls);
    last.usage.prompt_tokens = 4;
    last.usage.completion_tokens = 2;
    std::string o2;
    codec().encode_stream_event(first, s2, o2);
    codec().encode_stream_event(last, s2, o2);
    CHECK(o2 == start(4, 1) + delta("x"));
    CHECK_FALSE(s2.ended);
    codec().encode_stream_end(s2, o2);
    CHECK(o2 == start(4, 1) + delta("x") +
                    tail(R"("tool_use","stop_sequence":null)", R"({"output_tokens":2})"));
    CHECK(s2.ended);
}

TEST_CASE("anthropic encode_stream_end: no usage ever, no finish, other choices") {
    StreamState state = client_state();
    StreamEvent other = text("ignored");
    other.index = 1;
    CHECK(encode({text("a"), text("b"), other, finish(FinishKind::content_filter)}, state) ==
          start(0, 0) + delta("a") + delta("b") +
              tail(R"("refusal","stop_sequence":null)", R"({"output_tokens":2})"));

    StreamState empty = client_state();
    CHECK(encode({}, empty) ==
          start(0, 0) + tail(R"(null,"stop_sequence":null)", R"({"output_tokens":0})"));
}

TEST_CASE("anthropic encode_stream_error: exact bytes, nothing after it") {
    StreamState state = client_state();
    std::string out;
    Error e;
    e.status = 529;
    e.type = "overloaded_error";
    e.message = "Overloaded";
    StreamEvent ev;
    ev.type = Type::error;
    ev.error = e;
    codec().encode_stream_event(text("a"), state, out);
    out.clear();
    codec().encode_stream_event(ev, state, out);
    CHECK(out ==
          "event: error\n"
          R"(data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"
          "\n\n");
    out.clear();
    codec().encode_stream_end(state, out);
    codec().encode_stream_event(text("late"), state, out);
    CHECK(out.empty());

    // An aborted finish becomes an api_error event.
    StreamState s2 = client_state();
    StreamEvent abort = finish(FinishKind::abort);
    abort.finish->message = "engine died";
    out.clear();
    codec().encode_stream_event(abort, s2, out);
    std::string before = start(0, 0);  // message_start only: no block was opened yet
    before.erase(before.size() - kBlockStart.size());
    CHECK(out ==
          before + "event: error\n" +
              R"(data: {"type":"error","error":{"type":"api_error","message":"engine died"}})" +
              "\n\n");
}

TEST_CASE("anthropic stream round trip: canonical → Anthropic SSE → canonical") {
    struct Case {
        FinishKind kind;
        std::optional<std::string> matched;
        bool usage_event;
    };
    for (const Case& c : {Case{FinishKind::stop, std::nullopt, true},
                          Case{FinishKind::stop, std::string("STOP"), false},
                          Case{FinishKind::length, std::nullopt, true}}) {
        StreamState client = client_state();
        std::vector<StreamEvent> in = {text("Bon"), text("jour \"\xc3\xa9\"\n"),
                                       finish(c.kind, c.matched)};
        if (c.usage_event) {
            in.push_back(usage(9, 3));
        }
        const std::string wire = encode(in, client);
        // Every event's name matches its payload's type.
        for (const auto& e : sse_events(wire)) {
            CHECK(e.data.find("{\"type\":\"" + e.event + "\"") == 0);
        }
        StreamState up;
        const std::vector<StreamEvent> out = decode_stream(wire, up);
        std::string all;
        std::optional<FinishReason> got;
        Usage last;
        int finishes = 0;
        int dones = 0;
        for (const StreamEvent& ev : out) {
            all += ev.text;
            if (ev.finish) {
                got = ev.finish;
                ++finishes;
            }
            if (ev.type == Type::usage) {
                last = ev.usage;
            }
            dones += ev.type == Type::done ? 1 : 0;
        }
        CHECK(all == "Bonjour \"\xc3\xa9\"\n");
        CHECK(finishes == 1);
        CHECK(dones == 1);
        REQUIRE(got);
        CHECK(got->kind == c.kind);
        CHECK(got->matched_text == c.matched);
        CHECK(last.completion_tokens == (c.usage_event ? 3 : 2));
        // An unknown prompt count goes out as message_start's 0 (the wire has no "unknown").
        CHECK(last.prompt_tokens == (c.usage_event ? 9 : 0));
    }
}

// Issue 16 item 7: an Anthropic client in front of an Anthropic backend gets every content
// block, tool_use included, as the backend streamed it (numbered by the encoder).
TEST_CASE("anthropic same dialect stream: tool_use blocks come through") {
    const std::string wire = fixture("tool_use_stream.sse");
    StreamState dec;
    dec.client = infergate::canonical::Dialect::anthropic;
    const auto events = decode_stream(wire, dec);
    StreamState enc = client_state();
    const std::string out = encode(events, enc);
    // Every upstream event but the ping and message_start's identity, in order, same payloads.
    std::vector<std::string> want;
    for (const auto& e : sse_events(wire)) {
        if (e.event != "ping" && e.event != "message_start") {
            want.push_back(e.event + " " + e.data);
        }
    }
    std::vector<std::string> got;
    for (const auto& e : sse_events(out)) {
        if (e.event != "ping" && e.event != "message_start") {
            got.push_back(e.event + " " + e.data);
        }
    }
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        infergate::json::Document g;
        infergate::json::Document w;
        const std::string gd = got[i].substr(got[i].find(' ') + 1);
        const std::string wd = want[i].substr(want[i].find(' ') + 1);
        REQUIRE(!infergate::json::parse(gd, g, "got"));
        REQUIRE(!infergate::json::parse(wd, w, "want"));
        INFO(got[i] << "\n" << want[i]);
        CHECK(got[i].substr(0, got[i].find(' ')) == want[i].substr(0, want[i].find(' ')));
        for (const char* k : {"index", "content_block", "delta"}) {
            const auto* gv = infergate::json::find(g, k);
            const auto* wv = infergate::json::find(w, k);
            if (std::string_view(k) == "delta" && wv != nullptr &&
                infergate::json::find(*wv, "stop_reason") != nullptr) {
                continue;  // message_delta: checked below
            }
            REQUIRE((gv == nullptr) == (wv == nullptr));
            if (gv != nullptr) {
                CHECK(infergate::json::to_string(*gv) == infergate::json::to_string(*wv));
            }
        }
    }
    CHECK(out.find(R"("stop_reason":"tool_use")") != std::string::npos);
    CHECK(out.find(R"("input_tokens":472)") != std::string::npos);
}

TEST_CASE("anthropic same dialect stream: a tool_use block first, text after it") {
    StreamState dec;
    dec.client = infergate::canonical::Dialect::anthropic;
    std::vector<StreamEvent> events;
    for (
        const char* p :
        {R"({"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}})",
         R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}})",
         R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}})",
         R"({"type":"content_block_stop","index":0})",
         R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})",
         R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}})",
         R"({"type":"content_block_stop","index":1})",
         R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}})",
         R"({"type":"message_stop"})"}) {
        codec().decode_stream_event(p, dec, events);
    }
    StreamState enc = client_state();
    const std::string out = encode(events, enc);
    std::vector<std::string> seq;
    for (const auto& e : sse_events(out)) {
        infergate::json::Document d;
        REQUIRE(!infergate::json::parse(e.data, d, "event"));
        const auto* index = infergate::json::find(d, "index");
        seq.push_back(e.event + (index != nullptr ? " " + std::to_string(index->GetInt()) : ""));
    }
    // The tool_use block first, as the API streams it (no empty text block before it).
    CHECK(seq == std::vector<std::string>{"message_start", "content_block_start 0",
                                          "content_block_delta 0", "content_block_stop 0",
                                          "content_block_start 1", "content_block_delta 1",
                                          "content_block_stop 1", "message_delta", "message_stop"});
    CHECK(out.find(R"("content_block":{"type":"tool_use","id":"t","name":"f","input":{}})") !=
          std::string::npos);
}

// Item 4: message_start carries the real input count when the backend tells it before the
// first token (vLLM's continuous usage on its role chunk), and a keep-alive before it does not
// force it out with 0.
TEST_CASE("anthropic encode: message_start waits for the input count, not for content") {
    StreamState enc = client_state();
    std::string out;
    StreamEvent keepalive;
    keepalive.type = Type::keepalive;
    keepalive.text = " ping";
    codec().encode_stream_event(keepalive, enc, out);
    CHECK(out == ": ping\n\n");
    // The role chunk of an OpenAI backend with continuous usage: no text, the prompt count.
    std::vector<StreamEvent> upstream;
    StreamState dec;
    infergate::translators::codec_for(infergate::canonical::Dialect::openai_chat)
        .decode_stream_event(
            R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":{"prompt_tokens":17,"completion_tokens":0,"total_tokens":17}})",
            dec, upstream);
    REQUIRE(upstream.size() == 1);
    codec().encode_stream_event(upstream[0], enc, out);
    CHECK(out.find(R"("usage":{"input_tokens":17,"output_tokens":0})") != std::string::npos);
    // Content with no count before it: message_start goes out with it (never delayed).
    StreamState other = client_state();
    std::string out2;
    codec().encode_stream_event(text("Hi"), other, out2);
    CHECK(out2.find("message_start") != std::string::npos);
    CHECK(out2.find("\"text\":\"Hi\"") != std::string::npos);
}

// Item 4: a matched stop sequence as vLLM reports it reaches an Anthropic client.
TEST_CASE("anthropic encode: a stop string vLLM matched is stop_sequence with the string") {
    std::vector<StreamEvent> upstream;
    StreamState dec;
    const auto& openai =
        infergate::translators::codec_for(infergate::canonical::Dialect::openai_chat);
    openai.decode_stream_event(
        R"({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]})", dec,
        upstream);
    openai.decode_stream_event(
        R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":"END"}]})", dec,
        upstream);
    StreamState enc = client_state();
    const std::string out = encode(upstream, enc);
    CHECK(out.find(R"("stop_reason":"stop_sequence","stop_sequence":"END")") != std::string::npos);
}
