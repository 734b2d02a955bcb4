// translators/responses/response_encode.cpp: the response object for a whole answer (output items
// and their ids, status and incomplete_details, usage, the request's settings repeated), the turn
// the store keeps, and the error envelope.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/translators/responses/test_util.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::ToolCall;
using infergate::translators::StoredTurn;
using responses_test::at;
using responses_test::codec;
using responses_test::decode_ok;
using responses_test::FakeLookup;
using responses_test::keys;

GenerationResult result(std::string text, FinishKind finish) {
    GenerationResult r;
    r.id = "resp_abc";
    r.model = "m";
    r.created = 1700000000;
    Choice& c = r.choices.emplace_back();
    c.text = std::move(text);
    c.finish.kind = finish;
    return r;
}

std::string encode(const GenerationResult& r, const GenerationRequest& req = {}) {
    std::string out;
    codec().encode_response(r, req, out);
    return out;
}

constexpr std::string_view kRequest =
    R"({"model":"m","instructions":"sys","input":"Hi","metadata":{"k":"v"},"temperature":0.5,)"
    R"("tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"store":true})";

}  // namespace

TEST_SUITE("responses response encode") {
    TEST_CASE("reasoning, text and tool calls: the whole object, byte for byte") {
        const GenerationRequest req = decode_ok(kRequest);
        GenerationResult r = result("Hello", FinishKind::tool_calls);
        r.choices[0].reasoning = "think";
        r.choices[0].tool_calls = {ToolCall{"call_9", "f", R"({"a":1})"}, ToolCall{"", "g", "{}"}};
        r.usage.prompt_tokens = 10;
        r.usage.completion_tokens = 5;
        r.usage.cached_tokens = 4;
        r.usage.reasoning_tokens = 2;
        CHECK(
            encode(r, req) ==
            R"({"id":"resp_abc","object":"response","created_at":1700000000,)"
            R"("status":"completed","background":false,"error":null,"incomplete_details":null,)"
            R"("instructions":"sys","max_output_tokens":null,"max_tool_calls":null,)"
            R"("metadata":{"k":"v"},"parallel_tool_calls":true,)"
            R"("reasoning":{"effort":null,"summary":null},"service_tier":"auto",)"
            R"("temperature":0.5,"text":{"format":{"type":"text"}},"tool_choice":"auto",)"
            R"("tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],)"
            R"("top_p":null,"truncation":"disabled","user":null,"model":"m","output":[)"
            R"({"id":"rs_abc_0","type":"reasoning","summary":[],)"
            R"("content":[{"type":"reasoning_text","text":"think"}]},)"
            R"({"id":"msg_abc_1","type":"message","status":"completed","role":"assistant",)"
            R"("content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]},)"
            R"({"id":"fc_abc_2","type":"function_call","status":"completed","call_id":"call_9",)"
            R"("name":"f","arguments":"{\"a\":1}"},)"
            R"({"id":"fc_abc_3","type":"function_call","status":"completed",)"
            R"("call_id":"call_abc_3","name":"g","arguments":"{}"}],)"
            R"("previous_response_id":null,"store":true,)"
            R"("usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},)"
            R"("output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},)"
            R"("total_tokens":15}})");
    }

    TEST_CASE("text only, stopped: one completed message") {
        GenerationResult r = result("Hi there", FinishKind::stop);
        r.usage.prompt_tokens = 3;
        r.usage.completion_tokens = 2;
        const std::string out = encode(r);
        CHECK(at(out, "/status") == R"("completed")");
        CHECK(at(out, "/incomplete_details") == "null");
        CHECK(at(out, "/error") == "null");
        CHECK(at(out, "/output") ==
              R"([{"id":"msg_abc_0","type":"message","status":"completed","role":"assistant",)"
              R"("content":[{"type":"output_text","text":"Hi there","annotations":[],)"
              R"("logprobs":[]}]}])");
        CHECK(at(out, "/usage") ==
              R"({"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,)"
              R"("output_tokens_details":{"reasoning_tokens":0},"total_tokens":5})");
        // Without a request's echo the object still has its own members.
        CHECK(keys(out) == std::vector<std::string>{"id", "object", "created_at", "status",
                                                    "background", "error", "incomplete_details",
                                                    "model", "output", "previous_response_id",
                                                    "store", "usage"});
    }

    TEST_CASE("the token budget: incomplete, max_output_tokens, the message incomplete") {
        const std::string out = encode(result("Once upon", FinishKind::length));
        CHECK(at(out, "/status") == R"("incomplete")");
        CHECK(at(out, "/incomplete_details") == R"({"reason":"max_output_tokens"})");
        CHECK(at(out, "/output/0/status") == R"("incomplete")");
        CHECK(at(out, "/output/0/content/0/text") == R"("Once upon")");
        CHECK(at(out, "/error") == "null");
    }

    TEST_CASE("a content filter: incomplete, content_filter") {
        const std::string out = encode(result("", FinishKind::content_filter));
        CHECK(at(out, "/status") == R"("incomplete")");
        CHECK(at(out, "/incomplete_details") == R"({"reason":"content_filter"})");
        CHECK(at(out, "/output/0/status") == R"("incomplete")");
    }

    TEST_CASE("an abort: failed, with the error") {
        GenerationResult r = result("par", FinishKind::abort);
        r.choices[0].finish.message = "engine out of memory";
        std::string out = encode(r);
        CHECK(at(out, "/status") == R"("failed")");
        CHECK(at(out, "/error") == R"({"code":"server_error","message":"engine out of memory"})");
        CHECK(at(out, "/incomplete_details") == "null");

        out = encode(result("", FinishKind::abort));
        CHECK(at(out, "/error") ==
              R"({"code":"server_error","message":"the backend aborted the generation"})");
    }

    TEST_CASE("tool calls without text have no message item") {
        GenerationResult r = result("", FinishKind::tool_calls);
        r.choices[0].tool_calls = {ToolCall{"call_1", "get_weather", R"({"city":"Paris"})"}};
        const std::string out = encode(r);
        CHECK(at(out, "/output") ==
              R"([{"id":"fc_abc_0","type":"function_call","status":"completed",)"
              R"("call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}])");
        CHECK(at(out, "/status") == R"("completed")");
    }

    TEST_CASE("reasoning alone, cut by the budget: the reasoning item is the whole output") {
        GenerationResult r = result("", FinishKind::length);
        r.choices[0].reasoning = "Hmm";
        const std::string out = encode(r);
        CHECK(at(out, "/status") == R"("incomplete")");
        CHECK(at(out, "/output") == R"([{"id":"rs_abc_0","type":"reasoning","summary":[],)"
                                    R"("content":[{"type":"reasoning_text","text":"Hmm"}]}])");
    }

    TEST_CASE("no choice at all: one empty message; ids from an id without resp_") {
        GenerationResult r;
        r.id = "chatcmpl-7";
        r.model = "m";
        const std::string out = encode(r);
        CHECK(at(out, "/id") == R"("chatcmpl-7")");
        CHECK(at(out, "/status") == R"("completed")");
        CHECK(at(out, "/output/0/id") == R"("msg_chatcmpl-7_0")");
        CHECK(at(out, "/output/0/content/0/text") == R"("")");
        CHECK(at(out, "/output/1") == "<absent>");
        CHECK(at(out, "/usage/total_tokens") == "0");
    }

    TEST_CASE("the request's state: previous_response_id, store false, settings set") {
        FakeLookup store;
        store.conversations["resp_prev"] = {};
        const GenerationRequest req = decode_ok(
            R"({"model":"m","input":"x","previous_response_id":"resp_prev","store":false,
                "max_output_tokens":64,"top_p":0.5,"user":"u","tool_choice":"none",
                "parallel_tool_calls":false,"reasoning":{"effort":"low"},
                "text":{"format":{"type":"json_object"}},"safety_identifier":"s1"})",
            &store);
        const std::string out = encode(result("{}", FinishKind::stop), req);
        CHECK(at(out, "/previous_response_id") == R"("resp_prev")");
        CHECK(at(out, "/store") == "false");
        CHECK(at(out, "/max_output_tokens") == "64");
        CHECK(at(out, "/top_p") == "0.5");
        CHECK(at(out, "/user") == R"("u")");
        CHECK(at(out, "/tool_choice") == R"("none")");
        CHECK(at(out, "/parallel_tool_calls") == "false");
        CHECK(at(out, "/reasoning") == R"({"effort":"low"})");
        CHECK(at(out, "/text") == R"({"format":{"type":"json_object"}})");
        CHECK(at(out, "/safety_identifier") == R"("s1")");
        CHECK(at(out, "/prompt_cache_key") == "<absent>");
        CHECK(at(out, "/instructions") == "null");
    }
}

TEST_SUITE("responses stored turn") {
    TEST_CASE("input items, then output items from output_from, then the object") {
        FakeLookup store;
        store.conversations["resp_prev"] = {};
        const GenerationRequest req = decode_ok(
            R"({"model":"m","previous_response_id":"resp_prev","input":[
                {"id":"msg_in","type":"message","role":"user","content":"Hi"},
                {"role":"user","content":"more"}]})",
            &store);
        GenerationResult r = result("Hello", FinishKind::tool_calls);
        r.choices[0].reasoning = "hmm";
        r.choices[0].tool_calls = {ToolCall{"call_1", "f", "{}"}};
        const std::optional<StoredTurn> turn = codec().stored_turn(req, r);
        REQUIRE(turn);
        CHECK(turn->id == "resp_abc");
        CHECK(turn->previous_id == "resp_prev");
        CHECK(turn->output_from == 2);
        REQUIRE(turn->items.size() == 5);
        CHECK(
            turn->items[0] ==
            std::pair<std::string, std::string>{
                "msg_in",
                R"({"type":"message","id":"msg_in","role":"user","content":[{"type":"input_text","text":"Hi"}]})"});
        CHECK(
            turn->items[1] ==
            std::pair<std::string, std::string>{
                "",
                R"({"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]})"});
        CHECK(turn->items[2].first == "rs_abc_0");
        CHECK(turn->items[3].first == "msg_abc_1");
        CHECK(turn->items[4].first == "fc_abc_2");
        // The object GET /v1/responses/{id} answers is the one the client got, and its output
        // items are the stored ones.
        CHECK(turn->response == encode(r, req));
        for (size_t i = 0; i < 3; ++i) {
            const std::string pointer = "/output/" + std::to_string(i);
            CHECK(at(turn->response, pointer.c_str()) == turn->items[2 + i].second);
        }
    }

    TEST_CASE("a string input is stored as a message item; an incomplete message as such") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"Hi"})");
        const std::optional<StoredTurn> turn =
            codec().stored_turn(req, result("Hel", FinishKind::length));
        REQUIRE(turn);
        CHECK(turn->previous_id.empty());
        CHECK(turn->output_from == 1);
        REQUIRE(turn->items.size() == 2);
        CHECK(turn->items[0].first.empty());
        CHECK(turn->items[0].second ==
              R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]})");
        CHECK(turn->items[1].first == "msg_abc_0");
        CHECK(at(turn->items[1].second, "/status") == R"("incomplete")");
    }

    TEST_CASE("store false keeps nothing") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"Hi","store":false})");
        CHECK_FALSE(codec().stored_turn(req, result("Hello", FinishKind::stop)).has_value());
    }
}

TEST_SUITE("responses errors") {
    TEST_CASE("the error envelope is OpenAI's") {
        Error e;
        e.status = 400;
        e.message = "Unknown parameter: 'foo'.";
        e.param = "foo";
        e.code = "unknown_parameter";
        std::string out;
        codec().encode_error(e, out);
        CHECK(out ==
              R"({"error":{"message":"Unknown parameter: 'foo'.",)"
              R"("type":"invalid_request_error","param":"foo","code":"unknown_parameter"}})");

        Error plain;
        plain.status = 502;
        plain.type = "upstream_error";
        plain.message = "backend down";
        out.clear();
        codec().encode_error(plain, out);
        CHECK(out == R"({"error":{"message":"backend down","type":"upstream_error",)"
                     R"("param":null,"code":null}})");
    }

    TEST_CASE("no backend speaks the Responses API") {
        const GenerationRequest req = decode_ok(R"({"model":"m","input":"Hi"})");
        auto encoded = codec().encode_request(req, {});
        REQUIRE_FALSE(encoded.ok());
        CHECK(encoded.error().status == 500);
        auto decoded = codec().decode_response("{}", req);
        REQUIRE_FALSE(decoded.ok());
        CHECK(decoded.error().status == 500);
    }
}
