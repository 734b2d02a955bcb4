#include "proxy/deadlines.hpp"

#include <doctest/doctest.h>

#include <array>

namespace infergate {
namespace {

// A connected loopback pair (reads on `a` wait until `b` writes) and deadlines ticking every 5 ms
// on the same context.
struct Pair {
    net::io_context io;
    Acceptor acceptor{io, tcp::endpoint(net::ip::address_v4::loopback(), 0)};
    Socket a{io};
    Socket b{io};
    Deadlines deadlines;  // after io: its timer goes first
    std::array<char, 16> buf{};
    beast::error_code result = net::error::operation_aborted;
    size_t got = 0;
    bool done = false;

    Pair() {
        a.connect(acceptor.local_endpoint());
        acceptor.accept(b);
        deadlines.start(io.get_executor(), std::chrono::milliseconds(5));
    }
    // A read on `a` that must complete within `limit`; its settled result lands in `result`.
    void read_a(Deadline& d, std::chrono::milliseconds limit) {
        d.arm(limit);
        a.async_read_some(net::buffer(buf), [this, &d](beast::error_code ec, size_t n) {
            result = d.settle(ec);
            got = n;
            done = true;
        });
    }
};

}  // namespace

TEST_CASE("deadlines: the tick is an eighth of the shortest timeout, within 5..250 ms") {
    using ms = std::chrono::milliseconds;
    CHECK(Deadlines::tick_for(ms(800)) == ms(100));
    CHECK(Deadlines::tick_for(ms(10)) == ms(5));
    CHECK(Deadlines::tick_for(ms(600000)) == ms(250));
}

TEST_CASE("deadlines: an overdue read is cancelled and settles as a timeout") {
    Pair p;
    Deadline d(p.deadlines, &p.a);
    const auto t0 = Deadline::clock::now();
    p.read_a(d, std::chrono::milliseconds(20));
    p.io.run();  // returns once the read completed and the ticker, finding nothing armed, stops
    CHECK(p.done);
    CHECK(p.result == beast::error::timeout);
    CHECK(Deadline::clock::now() - t0 >= std::chrono::milliseconds(20));
}

TEST_CASE("deadlines: an operation that completes in time is not reported as a timeout") {
    Pair p;
    Deadline d(p.deadlines, &p.a);
    p.read_a(d, std::chrono::seconds(10));
    net::write(p.b, net::buffer("hello", 5));
    // The read completes first; the ticker then finds nothing armed and stops, so run() returns
    // without waiting for the 10 s deadline.
    p.io.run();
    CHECK_FALSE(p.result);
    CHECK(p.got == 5);
}

TEST_CASE("deadlines: only the overdue socket is cancelled; a disarmed one keeps waiting") {
    Pair p1;
    // Both sockets on p1's context: one deadline overdue, the other disarmed.
    Acceptor acc(p1.io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    Socket c(p1.io);
    Socket s(p1.io);
    c.connect(acc.local_endpoint());
    acc.accept(s);
    Deadline overdue(p1.deadlines, &p1.a);
    Deadline idle(p1.deadlines, &c);
    std::array<char, 16> b1;
    std::array<char, 16> b2;
    beast::error_code r1;
    beast::error_code r2 = net::error::operation_aborted;
    overdue.arm(std::chrono::milliseconds(10));
    p1.a.async_read_some(net::buffer(b1), [&](beast::error_code ec, size_t) {
        r1 = overdue.settle(ec);
        // Now let the other read finish, so that run() returns.
        net::write(s, net::buffer("x", 1));
    });
    c.async_read_some(net::buffer(b2), [&](beast::error_code ec, size_t) { r2 = idle.settle(ec); });
    p1.io.run();
    CHECK(r1 == beast::error::timeout);
    CHECK_FALSE(r2);
}

TEST_CASE("deadlines: destroying a deadline unlinks it; stop() leaves the rest unchecked") {
    net::io_context io;
    Deadlines deadlines;
    deadlines.start(io.get_executor(), std::chrono::milliseconds(5));
    auto first = std::make_unique<Deadline>(deadlines);
    Deadline second(deadlines);
    auto third = std::make_unique<Deadline>(deadlines);
    first->arm(std::chrono::milliseconds(1));
    third.reset();
    first.reset();
    second.arm(std::chrono::milliseconds(1));  // no socket attached: only marked expired
    io.run();
    CHECK(second.settle(net::error::operation_aborted) == beast::error::timeout);
    deadlines.stop();
    second.arm(std::chrono::milliseconds(1));
    io.restart();
    CHECK(io.run() == 0);  // no timer any more: nothing scheduled
}

}  // namespace infergate
