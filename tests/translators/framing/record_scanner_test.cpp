// translators/framing/scanners.cpp: RecordScanner's NDJSON and NUL-delimited records.

#include "tests/translators/framing/test_util.hpp"

namespace infergate::framing {

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

TEST_CASE("framing/records: a BOM, CRLF and blank lines, split at every byte") {
    const std::string wire = "\xEF\xBB\xBF{\"a\":1}\r\n\r\n\n{\"b\":2}\r\n";
    for (size_t step = 1; step <= wire.size(); ++step) {
        CAPTURE(step);
        CHECK(records_in_steps(wire, step) == Records{"{\"a\":1}", "{\"b\":2}"});
    }
}

}  // namespace infergate::framing
