// translators/sglang/stream_encode.cpp: canonical deltas to cumulative SGLang events.

#include <doctest/doctest.h>

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

StreamEvent chunk(int index, std::string text) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::chunk;
    ev.index = index;
    ev.text = std::move(text);
    return ev;
}

StreamEvent with_finish(StreamEvent ev, FinishKind kind) {
    FinishReason f;
    f.kind = kind;
    ev.finish = f;
    return ev;
}

StreamEvent usage_event(int64_t prompt, int64_t completion) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::usage;
    ev.usage.prompt_tokens = prompt;
    ev.usage.completion_tokens = completion;
    return ev;
}

std::string encode(const StreamEvent& ev, StreamState& state) {
    std::string out;
    sglang().encode_stream_event(ev, state, out);
    return out;
}

}  // namespace

TEST_CASE("sglang encode_stream_event: deltas become cumulative SGLang events") {
    StreamState state;
    state.id = "cmpl-1";
    StreamEvent first = chunk(0, "Hello");
    first.usage.prompt_tokens = 4;
    first.usage.completion_tokens = 1;
    first.usage.cached_tokens = 0;
    CHECK(encode(first, state) ==
          "data: {\"text\":\"Hello\",\"meta_info\":{\"id\":\"cmpl-1\",\"finish_reason\":null,"
          "\"prompt_tokens\":4,\"completion_tokens\":1,\"cached_tokens\":0}}\n\n");
    StreamEvent second = chunk(0, ", \"world\"");
    second.usage.completion_tokens = 3;
    CHECK(encode(second, state) ==
          "data: {\"text\":\"Hello, \\\"world\\\"\",\"meta_info\":{\"id\":\"cmpl-1\","
          "\"finish_reason\":null,\"prompt_tokens\":4,\"completion_tokens\":3,"
          "\"cached_tokens\":0}}\n\n");
    // Exact counts: the finish goes out at once, even with no new text.
    StreamEvent last = with_finish(chunk(0, ""), FinishKind::length);
    last.usage.completion_tokens = 3;
    CHECK(encode(last, state) ==
          "data: {\"text\":\"Hello, \\\"world\\\"\",\"meta_info\":{\"id\":\"cmpl-1\","
          "\"finish_reason\":{\"type\":\"length\",\"length\":3},\"prompt_tokens\":4,"
          "\"completion_tokens\":3,\"cached_tokens\":0}}\n\n");
    CHECK(state.choices[0].finished);
    // Never a second finish, nor text after it.
    CHECK(encode(with_finish(chunk(0, "!"), FinishKind::stop), state).empty());
    // An empty delta without a finish sends nothing.
    StreamState quiet;
    CHECK(encode(chunk(0, ""), quiet).empty());

    StreamEvent done;
    done.type = StreamEvent::Type::done;
    CHECK(encode(done, state).empty());
    std::string end;
    sglang().encode_stream_end(state, end);
    CHECK(end == "data: [DONE]\n\n");
    CHECK(state.ended);
    end.clear();
    sglang().encode_stream_end(state, end);
    CHECK(end.empty());
}

TEST_CASE("sglang encode_stream_event: batches carry index and per-item rids") {
    StreamState state;
    state.batch = true;
    state.request_ids = {"ra", "rb"};
    StreamEvent b = chunk(1, "B");
    b.usage.completion_tokens = 1;
    CHECK(encode(b, state) ==
          "data: {\"text\":\"B\",\"meta_info\":{\"id\":\"rb\",\"finish_reason\":null,"
          "\"prompt_tokens\":null,\"completion_tokens\":1,\"cached_tokens\":null},"
          "\"index\":1}\n\n");
    StreamEvent a = chunk(0, "A");
    a.usage.completion_tokens = 1;
    CHECK(encode(a, state).find("\"id\":\"ra\"") != std::string::npos);
    CHECK(encode(chunk(1, "C"), state).find("\"text\":\"BC\"") != std::string::npos);
}

TEST_CASE("sglang encode_stream_event: a finish waits for exact token counts") {
    SUBCASE("flushed by the upstream's usage report") {
        StreamState state;
        state.id = "x";
        CHECK(encode(chunk(0, "Hel"), state).find("\"completion_tokens\":1,") != std::string::npos);
        CHECK(encode(chunk(0, "lo"), state).find("\"completion_tokens\":2,") != std::string::npos);
        // Estimated counts: the text goes out, the finish is held.
        const std::string with_text = encode(with_finish(chunk(0, "!"), FinishKind::stop), state);
        CHECK(with_text.find("\"finish_reason\":null") != std::string::npos);
        CHECK(with_text.find("\"text\":\"Hello!\"") != std::string::npos);
        CHECK(state.choices[0].held_finish.has_value());
        CHECK_FALSE(state.choices[0].finished);
        CHECK(encode(usage_event(6, 2), state) ==
              "data: {\"text\":\"Hello!\",\"meta_info\":{\"id\":\"x\",\"finish_reason\":"
              "{\"type\":\"stop\",\"matched\":null},\"prompt_tokens\":6,"
              "\"completion_tokens\":2,\"cached_tokens\":null}}\n\n");
        CHECK(state.choices[0].finished);
        CHECK(state.usage_final);
        std::string end;
        sglang().encode_stream_end(state, end);
        CHECK(end == "data: [DONE]\n\n");
    }
    SUBCASE("a finish without text is held too, and flushed by the end of the stream") {
        StreamState state;
        encode(chunk(0, "a"), state);
        CHECK(encode(with_finish(chunk(0, ""), FinishKind::length), state).empty());
        std::string end;
        sglang().encode_stream_end(state, end);
        CHECK(end ==
              "data: {\"text\":\"a\",\"meta_info\":{\"id\":\"\",\"finish_reason\":{\"type\":"
              "\"length\",\"length\":1},\"prompt_tokens\":null,\"completion_tokens\":1,"
              "\"cached_tokens\":null}}\n\ndata: [DONE]\n\n");
    }
    SUBCASE("several choices keep their estimates") {
        StreamState state;
        state.batch = true;
        state.n = 2;
        encode(chunk(0, "a"), state);
        encode(chunk(1, "b"), state);
        encode(chunk(1, "c"), state);
        CHECK(encode(with_finish(chunk(0, ""), FinishKind::stop), state).empty());
        CHECK(encode(with_finish(chunk(1, ""), FinishKind::stop), state).empty());
        const std::string flushed = encode(usage_event(3, 10), state);
        const auto first = flushed.find("\"index\":0");
        const auto second = flushed.find("\"index\":1");
        REQUIRE(first != std::string::npos);
        REQUIRE(second != std::string::npos);
        CHECK(first < second);
        CHECK(flushed.find("\"completion_tokens\":1,") != std::string::npos);
        CHECK(flushed.find("\"completion_tokens\":2,") != std::string::npos);
        CHECK(flushed.find("\"completion_tokens\":10") == std::string::npos);
        // One prompt sampled twice: its prompt count is every choice's.
        CHECK(flushed.find("\"prompt_tokens\":3,\"completion_tokens\":1,") != std::string::npos);
    }
}

TEST_CASE("sglang error shapes") {
    Error e;
    e.status = 400;
    e.message = "'sampling_params.top_p' must be in (0, 1], got 0";
    std::string body;
    sglang().encode_error(e, body);
    CHECK(body == R"({"error":{"message":"'sampling_params.top_p' must be in (0, 1], got 0"}})");

    StreamState state;
    encode(chunk(0, "partial"), state);
    encode(with_finish(chunk(0, ""), FinishKind::stop), state);  // held: estimated counts
    StreamEvent err;
    err.type = StreamEvent::Type::error;
    err.error.status = 502;
    err.error.message = "upstream reset";
    const std::string out = encode(err, state);
    CHECK(out ==
          "data: {\"text\":\"partial\",\"meta_info\":{\"id\":\"\",\"finish_reason\":{\"type\":"
          "\"stop\",\"matched\":null},\"prompt_tokens\":null,\"completion_tokens\":1,"
          "\"cached_tokens\":null}}\n\n"
          "data: {\"error\":{\"message\":\"upstream reset\"}}\n\n"
          "data: [DONE]\n\n");
    CHECK(state.ended);
    // Nothing after the terminator: no second error, no second [DONE], no late text.
    std::string after;
    sglang().encode_stream_error(e, state, after);
    sglang().encode_stream_end(state, after);
    sglang().encode_stream_event(chunk(0, "late"), state, after);
    CHECK(after.empty());
}
