#include "proxy/client_request.hpp"

#include <doctest/doctest.h>

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
        "POST /generate HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    CHECK(chunked.body() == "abcde");
    CHECK_FALSE(chunked.keep_alive());
    CHECK(parse("GET / HTTP/1.0\r\n\r\n").keep_alive() == false);
    CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive());
    const ClientRequest odd = parse("BREW /pot HTTP/1.1\r\n\r\n");
    CHECK(odd.method() == http::verb::unknown);
    CHECK(odd.method_string() == "BREW");
}

TEST_CASE("client request: the parser's limits still apply") {
    ClientRequestParser p;
    p.body_limit(4);
    beast::error_code ec;
    const std::string wire = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    p.put(net::buffer(wire), ec);
    CHECK(ec == http::error::body_limit);
}

}  // namespace infergate
