// OpenAI streams: backend SSE payloads to canonical events, canonical events to client chunks.

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "translators/openai/codec.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using infergate::translators::Codec;
namespace openai = infergate::translators::openai;
using Type = StreamEvent::Type;

const Codec& completions() { return openai::completions_codec(); }
const Codec& chat() { return openai::chat_codec(); }

std::string fixture(std::string_view name) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/openai/" + std::string(name),
                     std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The `data:` payloads of a stream written the way OpenAI-family servers write it
// ("data: <json>\n\n"); the real scanner lives in translators/framing.
std::vector<std::string> sse_payloads(std::string_view stream) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < stream.size()) {
        size_t end = stream.find("\n\n", pos);
        if (end == std::string_view::npos) {
            end = stream.size();
        }
        std::string_view event = stream.substr(pos, end - pos);
        REQUIRE(event.rfind("data: ", 0) == 0);
        out.emplace_back(event.substr(6));
        pos = end + 2;
    }
    return out;
}

std::vector<StreamEvent> decode_stream(const Codec& codec, std::string_view stream,
                                       StreamState& state) {
    std::vector<StreamEvent> events;
    for (const std::string& payload : sse_payloads(stream)) {
        codec.decode_stream_event(payload, state, events);
    }
    return events;
}

std::vector<StreamEvent> decode_one(const Codec& codec, std::string_view payload) {
    StreamState state;
    std::vector<StreamEvent> events;
    codec.decode_stream_event(payload, state, events);
    return events;
}

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
