#pragma once
// Routing across backends (docs/routing.md): which backends serve which model, the replicas
// (addresses) of each, and which replica a request goes to.
//
// The state that changes per request (requests in flight, failures, ejection) lives in `Replica`,
// shared by every worker as atomics: nothing is locked on the request path. What changes rarely
// (backends, what their probes found, DNS answers, the config) is an immutable `RoutingTable`
// rebuilt on the server's thread and posted to each worker, which keeps it by shared_ptr like the
// config: a request finishes on the table it started with.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "proxy/prefix_index.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace canonical {
struct GenerationRequest;
}

using SteadyNs = int64_t;  // steady_clock nanoseconds
SteadyNs steady_now_ns();

// One address of a backend. Kept across tables (and reloads that leave its backend unchanged).
struct Replica {
    Replica(uint64_t id, std::string address, std::optional<net::ip::address> ip);
    const uint64_t id;          // unique in the process, never 0 (prefix index, worker pools)
    const std::string address;  // "10.0.0.7:8000" (dns discovery) or the URL's authority
    const std::optional<net::ip::address> ip;  // dns discovery: connect here, not to the name

    std::atomic<int> outstanding{0};  // requests in flight on it, every worker together
    std::atomic<uint64_t> picks{0};   // times chosen: breaks ties between equal loads
    std::atomic<int> failures{0};     // consecutive (passive ejection)
    std::atomic<int> ejections{0};    // in a row: the next ejection lasts twice as long
    std::atomic<SteadyNs> ejected_until{0};
    std::atomic<bool> healthy{true};   // the active checks' verdict
    std::atomic<int> check_streak{0};  // the active checks' run (+ passed, - failed)

    bool ejected(SteadyNs now) const { return ejected_until.load(std::memory_order_relaxed) > now; }
    bool available(SteadyNs now) const {
        return healthy.load(std::memory_order_relaxed) && !ejected(now);
    }
    // A request got a usable answer: the failure run ends.
    void succeeded();
    // A connect error, reset, 5xx or timeout. True when this failure ejected the replica.
    bool failed(const config::Routing& r, SteadyNs now);
};

// What a backend counts for the metrics (by its configured name, kept across reloads). Shared
// by every worker: relaxed atomic adds.
struct BackendCounters {
    explicit BackendCounters(std::string n) : name(std::move(n)) {}
    const std::string name;
    std::atomic<uint64_t> requests{0};  // sent to it (every try)
    std::atomic<uint64_t> errors{0};    // tries that failed (connect, reset, 5xx, timeout)
    std::atomic<uint64_t> retries{0};   // tries moved from it to another replica
    std::atomic<uint64_t> ejections{0};
    std::atomic<uint64_t> hedges{0};                 // second tries sent to it by the TTFT hedge
    std::atomic<uint64_t> latency_buckets[12] = {};  // response head latency, see kLatencyBounds
    std::atomic<double> latency_sum{0};
    std::atomic<int> up{0};            // gauge: a replica is available and the backend known
    std::atomic<int> replicas{0};      // gauge: replicas known
    std::atomic<int> replicas_out{0};  // gauge: ejected or failing health checks
    static constexpr double kLatencyBounds[11] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                  0.5,   1,    2.5,   5,    10};
    void observe_latency(double seconds);
};

// One backend in a table: its settings, what its probe learned, its replicas.
struct BackendView {
    config::Backend config;
    BackendInfo info;
    std::vector<std::shared_ptr<Replica>> replicas;
    std::shared_ptr<BackendCounters> counters;
};

// State shared by every table of one server (the prefix index outlives reloads).
struct RoutingShared {
    explicit RoutingShared(PrefixIndex::Options o) : prefix(o) {}
    PrefixIndex prefix;
    std::atomic<int> in_flight{0};  // generations routed and not finished
    std::atomic<int> retrying{0};   // of those, the ones on a second or later try
};

// A replica as a member of a model's pool.
struct PoolMember {
    Replica* replica;  // owned by the table's backends[backend].replicas
    uint32_t backend;
    int weight;
};

class RoutingTable {
public:
    using Member = PoolMember;
    struct Pool {
        std::string model;  // the name its backends serve it under
        std::vector<Member> members;
    };

    RoutingTable(std::vector<BackendView> backends, const config::Config& config,
                 std::shared_ptr<RoutingShared> shared);

    const std::vector<BackendView>& backends() const { return backends_; }
    const config::Routing& routing() const { return routing_; }
    RoutingShared& shared() const { return *shared_; }

    // The pool for the model a client named (aliases; "" is the default model; Ollama's
    // ":latest" either way), and the name the backends serve it under. nullptr: none serves it.
    const Pool* find(std::string_view client_model, std::string& upstream_model) const;
    // The model requests that name none get (models.default, else the first backend's).
    const std::string& default_model() const { return default_model_; }
    // Names clients may use: every served model, then every alias, without repeats.
    std::vector<std::string> model_names() const;
    // The backend whose facts the info routes show (the default model's first backend).
    const BackendView& primary() const { return backends_[primary_]; }
    // Whether some backend has not been identified yet (its models are unknown).
    bool any_unready() const;

    // The replica for a request: the pool's available members (all of them when none is: a
    // pool never refuses for its health alone), minus `tried`, restricted to `same_as`'s
    // dialect when set (a retry reuses the request as encoded); by prefix affinity bounded by
    // load, else the less loaded of two picked by weight. nullptr when none is left.
    const Member* choose(const Pool& pool, std::string_view prefix_key,
                         std::span<const uint64_t> tried, const Member* same_as,
                         std::mt19937_64& rng) const;

private:
    // The pool of a served name, exactly.
    const Pool* pool_named(std::string_view name) const;

    std::vector<BackendView> backends_;
    std::vector<Pool> pools_;
    // Served name → pool, looked up by string_view (no string built per request).
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> by_model_;
    std::vector<config::Alias> aliases_;
    std::string default_model_;
    size_t primary_ = 0;
    config::Routing routing_;
    std::shared_ptr<RoutingShared> shared_;
};

// The bytes prefix affinity keys a request by: a completion's prompt, or a chat's messages in
// order (role and content of each), so that chats sharing a system prompt share a prefix.
std::string prefix_key(const canonical::GenerationRequest& req);

// Whether a retry may start now (routing.retries budget): retries in flight stay under
// budget_percent of requests in flight, or budget_min.
bool retry_allowed(const RoutingShared& shared, const config::Routing& r);

}  // namespace infergate
