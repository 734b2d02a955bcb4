// translators/responses/stream_encode.cpp: the typed SSE events of a streamed answer (their order,
// sequence numbers, item ids and places), the final response object, the held finish, a failure's
// `error` + response.failed, and the same output items as the whole answer's.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/translators/responses/test_util.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/stream_state.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::ToolCallDelta;
using responses_test::at;
using responses_test::codec;
using responses_test::decode_ok;
using Type = StreamEvent::Type;

// ---- events in -------------------------------------------------------------------------------

StreamEvent text(std::string t) {
    StreamEvent ev;
    ev.text = std::move(t);
    return ev;
}

StreamEvent reasoning(std::string t) {
    StreamEvent ev;
    ev.reasoning = std::move(t);
    return ev;
}

StreamEvent call(int index, std::string id, std::string name, std::string arguments) {
    StreamEvent ev;
    ev.tool_calls.push_back(
        ToolCallDelta{index, std::move(id), std::move(name), std::move(arguments)});
    return ev;
}

StreamEvent finish(FinishKind kind, std::string message = {}) {
    StreamEvent ev;
    ev.finish = FinishReason{};
    ev.finish->kind = kind;
    ev.finish->message = std::move(message);
    return ev;
}

StreamEvent usage(int64_t prompt, int64_t completion, int64_t cached, int64_t reasoning_tokens) {
    StreamEvent ev;
    ev.type = Type::usage;
    ev.usage.prompt_tokens = prompt;
    ev.usage.completion_tokens = completion;
    ev.usage.cached_tokens = cached;
    ev.usage.reasoning_tokens = reasoning_tokens;
    return ev;
}

StreamEvent done() {
    StreamEvent ev;
    ev.type = Type::done;
    return ev;
}

StreamEvent failure(int status, std::string message, std::string code = {}) {
    StreamEvent ev;
    ev.type = Type::error;
    ev.error.status = status;
    ev.error.type = "upstream_error";
    ev.error.message = std::move(message);
    ev.error.code = std::move(code);
    return ev;
}

// A request and the client-side stream state the exchange makes for it.
struct Stream {
    GenerationRequest req;
    StreamState state;

    explicit Stream(std::string_view body = R"({"model":"m","input":"Hi","stream":true})")
        : req(decode_ok(body)) {
        state.id = "resp_s1";
        state.model = "m";
        state.created = 1700000001;
        codec().init_client_stream(state, req);
    }

    std::string feed(const StreamEvent& ev) {
        std::string out;
        codec().encode_stream_event(ev, state, out);
        return out;
    }
    std::string end() {
        std::string out;
        codec().encode_stream_end(state, out);
        return out;
    }
    std::string run(const std::vector<StreamEvent>& events) {
        std::string out;
        for (const StreamEvent& ev : events) {
            out += feed(ev);
        }
        return out + end();
    }
};

// ---- events out ------------------------------------------------------------------------------

struct Sse {
    std::string event;  // the `event:` line's value
    std::string data;   // the `data:` line's JSON
};

// The SSE blocks of `out`; each must be exactly `event: <type>\ndata: <json>`.
std::vector<Sse> blocks(std::string_view out) {
    std::vector<Sse> got;
    size_t pos = 0;
    while (pos < out.size()) {
        const size_t end = out.find("\n\n", pos);
        REQUIRE(end != std::string_view::npos);
        const std::string_view block = out.substr(pos, end - pos);
        REQUIRE(block.starts_with("event: "));
        const size_t nl = block.find('\n');
        REQUIRE(nl != std::string_view::npos);
        REQUIRE(block.substr(nl + 1).starts_with("data: "));
        REQUIRE(block.find('\n', nl + 1) == std::string_view::npos);
        got.push_back({std::string(block.substr(7, nl - 7)), std::string(block.substr(nl + 7))});
        pos = end + 2;
    }
    return got;
}

std::vector<std::string> types(const std::vector<Sse>& events) {
    std::vector<std::string> out;
    for (const Sse& e : events) {
        out.push_back(e.event);
    }
    return out;
}

// What holds for every Responses stream: each data's type is its event line, sequence numbers
// count from 0, every event about an item names the id its output_item.added gave it at its
// output_index, the deltas add up to the .done text, and the final response's output is the
// done items in order.
void check_stream(const std::vector<Sse>& events) {
    REQUIRE(events.size() >= 3);
    std::map<std::string, std::string> ids;     // output_index -> item id
    std::map<std::string, std::string> deltas;  // item id -> its deltas concatenated
    std::string done_items;
    for (size_t i = 0; i < events.size(); ++i) {
        const Sse& e = events[i];
        INFO(i << ": " << e.data);
        CHECK(at(e.data, "/type") == "\"" + e.event + "\"");
        CHECK(at(e.data, "/sequence_number") == std::to_string(i));
        const std::string index = at(e.data, "/output_index");
        if (e.event == "response.output_item.added") {
            CHECK(ids.count(index) == 0);  // a place is given once
            CHECK(index == std::to_string(ids.size()));
            ids[index] = at(e.data, "/item/id");
            continue;
        }
        if (e.event == "response.output_item.done") {
            CHECK(at(e.data, "/item/id") == ids[index]);
            done_items += (done_items.empty() ? "" : ",") + at(e.data, "/item");
            continue;
        }
        if (index != "<absent>") {
            REQUIRE(ids.count(index) == 1);
            CHECK(at(e.data, "/item_id") == ids[index]);
        }
        const std::string id = at(e.data, "/item_id");
        if (e.event.ends_with(".delta")) {
            const std::string d = at(e.data, "/delta");
            REQUIRE(d.size() >= 2);
            deltas[id] += d.substr(1, d.size() - 2);  // the JSON string's inside
        } else if (e.event == "response.output_text.done" ||
                   e.event == "response.reasoning_text.done") {
            CHECK(at(e.data, "/text") == "\"" + deltas[id] + "\"");
        } else if (e.event == "response.function_call_arguments.done") {
            CHECK(at(e.data, "/arguments") == "\"" + deltas[id] + "\"");
        }
    }
    const Sse& last = events.back();
    CHECK(last.event.starts_with("response."));
    CHECK(at(last.data, "/response/output") == "[" + done_items + "]");
    CHECK(at(last.data, "/response/id") == R"("resp_s1")");
}

size_t place_of(const std::vector<Sse>& events, std::string_view type, std::string_view item_type) {
    for (size_t i = 0; i < events.size(); ++i) {
        if (events[i].event == type &&
            at(events[i].data, "/item/type") == "\"" + std::string(item_type) + "\"") {
            return i;
        }
    }
    FAIL("no " << type << " for a " << item_type);
    return 0;
}

// The output items the whole answer made of the same events has.
std::string whole_output(const std::vector<StreamEvent>& events) {
    GenerationResult result;
    result.id = "resp_s1";
    result.model = "m";
    for (const StreamEvent& ev : events) {
        infergate::canonical::apply_to_result(ev, result);
    }
    std::string out;
    codec().encode_response(result, GenerationRequest{}, out);
    return at(out, "/output");
}

}  // namespace

TEST_SUITE("responses stream encode") {
    TEST_CASE("text: every event, the finish held for the usage that follows") {
        Stream s(R"({"model":"m","instructions":"sys","input":"Hi","stream":true})");
        std::string out = s.feed(text("Hel"));
        out += s.feed(text("lo"));
        CHECK(s.feed(finish(FinishKind::stop)).empty());  // held: response.completed has usage
        CHECK(s.feed(usage(7, 2, 3, 1)).empty());
        CHECK(s.feed(done()).empty());
        const std::string tail = s.end();
        CHECK_FALSE(tail.empty());
        out += tail;
        CHECK(s.end().empty());  // the tail once
        CHECK(s.feed(text("late")).empty());

        const std::vector<Sse> events = blocks(out);
        CHECK(types(events) ==
              std::vector<std::string>{"response.created", "response.in_progress",
                                       "response.output_item.added", "response.content_part.added",
                                       "response.output_text.delta", "response.output_text.delta",
                                       "response.output_text.done", "response.content_part.done",
                                       "response.output_item.done", "response.completed"});
        check_stream(events);
        // One event byte for byte.
        CHECK(out.find("event: response.output_text.delta\n"
                       R"(data: {"type":"response.output_text.delta","sequence_number":4,)"
                       R"("item_id":"msg_s1_0","output_index":0,"content_index":0,)"
                       R"("delta":"Hel","logprobs":[]})"
                       "\n\n") != std::string::npos);

        CHECK(at(events[0].data, "/response/status") == R"("in_progress")");
        CHECK(at(events[0].data, "/response/output") == "[]");
        CHECK(at(events[0].data, "/response/usage") == "null");
        CHECK(at(events[0].data, "/response/instructions") == R"("sys")");
        CHECK(at(events[0].data, "/response/created_at") == "1700000001");
        CHECK(at(events[0].data, "/response/model") == R"("m")");
        CHECK(at(events[1].data, "/response/status") == R"("in_progress")");
        CHECK(at(events[2].data, "/item") ==
              R"({"id":"msg_s1_0","type":"message","status":"in_progress","role":"assistant",)"
              R"("content":[]})");
        CHECK(at(events[3].data, "/part") ==
              R"({"type":"output_text","text":"","annotations":[],"logprobs":[]})");
        CHECK(at(events[3].data, "/content_index") == "0");
        CHECK(at(events[6].data, "/text") == R"("Hello")");
        CHECK(at(events[7].data, "/part/text") == R"("Hello")");
        CHECK(at(events[8].data, "/item") ==
              R"({"id":"msg_s1_0","type":"message","status":"completed","role":"assistant",)"
              R"("content":[{"type":"output_text","text":"Hello","annotations":[],)"
              R"("logprobs":[]}]})");
        const std::string& completed = events[9].data;
        CHECK(at(completed, "/response/status") == R"("completed")");
        CHECK(at(completed, "/response/incomplete_details") == "null");
        CHECK(at(completed, "/response/error") == "null");
        CHECK(at(completed, "/response/instructions") == R"("sys")");
        CHECK(at(completed, "/response/usage") ==
              R"({"input_tokens":7,"input_tokens_details":{"cached_tokens":3},)"
              R"("output_tokens":2,"output_tokens_details":{"reasoning_tokens":1},)"
              R"("total_tokens":9})");
    }

    TEST_CASE("reasoning, text, two tool calls: items in order, each at its own place") {
        const std::vector<StreamEvent> in = {
            reasoning("Let me "),
            reasoning("think"),
            text("Sure."),
            call(0, "call_1", "get_weather", ""),
            call(0, "", "", R"({"city":)"),
            call(0, "", "", R"("Paris"})"),
            call(1, "", "get_time", "{}"),
            finish(FinishKind::tool_calls),
            usage(20, 9, 0, 3),
        };
        Stream s;
        const std::string out = s.run(in);
        const std::vector<Sse> events = blocks(out);
        CHECK(types(events) == std::vector<std::string>{
                                   "response.created",
                                   "response.in_progress",
                                   "response.output_item.added",  // reasoning, 0
                                   "response.content_part.added",
                                   "response.reasoning_text.delta",
                                   "response.reasoning_text.delta",
                                   "response.reasoning_text.done",
                                   "response.content_part.done",
                                   "response.output_item.done",
                                   "response.output_item.added",  // message, 1
                                   "response.content_part.added",
                                   "response.output_text.delta",
                                   "response.output_text.done",
                                   "response.content_part.done",
                                   "response.output_item.done",
                                   "response.output_item.added",  // get_weather, 2
                                   "response.function_call_arguments.delta",
                                   "response.function_call_arguments.delta",
                                   "response.function_call_arguments.done",
                                   "response.output_item.done",
                                   "response.output_item.added",  // get_time, 3
                                   "response.function_call_arguments.delta",
                                   "response.function_call_arguments.done",
                                   "response.output_item.done",
                                   "response.completed",
                               });
        check_stream(events);
        CHECK(at(events[2].data, "/item") == R"({"id":"rs_s1_0","type":"reasoning","summary":[]})");
        CHECK(at(events[3].data, "/part") == R"({"type":"reasoning_text","text":""})");
        CHECK(at(events[6].data, "/text") == R"("Let me think")");
        CHECK(at(events[8].data, "/item") ==
              R"({"id":"rs_s1_0","type":"reasoning","summary":[],)"
              R"("content":[{"type":"reasoning_text","text":"Let me think"}]})");
        CHECK(at(events[9].data, "/output_index") == "1");
        CHECK(at(events[9].data, "/item/id") == R"("msg_s1_1")");
        CHECK(at(events[15].data, "/output_index") == "2");
        CHECK(at(events[15].data, "/item") ==
              R"({"id":"fc_s1_2","type":"function_call","status":"in_progress",)"
              R"("call_id":"call_1","name":"get_weather","arguments":""})");
        CHECK(at(events[18].data, "/name") == R"("get_weather")");
        CHECK(at(events[18].data, "/arguments") == R"("{\"city\":\"Paris\"}")");
        CHECK(at(events[19].data, "/item") ==
              R"({"id":"fc_s1_2","type":"function_call","status":"completed",)"
              R"("call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"})");
        // A call without the backend's id gets one made from the response id and its place.
        CHECK(at(events[20].data, "/item/call_id") == R"("call_s1_3")");
        CHECK(at(events[23].data, "/item/arguments") == R"("{}")");
        const std::string& completed = events.back().data;
        CHECK(at(completed, "/response/status") == R"("completed")");
        CHECK(at(completed, "/response/usage/output_tokens_details/reasoning_tokens") == "3");
        // The stored answer (the same events gathered) has the same items with the same ids.
        CHECK(at(completed, "/response/output") == whole_output(in));
    }

    TEST_CASE("a tool call after text closes the message item first") {
        Stream s;
        const std::vector<Sse> events =
            blocks(s.run({text("Let me check."), call(0, "call_1", "f", R"({"a":1})"),
                          finish(FinishKind::tool_calls)}));
        check_stream(events);
        const size_t message_done = place_of(events, "response.output_item.done", "message");
        const size_t call_added = place_of(events, "response.output_item.added", "function_call");
        CHECK(message_done < call_added);
        CHECK(events[message_done - 1].event == "response.content_part.done");
        CHECK(events[message_done - 2].event == "response.output_text.done");
        CHECK(at(events[message_done].data, "/item/status") == R"("completed")");
        CHECK(at(events[call_added].data, "/output_index") == "1");
        CHECK(events[call_added + 1].event == "response.function_call_arguments.delta");
    }

    TEST_CASE("text and a whole call in one chunk: the message first, as the stored answer") {
        // Ollama streams each call whole, in the line that may carry text too.
        StreamEvent both = call(0, "call_1", "f", R"({"a":1})");
        both.text = "Let me look.";
        const std::vector<StreamEvent> in = {both, finish(FinishKind::tool_calls)};
        Stream s;
        const std::vector<Sse> events = blocks(s.run(in));
        check_stream(events);
        const size_t message_done = place_of(events, "response.output_item.done", "message");
        const size_t call_added = place_of(events, "response.output_item.added", "function_call");
        CHECK(message_done < call_added);
        const std::string& last = events.back().data;
        CHECK(at(last, "/response/output/0/id") == R"("msg_s1_0")");
        CHECK(at(last, "/response/output/1/id") == R"("fc_s1_1")");
        CHECK(at(last, "/response/output") == whole_output(in));
    }

    TEST_CASE("a piece of the open call and text in one chunk: the call's arguments first") {
        Stream s;
        StreamEvent rest = call(0, "", "", R"(1})");
        rest.text = "Done.";
        const std::vector<Sse> events = blocks(s.run({call(0, "call_1", "f", R"({"a":)"), rest}));
        check_stream(events);
        const size_t call_done = place_of(events, "response.output_item.done", "function_call");
        CHECK(at(events[call_done].data, "/item/arguments") == R"("{\"a\":1}")");
        CHECK(at(events.back().data, "/response/output/1/content/0/text") == R"("Done.")");
    }

    TEST_CASE("the token budget: response.incomplete, the message incomplete") {
        Stream s;
        const std::vector<StreamEvent> in = {text("Once upon"), finish(FinishKind::length),
                                             usage(5, 2, 0, 0)};
        const std::vector<Sse> events = blocks(s.run(in));
        check_stream(events);
        CHECK(events.back().event == "response.incomplete");
        const std::string& last = events.back().data;
        CHECK(at(last, "/response/status") == R"("incomplete")");
        CHECK(at(last, "/response/incomplete_details") == R"({"reason":"max_output_tokens"})");
        CHECK(at(last, "/response/output/0/status") == R"("incomplete")");
        CHECK(at(last, "/response/output") == whole_output(in));
    }

    TEST_CASE("a content filter: response.incomplete with its reason") {
        Stream s;
        const std::vector<Sse> events =
            blocks(s.run({text("x"), finish(FinishKind::content_filter)}));
        check_stream(events);
        CHECK(events.back().event == "response.incomplete");
        CHECK(at(events.back().data, "/response/incomplete_details") ==
              R"({"reason":"content_filter"})");
    }

    TEST_CASE("a failure: the error event, the open item closed, response.failed; then nothing") {
        Stream s;
        std::string out = s.feed(text("par"));
        out += s.feed(failure(502, "backend died"));
        CHECK(s.feed(text("more")).empty());
        CHECK(s.feed(finish(FinishKind::stop)).empty());
        CHECK(s.end().empty());
        CHECK(s.state.ended);
        const std::vector<Sse> events = blocks(out);
        CHECK(types(events) ==
              std::vector<std::string>{"response.created", "response.in_progress",
                                       "response.output_item.added", "response.content_part.added",
                                       "response.output_text.delta", "error",
                                       "response.output_text.done", "response.content_part.done",
                                       "response.output_item.done", "response.failed"});
        check_stream(events);
        CHECK(events[5].data == R"({"type":"error","sequence_number":5,"code":"server_error",)"
                                R"("message":"backend died","param":null})");
        CHECK(at(events[8].data, "/item/status") == R"("incomplete")");
        const std::string& failed = events.back().data;
        CHECK(at(failed, "/response/status") == R"("failed")");
        CHECK(at(failed, "/response/error") ==
              R"({"code":"server_error","message":"backend died"})");
        CHECK(at(failed, "/response/output/0/content/0/text") == R"("par")");
    }

    TEST_CASE("a failure before any output: created, in_progress, error, failed") {
        Stream s;
        const std::vector<Sse> events = blocks(s.feed(failure(429, "slow down")));
        CHECK(types(events) == std::vector<std::string>{"response.created", "response.in_progress",
                                                        "error", "response.failed"});
        check_stream(events);
        CHECK(at(events[2].data, "/code") == R"("rate_limit_exceeded")");
        CHECK(at(events[3].data, "/response/output") == "[]");

        Stream coded;
        Error e;
        e.status = 400;
        e.message = "context too long";
        e.code = "context_length_exceeded";
        e.param = "input";
        std::string out;
        codec().encode_stream_error(e, coded.state, out);
        const std::vector<Sse> again = blocks(out);
        REQUIRE(again.size() == 4);
        CHECK(at(again[2].data, "/code") == R"("context_length_exceeded")");
        CHECK(at(again[2].data, "/param") == R"("input")");
        CHECK(at(again[3].data, "/response/error/code") == R"("context_length_exceeded")");
    }

    TEST_CASE("an aborted generation fails the response with its reason") {
        Stream s;
        std::string out = s.feed(text("a"));
        out += s.feed(finish(FinishKind::abort, "engine out of memory"));
        CHECK(s.state.ended);
        const std::vector<Sse> events = blocks(out);
        check_stream(events);
        CHECK(events[events.size() - 5].event == "error");
        CHECK(at(events[events.size() - 5].data, "/message") == R"("engine out of memory")");
        CHECK(at(events[events.size() - 5].data, "/code") == R"("server_error")");
        CHECK(events.back().event == "response.failed");
    }

    TEST_CASE("an answer without content still has its empty message") {
        Stream s;
        const std::vector<Sse> events = blocks(s.run({finish(FinishKind::stop)}));
        CHECK(types(events) ==
              std::vector<std::string>{"response.created", "response.in_progress",
                                       "response.output_item.added", "response.content_part.added",
                                       "response.output_text.done", "response.content_part.done",
                                       "response.output_item.done", "response.completed"});
        check_stream(events);
        CHECK(at(events[4].data, "/text") == R"("")");
        CHECK(at(events.back().data, "/response/output") ==
              whole_output({finish(FinishKind::stop)}));
        // Nothing at all from the backend: the same.
        Stream empty;
        CHECK(types(blocks(empty.end())) == types(events));
    }

    TEST_CASE("reasoning only, cut by the budget: the stream's items are the stored ones") {
        Stream s;
        const std::vector<StreamEvent> in = {reasoning("Hmm, "), reasoning("let me see"),
                                             finish(FinishKind::length)};
        const std::vector<Sse> events = blocks(s.run(in));
        check_stream(events);
        const std::string& last = events.back().data;
        CHECK(events.back().event == "response.incomplete");
        CHECK(at(last, "/response/output/0/id") == R"("rs_s1_0")");
        CHECK(at(last, "/response/output/0/content/0/text") == R"("Hmm, let me see")");
        CHECK(at(last, "/response/output") == whole_output(in));
    }

    TEST_CASE("keepalives pass as comments; other choices are ignored") {
        Stream s;
        StreamEvent ping;
        ping.type = Type::keepalive;
        ping.text = " ping";
        CHECK(s.feed(ping) == ": ping\n\n");
        StreamEvent other = text("second answer");
        other.index = 1;
        CHECK(s.feed(other).empty());
        const std::vector<Sse> events = blocks(s.run({text("first")}));
        check_stream(events);
        CHECK(at(events.back().data, "/response/output/0/content/0/text") == R"("first")");
    }

    TEST_CASE("usage without the upstream's report: running counts") {
        Stream s;
        StreamEvent counted = text("abc");
        counted.usage.completion_tokens = 3;
        counted.usage.prompt_tokens = 11;
        counted.usage.cached_tokens = 8;
        const std::vector<Sse> events = blocks(s.run({text("x"), counted}));
        check_stream(events);
        CHECK(at(events.back().data, "/response/usage") ==
              R"({"input_tokens":11,"input_tokens_details":{"cached_tokens":8},)"
              R"("output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},)"
              R"("total_tokens":14})");
    }
}
