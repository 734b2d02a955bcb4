// translators/framing/writers.cpp: the SSE and NDJSON writers, and what the scanners read back.

#include "tests/translators/framing/test_util.hpp"

namespace infergate::framing {

TEST_CASE("framing/writers: SSE data, named events and NDJSON") {
    std::string out = "prefix|";
    write_sse_data("{\"a\":1}", out);
    CHECK(out == "prefix|data: {\"a\":1}\n\n");

    out.clear();
    write_sse_data("[DONE]", out);
    write_sse_event("message_stop", "{\"type\":\"message_stop\"}", out);
    CHECK(out == "data: [DONE]\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");

    out.clear();
    write_ndjson("{\"done\":true}", out);
    write_ndjson("{}", out);
    CHECK(out == "{\"done\":true}\n{}\n");
}

TEST_CASE("framing/writers: what the writers produce, the scanners read back") {
    std::string sse;
    write_sse_data("{\"x\":\" spaced\"}", sse);
    write_sse_event("content_block_delta", " leading space kept", sse);
    write_sse_data("", sse);
    const Events events = scan_once(sse, /*finish=*/false);
    REQUIRE(events.size() == 3);
    CHECK(events[0] == ev("", "{\"x\":\" spaced\"}"));
    CHECK(events[1] == ev("content_block_delta", " leading space kept"));
    CHECK(events[2] == ev("", ""));

    std::string nd;
    write_ndjson("{\"a\":1}", nd);
    write_ndjson("{\"b\":2}", nd);
    CHECK(records_once(nd) == Records{"{\"a\":1}", "{\"b\":2}"});
}

TEST_CASE("framing/writers: a multi-line payload and a comment, read back") {
    std::string out;
    write_sse_data_lines("{\n  \"a\": 1\n}", out);
    CHECK(out == "data: {\ndata:   \"a\": 1\ndata: }\n\n");
    write_sse_comment(" ping", out);
    CHECK(out.ends_with(": ping\n\n"));
    SseScanner scanner(4096, true);
    std::vector<SseEvent> events;
    scanner.feed(out, events);
    REQUIRE(events.size() == 2);
    CHECK(events[0].data == "{\n  \"a\": 1\n}");
    CHECK(events[1].comment);
    CHECK(events[1].data == " ping");
}

}  // namespace infergate::framing
