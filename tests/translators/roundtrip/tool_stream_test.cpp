// Issue 13: streamed tool calls between dialects that have them. A backend's stream is decoded
// for a client of another dialect and encoded in the client's shape: OpenAI's deltas (an id and
// name first, the arguments in fragments) become Ollama's whole calls, and Ollama's whole calls
// become one OpenAI delta each. The backends' bytes come in the variations real servers write
// (spaces, key order, escapes, TGI's object for a list, no index) and split at every place.

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/canonical/stream_state.hpp"
#include "translators/codec.hpp"

namespace {

namespace canonical = infergate::canonical;
namespace json = infergate::json;
using canonical::Dialect;
using canonical::StreamEvent;
using canonical::StreamState;
using infergate::translators::codec_for;

// Decodes `payloads` from a `backend` stream for a `client` and encodes them for it: the
// client's bytes.
std::string relay(Dialect backend, Dialect client, const std::vector<std::string>& payloads) {
    StreamState up;
    up.client = client;
    StreamState down;
    down.id = "chatcmpl-7";
    down.model = "m";
    down.include_usage = true;
    std::string out;
    std::vector<StreamEvent> events;
    for (const std::string& p : payloads) {
        events.clear();
        codec_for(backend).decode_stream_event(p, up, events);
        for (const StreamEvent& ev : events) {
            if (ev.type == StreamEvent::Type::error) {
                codec_for(client).encode_stream_error(ev.error, down, out);
                return out;
            }
            codec_for(client).encode_stream_event(ev, down, out);
        }
    }
    codec_for(client).encode_stream_end(down, out);
    return out;
}

// The JSON documents of an NDJSON or SSE output, compact, in order ([DONE] left out).
std::vector<std::string> documents(const std::string& out) {
    std::vector<std::string> docs;
    size_t at = 0;
    while (at < out.size()) {
        size_t end = out.find('\n', at);
        if (end == std::string::npos) {
            end = out.size();
        }
        std::string_view line(out.data() + at, end - at);
        at = end + 1;
        if (line.starts_with("data: ")) {
            line.remove_prefix(6);
        }
        if (line.empty() || line == "[DONE]") {
            continue;
        }
        json::Document doc;
        REQUIRE_FALSE(json::parse(line, doc));
        docs.push_back(json::to_string(doc));
    }
    return docs;
}

// The Ollama lines' tool calls, compact, in order.
std::string ollama_calls(const std::string& out) {
    std::string calls;
    for (const std::string& d : documents(out)) {
        json::Document doc;
        REQUIRE_FALSE(json::parse(d, doc));
        const json::Value* message = json::find(doc, "message");
        const json::Value* c = message != nullptr ? json::find(*message, "tool_calls") : nullptr;
        if (c != nullptr) {
            calls += json::to_string(*c);
        }
    }
    return calls;
}

std::string chunk(std::string_view delta, std::string_view finish = "null") {
    return std::string(R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m",)") +
           R"("choices":[{"index":0,"delta":)" + std::string(delta) +
           R"(,"logprobs":null,"finish_reason":)" + std::string(finish) + "}]}";
}

}  // namespace

TEST_CASE("streamed tool calls: OpenAI deltas become Ollama's whole calls") {
    const std::vector<std::string> vllm = {
        chunk(R"({"role":"assistant","content":""})"),
        chunk(R"({"tool_calls":[{"index":0,"id":"chatcmpl-tool-1","type":"function",)"
              R"("function":{"name":"get_weather","arguments":""}}]})"),
        chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]})"),
        chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"\"Par\u00eds\"}"}}]})"),
        chunk(R"({"tool_calls":[{"index":1,"id":"chatcmpl-tool-2","type":"function",)"
              R"("function":{"name":"get_time","arguments":"{}"}}]})"),
        chunk("{}", R"("tool_calls")"),
        R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],)"
        R"("usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}})",
        "[DONE]"};
    const std::string out = relay(Dialect::openai_chat, Dialect::ollama_chat, vllm);
    INFO(out);
    // The arguments as the model wrote them (an object now), each call with its id and index.
    CHECK(ollama_calls(out) ==
          R"([{"id":"chatcmpl-tool-1","function":{"index":0,"name":"get_weather",)"
          R"("arguments":{"city":"París"}}}])"
          R"([{"id":"chatcmpl-tool-2","function":{"index":1,"name":"get_time","arguments":{}}}])");
    const std::vector<std::string> docs = documents(out);
    REQUIRE(docs.size() == 3);
    CHECK(docs.back().find(R"("done":true,"done_reason":"stop")") != std::string::npos);
    CHECK(docs.back().find(R"("eval_count":12)") != std::string::npos);

    SUBCASE("as TGI writes them: an object for the list, no index, spaces") {
        const std::vector<std::string> tgi = {
            chunk(R"({"role": "assistant", "tool_calls": {"id": "", "type": "function",)"
                  R"( "function": {"name": "get_weather", "arguments": "{\"city\""}}})"),
            chunk(R"({"role": "assistant", "tool_calls": {"id": "", "type": "function",)"
                  R"( "function": {"name": null, "arguments": ": \"Paris\"}"}}})"),
            chunk(R"({"role": "assistant", "content": ""})", R"("tool_calls")"), "[DONE]"};
        CHECK(ollama_calls(relay(Dialect::openai_chat, Dialect::ollama_chat, tgi)) ==
              R"([{"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}])");
    }
    SUBCASE("the arguments split at every place give the same call") {
        const std::string args = R"({"q": "a \"b\" \\ c", "n": [1, 2.5e3, null], "o": {}})";
        json::Document expected_doc;
        REQUIRE_FALSE(json::parse(args, expected_doc));
        const std::string expected = R"([{"id":"t","function":{"index":0,"name":"f","arguments":)" +
                                     json::to_string(expected_doc) + "}}]";
        for (size_t cut = 0; cut <= args.size(); ++cut) {
            auto fragment = [](std::string_view f) {
                std::string s;
                json::StringOut os{&s};
                json::Writer w(os);
                json::string(w, f);
                return s;
            };
            const std::vector<std::string> split = {
                chunk(
                    R"({"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f",)"
                    R"("arguments":)" +
                    fragment(std::string_view(args).substr(0, cut)) + "}}]}"),
                chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":)" +
                      fragment(std::string_view(args).substr(cut)) + "}}]}"),
                chunk("{}", R"("tool_calls")"), "[DONE]"};
            CHECK(ollama_calls(relay(Dialect::openai_chat, Dialect::ollama_chat, split)) ==
                  expected);
        }
    }
    SUBCASE("arguments that are not an object end the stream with an error line") {
        const std::vector<std::string> bad = {
            chunk(R"({"tool_calls":[{"index":0,"id":"t","type":"function",)"
                  R"("function":{"name":"f","arguments":"[1]"}}]})"),
            chunk("{}", R"("tool_calls")"), "[DONE]"};
        const std::string err = relay(Dialect::openai_chat, Dialect::ollama_chat, bad);
        const std::vector<std::string> docs_bad = documents(err);
        REQUIRE(docs_bad.size() == 1);
        CHECK(docs_bad[0].find("not a JSON object") != std::string::npos);
    }
    SUBCASE("a tool call for a client that has none is an error, not a silent loss") {
        const std::string err = relay(Dialect::openai_chat, Dialect::tgi, vllm);
        CHECK(err.find("tool calls") != std::string::npos);
    }
}

TEST_CASE("streamed tool calls: Ollama's whole calls become one OpenAI delta each") {
    const std::vector<std::string> lines = {
        R"({"model": "m", "created_at": "2024-07-22T20:33:28Z", "message": {"role": "assistant",)"
        R"( "content": "", "tool_calls": [{"id": "call_x1", "function": {"index": 0,)"
        R"( "name": "get_weather", "arguments": {"city": "Par\u00eds", "days": 2}}}]}, "done": false})",
        R"({"done":false,"message":{"tool_calls":[{"function":{"arguments":{},"name":"now"}}],)"
        R"("content":"","role":"assistant"},"model":"m","created_at":"2024-07-22T20:33:28Z"})",
        R"({"model":"m","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant",)"
        R"("content":""},"done_reason":"stop","done":true,"prompt_eval_count":9,"eval_count":5})"};
    const std::string out = relay(Dialect::ollama_chat, Dialect::openai_chat, lines);
    INFO(out);
    const std::vector<std::string> docs = documents(out);
    std::string calls;
    std::string finishes;
    for (const std::string& d : docs) {
        json::Document doc;
        REQUIRE_FALSE(json::parse(d, doc));
        const json::Value* choices = json::find(doc, "choices");
        if (choices == nullptr || choices->Empty()) {
            continue;
        }
        const json::Value& c = (*choices)[0];
        if (const json::Value* t = json::find(*json::find(c, "delta"), "tool_calls")) {
            calls += json::to_string(*t);
        }
        if (const json::Value* f = json::find(c, "finish_reason"); f->IsString()) {
            finishes += json::view(*f);
        }
    }
    // Arguments as OpenAI's string, compact; a call without an id gets the whole answer's id.
    CHECK(calls ==
          R"([{"index":0,"id":"call_x1","type":"function","function":{"name":"get_weather",)"
          R"("arguments":"{\"city\":\"París\",\"days\":2}"}}])"
          R"([{"index":1,"id":"call_chatcmpl-7_1","type":"function","function":{"name":"now",)"
          R"("arguments":"{}"}}])");
    CHECK(finishes == "tool_calls");
    CHECK(docs.back().find(R"("usage":{"prompt_tokens":9,"completion_tokens":5)") !=
          std::string::npos);
}

namespace {

// The SSE events of an Anthropic stream as "<event> <index>" and, for deltas, their payloads.
std::vector<std::string> anthropic_events(const std::string& out) {
    std::vector<std::string> seq;
    size_t at = 0;
    while ((at = out.find("data: ", at)) != std::string::npos) {
        const size_t end = out.find('\n', at);
        json::Document doc;
        REQUIRE_FALSE(json::parse(std::string_view(out).substr(at + 6, end - at - 6), doc));
        at = end;
        std::string e(json::view(*json::find(doc, "type")));
        if (const json::Value* i = json::find(doc, "index")) {
            e += " " + std::to_string(i->GetInt());
        }
        if (const json::Value* b = json::find(doc, "content_block")) {
            e += " " + json::to_string(*b);
        }
        if (const json::Value* d = json::find(doc, "delta"); d != nullptr && e != "message_delta") {
            e += " " + json::to_string(*d);
        }
        if (e == "message_delta") {
            e += " " + json::to_string(*json::find(*json::find(doc, "delta"), "stop_reason"));
        }
        seq.push_back(e);
    }
    return seq;
}

}  // namespace

TEST_CASE("streamed tool calls: OpenAI deltas become Anthropic tool_use blocks") {
    const std::vector<std::string> vllm = {
        chunk(R"({"role":"assistant","content":""})"),
        chunk(R"({"content":"Let me check."})"),
        chunk(R"({"tool_calls":[{"index":0,"id":"call_1","type":"function",)"
              R"("function":{"name":"get_weather","arguments":""}}]})"),
        chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]})"),
        chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]})"),
        chunk(R"({"tool_calls":[{"index":1,"id":"call_2","type":"function",)"
              R"("function":{"name":"now","arguments":"{}"}}]})"),
        chunk("{}", R"("tool_calls")"),
        "[DONE]"};
    const std::string out = relay(Dialect::openai_chat, Dialect::anthropic, vllm);
    INFO(out);
    CHECK(
        anthropic_events(out) ==
        std::vector<std::string>{
            "message_start", R"(content_block_start 0 {"type":"text","text":""})",
            R"(content_block_delta 0 {"type":"text_delta","text":"Let me check."})",
            "content_block_stop 0",
            R"(content_block_start 1 {"type":"tool_use","id":"call_1","name":"get_weather","input":{}})",
            R"(content_block_delta 1 {"type":"input_json_delta","partial_json":"{\"city\": "})",
            R"(content_block_delta 1 {"type":"input_json_delta","partial_json":"\"Paris\"}"})",
            "content_block_stop 1",
            R"(content_block_start 2 {"type":"tool_use","id":"call_2","name":"now","input":{}})",
            R"(content_block_delta 2 {"type":"input_json_delta","partial_json":"{}"})",
            "content_block_stop 2", R"(message_delta "tool_use")", "message_stop"});
}

TEST_CASE("streamed tool calls: Anthropic tool_use blocks reach OpenAI and Ollama clients") {
    const std::vector<std::string> anthropic = {
        R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",)"
        R"("content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}})",
        R"({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",)"
        R"( "id": "toolu_01", "name": "get_weather", "input": {}}})",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}})",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}})",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}})",
        R"({"type":"content_block_stop","index":0})",
        R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}})",
        R"({"type":"message_stop"})"};
    CHECK(ollama_calls(relay(Dialect::anthropic, Dialect::ollama_chat, anthropic)) ==
          R"([{"id":"toolu_01","function":{"index":0,"name":"get_weather",)"
          R"("arguments":{"city":"Paris"}}}])");
    const std::string openai = relay(Dialect::anthropic, Dialect::openai_chat, anthropic);
    INFO(openai);
    std::string arguments;
    for (const std::string& d : documents(openai)) {
        json::Document doc;
        REQUIRE_FALSE(json::parse(d, doc));
        const json::Value* choices = json::find(doc, "choices");
        if (choices == nullptr || choices->Empty()) {
            continue;
        }
        const json::Value* calls = json::find(*json::find((*choices)[0], "delta"), "tool_calls");
        if (calls != nullptr) {
            arguments += json::view(*json::find(*json::find((*calls)[0], "function"), "arguments"));
        }
    }
    CHECK(arguments == R"({"city": "Paris"})");  // byte for byte, as the model wrote it
    CHECK(openai.find(R"("finish_reason":"tool_calls")") != std::string::npos);
    CHECK(openai.find(R"("id":"toolu_01","type":"function")") != std::string::npos);
}

// ---- Reasoning: vLLM/SGLang reasoning_content, Ollama thinking, Anthropic thinking blocks -----

TEST_CASE("streamed reasoning reaches each chat dialect in its own place") {
    // vLLM >= 0.11.1 writes both keys with the same text: it must not come out twice.
    const std::vector<std::string> vllm = {
        chunk(R"({"role":"assistant","content":""})"),
        chunk(R"({"reasoning":"Let me ","reasoning_content":"Let me "})"),
        chunk(R"({"reasoning": "think.", "reasoning_content": "think."})"),
        chunk(R"({"content":"Hi."})"),
        chunk("{}", R"("stop")"),
        "[DONE]"};
    SUBCASE("to Ollama: thinking lines before the content") {
        const std::string out = relay(Dialect::openai_chat, Dialect::ollama_chat, vllm);
        INFO(out);
        std::string thinking;
        std::string content;
        for (const std::string& d : documents(out)) {
            json::Document doc;
            REQUIRE_FALSE(json::parse(d, doc));
            const json::Value& m = *json::find(doc, "message");
            if (const json::Value* t = json::find(m, "thinking")) {
                CHECK(content.empty());
                thinking += json::view(*t);
            }
            content += json::view(*json::find(m, "content"));
        }
        CHECK(thinking == "Let me think.");
        CHECK(content == "Hi.");
    }
    SUBCASE("to Anthropic: a thinking block before the text block") {
        const std::string out = relay(Dialect::openai_chat, Dialect::anthropic, vllm);
        INFO(out);
        CHECK(anthropic_events(out) ==
              std::vector<std::string>{
                  "message_start",
                  R"(content_block_start 0 {"type":"thinking","thinking":"","signature":""})",
                  R"(content_block_delta 0 {"type":"thinking_delta","thinking":"Let me "})",
                  R"(content_block_delta 0 {"type":"thinking_delta","thinking":"think."})",
                  "content_block_stop 0", R"(content_block_start 1 {"type":"text","text":""})",
                  R"(content_block_delta 1 {"type":"text_delta","text":"Hi."})",
                  "content_block_stop 1", R"(message_delta "end_turn")", "message_stop"});
    }
    SUBCASE("from Ollama and Anthropic to OpenAI: reasoning_content deltas") {
        const std::vector<std::string> ollama = {
            R"({"model":"m","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant",)"
            R"("content":"","thinking":"Hmm."},"done":false})",
            R"({"model":"m","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant",)"
            R"("content":"Hi."},"done":false})",
            R"({"model":"m","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant",)"
            R"("content":""},"done_reason":"stop","done":true,"eval_count":3})"};
        const std::vector<std::string> anthropic = {
            R"({"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}})",
            R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}})",
            R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm."}})",
            R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}})",
            R"({"type":"content_block_stop","index":0})",
            R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})",
            R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi."}})",
            R"({"type":"content_block_stop","index":1})",
            R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})",
            R"({"type":"message_stop"})"};
        for (const auto& [backend, lines] :
             {std::pair{Dialect::ollama_chat, ollama}, std::pair{Dialect::anthropic, anthropic}}) {
            const std::string out = relay(backend, Dialect::openai_chat, lines);
            INFO(out);
            CHECK(out.find(R"("delta":{"reasoning_content":"Hmm."})") != std::string::npos);
            CHECK(out.find(R"("delta":{"content":"Hi."})") >
                  out.find(R"("delta":{"reasoning_content":"Hmm."})"));
            CHECK(out.find("EqQB") == std::string::npos);  // the signature stays with Anthropic
        }
    }
}

TEST_CASE("whole answers: reasoning reaches each chat dialect in its own place") {
    canonical::GenerationRequest req;
    req.kind = canonical::RequestKind::chat;
    req.model = "m";
    const std::string vllm =
        R"({"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,)"
        R"("message":{"role":"assistant","content":"Hi.","reasoning":"Hmm.","reasoning_content":)"
        R"("Hmm."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,)"
        R"("total_tokens":7}})";
    auto encode_for = [&](Dialect backend, std::string_view body, Dialect client) {
        req.dialect = client;
        auto r = codec_for(backend).decode_response(body, req);
        REQUIRE(r.ok());
        std::string out;
        codec_for(client).encode_response(*r, req, out);
        return out;
    };
    CHECK(encode_for(Dialect::openai_chat, vllm, Dialect::ollama_chat)
              .find(R"("message":{"role":"assistant","content":"Hi.","thinking":"Hmm."})") !=
          std::string::npos);
    CHECK(encode_for(Dialect::openai_chat, vllm, Dialect::anthropic)
              .find(R"("content":[{"type":"thinking","thinking":"Hmm.","signature":""},)"
                    R"({"type":"text","text":"Hi."}])") != std::string::npos);
    const std::string anthropic =
        R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[)"
        R"({"type":"thinking","thinking":"Hmm.","signature":"EqQB"},{"type":"text","text":"Hi."}],)"
        R"("stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4}})";
    const std::string openai = encode_for(Dialect::anthropic, anthropic, Dialect::openai_chat);
    CHECK(openai.find(R"("content":"Hi.","reasoning_content":"Hmm.")") != std::string::npos);
    const std::string ollama =
        R"({"model":"m","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant",)"
        R"("content":"Hi.","thinking":"Hmm."},"done_reason":"stop","done":true,)"
        R"("prompt_eval_count":3,"eval_count":4})";
    CHECK(encode_for(Dialect::ollama_chat, ollama, Dialect::openai_chat)
              .find(R"("content":"Hi.","reasoning_content":"Hmm.")") != std::string::npos);
}
