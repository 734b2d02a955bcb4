// Chat answers beyond generated text, deterministic so a client's whole loop is checkable:
//
//   - Tools offered, tool choice not "none", the last message not a tool result: a call to the
//     first tool (or the one tool_choice names); X-Emulator-Tool-Calls: N makes N calls in the
//     turn (the first N tools, cycling when there are fewer; one when the request turns parallel
//     calls off, and always one on TGI, whose grammar has a single call). Arguments come from the
//     tool's JSON schema `properties`, in schema order: a string is the property name reversed (or
//     the first `enum` value), an integer 7, a number 1.5, a boolean true, an array [], an object
//     {}.
//   - The last message a tool result: the text "tool said: <its text>" (the text parts of a
//     result joined; several trailing results joined with "; ").
//   - Images in the conversation: the text "images: <count>, bytes: <decoded bytes>" (base64
//     images count their decoded size, URL images 0).
//   - Structured output (format.hpp reads where each dialect carries it): the text that shows
//     the constraint, e.g. the JSON value a schema describes, built by the arguments' generator
//     (schema_value). Calls win over it; it wins over the tool-result and image texts.
//   - Reasoning (X-Emulator-Reasoning: <text>, Anthropic `thinking` enabled, Ollama `think`):
//     that text ("Thinking about it." by default) before any of the above or the generated text.
//
// What a request asks is read here per request family; each dialect writes the answer in its
// server's own shapes (vllm_wire.cpp, sglang_openai_wire.cpp, compat_openai_wire.cpp,
// ollama_generate.cpp, anthropic_api.cpp). Tokens: a reasoning word is one, a call is one for its
// name and one per argument fragment, a text answer one per word plus EOS. Streams pace them like
// generated tokens (ChoiceState::lead_tokens); usage counts them. A structured-output text is
// one token per piece (format_pieces) plus EOS.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/json_util.hpp"
#include "emulator/options.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

inline constexpr std::string_view kDefaultReasoning = "Thinking about it.";

enum class ChatFamily : std::uint8_t {
    kOpenai,     // OpenAI chat: vLLM, SGLang, TGI and llama.cpp OpenAI layers
    kOllama,     // /api/chat
    kAnthropic,  // /v1/messages
};

// One argument of a planned call: its name and its value as a compact JSON text.
struct ToolArg {
    std::string name;
    std::string value;
};

struct ToolSpec {
    std::string name;
    std::vector<ToolArg> args;
};

// What a chat request asks for besides generated text.
struct ChatAsk {
    std::vector<ToolSpec> tools;
    bool tools_on = false;              // tools offered and tool choice not "none"
    std::optional<std::size_t> named;   // the tool tool_choice names
    bool parallel = true;  // parallel_tool_calls false / disable_parallel_tool_use: one call
    std::optional<std::string> result;  // the trailing tool results' text
    int images = 0;
    std::uint64_t image_bytes = 0;
    bool thinking = false;  // the request's own reasoning switch (Anthropic, Ollama)
    // The structured-output text (format.hpp); the caller reads it, where its dialect has it.
    std::optional<std::string> format;
};

ChatAsk read_chat_ask(const rapidjson::Value& doc, ChatFamily family);

// How a server writes a call's arguments as text.
enum class ArgsLayout : std::uint8_t {
    kCompact,    // {"a":"b","n":7}: serde_json, nlohmann::json, Go
    kPython,     // {"a": "b", "n": 7}: json.dumps, and Anthropic's partial_json
    kTgiStream,  // { "a": "b", "n": 7}: TGI's streamed tokens, "{" first
};

std::string render_args(const ToolSpec& tool, ArgsLayout layout);
// The JSON value a schema describes, as the arguments are built, compact: one member per
// property in schema order (nested objects with `properties` filled in too, 32 levels deep); a
// schema without properties (or not an object) gives {}. Structured output's answer.
std::string schema_value(const rapidjson::Value* schema);
// The arguments as a JSON object (Ollama, Anthropic).
void write_args_object(JsonWriter& w, const ToolSpec& tool);

// One call of the answer and how its argument text is cut into streamed fragments.
struct PlannedCall {
    std::size_t tool = 0;             // index into ChatPlan::tools
    std::string args;                 // the streamed argument text, in the dialect's stream layout
    std::uint32_t head = 0;           // bytes of args that go out with the call's start (TGI "{")
    std::vector<std::uint32_t> ends;  // fragment ends in args, after head
    int tokens() const { return 1 + static_cast<int>(ends.size()); }
    std::string_view fragments(std::size_t from, std::size_t to) const;  // [from, to) joined
};

// The answer a chat request gets besides (or instead of) generated text.
struct ChatPlan {
    std::vector<ToolSpec> tools;
    std::string reasoning;                      // "" = none
    std::vector<std::uint32_t> reasoning_ends;  // one token per word
    std::vector<PlannedCall> calls;
    bool named = false;               // tool_choice named the tool
    std::optional<std::string> text;  // the answer's text instead of generated text
    std::vector<std::uint32_t> text_ends;  // its tokens: a word each, or format_pieces

    int reasoning_tokens() const { return static_cast<int>(reasoning_ends.size()); }
    int call_tokens() const;
    // Tokens before the text: reasoning, then the calls.
    int lead_tokens() const { return reasoning_tokens() + call_tokens(); }
    bool any() const { return !reasoning.empty() || !calls.empty() || text.has_value(); }
    const ToolSpec& tool_of(const PlannedCall& call) const { return tools[call.tool]; }
};

struct PlanOptions {
    ArgsLayout layout = ArgsLayout::kCompact;  // of the streamed arguments
    bool reasons = true;                       // the server has a reasoning output at all
    int max_calls = kMaxToolCalls;             // TGI: one call per turn
};

ChatPlan plan_chat(ChatAsk ask, const Knobs& knobs, const PlanOptions& options);

// What the lead tokens [from, to) of a choice say, as a stream writes them: consecutive reasoning
// words in one span, a call's start, consecutive fragments of one call in one span.
struct LeadSpan {
    enum class Kind : std::uint8_t { kReasoning, kCallStart, kArgs };
    Kind kind = Kind::kReasoning;
    std::size_t call = 0;
    std::string_view text;  // reasoning, the call's head (start), or argument fragments
};
void lead_spans(const ChatPlan& plan, int from, int to, std::vector<LeadSpan>& out);

// A text answer as generated output: one token per piece (`ends`: where each ends; a plan's
// texts have one per word, its leading whitespace included), then EOS;
// cut at `budget` tokens (finish: length) like generated text, so a budget below pieces + 1
// keeps the first `budget` pieces.
Output scripted_output(std::string_view text, std::span<const std::uint32_t> ends, int budget);
// A structured-output text's pieces: its first character alone, then pieces of at most 8 bytes
// (never inside a UTF-8 sequence), so a text of two characters or more streams in several.
std::vector<std::uint32_t> format_pieces(std::string_view text);
Output format_output(std::string_view text, int budget);
// The text of a tool-calling answer: none, ended by the model (EOS, no token of its own).
Output no_text_output();

// Puts a plan into generated choices: a set text replaces the generated one (cut at `budget`),
// tool calls leave no text, and every choice spends the lead tokens first.
void apply_plan(const ChatPlan& plan, std::vector<ChoiceState>& choices, int budget);

// Tool-call ids as each server makes them.
std::string vllm_tool_call_id();      // chatcmpl-tool-<32 hex> (make_tool_call_id)
std::string sglang_tool_call_id();    // call_<24 hex> (uuid4().hex[:24])
std::string ollama_tool_call_id();    // call_<8 [a-z0-9]> (routes.go toolCallId)
std::string llamacpp_tool_call_id();  // 32 alphanumerics (random_string)
std::string anthropic_tool_use_id();  // toolu_<24 alphanumerics>
// TGI: one more than the largest numeric id of the history's tool calls ("0" without any); a
// uuid4 when one of them is not a number (ChatRequest::next_tool_call_id).
std::string tgi_tool_call_id(const rapidjson::Value& doc);
// An Anthropic thinking block's signature: opaque base64, stable for a text.
std::string thinking_signature(std::string_view thinking);

}  // namespace infergate::emulator
