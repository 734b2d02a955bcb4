#pragma once

#include <optional>
// The whole proxy: N workers (one thread and io_context each, SO_REUSEPORT listeners), the
// backend probe, signals and graceful shutdown. run() blocks until shutdown completes.

#include <memory>
#include <vector>

#include "config/config.hpp"
#include "proxy/net.hpp"

namespace infergate {

class Worker;
class Listener;

class Server {
public:
    explicit Server(std::shared_ptr<const config::Config> config);
    ~Server();

    // Binds, prints "listening on HOST:PORT" to stdout, serves until SIGINT/SIGTERM. Returns
    // the process exit code.
    int run();

private:
    // The backend as the config describes it, when it names both dialect and model.
    std::optional<struct BackendInfo> configured_backend() const;
    Task<void> probe_loop();
    void publish(const struct BackendInfo& info);
    void shutdown();

    std::shared_ptr<const config::Config> config_;
    std::unique_ptr<class Metrics> metrics_;
    int access_log_fd_ = -1;
    net::io_context control_{1};  // signals and the probe, on the main thread
    std::optional<net::ssl::context> tls_;  // only for an https backend
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    bool shutting_down_ = false;
    std::string startup_error_;
};

}  // namespace infergate
