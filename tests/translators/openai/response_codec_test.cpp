// OpenAI non-streaming responses: encoding for clients, decoding from backends, error bodies.

#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "translators/openai/codec.hpp"
#include "translators/openai/response_scan.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using infergate::translators::Codec;
namespace openai = infergate::translators::openai;

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

GenerationResult decode_ok(const Codec& codec, std::string_view body,
                           const GenerationRequest& req = {}) {
    auto r = codec.decode_response(body, req);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

std::string encode(const Codec& codec, const GenerationResult& result,
                   const GenerationRequest& req = {}) {
    std::string out;
    codec.encode_response(result, req, out);
    return out;
}

Choice choice(int index, std::string text, FinishKind kind) {
    Choice c;
    c.index = index;
    c.text = std::move(text);
    c.finish.kind = kind;
    return c;
}

// The fields an OpenAI client reads, compared between our output and a sample.
void check_same_client_view(std::string_view ours, std::string_view sample, bool chat_api) {
    rapidjson::Document a;
    rapidjson::Document b;
    a.Parse(ours.data(), ours.size());
    b.Parse(sample.data(), sample.size());
    REQUIRE_FALSE(a.HasParseError());
    REQUIRE_FALSE(b.HasParseError());
    for (const char* key : {"id", "object", "created", "model"}) {
        CHECK(a[key] == b[key]);
    }
    REQUIRE(a["choices"].Size() == b["choices"].Size());
    for (rapidjson::SizeType i = 0; i < a["choices"].Size(); ++i) {
        const auto& ca = a["choices"][i];
        const auto& cb = b["choices"][i];
        CHECK(ca["index"] == cb["index"]);
        CHECK(ca["finish_reason"] == cb["finish_reason"]);
        CHECK(ca["logprobs"] == cb["logprobs"]);
        if (chat_api) {
            CHECK(ca["message"]["role"] == cb["message"]["role"]);
            CHECK(ca["message"]["content"] == cb["message"]["content"]);
        } else {
            CHECK(ca["text"] == cb["text"]);
        }
    }
    for (const char* key : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
        CHECK(a["usage"][key] == b["usage"][key]);
    }
}

}  // namespace

TEST_SUITE("openai response decode (upstream)") {
    TEST_CASE("the spec's chat example (§2.4)") {
        const auto r = decode_ok(chat(), fixture("chat_response.json"));
        CHECK(r.id == "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG");
        CHECK(r.model == "gpt-4o-2024-08-06");
        CHECK(r.created == 1741570283);
        REQUIRE(r.choices.size() == 1);
        CHECK(r.choices[0].text == "The image shows ...");
        CHECK(r.choices[0].finish.kind == FinishKind::stop);
        CHECK(r.usage.prompt_tokens == 1117);
        CHECK(r.usage.completion_tokens == 46);
        CHECK(r.usage.cached_tokens == 0);
        CHECK(r.choices[0].usage == r.usage);  // one choice: it gets the aggregate too
    }

    TEST_CASE("the spec's completions example (§2.4); the length finish carries the budget") {
        GenerationRequest req;
        req.dialect = Dialect::openai_completions;  // no max_tokens: the implied 16
        const auto r = decode_ok(completions(), fixture("completions_response.json"), req);
        REQUIRE(r.choices.size() == 1);
        CHECK(r.choices[0].text == "\n\nThis is indeed a test");
        CHECK(r.choices[0].finish.kind == FinishKind::length);
        CHECK(r.choices[0].finish.length == 16);
        CHECK(r.usage.prompt_tokens == 5);
        CHECK(r.usage.completion_tokens == 7);
        CHECK_FALSE(r.usage.cached_tokens);
    }

    TEST_CASE("vLLM's response (§3.1) with stop_reason null, string and int") {
        std::string body = fixture("vllm_completions_response.json");
        auto r = decode_ok(completions(), body);
        REQUIRE(r.choices.size() == 1);
        CHECK(r.choices[0].text == " Paris.");
        CHECK(r.choices[0].finish.kind == FinishKind::stop);
        CHECK_FALSE(r.choices[0].finish.matched_text);
        CHECK_FALSE(r.choices[0].finish.matched_token);
        CHECK(r.usage.prompt_tokens == 6);
        CHECK(r.usage.completion_tokens == 3);
        CHECK_FALSE(r.usage.cached_tokens);  // prompt_tokens_details: null

        const auto at = body.find(R"("stop_reason": null)");
        REQUIRE(at != std::string::npos);
        r = decode_ok(completions(), std::string(body).replace(at, 19, R"("stop_reason": "\n")"));
        CHECK(r.choices[0].finish.matched_text == "\n");
        r = decode_ok(completions(), std::string(body).replace(at, 19, R"("stop_reason": 128009)"));
        CHECK(r.choices[0].finish.matched_token == 128009);
    }

    TEST_CASE("SGLang's matched_stop, cached tokens, abort") {
        const auto r = decode_ok(chat(), R"({"id":"x","object":"chat.completion","created":1,
            "model":"m","choices":[
              {"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop",
               "matched_stop":"END"},
              {"index":1,"message":{"role":"assistant","content":null},"finish_reason":"abort"},
              {"index":2,"message":{"role":"assistant","content":"c"},"finish_reason":"stop",
               "matched_stop":2}],
            "usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,
                     "prompt_tokens_details":{"cached_tokens":2}}})");
        REQUIRE(r.choices.size() == 3);
        CHECK(r.choices[0].finish.matched_text == "END");
        CHECK(r.choices[1].text.empty());
        CHECK(r.choices[1].finish.kind == FinishKind::abort);
        CHECK(r.choices[2].finish.matched_token == 2);
        CHECK(r.usage.cached_tokens == 2);
        CHECK(r.choices[0].usage == infergate::canonical::Usage{});  // three choices: no sharing
    }

    TEST_CASE("choices are sorted by index (TGI answers in completion order)") {
        const auto r = decode_ok(completions(), R"({"choices":[
            {"index":2,"text":"c","finish_reason":"eos_token"},
            {"index":0,"text":"a","finish_reason":"stop_sequence"},
            {"index":1,"text":"b","finish_reason":"length"}]})");
        REQUIRE(r.choices.size() == 3);
        CHECK(r.choices[0].text == "a");
        CHECK(r.choices[1].text == "b");
        CHECK(r.choices[2].text == "c");
        CHECK(r.choices[0].finish.kind == FinishKind::stop);
        CHECK(r.choices[2].finish.kind == FinishKind::stop);
        CHECK(r.choices[1].finish.kind == FinishKind::length);
    }

    TEST_CASE("every finish value maps") {
        const std::pair<std::string_view, FinishKind> table[] = {
            {R"("stop")", FinishKind::stop},
            {R"("eos_token")", FinishKind::stop},
            {R"("stop_sequence")", FinishKind::stop},
            {R"("eos")", FinishKind::stop},
            {R"("word")", FinishKind::stop},
            {R"("length")", FinishKind::length},
            {R"("limit")", FinishKind::length},
            {R"("tool_calls")", FinishKind::tool_calls},
            {R"("function_call")", FinishKind::tool_calls},
            {R"("content_filter")", FinishKind::content_filter},
            {R"("abort")", FinishKind::abort},
            {R"("none")", FinishKind::none},
            {R"("")", FinishKind::none},
            {"null", FinishKind::none},
        };
        for (const auto& [value, kind] : table) {
            INFO(value);
            const auto r = decode_ok(completions(), R"({"choices":[{"text":"x","finish_reason":)" +
                                                        std::string(value) + "}]}");
            CHECK(r.choices[0].finish.kind == kind);
        }
    }

    TEST_CASE("malformed backend bodies are 502s") {
        for (std::string_view body :
             {"", "not json", "[]", R"({"id":"x"})", R"({"choices":{}})", R"({"choices":[1]})"}) {
            INFO(body);
            auto r = completions().decode_response(body, {});
            REQUIRE_FALSE(r.ok());
            CHECK(r.error().status == 502);
            CHECK(r.error().type == "upstream_error");
            CHECK_FALSE(r.error().message.empty());
        }
        auto r = completions().decode_response("{oops", {});
        CHECK(r.error().message.rfind("the backend sent a malformed response: ", 0) == 0);
    }

    TEST_CASE("an error envelope in a 2xx body keeps its status and message") {
        auto r = chat().decode_response(
            R"({"error":{"message":"too long","type":"BadRequestError","param":null,"code":400}})",
            {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().message == "too long");
    }
}

TEST_SUITE("openai fast-path response check") {
    // check_response must agree with decode_response: the same usage for every body it
    // accepts, the same error for every body it refuses.
    void check_agrees(const Codec& codec, std::string_view body) {
        INFO(body);
        const auto full = codec.decode_response(body, {});
        const auto fast = codec.check_response(body, {});
        REQUIRE(fast.ok() == full.ok());
        if (full.ok()) {
            CHECK(fast.value().usage == full.value().usage);
            CHECK(fast.value().finish == infergate::canonical::answer_finish(full.value()));
        } else {
            CHECK(fast.error().status == full.error().status);
            CHECK(fast.error().message == full.error().message);
        }
    }

    TEST_CASE("the captured responses: same usage as the full decode, read by the scan") {
        for (const char* name : {"completions_response.json", "vllm_completions_response.json",
                                 "chat_response.json"}) {
            INFO(name);
            // The fast scan judges these itself (no fall-back to the full decode).
            CHECK(openai::scan_response_usage(fixture(name)).has_value());
        }
        check_agrees(completions(), fixture("completions_response.json"));
        check_agrees(completions(), fixture("vllm_completions_response.json"));
        check_agrees(chat(), fixture("chat_response.json"));
        const auto u = completions().check_response(fixture("completions_response.json"), {});
        REQUIRE(u.ok());
        CHECK(u.value().usage.prompt_tokens == 5);
        CHECK(u.value().usage.completion_tokens == 7);
    }

    TEST_CASE("reasoning tokens: OpenAI's completion_tokens_details, else SGLang's usage member") {
        auto both = [](std::string_view usage) {
            const std::string body =
                R"({"id":"x","object":"chat.completion","created":1,"model":"m","choices":[)"
                R"({"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}],)"
                R"("usage":)" +
                std::string(usage) + "}";
            check_agrees(chat(), body);
            REQUIRE(openai::scan_response_usage(body).has_value());
            return chat().decode_response(body, {}).value().usage.reasoning_tokens;
        };
        CHECK(both(R"({"prompt_tokens":3,"completion_tokens":9,"total_tokens":12,)"
                   R"("completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":0}})") == 5);
        CHECK(both(R"({"prompt_tokens":3,"completion_tokens":9,"reasoning_tokens":4})") == 4);
        CHECK(both(R"({"reasoning_tokens":4, "completion_tokens_details" : )"
                   R"({ "reasoning_tokens" : 6 }, "completion_tokens":9})") == 6);
        CHECK(both(R"({"completion_tokens":9,"completion_tokens_details":null,)"
                   R"("reasoning_tokens":2})") == 2);
        CHECK_FALSE(both(R"({"completion_tokens":9,"completion_tokens_details":{}})"));
        CHECK_FALSE(both(R"({"completion_tokens":9,"reasoning_tokens":"7"})"));
    }

    TEST_CASE("the finish, read by the scan as the full decode reads it, tool_calls first") {
        using infergate::canonical::FinishKind;
        auto finish = [](std::string_view body) {
            FinishKind f = FinishKind::abort;  // (overwritten when the scan judges the body)
            REQUIRE(openai::scan_response_usage(body, &f).has_value());
            return f;
        };
        CHECK(finish(R"({"choices":[{"index":0,"finish_reason":"stop"}]})") == FinishKind::stop);
        CHECK(finish("{\"choices\": [{\"finish_reason\" :\r\n \"length\", \"index\": 0}]}") ==
              FinishKind::length);
        // n > 1: a tool call in any choice names the answer.
        CHECK(finish(R"({"choices":[{"finish_reason":"stop"},{"finish_reason":"tool_calls"}]})") ==
              FinishKind::tool_calls);
        CHECK(finish(R"({"choices":[{"finish_reason":"function_call"}]})") ==
              FinishKind::tool_calls);
        // null (not finished), absent, elsewhere, or only quoted in the text: none.
        CHECK(finish(R"({"choices":[{"finish_reason":null}]})") == FinishKind::none);
        CHECK(finish(R"({"choices":[]})") == FinishKind::none);
        CHECK(finish(R"({"choices":[{"message":{"finish_reason":"tool_calls"}}]})") ==
              FinishKind::none);
        CHECK(finish(R"({"choices":[{"message":{"content":"\"finish_reason\":\"tool_calls\""},)"
                     R"("finish_reason":"stop"}]})") == FinishKind::stop);
        // A repeated key: the first counts, as json::find has it.
        CHECK(finish(R"({"choices":[{"finish_reason":"length","finish_reason":"tool_calls"}]})") ==
              FinishKind::length);
        for (const char* body :
             {R"({"choices":[{"finish_reason":"stop"},{"finish_reason":"tool_calls"}]})",
              R"({"choices":[{"finish_reason":"length","finish_reason":"tool_calls"}]})",
              R"({"choices":[{"index":0,"finish_reason":null}]})"}) {
            check_agrees(chat(), body);
        }
    }

    TEST_CASE("usage where it is and only where it is") {
        for (
            std::string_view body : {
                R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,)"
                R"("prompt_tokens_details":{"cached_tokens":2}}})",
                // nested look-alikes do not count
                R"({"choices":[{"text":"x","usage":{"prompt_tokens":99}}],"usage":{"completion_tokens":1}})",
                R"({"meta":{"usage":{"prompt_tokens":9}},"choices":[]})",
                R"({"choices":[],"usage":{"x":{"prompt_tokens":9},"prompt_tokens":1}})",
                R"({"choices":[],"usage":{"cached_tokens":5,"prompt_tokens_details":{"cached_tokens":6}}})",
                // repeated keys: the first counts
                R"({"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}})",
                R"({"choices":[],"usage":null,"usage":{"prompt_tokens":2}})",
                R"({"choices":{},"choices":[]})",
                // counts that are not int64
                R"({"choices":[],"usage":{"prompt_tokens":1.5,"completion_tokens":18446744073709551615}})",
                R"({"choices":[],"usage":{"prompt_tokens":-1,"completion_tokens":"7"}})",
                R"({ "choices" : [ { "text" : "a b" } ] , "usage" : { "prompt_tokens" : 2 } } )",
                R"({"choices":[{"text":"\"usage\": {\"prompt_tokens\": 7}"}]})",
                // numbers at and past the int64 bounds, and the other number forms
                R"({"choices":[],"usage":{"prompt_tokens":9223372036854775807,)"
                R"("completion_tokens":-9223372036854775808}})",
                R"({"choices":[],"usage":{"prompt_tokens":9223372036854775808,)"
                R"("completion_tokens":-9223372036854775809}})",
                R"({"choices":[],"usage":{"prompt_tokens":-0,"completion_tokens":1e2,)"
                R"("x":[-1.5E-3,0.0,true,false,null]}})",
                R"({"choices":[],"usage":{"prompt_tokens":[1],"completion_tokens":{"a":2}}})",
                // escapes in values, an escaped key, surrogates, raw UTF-8 and DEL
                R"({"choices":[{"text":"a\n\t\"\\\/\b\f\r\u00e9"}],"usage":{"prompt_tokens":4}})",
                R"({"choices":[],"us\u0061ge":{"prompt_tokens":4}})",
                R"({"choices":[{"text":"\ud83d\ude00"}],"usage":{"prompt_tokens":4}})",
                R"({"choices":[{"text":"\udc00"}],"usage":{"prompt_tokens":4}})",
                "{\"choices\":[{\"text\":\"caf\xc3\xa9 \x7f\"}],\"usage\":{\"prompt_tokens\":4}}",
            }) {
            check_agrees(completions(), body);
            check_agrees(chat(), body);
        }
    }

    TEST_CASE("the scan judges ordinary bodies itself and leaves only the odd ones to the decode") {
        using openai::scan_response_usage;
        const auto spaced = scan_response_usage(
            " {\n \"choices\" : [ { \"text\" : \"a\\u00e9\" } ] ,\t\"usage\" : { \"prompt_tokens\" "
            ": 2 ,"
            " \"prompt_tokens_details\" : { \"cached_tokens\" : -1 } } } \r\n");
        REQUIRE(spaced.has_value());
        CHECK(spaced->prompt_tokens == 2);
        CHECK(spaced->cached_tokens == -1);
        CHECK_FALSE(spaced->completion_tokens.has_value());
        const auto big =
            scan_response_usage(R"({"choices":[],"usage":{"prompt_tokens":9223372036854775807,)"
                                R"("completion_tokens":9223372036854775808}})");
        REQUIRE(big.has_value());
        CHECK(big->prompt_tokens == INT64_MAX);
        CHECK_FALSE(big->completion_tokens.has_value());
        CHECK(scan_response_usage(R"({"choices":[]})").has_value());
        // Surrogate escapes are judged as RapidJSON judges them: a pair, or a lone low one.
        CHECK(scan_response_usage(R"({"choices":[{"text":"\ud83d\ude00\udc00"}]})").has_value());
        // Not judged here: an escaped key, a lone high surrogate, anything malformed or misshapen.
        CHECK_FALSE(scan_response_usage(R"({"choices":[],"us\u0061ge":{}})").has_value());
        CHECK_FALSE(scan_response_usage(R"({"choices":[{"text":"\ud83d"}]})").has_value());
        CHECK_FALSE(scan_response_usage(R"({"choices":[1]})").has_value());
        CHECK_FALSE(scan_response_usage(R"({"usage":{}})").has_value());
    }

    TEST_CASE("malformed or wrong-shaped bodies fail exactly as the full decode fails") {
        for (std::string_view body :
             {"",
              "not json",
              "[]",
              R"({"id":"x"})",
              R"({"choices":{}})",
              R"({"choices":[1]})",
              R"({"choices":[{},[]]})",
              R"({"choices":[]} trailing)",
              "{oops",
              R"({"error":{"message":"too long","type":"BadRequestError","code":400}})",
              R"({"choices":[],"n":01})",
              R"({"choices":[],"n":1.})",
              R"({"choices":[],"n":-})",
              R"({"choices":[],"n":+1})",
              R"({"choices":[],"n":.5})",
              R"({"choices":[],"n":1e})",
              R"({"choices":[],"n":nul})",
              R"({"choices":[],"n":tru})",
              R"({"choices":[],})",
              R"({"choices":[],"s":"\x"})",
              R"({"choices":[],"s":"\u12"})",
              "{\"choices\":[],\"s\":\"a\tb\"}",
              R"({"choices":[] "x":1})",
              R"({"choices" [],"x":1})",
              R"({"choices":[{}{}]})",
              R"({"choices":[],"s":"open)",
              R"({"choices":[)",
              R"({choices:[]})"}) {
            check_agrees(completions(), body);
            check_agrees(chat(), body);
        }
        std::string deep = R"({"choices":[],"x":)";
        for (int i = 0; i < 80; ++i) {
            deep += "[";
        }
        check_agrees(completions(), deep + std::string(80, ']') + "}");
    }
}

TEST_SUITE("openai response encode (client)") {
    TEST_CASE("§2.4 completions round trip: byte-exact compact form, same client view") {
        const std::string sample = fixture("completions_response.json");
        const auto r = decode_ok(completions(), sample);
        const std::string out = encode(completions(), r);
        CHECK(out ==
              R"({"id":"cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7","object":"text_completion",)"
              R"("created":1589478378,"model":"gpt-4-turbo","choices":[{"index":0,)"
              R"("text":"\n\nThis is indeed a test","logprobs":null,"finish_reason":"length"}],)"
              R"("usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}})");
        check_same_client_view(out, sample, false);
    }

    TEST_CASE("§2.4 chat round trip: byte-exact compact form, same client view") {
        const std::string sample = fixture("chat_response.json");
        const auto r = decode_ok(chat(), sample);
        const std::string out = encode(chat(), r);
        CHECK(out == R"({"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion",)"
                     R"("created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,)"
                     R"("message":{"role":"assistant","content":"The image shows ..."},)"
                     R"("logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,)"
                     R"("completion_tokens":46,"total_tokens":1163,)"
                     R"("prompt_tokens_details":{"cached_tokens":0}}})");
        check_same_client_view(out, sample, true);
    }

    // Issue 16 item 5: finish_reason is required in a whole answer (the Vercel AI SDK rejects
    // null): a backend that did not say gets "stop".
    TEST_CASE("finish reasons, stop when the backend did not say; usage omitted when unknown") {
        GenerationResult r;
        r.id = "i";
        r.model = "m";
        r.created = 5;
        r.choices = {choice(0, "a", FinishKind::none), choice(1, "b", FinishKind::tool_calls),
                     choice(2, "c", FinishKind::content_filter), choice(3, "d", FinishKind::abort)};
        CHECK(encode(chat(), r) ==
              R"({"id":"i","object":"chat.completion","created":5,"model":"m","choices":[)"
              R"({"index":0,"message":{"role":"assistant","content":"a"},"logprobs":null,)"
              R"("finish_reason":"stop"},)"
              R"({"index":1,"message":{"role":"assistant","content":"b"},"logprobs":null,)"
              R"("finish_reason":"tool_calls"},)"
              R"({"index":2,"message":{"role":"assistant","content":"c"},"logprobs":null,)"
              R"("finish_reason":"content_filter"},)"
              R"({"index":3,"message":{"role":"assistant","content":"d"},"logprobs":null,)"
              R"("finish_reason":"abort"}]})");
    }

    // Issue 16 item 5: OpenAI's usage requires all three counts; one the backend did not report
    // leaves the object out rather than a count made up.
    TEST_CASE("partial usage: left out, never a usage without prompt_tokens or total_tokens") {
        GenerationResult r;
        r.choices = {choice(0, "x", FinishKind::stop)};
        r.usage.completion_tokens = 3;
        CHECK(encode(completions(), r) ==
              R"({"id":"","object":"text_completion","created":0,"model":"","choices":[)"
              R"({"index":0,"text":"x","logprobs":null,"finish_reason":"stop"}]})");
        r.usage.prompt_tokens = 2;
        CHECK(encode(completions(), r)
                  .ends_with(
                      R"("usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}})"));
    }

    TEST_CASE("per-choice usage is summed when there is no aggregate (prompt once per n)") {
        GenerationRequest req;
        req.sampling.n = 2;
        GenerationResult r;
        for (int i = 0; i < 4; ++i) {
            Choice c = choice(i, "t", FinishKind::stop);
            c.usage.prompt_tokens = 10 + i / 2;  // two prompts of 10 and 11 tokens
            c.usage.completion_tokens = 1;
            r.choices.push_back(c);
        }
        const std::string out = encode(completions(), r, req);
        CHECK(out.find(R"("usage":{"prompt_tokens":21,"completion_tokens":4,"total_tokens":25})") !=
              std::string::npos);
    }

    TEST_CASE("echo prepends each choice's own text prompt") {
        GenerationRequest req;
        req.echo = true;
        req.sampling.n = 2;
        req.prompts = {Prompt{"A:", {}, false}, Prompt{"B:", {}, false}};
        GenerationResult r;
        for (int i = 0; i < 4; ++i) {
            r.choices.push_back(choice(i, std::to_string(i), FinishKind::stop));
        }
        const std::string out = encode(completions(), r, req);
        for (std::string_view text :
             {R"("text":"A:0")", R"("text":"A:1")", R"("text":"B:2")", R"("text":"B:3")"}) {
            CHECK(out.find(text) != std::string::npos);
        }
        // Token prompts cannot be shown as text; chat never echoes.
        req.prompts = {Prompt{{}, {1, 2}, true}, Prompt{"B:", {}, false}};
        CHECK(encode(completions(), r, req).find(R"("text":"0")") != std::string::npos);
        CHECK(encode(chat(), r, req).find("B:") == std::string::npos);
    }

    TEST_CASE("error bodies") {
        Error e;
        e.status = 400;
        e.message = "'n' must be between 1 and 128, got 0";
        e.param = "n";
        std::string out;
        chat().encode_error(e, out);
        CHECK(out == R"({"error":{"message":"'n' must be between 1 and 128, got 0",)"
                     R"("type":"invalid_request_error","param":"n","code":null}})");
        out.clear();
        Error u;
        u.message = "backend \"down\"";
        u.type = "upstream_error";
        u.code = "backend_unavailable";
        completions().encode_error(u, out);
        CHECK(out == R"({"error":{"message":"backend \"down\"","type":"upstream_error",)"
                     R"("param":null,"code":"backend_unavailable"}})");
    }
}

// Issue 16 item 7: TGI's OpenAI-compatible chat route is translated, not relayed: its tool
// calls reach an OpenAI chat client as TGI wrote them; a client of another dialect gets a 502.
TEST_CASE("openai chat: tool_calls carried to an OpenAI chat client, a 502 for others") {
    constexpr std::string_view body =
        R"({"object":"chat.completion","id":"","created":1,"model":"m","system_fingerprint":"3.0.0",)"
        R"("choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"0","type":"function",)"
        R"("function":{"description":null,"name":"get_weather","arguments":{"location":"Paris"}}}]},)"
        R"("logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}})";
    GenerationRequest req;
    req.dialect = infergate::canonical::Dialect::openai_chat;
    const GenerationResult r = decode_ok(chat(), body, req);
    const std::string out = encode(chat(), r, req);
    CHECK(out.find(R"("message":{"role":"assistant","content":"","tool_calls":[{"id":"0",)"
                   R"("type":"function","function":{"description":null,"name":"get_weather",)"
                   R"("arguments":{"location":"Paris"}}}]})") != std::string::npos);
    GenerationRequest tgi = req;  // a client with no tool calls in its dialect
    tgi.dialect = infergate::canonical::Dialect::tgi;
    auto lost = chat().decode_response(body, tgi);
    REQUIRE_FALSE(lost.ok());
    CHECK(lost.error().status == 502);
    CHECK(lost.error().message.find("tool_calls") != std::string::npos);
}
