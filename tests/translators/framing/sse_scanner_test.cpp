// translators/framing/scanners.cpp: SseScanner's line and field rules (WHATWG event-stream
// parsing as LLM servers use it), the BOM, comments, [DONE] and llama-server's error field.

#include "tests/translators/framing/test_util.hpp"

namespace infergate::framing {

TEST_CASE("framing/sse: OpenAI data lines and the [DONE] terminator") {
    const std::string_view wire =
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\n"
        "data: [DONE]\n\n";
    const Events got = scan_once(wire);
    REQUIRE(got.size() == 3);
    CHECK(got[0] == ev("", "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}"));
    CHECK(got[1] == ev("", "{\"choices\":[],\"usage\":{\"total_tokens\":3}}"));
    CHECK(got[2] == ev("", "[DONE]"));
}

TEST_CASE("framing/sse: TGI data without a space, with keep-alive comments") {
    const std::string_view wire =
        ":\n"
        "data:{\"token\":{\"id\":1,\"text\":\" a\"},\"generated_text\":null}\n\n"
        ": keep-alive\n\n"
        "data:{\"token\":{\"id\":2,\"text\":\"b\"},\"generated_text\":\" ab\"}\n\n";
    const Events got = scan_once(wire);
    INFO(describe(got));
    REQUIRE(got.size() == 2);
    CHECK(got[0].data == "{\"token\":{\"id\":1,\"text\":\" a\"},\"generated_text\":null}");
    CHECK(got[1].data == "{\"token\":{\"id\":2,\"text\":\"b\"},\"generated_text\":\" ab\"}");
    CHECK(got[0].event.empty());
}

TEST_CASE("framing/sse: only one space after the colon is stripped") {
    const Events got = scan_once("data:   three\n\ndata:\tx\n\nevent:  name\ndata: y\n\n");
    REQUIRE(got.size() == 3);
    CHECK(got[0].data == "  three");
    CHECK(got[1].data == "\tx");
    CHECK(got[2] == ev(" name", "y"));
}

TEST_CASE("framing/sse: Anthropic event and data pairs, ping included, last event unterminated") {
    const Events got = scan_once(kAnthropic);
    INFO(describe(got));
    REQUIRE(got.size() == 9);
    CHECK(got[0].event == "message_start");
    CHECK(got[0].data.rfind("{\"type\":\"message_start\"", 0) == 0);
    CHECK(got[1].event == "content_block_start");
    CHECK(got[2] == ev("ping", "{\"type\": \"ping\"}"));
    CHECK(got[3].event == "content_block_delta");
    CHECK(got[4].data ==
          "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
          "\"text\":\" there\"}}");
    CHECK(got[6] == ev("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"));
    CHECK(got[7].event == "message_delta");
    CHECK(got[8] == ev("message_stop", "{\"type\":\"message_stop\"}"));
}

TEST_CASE("framing/sse: the last event is delivered only by finish()") {
    SseScanner scanner;
    std::vector<SseEvent> out;
    scanner.feed(kAnthropic, out);
    CHECK(out.size() == 8);
    CHECK(scanner.has_partial());
    scanner.finish(out);
    REQUIRE(out.size() == 9);
    CHECK(out[8] == ev("message_stop", "{\"type\":\"message_stop\"}"));
    CHECK_FALSE(scanner.has_partial());
    // finish() again delivers nothing twice.
    scanner.finish(out);
    CHECK(out.size() == 9);
}

TEST_CASE("framing/sse: finish() on a line-terminated but unclosed event, and on nothing") {
    SUBCASE("data line ended, no blank line") {
        SseScanner scanner;
        std::vector<SseEvent> out;
        scanner.feed("event: e\ndata: 1\n", out);
        CHECK(out.empty());
        CHECK(scanner.has_partial());
        scanner.finish(out);
        REQUIRE(out.size() == 1);
        CHECK(out[0] == ev("e", "1"));
    }
    SUBCASE("only an event name: dropped") {
        SseScanner scanner;
        std::vector<SseEvent> out;
        scanner.feed("event: e\n", out);
        CHECK(scanner.has_partial());
        scanner.finish(out);
        CHECK(out.empty());
    }
    SUBCASE("only a comment: nothing") {
        SseScanner scanner;
        std::vector<SseEvent> out;
        scanner.feed(": ping", out);
        scanner.finish(out);
        CHECK(out.empty());
    }
    SUBCASE("empty stream") {
        SseScanner scanner;
        std::vector<SseEvent> out;
        CHECK_FALSE(scanner.has_partial());
        scanner.finish(out);
        CHECK(out.empty());
    }
}

TEST_CASE("framing/sse: multiple data lines are joined with a newline") {
    const Events got = scan_once("data: {\"a\":\ndata: 1}\ndata:\n\n");
    REQUIRE(got.size() == 1);
    CHECK(got[0].data == "{\"a\":\n1}\n");
}

TEST_CASE("framing/sse: events without data are dropped, and their name does not leak") {
    const Events got = scan_once("event: lonely\n\ndata: x\n\nevent: named\ndata:\n\n");
    REQUIRE(got.size() == 2);
    CHECK(got[0] == ev("", "x"));
    CHECK(got[1] == ev("named", ""));
}

TEST_CASE("framing/sse: id, retry, unknown fields and colon-less lines") {
    // `data` with no colon is the field `data` with an empty value; `event` likewise resets the
    // name; unknown field names (even `datax`) are ignored.
    const Events got =
        scan_once("id: 42\nretry: 3000\ndatax: no\nfoo\ndata\n\nevent: a\nevent\ndata: z\n\n");
    INFO(describe(got));
    REQUIRE(got.size() == 2);
    CHECK(got[0] == ev("", ""));
    CHECK(got[1] == ev("", "z"));
}

TEST_CASE("framing/sse: CRLF and lone CR line ends") {
    const Events crlf = scan_once("event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n");
    REQUIRE(crlf.size() == 2);
    CHECK(crlf[0] == ev("a", "1"));
    CHECK(crlf[1] == ev("", "2"));

    const Events cr = scan_once("event: a\rdata: 1\r\rdata: 2\r\r");
    REQUIRE(cr.size() == 2);
    CHECK(cr[0] == ev("a", "1"));
    CHECK(cr[1] == ev("", "2"));

    // CR CR LF is a line end followed by a blank line (CR, then CRLF), not one line end.
    const Events crcrlf = scan_once("data: 1\r\r\ndata: 2\n\n");
    REQUIRE(crcrlf.size() == 2);
    CHECK(crcrlf[0].data == "1");
    CHECK(crcrlf[1].data == "2");
}

TEST_CASE("framing/sse: a CRLF split across two feeds is one line end") {
    SseScanner scanner;
    std::vector<SseEvent> out;
    scanner.feed("data: 1\r", out);
    CHECK(out.empty());
    scanner.feed("\ndata: 2\r", out);
    // If the LF were taken as a blank line the event would already have been dispatched as "1".
    CHECK(out.empty());
    scanner.feed("\n\r", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "1\n2");
    scanner.feed("\n", out);  // completes the CRLF of the blank line: no new event, no extra line
    CHECK(out.size() == 1);
    CHECK_FALSE(scanner.has_partial());
    scanner.feed("data: 3\n\n", out);
    REQUIRE(out.size() == 2);
    CHECK(out[1].data == "3");
}

TEST_CASE("framing/sse: an LF not preceded by CR at a feed start is a blank line") {
    SseScanner scanner;
    std::vector<SseEvent> out;
    scanner.feed("data: 1\n", out);
    scanner.feed("\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "1");
}

TEST_CASE("framing/sse: out is appended to, not cleared") {
    SseScanner scanner;
    std::vector<SseEvent> out{SseEvent{"old", "x"}};
    scanner.feed("data: new\n\n", out);
    REQUIRE(out.size() == 2);
    CHECK(out[0] == ev("old", "x"));
    CHECK(out[1] == ev("", "new"));
}

TEST_CASE("framing/sse: binary bytes and NUL inside data survive") {
    const std::string wire = bytes("data: a\0b\xff\n\n");
    const Events got = scan_once(wire);
    REQUIRE(got.size() == 1);
    CHECK(got[0].data == bytes("a\0b\xff"));
}

TEST_CASE("framing/sse: a UTF-8 BOM at the start is skipped, however the bytes are split") {
    const std::string wire =
        "\xEF\xBB\xBF"
        "data: {\"a\":1}\n\ndata: [DONE]\n\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        const Events got = scan_in_steps(wire, step);
        REQUIRE(got.size() == 2);
        CHECK(got[0] == ev("", "{\"a\":1}"));
        CHECK(got[1] == ev("", "[DONE]"));
    }
    // Only at the very start: later it is data, and a BOM prefix that is not one is kept.
    CHECK(scan_once("data: \xEF\xBB\xBFx\n\n") == Events{ev("", "\xEF\xBB\xBFx")});
    CHECK(scan_once("\xEF\xBBy: 1\ndata: z\n\n") == Events{ev("", "z")});
    // A BOM prefix followed by something else: the bytes are put back in front of the line.
    CHECK(scan_in_steps("\xEF\xBB"
                        "data: q\n\n",
                        1)
              .empty());  // the field is "\xEF\xBBdata"
    CHECK(scan_in_steps("\xEF"
                        "\ndata: q\n\n",
                        1) == Events{ev("", "q")});
}

TEST_CASE("framing/sse: comments are reported on request, in order, and never join an event") {
    const std::string wire =
        ": ping - 2025-01-01 00:00:00\r\n\r\ndata: {\"a\":\r\n:mid\r\ndata: 1}\r\n\r\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        SseScanner scanner(4096, true);
        std::vector<SseEvent> out;
        for (size_t i = 0; i < wire.size(); i += step) {
            scanner.feed(std::string_view(wire).substr(i, step), out);
        }
        scanner.finish(out);
        REQUIRE(out.size() == 3);
        CHECK(out[0].comment);
        CHECK(out[0].data == " ping - 2025-01-01 00:00:00");
        CHECK(out[1].comment);
        CHECK(out[1].data == "mid");
        CHECK_FALSE(out[2].comment);
        CHECK(out[2].data == "{\"a\":\n1}");
    }
    // Off by default: the same bytes give the one event.
    CHECK(scan_once(wire) == Events{ev("", "{\"a\":\n1}")});
}

TEST_CASE("framing/sse: the [DONE] sentinel with any whitespace around it") {
    for (const std::string_view d :
         {"[DONE]", " [DONE]", "[DONE] ", "\t[DONE]\r\n", "  [DONE]  "}) {
        CAPTURE(d);
        CHECK(is_done_sentinel(d));
    }
    for (const std::string_view d : {"", " ", "[DONE", "[done]", "[DONE]x", "\"[DONE]\""}) {
        CAPTURE(d);
        CHECK_FALSE(is_done_sentinel(d));
    }
    // "data:  [DONE] " (two spaces, one trailing): the scanner strips one space, the rest is
    // still the sentinel.
    const Events got = scan_once("data:  [DONE] \n\n");
    REQUIRE(got.size() == 1);
    CHECK(is_done_sentinel(got[0].data));
}

TEST_CASE("framing/sse: llama-server's `error:` field becomes an in-band error envelope") {
    // llama-server, a failure inside a 200 stream (then, on its OpenAI routes, [DONE]).
    const std::string wire =
        "data: {\"content\":\"a\"}\n\n"
        "error: {\"code\":500,\"message\":\"context full\",\"type\":\"server_error\"}\n\n"
        "data: [DONE]\n\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        const Events got = scan_in_steps(wire, step);
        REQUIRE(got.size() == 3);
        CHECK(got[1].data ==
              "{\"error\":{\"code\":500,\"message\":\"context full\",\"type\":\"server_error\"}}");
        CHECK(got[2].data == "[DONE]");
    }
    // A value that is not an object is the message of one.
    CHECK(scan_once("error: slot \"1\" failed\n\n") ==
          Events{ev("", R"({"error":{"message":"slot \"1\" failed"}})")});
    // An error line inside an event that already has data is an unknown field: ignored.
    CHECK(scan_once("data: x\nerror: y\n\n") == Events{ev("", "x")});
}

}  // namespace infergate::framing
