#include "proxy/upstream_parser.hpp"

#include <doctest/doctest.h>

#include <array>
#include <string>

namespace infergate {
namespace {

// Feeds `wire` to the parser the way Beast's read loop does, draining the body through an
// output buffer of `room` bytes at a time.
std::string parse(UpstreamResponseParser& p, std::string_view wire, size_t room) {
    std::string body;
    std::array<char, 64> out;
    REQUIRE(room <= out.size());
    while (!wire.empty() && !p.is_done()) {
        p.set_output(out.data(), room);
        beast::error_code ec;
        const size_t used = p.put(net::buffer(wire.data(), wire.size()), ec);
        body.append(out.data(), p.filled());
        wire.remove_prefix(used);
        if (ec == http::error::need_buffer || ec == http::error::need_more) {
            if (used == 0 && p.filled() == 0 && ec == http::error::need_more) {
                break;
            }
            continue;
        }
        REQUIRE_FALSE(ec);
    }
    return body;
}

}  // namespace

TEST_CASE("upstream parser: status, the kept headers and a sized body in small pieces") {
    UpstreamResponseParser p;
    const std::string wire =
        "HTTP/1.1 201 Created\r\nServer: x\r\ncontent-type: application/json; charset=utf-8\r\n"
        "X-Prompt-Tokens: 12\r\nContent-Type: text/plain\r\nContent-Length: 26\r\n\r\n"
        "abcdefghijklmnopqrstuvwxyz";
    CHECK(parse(p, wire, 5) == "abcdefghijklmnopqrstuvwxyz");
    CHECK(p.is_done());
    CHECK(p.status() == 201);
    CHECK(p.content_type() == "application/json; charset=utf-8");  // the first one
    CHECK(p.prompt_tokens() == "12");
    CHECK(p.keep_alive());
}

TEST_CASE("upstream parser: a chunked body, Connection: close, absent headers are empty") {
    UpstreamResponseParser p;
    p.body_limit(boost::none);
    const std::string wire =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        "4\r\ndata\r\n5\r\n: x\n\n\r\n0\r\n\r\n";
    CHECK(parse(p, wire, 3) == "data: x\n\n");
    CHECK(p.is_done());
    CHECK(p.status() == 200);
    CHECK(p.content_type().empty());
    CHECK(p.prompt_tokens().empty());
    CHECK_FALSE(p.keep_alive());
}

TEST_CASE("upstream parser: a long header value is kept whole") {
    UpstreamResponseParser p;
    const std::string type = "text/event-stream; " + std::string(200, 'p') + "=1";
    const std::string wire =
        "HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: 0\r\n\r\n";
    parse(p, wire, 8);
    CHECK(p.is_done());
    CHECK(p.content_type() == type);
}

}  // namespace infergate
