#pragma once
// Keep-alive connections to one backend. One UpstreamPool per worker thread and backend, touched
// only from that worker's io_context: no locks. Held by shared_ptr: a reload that changes the
// backend gives the worker a new pool while requests in flight finish on the old one.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "proxy/deadlines.hpp"
#include "proxy/net.hpp"

namespace infergate {

// One connection to a backend, plain TCP or TLS as the backend URL says.
class UpstreamConnection {
public:
    UpstreamConnection(Executor executor, Deadlines& deadlines, net::ssl::context* tls);

    // Connects (and handshakes) to one of `endpoints` within `timeout`.
    Task<beast::error_code> connect(const Resolver::results_type& endpoints,
                                    const std::string& sni_host, std::chrono::milliseconds timeout);

    // Calls fn(stream) with the plain or TLS stream; fn returns an awaitable.
    template <class Fn>
    auto visit(Fn&& fn) {
        return tls_ ? fn(*tls_) : fn(*tcp_);
    }

    Stream& tcp() { return tls_ ? beast::get_lowest_layer(*tls_) : *tcp_; }
    // The next operation must complete within `d`; settle() its result (see Deadline).
    void arm(std::chrono::milliseconds d) { deadline_.arm(d); }
    beast::error_code settle(beast::error_code ec) { return deadline_.settle(ec); }
    Deadline& deadline() { return deadline_; }
    // Closes the socket at once, cancelling whatever is pending (client went away, error).
    void close();
    bool is_open() { return tcp().socket().is_open(); }

    beast::flat_buffer& buffer() { return buffer_; }
    int uses = 0;  // requests sent over this connection

private:
    std::optional<Stream> tcp_;
    std::optional<beast::ssl_stream<Stream>> tls_;
    beast::flat_buffer buffer_;
    Deadline deadline_;
};

class UpstreamPool {
public:
    // `ip`: connect to this address (a replica found by DNS discovery) rather than resolving
    // the URL's host; TLS still names the host (SNI, certificate).
    UpstreamPool(Executor executor, Deadlines& deadlines, config::Backend backend,
                 net::ssl::context* tls, std::optional<net::ip::address> ip = std::nullopt);

    // An idle keep-alive connection the backend has not closed, or a new one. `error` is set
    // when connecting failed (refused, unresolvable, timed out).
    // `fresh`: a new connection even when idle ones are pooled (the retry after a pooled one
    // turned out closed during the write: the others may be closing too).
    Task<std::unique_ptr<UpstreamConnection>> acquire(beast::error_code& error, bool& reused,
                                                      bool fresh = false);
    // Returns a connection whose response was read completely and that may be reused (one with
    // bytes buffered beyond that response is closed instead).
    void release(std::unique_ptr<UpstreamConnection> connection);

    const config::Backend& backend() const { return backend_; }
    // Replaced by a reload: the idle connections close now, and the busy ones when they are
    // released (nothing new is pooled).
    void retire();

private:
    Executor executor_;
    Deadlines& deadlines_;
    const config::Backend backend_;  // a copy: a reload frees the Config it came from
    net::ssl::context* tls_;
    bool retired_ = false;
    Resolver resolver_;
    std::optional<net::ip::address> ip_;
    std::optional<Resolver::results_type> endpoints_;  // resolved once, again on failure
    std::vector<std::unique_ptr<UpstreamConnection>> idle_;
};

}  // namespace infergate
