#include "proxy/listener.hpp"

#include <sys/socket.h>

#include "proxy/log.hpp"
#include "proxy/session.hpp"
#include "proxy/worker.hpp"

namespace infergate {

Listener::Listener(Worker& worker, const tcp::endpoint& endpoint, beast::error_code& ec)
    : worker_(worker), acceptor_(worker.io()) {
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
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_nothrow);
        if (ec == net::error::operation_aborted || !acceptor_.is_open()) {
            co_return;
        }
        if (ec) {
            // Out of file descriptors and the like: back off instead of spinning.
            log::warn("accept failed: " + ec.message());
            backoff.expires_after(std::chrono::milliseconds(50));
            co_await backoff.async_wait(use_nothrow);
            continue;
        }
        auto session = std::make_shared<Session>(worker_, std::move(socket));
        net::co_spawn(worker_.io(), session->run(session), net::detached);
    }
}

}  // namespace infergate
