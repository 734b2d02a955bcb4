// translators/openai/stream_encode.cpp: canonical events to client chunks, byte for byte against
// the captured streams.

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/openai/test_util.hpp"

namespace {

using openai_test::chat;
using openai_test::completions;
using openai_test::decode_stream;
using openai_test::fixture;
using openai_test::sse_payloads;

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using infergate::translators::Codec;
namespace openai = infergate::translators::openai;
using Type = StreamEvent::Type;

StreamState client_state(bool include_usage = false, bool continuous_usage = false) {
    StreamState s;
    s.id = "chatcmpl-1";
    s.model = "m";
    s.created = 7;
    s.include_usage = include_usage;
    s.continuous_usage = continuous_usage;
    return s;
}

StreamEvent text_event(int index, std::string text) {
    StreamEvent e;
    e.index = index;
    e.text = std::move(text);
    return e;
}

StreamEvent finish_event(int index, FinishKind kind, std::string text = {}) {
    StreamEvent e = text_event(index, std::move(text));
    e.finish = FinishReason{};
    e.finish->kind = kind;
    return e;
}

std::string encode_all(const Codec& codec, const std::vector<StreamEvent>& events,
                       StreamState& state) {
    std::string out;
    for (const StreamEvent& e : events) {
        codec.encode_stream_event(e, state, out);
    }
    codec.encode_stream_end(state, out);
    return out;
}

size_t count(std::string_view haystack, std::string_view needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string_view::npos;
         at = haystack.find(needle, at + needle.size())) {
        ++n;
    }
    return n;
}

// Drops what infergate deliberately does not reproduce from a captured OpenAI chunk
// (system_fingerprint, refusal, logprob details, completion_tokens_details).
// `keep_logprobs`: a content chunk's logprobs stay (without OpenAI's `refusal` list, which we do
// not reproduce); the role chunk's are null in ours, as vLLM writes them.
void normalize_captured(rapidjson::Document& d, bool keep_logprobs = false) {
    d.RemoveMember("system_fingerprint");
    if (d.HasMember("usage") && d["usage"].IsObject()) {
        d["usage"].RemoveMember("completion_tokens_details");
    }
    for (auto& c : d["choices"].GetArray()) {
        const bool role = c["delta"].HasMember("role");
        if (!keep_logprobs || role || !c["logprobs"].IsObject()) {
            c["logprobs"].SetNull();
        } else {
            c["logprobs"].RemoveMember("refusal");
        }
        c["delta"].RemoveMember("refusal");
    }
}

}  // namespace

TEST_SUITE("openai stream encode (client)") {
    TEST_CASE("§11.1 re-encoded for a chat client that asked for usage: byte-exact") {
        const std::string captured = fixture("chat_stream_max_tokens.sse");
        StreamState upstream;
        const auto events = decode_stream(chat(), captured, upstream);
        StreamState state;
        state.id = "chatcmpl-ABfw3Oqj8RD0z6aJiiX37oTjV2HFh";
        state.model = "gpt-4o-2024-08-06";
        state.created = 1727346171;
        state.include_usage = true;
        const std::string out = encode_all(chat(), events, state);

        // The capture minus what we do not reproduce is exactly our output.
        std::string expected = captured;
        for (std::string_view drop :
             {R"("system_fingerprint":"fp_7568d46099",)", R"(,"refusal":null)",
              R"(,"completion_tokens_details":{"reasoning_tokens":0})"}) {
            for (size_t at = expected.find(drop); at != std::string::npos;
                 at = expected.find(drop)) {
                expected.erase(at, drop.size());
            }
        }
        CHECK(out == expected);
    }

    TEST_CASE("§11.2 re-encoded: the same chunks as captured, field for field") {
        const std::string captured = fixture("chat_stream_logprobs.sse");
        StreamState upstream;
        const auto events = decode_stream(chat(), captured, upstream);
        StreamState state;
        state.id = "chatcmpl-ABfw5EzoqmfXjnnsXY7Yd8OC6tb3c";
        state.model = "gpt-4o-2024-08-06";
        state.created = 1727346173;
        state.include_usage = true;
        state.logprobs = true;  // the capture's request: "logprobs": true
        const auto ours = sse_payloads(encode_all(chat(), events, state));
        const auto theirs = sse_payloads(captured);
        REQUIRE(ours.size() == theirs.size());
        for (size_t i = 0; i + 1 < ours.size(); ++i) {
            CAPTURE(i);
            rapidjson::Document a;
            rapidjson::Document b;
            a.Parse(ours[i].c_str());
            b.Parse(theirs[i].c_str());
            REQUIRE_FALSE(a.HasParseError());
            normalize_captured(b, true);
            CHECK(a == b);
        }
        CHECK(ours.back() == "[DONE]");
    }

    TEST_CASE("exact chunks: role once, content, finish, end without usage") {
        StreamState state = client_state();
        std::string out;
        chat().encode_stream_event(text_event(0, "Hel"), state, out);
        CHECK(out ==
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
              "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},"
              "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        CHECK(state.choices[0].role_sent);
        CHECK(state.content_seen);

        out.clear();
        chat().encode_stream_event(text_event(0, "lo \"x\"\n"), state, out);
        CHECK(out ==
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
              "\"lo \\\"x\\\"\\n\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");

        out.clear();
        chat().encode_stream_event(finish_event(0, FinishKind::stop), state, out);
        CHECK(out ==
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
              "\"finish_reason\":\"stop\"}]}\n\n");

        out.clear();
        StreamEvent usage;
        usage.type = Type::usage;
        usage.usage = Usage{5, 2, std::nullopt};
        chat().encode_stream_event(usage, state, out);
        StreamEvent done;
        done.type = Type::done;
        chat().encode_stream_event(done, state, out);
        CHECK(out.empty());
        CHECK(state.usage_final);

        chat().encode_stream_end(state, out);
        CHECK(out == "data: [DONE]\n\n");  // the client did not ask: no usage chunk
        chat().encode_stream_end(state, out);
        CHECK(out == "data: [DONE]\n\n");  // idempotent
    }

    TEST_CASE("the usage chunk goes out only when asked, from the backend's report") {
        StreamState state = client_state(true);
        std::string out;
        chat().encode_stream_event(text_event(0, "a"), state, out);
        StreamEvent usage;
        usage.type = Type::usage;
        usage.usage = Usage{10, 4, 8};
        chat().encode_stream_event(usage, state, out);
        out.clear();
        chat().encode_stream_end(state, out);
        CHECK(out ==
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
              "\"completion_tokens\":4,\"total_tokens\":14,"
              "\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n"
              "data: [DONE]\n\n");
    }

    // Issue 16 item 5 (vLLM's demo server reports no prompt count): a usage chunk without
    // prompt_tokens and total_tokens is rejected by strict clients, so none goes out.
    TEST_CASE("without a prompt count the usage chunk is left out") {
        StreamState state = client_state(true);
        std::string out = encode_all(
            completions(),
            {text_event(0, "a"), text_event(0, "b"), finish_event(0, FinishKind::stop)}, state);
        CHECK(out.find("usage") == std::string::npos);
        CHECK(out.ends_with("data: [DONE]\n\n"));
        StreamState known = client_state(true);
        StreamEvent first = text_event(0, "a");
        first.usage.prompt_tokens = 4;
        out = encode_all(completions(),
                         {first, text_event(0, "b"), finish_event(0, FinishKind::stop)}, known);
        CHECK(out.find(R"("choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,)"
                       R"("total_tokens":6}})") != std::string::npos);
    }

    TEST_CASE("a vLLM-style finish on the last text chunk: text chunk, then finish chunk") {
        StreamState state = client_state();
        std::string out;
        chat().encode_stream_event(finish_event(0, FinishKind::length, "end"), state, out);
        const auto chunks = sse_payloads(out);
        REQUIRE(chunks.size() == 3);
        CHECK(chunks[0].find(R"("delta":{"role":"assistant","content":""})") != std::string::npos);
        CHECK(chunks[1].find(R"("delta":{"content":"end"},"logprobs":null,"finish_reason":null)") !=
              std::string::npos);
        CHECK(chunks[2].find(R"("delta":{},"logprobs":null,"finish_reason":"length")") !=
              std::string::npos);
        // Never a second finish, never text after it.
        out.clear();
        chat().encode_stream_event(finish_event(0, FinishKind::stop), state, out);
        chat().encode_stream_event(text_event(0, "late"), state, out);
        CHECK(out.empty());
    }

    TEST_CASE("the vLLM completions fixture re-encoded with continuous usage: exact chunks") {
        StreamState upstream;
        const auto events = decode_stream(
            completions(), fixture("vllm_completions_stream_continuous_usage.sse"), upstream);
        StreamState state = client_state(true, true);
        state.id = "cmpl-1";
        const std::string out = encode_all(completions(), events, state);
        const auto chunks = sse_payloads(out);
        REQUIRE(chunks.size() == 8);  // 5 texts + a separate finish + usage + [DONE]
        const std::string head =
            R"({"id":"cmpl-1","object":"text_completion","created":7,"model":"m","choices":[)";
        CHECK(chunks[0] == head + R"({"index":0,"text":" Paris","logprobs":null,)"
                                  R"("finish_reason":null}],"usage":{"prompt_tokens":6,)"
                                  R"("completion_tokens":1,"total_tokens":7}})");
        CHECK(chunks[4] == head + R"({"index":0,"text":" also","logprobs":null,)"
                                  R"("finish_reason":null}],"usage":{"prompt_tokens":6,)"
                                  R"("completion_tokens":5,"total_tokens":11}})");
        CHECK(chunks[5] == head + R"({"index":0,"text":"","logprobs":null,)"
                                  R"("finish_reason":"length"}],"usage":{"prompt_tokens":6,)"
                                  R"("completion_tokens":5,"total_tokens":11}})");
        CHECK(chunks[6] == head + R"(],"usage":{"prompt_tokens":6,"completion_tokens":5,)"
                                  R"("total_tokens":11}})");
        CHECK(chunks[7] == "[DONE]");
        CHECK(state.choices[0].tokens_exact);
    }

    TEST_CASE("continuous usage without backend counts: running chunk count") {
        StreamState state = client_state(false, true);
        std::string out;
        chat().encode_stream_event(text_event(0, "a"), state, out);
        chat().encode_stream_event(text_event(0, "b"), state, out);
        const auto chunks = sse_payloads(out);
        REQUIRE(chunks.size() == 3);
        CHECK(chunks[0].find("usage") == std::string::npos);  // the role chunk has none
        // Without a prompt count no chunk can carry a complete usage object.
        CHECK(chunks[1].find("usage") == std::string::npos);
        CHECK(chunks[2].find("usage") == std::string::npos);
        CHECK_FALSE(state.choices[0].tokens_exact);
    }

    TEST_CASE("n > 1: one role chunk per choice; empty events emit nothing") {
        StreamState state = client_state();
        state.n = 2;
        std::string out;
        chat().encode_stream_event(text_event(1, ""), state, out);
        CHECK(out.empty());
        CHECK_FALSE(state.choice(1).role_sent);
        const std::string all = encode_all(
            chat(),
            {text_event(0, "a"), text_event(1, "b"), text_event(0, "c"), text_event(1, "d"),
             finish_event(1, FinishKind::stop), finish_event(0, FinishKind::length)},
            state);
        CHECK(count(all, R"("role":"assistant")") == 2);
        CHECK(count(all, R"({"index":0,"delta":{"role")") == 1);
        CHECK(count(all, R"({"index":1,"delta":{"role")") == 1);
        CHECK(count(all, R"("finish_reason":"stop")") == 1);
        CHECK(count(all, R"("finish_reason":"length")") == 1);
        CHECK(count(all, R"("choices":[])") == 0);
        CHECK(all.size() >= 14);
        CHECK(all.substr(all.size() - 14) == "data: [DONE]\n\n");
    }

    TEST_CASE("completions chunks have no role chunk") {
        StreamState state = client_state();
        const std::string out = encode_all(
            completions(), {text_event(0, "x"), finish_event(0, FinishKind::stop)}, state);
        CHECK(out ==
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"text_completion\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"x\",\"logprobs\":null,"
              "\"finish_reason\":null}]}\n\n"
              "data: {\"id\":\"chatcmpl-1\",\"object\":\"text_completion\",\"created\":7,"
              "\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,"
              "\"finish_reason\":\"stop\"}]}\n\n"
              "data: [DONE]\n\n");
    }

    TEST_CASE("in-band errors: error object then [DONE], once; nothing after") {
        StreamState state = client_state(true);
        std::string out;
        chat().encode_stream_event(text_event(0, "a"), state, out);
        out.clear();
        Error e;
        e.status = 502;
        e.type = "upstream_error";
        e.message = "the backend closed the stream";
        chat().encode_stream_error(e, state, out);
        CHECK(out ==
              "data: {\"error\":{\"message\":\"the backend closed the stream\","
              "\"type\":\"upstream_error\",\"param\":null,\"code\":null}}\n\n"
              "data: [DONE]\n\n");
        const std::string before = out;
        chat().encode_stream_end(state, out);
        chat().encode_stream_error(e, state, out);
        chat().encode_stream_event(text_event(0, "b"), state, out);
        CHECK(out == before);
    }

    TEST_CASE("an error event passed to encode_stream_event is rendered in-band") {
        StreamState state = client_state();
        StreamEvent ev;
        ev.type = Type::error;
        ev.error.message = "boom";
        ev.error.type = "upstream_error";
        std::string out;
        completions().encode_stream_event(ev, state, out);
        CHECK(out.rfind("data: {\"error\":{\"message\":\"boom\"", 0) == 0);
        CHECK(state.ended);
    }
}
