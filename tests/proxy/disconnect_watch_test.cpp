#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <string>

#include "proxy/disconnect_watch.hpp"

using infergate::DisconnectWatch;
using infergate::Socket;
namespace net = infergate::net;
namespace beast = infergate::beast;
using tcp = infergate::tcp;

namespace {

// A connected pair of sockets on the loopback interface: `client` plays the HTTP client,
// `server` the session's end.
struct Pair {
    net::io_context ctx;
    Socket client{ctx};
    Socket server{ctx};
    Pair() {
        infergate::Acceptor acceptor(ctx, tcp::endpoint(net::ip::address_v4::loopback(), 0));
        client.connect(acceptor.local_endpoint());
        acceptor.accept(server);
    }
    // Runs the context until `done` holds (or about two seconds pass).
    template <class F>
    bool run_until(F done) {
        for (int i = 0; i < 200 && !done(); ++i) {
            ctx.restart();
            ctx.run_for(std::chrono::milliseconds(10));
        }
        return done();
    }
    void send(std::string_view bytes) { net::write(client, net::buffer(bytes)); }
};

std::string text(const beast::flat_buffer& b) {
    return beast::buffers_to_string(b.data());
}

}  // namespace

TEST_CASE("DisconnectWatch keeps pipelined bytes and still notices the client leaving") {
    Pair p;
    beast::flat_buffer pending;
    DisconnectWatch watch(p.server, pending, 64 * 1024);
    watch.start();
    p.send("GET /health HTTP/1.1\r\n");
    REQUIRE(p.run_until([&] { return pending.size() == 22; }));
    p.send("Host: x\r\n\r\n");
    REQUIRE(p.run_until([&] { return pending.size() == 33; }));
    CHECK(text(pending) == "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_FALSE(watch.client_gone());
    // Before, the watch fired once, on the first bytes: this went unnoticed.
    p.client.close();
    CHECK(p.run_until([&] { return watch.client_gone(); }));
    CHECK(text(pending) == "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");  // still there
}

TEST_CASE("DisconnectWatch appends to what the session already holds") {
    Pair p;
    beast::flat_buffer pending;
    const std::string before = "POST /generate HTTP/1.1\r\n";
    net::buffer_copy(pending.prepare(before.size()), net::buffer(before));
    pending.commit(before.size());
    DisconnectWatch watch(p.server, pending, 64 * 1024);
    watch.start();
    p.send("Host: x\r\n");
    REQUIRE(p.run_until([&] { return pending.size() == before.size() + 9; }));
    CHECK(text(pending) == before + "Host: x\r\n");
}

TEST_CASE("DisconnectWatch reads no more than its bound") {
    Pair p;
    beast::flat_buffer pending;
    DisconnectWatch watch(p.server, pending, 8);
    watch.start();
    p.send("0123456789abcdef");
    REQUIRE(p.run_until([&] { return pending.size() == 8; }));
    p.ctx.restart();
    p.ctx.run_for(std::chrono::milliseconds(30));
    CHECK(text(pending) == "01234567");  // the rest stays in the socket for the session
    CHECK_FALSE(watch.client_gone());
    std::array<char, 16> rest{};
    const size_t n = p.server.read_some(net::buffer(rest));
    CHECK(std::string(rest.data(), n) == "89abcdef");
}

TEST_CASE("DisconnectWatch stops and starts again for the next exchange") {
    Pair p;
    beast::flat_buffer pending;
    DisconnectWatch watch(p.server, pending, 64 * 1024);
    watch.start();
    watch.stop();
    p.send("x");
    p.ctx.restart();
    p.ctx.run_for(std::chrono::milliseconds(30));
    CHECK(pending.size() == 0);  // not watching: the session reads it
    watch.start();
    REQUIRE(p.run_until([&] { return pending.size() == 1; }));
    p.client.shutdown(tcp::socket::shutdown_send);
    CHECK(p.run_until([&] { return watch.client_gone(); }));
    watch.stop();
    watch.start();
    CHECK_FALSE(watch.client_gone());  // each exchange starts afresh
}
