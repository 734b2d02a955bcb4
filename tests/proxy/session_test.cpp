#include <doctest/doctest.h>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <string>

#include "proxy/session.hpp"

using infergate::rejection_body;
using infergate::valid_utf8;
using infergate::canonical::Dialect;

namespace {

// Parses `body` as JSON that must also be valid UTF-8 (RFC 8259 §8.1): what a strict client
// (Python's json.loads on bytes, serde_json, Go's encoding/json) accepts.
rapidjson::Document strict_parse(const std::string& body) {
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseValidateEncodingFlag>(body.data(), body.size());
    INFO("body: " << body);
    INFO("error: " << rapidjson::GetParseError_En(doc.GetParseError()));
    REQUIRE_FALSE(doc.HasParseError());
    return doc;
}

}  // namespace

TEST_CASE("valid_utf8 keeps well-formed text and replaces each bad byte with U+FFFD") {
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(valid_utf8("plain ascii") == "plain ascii");
    CHECK(valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") ==
          "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK(valid_utf8("a\xFF"
                     "b") == "a" + fffd + "b");  // never valid
    CHECK(valid_utf8("a\x80"
                     "b") == "a" + fffd + "b");  // stray continuation
    CHECK(valid_utf8("a\xC3") == "a" + fffd);    // truncated at the end
    CHECK(valid_utf8("\xE2\x82"
                     "x") == fffd + fffd + "x");                         // truncated in the middle
    CHECK(valid_utf8("\xC0\x80") == fffd + fffd);                        // overlong NUL
    CHECK(valid_utf8("\xE0\x80\xAF") == fffd + fffd + fffd);             // overlong '/'
    CHECK(valid_utf8("\xED\xA0\x80") == fffd + fffd + fffd);             // a surrogate
    CHECK(valid_utf8("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // above U+10FFFF
    CHECK(valid_utf8(std::string("nul\0in", 6)) == std::string("nul\0in", 6));
}

TEST_CASE("a rejection that quotes control characters or invalid UTF-8 is still JSON") {
    static const char kQuoted[] = "Transfer-Encoding: gzip\x01\t\"\\\x7F\xFF\xC3 \0x";
    const std::string quoted(kQuoted, sizeof kQuoted - 1);
    for (const Dialect d :
         {Dialect::openai_chat, Dialect::openai_completions, Dialect::anthropic,
          Dialect::ollama_generate, Dialect::tgi, Dialect::llamacpp, Dialect::sglang}) {
        CAPTURE(infergate::canonical::to_string(d));
        const std::string body = rejection_body(400, quoted, d);
        const rapidjson::Document doc = strict_parse(body);
        CHECK(doc.IsObject());
        // The client's bytes survive where they were valid: the control characters escaped.
        CHECK(body.find("gzip\\u0001\\t\\\"\\\\") != std::string::npos);
        CHECK(body.find("\xEF\xBF\xBD") != std::string::npos);
    }
}

TEST_CASE("a rejection is written in the client's dialect") {
    const rapidjson::Document openai =
        strict_parse(rejection_body(413, "too large", Dialect::openai_chat));
    REQUIRE(openai.HasMember("error"));
    CHECK(openai["error"].IsObject());
    const rapidjson::Document anthropic =
        strict_parse(rejection_body(413, "too large", Dialect::anthropic));
    REQUIRE(anthropic.HasMember("type"));
    CHECK(std::string(anthropic["type"].GetString()) == "error");
    const rapidjson::Document ollama =
        strict_parse(rejection_body(413, "too large", Dialect::ollama_chat));
    REQUIRE(ollama.HasMember("error"));
    CHECK(std::string(ollama["error"].GetString()) == "too large");
}
