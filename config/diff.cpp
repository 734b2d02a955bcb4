// The difference between two configs, for a reload (config.hpp: ConfigChanges).

#include "config/config.hpp"

namespace infergate::config {

ConfigChanges diff(const Config& running, const Config& next) {
    ConfigChanges c;
    const auto restart = [&](bool differs, const char* path) {
        if (differs) {
            c.needs_restart.emplace_back(path);
        }
    };
    restart(running.listen_host != next.listen_host || running.listen_port != next.listen_port,
            "listen");
    restart(running.admin_host != next.admin_host || running.admin_port != next.admin_port,
            "admin_listen");
    restart(running.threads != next.threads, "threads");
    restart(running.access_log != next.access_log, "access_log");
    restart(running.max_connections != next.max_connections, "limits.max_connections");

    const auto applied = [&](bool differs, const char* path) {
        if (differs) {
            c.applied.emplace_back(path);
        }
    };
    // Backends are matched by name: one whose settings are all equal keeps its replicas, pools,
    // health and what its probe learned; a changed one starts over (Server::reload).
    for (size_t i = 0; i < next.backends.size(); ++i) {
        const Backend& b = next.backends[i];
        const Backend* was = nullptr;
        for (const Backend& r : running.backends) {
            was = r.name == b.name ? &r : was;
        }
        if (was != nullptr && *was == b) {
            continue;
        }
        c.applied.push_back(was == nullptr ? "backends[" + std::to_string(i) + "] (added)"
                                           : "backends[" + std::to_string(i) + "]");
        c.backend_changed = true;
    }
    for (const Backend& r : running.backends) {
        bool kept = false;
        for (const Backend& b : next.backends) {
            kept = kept || b.name == r.name;
        }
        if (!kept) {
            c.applied.push_back("backends: '" + r.name + "' removed");
            c.backend_changed = true;
        }
    }
    applied(running.aliases != next.aliases, "models.aliases");
    applied(running.default_model != next.default_model, "models.default");
    applied(running.routing != next.routing, "routing");
    c.routing_changed = c.backend_changed || running.aliases != next.aliases ||
                        running.default_model != next.default_model ||
                        running.routing != next.routing;
    applied(running.auth.keys_file != next.auth.keys_file ||
                running.auth.keys_env != next.auth.keys_env || running.auth.keys != next.auth.keys,
            "auth");
    applied(running.cors != next.cors, "cors");
    applied(running.max_body_bytes != next.max_body_bytes, "limits.max_body_bytes");
    applied(running.max_header_bytes != next.max_header_bytes, "limits.max_header_bytes");
    applied(running.client_idle_ms != next.client_idle_ms, "client_idle_ms");
    applied(running.client_header_ms != next.client_header_ms, "client_header_ms");
    applied(running.client_body_ms != next.client_body_ms, "client_body_ms");
    applied(running.client_body_min_rate != next.client_body_min_rate, "client_body_min_rate");
    applied(running.shutdown_grace_ms != next.shutdown_grace_ms, "shutdown_grace_ms");
    applied(running.log_level != next.log_level, "log_level");
    applied(running.response_store != next.response_store, "responses.store");
    return c;
}

Config keep_restart_values(const Config& running, Config next) {
    next.listen_host = running.listen_host;
    next.listen_port = running.listen_port;
    next.admin_host = running.admin_host;
    next.admin_port = running.admin_port;
    next.threads = running.threads;
    next.access_log = running.access_log;
    next.max_connections = running.max_connections;
    return next;
}

}  // namespace infergate::config
