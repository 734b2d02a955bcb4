// Accepts connections and runs one session coroutine per connection.
//
// Threading: N io_contexts, each run by one thread and owning its own SO_REUSEPORT acceptor, so a
// connection lives on exactly one thread and nothing on the request path is shared or locked.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "emulator/options.hpp"
#include "emulator/replica.hpp"

namespace infergate::emulator {

class Server {
public:
    explicit Server(Options options);
    ~Server();

    // Binds and listens on every acceptor; returns the port actually bound (port 0 = ephemeral).
    // Throws boost::system::system_error when the address cannot be bound.
    std::uint16_t bind();
    // Serves until SIGINT/SIGTERM or stop(); blocks the calling thread, which runs context 0.
    void run();
    // Thread-safe.
    void stop();

private:
    Options options_;
    std::unique_ptr<Replica> replica_;  // shared by every context's sessions
    std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
    std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
};

}  // namespace infergate::emulator
