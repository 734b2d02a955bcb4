#include "proxy/disconnect_watch.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "proxy/upstream_pool.hpp"

namespace infergate {

struct DisconnectWatch::State {
    Socket& socket;
    beast::flat_buffer& pending;
    size_t max_pending;
    bool active = false;
    bool waiting = false;  // a wait is pending on the socket
    bool gone = false;
    uint64_t generation = 0;  // a handler of an earlier start() ignores what it sees
    UpstreamConnection* conn = nullptr;
};

namespace {

using StatePtr = std::shared_ptr<DisconnectWatch::State>;

void arm(const StatePtr& s);

// The socket is readable: read what is there (a pipelined request, kept) and wait again, or
// note that the client left (end of stream or an error) and close the backend's connection.
void on_readable(const StatePtr& s) {
    for (;;) {
        const size_t room = s->max_pending - std::min(s->max_pending, s->pending.size());
        if (room == 0) {
            return;  // enough queued: the rest waits in the kernel for the session's own read
        }
        const auto buf = s->pending.prepare(std::min<size_t>(room, 16 * 1024));
        const ssize_t r = ::recv(s->socket.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
        if (r > 0) {
            s->pending.commit(static_cast<size_t>(r));
            continue;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            arm(s);
            return;
        }
        s->gone = true;
        if (s->conn != nullptr) {
            s->conn->close();  // the backend stops generating for nobody
        }
        return;
    }
}

void arm(const StatePtr& s) {
    s->waiting = true;
    s->socket.async_wait(Socket::wait_read, [s, generation = s->generation](beast::error_code ec) {
        if (s->generation == generation) {
            s->waiting = false;
        }
        if (ec || !s->active || s->generation != generation) {
            return;
        }
        on_readable(s);
    });
}

}  // namespace

DisconnectWatch::DisconnectWatch(Socket& socket, beast::flat_buffer& pending, size_t max_pending)
    : state_(std::make_shared<State>(State{socket, pending, max_pending})) {}

DisconnectWatch::~DisconnectWatch() {
    stop();
}

void DisconnectWatch::start() {
    State& s = *state_;
    ++s.generation;
    s.active = true;
    s.gone = false;
    s.conn = nullptr;
    arm(state_);
}

void DisconnectWatch::stop() {
    State& s = *state_;
    s.active = false;
    s.conn = nullptr;
    if (s.waiting) {
        s.waiting = false;
        ++s.generation;
        beast::error_code ec;
        s.socket.cancel(ec);  // ends the pending wait; nothing else is pending now
    }
}

bool DisconnectWatch::client_gone() const {
    return state_->gone;
}

void DisconnectWatch::attach(UpstreamConnection* conn) {
    if (state_->active) {
        state_->conn = conn;
    }
}

}  // namespace infergate
