#pragma once
// One worker per thread: its own io_context, listener, upstream pool and a copy of what was
// learned about the backend. Everything here is touched only from the worker's own thread;
// other threads reach it only through net::post onto its io_context.

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "proxy/deadlines.hpp"
#include "proxy/metrics.hpp"
#include "proxy/net.hpp"
#include "proxy/upstream_pool.hpp"
#include "translators/codec.hpp"

namespace infergate {

class Session;
class ClientAuth;
class ResponseStore;
class RoutingTable;
struct Replica;

// What the proxy knows about its backend: configured, or found by probing its info routes.
struct BackendInfo {
    bool ready = false;  // dialect and model are known
    config::BackendDialect dialect = config::BackendDialect::openai;
    translators::Flavor flavor = translators::Flavor::generic;
    std::string served_model;         // the name the backend answers to (its first model)
    std::vector<std::string> models;  // every model it serves (served_model first when known)
    std::optional<int64_t> max_model_len;
    std::string detail;  // how it was found, or why it is not known yet
};

// The client connections all workers hold together, against limits.max_connections (shared:
// SO_REUSEPORT spreads connections unevenly, a per-worker share would refuse too early).
struct ConnectionBudget {
    int64_t cap = 0;
    std::atomic<int64_t> open{0};
};

class Worker {
public:
    Worker(int index, std::shared_ptr<const config::Config> config, net::ssl::context* tls,
           Metrics& metrics, int access_log_fd, ConnectionBudget& connections);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    int index() const { return index_; }
    net::io_context& io() { return io_; }
    Deadlines& deadlines() { return deadlines_; }
    // The running config, pool and client keys; a reload replaces them (apply()). An exchange
    // copies the shared_ptrs at its start and reads only its copies: it finishes on the config
    // it started with.
    const config::Config& config() const { return *config_; }
    const std::shared_ptr<const config::Config>& config_ptr() const { return config_; }
    // The routing table (routing.hpp): backends, replicas, pools by model. Posted by the server
    // whenever it changes; an exchange copies the pointer at its start.
    const std::shared_ptr<const RoutingTable>& table() const { return table_; }
    // Pools of replicas missing from the new table are retired.
    void set_table(std::shared_ptr<const RoutingTable> table);
    // The connection pool of one replica of `backend`, made on first use.
    std::shared_ptr<UpstreamPool> pool_for(const Replica& replica, const config::Backend& backend);
    WorkerMetrics& metrics() { return metrics_.worker(index_); }
    Metrics& metrics_registry() { return metrics_; }
    int access_log_fd() const { return access_log_fd_; }  // -1: access log off
    // An exchange could not connect to a backend. Refused or unresolvable means the backend
    // went away, perhaps to come back as another engine or model: the server is told (at most
    // once a second per worker, never per request) and probes it again until it answers.
    void backend_unreachable(const beast::error_code& ec, const std::string& backend);
    // Set by the server before the worker runs; called on the worker's thread with the
    // backend's name.
    void on_backend_down(std::function<void(const std::string&)> fn) {
        on_backend_down_ = std::move(fn);
    }

    // Client keys (null or disabled: none configured). Shared by every worker.
    ClientAuth* auth() const { return auth_.get(); }
    const std::shared_ptr<ClientAuth>& auth_ptr() const { return auth_; }
    void set_auth(std::shared_ptr<ClientAuth> auth) { auth_ = std::move(auth); }
    // The Responses API's answered turns (response_store.hpp). Shared by every worker.
    ResponseStore& responses() const { return *responses_; }
    void set_responses(std::shared_ptr<ResponseStore> store) { responses_ = std::move(store); }

    // A reload (on this worker's thread, posted by the server): the new config and keys
    // (`tls`: the context for https backends, made by the server when the first one appears).
    // The routing table comes separately (set_table).
    void apply(std::shared_ptr<const config::Config> config, std::shared_ptr<ClientAuth> auth,
               net::ssl::context* tls);

    // POST /-/reload: runs the reload on the server's thread and resumes with its outcome.
    struct ReloadOutcome {
        int status = 200;  // 200, 400 (the file has errors), 409 (no file to re-read)
        std::string body;  // JSON: what changed, or the errors (OpenAI's error shape)
    };
    using Reloader = std::function<void(std::function<void(ReloadOutcome)>)>;
    void set_reloader(Reloader fn) { reloader_ = std::move(fn); }
    Task<ReloadOutcome> reload();

    // Random hex ids (request ids, completion ids). Per-worker generator: no shared state.
    std::string random_hex(size_t chars);

    // Sessions register themselves so that shutdown can close the idle ones, and the
    // connection cap can shed them. Two lists: connections that have not been served a request
    // yet (in accept order), and the others (in the order they last became idle, nginx's
    // reusable-connection queue). `served` says which list a session is in.
    using SessionList = std::list<Session*>;
    SessionList::iterator add_session(Session* s) { return fresh_.insert(fresh_.end(), s); }
    void remove_session(SessionList::iterator it, bool served) {
        (served ? served_ : fresh_).erase(it);
    }
    // A session waits for its next request: to the back of the served list.
    void session_idle(SessionList::iterator it, bool served) {
        served_.splice(served_.end(), served ? served_ : fresh_, it);
    }
    bool stopping() const { return stopping_; }
    ConnectionBudget& connections() { return connections_; }
    // Closes one of this worker's connections that wait for a request (keep-alive idle, or a
    // request head still arriving): the oldest that has not been served a request yet (a
    // flood of silent connections goes first), else the keep-alive connection idle the
    // longest, so that a client between two requests is the last to go. False when every
    // one is busy with an exchange.
    bool shed_oldest_idle();
    // Stop accepting keep-alive requests; idle sessions close now, busy ones after their
    // exchange.
    void begin_shutdown();
    // The grace period over: every exchange in flight ends now with an error its client sees.
    void abort_in_flight();

    std::chrono::system_clock::time_point started() const { return started_; }

private:
    int index_;
    // Declared before io_: sessions and connections still pending when io_ is destroyed
    // unregister their deadlines from it (its timer is destroyed first, in ~Worker).
    Deadlines deadlines_;
    // One thread runs it: the reactor's per-socket locks are not needed (posts from other
    // threads still go through the scheduler's lock).
    net::io_context io_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    std::shared_ptr<const config::Config> config_;
    net::ssl::context* tls_;
    std::shared_ptr<const RoutingTable> table_;
    std::unordered_map<uint64_t, std::shared_ptr<UpstreamPool>> pools_;  // by Replica::id
    uint64_t last_pool_id_ = 0;  // the last pool_for() answer, asked again (one replica: always)
    std::shared_ptr<UpstreamPool> last_pool_;
    Reloader reloader_;
    Metrics& metrics_;
    int access_log_fd_;
    std::function<void(const std::string&)> on_backend_down_;
    std::shared_ptr<ClientAuth> auth_;
    std::shared_ptr<ResponseStore> responses_;
    std::unordered_map<std::string, std::chrono::steady_clock::time_point> last_down_report_;
    std::mt19937_64 rng_;

public:
    std::mt19937_64& rng() { return rng_; }

private:
    // Both lists, copied (closing a session may unregister it).
    std::vector<Session*> sessions() const;
    SessionList fresh_;   // not served a request yet: the oldest first
    SessionList served_;  // served at least one: the longest idle first (busy ones too)
    ConnectionBudget& connections_;
    bool stopping_ = false;
    std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
};

}  // namespace infergate
