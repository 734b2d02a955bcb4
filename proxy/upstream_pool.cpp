#include "proxy/upstream_pool.hpp"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>

namespace infergate {

UpstreamConnection::UpstreamConnection(Executor executor, Deadlines& deadlines,
                                       net::ssl::context* tls)
    : deadline_(deadlines) {
    // Beast reads into the buffer's free capacity: with room for a typical response header and
    // a few stream events, one read takes what the backend wrote (pooled connections are few).
    buffer_.reserve(8 * 1024);
    if (tls != nullptr) {
        tls_.emplace(executor, *tls);
    } else {
        tcp_.emplace(executor);
    }
    deadline_.attach(tcp().socket());
}

Task<beast::error_code> UpstreamConnection::connect(const Resolver::results_type& endpoints,
                                                    const std::string& sni_host,
                                                    std::chrono::milliseconds timeout) {
    deadline_.arm(timeout);
    auto [cec, endpoint] = co_await tcp().async_connect(endpoints, use_nothrow);
    beast::error_code ec = deadline_.settle(cec);
    if (ec) {
        co_return ec;
    }
    tcp().socket().set_option(tcp::no_delay(true), ec);
    if (tls_) {
        if (!SSL_set_tlsext_host_name(tls_->native_handle(), sni_host.c_str())) {
            co_return beast::error_code(static_cast<int>(::ERR_get_error()),
                                        net::error::get_ssl_category());
        }
        tls_->set_verify_callback(net::ssl::host_name_verification(sni_host));
        deadline_.arm(timeout);
        auto [hec] = co_await tls_->async_handshake(net::ssl::stream_base::client, use_nothrow);
        if (auto e = deadline_.settle(hec)) {
            co_return e;
        }
    }
    co_return beast::error_code{};
}

void UpstreamConnection::close() {
    beast::error_code ec;
    auto& socket = tcp().socket();
    if (socket.is_open()) {
        socket.shutdown(Socket::shutdown_both, ec);
        socket.close(ec);
    }
}

namespace {

// Whether an idle keep-alive connection can carry a request: the backend has neither closed it
// (recv sees EOF), reset it (an error) nor written anything since its last response (stray
// bytes: out of step, or a TLS alert before a close). Servers close idle connections after a few
// seconds (uvicorn: 5 s) and a restarted backend has closed them all. A request sent on such a
// connection would fail after its write, when it may no longer be retried (the backend may have
// acted on it), so every reuse is checked, however briefly the connection was idle: one
// non-blocking recv. ioctl(FIONREAD) cannot tell: it says 0 bytes both for an open connection and
// for one the backend closed.
bool quiet(UpstreamConnection& c) {
    char byte = 0;
    const ssize_t r = ::recv(c.tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

UpstreamPool::UpstreamPool(Executor executor, Deadlines& deadlines, config::Backend backend,
                           net::ssl::context* tls, std::optional<net::ip::address> ip)
    : executor_(executor),
      deadlines_(deadlines),
      backend_(std::move(backend)),
      tls_(tls),
      resolver_(executor),
      ip_(std::move(ip)) {}

Task<std::unique_ptr<UpstreamConnection>> UpstreamPool::acquire(beast::error_code& error,
                                                                bool& reused, bool fresh) {
    error = {};
    while (!fresh && !idle_.empty()) {
        std::unique_ptr<UpstreamConnection> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->is_open() && quiet(*c)) {
            reused = true;
            co_return c;
        }
        c->close();
    }
    reused = false;
    if (!endpoints_ && ip_) {
        endpoints_ =
            Resolver::results_type::create(tcp::endpoint(*ip_, backend_.url.port),
                                           backend_.url.host, std::to_string(backend_.url.port));
    }
    if (!endpoints_) {
        auto [ec, results] = co_await resolver_.async_resolve(
            backend_.url.host, std::to_string(backend_.url.port), use_nothrow);
        if (ec) {
            error = ec;
            co_return nullptr;
        }
        endpoints_ = std::move(results);
    }
    auto c = std::make_unique<UpstreamConnection>(executor_, deadlines_, tls_);
    error = co_await c->connect(*endpoints_, backend_.url.host,
                                std::chrono::milliseconds(backend_.timeouts.connect_ms));
    if (error) {
        endpoints_.reset();  // resolve again next time (DNS may have moved)
        co_return nullptr;
    }
    co_return c;
}

void UpstreamPool::release(std::unique_ptr<UpstreamConnection> connection) {
    if (!connection || !connection->is_open()) {
        return;
    }
    if (connection->buffer().size() != 0) {
        // Bytes after the response it was read for: the connection is out of step.
        connection->close();
        return;
    }
    if (retired_ || static_cast<int>(idle_.size()) >= backend_.max_idle_connections) {
        connection->close();
        return;
    }
    connection->deadline().disarm();
    idle_.push_back(std::move(connection));
}

void UpstreamPool::retire() {
    retired_ = true;
    for (auto& c : idle_) {
        c->close();
    }
    idle_.clear();
}

}  // namespace infergate
