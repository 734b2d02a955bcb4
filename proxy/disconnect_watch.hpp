#pragma once
// Notices a client that goes away while its request is in flight (the backend generating for
// nobody), without losing what the client sends meanwhile: the bytes of a pipelined next
// request are read into the session's buffer, in order, and the watch re-arms, so that a
// disconnect after them is noticed too. One per client connection, started per exchange.

#include <cstddef>
#include <memory>

#include "proxy/net.hpp"

namespace infergate {

class UpstreamConnection;

class DisconnectWatch {
public:
    // Bytes read while watching go to the end of `pending` (the session parses them next), at
    // most `max_pending` in all; beyond that the watch stops reading (and so watching) until
    // the next start().
    DisconnectWatch(Socket& socket, beast::flat_buffer& pending, size_t max_pending);
    ~DisconnectWatch();
    DisconnectWatch(const DisconnectWatch&) = delete;
    DisconnectWatch& operator=(const DisconnectWatch&) = delete;

    // Starts watching the socket for the current exchange (nothing else may read it meanwhile).
    void start();
    // Stops watching: the pending wait is cancelled, the attached connection forgotten.
    void stop();
    // Whether the client went away since start().
    bool client_gone() const;
    // `conn` is closed the moment the client leaves, so that the backend stops at once; null
    // detaches it. Ignored when not watching.
    void attach(UpstreamConnection* conn);

    // Shared with the pending wait's handler, which may outlive this object (defined in the
    // .cpp only).
    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace infergate
