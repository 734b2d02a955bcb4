#pragma once
// The whole proxy: N workers (one thread and io_context each, SO_REUSEPORT listeners), the
// backend probe, signals and graceful shutdown. run() blocks until shutdown completes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "proxy/net.hpp"

namespace infergate {

// HOST:PORT as a URL writes it: [::1]:30000 for IPv6.
std::string net_text(const tcp::endpoint& e);

class Worker;
class Listener;
enum class ListenerKind : uint8_t;  // router.hpp

class Server {
public:
    // `reread`: loads the config again as at start (the --config file, with the command line's
    // overrides) for a reload; empty for a config-free start, which has nothing to re-read.
    explicit Server(std::shared_ptr<const config::Config> config,
                    std::function<config::LoadResult()> reread = {}, std::string config_path = {});
    ~Server();

    // Binds, prints "listening on HOST:PORT" to stdout, serves until SIGINT/SIGTERM. Returns
    // the process exit code.
    int run();

private:
    // ---- backends (server_backends.cpp; docs/routing.md) --------------------------------
    struct BackendRuntime;
    // The backends of config_: a backend whose settings did not change keeps its replicas,
    // health and what its probe found; a new or changed one starts its loops (probe, health,
    // DNS). Publishes the routing table.
    void start_backends();
    std::shared_ptr<const class RoutingTable> make_table() const;
    // A new routing table to every worker (and the metrics).
    void publish_table();
    // Probes until the backend is identified. `again`: it refused a connection or came back
    // from failing its health checks; workers keep what was known while nothing answers.
    Task<void> probe_loop(std::shared_ptr<BackendRuntime> b, bool again);
    // Active health checks of each replica, every health.interval_ms.
    Task<void> health_loop(std::shared_ptr<BackendRuntime> b);
    // discovery: dns: the host name's addresses, every resolve_interval_ms, as replicas.
    Task<void> resolve_loop(std::shared_ptr<BackendRuntime> b);
    // On control_: a worker's report that a backend refused a connection.
    void backend_down(const std::string& name);
    void spawn_probe(const std::shared_ptr<BackendRuntime>& b, bool again);
    // SIGHUP or POST /-/reload (`trigger` says which, for the log): re-reads and validates the
    // config and swaps it on every worker; a config with errors changes nothing. On control_.
    struct ReloadResult {
        int status = 200;
        std::string body;
    };
    // `applied` is posted to control_ once every worker runs the new config (at once when
    // nothing changed hands): POST /-/reload answers then, so its next request sees it.
    ReloadResult reload(
        std::string_view trigger, std::function<void()> applied = [] {});
    void shutdown();
    // The addresses to listen on: `host` if an IP, or every address the name resolves to.
    std::vector<net::ip::address> listen_addresses(const std::string& host, beast::error_code& ec);
    // Binds `host`:`port` on every worker (one acceptor each, SO_REUSEPORT) for each address
    // `host` names, serving `kind`'s routes. Returns the endpoints bound, or none after logging
    // why (`option` names the setting in the message).
    std::vector<tcp::endpoint> bind_listeners(const std::string& host, uint16_t port,
                                              ListenerKind kind, std::string_view option);
    // One line at start-up: what is reachable, from where, with which credentials.
    void log_exposure(const std::vector<tcp::endpoint>& bound,
                      const std::vector<tcp::endpoint>& admin) const;

    std::shared_ptr<const config::Config> config_;
    std::function<config::LoadResult()> reread_;
    std::string config_path_;
    std::string tls_ca_file_;  // the CA bundle tls_ was made with
    std::vector<std::shared_ptr<BackendRuntime>> backends_;  // config_'s, in its order
    std::shared_ptr<struct RoutingShared> routing_shared_;
    // By backend name, kept across reloads (Prometheus counters never go back).
    std::vector<std::shared_ptr<struct BackendCounters>> counters_;
    uint64_t next_replica_id_ = 1;
    std::unique_ptr<class Deadlines> control_deadlines_;  // health checks' timeouts
    std::unique_ptr<class Metrics> metrics_;
    std::shared_ptr<class ClientAuth> auth_;  // client keys, shared by the workers
    std::shared_ptr<class ResponseStore> responses_;  // Responses API turns, shared likewise
    std::unique_ptr<struct ConnectionBudget> connections_;
    std::string fd_note_;  // the descriptor limit as raised at start, for the log
    int access_log_fd_ = -1;
    net::io_context control_{1};  // signals and the probe, on the main thread
    std::optional<net::ssl::context> tls_;  // only for an https backend
    std::vector<std::unique_ptr<Worker>> workers_;
    // Per worker, one listener per listen address (localhost: 127.0.0.1 and ::1).
    std::vector<std::vector<std::unique_ptr<Listener>>> listeners_;
    bool shutting_down_ = false;
    std::string startup_error_;
};

}  // namespace infergate
