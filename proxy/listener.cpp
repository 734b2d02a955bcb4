#include "proxy/listener.hpp"

#include <sys/socket.h>

#include "proxy/log.hpp"
#include "proxy/session.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

// Under a flood every accepted connection could log: one line per interval at most, with the
// number of events since the last one.
constexpr auto kReportInterval = std::chrono::seconds(5);

bool report_due(Listener::Report& r) {
    ++r.count;
    const auto now = std::chrono::steady_clock::now();
    if (r.last != std::chrono::steady_clock::time_point{} && now - r.last < kReportInterval) {
        return false;
    }
    r.last = now;
    return true;
}

std::string times(Listener::Report& r) {
    const uint64_t n = r.count;
    r.count = 0;
    return n <= 1 ? std::string() : " (" + std::to_string(n) + " times since the last report)";
}

}  // namespace

Listener::Listener(Worker& worker, const tcp::endpoint& endpoint, ListenerKind kind,
                   beast::error_code& ec)
    : worker_(worker), acceptor_(worker.io()), kind_(kind) {
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) {
        return;
    }
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    // One acceptor per worker on the same port: the kernel spreads connections across them.
    const int one = 1;
    ::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    acceptor_.bind(endpoint, ec);
    if (ec) {
        return;
    }
    acceptor_.listen(4096, ec);
}

tcp::endpoint Listener::local_endpoint() const {
    beast::error_code ec;
    return acceptor_.local_endpoint(ec);
}

void Listener::start() { net::co_spawn(worker_.io(), accept_loop(), net::detached); }

void Listener::close() {
    beast::error_code ec;
    acceptor_.close(ec);
}

Task<void> Listener::accept_loop() {
    Timer backoff(worker_.io());
    ConnectionBudget& budget = worker_.connections();
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_nothrow);
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) {
            co_return;
        }
        if (ec) {
            // Out of file descriptors (EMFILE, ENFILE) and the like: the connection waits in the
            // backlog. Free a descriptor if an idle connection holds one, and back off instead
            // of spinning on an accept that fails at once.
            const bool shed = (ec == net::error::no_descriptors || ec.value() == ENFILE) &&
                              worker_.shed_oldest_idle();
            if (report_due(accept_failed_)) {
                log::warn("accept failed: " + ec.message() + times(accept_failed_) +
                          "; open client connections: " +
                          std::to_string(budget.open.load(std::memory_order_relaxed)) +
                          ", limits.max_connections: " + std::to_string(budget.cap) +
                          (shed ? "; closed the oldest idle connection" : "") +
                          "; retrying in 100 ms (raise the file descriptor limit, ulimit -n, or "
                          "lower limits.max_connections)");
            }
            backoff.expires_after(std::chrono::milliseconds(100));
            co_await backoff.async_wait(use_nothrow);
            continue;
        }
        bool refuse = false;
        if (budget.open.load(std::memory_order_relaxed) >= budget.cap) {
            // At the cap: an idle keep-alive connection gives way to the new one; when every
            // connection is busy, the new one is told so (503) rather than left unanswered. A
            // refusal holds its descriptor for a moment only, but a flood of them must not use
            // the headroom kept for upstream connections: past a margin, close at once.
            if (worker_.shed_oldest_idle()) {
                if (report_due(shed_)) {
                    log::warn("connection limit of " + std::to_string(budget.cap) +
                              " reached (limits.max_connections): closed the oldest idle "
                              "connection to accept a new one" +
                              times(shed_));
                }
            } else {
                const bool answer =
                    budget.open.load(std::memory_order_relaxed) < budget.cap + budget.cap / 16 + 16;
                if (report_due(refused_)) {
                    log::warn("connection limit of " + std::to_string(budget.cap) +
                              " reached (limits.max_connections) and no connection is idle: "
                              "new connections get 503" +
                              times(refused_));
                }
                if (!answer) {
                    beast::error_code cec;
                    socket.close(cec);
                    continue;
                }
                refuse = true;
            }
        }
        auto session = std::make_shared<Session>(worker_, std::move(socket), kind_, refuse);
        net::co_spawn(worker_.io(), session->run(session), net::detached);
    }
}

}  // namespace infergate
