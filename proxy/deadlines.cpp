#include "proxy/deadlines.hpp"

#include <algorithm>

namespace infergate {

Deadline::Deadline(Deadlines& owner, Socket* socket) : owner_(owner), socket_(socket) {
    owner_.link(this);
}

Deadline::~Deadline() {
    owner_.unlink(this);
}

void Deadlines::link(Deadline* d) {
    d->prev_ = nullptr;
    d->next_ = head_;
    if (head_ != nullptr) {
        head_->prev_ = d;
    }
    head_ = d;
}

void Deadlines::unlink(Deadline* d) {
    if (d->prev_ != nullptr) {
        d->prev_->next_ = d->next_;
    } else {
        head_ = d->next_;
    }
    if (d->next_ != nullptr) {
        d->next_->prev_ = d->prev_;
    }
    d->prev_ = d->next_ = nullptr;
}

std::chrono::milliseconds Deadlines::tick_for(std::chrono::milliseconds shortest) {
    return std::clamp(shortest / 8, std::chrono::milliseconds(5), std::chrono::milliseconds(250));
}

void Deadlines::start(Executor executor, std::chrono::milliseconds tick) {
    tick_ = tick;
    timer_.emplace(std::move(executor));
    ticking_ = false;
}

void Deadlines::schedule() {
    ticking_ = true;
    timer_->expires_after(tick_);
    // The handler runs with an error when the timer is destroyed (stop()): `this` may be gone
    // then and is not touched.
    timer_->async_wait([this](beast::error_code ec) {
        if (!ec) {
            on_tick();
        }
    });
}

void Deadlines::on_tick() {
    ticking_ = false;
    const auto now = Deadline::clock::now();
    bool armed = false;
    for (Deadline* d = head_; d != nullptr; d = d->next_) {
        if (d->due_ == Deadline::clock::time_point::max()) {
            continue;
        }
        if (d->due_ <= now) {
            // cancel() only queues the aborted completions: nothing runs (or unlinks) here.
            d->due_ = Deadline::clock::time_point::max();
            d->expired_ = true;
            if (d->socket_ != nullptr && d->socket_->is_open()) {
                beast::error_code ignored;
                d->socket_->cancel(ignored);
            }
            continue;
        }
        armed = true;
    }
    if (armed && timer_) {
        schedule();
    }
}

}  // namespace infergate
