#pragma once
// Accepts connections for one worker (one acceptor per worker, SO_REUSEPORT) and starts a
// Session for each. Lives on its worker's thread.

#include <chrono>
#include <cstdint>
#include <memory>

#include "proxy/net.hpp"
#include "proxy/router.hpp"

namespace infergate {

class Worker;

class Listener {
public:
    // `kind`: which routes its connections are served (router.hpp).
    Listener(Worker& worker, const tcp::endpoint& endpoint, ListenerKind kind,
             beast::error_code& ec);
    tcp::endpoint local_endpoint() const;
    void start();
    void close();

    // A rate-limited log line: when it was last written, and the events since.
    struct Report {
        std::chrono::steady_clock::time_point last{};
        uint64_t count = 0;
    };

private:
    Task<void> accept_loop();

    Worker& worker_;
    Acceptor acceptor_;
    ListenerKind kind_;
    Report accept_failed_;
    Report shed_;
    Report refused_;
};

}  // namespace infergate
