#pragma once
// Operation timeouts without a timer per operation.
//
// A Beast timer armed around every read and write costs a timer-queue insertion, a cancellation,
// an allocation and often a timerfd_settime, for a timeout that almost never fires. Instead each
// socket with timed operations has a Deadline (a time point), and one periodic walk per worker
// (Deadlines) cancels the socket whose pending operation is overdue; the operation then completes
// with operation_aborted, which Deadline::settle() reports as beast::error::timeout. Arming a
// deadline is a clock read and a store. The price: a timeout fires up to one tick late (the tick
// is an eighth of the shortest configured timeout, between 5 and 250 ms).

#include <chrono>
#include <optional>

#include "proxy/net.hpp"

namespace infergate {

class Deadlines;

// The deadline of the operation pending on one socket (one at a time per direction is the
// caller's business: a read and a write on the same socket share it, as Beast's did).
class Deadline {
public:
    using clock = std::chrono::steady_clock;

    explicit Deadline(Deadlines& owner, Socket* socket = nullptr);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

    // The socket cancelled when the deadline passes.
    void attach(Socket& socket) { socket_ = &socket; }

    // The next operation must complete within `d` (from now) or by `due`.
    void arm(std::chrono::milliseconds d) { arm_at(clock::now() + d); }
    void arm_at(clock::time_point due);
    void disarm() { due_ = clock::time_point::max(); }

    // Call with the result of the operation the deadline covered: an operation aborted by an
    // overdue deadline becomes beast::error::timeout. Disarms.
    beast::error_code settle(beast::error_code ec) {
        due_ = clock::time_point::max();
        if (expired_) {
            expired_ = false;
            if (ec == net::error::operation_aborted) {
                return beast::error::timeout;
            }
        }
        return ec;
    }

private:
    friend class Deadlines;
    Deadlines& owner_;
    Socket* socket_;
    clock::time_point due_ = clock::time_point::max();
    bool expired_ = false;
    Deadline* prev_ = nullptr;
    Deadline* next_ = nullptr;
};

// The deadlines of one io_context (one worker), checked by one periodic timer that runs only
// while some deadline is armed. Single-threaded, like everything a worker owns.
class Deadlines {
public:
    Deadlines() = default;
    Deadlines(const Deadlines&) = delete;
    Deadlines& operator=(const Deadlines&) = delete;
    ~Deadlines() { stop(); }

    // Creates the timer on `executor`; `tick` is how often armed deadlines are checked.
    void start(Executor executor, std::chrono::milliseconds tick);
    // Destroys the timer (before its io_context goes away); deadlines stay registered but are
    // no longer checked.
    void stop() { timer_.reset(); }

    // The tick for a set of timeouts: an eighth of the shortest, between 5 and 250 ms.
    static std::chrono::milliseconds tick_for(std::chrono::milliseconds shortest);

    std::chrono::milliseconds tick() const { return tick_; }
    // A reload's timeouts: from the next tick on.
    void set_tick(std::chrono::milliseconds tick) { tick_ = tick; }

private:
    friend class Deadline;
    void link(Deadline* d);
    void unlink(Deadline* d);
    void armed() {
        if (!ticking_ && timer_) {
            schedule();
        }
    }
    void schedule();
    void on_tick();

    std::optional<Timer> timer_;
    std::chrono::milliseconds tick_{250};
    Deadline* head_ = nullptr;
    bool ticking_ = false;
};

inline void Deadline::arm_at(clock::time_point due) {
    due_ = due;
    expired_ = false;
    owner_.armed();
}

}  // namespace infergate
