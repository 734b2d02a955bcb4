#include "proxy/server.hpp"

#include "proxy/response_store.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

#include <boost/asio/signal_set.hpp>

#include "proxy/backend_probe.hpp"
#include "proxy/client_auth.hpp"
#include "proxy/listener.hpp"
#include "proxy/log.hpp"
#include "proxy/response_store.hpp"
#include "proxy/router.hpp"
#include "proxy/routing.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

// Raises the soft descriptor limit to the hard one (the default soft limit, 1,024, is a few
// hundred idle clients) and returns the limit now in force; `note` says what happened.
int64_t raise_fd_limit(std::string& note) {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
        note = "file descriptor limit unknown (getrlimit failed)";
        return 1024;
    }
    const rlim_t before = lim.rlim_cur;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            lim = raised;
        }
    }
    const auto shown = [](rlim_t v) {
        return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
    };
    note = "file descriptor limit " + shown(lim.rlim_cur) +
           (lim.rlim_cur != before ? " (raised from " + shown(before) + ", the hard limit)"
                                   : " (the hard limit)");
    // Beyond what any kernel hands out: a cap that never binds.
    constexpr int64_t kMax = int64_t{1} << 30;
    return lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > static_cast<rlim_t>(kMax)
               ? kMax
               : static_cast<int64_t>(lim.rlim_cur);
}

}  // namespace

Server::Server(std::shared_ptr<const config::Config> config,
               std::function<config::LoadResult()> reread, std::string config_path)
    : config_(std::move(config)), reread_(std::move(reread)), config_path_(std::move(config_path)) {
    const int64_t fds = raise_fd_limit(fd_note_);
    connections_ = std::make_unique<ConnectionBudget>();
    // Each client connection may hold an upstream connection too, and the process needs a few
    // descriptors of its own (listeners, epoll, logs, the probe): half of what is left.
    connections_->cap = config_->max_connections > 0
                            ? config_->max_connections
                            : std::max<int64_t>(8, (fds - 32 - 2 * config_->threads) / 2);
    // TLS only for https backends: loading the system CA store costs ~70 ms of start-up and a
    // few MiB of resident memory that a plain-HTTP deployment never uses. One context for all
    // (one tls_ca_file: two different ones are refused by validate()).
    for (size_t i = 0; i < config_->backends.size(); ++i) {
        const config::Backend& b = config_->backends[i];
        if (!b.url.tls || tls_) {
            continue;
        }
        tls_.emplace(net::ssl::context::tls_client);
        tls_->set_default_verify_paths();
        tls_->set_verify_mode(net::ssl::verify_peer);
        tls_ca_file_ = b.tls_ca_file;
        if (const std::string& ca = b.tls_ca_file; !ca.empty()) {
            beast::error_code ec;
            tls_->load_verify_file(ca, ec);
            if (ec) {
                startup_error_ = "backends[" + std::to_string(i) + "].tls_ca_file: cannot load '" +
                                 ca + "': " + ec.message();
            }
        }
    }
    metrics_ = std::make_unique<Metrics>(*config_, config_->threads);
    if (config_->access_log == "stderr") {
        access_log_fd_ = 2;
    } else if (config_->access_log != "off") {
        access_log_fd_ =
            ::open(config_->access_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (access_log_fd_ < 0) {
            startup_error_ = "access_log: cannot open '" + config_->access_log + "' for appending";
        }
    }
    auth_ = std::make_shared<ClientAuth>(config_->auth);
    responses_ = std::make_shared<ResponseStore>(config_->response_store);
    for (int i = 0; i < config_->threads; ++i) {
        workers_.push_back(std::make_unique<Worker>(i, config_, tls_ ? &*tls_ : nullptr, *metrics_,
                                                    access_log_fd_, *connections_));
        // Off the request path: a post to the main thread, which owns the probe.
        workers_.back()->on_backend_down([this](const std::string& name) {
            net::post(control_, [this, name] { backend_down(name); });
        });
        workers_.back()->set_auth(auth_);
        workers_.back()->set_responses(responses_);
        // POST /-/reload: the reload runs here, on control_; the answer goes back to the worker.
        workers_.back()->set_reloader([this](std::function<void(Worker::ReloadOutcome)> done) {
            net::post(control_, [this, done = std::move(done)] {
                auto r = std::make_shared<ReloadResult>();
                *r = reload("POST /-/reload", [r, done] {
                    done(Worker::ReloadOutcome{r->status, std::move(r->body)});
                });
            });
        });
    }
}

void Server::shutdown() {
    if (shutting_down_) {
        return;
    }
    shutting_down_ = true;
    log::info("shutting down: no new connections; in-flight requests get " +
              std::to_string(config_->shutdown_grace_ms) + " ms to finish");
    for (size_t i = 0; i < workers_.size(); ++i) {
        net::post(workers_[i]->io(), [worker = workers_[i].get(), &listeners = listeners_[i]] {
            for (auto& l : listeners) {
                l->close();
            }
            worker->begin_shutdown();
        });
    }
}

int Server::run() {
    // Before anything is printed: a SIGHUP from a script that waits for "listening on" must not
    // find the default action (terminate). Asio keeps it until the handler below waits.
    net::signal_set hangup(control_, SIGHUP);
    if (!startup_error_.empty()) {
        log::error(startup_error_);
        return 2;
    }
    listeners_.resize(workers_.size());
    const std::vector<tcp::endpoint> bound = bind_listeners(
        config_->listen_host, config_->listen_port,
        config_->admin_host.empty() ? ListenerKind::combined : ListenerKind::public_api, "listen");
    if (bound.empty()) {
        return 2;
    }
    std::vector<tcp::endpoint> admin;
    if (!config_->admin_host.empty()) {
        admin = bind_listeners(config_->admin_host, config_->admin_port, ListenerKind::admin,
                               "admin_listen");
        if (admin.empty()) {
            return 2;
        }
    }
    // The admin lines first: a reader that waits for the first "listening on" line (the test
    // harness) has seen them by then.
    for (const auto& endpoint : admin) {
        std::printf("admin listening on %s\n", net_text(endpoint).c_str());
    }
    std::string where;
    for (const auto& endpoint : bound) {
        std::printf("listening on %s\n", net_text(endpoint).c_str());
        where += (where.empty() ? "" : ", ") + net_text(endpoint);
    }
    std::fflush(stdout);
    std::string admin_where;
    for (const auto& endpoint : admin) {
        admin_where += ", " + net_text(endpoint);
    }
    std::string backends;
    for (const auto& b : config_->backends) {
        backends += (backends.empty() ? "" : ", ") + b.url.text();
    }
    log::info("infergate listening on " + where + " with " + std::to_string(workers_.size()) +
              " thread(s), backend" + (config_->backends.size() > 1 ? "s " : " ") + backends +
              (admin.empty() ? "" : "; admin routes on " + admin_where.substr(2)));
    log::info(fd_note_ + "; at most " + std::to_string(connections_->cap) + " client connections" +
              (config_->max_connections > 0 ? " (limits.max_connections)"
                                            : " (limits.max_connections unset: half the "
                                              "descriptors, the rest for upstream connections)"));
    log_exposure(bound, admin);

    // The routing table before the first connection: a configured backend is known at once (no
    // request may see a 503 "not ready" because the first post reached its worker after the
    // request did), the others say that their probe is under way. The worker threads are not
    // running yet, so this is no race.
    control_deadlines_ = std::make_unique<Deadlines>();
    int64_t shortest = 1000;  // the health checks' timeouts (and their connects)
    for (const auto& b : config_->backends) {
        shortest = std::min({shortest, b.health.timeout_ms, b.timeouts.connect_ms});
    }
    control_deadlines_->start(control_.get_executor(),
                              Deadlines::tick_for(std::chrono::milliseconds(shortest)));
    start_backends();
    {
        auto table = make_table();
        metrics_->set_routing(table);
        for (auto& w : workers_) {
            w->set_table(table);
        }
    }
    for (auto& per_worker : listeners_) {
        for (auto& l : per_worker) {
            l->start();
        }
    }
    std::function<void(beast::error_code, int)> on_hangup = [&](beast::error_code e, int) {
        if (e || shutting_down_) {
            return;
        }
        reload("SIGHUP");
        hangup.async_wait(on_hangup);
    };
    hangup.async_wait(on_hangup);
    net::signal_set signals(control_, SIGINT, SIGTERM);
    Timer grace(control_);
    std::function<void(beast::error_code, int)> on_signal = [&](beast::error_code e, int) {
        if (e) {
            return;
        }
        if (shutting_down_) {
            log::warn("second signal: stopping now");
            control_.stop();
            return;
        }
        shutdown();
        hangup.cancel();
        grace.expires_after(std::chrono::milliseconds(config_->shutdown_grace_ms));
        grace.async_wait([this, &grace](beast::error_code te) {
            if (te) {
                return;
            }
            log::warn("grace period over: ending the requests still in flight with an error");
            for (auto& w : workers_) {
                net::post(w->io(), [worker = w.get()] { worker->abort_in_flight(); });
            }
            // Their error events go out (each worker stops once its sessions end); a client
            // that does not read them is not waited for long.
            grace.expires_after(std::chrono::seconds(2));
            grace.async_wait([this](beast::error_code e2) {
                if (!e2) {
                    control_.stop();
                }
            });
        });
        signals.async_wait(on_signal);
    };
    signals.async_wait(on_signal);

    std::atomic<int> running{static_cast<int>(workers_.size())};
    std::vector<std::thread> threads;
    for (auto& w : workers_) {
        threads.emplace_back([this, worker = w.get(), &running] {
            worker->io().run();
            if (--running == 0) {
                net::post(control_, [this] { control_.stop(); });
            }
        });
    }
    control_.run();
    for (auto& w : workers_) {
        w->io().stop();  // no-op for workers that already drained
    }
    for (auto& t : threads) {
        t.join();
    }
    log::info("stopped");
    return 0;
}

}  // namespace infergate
