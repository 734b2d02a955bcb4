// Issue 13, first part: what a chat history carries besides text (an assistant's tool calls,
// the tool results that answer them, an assistant's reasoning, non-text content parts) goes
// from the client's dialect to the backend's, or the request is refused naming it. Before,
// the decoders read the text only, and a translated pair sent the history without them (a 200
// for a different conversation).

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "tests/support/chat_codec.hpp"
#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace {

namespace canonical = infergate::canonical;
namespace json = infergate::json;
using canonical::Dialect;
using canonical::GenerationRequest;
using infergate::translators::codec_for;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;

using infergate::testing::decode;
using infergate::testing::encode;
using infergate::testing::refusal;

// The messages array of an encoded body, compact.
std::string messages_of(const std::string& body) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(body, doc));
    const json::Value* m = json::find(doc, "messages");
    REQUIRE(m != nullptr);
    return json::to_string(*m);
}

// An OpenAI agent loop: the assistant called a tool (arguments with spaces and an escape, as
// the model wrote them), the tool answered, and the assistant reasoned before.
constexpr std::string_view kOpenAIHistory = R"({"model":"m","messages":[
  {"role":"user","content":"Weather in Paris?"},
  {"role":"assistant","content":null,"reasoning_content":"I should call the tool.",
   "tool_calls":[{"id":"call_1","type":"function",
                  "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"\\u00b0C\"}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"18 degrees"}]})";

}  // namespace

TEST_CASE("OpenAI chat: tool calls, tool results and reasoning in the history are decoded") {
    const GenerationRequest req = decode(Dialect::openai_chat, kOpenAIHistory);
    REQUIRE(req.messages.size() == 3);
    const auto& assistant = req.messages[1];
    REQUIRE(assistant.tool_calls.size() == 1);
    CHECK(assistant.tool_calls[0].id == "call_1");
    CHECK(assistant.tool_calls[0].name == "get_weather");
    // Byte for byte: the arguments string is not re-serialised.
    CHECK(assistant.tool_calls[0].arguments == R"({"city": "Paris", "unit": "\u00b0C"})");
    CHECK(assistant.reasoning == "I should call the tool.");
    CHECK(assistant.content.empty());
    CHECK(req.messages[2].tool_call_id == "call_1");
    CHECK(req.messages[2].content == "18 degrees");
}

TEST_CASE("OpenAI chat: malformed tool calls get a 400 naming the field") {
    struct Case {
        std::string_view calls;
        std::string_view param;
    };
    const Case cases[] = {
        {R"({"id":"a","type":"function"})", "messages[0].tool_calls"},
        {R"([{"id":"a","type":"retrieval","function":{"name":"f","arguments":"{}"}}])",
         "messages[0].tool_calls[0].type"},
        {R"([{"id":"a","type":"function"}])", "messages[0].tool_calls[0].function"},
        {R"([{"id":"a","type":"function","function":{"arguments":"{}"}}])",
         "messages[0].tool_calls[0].function.name"},
        {R"([{"id":"a","type":"function","function":{"name":"f","arguments":{"x":1}}}])",
         "messages[0].tool_calls[0].function.arguments"},
    };
    for (const Case& c : cases) {
        const std::string body = R"({"model":"m","messages":[{"role":"assistant","content":"",)"
                                 R"("tool_calls":)" +
                                 std::string(c.calls) + "}]}";
        CAPTURE(body);
        auto r = codec_for(Dialect::openai_chat).decode_request(body);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().param == c.param);
    }
}

TEST_CASE("OpenAI chat to an OpenAI-family layer: the history goes on with its tool calls") {
    // OpenAI client -> TGI's or llama.cpp's OpenAI layer is translated, not passed through:
    // the encoder used to write role and text only.
    const GenerationRequest req = decode(Dialect::openai_chat, kOpenAIHistory);
    for (const Flavor flavor : {Flavor::tgi, Flavor::llamacpp, Flavor::vllm, Flavor::sglang}) {
        CAPTURE(static_cast<int>(flavor));
        CHECK(
            messages_of(encode(Dialect::openai_chat, req, flavor)) ==
            R"([{"role":"user","content":"Weather in Paris?"},)"
            R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
            R"("function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"\\u00b0C\"}"}}],)"
            R"("reasoning_content":"I should call the tool."},)"
            R"({"role":"tool","content":"18 degrees","tool_call_id":"call_1"}])");
    }
}

TEST_CASE(
    "OpenAI chat: a message's other members go on to the family, or are refused naming them") {
    // An answer echoed back into the history, as the OpenAI SDK returns it: refusal null,
    // annotations [], plus a server's own member (DeepSeek's and vLLM's `prefix`).
    const GenerationRequest req = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":"Hi"},
      {"role":"assistant","content":"Hello","refusal":null,"annotations":[],"audio":null,
       "function_call":null},
      {"role":"user","content":"Go on"},
      {"role":"assistant","content":"Once","prefix":true}]})");
    CHECK(messages_of(encode(Dialect::openai_chat, req, Flavor::tgi)) ==
          R"([{"role":"user","content":"Hi"},)"
          R"({"role":"assistant","content":"Hello","refusal":null,"annotations":[],"audio":null,)"
          R"("function_call":null},{"role":"user","content":"Go on"},)"
          R"({"role":"assistant","content":"Once","prefix":true}])");
    // Another family: what says nothing stays behind, `prefix` (it changes the answer) is a 400.
    for (const Dialect backend : {Dialect::ollama_chat, Dialect::anthropic}) {
        const canonical::Error e = refusal(backend, req);
        CHECK(e.status == 400);
        CHECK(e.param == "messages[3].prefix");
    }
    GenerationRequest quiet = req;
    quiet.messages.pop_back();
    CHECK(messages_of(encode(Dialect::ollama_chat, quiet)) ==
          R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},)"
          R"({"role":"user","content":"Go on"}])");
    // A refusal the assistant gave is not nothing.
    const GenerationRequest refused = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":"Hi"},{"role":"assistant","content":null,"refusal":"I can't."},
      {"role":"user","content":"Why?"}]})");
    CHECK(refusal(Dialect::ollama_chat, refused).param == "messages[1].refusal");
    // vLLM's newer name for an assistant turn's reasoning.
    const GenerationRequest newer = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":"Hi"},{"role":"assistant","content":"Yes","reasoning":"Hm."},
      {"role":"user","content":"Ok"}]})");
    CHECK(newer.messages[1].reasoning == "Hm.");
    CHECK(newer.messages[1].extras.empty());
}

TEST_CASE("OpenAI chat: non-text content parts reach an OpenAI-family layer as they were") {
    const GenerationRequest req = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":[{"type":"text","text":"What is this?"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]})");
    CHECK(req.non_text_content);
    CHECK(messages_of(encode(Dialect::openai_chat, req, Flavor::tgi)) ==
          R"([{"role":"user","content":[{"type":"text","text":"What is this?"},)"
          R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}])");
    // Images go to the other families in their shapes (below); other parts are refused.
    const GenerationRequest audio = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA",
        "format":"wav"}}]}]})");
    CHECK(refusal(Dialect::anthropic, audio).param == "messages");
    CHECK(refusal(Dialect::ollama_chat, audio).param == "messages");
}

// 1x1 PNG, and the first bytes of a JPEG.
constexpr std::string_view kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg"
    "==";

TEST_CASE("images: OpenAI parts, Ollama images and Anthropic image blocks, each to the others") {
    const std::string png(kPng);
    const GenerationRequest openai =
        decode(Dialect::openai_chat,
               R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[)"
               R"({"type":"text","text":"Compare"},{"type":"image_url","image_url":)"
               R"({"url":"data:image/png;base64,)" +
                   png +
                   R"(","detail":"low"}},{"type":"text","text":"with"},)"
                   R"({"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}}]}]})");
    // Anthropic: blocks in the order sent (texts split where the images came).
    CHECK(messages_of(encode(Dialect::anthropic, openai)) ==
          R"([{"role":"user","content":[{"type":"text","text":"Compare"},)"
          R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":")" +
              png +
              R"("}},{"type":"text","text":"\nwith"},)"
              R"({"type":"image","source":{"type":"url","url":"https://x.test/a.jpg"}}]}])");
    // Ollama takes bytes only: a URL is refused, named; base64 goes as it is.
    CHECK(refusal(Dialect::ollama_chat, openai).param == "messages[0].images[1]");
    GenerationRequest base64_only = openai;
    base64_only.messages[0].images.pop_back();
    CHECK(messages_of(encode(Dialect::ollama_chat, base64_only)) ==
          R"([{"role":"user","content":"Compare\nwith","images":[")" + png + R"("]}])");

    const GenerationRequest ollama = decode(
        Dialect::ollama_chat, R"({"model":"m","messages":[{"role":"user","content":"What is it?",)"
                              R"("images":[")" +
                                  png + R"("]}]})");
    CHECK(messages_of(encode(Dialect::openai_chat, ollama)) ==
          R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;)"
          R"(base64,)" +
              png + R"("}},{"type":"text","text":"What is it?"}]}])");
    CHECK(messages_of(encode(Dialect::anthropic, ollama)) ==
          R"([{"role":"user","content":[{"type":"image","source":{"type":"base64",)"
          R"("media_type":"image/png","data":")" +
              png + R"("}},{"type":"text","text":"What is it?"}]}])");
    // Bytes that are no image a vision model takes are refused where a type must be named.
    const GenerationRequest unknown =
        decode(Dialect::ollama_chat,
               R"({"model":"m","messages":[{"role":"user","content":"x","images":["AAAAAAAA"]}]})");
    CHECK(refusal(Dialect::openai_chat, unknown).param == "messages[0].images[0]");
    CHECK(refusal(Dialect::anthropic, unknown).param == "messages[0].images[0]");

    const GenerationRequest anthropic = decode(
        Dialect::anthropic, R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[)"
                            R"({"type":"image","source":{"type":"base64","media_type":"image/png",)"
                            R"("data":")" +
                                png + R"("}},{"type":"text","text":"What is it?"}]}]})");
    CHECK(messages_of(encode(Dialect::ollama_chat, anthropic)) ==
          R"([{"role":"user","content":"What is it?","images":[")" + png + R"("]}])");
    CHECK(messages_of(encode(Dialect::openai_chat, anthropic)) ==
          R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;)"
          R"(base64,)" +
              png + R"("}},{"type":"text","text":"What is it?"}]}])");
    const GenerationRequest document =
        decode(Dialect::anthropic,
               R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[)"
               R"({"type":"document","source":{"type":"text","media_type":"text/plain",)"
               R"("data":"x"}}]}]})");
    CHECK(refusal(Dialect::openai_chat, document).param == "messages");
}

TEST_CASE("sniff_image_type: the formats vision models take, by their first bytes") {
    CHECK(canonical::sniff_image_type(kPng) == "image/png");
    CHECK(canonical::sniff_image_type("/9j/4AAQSkZJRgABAQ") == "image/jpeg");
    CHECK(canonical::sniff_image_type("R0lGODlhAQABAIAAAP") == "image/gif");
    CHECK(canonical::sniff_image_type("UklGRiQAAABXRUJQVlA4IBgAAAAw") == "image/webp");
    CHECK(canonical::sniff_image_type("UklGRiQAAABXQVZF") == "");  // RIFF WAVE
    CHECK(canonical::sniff_image_type("") == "");
    CHECK(canonical::sniff_image_type("%PDF") == "");
}

TEST_CASE("OpenAI chat to Ollama: tool calls become objects, tool results name their tool") {
    const GenerationRequest req = decode(Dialect::openai_chat, kOpenAIHistory);
    CHECK(messages_of(encode(Dialect::ollama_chat, req)) ==
          R"([{"role":"user","content":"Weather in Paris?"},)"
          R"({"role":"assistant","content":"","thinking":"I should call the tool.",)"
          R"("tool_calls":[{"id":"call_1","function":{"name":"get_weather",)"
          R"("arguments":{"city":"Paris","unit":"°C"}}}]},)"
          R"({"role":"tool","content":"18 degrees","tool_name":"get_weather"}])");
    // Arguments that are not a JSON object cannot be an Ollama object: 400, not a guess.
    GenerationRequest bad = req;
    bad.messages[1].tool_calls[0].arguments = "not json";
    const canonical::Error e = refusal(Dialect::ollama_chat, bad);
    CHECK(e.status == 400);
    CHECK(e.param == "messages[1].tool_calls[0].function.arguments");
    CHECK(e.message.find("'not json'") != std::string::npos);
}

TEST_CASE("Ollama chat: tool calls, tool_name and thinking are decoded and go on") {
    constexpr std::string_view body = R"({"model":"m","stream":false,"messages":[
      {"role":"user","content":"Weather in Paris?"},
      {"role":"assistant","content":"","thinking":"Call the tool.",
       "tool_calls":[{"function":{"name":"get_weather","arguments":{"city": "Paris"}}}]},
      {"role":"tool","tool_name":"get_weather","content":"18 degrees"}]})";
    const GenerationRequest req = decode(Dialect::ollama_chat, body);
    REQUIRE(req.messages.size() == 3);
    REQUIRE(req.messages[1].tool_calls.size() == 1);
    CHECK(req.messages[1].tool_calls[0].name == "get_weather");
    CHECK(req.messages[1].tool_calls[0].arguments == R"({"city":"Paris"})");
    CHECK(req.messages[1].reasoning == "Call the tool.");
    CHECK(req.messages[2].name == "get_weather");
    // To Ollama again: as it came (the arguments object re-written compactly).
    CHECK(messages_of(encode(Dialect::ollama_chat, req)) ==
          R"([{"role":"user","content":"Weather in Paris?"},)"
          R"({"role":"assistant","content":"","thinking":"Call the tool.",)"
          R"("tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},)"
          R"({"role":"tool","content":"18 degrees","tool_name":"get_weather"}])");
    // To an OpenAI-family layer: arguments as OpenAI's string, the tool's name kept.
    CHECK(messages_of(encode(Dialect::openai_chat, req)) ==
          R"([{"role":"user","content":"Weather in Paris?"},)"
          R"({"role":"assistant","content":null,"tool_calls":[{"type":"function",)"
          R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],)"
          R"("reasoning_content":"Call the tool."},)"
          R"({"role":"tool","content":"18 degrees","name":"get_weather"}])");
    // OpenAI's own API takes no reasoning back: refused, named as the client wrote it.
    const canonical::Error e = refusal(Dialect::openai_chat, req, Flavor::openai);
    CHECK(e.param == "messages[1].thinking");
}

TEST_CASE("Ollama chat: malformed tool calls get a 400 naming the field") {
    const std::string_view cases[][2] = {
        {R"("tool_calls":{"function":{}})", "messages[0].tool_calls"},
        {R"("tool_calls":[{"name":"f"}])", "messages[0].tool_calls[0].function"},
        {R"("tool_calls":[{"function":{"arguments":{}}}])",
         "messages[0].tool_calls[0].function.name"},
        {R"("tool_calls":[{"function":{"name":"f","arguments":"{}"}}])",
         "messages[0].tool_calls[0].function.arguments"},
        {R"("thinking":7)", "messages[0].thinking"},
    };
    for (const auto& c : cases) {
        const std::string body = R"({"model":"m","messages":[{"role":"assistant","content":"",)" +
                                 std::string(c[0]) + "}]}";
        CAPTURE(body);
        auto r = codec_for(Dialect::ollama_chat).decode_request(body);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().param == c[1]);
    }
}

TEST_CASE("Anthropic backend: tool calls become tool_use blocks, results tool_result blocks") {
    const GenerationRequest req = decode(Dialect::openai_chat, R"({"model":"m","max_tokens":5,
      "messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"Let me look.","tool_calls":[{"id":"c1","type":"function",
          "function":{"name":"f","arguments":"{\"a\": 1}"}},{"id":"c2","type":"function",
          "function":{"name":"g","arguments":""}}]},
        {"role":"tool","tool_call_id":"c1","content":"one"},
        {"role":"tool","tool_call_id":"c2","content":"two"},
        {"role":"user","content":"go on"}]})");
    CHECK(messages_of(encode(Dialect::anthropic, req)) ==
          R"([{"role":"user","content":"hi"},{"role":"assistant","content":[)"
          R"({"type":"text","text":"Let me look."},)"
          R"({"type":"tool_use","id":"c1","name":"f","input":{"a":1}},)"
          R"({"type":"tool_use","id":"c2","name":"g","input":{}}]},)"
          R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"one"},)"
          R"({"type":"tool_result","tool_use_id":"c2","content":"two"},)"
          R"({"type":"text","text":"go on"}]}])");

    // Ollama: calls without ids, results naming their tool.
    const GenerationRequest ollama = decode(Dialect::ollama_chat, R"({"model":"m","messages":[
        {"role":"user","content":"hi"},
        {"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},
        {"role":"tool","tool_name":"f","content":"done"}]})");
    CHECK(messages_of(encode(Dialect::anthropic, ollama)) ==
          R"([{"role":"user","content":"hi"},{"role":"assistant","content":[)"
          R"({"type":"tool_use","id":"toolu_1_0","name":"f","input":{}}]},)"
          R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1_0",)"
          R"("content":"done"}]}])");

    GenerationRequest not_object = req;
    not_object.messages[1].tool_calls[0].arguments = "[1]";
    CHECK(refusal(Dialect::anthropic, not_object).param ==
          "messages[1].tool_calls[0].function.arguments");

    GenerationRequest thinking = decode(Dialect::openai_chat, R"({"model":"m","max_tokens":5,
      "messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"hello","reasoning_content":"greet back"},
        {"role":"user","content":"go on"}]})");
    CHECK(refusal(Dialect::anthropic, thinking).param == "messages[1].reasoning_content");
}

TEST_CASE("Anthropic client: tool_use, tool_result and thinking blocks reach other backends") {
    const GenerationRequest req = decode(Dialect::anthropic, R"({"model":"m","max_tokens":50,
      "tools":[{"name":"get_weather","description":"Weather now","input_schema":{"type":"object",
        "properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],
      "tool_choice":{"type":"any","disable_parallel_tool_use":true},
      "messages":[{"role":"user","content":"Weather in Paris?"},
        {"role":"assistant","content":[{"type":"thinking","thinking":"Use the tool.",
          "signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"get_weather",
          "input":{"city": "Paris"}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
          "content":[{"type":"text","text":"18 degrees"}],"is_error":false},
          {"type":"text","text":"And tomorrow?"}]}]})");
    const std::string body = encode(Dialect::openai_chat, req);
    CHECK(messages_of(body) ==
          R"([{"role":"user","content":"Weather in Paris?"},)"
          R"({"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function",)"
          R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],)"
          R"("reasoning_content":"Use the tool."},)"
          R"({"role":"tool","content":"18 degrees","tool_call_id":"toolu_1"},)"
          R"({"role":"user","content":"And tomorrow?"}])");
    json::Document doc;
    REQUIRE_FALSE(json::parse(body, doc));
    CHECK(json::to_string(*json::find(doc, "tools")) ==
          R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",)"
          R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
    CHECK(json::to_string(*json::find(doc, "tool_choice")) == R"("required")");
    CHECK(json::to_string(*json::find(doc, "parallel_tool_calls")) == "false");

    // Ollama takes the tools, but has no tool_choice other than auto.
    CHECK(refusal(Dialect::ollama_chat, req).param == "tool_choice");
    const GenerationRequest server_tool = decode(Dialect::anthropic, R"({"model":"m",
      "max_tokens":50,"tools":[{"type":"web_search_20250305","name":"web_search"}],
      "messages":[{"role":"user","content":"news?"}]})");
    CHECK(refusal(Dialect::openai_chat, server_tool).param == "tools[0].type");
}

// ---- Tools between OpenAI-family backends and Ollama (one wire shape), whole answers --------

namespace {

constexpr std::string_view kTools =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";

std::string member(const std::string& body, std::string_view key) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(body, doc));
    const json::Value* v = json::find(doc, key);
    return v == nullptr ? std::string("absent") : json::to_string(*v);
}

}  // namespace

TEST_CASE("tools: an OpenAI client's function tools reach Ollama as they are, and back") {
    const std::string openai_body = R"({"model":"m","tools":)" + std::string(kTools) +
                                    R"(,"messages":[{"role":"user","content":"Weather?"}]})";
    const GenerationRequest from_openai = decode(Dialect::openai_chat, openai_body);
    CHECK(member(encode(Dialect::ollama_chat, from_openai), "tools") == kTools);
    const std::string ollama_body = R"({"model":"m","stream":false,"tools":)" +
                                    std::string(kTools) +
                                    R"(,"messages":[{"role":"user","content":"Weather?"}]})";
    const GenerationRequest from_ollama = decode(Dialect::ollama_chat, ollama_body);
    for (const Flavor flavor : {Flavor::vllm, Flavor::tgi, Flavor::openai}) {
        CHECK(member(encode(Dialect::openai_chat, from_ollama, flavor), "tools") == kTools);
    }
    // What Ollama cannot take is refused, named.
    struct Case {
        std::string_view extra;
        std::string_view param;
    };
    const Case cases[] = {
        {R"("tool_choice":"required")", "tool_choice"},
        {R"("tool_choice":{"type":"function","function":{"name":"get_weather"}})", "tool_choice"},
        {R"("tool_choice":"none")", "tool_choice"},
    };
    for (const Case& c : cases) {
        const std::string body = R"({"model":"m","tools":)" + std::string(kTools) + "," +
                                 std::string(c.extra) +
                                 R"(,"messages":[{"role":"user","content":"Weather?"}]})";
        CAPTURE(body);
        CHECK(refusal(Dialect::ollama_chat, decode(Dialect::openai_chat, body)).param == c.param);
    }
    const GenerationRequest strict = decode(
        Dialect::openai_chat,
        R"({"model":"m","tools":[{"type":"function","function":{"name":"f","strict":true}}],)"
        R"("messages":[{"role":"user","content":"x"}]})");
    CHECK(refusal(Dialect::ollama_chat, strict).param == "tools[0].function.strict");
    const GenerationRequest custom = decode(
        Dialect::openai_chat, R"({"model":"m","tools":[{"type":"custom","custom":{"name":"f"}}],)"
                              R"("messages":[{"role":"user","content":"x"}]})");
    CHECK(refusal(Dialect::ollama_chat, custom).param == "tools[0]");
    // Anthropic takes them in its own shape.
    CHECK(member(encode(Dialect::anthropic, decode(Dialect::ollama_chat, ollama_body)), "tools") ==
          R"([{"name":"get_weather","description":"Weather now","input_schema":{"type":"object",)"
          R"("properties":{"city":{"type":"string"}}}}])");
}

TEST_CASE("tools: an OpenAI-family answer's tool calls reach an Ollama client as objects") {
    const GenerationRequest req = decode(
        Dialect::ollama_chat, R"({"model":"m","stream":false,"tools":)" + std::string(kTools) +
                                  R"(,"messages":[{"role":"user","content":"Weather?"}]})");
    const std::string answer =
        R"({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",)"
        R"( "choices": [{"index": 0, "message": {"role": "assistant", "content": null,)"
        R"( "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "get_weather",)"
        R"( "arguments": "{\"city\": \"Paris\"}"}}]}, "finish_reason": "tool_calls"}],)"
        R"( "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}})";
    auto result = codec_for(Dialect::openai_chat).decode_response(answer, req);
    REQUIRE(result.ok());
    REQUIRE(result->choices.size() == 1);
    REQUIRE(result->choices[0].tool_calls.size() == 1);
    CHECK(result->choices[0].tool_calls[0].arguments == R"({"city": "Paris"})");
    std::string out;
    codec_for(Dialect::ollama_chat).encode_response(*result, req, out);
    CHECK(member(out, "message") ==
          R"({"role":"assistant","content":"","tool_calls":[{"id":"call_9","function":{"index":0,)"
          R"("name":"get_weather","arguments":{"city":"Paris"}}}]})");
    CHECK(member(out, "done_reason") == R"("stop")");  // Ollama's own word for it
    // Arguments that hold no object cannot become Ollama's object: a 502 naming the call.
    std::string bad = answer;
    bad.replace(bad.find(R"({\"city\": \"Paris\"})"), 21, "[1]");
    auto refused = codec_for(Dialect::openai_chat).decode_response(bad, req);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().status == 502);
    CHECK(refused.error().message.find("get_weather") != std::string::npos);
}

TEST_CASE("tools: an Ollama answer's tool calls reach an OpenAI client as OpenAI writes them") {
    const GenerationRequest req =
        decode(Dialect::openai_chat, R"({"model":"m","tools":)" + std::string(kTools) +
                                         R"(,"messages":[{"role":"user","content":"Weather?"}]})");
    const std::string answer =
        R"({"model":"m","created_at":"2024-07-22T20:33:28.123648Z","message":{"role":"assistant",)"
        R"("content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city": "Paris"}}}]},)"
        R"("done_reason":"stop","done":true,"prompt_eval_count":9,"eval_count":5})";
    auto result = codec_for(Dialect::ollama_chat).decode_response(answer, req);
    REQUIRE(result.ok());
    REQUIRE(result->choices[0].tool_calls.size() == 1);
    CHECK(result->choices[0].finish.kind == canonical::FinishKind::tool_calls);
    result->id = "chatcmpl-7";
    std::string out;
    codec_for(Dialect::openai_chat).encode_response(*result, req, out);
    json::Document doc;
    REQUIRE_FALSE(json::parse(out, doc));
    const json::Value& choice = doc["choices"][0];
    CHECK(
        json::to_string(choice["message"]) ==
        R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_chatcmpl-7_0",)"
        R"("type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]})");
    CHECK(json::to_string(choice["finish_reason"]) == R"("tool_calls")");
}

TEST_CASE("thinking switch to Ollama: as Ollama's own compatibility layers read it") {
    auto think_of = [](Dialect client, const std::string& member) -> std::string {
        const std::string body =
            client == Dialect::anthropic
                ? R"({"model":"m","max_tokens":64,"messages":[{"role":"user","content":"Hi"}],)" +
                      member + "}"
                : R"({"model":"m","messages":[{"role":"user","content":"Hi"}],)" + member + "}";
        const std::string sent = encode(Dialect::ollama_chat, decode(client, body));
        json::Document doc;
        REQUIRE_FALSE(json::parse(sent, doc));
        const json::Value* think = json::find(doc, "think");
        return think == nullptr ? "-" : json::to_string(*think);
    };
    const std::pair<const char*, const char*> efforts[] = {
        {"none", "false"},         {"minimal", R"("low")"}, {"low", R"("low")"},
        {"medium", R"("medium")"}, {"high", R"("high")"},   {"max", R"("max")"},
        {"xhigh", R"("max")"}};
    for (const auto& [effort, think] : efforts) {
        CAPTURE(effort);
        CHECK(think_of(Dialect::openai_chat,
                       std::string(R"("reasoning_effort":")") + effort + "\"") == think);
    }
    CHECK(think_of(Dialect::openai_chat, R"("reasoning_effort":null)") == "-");
    CHECK(think_of(Dialect::anthropic, R"("thinking":{"type":"enabled","budget_tokens":2000})") ==
          "true");
    CHECK(think_of(Dialect::anthropic, R"("thinking":{"type":"disabled"})") == "false");
    CHECK(think_of(Dialect::anthropic, R"("thinking":{"type":"adaptive"})") == "-");
    GenerationRequest bad = decode(
        Dialect::openai_chat,
        R"({"model":"m","messages":[{"role":"user","content":"Hi"}],"reasoning_effort":"huge"})");
    CHECK(refusal(Dialect::ollama_chat, bad).param == "reasoning_effort");
    bad = decode(Dialect::anthropic,
                 R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"Hi"}],)"
                 R"("thinking":{"type":"sometimes"}})");
    CHECK(refusal(Dialect::ollama_chat, bad).param == "thinking.type");
    // Toward another family the switch is still refused, naming it.
    bad = decode(Dialect::anthropic,
                 R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"Hi"}],)"
                 R"("thinking":{"type":"enabled","budget_tokens":1024}})");
    CHECK(refusal(Dialect::openai_chat, bad).param == "thinking");
}
