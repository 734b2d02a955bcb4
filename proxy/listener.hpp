#pragma once
// Accepts connections for one worker (one acceptor per worker, SO_REUSEPORT) and starts a
// Session for each. Lives on its worker's thread.

#include <memory>

#include "proxy/net.hpp"

namespace infergate {

class Worker;

class Listener {
public:
    Listener(Worker& worker, const tcp::endpoint& endpoint, beast::error_code& ec);
    tcp::endpoint local_endpoint() const;
    void start();
    void close();

private:
    Task<void> accept_loop();

    Worker& worker_;
    Acceptor acceptor_;
};

}  // namespace infergate
