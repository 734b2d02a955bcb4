// Metrics::render(): sums every worker's counters and histograms into prometheus-cpp families
// and writes the text exposition served on /metrics.
#include "proxy/metrics.hpp"
#include "proxy/routing.hpp"

#include <limits>
#include <ostream>
#include <streambuf>
#include <utility>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "proxy/metrics_layout.hpp"
#include "proxy/version.hpp"

namespace infergate {

namespace {

using namespace metrics_detail;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string_view operation_name(size_t route) {
    // OpenTelemetry's gen_ai.operation.name values.
    switch (static_cast<RouteLabel>(route)) {
        case RouteLabel::openai_chat:
        case RouteLabel::ollama_chat:
        case RouteLabel::anthropic_messages:
        case RouteLabel::openai_responses:
            return "chat";
        case RouteLabel::openai_embeddings:
        case RouteLabel::ollama_embed:
        case RouteLabel::ollama_embeddings:
        case RouteLabel::tei_embed:
        case RouteLabel::llamacpp_embedding:
            return "embeddings";
        case RouteLabel::tokenize:
        case RouteLabel::detokenize:
        case RouteLabel::apply_template:
            return "tokenize";  // not an OpenTelemetry operation: infergate's own
        default:
            return "text_completion";
    }
}

// Appends straight to a string reserved to the last scrape's size: std::ostringstream would grow
// by doubling (copying a megabyte several times) and copy the result once more in str().
class StringSink : public std::streambuf {
public:
    explicit StringSink(std::string& out) : out_(out) {}

protected:
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        out_.append(s, static_cast<size_t>(n));
        return n;
    }
    int_type overflow(int_type c) override {
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            out_.push_back(traits_type::to_char_type(c));
        }
        return traits_type::not_eof(c);
    }

private:
    std::string& out_;
};

ClientMetric::Label label(std::string_view name, std::string_view value) {
    return ClientMetric::Label{std::string(name), std::string(value)};
}

MetricFamily family(std::string name, std::string help, MetricType type) {
    MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
}

}  // namespace

std::string Metrics::render() const {
    const size_t models = model_names_.size();
    const size_t series_count = kRoutes * models;
    const bool has_discovered = discovered();
    std::vector<MetricFamily> out;
    out.reserve(20);

    // Label values per [route][model] series. An unset discovered slot holds nothing (nobody is
    // handed its index before it is set) and its name must not be read yet.
    auto series_live = [&](size_t s) {
        return has_discovered || s % models != static_cast<size_t>(discovered_slot_);
    };
    auto model_of = [&](size_t s) -> const std::string& { return model_names_[s % models]; };
    auto route_of = [&](size_t s) { return to_string(static_cast<RouteLabel>(s / models)); };
    auto infergate_labels = [&](size_t s) {
        return std::vector<ClientMetric::Label>{label("route", route_of(s)),
                                                label("backend", backend_name_),
                                                label("model", model_of(s))};
    };
    auto gen_ai_labels = [&](size_t s) {
        return std::vector<ClientMetric::Label>{
            label("gen_ai_operation_name", operation_name(s / models)),
            label("gen_ai_request_model", model_of(s)), label("route", route_of(s)),
            label("backend", backend_name_)};
    };

    // Sums one histogram (`of` picks it out of a worker) over the workers; false when nothing was
    // observed.
    auto sum_histogram = [&](auto of, std::span<const double> bounds, ClientMetric& m) {
        std::vector<uint64_t> counts(bounds.size() + 1, 0);
        double sum = 0;
        for (const auto& w : workers_) {
            const WorkerMetrics::Histogram& h = of(*w);
            for (size_t i = 0; i < counts.size(); ++i) {
                counts[i] += h.buckets[i].get();
            }
            sum += h.sum.load(std::memory_order_relaxed);
        }
        auto& hist = m.histogram;
        hist.bucket.resize(counts.size());
        uint64_t cumulative = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
            cumulative += counts[i];
            hist.bucket[i].cumulative_count = cumulative;
            hist.bucket[i].upper_bound =
                i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
        }
        hist.sample_count = cumulative;
        hist.sample_sum = sum;
        return cumulative > 0;
    };
    auto sum_counter = [&](auto array, size_t index) {
        uint64_t total = 0;
        for (const auto& w : workers_) {
            total += ((*w).*array)[index].get();
        }
        return total;
    };

    {
        MetricFamily f =
            family("infergate_build_info",
                   "infergate's version and git commit (value is always 1).", MetricType::Gauge);
        ClientMetric m;
        m.label = {label("version", kVersion), label("commit", kGitCommit)};
        m.gauge.value = 1;
        f.metric.push_back(std::move(m));
        out.push_back(std::move(f));
    }
    {
        MetricFamily f = family("infergate_requests_total",
                                "Generation requests finished, by route, backend, model, outcome "
                                "and status class.",
                                MetricType::Counter);
        for (size_t s = 0; s < series_count; ++s) {
            if (!series_live(s)) {
                continue;
            }
            for (size_t o = 0; o < kOutcomes; ++o) {
                for (size_t c = 0; c < kStatusClassCount; ++c) {
                    const uint64_t v = sum_counter(&WorkerMetrics::requests_,
                                                   (s * kOutcomes + o) * kStatusClassCount + c);
                    if (v == 0) {
                        continue;
                    }
                    ClientMetric m;
                    m.label = infergate_labels(s);
                    m.label.push_back(label("outcome", to_string(static_cast<OutcomeLabel>(o))));
                    m.label.push_back(label("status_class", kStatusClasses[c]));
                    m.counter.value = static_cast<double>(v);
                    f.metric.push_back(std::move(m));
                }
            }
        }
        out.push_back(std::move(f));
    }
    {
        // Finished first (acquire), started second: every finish seen has its start visible, so
        // the difference is never negative.
        uint64_t finished = 0;
        uint64_t started = 0;
        for (const auto& w : workers_) {
            finished += w->finished_.v.load(std::memory_order_acquire);
        }
        for (const auto& w : workers_) {
            started += w->started_.get();
        }
        MetricFamily f =
            family("infergate_requests_in_flight",
                   "Generation requests received and not yet finished.", MetricType::Gauge);
        ClientMetric m;
        m.gauge.value = started > finished ? static_cast<double>(started - finished) : 0.0;
        f.metric.push_back(std::move(m));
        out.push_back(std::move(f));
    }

    // Per [route][model] histograms.
    auto per_series = [&](std::string name, std::string help, Kind k, bool gen_ai) {
        MetricFamily f = family(std::move(name), std::move(help), MetricType::Histogram);
        for (size_t s = 0; s < series_count; ++s) {
            if (!series_live(s)) {
                continue;
            }
            ClientMetric m;
            const size_t index = k * series_count + s;
            if (!sum_histogram(
                    [index](const WorkerMetrics& w) -> const WorkerMetrics::Histogram& {
                        return w.histograms_[index];
                    },
                    bounds_of(k), m)) {
                continue;
            }
            m.label = gen_ai ? gen_ai_labels(s) : infergate_labels(s);
            f.metric.push_back(std::move(m));
        }
        return f;
    };
    out.push_back(per_series("gen_ai_client_operation_duration_seconds",
                             "End-to-end request duration: request received to last byte sent.",
                             kE2e, true));
    out.push_back(per_series("gen_ai_client_operation_time_to_first_chunk_seconds",
                             "Time to first token: request received to the first content-bearing "
                             "chunk sent (streams only).",
                             kTtft, true));
    out.push_back(per_series("gen_ai_client_operation_time_per_output_chunk_seconds",
                             "Gap between consecutive content-bearing chunks sent (streams only).",
                             kChunk, true));
    out.push_back(per_series("infergate_inter_token_latency_seconds",
                             "Inter-token latency: each chunk gap divided over the tokens it "
                             "carried, observed once per token (streams only).",
                             kItl, false));
    out.push_back(per_series("infergate_time_per_output_token_seconds",
                             "Time per output token of a request: (e2e - TTFT) / (output tokens "
                             "- 1) (streams with at least 2 output tokens).",
                             kTpot, false));
    {
        MetricFamily f = family("gen_ai_client_token_usage",
                                "Tokens per request from the backend's usage, by token type "
                                "(input = prompt, output = completion).",
                                MetricType::Histogram);
        for (const auto& [k, type] :
             {std::pair{kTokensIn, "input"}, std::pair{kTokensOut, "output"}}) {
            MetricFamily part = per_series("", "", k, true);
            for (ClientMetric& m : part.metric) {
                m.label.push_back(label("gen_ai_token_type", type));
                f.metric.push_back(std::move(m));
            }
        }
        out.push_back(std::move(f));
    }

    auto token_counter = [&](std::string name, std::string help, TokenKind k) {
        MetricFamily f = family(std::move(name), std::move(help), MetricType::Counter);
        for (size_t s = 0; s < series_count; ++s) {
            if (!series_live(s)) {
                continue;
            }
            const uint64_t v = sum_counter(&WorkerMetrics::tokens_, s * kTokenKinds + k);
            if (v == 0) {
                continue;
            }
            ClientMetric m;
            m.label = infergate_labels(s);
            m.counter.value = static_cast<double>(v);
            f.metric.push_back(std::move(m));
        }
        out.push_back(std::move(f));
    };
    token_counter("infergate_prompt_tokens_total",
                  "Prompt (input) tokens, from the backend's usage.", kPrompt);
    token_counter("infergate_completion_tokens_total",
                  "Completion (output) tokens, from the backend's usage.", kCompletion);
    token_counter("infergate_cached_prompt_tokens_total",
                  "Prompt tokens served from the backend's prefix cache, where it reports them.",
                  kCached);
    token_counter("infergate_reasoning_tokens_total",
                  "Of the completion tokens, those the model spent reasoning, where the backend "
                  "reports them (OpenAI completion_tokens_details, SGLang reasoning_tokens).",
                  kReasoning);
    {
        MetricFamily f = family("infergate_finish_reasons_total",
                                "Answers by how the generation ended (tool_calls: the model "
                                "called a tool), in any dialect's words mapped to these.",
                                MetricType::Counter);
        for (size_t s = 0; s < series_count; ++s) {
            if (!series_live(s)) {
                continue;
            }
            for (size_t k = 1; k < kFinishes; ++k) {
                const uint64_t v = sum_counter(&WorkerMetrics::finishes_, s * kFinishes + k);
                if (v == 0) {
                    continue;
                }
                ClientMetric m;
                m.label = infergate_labels(s);
                m.label.push_back(label("finish_reason", to_string(static_cast<FinishLabel>(k))));
                m.counter.value = static_cast<double>(v);
                f.metric.push_back(std::move(m));
            }
        }
        out.push_back(std::move(f));
    }
    {
        MetricFamily f = family("infergate_requests_tokens_unknown_total",
                                "Answered (2xx) requests whose token count the backend did not "
                                "report, by token type; they are not in the token counters.",
                                MetricType::Counter);
        for (size_t s = 0; s < series_count; ++s) {
            if (!series_live(s)) {
                continue;
            }
            for (size_t k = 0; k < kUnknownKinds; ++k) {
                const uint64_t v =
                    sum_counter(&WorkerMetrics::tokens_unknown_, s * kUnknownKinds + k);
                if (v == 0) {
                    continue;
                }
                ClientMetric m;
                m.label = infergate_labels(s);
                m.label.push_back(label("token_type", k == kUnknownInput ? "input" : "output"));
                m.counter.value = static_cast<double>(v);
                f.metric.push_back(std::move(m));
            }
        }
        out.push_back(std::move(f));
    }

    auto backend_histogram = [&](std::string name, std::string help,
                                 const WorkerMetrics::Histogram WorkerMetrics::*member,
                                 std::span<const double> bounds) {
        MetricFamily f = family(std::move(name), std::move(help), MetricType::Histogram);
        ClientMetric m;
        if (sum_histogram([member](const WorkerMetrics& w)
                              -> const WorkerMetrics::Histogram& { return w.*member; },
                          bounds, m)) {
            m.label = {label("backend", backend_name_)};
            f.metric.push_back(std::move(m));
        }
        out.push_back(std::move(f));
    };
    backend_histogram("infergate_upstream_connect_seconds",
                      "Time to open a new backend connection (TCP, and TLS for https).",
                      &WorkerMetrics::upstream_connect_, kConnectBuckets);
    backend_histogram("infergate_upstream_first_byte_seconds",
                      "Request sent to the backend to its response header received.",
                      &WorkerMetrics::upstream_first_byte_, kTtftBuckets);
    {
        MetricFamily f = family("infergate_upstream_errors_total", "Failed backend calls, by kind.",
                                MetricType::Counter);
        for (size_t k = 0; k < kErrorKinds; ++k) {
            uint64_t v = 0;
            for (const auto& w : workers_) {
                v += w->upstream_errors_[k].get();
            }
            ClientMetric m;
            m.label = {label("backend", backend_name_),
                       label("kind", to_string(static_cast<UpstreamErrorKind>(k)))};
            m.counter.value = static_cast<double>(v);
            f.metric.push_back(std::move(m));
        }
        out.push_back(std::move(f));
    }
    {
        MetricFamily f = family("infergate_overhead_seconds",
                                "Time spent inside infergate per request: e2e minus the time "
                                "waiting for the backend and for client writes.",
                                MetricType::Histogram);
        for (size_t r = 0; r < kRoutes; ++r) {
            ClientMetric m;
            if (!sum_histogram([r](const WorkerMetrics& w)
                                   -> const WorkerMetrics::Histogram& { return w.overhead_[r]; },
                               kOverheadBuckets, m)) {
                continue;
            }
            m.label = {label("route", to_string(static_cast<RouteLabel>(r))),
                       label("backend", backend_name_)};
            f.metric.push_back(std::move(m));
        }
        out.push_back(std::move(f));
    }
    render_backends(out);
    {
        MetricFamily f = family("infergate_config_reloads_total",
                                "Config reloads (SIGHUP, POST /-/reload), by result: error kept "
                                "the running config.",
                                MetricType::Counter);
        for (const bool ok : {true, false}) {
            ClientMetric m;
            m.label = {label("result", ok ? "ok" : "error")};
            m.counter.value = static_cast<double>(
                (ok ? reloads_ok_ : reloads_error_).load(std::memory_order_relaxed));
            f.metric.push_back(std::move(m));
        }
        out.push_back(std::move(f));
    }

    std::string text;
    text.reserve(last_render_size_.load(std::memory_order_relaxed) + 4096);
    StringSink sink(text);
    std::ostream stream(&sink);
    prometheus::TextSerializer().Serialize(stream, out);
    last_render_size_.store(text.size(), std::memory_order_relaxed);
    return text;
}

void Metrics::render_backends(std::vector<MetricFamily>& out) const {
    std::shared_ptr<const RoutingTable> table;
    {
        std::lock_guard lock(routing_mutex_);
        table = routing_;
    }
    if (!table) {
        return;
    }
    const SteadyNs now = steady_now_ns();
    const auto gauge = [](double v) {
        ClientMetric m;
        m.gauge.value = v;
        return m;
    };
    const auto counter = [](const std::atomic<uint64_t>& v) {
        ClientMetric m;
        m.counter.value = static_cast<double>(v.load(std::memory_order_relaxed));
        return m;
    };
    MetricFamily up = family("infergate_backend_up",
                             "1 when the backend is identified and a replica of it is available "
                             "(not ejected, passing its health checks).",
                             MetricType::Gauge);
    MetricFamily replicas = family("infergate_backend_replicas",
                                   "Replicas (addresses) of the backend, by state: available, "
                                   "ejected (outlier ejection) or unhealthy (health checks).",
                                   MetricType::Gauge);
    MetricFamily in_flight =
        family("infergate_backend_requests_in_flight",
               "Requests in flight on the backend's replicas.", MetricType::Gauge);
    MetricFamily requests =
        family("infergate_backend_requests_total",
               "Tries sent to the backend (a failover counts one per try).", MetricType::Counter);
    MetricFamily errors =
        family("infergate_backend_errors_total",
               "Tries that failed: connect error, reset, timeout or a 5xx.", MetricType::Counter);
    MetricFamily retries = family("infergate_backend_retries_total",
                                  "Requests moved from the backend to another replica before "
                                  "their first byte (routing.retries).",
                                  MetricType::Counter);
    MetricFamily ejections = family("infergate_backend_ejections_total",
                                    "Replicas ejected for consecutive failures "
                                    "(routing.outlier_ejection).",
                                    MetricType::Counter);
    MetricFamily hedges = family("infergate_backend_hedges_total",
                                 "Hedges sent to the backend: the first try had no response head "
                                 "within routing.retries.hedge_ms.",
                                 MetricType::Counter);
    MetricFamily latency = family("infergate_backend_first_byte_seconds",
                                  "Request sent to the backend to its response head, per backend.",
                                  MetricType::Histogram);
    for (const BackendView& b : table->backends()) {
        const auto name = label("backend", b.config.name);
        int available = 0;
        int ejected = 0;
        int unhealthy = 0;
        int busy = 0;
        for (const auto& r : b.replicas) {
            busy += r->outstanding.load(std::memory_order_relaxed);
            if (!r->healthy.load(std::memory_order_relaxed)) {
                ++unhealthy;
            } else if (r->ejected(now)) {
                ++ejected;
            } else {
                ++available;
            }
        }
        auto m = gauge(b.info.ready && available > 0 ? 1 : 0);
        m.label = {name};
        up.metric.push_back(std::move(m));
        for (const auto& [state, n] :
             {std::pair{"available", available}, std::pair{"ejected", ejected},
              std::pair{"unhealthy", unhealthy}}) {
            auto g = gauge(n);
            g.label = {name, label("state", state)};
            replicas.metric.push_back(std::move(g));
        }
        auto f = gauge(busy);
        f.label = {name};
        in_flight.metric.push_back(std::move(f));
        const BackendCounters& c = *b.counters;
        for (auto [fam, v] : {std::pair{&requests, &c.requests}, std::pair{&errors, &c.errors},
                              std::pair{&retries, &c.retries}, std::pair{&ejections, &c.ejections},
                              std::pair{&hedges, &c.hedges}}) {
            auto cm = counter(*v);
            cm.label = {name};
            fam->metric.push_back(std::move(cm));
        }
        ClientMetric h;
        h.label = {name};
        uint64_t cumulative = 0;
        for (size_t i = 0; i < std::size(c.latency_buckets); ++i) {
            cumulative += c.latency_buckets[i].load(std::memory_order_relaxed);
            prometheus::ClientMetric::Bucket bucket;
            bucket.cumulative_count = cumulative;
            bucket.upper_bound = i < std::size(BackendCounters::kLatencyBounds)
                                     ? BackendCounters::kLatencyBounds[i]
                                     : std::numeric_limits<double>::infinity();
            h.histogram.bucket.push_back(bucket);
        }
        h.histogram.sample_count = cumulative;
        h.histogram.sample_sum = c.latency_sum.load(std::memory_order_relaxed);
        latency.metric.push_back(std::move(h));
    }
    for (auto* f : {&up, &replicas, &in_flight, &requests, &errors, &retries, &ejections, &hedges,
                    &latency}) {
        out.push_back(std::move(*f));
    }
}

}  // namespace infergate
