#include "proxy/client_request.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>

namespace infergate {
namespace {

ClientRequest parse(std::string_view wire) {
    ClientRequestParser p;
    p.body_limit(1024);
    beast::error_code ec;
    while (!wire.empty() && !p.is_done()) {
        const size_t used = p.put(net::buffer(wire.data(), wire.size()), ec);
        REQUIRE((!ec || ec == http::error::need_more));
        wire.remove_prefix(used);
        if (used == 0) {
            break;
        }
    }
    REQUIRE(p.is_done());
    return p.release();
}

// Parses a request head; returns the refusal of its framing (nullopt: accepted).
std::optional<ClientRequestParser::Refusal> refusal(std::string_view head_fields,
                                                    std::string_view version = "HTTP/1.1") {
    ClientRequestParser p;
    const std::string wire = "POST /v1/completions " + std::string(version) + "\r\nHost: h\r\n" +
                             std::string(head_fields) + "\r\n" + "5\r\nhello\r\n0\r\n\r\n";
    beast::error_code ec;
    p.put(net::buffer(wire), ec);  // stops at the end of the head when the framing is refused
    auto r = p.framing_refusal(ec);
    if (!r) {
        CHECK((!ec || ec == http::error::need_more));
    } else {
        CHECK(ec);
    }
    return r;
}

}  // namespace

TEST_CASE("client request: line, headers in order, case-insensitive lookup, sized body") {
    const ClientRequest r = parse(
        "POST /v1/completions?x=1 HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc\r\n"
        "content-type: application/json\r\nx-request-id: second\r\nContent-Length: 7\r\n\r\n"
        "{\"a\":1}");
    CHECK(r.method() == http::verb::post);
    CHECK(r.method_string() == "POST");
    CHECK(r.target() == "/v1/completions?x=1");
    CHECK(r.version() == 11);
    CHECK(r.keep_alive());
    CHECK(r.body() == "{\"a\":1}");
    CHECK(r["x-request-id"] == "abc");  // the first one
    CHECK(r["X-REQUEST-ID"] == "abc");
    CHECK(r[http::field::content_type] == "application/json");
    CHECK(r["anthropic-version"].empty());
    REQUIRE(r.field_count() == 5);
    CHECK(r.field(0).name == "Host");
    CHECK(r.field(0).id == http::field::host);
    CHECK(r.field(3).name == "x-request-id");
    CHECK(r.field(3).value == "second");
    CHECK(r.field(3).id == http::field::unknown);
}

TEST_CASE("client request: a chunked body, keep-alive by version and Connection") {
    const ClientRequest chunked = parse(
        "POST /generate HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: "
        "close\r\n\r\n"
        "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    CHECK(chunked.body() == "abcde");
    CHECK_FALSE(chunked.keep_alive());
    CHECK(parse("GET / HTTP/1.0\r\n\r\n").keep_alive() == false);
    CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive());
    const ClientRequest odd = parse("BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n");
    CHECK(odd.method() == http::verb::unknown);
    CHECK(odd.method_string() == "BREW");
}

TEST_CASE("client request: the parser's limits still apply") {
    ClientRequestParser p;
    p.body_limit(4);
    beast::error_code ec;
    const std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
    p.put(net::buffer(wire), ec);
    CHECK(ec == http::error::body_limit);
}

TEST_CASE("client request: Transfer-Encoding other than a final, single chunked is refused") {
    // RFC 9112 §6.3: chunked must be the final coding, or the body's length is unknown.
    for (const std::string te :
         {"identity", "chunked, identity", "gzip", "x-unknown", "chunked;q=1", "", " , ",
          "chunked, chunked", "chunked,,chunked"}) {
        CAPTURE(te);
        const auto r = refusal("Transfer-Encoding: " + te + "\r\n");
        REQUIRE(r.has_value());
        CHECK(r->status == http::status::bad_request);
        CHECK(r->message.find("Transfer-Encoding") != std::string::npos);
        CHECK(r->message.find("Content-Length") != std::string::npos);  // what to send instead
    }
    // Two field lines are one list (RFC 9110 §5.3); Beast refuses a second line after chunked.
    for (const std::string lines :
         {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
          "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
          "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"}) {
        CAPTURE(lines);
        const auto r = refusal(lines);
        REQUIRE(r.has_value());
        CHECK(r->status == http::status::bad_request);
        CHECK(r->message.find("chunked") != std::string::npos);
    }
}

TEST_CASE("client request: Transfer-Encoding with Content-Length, in either order, is refused") {
    for (const std::string lines : {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                                    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                    "Transfer-Encoding: identity\r\nContent-Length: 5\r\n",
                                    "Content-Length: 5\r\nTransfer-Encoding: identity\r\n"}) {
        CAPTURE(lines);
        const auto r = refusal(lines);
        REQUIRE(r.has_value());
        CHECK(r->status == http::status::bad_request);
        CHECK(r->message.find("both Transfer-Encoding and Content-Length") != std::string::npos);
    }
}

TEST_CASE("client request: a coding before chunked is not implemented; HTTP/1.0 has no TE") {
    const auto gz = refusal("Transfer-Encoding: gzip, chunked\r\n");
    REQUIRE(gz.has_value());
    CHECK(gz->status == http::status::not_implemented);
    CHECK(gz->message.find("gzip") != std::string::npos);
    const auto two_lines = refusal("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n");
    REQUIRE(two_lines.has_value());
    CHECK(two_lines->status == http::status::not_implemented);
    const auto old = refusal("Transfer-Encoding: chunked\r\n", "HTTP/1.0");
    REQUIRE(old.has_value());
    CHECK(old->status == http::status::bad_request);
    CHECK(old->message.find("HTTP/1.0") != std::string::npos);
}

TEST_CASE("client request: the framings RFC 9112 allows are accepted") {
    CHECK_FALSE(refusal("Transfer-Encoding: chunked\r\n").has_value());
    CHECK_FALSE(refusal("Transfer-Encoding: Chunked\r\n").has_value());
    CHECK_FALSE(refusal("Transfer-Encoding: , chunked \r\n").has_value());  // empty elements
    CHECK_FALSE(refusal("Content-Length: 5\r\n").has_value());
    CHECK_FALSE(refusal("Content-Length: 005\r\n").has_value());
    CHECK_FALSE(refusal("Content-Length: 5, 5\r\n").has_value());
    CHECK_FALSE(refusal("").has_value());
    const ClientRequest r = parse(
        "POST /generate HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;ext=\"a b\"\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n");
    CHECK(r.body() == "abcde");
}

TEST_CASE("client request: other parse errors are no framing refusal") {
    ClientRequestParser p;
    const std::string wire = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n";
    beast::error_code ec;
    p.put(net::buffer(wire), ec);
    CHECK(ec == http::error::bad_content_length);
    CHECK_FALSE(p.framing_refusal(ec).has_value());
}

// Parses a whole head; the refusal it gets (nullopt: accepted).
std::optional<ClientRequestParser::Refusal> head_refusal(const std::string& wire) {
    ClientRequestParser p;
    beast::error_code ec;
    p.put(net::buffer(wire), ec);
    auto r = p.framing_refusal(ec);
    if (r) {
        CHECK(ec);
    } else {
        CHECK((!ec || ec == http::error::need_more));
    }
    return r;
}

TEST_CASE("client request: HTTP/1.1 needs exactly one Host; HTTP/1.0 needs none") {
    // RFC 9112 §3.2.
    const auto none = head_refusal("GET /health HTTP/1.1\r\nAccept: */*\r\n\r\n");
    REQUIRE(none.has_value());
    CHECK(none->status == http::status::bad_request);
    CHECK(none->message.find("no Host header") != std::string::npos);
    CHECK(none->message.find("send Host:") != std::string::npos);
    const auto two = head_refusal("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    REQUIRE(two.has_value());
    CHECK(two->status == http::status::bad_request);
    CHECK(two->message.find("2 Host headers") != std::string::npos);
    CHECK_FALSE(head_refusal("GET /health HTTP/1.1\r\nhost: a\r\n\r\n").has_value());
    CHECK_FALSE(head_refusal("GET /health HTTP/1.0\r\n\r\n").has_value());
    CHECK(parse("GET /health HTTP/1.0\r\n\r\n").target() == "/health");
}

TEST_CASE("client request: an absolute-form target is routed by its path and query") {
    // RFC 9112 §3.2.2: a server must accept it (clients send it to proxies).
    CHECK(parse("POST http://h:30000/v1/completions HTTP/1.1\r\nHost: h\r\n\r\n").target() ==
          "/v1/completions");
    CHECK(parse("GET HTTPS://h/v1/models?limit=2 HTTP/1.1\r\nHost: h\r\n\r\n").target() ==
          "/v1/models?limit=2");
    CHECK(parse("GET http://[::1]:8080 HTTP/1.1\r\nHost: h\r\n\r\n").target() == "/");
    CHECK(parse("GET http://h?x=1 HTTP/1.1\r\nHost: h\r\n\r\n").target() == "/?x=1");
    CHECK(parse("GET /plain HTTP/1.1\r\nHost: h\r\n\r\n").target() == "/plain");
    CHECK(parse("GET /http://h/x HTTP/1.1\r\nHost: h\r\n\r\n").target() == "/http://h/x");
}

TEST_CASE("client request: an HTTP/2 preface or any version above 1.x gets 505") {
    const auto h2c = head_refusal("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    REQUIRE(h2c.has_value());
    CHECK(h2c->status == http::status::http_version_not_supported);
    CHECK(h2c->message.find("not HTTP/2") != std::string::npos);
    const auto v3 = head_refusal("GET /health HTTP/3.0\r\nHost: h\r\n\r\n");
    REQUIRE(v3.has_value());
    CHECK(v3->status == http::status::http_version_not_supported);
    CHECK_FALSE(head_refusal("GET /health HTTP/1.1\r\nHost: h\r\n\r\n").has_value());
}

TEST_CASE("client request: a bare LF in the head gets 400 naming it, not 505 or 'bad value'") {
    // RFC 9112 §2.2 lets a server accept a bare LF; a front proxy that does not could be
    // smuggled past, so it is refused, and by name (it used to read as an HTTP version or a
    // bad value).
    const auto bare = [](const std::string& wire) {
        ClientRequestParser p;
        beast::error_code ec;
        const size_t used = p.put(net::buffer(wire), ec);
        return p.framing_refusal(ec, std::string_view(wire).substr(used));
    };
    for (const std::string wire : {"GET /health HTTP/1.1\nHost: h\n\n",
                                   "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Length: "
                                   "2\nX-A: b\r\n\r\n{}"}) {
        CAPTURE(wire);
        const auto r = bare(wire);
        REQUIRE(r.has_value());
        CHECK(r->status == http::status::bad_request);
        CHECK(r->message.find("bare LF") != std::string::npos);
        CHECK(r->message.find("CRLF") != std::string::npos);
    }
    // The HTTP/2 preface is all CRLF: still 505. A bare LF in the body is the body's business.
    const auto h2c = bare("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    REQUIRE(h2c.has_value());
    CHECK(h2c->status == http::status::http_version_not_supported);
    CHECK_FALSE(bare("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n\n\n\n").has_value());
}

}  // namespace infergate
