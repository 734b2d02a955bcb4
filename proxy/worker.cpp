#include "proxy/worker.hpp"

#include <algorithm>

#include "proxy/routing.hpp"
#include "proxy/session.hpp"

namespace infergate {

namespace {

// The deadline tick for the config's timeouts (Deadlines::tick_for of the shortest).
std::chrono::milliseconds deadline_tick(const config::Config& c) {
    int64_t shortest = std::min({c.client_idle_ms, c.client_header_ms, c.client_body_ms});
    for (const config::Backend& b : c.backends) {
        const config::Timeouts& t = b.timeouts;
        shortest =
            std::min({shortest, t.connect_ms, t.first_byte_ms, t.idle_ms, b.health.timeout_ms});
        if (t.total_ms > 0) {
            shortest = std::min(shortest, t.total_ms);
        }
    }
    return Deadlines::tick_for(std::chrono::milliseconds(shortest));
}

}  // namespace

Worker::Worker(int index, std::shared_ptr<const config::Config> config, net::ssl::context* tls,
               Metrics& metrics, int access_log_fd, ConnectionBudget& connections)
    : index_(index),
      config_(std::move(config)),
      tls_(tls),
      metrics_(metrics),
      access_log_fd_(access_log_fd),
      rng_(std::random_device{}() ^ (static_cast<uint64_t>(index) << 32)),
      connections_(connections) {
    deadlines_.start(io_.get_executor(), deadline_tick(*config_));
}

Worker::~Worker() {
    deadlines_.stop();
}

void Worker::apply(std::shared_ptr<const config::Config> config, std::shared_ptr<ClientAuth> auth,
                   net::ssl::context* tls) {
    config_ = std::move(config);
    auth_ = std::move(auth);
    tls_ = tls;
    // Shorter timeouts need a finer tick (requests in flight keep theirs, a tick late at most).
    deadlines_.set_tick(std::min(deadlines_.tick(), deadline_tick(*config_)));
}

void Worker::set_table(std::shared_ptr<const RoutingTable> table) {
    table_ = std::move(table);
    // A replica no longer in the table (its backend removed or changed, its address gone from
    // DNS): its idle connections close now, busy ones when their request ends.
    for (auto it = pools_.begin(); it != pools_.end();) {
        bool kept = false;
        for (const BackendView& b : table_->backends()) {
            for (const auto& r : b.replicas) {
                kept = kept || r->id == it->first;
            }
        }
        if (kept) {
            ++it;
        } else {
            it->second->retire();
            it = pools_.erase(it);
        }
    }
    last_pool_id_ = 0;
    last_pool_.reset();
}

std::shared_ptr<UpstreamPool> Worker::pool_for(const Replica& replica,
                                               const config::Backend& backend) {
    if (replica.id == last_pool_id_) {
        return last_pool_;  // one replica, or the same one again: no lookup
    }
    auto& pool = pools_[replica.id];
    if (!pool) {
        pool = std::make_shared<UpstreamPool>(io_.get_executor(), deadlines_, backend,
                                              backend.url.tls ? tls_ : nullptr, replica.ip);
    }
    last_pool_id_ = replica.id;
    last_pool_ = pool;
    return pool;
}

Task<Worker::ReloadOutcome> Worker::reload() {
    if (!reloader_) {
        co_return ReloadOutcome{409, R"({"error":{"message":"this worker cannot reload","type":)"
                                     R"("invalid_request_error","param":null,"code":null}})"};
    }
    // The reload runs on the server's thread; its outcome is posted back to this one.
    co_return co_await net::async_initiate<const net::use_awaitable_t<Executor>&,
                                           void(ReloadOutcome)>(
        [this](auto handler) {
            auto shared = std::make_shared<decltype(handler)>(std::move(handler));
            reloader_([this, shared](ReloadOutcome outcome) {
                net::post(io_, [shared, outcome = std::move(outcome)]() mutable {
                    (*shared)(std::move(outcome));
                });
            });
        },
        net::use_awaitable_t<Executor>{});
}

std::string Worker::random_hex(size_t chars) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(chars, '0');  // sized once (32 chars fit no small-string buffer anyway)
    char* p = out.data();
    for (size_t i = 0; i < chars; i += 16) {
        uint64_t r = rng_();
        const size_t n = std::min<size_t>(16, chars - i);
        for (size_t j = 0; j < n; ++j, r >>= 4) {
            p[i + j] = kHex[r & 0xf];
        }
    }
    return out;
}

void Worker::backend_unreachable(const beast::error_code& ec, const std::string& backend) {
    if (!on_backend_down_ ||
        (ec != net::error::connection_refused && ec != net::error::host_not_found &&
         ec != net::error::host_not_found_try_again)) {
        return;
    }
    // Every request fails like this while the backend is down: one report a second is enough
    // for the server, whose probe retries on its own timer anyway.
    const auto now = std::chrono::steady_clock::now();
    auto& last = last_down_report_[backend];
    if (last != std::chrono::steady_clock::time_point{} && now - last < std::chrono::seconds(1)) {
        return;
    }
    last = now;
    on_backend_down_(backend);
}

bool Worker::shed_oldest_idle() {
    for (const SessionList* list : {&fresh_, &served_}) {
        for (Session* s : *list) {
            if (s->close_if_idle()) {
                return true;
            }
        }
    }
    return false;
}

std::vector<Session*> Worker::sessions() const {
    std::vector<Session*> all(fresh_.begin(), fresh_.end());
    all.insert(all.end(), served_.begin(), served_.end());
    return all;
}

void Worker::abort_in_flight() {
    for (Session* s : sessions()) {
        s->abort_exchange();
    }
}

void Worker::begin_shutdown() {
    stopping_ = true;
    // close_if_idle may end a session and so unregister it: iterate over a copy.
    for (Session* s : sessions()) {
        s->close_if_idle();
    }
}

}  // namespace infergate
