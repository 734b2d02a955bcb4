#include "translators/framing/framing.hpp"

#include <doctest/doctest.h>

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::framing {
namespace {

// A comparable, printable copy of SseEvent. The operators are hidden friends so that doctest's
// expression templates find them by argument-dependent lookup; SseEvent converts implicitly, so
// `out[0] == ev(...)` works on raw scanner output too.
struct Ev {
    Ev(std::string_view e, std::string_view d) : event(e), data(d) {}
    Ev(const SseEvent& e) : event(e.event), data(e.data) {}  // NOLINT(google-explicit-constructor)
    std::string event;
    std::string data;
    friend bool operator==(const Ev& a, const Ev& b) = default;
    friend std::ostream& operator<<(std::ostream& os, const Ev& e) {
        return os << "{event=\"" << e.event << "\" data=\"" << e.data << "\"}";
    }
};

using Events = std::vector<Ev>;
using Records = std::vector<std::string>;

Ev ev(std::string_view event, std::string_view data) { return Ev(event, data); }

// Builds a string from a literal that contains NUL bytes, without counting them by hand.
template <size_t N>
std::string bytes(const char (&literal)[N]) {
    return std::string(literal, N - 1);
}

// doctest prints both sides of a failed CHECK; this makes event lists readable in INFO too.
std::string describe(const Events& events) {
    std::ostringstream os;
    os << "[";
    for (const auto& e : events) {
        os << e << " ";
    }
    os << "]";
    return os.str();
}

Events to_events(const std::vector<SseEvent>& raw) { return Events(raw.begin(), raw.end()); }

Events scan_once(std::string_view wire, bool finish = true) {
    SseScanner scanner;
    std::vector<SseEvent> out;
    scanner.feed(wire, out);
    if (finish) {
        scanner.finish(out);
    }
    return to_events(out);
}

// Feeds `wire` in pieces of `step` bytes (1 = byte by byte).
Events scan_in_steps(std::string_view wire, size_t step, bool finish = true) {
    SseScanner scanner;
    std::vector<SseEvent> out;
    for (size_t i = 0; i < wire.size(); i += step) {
        scanner.feed(wire.substr(i, step), out);
    }
    if (finish) {
        scanner.finish(out);
    }
    return to_events(out);
}

Records records_once(std::string_view wire) {
    RecordScanner scanner;
    Records out;
    scanner.feed(wire, out);
    scanner.finish(out);
    return out;
}

Records records_in_steps(std::string_view wire, size_t step) {
    RecordScanner scanner;
    Records out;
    for (size_t i = 0; i < wire.size(); i += step) {
        scanner.feed(wire.substr(i, step), out);
    }
    scanner.finish(out);
    return out;
}

// api-dialects.md §11.4, verbatim, including the interleaved `event: ping` and the missing blank
// line after the last event.
constexpr std::string_view kAnthropic =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":"
    "\"msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK\",\"type\":\"message\",\"role\":\"assistant\","
    "\"content\":[],\"model\":\"claude-3-opus-latest\",\"stop_reason\":null,"
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}";

// A stream that mixes every rule; used for the split-invariance checks.
constexpr std::string_view kMixed =
    ": keep-alive\r\n"
    "data:{\"token\":{\"text\":\"Hi\"}}\r\n"
    "\r\n"
    "event: ping\r"
    "data: {}\r"
    "\r"
    "id: 7\n"
    "retry: 100\n"
    "data: line one\n"
    "data:  two\n"
    "bogus: x\n"
    "\n"
    "event: only-a-name\n"
    "\n"
    "data\n"
    "\n"
    "data: [DONE]\n"
    "\n";

}  // namespace

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

TEST_CASE("framing/sse: byte-by-byte and every chunk size give the one-shot result") {
    for (std::string_view wire : {kMixed, kAnthropic}) {
        const Events whole = scan_once(wire);
        REQUIRE_FALSE(whole.empty());
        for (size_t step = 1; step <= wire.size(); ++step) {
            CAPTURE(step);
            const Events pieces = scan_in_steps(wire, step);
            REQUIRE(pieces.size() == whole.size());
            for (size_t i = 0; i < whole.size(); ++i) {
                CHECK(pieces[i] == whole[i]);
            }
        }
    }
}

TEST_CASE("framing/sse: the mixed stream decodes to the expected events") {
    const Events got = scan_once(kMixed);
    INFO(describe(got));
    REQUIRE(got.size() == 5);
    CHECK(got[0] == ev("", "{\"token\":{\"text\":\"Hi\"}}"));
    CHECK(got[1] == ev("ping", "{}"));
    CHECK(got[2] == ev("", "line one\n two"));
    CHECK(got[3] == ev("", ""));
    CHECK(got[4] == ev("", "[DONE]"));
}

TEST_CASE("framing/sse: every two-way split of the mixed stream matches") {
    const Events whole = scan_once(kMixed);
    for (size_t cut = 0; cut <= kMixed.size(); ++cut) {
        CAPTURE(cut);
        SseScanner scanner;
        std::vector<SseEvent> out;
        scanner.feed(kMixed.substr(0, cut), out);
        scanner.feed(kMixed.substr(cut), out);
        scanner.finish(out);
        REQUIRE(out.size() == whole.size());
        for (size_t i = 0; i < whole.size(); ++i) {
            CHECK(out[i] == whole[i]);
        }
    }
}

TEST_CASE("framing/sse: out is appended to, not cleared") {
    SseScanner scanner;
    std::vector<SseEvent> out{SseEvent{"old", "x"}};
    scanner.feed("data: new\n\n", out);
    REQUIRE(out.size() == 2);
    CHECK(out[0] == ev("old", "x"));
    CHECK(out[1] == ev("", "new"));
}

TEST_CASE("framing/sse: overflow on an unfinished line beyond max_buffer") {
    SseScanner scanner(16);
    std::vector<SseEvent> out;
    scanner.feed("data: 1\n\n", out);
    REQUIRE(out.size() == 1);
    scanner.feed("data: 0123456789", out);  // 16 bytes pending: at the limit, still fine
    CHECK_FALSE(scanner.overflowed());
    CHECK(scanner.has_partial());
    scanner.feed("A", out);  // 17
    CHECK(scanner.overflowed());
    CHECK_FALSE(scanner.has_partial());
    // Once broken, nothing more is accepted, even well-formed events.
    scanner.feed("\n\ndata: 2\n\n", out);
    scanner.finish(out);
    CHECK(out.size() == 1);
    CHECK(scanner.overflowed());
}

TEST_CASE("framing/sse: overflow does not depend on how the long line was split") {
    const std::string wire = "data: ok\n\ndata: " + std::string(40, 'x') + "\n\ndata: after\n\n";
    SseScanner whole(32);
    std::vector<SseEvent> whole_out;
    whole.feed(wire, whole_out);
    CHECK(whole.overflowed());
    REQUIRE(whole_out.size() == 1);
    CHECK(whole_out[0].data == "ok");

    SseScanner split(32);
    std::vector<SseEvent> bytes_out;
    for (char c : wire) {
        split.feed(std::string_view(&c, 1), bytes_out);
    }
    CHECK(split.overflowed());
    CHECK(bytes_out.size() == 1);

    // Also for a line that adds no data (a comment): the limit is on the line, so one that
    // arrives whole must not slip through where the same line in pieces would not.
    const std::string comment = ": " + std::string(40, 'c') + "\ndata: late\n\n";
    SseScanner comment_whole(32);
    std::vector<SseEvent> comment_out;
    comment_whole.feed(comment, comment_out);
    CHECK(comment_whole.overflowed());
    CHECK(comment_out.empty());
}

TEST_CASE("framing/sse: overflow on an event whose data lines add up past max_buffer") {
    SseScanner scanner(16);
    std::vector<SseEvent> out;
    scanner.feed("data: 12345\ndata: 12345\n", out);  // 11 bytes of data so far
    CHECK_FALSE(scanner.overflowed());
    scanner.feed("data: 123456\n", out);  // would be 18
    CHECK(scanner.overflowed());
    scanner.finish(out);
    CHECK(out.empty());
}

TEST_CASE("framing/sse: a large event in one feed is not an overflow") {
    const std::string payload(100000, 'p');
    SseScanner scanner(200000);
    std::vector<SseEvent> out;
    scanner.feed("data: " + payload + "\n\n", out);
    CHECK_FALSE(scanner.overflowed());
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == payload);
}

TEST_CASE("framing/sse: binary bytes and NUL inside data survive") {
    const std::string wire = bytes("data: a\0b\xff\n\n");
    const Events got = scan_once(wire);
    REQUIRE(got.size() == 1);
    CHECK(got[0].data == bytes("a\0b\xff"));
}

TEST_CASE("framing/records: newline-delimited JSON, CRLF and blank lines") {
    const Records got = records_once(
        "{\"response\":\"a\",\"done\":false}\r\n\n  \r\n\t\n{\"response\":\"\",\"done\":true}\n");
    REQUIRE(got.size() == 2);
    CHECK(got[0] == "{\"response\":\"a\",\"done\":false}");
    CHECK(got[1] == "{\"response\":\"\",\"done\":true}");
}

TEST_CASE("framing/records: NUL-delimited records (vLLM legacy) and mixed delimiters") {
    const std::string wire =
        bytes("{\"text\":[\"a\"]}\0{\"text\":[\"ab\"]}\0\0{\"text\":[\"abc\"]}\n");
    const Records got = records_once(wire);
    REQUIRE(got.size() == 3);
    CHECK(got[0] == "{\"text\":[\"a\"]}");
    CHECK(got[1] == "{\"text\":[\"ab\"]}");
    CHECK(got[2] == "{\"text\":[\"abc\"]}");
}

TEST_CASE("framing/records: only one trailing CR is removed, inner whitespace kept") {
    const Records got = records_once(" {\"a\": 1} \r\r\n");
    REQUIRE(got.size() == 1);
    CHECK(got[0] == " {\"a\": 1} \r");
}

TEST_CASE("framing/records: finish() delivers a record without delimiter") {
    RecordScanner scanner;
    Records out;
    scanner.feed("{\"a\":1}\n{\"b\":", out);
    REQUIRE(out.size() == 1);
    CHECK(scanner.has_partial());
    scanner.feed("2}", out);
    CHECK(out.size() == 1);
    scanner.finish(out);
    REQUIRE(out.size() == 2);
    CHECK(out[1] == "{\"b\":2}");
    CHECK_FALSE(scanner.has_partial());

    RecordScanner blank;
    Records none;
    blank.feed("{}\n   \r", none);
    blank.finish(none);
    CHECK(none.size() == 1);
}

TEST_CASE("framing/records: every chunk size gives the one-shot result") {
    const std::string wire = bytes("{\"x\":1}\r\n\0{\"y\":2}\0\n\n {\"z\":3}\r\n{\"w\":4}");
    const Records whole = records_once(wire);
    REQUIRE(whole.size() == 4);
    CHECK(whole[3] == "{\"w\":4}");
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        CHECK(records_in_steps(wire, step) == whole);
    }
}

TEST_CASE("framing/records: overflow beyond max_buffer stops the scanner") {
    RecordScanner scanner(8);
    Records out;
    scanner.feed("12345678\n", out);  // exactly the limit
    CHECK_FALSE(scanner.overflowed());
    REQUIRE(out.size() == 1);
    scanner.feed("12345", out);
    scanner.feed("6789", out);  // 9 pending
    CHECK(scanner.overflowed());
    scanner.feed("\nok\n", out);
    scanner.finish(out);
    CHECK(out.size() == 1);

    RecordScanner whole(8);
    Records whole_out;
    whole.feed("a\n123456789\nb\n", whole_out);
    CHECK(whole.overflowed());
    CHECK(whole_out == Records{"a"});
}

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

}  // namespace infergate::framing

namespace infergate::framing {

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

TEST_CASE("framing/records: a BOM, CRLF and blank lines, split at every byte") {
    const std::string wire = "\xEF\xBB\xBF{\"a\":1}\r\n\r\n\n{\"b\":2}\r\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        CHECK(records_in_steps(wire, step) == Records{"{\"a\":1}", "{\"b\":2}"});
    }
}

}  // namespace infergate::framing

namespace infergate::framing {

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
