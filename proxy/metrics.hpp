#pragma once
// Per-request latency and token metrics (docs/metrics.md has the catalogue).
//
// Threading: prometheus-cpp's Histogram takes a mutex on every Observe() and Family::Add hashes
// labels under a mutex, so neither is used on the request path. Each worker thread owns one
// WorkerMetrics: fixed arrays of counters and histogram buckets indexed by label slots bound at
// start-up, written only by that worker (relaxed atomic loads/stores: no lock, no read-modify-
// write shared between threads). A scrape (any thread) reads every worker's arrays, sums them
// into prometheus-cpp MetricFamily values and renders them with its TextSerializer.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace prometheus {
struct MetricFamily;
}

namespace infergate {

// Label values that never come from client text.
// The client's dialect and route (one per front dialect).
enum class RouteLabel : uint8_t {
    sglang_generate,
    openai_completions,
    openai_chat,
    tgi_generate,
    ollama_generate,
    ollama_chat,
    llamacpp_completion,
    vllm_generate,
    anthropic_messages,
    // Embeddings, by the client's API; the tokenizer's routes (every API together).
    openai_embeddings,
    ollama_embed,
    ollama_embeddings,
    tei_embed,
    llamacpp_embedding,
    tokenize,
    detokenize,
    apply_template,
    openai_responses,
    kCount
};
enum class OutcomeLabel : uint8_t {
    ok,
    client_disconnect,
    upstream_error,
    inband_error,
    truncated,
    timeout,
    rejected,
    kCount
};
enum class UpstreamErrorKind : uint8_t {
    connect,
    timeout,
    reset,
    protocol,
    status_4xx,
    status_5xx,
    kCount
};
// How the answer ended (its first choice's finish, or tool_calls when any choice called a
// tool): the bounded label that tells tool-call turns apart.
enum class FinishLabel : uint8_t {
    none,  // no finish seen (an error, a stream cut short, a backend that does not say)
    stop,
    length,
    tool_calls,
    content_filter,
    kCount
};
std::string_view to_string(RouteLabel r);
std::string_view to_string(FinishLabel f);
std::string_view to_string(OutcomeLabel o);
std::string_view to_string(UpstreamErrorKind k);

// Everything measured about one finished request, handed over once at its end.
struct RequestRecord {
    RouteLabel route = RouteLabel::openai_completions;
    int model_slot = 0;  // from Metrics::model_slot()
    OutcomeLabel outcome = OutcomeLabel::ok;
    FinishLabel finish = FinishLabel::none;
    int status = 200;  // the status sent; 0 when none was (label status_class="none")
    bool streamed = false;
    double e2e_seconds = 0;                // received → last byte sent
    std::optional<double> ttft_seconds;    // received → first content-bearing chunk sent
    std::optional<double> tpot_seconds;    // (e2e − ttft) / (output tokens − 1)
    std::optional<int64_t> prompt_tokens;  // from the backend's own usage
    std::optional<int64_t> completion_tokens;
    std::optional<int64_t> cached_tokens;
    std::optional<int64_t> reasoning_tokens;            // of completion_tokens, where reported
    std::optional<double> upstream_connect_seconds;     // when a new connection was made
    std::optional<double> upstream_first_byte_seconds;  // request sent → response header
    // What the route has tokens of: an embedding has input tokens only, the tokenizer's routes
    // none that the backend counts as work. A request without one of them is never counted as
    // "unknown" for it.
    bool input_tokens = true;
    bool output_tokens = true;
    double overhead_seconds = 0;  // e2e minus time spent waiting for the backend and the client
};

class Metrics;

// One worker's metrics. Only its own thread writes; any thread may read. Aligned so that two
// workers' hot counters (started/finished) never share a cache line.
class alignas(64) WorkerMetrics {
public:
    explicit WorkerMetrics(const Metrics& owner);
    WorkerMetrics(const WorkerMetrics&) = delete;
    WorkerMetrics& operator=(const WorkerMetrics&) = delete;

    // Call both, once each, for every request that request_finished() will describe: their
    // difference is the in-flight gauge.
    void request_started();
    void request_finished(const RequestRecord& r);
    // One content-bearing chunk that carried `tokens` tokens, `gap_seconds` after the previous
    // one: observed as `tokens` inter-token latencies of gap/tokens each.
    void observe_chunk(RouteLabel route, int model_slot, double gap_seconds, int64_t tokens);
    void upstream_error(UpstreamErrorKind kind);

private:
    friend class Metrics;
    // Written by one thread only, so a relaxed load + store (no locked read-modify-write) is
    // enough; readers on other threads still see whole values.
    struct Counter {
        std::atomic<uint64_t> v{0};
        void add(uint64_t n) {
            v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
        }
        [[nodiscard]] uint64_t get() const { return v.load(std::memory_order_relaxed); }
    };
    struct Histogram {
        // One per upper bound plus +Inf, not cumulative. There is no separate count: render()
        // derives it from the buckets, so _count always equals the +Inf bucket in a scrape.
        std::unique_ptr<Counter[]> buckets;
        std::atomic<double> sum{0};
        void observe(std::span<const double> bounds, double value, uint64_t times = 1);
    };

    [[nodiscard]] size_t series(RouteLabel route, int model_slot) const;  // [route][model], clamped

    const Metrics& owner_;
    std::unique_ptr<Counter[]> requests_;        // [route][model][outcome][status class]
    std::unique_ptr<Counter[]> tokens_;          // [route][model][prompt, completion, cached]
    std::unique_ptr<Counter[]> tokens_unknown_;  // [route][model][input, output]
    std::unique_ptr<Counter[]> finishes_;        // [route][model][finish]
    std::unique_ptr<Histogram[]> histograms_;    // [kind][route][model]
    std::unique_ptr<Histogram[]> overhead_;      // [route]
    Histogram upstream_connect_;
    Histogram upstream_first_byte_;
    std::array<Counter, static_cast<size_t>(UpstreamErrorKind::kCount)> upstream_errors_;
    Counter started_;
    Counter finished_;  // stored with release, loaded with acquire: see render()
};

class Metrics {
public:
    // The Content-Type of render()'s output.
    static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

    // `workers` WorkerMetrics are created; the model label slots come from the config (backend
    // models and aliases) plus one slot for a discovered model and one overflow slot ("other").
    Metrics(const config::Config& config, int workers);
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    WorkerMetrics& worker(int index) { return *workers_[static_cast<size_t>(index)]; }

    // The slot for a model name as the client or backend gave it: a configured or discovered
    // name, else the overflow slot. Never creates a label from client text. An empty name (a
    // request that names no model, like SGLang's /generate) is counted under the model the
    // backend serves: its configured model, else the discovered one, else "other".
    int model_slot(std::string_view name) const;
    // Called once the backend's served model is known (from any thread; start-up only). The first
    // call wins; a name that is already configured (or empty) needs no slot and is ignored.
    void set_discovered_model(const std::string& name);

    // The Prometheus text exposition (format 0.0.4) of everything. Labelled series appear once
    // they have been observed; the in-flight gauge, upstream errors and build info always do.
    std::string render() const;

    // The routing table now in force (any thread): the infergate_backend_* families are read
    // from its backends' counters and replicas at each scrape.
    void set_routing(std::shared_ptr<const class RoutingTable> table);

    // A config reload (any thread): infergate_config_reloads_total{result}.
    void count_reload(bool ok) {
        (ok ? reloads_ok_ : reloads_error_).fetch_add(1, std::memory_order_relaxed);
    }

    // ---- used by WorkerMetrics and render() --------------------------------------------
    size_t model_slots() const { return model_names_.size(); }
    const std::string& backend_name() const { return backend_name_; }

private:
    friend class WorkerMetrics;
    bool discovered() const { return discovered_set_.load(std::memory_order_acquire); }
    // The slot of the backend's served model (configured or discovered): where a request that
    // names no model is counted. -1 until known.
    std::atomic<int> served_slot_{-1};

    std::string backend_name_;
    std::vector<std::string> model_names_;  // slot → label value; last is "other"
    size_t configured_models_ = 0;          // slots [0, configured_models_) come from config
    int discovered_slot_ = -1;
    int default_slot_ = -1;                        // the configured backend model's slot, or -1
    std::atomic<bool> discovered_claimed_{false};  // one writer for model_names_[discovered]
    std::atomic<bool> discovered_set_{false};      // release: that name is written
    std::vector<std::unique_ptr<WorkerMetrics>> workers_;
    mutable std::atomic<size_t> last_render_size_{0};
    std::atomic<uint64_t> reloads_ok_{0};
    std::atomic<uint64_t> reloads_error_{0};  // a capacity hint for the next scrape
    mutable std::mutex routing_mutex_;
    std::shared_ptr<const class RoutingTable> routing_;
    // The backend families (metrics_render.cpp).
    void render_backends(std::vector<prometheus::MetricFamily>& out) const;
};

}  // namespace infergate
