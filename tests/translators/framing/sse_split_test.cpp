// translators/framing/scanners.cpp: SseScanner gives the same events however the bytes are split,
// and its overflow rule does not depend on the split either.

#include "tests/translators/framing/test_util.hpp"

namespace infergate::framing {

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

}  // namespace infergate::framing
