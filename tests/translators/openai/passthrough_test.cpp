#include "translators/openai/passthrough.hpp"

#include <doctest/doctest.h>

#include <iterator>
#include <string>
#include <vector>

#include "tests/support/fixtures.hpp"
#include "tests/support/json_variants.hpp"
#include "tests/support/passthrough_oracle.hpp"
#include "translators/framing/framing.hpp"

namespace openai = infergate::translators::openai;
namespace testing = infergate::testing;
using testing::canonical;
using testing::dom_edit_request;
using testing::dom_edit_response;
using testing::Style;

namespace {

std::string edited(std::string_view text, const openai::ResponseEdits& e) {
    std::string out;
    REQUIRE(openai::edit_response(text, e, out));
    return out;
}

std::string edited_request(std::string_view text, const openai::RequestEdits& e) {
    std::string out;
    REQUIRE(openai::edit_request(text, e, out));
    return out;
}

// Every JSON object among the golden samples: whole bodies, SSE data payloads, NDJSON records.
std::vector<std::pair<std::string, std::string>> golden_objects() {
    std::vector<std::pair<std::string, std::string>> out;
    auto keep = [&](const std::string& where, const std::string& text) {
        rapidjson::Document doc;
        doc.Parse(text.data(), text.size());
        if (!doc.HasParseError() && doc.IsObject()) {
            out.emplace_back(where, text);
        }
    };
    for (const auto& f : testing::fixture_files(".json")) {
        keep(f, testing::read_fixture(f));
    }
    for (const auto& f : testing::fixture_files(".sse")) {
        infergate::framing::SseScanner scanner;
        std::vector<infergate::framing::SseEvent> events;
        scanner.feed(testing::read_fixture(f), events);
        scanner.finish(events);
        for (size_t i = 0; i < events.size(); ++i) {
            keep(f + " event " + std::to_string(i), events[i].data);
        }
    }
    for (const auto& f : testing::fixture_files(".ndjson")) {
        infergate::framing::RecordScanner scanner;
        std::vector<std::string> records;
        scanner.feed(testing::read_fixture(f), records);
        scanner.finish(records);
        for (size_t i = 0; i < records.size(); ++i) {
            keep(f + " record " + std::to_string(i), records[i]);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("passthrough: a spaced chunk keeps valid JSON when its usage is taken out") {
    // The chunk of issue 10: Python's json.dumps default separators.
    const std::string chunk =
        R"({"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m", )"
        R"("choices": [{"index": 0, "text": " w0", "finish_reason": null}], )"
        R"("usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}})";
    openai::ResponseEdits e;
    e.strip_usage = true;
    const std::string out = edited(chunk, e);
    CHECK(out == R"({"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m", )"
                 R"("choices": [{"index": 0, "text": " w0", "finish_reason": null}]})");
    // usage first, in the middle, alone.
    CHECK(edited(R"({ "usage" : {"a": [1, {"b": "}"}]} , "x": 1 })", e) == R"({ "x": 1 })");
    CHECK(edited(R"({"a": 1, "usage": null, "b": 2})", e) == R"({"a": 1, "b": 2})");
    CHECK(edited(R"({"usage": {}})", e) == "{}");
    CHECK(edited("{ }", e) == "{ }");
}

TEST_CASE("passthrough: the model and id are found by key, not by byte pattern") {
    openai::ResponseEdits e;
    e.model = "alias";
    e.id = "chatcmpl-new";
    // Spaces, escapes in the value and in the key, id after choices with a tool call id inside.
    const std::string chunk =
        R"({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": )"
        R"([{"index": 0, "id": "call_1", "function": {"name": "f"}}]}}], "mod\u0065l" : "gpt\/4o\u00e9", )"
        R"("id" :"chatcmpl-old"})";
    const std::string out = edited(chunk, e);
    CHECK(
        out ==
        R"({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": )"
        R"([{"index": 0, "id": "call_1", "function": {"name": "f"}}]}}], "mod\u0065l" : "alias", )"
        R"("id" :"chatcmpl-new"})");
    CHECK(canonical(out) == dom_edit_response(chunk, e));
    // A "model" inside a string or a nested object is not the member.
    const std::string nested =
        R"({"choices":[{"text":"\"model\":\"x\"","model":"x"}],"model":"x"})";
    CHECK(edited(nested, e) ==
          R"({"choices":[{"text":"\"model\":\"x\"","model":"x"}],"model":"alias"})");
    // A model name with a quote and a backslash is written escaped.
    openai::ResponseEdits q;
    q.model = "a\"b\\c";
    CHECK(edited(R"({"model":"x"})", q) == R"({"model":"a\"b\\c"})");
    // A non-string model (null) is left alone.
    CHECK(edited(R"({"model":null})", e) == R"({"model":null})");
}

TEST_CASE("passthrough: duplicate keys read as the last one wins") {
    openai::ResponseEdits e;
    e.model = "alias";
    e.strip_usage = true;
    for (const std::string text :
         {R"({"model":"a","usage":{},"model":1,"usage":{"x":1}})",
          R"({"model":1,"model":"b","usage":3})", R"({"usage":1,"usage":2})"}) {
        CAPTURE(text);
        CHECK(canonical(edited(text, e)) == dom_edit_response(text, e));
    }
}

TEST_CASE("passthrough: a payload over several lines goes out on one") {
    openai::ResponseEdits e;
    e.one_line = true;
    const std::string pretty = "{\r\n  \"id\": \"x\",\n  \"choices\": [\r\n]\r}";
    const std::string out = edited(pretty, e);
    CHECK(out.find_first_of("\r\n") == std::string::npos);
    CHECK(canonical(out) == canonical(pretty));
}

TEST_CASE("passthrough: anything but one valid object is refused, untouched") {
    openai::ResponseEdits e;
    e.strip_usage = true;
    for (const std::string bad :
         {"[DONE]", "", "[]", "\"s\"", "{", R"({"a":1,})", R"({"a" 1})", R"({"a":01})",
          R"({"a":"\x"})", R"({"a":"\ud800"})", "{\"a\":\"\x01\"}", R"({} {})", R"({"a":tru})",
          R"({"a":1.})", R"({"a":-})", R"({"a":1e})", R"({'a':1})"}) {
        CAPTURE(bad);
        std::string out = "kept";
        CHECK_FALSE(openai::edit_response(bad, e, out));
        CHECK(out == "kept");
    }
    // What RapidJSON accepts, so is this: a lone low surrogate, escapes of every kind, numbers.
    std::string out;
    CHECK(openai::edit_response(
        R"({"a":"\udc00\ud83d\ude00\b\f\n\r\t\/\\\"","n":[-0,1e+5,2.5E-3,-1.0]})", e, out));
}

TEST_CASE("passthrough: requests get the model and stream_options, however they were written") {
    openai::RequestEdits e;
    e.model = "backend/model";
    e.include_usage = true;
    e.continuous_usage = true;
    const std::vector<std::string> bodies = {
        R"({"model": "alias", "prompt": "hi", "stream": true})",
        R"({"prompt":"hi"})",
        R"({"stream_options": null, "model":"a"})",
        R"({"stream_options": {"include_usage": false}, "model":"a"})",
        R"({"stream_options": { }, "model":"a"})",
        R"({"stream_options": {"include_usage": false, "include_usage": 0}, "stream_options": )"
        R"({"continuous_usage_stats": false, "x": [1]}})",
        R"({"stream_opti\u006fns": "yes"})",
        "{}",
        "\n{ \"model\" : \"a\" , \"messages\" : [ ] }\n",
    };
    for (const auto& body : bodies) {
        CAPTURE(body);
        CHECK(canonical(edited_request(body, e)) == dom_edit_request(body, e));
    }
    // Untouched bytes stay as they were: only the model value and a new member differ.
    CHECK(edited_request(R"({"model": "alias",  "prompt": "a  b"})", e) ==
          R"({"model": "backend/model",  "prompt": "a  b","stream_options":)"
          R"({"include_usage":true,"continuous_usage_stats":true}})");
    openai::RequestEdits only_usage;
    only_usage.include_usage = true;
    CHECK(edited_request(R"({"stream_options":{"x":1}})", only_usage) ==
          R"({"stream_options":{"x":1,"include_usage":true}})");
}

namespace {

// The edits the fast path makes for a llama.cpp backend (translators/passthrough.cpp,
// passthrough_request).
openai::RequestEdits llamacpp_edits() {
    openai::RequestEdits e;
    REQUIRE(openai::name_edits(infergate::translators::Flavor::llamacpp, false, e));
    return e;
}

}  // namespace

TEST_CASE("passthrough: the budget reaches llama.cpp as max_tokens, bytes kept") {
    const openai::RequestEdits e = llamacpp_edits();
    // llama-server before 2026 reads only max_tokens / n_predict: the client's
    // max_completion_tokens is renamed, everything else keeps its bytes.
    CHECK(edited_request(R"({"model": "m", "max_completion_tokens" : 16, "stream": true})", e) ==
          R"({"model": "m", "max_tokens" : 16, "stream": true})");
    // The client's max_completion_tokens counts (OpenAI: it replaces max_tokens), so a
    // max_tokens next to it goes, wherever it is.
    CHECK(edited_request(R"({"max_tokens":100,"max_completion_tokens":16,"x":1})", e) ==
          R"({"max_tokens":16,"x":1})");
    CHECK(edited_request(R"({"max_completion_tokens":16, "max_tokens":100})", e) ==
          R"({"max_tokens":16})");
    // null is "not set" to OpenAI: max_tokens stays what counts, nothing is renamed.
    CHECK(edited_request(R"({"max_completion_tokens":null,"max_tokens":100})", e) ==
          R"({"max_completion_tokens":null,"max_tokens":100})");
    // An escaped key is the same key; the last duplicate decides (here: not null).
    CHECK(edited_request(R"({"max_completion_tok\u0065ns":null,"max_completion_tokens":5})", e) ==
          R"({"max_tokens":null,"max_tokens":5})");
    CHECK(edited_request(R"({"repetition_penalty":1.1})", e) == R"({"repeat_penalty":1.1})");
    const std::vector<std::string> bodies = {
        R"({"max_completion_tokens":16})",
        R"({"max_tokens":3,"max_completion_tokens":16,"max_tokens":4})",
        R"({"max_completion_tokens":null})",
        R"({"max_completion_tokens":1,"max_completion_tokens":null,"max_tokens":2})",
        R"({"repetition_penalty":1.2,"repeat_penalty":1.5,"model":"a"})",
        "{ }",
    };
    for (const auto& body : bodies) {
        CAPTURE(body);
        CHECK(canonical(edited_request(body, e)) == dom_edit_request(body, e));
    }
}

TEST_CASE("passthrough: logit_bias reaches llama.cpp in its [[id, bias]] form") {
    const openai::RequestEdits e = llamacpp_edits();
    // The numbers keep their bytes; the ids are written as integers.
    CHECK(edited_request(R"({"logit_bias": {"32000": 7, "13" :-1e2}, "n": 1})", e) ==
          R"({"logit_bias": [[32000,7],[13,-1e2]], "n": 1})");
    CHECK(edited_request(R"({"logit_bias":{}})", e) == R"({"logit_bias":[]})");
    // As Python reads it: a repeated key keeps its first place and its last value, and so do
    // two spellings of one id.
    CHECK(edited_request(R"({"logit_bias":{"5":1,"6":2,"5":3,"005":4}})", e) ==
          R"({"logit_bias":[[5,4],[6,2]]})");
    CHECK(edited_request(R"({"logit_bias":{"\u0035":1}})", e) == R"({"logit_bias":[[5,1]]})");
    // Not an object of ids and numbers (already llama.cpp's form, null, a word): left alone.
    for (const std::string body :
         {R"({"logit_bias":[[5,1]]})", R"({"logit_bias":null})", R"({"logit_bias":{"a":1}})",
          R"({"logit_bias":{"5":"1"}})", R"({"logit_bias":{"-5":1}})",
          R"({"logit_bias":{"5":[1]}})", R"({"logit_bias":{"99999999999":1}})"}) {
        CAPTURE(body);
        CHECK(edited_request(body, e) == body);
        CHECK(canonical(edited_request(body, e)) == dom_edit_request(body, e));
    }
    for (const std::string body :
         {R"({"logit_bias":{"5":1},"logit_bias":{"6":2}})", R"({"logit_bias":{"5":"x","5":2}})",
          R"({"logit_bias":{"7":1,"007":"x"}})", R"({"logit_bias":{"1":1},"logit_bias":null})"}) {
        CAPTURE(body);
        CHECK(canonical(edited_request(body, e)) == dom_edit_request(body, e));
    }
}

TEST_CASE("passthrough: a response_format schema reaches llama.cpp as json_schema too") {
    // llama-server c392e509 loses response_format's schema (a shadowed variable); its chat
    // route reads a top-level json_schema on every version. The schema's bytes are copied.
    const openai::RequestEdits e = llamacpp_edits();
    CHECK(
        edited_request(
            R"({"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type": "object"}}}})",
            e) ==
        R"({"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type": "object"}}},"json_schema":{"type": "object"}})");
    // Spaces, CRLF, another key order, escapes in keys and values, repeated keys (the last
    // counts, as Python's json reads it).
    for (
        const std::string body :
        {"{ \"response_format\" : {\r\n \"json_schema\" : { \"schema\" : {\"a\":1} , "
         "\"name\":\"n\"},\r\n \"type\" : \"json_schema\" } }",
         R"({"response_format":{"t\u0079pe":"json\u005fschema","json_schema":{"schema":[1,{"x":"\""}]}}})",
         R"({"response_format":{"type":"text","json_schema":{"schema":{}},"type":"json_schema"}})",
         R"({"response_format":{"type":"json_schema","json_schema":{"schema":{"a":1},"schema":{"b":2}}}})",
         R"({"response_format":{"type":"json_schema"},"response_format":{"type":"json_schema","json_schema":{"schema":true}}})"}) {
        CAPTURE(body);
        const std::string out = edited_request(body, e);
        CHECK(out != body);
        CHECK(canonical(out) == dom_edit_request(body, e));
    }
    // Nothing to add: another type, no schema, a null one, the type repeated last as another,
    // or a json_schema the client already sent (llama.cpp reads that one).
    for (
        const std::string body :
        {R"({"response_format":{"type":"json_object"}})",
         R"({"response_format":{"type":"json_schema","json_schema":{"name":"n"}}})",
         R"({"response_format":{"type":"json_schema","json_schema":{"schema":null}}})",
         R"({"response_format":{"type":"json_schema","json_schema":{"schema":{}},"type":"text"}})",
         R"({"response_format":{"type":"json_schema","json_schema":"x"}})",
         R"({"response_format":null})",
         R"({"json_schema":{"b":1},"response_format":{"type":"json_schema","json_schema":{"schema":{}}}})"}) {
        CAPTURE(body);
        CHECK(edited_request(body, e) == body);
        CHECK(canonical(edited_request(body, e)) == dom_edit_request(body, e));
    }
}

TEST_CASE("passthrough: which names each backend's OpenAI layer needs") {
    using infergate::translators::Flavor;
    openai::RequestEdits e;
    for (const Flavor f : {Flavor::generic, Flavor::vllm, Flavor::openai, Flavor::tgi}) {
        CHECK_FALSE(openai::name_edits(f, true, e));
    }
    CHECK_FALSE(openai::name_edits(Flavor::sglang, false, e));
    REQUIRE(openai::name_edits(Flavor::sglang, true, e));
    CHECK(edited_request(R"({"include_stop_str_in_output": true, "stop": ["x"]})", e) ==
          R"({"no_stop_trim": true, "stop": ["x"]})");
    e = {};
    REQUIRE(openai::name_edits(Flavor::llamacpp, false, e));
    CHECK(edited_request(
              R"({"max_completion_tokens":8,"repetition_penalty":1.5,"logit_bias":{"2":-100}})",
              e) == R"({"max_tokens":8,"repeat_penalty":1.5,"logit_bias":[[2,-100]]})");
}

TEST_CASE("passthrough: every golden sample, in every style, edits as its document would") {
    const auto samples = golden_objects();
    REQUIRE(samples.size() > 40);
    std::vector<openai::ResponseEdits> response_edits(4);
    response_edits[0].strip_usage = true;
    response_edits[1].model = "alias \"q\" \\ é";
    response_edits[2].id = "cmpl-fixed";
    response_edits[3] = {"alias", "id-2", true, true};
    openai::RequestEdits request_edit;
    request_edit.model = "m/x";
    request_edit.include_usage = true;
    request_edit.continuous_usage = true;
    openai::RequestEdits llamacpp_edit = llamacpp_edits();
    llamacpp_edit.model = "m/x";
    size_t checked = 0;
    for (const auto& [where, text] : samples) {
        rapidjson::Document doc;
        doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.data(), text.size());
        for (const Style style : testing::kAllStyles) {
            const std::string variant =
                testing::write_variant(doc, style, static_cast<uint32_t>(checked));
            CAPTURE(where);
            CAPTURE(testing::style_name(style));
            CAPTURE(variant);
            REQUIRE(canonical(variant) == canonical(text));
            for (const auto& e : response_edits) {
                const std::string out = edited(variant, e);
                CHECK(canonical(out) == dom_edit_response(variant, e));
                openai::ResponseEdits trusted = e;
                trusted.trusted = true;
                CHECK(edited(variant, trusted) == out);
                if (e.one_line) {
                    CHECK(out.find_first_of("\r\n") == std::string::npos);
                }
            }
            CHECK(canonical(edited_request(variant, request_edit)) ==
                  dom_edit_request(variant, request_edit));
            CHECK(canonical(edited_request(variant, llamacpp_edit)) ==
                  dom_edit_request(variant, llamacpp_edit));
            ++checked;
        }
    }
    MESSAGE(checked << " sample variants checked");
}
