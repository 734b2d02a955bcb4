#include "proxy/server.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <boost/asio/signal_set.hpp>

#include "proxy/backend_probe.hpp"
#include "proxy/client_auth.hpp"
#include "proxy/listener.hpp"
#include "proxy/log.hpp"
#include "proxy/router.hpp"
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

// The text of a reload's answer: a JSON document written by `fn` on a RapidJSON writer.
template <class Fn>
std::string json_text(Fn&& fn) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    fn(w);
    return std::string(buffer.GetString(), buffer.GetSize());
}

template <class W>
void write_string(W& w, std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// OpenAI's error shape, with the list of errors beside the message (which lists them too).
std::string reload_error(std::string_view message, std::string_view code,
                         const std::vector<std::string>& errors) {
    return json_text([&](auto& w) {
        w.StartObject();
        w.Key("error");
        w.StartObject();
        w.Key("message");
        write_string(w, message);
        w.Key("type");
        w.String("invalid_request_error");
        w.Key("param");
        w.Null();
        w.Key("code");
        write_string(w, code);
        if (!errors.empty()) {
            w.Key("errors");
            w.StartArray();
            for (const auto& e : errors) {
                write_string(w, e);
            }
            w.EndArray();
        }
        w.EndObject();
        w.EndObject();
    });
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        out += (out.empty() ? "" : ", ") + i;
    }
    return out;
}

// HOST:PORT as a URL writes it: [::1]:30000 for IPv6.
std::string net_text(const tcp::endpoint& e) {
    const std::string host = e.address().to_string();
    return (e.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(e.port());
}

}  // namespace

std::vector<net::ip::address> Server::listen_addresses(const std::string& host,
                                                       beast::error_code& ec) {
    ec = {};
    const auto literal = net::ip::make_address(host, ec);
    if (!ec) {
        return {literal};
    }
    // A name (localhost): every address it resolves to, IPv4 first (what the first
    // "listening on" line shows, and what most clients try), each once.
    Resolver resolver(control_.get_executor());
    const auto results = resolver.resolve(host, "", net::ip::resolver_base::passive, ec);
    std::vector<net::ip::address> out;
    if (ec) {
        return out;
    }
    for (const auto& r : results) {
        const auto a = r.endpoint().address();
        if (std::find(out.begin(), out.end(), a) == out.end()) {
            out.push_back(a);
        }
    }
    std::stable_partition(out.begin(), out.end(), [](const auto& a) { return a.is_v4(); });
    return out;
}

void Server::log_exposure(const std::vector<tcp::endpoint>& bound,
                          const std::vector<tcp::endpoint>& admin) const {
    const auto loopback = [](const std::vector<tcp::endpoint>& endpoints) {
        return std::all_of(endpoints.begin(), endpoints.end(),
                           [](const auto& e) { return e.address().is_loopback(); });
    };
    const bool loopback_only = loopback(bound);
    const config::Backend& b = config_->backend();
    std::string line = "exposed: ";
    line += loopback_only ? "this host only (loopback)" : "the network (a non-loopback address)";
    const bool keys = config_->auth.enabled();
    line += keys ? "; client auth: on (" + std::to_string(config_->auth.keys.size()) + " keys)"
                 : "; client auth: off (whoever reaches the port is served)";
    line += b.api_key.empty()
                ? "; backend key: none"
                : "; backend key: injected from $" + b.api_key_env + " into every request";
    if (b.api_key.empty() && !b.url.basic_auth.empty()) {
        line += "; backend credentials: Basic, from the backend URL";
    }
    if (admin.empty()) {
        line += "; /metrics and /get_server_info: on this listener (set admin_listen to move "
                "them off it)";
    } else {
        line += "; /metrics and /get_server_info: on the admin listener only (" +
                net_text(admin.front()) + ", no auth)";
    }
    std::string warning;
    if (!loopback_only && !keys && (!b.api_key.empty() || !b.url.basic_auth.empty())) {
        // Whoever can reach the port spends the operator's key: say so where it is seen.
        warning += " -- anyone who can reach it uses the backend's credentials; listen "
                   "on 127.0.0.1, configure client keys (auth:), or keep the port behind a "
                   "firewall";
    }
    if (!admin.empty() && !loopback(admin)) {
        // The admin routes show the backend's address and the traffic: no auth protects them.
        warning += " -- the admin listener is on a non-loopback address and has no "
                   "authentication: anyone who reaches it reads /metrics and /get_server_info; "
                   "put admin_listen on 127.0.0.1, or keep its port behind a firewall";
    }
    if (!warning.empty()) {
        log::warn(line + warning);
    } else {
        log::info(line);
    }
}

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
    // TLS only for an https backend: loading the system CA store costs ~70 ms of start-up and
    // a few MiB of resident memory that a plain-HTTP deployment never uses.
    if (config_->backend().url.tls) {
        tls_.emplace(net::ssl::context::tls_client);
        tls_->set_default_verify_paths();
        tls_->set_verify_mode(net::ssl::verify_peer);
        tls_ca_file_ = config_->backend().tls_ca_file;
        if (const std::string& ca = config_->backend().tls_ca_file; !ca.empty()) {
            beast::error_code ec;
            tls_->load_verify_file(ca, ec);
            if (ec) {
                startup_error_ =
                    "backends[0].tls_ca_file: cannot load '" + ca + "': " + ec.message();
            }
        }
    }
    metrics_ = std::make_unique<Metrics>(*config_, config_->threads);
    if (config_->access_log == "stderr") {
        access_log_fd_ = 2;
    } else if (config_->access_log != "off") {
        access_log_fd_ = ::open(config_->access_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (access_log_fd_ < 0) {
            startup_error_ = "access_log: cannot open '" + config_->access_log + "' for appending";
        }
    }
    auth_ = std::make_shared<ClientAuth>(config_->auth);
    for (int i = 0; i < config_->threads; ++i) {
        workers_.push_back(std::make_unique<Worker>(i, config_, tls_ ? &*tls_ : nullptr, *metrics_,
                                                    access_log_fd_, *connections_));
        // Off the request path: a post to the main thread, which owns the probe.
        workers_.back()->on_backend_down(
            [this] { net::post(control_, [this] { backend_down(); }); });
        workers_.back()->set_auth(auth_);
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

Server::ReloadResult Server::reload(std::string_view trigger, std::function<void()> applied) {
    // Posted, never called here: the caller has the result by the time it runs.
    const auto answer_now = [&] { net::post(control_, std::move(applied)); };
    const std::string why = "reload (" + std::string(trigger) + ")";
    if (!reread_) {
        answer_now();
        log::warn(why +
                  ": nothing to re-read: infergate was started without --config, from "
                  "command-line flags; restart it to change them, or start it with "
                  "--config FILE to reload");
        return {409, reload_error("infergate was started without --config (its settings are "
                                  "the command line): there is no config file to re-read; "
                                  "restart it with new flags, or start it with --config FILE",
                                  "no_config_file", {})};
    }
    config::LoadResult loaded = reread_();
    if (log::Level level; loaded.config && !log::parse_level(loaded.config->log_level, level)) {
        // At start main() refuses it; here it is one more error that keeps the running config.
        loaded.errors.push_back("log_level: must be debug, info, warn or error, got '" +
                                loaded.config->log_level + "'");
        loaded.config = nullptr;
    }
    if (!loaded.config) {
        answer_now();
        metrics_->count_reload(false);
        log::warn(why + ": " + config_path_ + " has " + std::to_string(loaded.errors.size()) +
                  " error(s); the running config is kept:");
        for (const auto& e : loaded.errors) {
            log::warn("  " + e);
        }
        std::string message = "the config file " + config_path_ + " has " +
                              std::to_string(loaded.errors.size()) +
                              " error(s); the running config is kept: ";
        for (size_t i = 0; i < loaded.errors.size(); ++i) {
            message += (i ? "; " : "") + loaded.errors[i];
        }
        return {400, reload_error(message, "invalid_config", loaded.errors)};
    }
    const config::ConfigChanges changes = config::diff(*config_, *loaded.config);
    std::vector<std::string> restart = changes.needs_restart;
    auto next = std::make_shared<const config::Config>(
        config::keep_restart_values(*config_, *loaded.config));
    // An https backend needs the TLS context, made once: the first https backend makes it,
    // another CA bundle needs a restart (workers' connections use the one in place).
    if (changes.backend_changed && next->backend().url.tls) {
        if (!tls_) {
            net::ssl::context tls(net::ssl::context::tls_client);
            tls.set_default_verify_paths();
            tls.set_verify_mode(net::ssl::verify_peer);
            if (const std::string& ca = next->backend().tls_ca_file; !ca.empty()) {
                beast::error_code ec;
                tls.load_verify_file(ca, ec);
                if (ec) {
                    answer_now();
                    const std::string e =
                        "backends[0].tls_ca_file: cannot load '" + ca + "': " + ec.message();
                    metrics_->count_reload(false);
                    log::warn(why + ": " + e + "; the running config is kept");
                    return {400, reload_error("the config file " + config_path_ +
                                                  " has 1 error(s); the running config is "
                                                  "kept: " +
                                                  e,
                                              "invalid_config", {e})};
                }
            }
            tls_.emplace(std::move(tls));
            tls_ca_file_ = next->backend().tls_ca_file;
        } else if (next->backend().tls_ca_file != tls_ca_file_) {
            restart.emplace_back("backends[0].tls_ca_file");
        }
    }
    auto auth = std::make_shared<ClientAuth>(next->auth, auth_.get());
    net::ssl::context* tls = tls_ ? &*tls_ : nullptr;
    auto pending = std::make_shared<std::atomic<size_t>>(workers_.size());
    auto last = std::make_shared<std::function<void()>>(std::move(applied));
    for (auto& w : workers_) {
        net::post(w->io(), [this, worker = w.get(), next, auth, tls, pending, last,
                            pool = changes.backend_changed] {
            worker->apply(next, auth, pool, tls);
            if (pending->fetch_sub(1) == 1) {
                net::post(control_, std::move(*last));
            }
        });
    }
    config_ = next;
    auth_ = auth;
    if (log::Level level; log::parse_level(next->log_level, level)) {
        log::set_level(level);
    }
    for (const auto& note : loaded.notes) {
        log::info(note);
    }
    for (const auto& r : restart) {
        log::warn(why + ": " + r + " changed: it needs a restart (the running value is kept)");
    }
    metrics_->count_reload(true);
    log::info(why + ": " + config_path_ + " applied; " +
              (changes.applied.empty() ? std::string("nothing else changed")
                                       : "changed: " + joined(changes.applied)) +
              (restart.empty() ? std::string() : "; needs a restart: " + joined(restart)));
    if (changes.backend_identity_changed) {
        // Another backend (URL, dialect or model): what the old probe learned no longer holds.
        ++probe_generation_;
        identified_.clear();
        if (const auto info = configured_backend()) {
            metrics_->set_discovered_model(info->served_model);
            publish(*info);
        }
        probing_ = true;
        net::co_spawn(control_, probe_loop(false), net::detached);
    }
    return {200, json_text([&](auto& w) {
                w.StartObject();
                w.Key("status");
                w.String("reloaded");
                w.Key("changed");
                w.StartArray();
                for (const auto& c : changes.applied) {
                    write_string(w, c);
                }
                w.EndArray();
                w.Key("needs_restart");
                w.StartArray();
                for (const auto& r : restart) {
                    write_string(w, r);
                }
                w.EndArray();
                w.EndObject();
            })};
}

Server::~Server() = default;

void Server::publish(const BackendInfo& info) {
    for (auto& w : workers_) {
        net::post(w->io(), [worker = w.get(), info] { worker->set_backend(info); });
    }
}

std::optional<BackendInfo> Server::configured_backend() const {
    const config::Backend& backend = config_->backend();
    if (backend.dialect == config::BackendDialect::auto_detect || backend.model.empty()) {
        return std::nullopt;
    }
    BackendInfo info;
    info.ready = true;
    info.dialect = backend.dialect;
    info.flavor = backend.dialect == config::BackendDialect::sglang ? translators::Flavor::sglang
                                                                    : translators::Flavor::generic;
    info.served_model = backend.model;
    info.detail = "configured";
    return info;
}

Task<void> Server::probe_loop(bool again) {
    // Its own reference: a reload may replace config_ while this loop waits.
    const std::shared_ptr<const config::Config> config = config_;
    const config::Backend& backend = config->backend();
    const uint64_t generation = probe_generation_;
    const auto current = [&] { return generation == probe_generation_ && !shutting_down_; };
    // Configured dialect and model: the workers serve at once (run() gave them the info before
    // listening); the probe only refines the flavour.
    const bool configured_ready = configured_backend().has_value();
    probing_ = true;
    Timer timer(control_);
    if (again) {
        log::info("backend " + backend.url.text() +
                  " refused a connection: probing it again when it answers (until then "
                  "requests keep the backend as last identified)");
        // However often it goes away, one probe round a second at most.
        const auto since = std::chrono::steady_clock::now() - last_probe_start_;
        if (since < std::chrono::seconds(1)) {
            timer.expires_after(std::chrono::seconds(1) - since);
            co_await timer.async_wait(use_nothrow);
        }
    }
    int attempt = 0;
    while (current()) {
        last_probe_start_ = std::chrono::steady_clock::now();
        ProbeResult r = co_await probe_backend(backend, tls_ ? &*tls_ : nullptr);
        if (!current()) {
            break;  // shutting down, or a reload changed the backend: its own loop probes it
        }
        if (r.info.ready) {
            if (!backend.model.empty()) {
                r.info.served_model = backend.model;
            }
            const std::string found = std::string(config::to_string(r.info.dialect)) + ", model '" +
                                      r.info.served_model + "'";
            if (again && found != identified_) {
                log::warn("backend " + backend.url.text() + " changed: it was " + identified_ +
                          ", it is now " + found + " (" + r.info.detail + ")");
            } else {
                log::info("backend " + backend.url.text() + ": " + r.info.detail + ", model '" +
                          r.info.served_model + "'");
            }
            identified_ = found;
            // The metrics' model label is bound once: a new model after a restart is counted
            // under the first one's label set (no-op when it was set already).
            metrics_->set_discovered_model(r.info.served_model);
            publish(r.info);
            break;
        }
        if (attempt == 0 || attempt % 30 == 0) {
            log::warn("backend " + backend.url.text() + " not identified yet: " + r.info.detail +
                      (r.reachable ? "" : "; retrying every second"));
        }
        // Not identified (not answering, or answering like nothing known): requests get a 503
        // that says why, unless the backend is configured, or was identified before and simply
        // does not answer (yet): then requests keep it, and see the refusal themselves.
        if (!configured_ready && (!again || r.reachable)) {
            publish(r.info);
        }
        ++attempt;
        timer.expires_after(std::chrono::seconds(1));
        co_await timer.async_wait(use_nothrow);
    }
    if (generation == probe_generation_) {
        probing_ = false;
    }
}

void Server::backend_down() {
    if (probing_ || shutting_down_) {
        return;  // the probe running now sees the restart too
    }
    net::co_spawn(control_, probe_loop(true), net::detached);
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

std::vector<tcp::endpoint> Server::bind_listeners(const std::string& host, uint16_t port,
                                                  ListenerKind kind, std::string_view option) {
    const std::string opt(option);
    beast::error_code ec;
    const std::vector<net::ip::address> addresses = listen_addresses(host, ec);
    if (addresses.empty()) {
        log::error(opt + ": cannot resolve '" + host + "'" +
                   (ec ? ": " + ec.message() : std::string()) +
                   "; give an IP address (127.0.0.1, 0.0.0.0, [::]) or a resolvable name");
        return {};
    }
    std::vector<tcp::endpoint> bound;
    for (const auto& address : addresses) {
        tcp::endpoint endpoint(address, port);
        std::vector<std::unique_ptr<Listener>> made;
        for (size_t i = 0; i < workers_.size() && !ec; ++i) {
            auto listener = std::make_unique<Listener>(*workers_[i], endpoint, kind, ec);
            if (!ec) {
                // Port 0: every further acceptor (other workers, other addresses) joins the
                // port the first one got.
                endpoint = listener->local_endpoint();
                made.push_back(std::move(listener));
            }
        }
        if (ec) {
            const std::string what = (option == "listen" ? std::string() : opt + ": ") +
                                     "cannot listen on " + net_text(endpoint) + ": " + ec.message();
            if (addresses.size() == 1) {
                log::error(what);
                return {};
            }
            // A name may resolve to a family the host cannot bind (::1 without IPv6).
            log::warn(what + " (skipped: '" + host + "' has other addresses)");
            ec = {};
            continue;
        }
        for (size_t i = 0; i < made.size(); ++i) {
            listeners_[i].push_back(std::move(made[i]));
        }
        port = endpoint.port();
        bound.push_back(endpoint);
    }
    if (bound.empty()) {
        log::error(opt + ": nothing could be bound for '" + host + "'");
    }
    return bound;
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
    log::info("infergate listening on " + where + " with " + std::to_string(workers_.size()) +
              " thread(s), backend " + config_->backend().url.text() +
              (admin.empty() ? "" : "; admin routes on " + admin_where.substr(2)));
    log::info(fd_note_ + "; at most " + std::to_string(connections_->cap) + " client connections" +
              (config_->max_connections > 0 ? " (limits.max_connections)"
                                            : " (limits.max_connections unset: half the "
                                              "descriptors, the rest for upstream connections)"));
    log_exposure(bound, admin);

    // A configured backend is known before the first connection: no request may see a 503
    // "not ready" because the probe's first post reached its worker after the request did. The
    // worker threads are not running yet, so this is no race.
    if (const auto info = configured_backend()) {
        metrics_->set_discovered_model(info->served_model);
        for (auto& w : workers_) {
            w->set_backend(*info);
        }
    } else {
        // A request before the first probe round is in gets a 503 that still says something.
        BackendInfo probing;
        probing.detail = "no answer yet from " + config_->backend().url.text() +
                         ": the first probe of its info routes is under way";
        for (auto& w : workers_) {
            w->set_backend(probing);
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
        grace.async_wait([this](beast::error_code te) {
            if (!te) {
                log::warn("grace period over: cancelling the requests still in flight");
                control_.stop();
            }
        });
        signals.async_wait(on_signal);
    };
    signals.async_wait(on_signal);
    probing_ = true;  // before the first report can arrive
    net::co_spawn(control_, probe_loop(false), net::detached);

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
