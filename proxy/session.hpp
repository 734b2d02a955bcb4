#pragma once
// One downstream connection: owns the socket, the read buffer and the request parser, and runs
// its exchanges one after another (HTTP/1.1 keep-alive). Lives on one worker thread.

#include <list>
#include <memory>

#include "proxy/deadlines.hpp"
#include "proxy/net.hpp"

namespace infergate {

class Worker;

class Session {
public:
    Session(Worker& worker, Socket socket);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // `self` keeps the session alive for as long as the coroutine runs.
    Task<void> run(std::shared_ptr<Session> self);
    // Shutdown: close the connection now if it is waiting for a request.
    void close_if_idle();

private:
    Task<void> linger();
    Task<void> reject(http::status status, std::string message, unsigned version);

    Worker& worker_;
    Stream stream_;
    Deadline deadline_;  // of the client socket's reads (here) and writes (the exchange's)
    beast::flat_buffer buffer_;
    std::list<Session*>::iterator registration_;
    std::string peer_;
    bool idle_ = true;
};

}  // namespace infergate
