#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "translators/canonical/json.hpp"

namespace json = infergate::json;

TEST_CASE("json::parse: small and large bodies parse alike, strings unescaped") {
    for (size_t pad : {size_t{0}, size_t{10000}}) {  // inline text buffer, then the heap spill
        const std::string body = R"({"a":"x\ny\u00e9","pad":")" + std::string(pad, 'p') +
                                 R"(","n":[1,2.5,{"k":true}]})";
        json::Document doc;
        REQUIRE_FALSE(json::parse(body, doc));
        CHECK(json::view(*json::find(doc, "a")) == "x\ny\xc3\xa9");
        CHECK(json::view(*json::find(doc, "pad")).size() == pad);
        CHECK((*json::find(doc, "n"))[2]["k"].GetBool());
    }
}

TEST_CASE("json::parse: the caller's text is not modified (the document parses its own copy)") {
    const std::string body = R"({"s":"a\tb"})";
    const std::string before = body;
    json::Document doc;
    REQUIRE_FALSE(json::parse(std::string_view(body), doc));
    CHECK(body == before);
}

TEST_CASE("json::parse: nesting beyond the limit is refused, at the limit accepted") {
    auto nested = [](int depth) {
        return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
    };
    json::Document ok;
    CHECK_FALSE(json::parse(nested(json::kMaxDepth), ok));
    json::Document deep;
    auto err = json::parse(nested(json::kMaxDepth + 1), deep);
    REQUIRE(err);
    CHECK(err->message.find("nested deeper than 64") != std::string::npos);
    // Many brackets inside strings do not count as nesting.
    json::Document strings;
    CHECK_FALSE(json::parse(R"({"s":")" + std::string(200, '[') + R"("})", strings));
}

TEST_CASE("json::parse: errors say where; trailing data and embedded NUL are refused") {
    json::Document a;
    auto e = json::parse(R"({"a":1,})", a);
    REQUIRE(e);
    CHECK(e->message.find("at offset 7") != std::string::npos);
    json::Document b;
    CHECK(json::parse(R"({"a":1} x)", b));
    json::Document c;
    CHECK(json::parse(std::string_view("{\"a\":\"x\0y\"}", 11), c));
    // A second value that ends like the first, and a NUL after the value with more behind it.
    for (const std::string_view trailing :
         {std::string_view(R"({"a":1} {"b":2})"), std::string_view(R"({"a":"\"}"} })"),
          std::string_view("{\"a\":1}\0{}", 10), std::string_view(R"([1] [2])")}) {
        CAPTURE(trailing);
        json::Document t;
        auto err = json::parse(trailing, t);
        REQUIRE(err);
        CHECK(err->message.find("unexpected data after the end") != std::string::npos);
    }
    json::Document spaced;
    CHECK_FALSE(json::parse(" {\"a\" : \"\\u00e9\"}\r\n\t ", spaced));
    json::Document d;
    auto empty = json::parse("  ", d);
    REQUIRE(empty);
    CHECK(empty->message.find("empty") != std::string::npos);
}

namespace {

// JSON string escaping as RapidJSON's Writer does it, one byte at a time: the reference the bulk
// path must match.
std::string reference_escape(std::string_view s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    return out + "\"";
}

}  // namespace

TEST_CASE("json::Writer: strings are escaped exactly, specials at every offset of a 16-byte run") {
    std::string text;
    for (int c = 0; c < 256; ++c) {
        text += static_cast<char>(c);  // every byte value once (UTF-8 bytes pass through)
    }
    std::vector<std::string> cases = {"", "plain", text, std::string(1000, 'x')};
    for (const char special : {'"', '\\', '\n', '\x01', '\x1f'}) {
        for (size_t at = 0; at < 40; ++at) {
            std::string s(40, 'a');
            s[at] = special;
            cases.push_back(s);
        }
    }
    for (const auto& s : cases) {
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        json::string(w, s);
        CHECK(out == reference_escape(s));
    }
    // Inside a document: the writer's commas and keys are unaffected.
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "a\"b");
    json::string(w, std::string(20, 'y') + "\"");
    json::key(w, "n");
    w.Int(1);
    w.EndObject();
    CHECK(out == R"({"a\"b":"yyyyyyyyyyyyyyyyyyyy\"","n":1})");
}
