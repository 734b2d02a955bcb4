// translators/responses/request_decode.cpp: a Responses request rewritten as the chat request it
// is equivalent to (messages, tools, settings), its conversation state (store,
// previous_response_id, item_reference, input_items, the echo), and the 400 for every member the
// bridge refuses or that is malformed.

#include <string>
#include <string_view>
#include <vector>

#include "tests/translators/responses/test_util.hpp"

namespace {

using infergate::canonical::ChatMessage;
using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::RequestKind;
using infergate::canonical::SamplingParams;
using infergate::canonical::ToolCall;
using responses_test::codec;
using responses_test::decode_ok;
using responses_test::FakeLookup;

struct BadCase {
    std::string_view body;
    std::string_view param;
    std::string_view code = {};
};

void check_bad(const BadCase& c, const FakeLookup* lookup = nullptr) {
    INFO(c.body);
    auto r = codec().decode_stateful(c.body, lookup);
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message);
    CHECK(r.error().status == 400);
    CHECK(r.error().type == "invalid_request_error");
    CHECK(r.error().param == c.param);
    CHECK(r.error().code == c.code);
    CHECK_FALSE(r.error().message.empty());
}

// An extra's JSON, or "<absent>".
std::string extra(const GenerationRequest& req, std::string_view key) {
    for (const auto& e : req.extras) {
        if (e.key == key) {
            return e.json;
        }
    }
    return "<absent>";
}

bool extra_inert(const GenerationRequest& req, std::string_view key) {
    for (const auto& e : req.extras) {
        if (e.key == key) {
            return e.inert;
        }
    }
    FAIL("no extra " << key);
    return false;
}

std::string echo(const GenerationRequest& req, std::string_view key) {
    for (const auto& e : req.responses.echo) {
        if (e.key == key) {
            return e.json;
        }
    }
    return "<absent>";
}

std::vector<std::string> roles(const GenerationRequest& req) {
    std::vector<std::string> out;
    for (const ChatMessage& m : req.messages) {
        out.push_back(m.role);
    }
    return out;
}

ToolCall call(std::string id, std::string name, std::string arguments) {
    return ToolCall{std::move(id), std::move(name), std::move(arguments)};
}

constexpr std::string_view kUserHi =
    R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]})";
constexpr std::string_view kAssistantHello =
    R"({"id":"msg_a_0","type":"message","status":"completed","role":"assistant",)"
    R"("content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]})";

}  // namespace

TEST_SUITE("responses request decode") {
    TEST_CASE("string input is one user message; the request reads as a chat request") {
        const GenerationRequest req = decode_ok(R"({"model":"m1","input":"Hi"})");
        CHECK(req.dialect == Dialect::openai_chat);
        CHECK(req.kind == RequestKind::chat);
        CHECK(req.model == "m1");
        REQUIRE(req.messages.size() == 1);
        CHECK(req.messages[0] == infergate::canonical::text_message("user", "Hi"));
        CHECK(req.sampling == SamplingParams{});
        CHECK(req.extras.empty());
        CHECK_FALSE(req.stream);
        CHECK_FALSE(req.include_usage);
        CHECK_FALSE(req.non_text_content);
        // The state: stored by default, continuing nothing, its input as OpenAI lists it.
        CHECK(req.responses.store);
        CHECK(req.responses.previous_response_id.empty());
        CHECK(req.responses.input_items == std::vector<std::string>{std::string(kUserHi)});
    }

    TEST_CASE("decode_request is decode_stateful without a store") {
        auto r = codec().decode_request(R"({"model":"m","input":"Hi"})");
        REQUIRE(r.ok());
        REQUIRE(r->messages.size() == 1);
        CHECK(r->messages[0].content == "Hi");
        CHECK(codec().dialect() == Dialect::openai_responses);
        CHECK(codec().id_prefix() == "resp_");
    }

    TEST_CASE("instructions are a system message before everything else") {
        const GenerationRequest req = decode_ok(
            R"({"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"Hi"}]})");
        CHECK(roles(req) == std::vector<std::string>{"system", "user"});
        CHECK(req.messages[0].content == "Be brief.");
        CHECK(req.messages[1].content == "Hi");
        CHECK(echo(req, "instructions") == R"("Be brief.")");
        // Instructions are this request's own: not an input item a later turn gets back. The
        // short-form message is kept as the API lists it: a message item with input_text parts.
        CHECK(
            req.responses.input_items ==
            std::vector<std::string>{
                R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]})"});
    }

    TEST_CASE("message items: roles, input_text parts, output_text of the assistant") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"type":"message","role":"developer","content":"dev rules"},
            {"role":"system","content":[{"type":"input_text","text":"sys"}]},
            {"type":"message","role":"user","content":[{"type":"input_text","text":"a"},
                                                       {"type":"input_text","text":"b"}]},
            {"type":"message","role":"assistant","content":[
                {"type":"output_text","text":"I see ","annotations":[]},
                {"type":"output_text","text":"a cat"}]},
            {"role":"assistant","content":"Plain."}]})");
        CHECK(roles(req) ==
              std::vector<std::string>{"developer", "system", "user", "assistant", "assistant"});
        CHECK(req.messages[0].content == "dev rules");
        CHECK(req.messages[1].content == "sys");
        CHECK(req.messages[2].content == "a\nb");  // chat's text parts, joined as vLLM joins them
        CHECK(req.messages[3].content == "I see \na cat");  // an assistant's parts as well
        CHECK(req.messages[3].tool_calls.empty());
        CHECK(req.messages[4].content == "Plain.");  // two assistant messages: two turns
        CHECK_FALSE(req.non_text_content);
        CHECK(req.responses.input_items.size() == 5);
        CHECK(
            req.responses.input_items[1] ==
            R"({"type":"message","role":"system","content":[{"type":"input_text","text":"sys"}]})");
        CHECK(
            req.responses.input_items[4] ==
            R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Plain."}]})");
    }

    TEST_CASE("input_image parts become chat image_url parts, detail kept") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"role":"user","content":[
                {"type":"input_text","text":"look"},
                {"type":"input_image","image_url":"https://x.test/a.png","detail":"high"},
                {"type":"input_text","text":"and"},
                {"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]})");
        REQUIRE(req.messages.size() == 1);
        const ChatMessage& m = req.messages[0];
        CHECK(m.role == "user");
        CHECK(m.content == "look\nand");
        CHECK(req.non_text_content);
        CHECK_FALSE(req.untranslated_parts);
        REQUIRE(m.images.size() == 2);
        CHECK(m.images[0].url == "https://x.test/a.png");
        CHECK(m.images[0].data.empty());
        CHECK(m.images[0].at == 4);  // after "look"
        CHECK(m.images[1].url.empty());
        CHECK(m.images[1].media_type == "image/png");
        CHECK(m.images[1].data == "iVBORw0KGgo=");
        CHECK(m.images[1].at == 8);  // after "look\nand"
        // The chat parts as an OpenAI-family backend gets them: detail goes on where given.
        CHECK(m.parts_json ==
              R"([{"type":"text","text":"look"},)"
              R"({"type":"image_url","image_url":{"url":"https://x.test/a.png","detail":"high"}},)"
              R"({"type":"text","text":"and"},)"
              R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}])");
    }

    TEST_CASE("reasoning, message and function_call items make one assistant turn") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"role":"user","content":"Weather and time in Paris?"},
            {"type":"reasoning","id":"rs_1","summary":[],
             "content":[{"type":"reasoning_text","text":"Two tools."}]},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
            {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather",
             "arguments":"{\"city\":\"Paris\"}"},
            {"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
            {"type":"function_call_output","call_id":"call_1","output":"sunny"},
            {"type":"function_call_output","call_id":"call_2",
             "output":[{"type":"input_text","text":"noon"}]},
            {"role":"user","content":"Thanks"}]})");
        CHECK(roles(req) == std::vector<std::string>{"user", "assistant", "tool", "tool", "user"});
        const ChatMessage& a = req.messages[1];
        CHECK(a.content == "Checking.");
        CHECK(a.reasoning == "Two tools.");
        CHECK(a.tool_calls ==
              std::vector<ToolCall>{call("call_1", "get_weather", R"({"city":"Paris"})"),
                                    call("call_2", "get_time", "{}")});
        CHECK(req.messages[2].tool_call_id == "call_1");
        CHECK(req.messages[2].content == "sunny");
        CHECK(req.messages[3].tool_call_id == "call_2");
        CHECK(req.messages[3].content == "noon");
        CHECK(req.messages[4].content == "Thanks");
        CHECK(req.responses.input_items.size() == 8);
    }

    TEST_CASE("function calls alone: an assistant turn without text") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"role":"user","content":"go"},
            {"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
            {"type":"function_call_output","call_id":"c1","output":"done"}]})");
        CHECK(roles(req) == std::vector<std::string>{"user", "assistant", "tool"});
        CHECK(req.messages[1].content.empty());
        CHECK(req.messages[1].tool_calls == std::vector<ToolCall>{call("c1", "f", R"({"a":1})")});
    }

    TEST_CASE("an assistant message after function calls, or reasoning after text, starts a turn") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"role":"user","content":"go"},
            {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
            {"role":"assistant","content":"Then this."},
            {"type":"reasoning","summary":[{"type":"summary_text","text":"s1"},
                                           {"type":"summary_text","text":"s2"}]},
            {"role":"assistant","content":"Last."}]})");
        CHECK(roles(req) ==
              std::vector<std::string>{"user", "assistant", "assistant", "assistant"});
        CHECK(req.messages[1].tool_calls.size() == 1);
        CHECK(req.messages[1].content.empty());
        CHECK(req.messages[2].content == "Then this.");
        CHECK(req.messages[2].reasoning.empty());
        // Without reasoning_text content, the summary's texts, one a line.
        CHECK(req.messages[3].reasoning == "s1\ns2");
        CHECK(req.messages[3].content == "Last.");
    }

    TEST_CASE("tools: function tools flattened as chat nests them") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"x","tools":[
            {"type":"function","name":"get_weather","description":"Weather now",
             "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true},
            {"type":"function","name":"noop","parameters":{"type":"object"},"description":null}],
            "tool_choice":"required"})");
        CHECK(extra(req, "tools") ==
              R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",)"
              R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}},)"
              R"("strict":true}},)"
              R"({"type":"function","function":{"name":"noop","parameters":{"type":"object"}}}])");
        CHECK_FALSE(extra_inert(req, "tools"));
        CHECK(extra(req, "tool_choice") == R"("required")");
        // The echo repeats the tools as the client wrote them.
        CHECK(echo(req, "tools").starts_with(R"([{"type":"function","name":"get_weather")"));
        CHECK(echo(req, "tool_choice") == R"("required")");
    }

    TEST_CASE("tool_choice naming a function; an empty tools list sends none") {
        const GenerationRequest req = decode_ok(
            R"({"model":"m","input":"x","tools":[],"tool_choice":{"type":"function","name":"f"}})");
        CHECK(extra(req, "tools") == "<absent>");
        CHECK(extra(req, "tool_choice") == R"({"type":"function","function":{"name":"f"}})");
        CHECK(echo(req, "tool_choice") == R"({"type":"function","name":"f"})");
    }

    TEST_CASE("text.format: json_schema, json_object, text; verbosity") {
        const GenerationRequest schema = decode_ok(R"({"model":"m","input":"x","text":{"format":
            {"type":"json_schema","name":"person","description":"A person",
             "schema":{"type":"object","properties":{"name":{"type":"string"}}},"strict":true},
            "verbosity":"low"}})");
        CHECK(extra(schema, "response_format") ==
              R"({"type":"json_schema","json_schema":{"name":"person","description":"A person",)"
              R"("schema":{"type":"object","properties":{"name":{"type":"string"}}},)"
              R"("strict":true}})");
        CHECK(extra(schema, "verbosity") == R"("low")");

        const GenerationRequest object =
            decode_ok(R"({"model":"m","input":"x","text":{"format":{"type":"json_object"}}})");
        CHECK(extra(object, "response_format") == R"({"type":"json_object"})");

        const GenerationRequest text =
            decode_ok(R"({"model":"m","input":"x","text":{"format":{"type":"text"}}})");
        CHECK(extra(text, "response_format") == "<absent>");
        CHECK(echo(text, "text") == R"({"format":{"type":"text"}})");
    }

    TEST_CASE(
        "settings: reasoning.effort, max_output_tokens, temperature, top_p, user, "
        "parallel_tool_calls") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"x",
            "reasoning":{"effort":"high","summary":"auto"},"max_output_tokens":100,
            "temperature":0.5,"top_p":0.9,"user":"u-1","parallel_tool_calls":false})");
        CHECK(extra(req, "reasoning_effort") == R"("high")");
        CHECK(req.sampling.max_tokens == 100);
        CHECK(req.sampling.temperature == 0.5);
        CHECK(req.sampling.top_p == 0.9);
        CHECK(extra(req, "user") == R"("u-1")");
        CHECK(extra_inert(req, "user"));
        CHECK(extra(req, "parallel_tool_calls") == "false");
        // Members with no chat counterpart (the echo has them) go nowhere else.
        CHECK(extra(req, "reasoning") == "<absent>");
        CHECK(extra(req, "max_output_tokens") == "<absent>");
        CHECK(echo(req, "max_output_tokens") == "100");
        CHECK(echo(req, "reasoning") == R"({"effort":"high","summary":"auto"})");
        CHECK(echo(req, "temperature") == "0.5");
        CHECK(echo(req, "parallel_tool_calls") == "false");
    }

    TEST_CASE("stream asks for usage too; store false is kept") {
        const GenerationRequest req = decode_ok(
            R"({"model":"m","input":"x","stream":true,"store":false,
                "stream_options":{"include_obfuscation":false}})");
        CHECK(req.stream);
        CHECK(req.include_usage);
        CHECK_FALSE(req.continuous_usage);
        CHECK_FALSE(req.responses.store);
        const GenerationRequest whole = decode_ok(R"({"model":"m","input":"x","stream":false})");
        CHECK_FALSE(whole.stream);
        CHECK_FALSE(whole.include_usage);
    }

    TEST_CASE("the echo: every member the response object repeats, with its defaults") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"x"})");
        std::vector<std::string> got;
        for (const auto& e : req.responses.echo) {
            got.push_back(e.key + "=" + e.json);
        }
        CHECK(got == std::vector<std::string>{
                         "instructions=null", "max_output_tokens=null", "max_tool_calls=null",
                         "metadata={}", "parallel_tool_calls=true",
                         R"(reasoning={"effort":null,"summary":null})", R"(service_tier="auto")",
                         "temperature=null", R"(text={"format":{"type":"text"}})",
                         R"(tool_choice="auto")", "tools=[]", "top_p=null",
                         R"(truncation="disabled")", "user=null"});
        const GenerationRequest set = decode_ok(
            R"({"model":"m","input":"x","metadata":{"k":"v"},"prompt_cache_key":"pk",
                "service_tier":"flex","truncation":"disabled","background":false,
                "include":["reasoning.encrypted_content"],"top_logprobs":0,"max_tool_calls":null})");
        CHECK(echo(set, "metadata") == R"({"k":"v"})");
        CHECK(echo(set, "service_tier") == R"("flex")");
        CHECK(echo(set, "prompt_cache_key") == R"("pk")");
        CHECK(echo(set, "safety_identifier") == "<absent>");
        CHECK(echo(set, "max_tool_calls") == "null");
    }
}

TEST_SUITE("responses request decode: refused members") {
    TEST_CASE("an unknown member is OpenAI's unknown_parameter") {
        check_bad({R"({"model":"m","input":"x","messages":[]})", "messages", "unknown_parameter"});
        auto r = codec().decode_request(R"({"model":"m","input":"x","frequency_penalty":1})");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message == "Unknown parameter: 'frequency_penalty'.");
        CHECK(r.error().param == "frequency_penalty");
        CHECK(r.error().code == "unknown_parameter");
    }

    TEST_CASE("members the chat bridge cannot honour") {
        const BadCase cases[] = {
            {R"({"model":"m","input":"x","background":true})", "background"},
            {R"({"model":"m","input":"x","background":"yes"})", "background"},
            {R"({"model":"m","input":"x","truncation":"auto"})", "truncation"},
            {R"({"model":"m","input":"x","max_tool_calls":3})", "max_tool_calls"},
            {R"({"model":"m","input":"x","top_logprobs":2})", "top_logprobs"},
            {R"({"model":"m","input":"x","prompt":{"id":"pmpt_1"}})", "prompt"},
            {R"({"model":"m","input":"x","conversation":"conv_1"})", "conversation"},
            {R"({"model":"m","input":"x","include":["file_search_call.results"]})", "include"},
            {R"({"model":"m","input":"x","include":["reasoning.encrypted_content",1]})", "include"},
            {R"({"model":"m","input":"x","include":"reasoning.encrypted_content"})", "include"},
            {R"({"model":"m","input":"x","metadata":["k","v"]})", "metadata"},
            {R"({"model":"m","input":"x","metadata":{"k":1}})", "metadata"},
            {R"({"model":"m","input":"x","metadata":{"k":"v","n":null}})", "metadata"},
            {R"({"model":"m","input":"x","stream":true,"stream_options":{"include_usage":true}})",
             "stream_options"},
            {R"({"model":"m","input":"x","stream_options":"on"})", "stream_options"},
        };
        for (const BadCase& c : cases) {
            check_bad(c);
        }
    }

    TEST_CASE("metadata limits: 16 keys, keys of 64 characters, values of 512") {
        std::string sixteen = R"({"model":"m","input":"x","metadata":{)";
        for (int i = 0; i < 16; ++i) {
            sixteen += (i > 0 ? "," : "") + ("\"k" + std::to_string(i) + "\":\"v\"");
        }
        const std::string seventeen = sixteen + R"(,"k16":"v"}})";
        sixteen += "}}";
        CHECK(decode_ok(sixteen).responses.echo.size() == 14);
        check_bad({seventeen, "metadata"});

        const std::string key64(64, 'k');
        const std::string value512(512, 'v');
        CHECK(echo(decode_ok(R"({"model":"m","input":"x","metadata":{")" + key64 + R"(":")" +
                             value512 + R"("}})"),
                   "metadata") == "{\"" + key64 + "\":\"" + value512 + "\"}");
        check_bad(
            {R"({"model":"m","input":"x","metadata":{")" + key64 + R"(k":"v"}})", "metadata"});
        check_bad(
            {R"({"model":"m","input":"x","metadata":{"k":")" + value512 + R"(v"}})", "metadata"});
    }
}

TEST_SUITE("responses request decode: malformed requests") {
    TEST_CASE("each 400 names the member") {
        const BadCase cases[] = {
            {R"({"input":"x"})", "model"},
            {R"({"model":5,"input":"x"})", "model"},
            {R"({"model":"m"})", "input"},
            {R"({"model":"m","input":5})", "input"},
            {R"({"model":"m","input":{"role":"user","content":"x"}})", "input"},
            {R"({"model":"m","input":[]})", "input"},
            {R"({"model":"m","input":"x","instructions":5})", "instructions"},
            {R"({"model":"m","input":"x","stream":"yes"})", "stream"},
            {R"({"model":"m","input":"x","store":"no"})", "store"},
            {R"({"model":"m","input":"x","previous_response_id":5})", "previous_response_id"},
            {R"({"model":"m","input":["x"]})", "input[0]"},
            {R"({"model":"m","input":[{"content":"x"}]})", "input[0].type"},
            {R"({"model":"m","input":[{"type":5,"role":"user","content":"x"}]})", "input[0].type"},
            {R"({"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]})", "input[0].type"},
            {R"({"model":"m","input":[{"role":"tool","content":"x"}]})", "input[0].role"},
            {R"({"model":"m","input":[{"type":"message","content":"x"}]})", "input[0].role"},
            {R"({"model":"m","input":[{"role":"user"}]})", "input[0].content"},
            {R"({"model":"m","input":[{"role":"user","content":5}]})", "input[0].content"},
            {R"({"model":"m","input":[{"role":"user","content":"a"},
                {"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]})",
             "input[1].content[0].type"},
            {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]})",
             "input[0].content[0].text"},
            {R"({"model":"m","input":[{"role":"user","content":[
                {"type":"input_image","file_id":"file_1"}]}]})",
             "input[0].content[0].image_url"},
            {R"({"model":"m","input":[{"role":"user","content":[
                {"type":"input_image","image_url":"data:image/png,iVBORw0KGgo="}]}]})",
             "input[0].content[0].image_url"},
            {R"({"model":"m","input":[{"role":"user","content":[
                {"type":"input_image","image_url":"data:image/png;base64"}]}]})",
             "input[0].content[0].image_url"},
            {R"({"model":"m","input":[{"role":"assistant","content":[
                {"type":"refusal","refusal":"no"}]}]})",
             "input[0].content[0]"},
            {R"({"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]})",
             "input[0].name"},
            {R"({"model":"m","input":[{"type":"function_call","call_id":"c","name":"",
                "arguments":"{}"}]})",
             "input[0].name"},
            {R"({"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]})",
             "input[0].call_id"},
            {R"({"model":"m","input":[{"type":"function_call","call_id":"c","name":"f",
                "arguments":{}}]})",
             "input[0].arguments"},
            {R"({"model":"m","input":[{"type":"function_call_output","output":"x"}]})",
             "input[0].call_id"},
            {R"({"model":"m","input":[{"type":"function_call_output","call_id":"c"}]})",
             "input[0].output"},
            {R"({"model":"m","input":[{"type":"function_call_output","call_id":"c","output":5}]})",
             "input[0].output"},
            {R"({"model":"m","input":[{"type":"reasoning","summary":"s"}]})", "input[0].summary"},
            {R"({"model":"m","input":[{"type":"item_reference"}]})", "input[0].id"},
            {R"({"model":"m","input":"x","tools":{}})", "tools"},
            {R"({"model":"m","input":"x","tools":[{"type":"web_search"}]})", "tools[0].type"},
            {R"({"model":"m","input":"x","tools":[{"type":"function"}]})", "tools[0].name"},
            {R"({"model":"m","input":"x","tools":[{"type":"function","name":"f","foo":1}]})",
             "tools[0].foo"},
            {R"({"model":"m","input":"x","tool_choice":"sometimes"})", "tool_choice"},
            {R"({"model":"m","input":"x","tool_choice":{"type":"allowed_tools","tools":[]}})",
             "tool_choice"},
            {R"({"model":"m","input":"x","text":"json"})", "text"},
            {R"({"model":"m","input":"x","text":{"foo":1}})", "text.foo"},
            {R"({"model":"m","input":"x","text":{"format":{"type":"xml"}}})", "text.format.type"},
            {R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{}}}})",
             "text.format.name"},
            {R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}})",
             "text.format.schema"},
            {R"({"model":"m","input":"x","reasoning":"high"})", "reasoning"},
            {R"({"model":"m","input":"x","reasoning":{"effort":1}})", "reasoning.effort"},
            {R"({"model":"m","input":"x","max_output_tokens":0})", "max_output_tokens"},
            {R"({"model":"m","input":"x","max_output_tokens":1.5})", "max_output_tokens"},
            // Settings the chat decoder checks keep their names: the Responses API has them too.
            {R"({"model":"m","input":"x","temperature":3})", "temperature"},
            {R"({"model":"m","input":"x","top_p":"high"})", "top_p"},
        };
        for (const BadCase& c : cases) {
            check_bad(c);
        }
    }

    TEST_CASE("a body that is not a JSON object") {
        auto r = codec().decode_request("[1]");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        auto bad = codec().decode_request(R"({"model":)");
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().status == 400);
    }
}

TEST_SUITE("responses request decode: conversation state") {
    TEST_CASE("previous_response_id: the stored items come after instructions, before input") {
        FakeLookup store;
        store.conversations["resp_a"] = {std::string(kUserHi), std::string(kAssistantHello)};
        const GenerationRequest req = decode_ok(
            R"({"model":"m","instructions":"sys","previous_response_id":"resp_a","input":"again"})",
            &store);
        CHECK(store.asked == std::vector<std::string>{"conversation:resp_a"});
        CHECK(roles(req) == std::vector<std::string>{"system", "user", "assistant", "user"});
        CHECK(req.messages[0].content == "sys");
        CHECK(req.messages[1].content == "Hi");
        CHECK(req.messages[2].content == "Hello");
        CHECK(req.messages[3].content == "again");
        CHECK(req.responses.previous_response_id == "resp_a");
        // Only this request's own input is recorded: the store has the rest.
        CHECK(
            req.responses.input_items ==
            std::vector<std::string>{
                R"({"type":"message","role":"user","content":[{"type":"input_text","text":"again"}]})"});
        CHECK(echo(req, "instructions") == R"("sys")");
    }

    TEST_CASE("previous_response_id: a stored call answered by this input") {
        FakeLookup store;
        store.conversations["resp_b"] = {
            std::string(kUserHi),
            R"({"id":"rs_b_0","type":"reasoning","summary":[],)"
            R"("content":[{"type":"reasoning_text","text":"needs f"}]})",
            R"({"id":"fc_b_1","type":"function_call","status":"completed","call_id":"call_7",)"
            R"("name":"f","arguments":"{}"})"};
        const GenerationRequest req = decode_ok(
            R"({"model":"m","previous_response_id":"resp_b",
                "input":[{"type":"function_call_output","call_id":"call_7","output":"42"}]})",
            &store);
        CHECK(roles(req) == std::vector<std::string>{"user", "assistant", "tool"});
        CHECK(req.messages[1].reasoning == "needs f");
        CHECK(req.messages[1].tool_calls == std::vector<ToolCall>{call("call_7", "f", "{}")});
        CHECK(req.messages[2].tool_call_id == "call_7");
        CHECK(req.messages[2].content == "42");
    }

    TEST_CASE("previous_response_id not stored: previous_response_not_found") {
        FakeLookup store;
        check_bad({R"({"model":"m","previous_response_id":"resp_gone","input":"x"})",
                   "previous_response_id", "previous_response_not_found"},
                  &store);
        CHECK(store.asked == std::vector<std::string>{"conversation:resp_gone"});
        // No store at all (responses.store.max_entries 0): the same error.
        check_bad({R"({"model":"m","previous_response_id":"resp_gone","input":"x"})",
                   "previous_response_id", "previous_response_not_found"});
        // An unreadable stored item is a 400 too, not a crash.
        store.conversations["resp_bad"] = {"{not json"};
        check_bad({R"({"model":"m","previous_response_id":"resp_bad","input":"x"})",
                   "previous_response_id"},
                  &store);
        // An empty id continues nothing.
        const GenerationRequest req =
            decode_ok(R"({"model":"m","previous_response_id":"","input":"x"})", &store);
        CHECK(req.messages.size() == 1);
    }

    TEST_CASE("item_reference: resolved through the store, recorded resolved") {
        FakeLookup store;
        store.items["msg_a_0"] = std::string(kAssistantHello);
        const GenerationRequest req = decode_ok(R"({"model":"m","input":[
            {"role":"user","content":"Hi"},
            {"type":"item_reference","id":"msg_a_0"},
            {"role":"user","content":"more"}]})",
                                                &store);
        CHECK(store.asked == std::vector<std::string>{"item:msg_a_0"});
        CHECK(roles(req) == std::vector<std::string>{"user", "assistant", "user"});
        CHECK(req.messages[1].content == "Hello");
        CHECK(
            req.responses.input_items ==
            std::vector<std::string>{
                R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]})",
                std::string(kAssistantHello),
                R"({"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]})"});
    }

    TEST_CASE("item_reference: unknown item, no store, a stored reference") {
        FakeLookup store;
        check_bad({R"({"model":"m","input":[{"type":"item_reference","id":"msg_x"}]})",
                   "input[0].id", "item_not_found"},
                  &store);
        check_bad({R"({"model":"m","input":[{"type":"item_reference","id":"msg_x"}]})",
                   "input[0].id", "item_not_found"});
        store.items["ref"] = R"({"type":"item_reference","id":"other"})";
        check_bad({R"({"model":"m","input":[{"role":"user","content":"a"},
                      {"type":"item_reference","id":"ref"}]})",
                   "input[1]"},
                  &store);
    }
}
