// Issue 13, first part: what a chat history carries besides text (an assistant's tool calls,
// the tool results that answer them, an assistant's reasoning, non-text content parts) goes
// from the client's dialect to the backend's, or the request is refused naming it. Before,
// the decoders read the text only, and a translated pair sent the history without them (a 200
// for a different conversation).

#include <doctest/doctest.h>

#include <string>
#include <string_view>

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

GenerationRequest decode(Dialect client, std::string_view body) {
    INFO(body);
    auto r = codec_for(client).decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r.value());
}

std::string encode(Dialect backend, const GenerationRequest& req, Flavor flavor = Flavor::vllm) {
    UpstreamOptions options;
    options.flavor = flavor;
    auto r = codec_for(backend).encode_request(req, options);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r.value());
}

canonical::Error refusal(Dialect backend, const GenerationRequest& req,
                         Flavor flavor = Flavor::vllm) {
    UpstreamOptions options;
    options.flavor = flavor;
    auto r = codec_for(backend).encode_request(req, options);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

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

TEST_CASE("OpenAI chat: non-text content parts reach an OpenAI-family layer as they were") {
    const GenerationRequest req = decode(Dialect::openai_chat, R"({"model":"m","messages":[
      {"role":"user","content":[{"type":"text","text":"What is this?"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]})");
    CHECK(req.non_text_content);
    CHECK(messages_of(encode(Dialect::openai_chat, req, Flavor::tgi)) ==
          R"([{"role":"user","content":[{"type":"text","text":"What is this?"},)"
          R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}])");
    // Where the parts cannot go, the request is refused, as before.
    CHECK(refusal(Dialect::anthropic, req).param == "messages");
}

TEST_CASE("OpenAI chat to Ollama: tool calls become objects, tool results name their tool") {
    const GenerationRequest req = decode(Dialect::openai_chat, kOpenAIHistory);
    CHECK(
        messages_of(encode(Dialect::ollama_chat, req)) ==
        R"([{"role":"user","content":"Weather in Paris?"},)"
        R"({"role":"assistant","content":"","thinking":"I should call the tool.",)"
        R"("tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris","unit":"°C"}}}]},)"
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

TEST_CASE("Anthropic backend: tool calls and reasoning in the history are refused, not dropped") {
    const GenerationRequest req = decode(Dialect::openai_chat, R"({"model":"m","max_tokens":5,
      "messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function",
          "function":{"name":"f","arguments":"{}"}}]},
        {"role":"user","content":"go on"}]})");
    const canonical::Error calls = refusal(Dialect::anthropic, req);
    CHECK(calls.status == 400);
    CHECK(calls.param == "messages[1].tool_calls");
    CHECK(calls.message.find("tool_use") != std::string::npos);

    GenerationRequest thinking = decode(Dialect::openai_chat, R"({"model":"m","max_tokens":5,
      "messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"hello","reasoning_content":"greet back"},
        {"role":"user","content":"go on"}]})");
    CHECK(refusal(Dialect::anthropic, thinking).param == "messages[1].reasoning_content");
}
