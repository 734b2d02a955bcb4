#include "proxy/upstream_parser.hpp"

#include <doctest/doctest.h>

#include <array>
#include <optional>
#include <string>

namespace infergate {
namespace {

// A connected loopback pair: the test writes the backend's bytes on `backend`, read_final_head
// reads them on `proxy`.
struct Wire {
    net::io_context io;
    Acceptor acceptor{io, tcp::endpoint(net::ip::address_v4::loopback(), 0)};
    Socket proxy{io};
    Socket backend{io};
    beast::flat_buffer buffer;
    Wire() {
        proxy.connect(acceptor.local_endpoint());
        acceptor.accept(backend);
    }
};

template <class Parser>
Task<void> read_head(Socket& s, beast::flat_buffer& buffer, std::optional<Parser>& parser,
                     std::optional<beast::error_code>& result) {
    result =
        co_await read_final_head(s, buffer, parser, [](Parser& p) { p.body_limit(boost::none); });
}

// Writes `first`, lets the reader take it (and wait for more), then writes `second`: the bytes
// reach read_final_head split exactly there. Returns its result.
template <class Parser>
beast::error_code head_in_two_writes(Wire& w, std::optional<Parser>& parser, std::string_view first,
                                     std::string_view second) {
    std::optional<beast::error_code> result;
    if (!first.empty()) {
        net::write(w.backend, net::buffer(first.data(), first.size()));
    }
    net::co_spawn(w.io, read_head(w.proxy, w.buffer, parser, result), net::detached);
    w.io.poll();
    if (!second.empty()) {
        net::write(w.backend, net::buffer(second.data(), second.size()));
    }
    w.io.run();
    w.io.restart();
    REQUIRE(result.has_value());
    return *result;
}

// The body after a head read_final_head returned: what the buffer holds, then the socket.
std::string body_after_head(Wire& w, UpstreamResponseParser& p) {
    std::string body;
    std::array<char, 64> out;
    while (!p.is_done()) {
        if (w.buffer.size() == 0) {
            beast::error_code ec;
            const size_t n = w.proxy.read_some(w.buffer.prepare(4096), ec);
            REQUIRE_FALSE(ec);
            w.buffer.commit(n);
        }
        p.set_output(out.data(), out.size());
        beast::error_code ec;
        const size_t used = p.put(w.buffer.data(), ec);
        w.buffer.consume(used);
        body.append(out.data(), p.filled());
        REQUIRE((!ec || ec == http::error::need_more || ec == http::error::need_buffer));
    }
    return body;
}

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

TEST_CASE("upstream parser: the Content-Encoding that is not identity") {
    auto encoding = [](std::string_view fields) {
        UpstreamResponseParser p;
        parse(p, "HTTP/1.1 200 OK\r\n" + std::string(fields) + "Content-Length: 0\r\n\r\n", 8);
        REQUIRE(p.is_done());
        return std::string(p.content_encoding());
    };
    CHECK(encoding("") == "");
    CHECK(encoding("Content-Encoding: identity\r\n") == "");
    CHECK(encoding("content-encoding: IDENTITY , identity\r\n") == "");
    CHECK(encoding("Content-Encoding: gzip\r\n") == "gzip");
    CHECK(encoding("Content-Encoding: identity, br\r\n") == "identity, br");
    CHECK(encoding("Content-Encoding: identity\r\nContent-Encoding: zstd\r\n") == "zstd");
    CHECK(encoding("Content-Encoding: deflate\r\nContent-Encoding: gzip\r\n") == "deflate");
}

TEST_CASE("upstream parser: obs-fold and odd whitespace in a kept header value") {
    UpstreamResponseParser p;
    parse(p,
          "HTTP/1.1 200 OK\r\nContent-Type:\t application/json;\r\n charset=utf-8 \t\r\n"
          "X-Prompt-Tokens:   7\r\nContent-Length: 0\r\n\r\n",
          8);
    REQUIRE(p.is_done());
    CHECK(p.content_type().find_first_of("\r\n") == std::string_view::npos);
    CHECK(p.content_type().starts_with("application/json;"));
    CHECK(p.content_type().ends_with("charset=utf-8"));
    CHECK(p.prompt_tokens() == "7");
}

// RFC 9110 §15.2: interim responses before the final one are read and dropped, each into a
// parser of its own (a 103's headers are not the final response's), wherever the bytes split,
// and nothing after the final response is consumed: the connection stays in step.
constexpr std::string_view kInterimThenFinal =
    "HTTP/1.1 100 Continue\r\n\r\n"
    "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nContent-Type: text/html\r\n"
    "X-Prompt-Tokens: 99\r\nContent-Length: 5\r\n\r\n"
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
    "{\"a\":\"one\"}";
constexpr std::string_view kNextResponse = "HTTP/1.1 204 No Content\r\n\r\n";

TEST_CASE("read_final_head: 1xx responses skipped, split at every byte") {
    const std::string wire = std::string(kInterimThenFinal) + std::string(kNextResponse);
    for (size_t split = 0; split <= kInterimThenFinal.size(); ++split) {
        CAPTURE(split);
        Wire w;
        std::optional<UpstreamResponseParser> parser;
        const auto ec = head_in_two_writes(w, parser, std::string_view(wire).substr(0, split),
                                           std::string_view(wire).substr(split));
        REQUIRE_FALSE(ec);
        CHECK(parser->status() == 200);
        CHECK(parser->content_type() == "application/json");
        CHECK(parser->prompt_tokens().empty());
        CHECK(body_after_head(w, *parser) == "{\"a\":\"one\"}");
        CHECK(parser->keep_alive());
        // The next response on the connection is read whole, as the next request would.
        const auto next = head_in_two_writes(w, parser, {}, {});
        REQUIRE_FALSE(next);
        CHECK(parser->status() == 204);
        CHECK(w.buffer.size() == 0);
    }
}

TEST_CASE("read_final_head: the probe's Beast parser skips them too") {
    Wire w;
    std::optional<http::response_parser<http::string_body>> parser;
    const auto ec = head_in_two_writes(w, parser, kInterimThenFinal.substr(0, 40),
                                       kInterimThenFinal.substr(40));
    REQUIRE_FALSE(ec);
    CHECK(parser->get().result_int() == 200);
    CHECK(parser->get()[http::field::link].empty());
    beast::error_code rec;
    http::read(w.proxy, w.buffer, *parser, rec);
    REQUIRE_FALSE(rec);
    CHECK(parser->get().body() == "{\"a\":\"one\"}");
}

TEST_CASE("read_final_head: 101 Switching Protocols is an error, a final head alone is read") {
    {
        Wire w;
        std::optional<UpstreamResponseParser> parser;
        const auto ec = head_in_two_writes(
            w, parser, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n", "\r\n");
        CHECK(ec == UpstreamErrc::switching_protocols);
        CHECK(ec.message().find("101") != std::string::npos);
    }
    {
        Wire w;
        std::optional<UpstreamResponseParser> parser;
        const auto ec = head_in_two_writes(w, parser, "HTTP/1.1 404 Not Found\r\n",
                                           "Content-Length: 0\r\n\r\n");
        REQUIRE_FALSE(ec);
        CHECK(parser->status() == 404);
        CHECK(parser->is_done());
    }
    {
        Wire w;  // the backend closes before any byte: end_of_stream, as a stale connection
        std::optional<UpstreamResponseParser> parser;
        w.backend.close();
        CHECK(head_in_two_writes(w, parser, {}, {}) == http::error::end_of_stream);
    }
}

}  // namespace infergate
