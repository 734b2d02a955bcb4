// Server: the backends (docs/routing.md). Each backend has up to three loops on the main thread:
// the probe (what it is and serves, until identified, and again when it comes back), the active
// health checks of its replicas, and for discovery: dns the resolution of its host name into
// replicas. Whatever they change is published to the workers as a new routing table.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "proxy/backend_probe.hpp"
#include "proxy/backend_probe_http.hpp"
#include "proxy/log.hpp"
#include "proxy/metrics.hpp"
#include "proxy/routing.hpp"
#include "proxy/server.hpp"
#include "proxy/worker.hpp"
#include "translators/health.hpp"

namespace infergate {

struct Server::BackendRuntime {
    config::Backend config;
    BackendInfo info;
    std::vector<std::shared_ptr<Replica>> replicas;
    std::shared_ptr<BackendCounters> counters;
    bool stopped = false;  // removed or changed by a reload: its loops end
    bool probing = false;
    bool checking = false;  // its health loop runs
    std::chrono::steady_clock::time_point last_probe_start{};
    std::string identified;  // "openai, model 'm'": what the last successful probe found
};

namespace {

// The backend as the config describes it, when it names both dialect and model.
std::optional<BackendInfo> configured_info(const config::Backend& backend) {
    if (backend.dialect == config::BackendDialect::auto_detect || backend.models.empty()) {
        return std::nullopt;
    }
    BackendInfo info;
    info.ready = true;
    info.dialect = backend.dialect;
    info.flavor = backend.dialect == config::BackendDialect::sglang ? translators::Flavor::sglang
                                                                    : translators::Flavor::generic;
    info.served_model = backend.models.front();
    info.models = backend.models;
    info.detail = "configured";
    return info;
}

// INFERGATE_RESOLVE_FILE: lines of "NAME ADDRESS [ADDRESS...]" read before DNS at every
// resolution (curl's --resolve, for a whole deployment): a test or an operator steers
// discovery: dns without a DNS server. nullopt when the file does not name `host`.
std::optional<std::vector<std::string>> resolve_override(const std::string& host) {
    const char* path = std::getenv("INFERGATE_RESOLVE_FILE");
    if (path == nullptr || *path == '\0') {
        return std::nullopt;
    }
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string name;
        if (!(words >> name) || name.starts_with('#') || name != host) {
            continue;
        }
        std::vector<std::string> out;
        for (std::string a; words >> a;) {
            out.push_back(a);
        }
        return out;
    }
    return std::nullopt;
}

}  // namespace

std::shared_ptr<const RoutingTable> Server::make_table() const {
    std::vector<BackendView> views;
    views.reserve(backends_.size());
    for (const auto& b : backends_) {
        views.push_back(BackendView{b->config, b->info, b->replicas, b->counters});
    }
    return std::make_shared<const RoutingTable>(std::move(views), *config_, routing_shared_);
}

void Server::publish_table() {
    auto table = make_table();
    metrics_->set_routing(table);
    for (auto& w : workers_) {
        net::post(w->io(), [worker = w.get(), table] { worker->set_table(table); });
    }
}

void Server::start_backends() {
    const config::Routing& r = config_->routing;
    // A new index when its shape changes (a reload of routing.prefix); else it is kept.
    if (!routing_shared_ ||
        routing_shared_->prefix.block_bytes() != static_cast<size_t>(r.prefix_block_bytes) ||
        routing_shared_->prefix.max_blocks() != static_cast<size_t>(r.prefix_max_blocks)) {
        routing_shared_ = std::make_shared<RoutingShared>(PrefixIndex::Options{
            static_cast<size_t>(r.prefix_block_bytes), static_cast<size_t>(r.prefix_max_blocks)});
    }
    std::vector<std::shared_ptr<BackendRuntime>> next;
    std::vector<std::shared_ptr<BackendRuntime>> started;
    for (const config::Backend& b : config_->backends) {
        std::shared_ptr<BackendRuntime> kept;
        for (const auto& old : backends_) {
            kept = !old->stopped && old->config == b ? old : kept;
        }
        if (kept) {
            next.push_back(kept);
            continue;
        }
        auto rt = std::make_shared<BackendRuntime>();
        rt->config = b;
        for (const auto& c : counters_) {
            rt->counters = c->name == b.name ? c : rt->counters;
        }
        if (!rt->counters) {
            rt->counters = counters_.emplace_back(std::make_shared<BackendCounters>(b.name));
        }
        if (auto info = configured_info(b)) {
            rt->info = *info;
            metrics_->set_discovered_model(info->served_model);
        } else {
            rt->info.detail = "no answer yet from " + b.url.text() +
                              ": the first probe of its info routes is under way";
        }
        if (b.discovery == config::Discovery::single) {
            rt->replicas.push_back(
                std::make_shared<Replica>(next_replica_id_++, b.url.authority(), std::nullopt));
        }
        next.push_back(rt);
        started.push_back(rt);
    }
    for (const auto& old : backends_) {
        if (std::find(next.begin(), next.end(), old) == next.end()) {
            old->stopped = true;
        }
    }
    backends_ = std::move(next);
    for (const auto& rt : started) {
        if (rt->config.discovery == config::Discovery::dns) {
            net::co_spawn(control_, resolve_loop(rt), net::detached);
        }
        spawn_probe(rt, false);
    }
    for (const auto& rt : backends_) {
        // Active checks where they can steer a request elsewhere, or when asked for: a single
        // backend of one replica keeps its one connection pattern (nothing else to pick).
        if (!rt->checking &&
            (rt->config.health.configured || rt->config.discovery == config::Discovery::dns ||
             config_->backends.size() > 1)) {
            rt->checking = true;
            net::co_spawn(control_, health_loop(rt), net::detached);
        }
    }
}

void Server::spawn_probe(const std::shared_ptr<BackendRuntime>& b, bool again) {
    if (b->probing || b->stopped || shutting_down_) {
        return;  // the probe running now sees the restart too
    }
    b->probing = true;
    net::co_spawn(control_, probe_loop(b, again), net::detached);
}

Task<void> Server::probe_loop(std::shared_ptr<BackendRuntime> b, bool again) {
    const config::Backend& backend = b->config;
    const auto current = [&] { return !b->stopped && !shutting_down_; };
    // Configured dialect and model: the workers serve at once; the probe only refines the
    // flavour.
    const bool configured_ready = configured_info(backend).has_value();
    Timer timer(control_);
    if (again) {
        log::info("backend '" + backend.name + "' (" + backend.url.text() +
                  ") went away: probing it again when it answers (until then requests keep it "
                  "as last identified)");
        // However often it goes away, one probe round a second at most.
        const auto since = std::chrono::steady_clock::now() - b->last_probe_start;
        if (since < std::chrono::seconds(1)) {
            timer.expires_after(std::chrono::seconds(1) - since);
            co_await timer.async_wait(use_nothrow);
        }
    }
    int attempt = 0;
    while (current()) {
        b->last_probe_start = std::chrono::steady_clock::now();
        // discovery: dns: one of the addresses found (another each round), none before the
        // first resolution.
        std::optional<net::ip::address> ip;
        if (backend.discovery == config::Discovery::dns) {
            if (b->replicas.empty()) {
                timer.expires_after(std::chrono::milliseconds(100));
                co_await timer.async_wait(use_nothrow);
                continue;
            }
            ip = b->replicas[static_cast<size_t>(attempt) % b->replicas.size()]->ip;
        }
        ProbeResult r = co_await probe_backend(backend, tls_ ? &*tls_ : nullptr, ip);
        if (!current()) {
            break;  // shutting down, or a reload changed the backend: its own loop probes it
        }
        if (r.info.ready) {
            const std::string found = std::string(config::to_string(r.info.dialect)) + ", model '" +
                                      r.info.served_model + "'";
            if (again && !b->identified.empty() && found != b->identified) {
                log::warn("backend '" + backend.name + "' changed: it was " + b->identified +
                          ", it is now " + found + " (" + r.info.detail + ")");
            } else if (found != b->identified) {
                log::info("backend '" + backend.name + "' (" + backend.url.text() +
                          "): " + r.info.detail + ", model '" + r.info.served_model + "'" +
                          (r.info.models.size() > 1
                               ? " and " + std::to_string(r.info.models.size() - 1) + " more"
                               : std::string()));
            }
            b->identified = found;
            // The metrics' model label is bound once: a new model after a restart is counted
            // under the first one's label set (no-op when it was set already).
            metrics_->set_discovered_model(r.info.served_model);
            b->info = std::move(r.info);
            publish_table();
            break;
        }
        if (attempt == 0 || attempt % 30 == 0) {
            log::warn("backend '" + backend.name + "' (" + backend.url.text() +
                      ") not identified yet: " + r.info.detail +
                      (r.reachable ? "" : "; retrying every second"));
        }
        // Not identified (not answering, or answering like nothing known): requests get a 503
        // that says why, unless the backend is configured, or was identified before and simply
        // does not answer (yet): then requests keep it, and see the refusal themselves.
        if (!configured_ready && (!again || r.reachable)) {
            b->info = std::move(r.info);
            publish_table();
        }
        ++attempt;
        timer.expires_after(std::chrono::seconds(1));
        co_await timer.async_wait(use_nothrow);
    }
    b->probing = false;
}

void Server::backend_down(const std::string& name) {
    for (const auto& b : backends_) {
        if (b->config.name == name) {
            spawn_probe(b, true);
        }
    }
}

Task<void> Server::health_loop(std::shared_ptr<BackendRuntime> b) {
    const config::HealthCheck& h = b->config.health;
    Timer timer(control_);
    while (!b->stopped && !shutting_down_) {
        timer.expires_after(std::chrono::milliseconds(h.interval_ms));
        co_await timer.async_wait(use_nothrow);
        if (b->stopped || shutting_down_) {
            break;
        }
        if (!b->info.ready) {
            continue;  // the probe loop is at it
        }
        std::string path = h.path;
        if (path.empty()) {
            auto call = translators::health_call(b->info.dialect, false, b->info.served_model,
                                                 b->info.flavor);
            if (!call || call.value().post) {
                continue;
            }
            path = call.value().path;
        }
        bool came_back = false;
        // A copy: DNS may replace the list while a check waits.
        const std::vector<std::shared_ptr<Replica>> replicas = b->replicas;
        for (const auto& replica : replicas) {
            UpstreamPool pool(control_.get_executor(), *control_deadlines_, b->config,
                              b->config.url.tls && tls_ ? &*tls_ : nullptr, replica->ip);
            const probe::Reply reply =
                co_await probe::get(pool, path, std::chrono::milliseconds(h.timeout_ms));
            if (b->stopped) {
                co_return;
            }
            const bool ok = !reply.ec && reply.status == 200;
            int streak = replica->check_streak.load(std::memory_order_relaxed);
            streak = ok ? std::max(streak, 0) + 1 : std::min(streak, 0) - 1;
            replica->check_streak.store(streak, std::memory_order_relaxed);
            const bool healthy = replica->healthy.load(std::memory_order_relaxed);
            if (healthy && -streak >= h.unhealthy_threshold) {
                replica->healthy.store(false, std::memory_order_relaxed);
                log::warn("backend '" + b->config.name + "' replica " + replica->address +
                          " failed " + std::to_string(-streak) + " health checks in a row (GET " +
                          path + ": " +
                          (reply.ec ? reply.ec.message() : "HTTP " + std::to_string(reply.status)) +
                          "): taken out of its pools until it passes again");
            } else if (!healthy && streak >= h.healthy_threshold) {
                replica->healthy.store(true, std::memory_order_relaxed);
                replica->ejected_until.store(0, std::memory_order_relaxed);
                replica->failures.store(0, std::memory_order_relaxed);
                log::info("backend '" + b->config.name + "' replica " + replica->address +
                          " passes its health checks again: back in its pools");
                came_back = true;
            }
        }
        if (came_back) {
            spawn_probe(b, true);  // its model may have changed while it was away
        }
    }
    b->checking = false;
}

Task<void> Server::resolve_loop(std::shared_ptr<BackendRuntime> b) {
    Resolver resolver(control_);
    Timer timer(control_);
    const std::string& host = b->config.url.host;
    bool failing = false;
    while (!b->stopped && !shutting_down_) {
        std::vector<std::string> found;
        std::string error;
        if (auto listed = resolve_override(host)) {
            found = std::move(*listed);
        } else {
            auto [ec, results] = co_await resolver.async_resolve(
                host, std::to_string(b->config.url.port), use_nothrow);
            if (ec) {
                error = ec.message();
            }
            for (const auto& e : results) {
                found.push_back(e.endpoint().address().to_string());
            }
        }
        if (b->stopped) {
            break;
        }
        std::sort(found.begin(), found.end());
        found.erase(std::unique(found.begin(), found.end()), found.end());
        if (!error.empty()) {
            // A failed lookup keeps the replicas known: DNS trouble is no reason to drop them.
            if (!failing) {
                log::warn("backend '" + b->config.name + "': cannot resolve " + host + ": " +
                          error + " (the " + std::to_string(b->replicas.size()) +
                          " replica(s) known are kept; retrying every resolve_interval_ms)");
            }
            failing = true;
        } else {
            failing = false;
            std::vector<std::shared_ptr<Replica>> next;
            std::string added;
            for (const auto& a : found) {
                beast::error_code pec;
                const auto ip = net::ip::make_address(a, pec);
                if (pec) {
                    continue;
                }
                const std::string address =
                    ip.is_v6() ? "[" + a + "]:" + std::to_string(b->config.url.port)
                               : a + ":" + std::to_string(b->config.url.port);
                std::shared_ptr<Replica> kept;
                for (const auto& r : b->replicas) {
                    kept = r->address == address ? r : kept;
                }
                if (!kept) {
                    kept = std::make_shared<Replica>(next_replica_id_++, address, ip);
                    added += " +" + address;
                }
                next.push_back(std::move(kept));
            }
            std::string removed;
            for (const auto& r : b->replicas) {
                if (std::find(next.begin(), next.end(), r) == next.end()) {
                    removed += " -" + r->address;
                }
            }
            if (!added.empty() || !removed.empty()) {
                log::info("backend '" + b->config.name + "': " + host + " resolves to " +
                          std::to_string(next.size()) + " address(es):" + added + removed);
                b->replicas = std::move(next);
                publish_table();
            }
        }
        timer.expires_after(std::chrono::milliseconds(b->config.resolve_interval_ms));
        co_await timer.async_wait(use_nothrow);
    }
}

}  // namespace infergate
