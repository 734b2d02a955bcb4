#include "proxy/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <streambuf>
#include <utility>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "proxy/version.hpp"

namespace infergate {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr size_t kRoutes = static_cast<size_t>(RouteLabel::kCount);
constexpr size_t kOutcomes = static_cast<size_t>(OutcomeLabel::kCount);
constexpr size_t kErrorKinds = static_cast<size_t>(UpstreamErrorKind::kCount);

// "none": no status line was sent (the client left first, or the exchange never got that far).
constexpr std::array<std::string_view, 5> kStatusClasses = {"2xx", "3xx", "4xx", "5xx", "none"};
constexpr size_t kStatusClassCount = kStatusClasses.size();

size_t status_class(int status) {
    if (status >= 200 && status < 600) {
        return static_cast<size_t>(status / 100 - 2);
    }
    return kStatusClassCount - 1;
}

enum TokenKind : size_t { kPrompt, kCompletion, kCached, kTokenKinds };
enum UnknownKind : size_t { kUnknownInput, kUnknownOutput, kUnknownKinds };

// The histograms kept per [route][model].
enum Kind : size_t { kE2e, kTtft, kTpot, kItl, kChunk, kTokensIn, kTokensOut, kKinds };

// Bucket upper bounds (le). They are part of the metrics' contract: docs/metrics.md lists them,
// and changing one breaks histogram_quantile() across the change in stored data.

// Time to first token (also the upstream first byte): a warm prefix-cache hit is a few ms, a
// long prefill or a reasoning model's hidden preamble many minutes. 0.15/0.2/0.25 keep typical
// interactive TTFTs apart.
constexpr std::array<double, 35> kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3,
    0.4,   0.5,   0.75, 1,    1.5,  2,    3,    5,   7.5,  10,  15,   20,
    30,    45,    60,   90,   120,  180,  300,  450, 640,  900, 1200};

// Whole requests: up to an hour for long reasoning generations.
constexpr std::array<double, 32> kE2eBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1,   1.5, 2,   3,   5,    7.5,  10,   15,
    20,    30,   45,    60,   90,  120,  180, 240,  300, 450, 600, 900, 1200, 1800, 2700, 3600};

// Per-token and per-chunk latency: decode steps live between ~5 and ~60 ms, so the resolution
// is 2.5 ms up to 25 ms and 5 ms up to 50 ms; the tail reaches stalls of seconds.
constexpr std::array<double, 28> kTokenLatencyBuckets = {
    0.001, 0.0025, 0.005, 0.0075, 0.01,  0.0125, 0.015, 0.0175, 0.02, 0.0225,
    0.025, 0.03,   0.035, 0.04,   0.045, 0.05,   0.06,  0.075,  0.1,  0.15,
    0.2,   0.3,    0.5,   0.75,   1,     2.5,    5,     10};

// The proxy's own work per request: microseconds for a fast-path relay, more for translation.
constexpr std::array<double, 16> kOverheadBuckets = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5,
                                                     1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
                                                     0.01, 0.025,  0.05, 0.1};

// TCP (+TLS) connect to the backend; the default connect timeout is 5 s.
constexpr std::array<double, 16> kConnectBuckets = {
    1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// Tokens per request: the OpenTelemetry GenAI advice for gen_ai.client.token.usage, 1..4^13.
constexpr std::array<double, 14> kTokenBuckets = {
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

std::span<const double> bounds_of(Kind k) {
    switch (k) {
        case kE2e:
            return kE2eBuckets;
        case kTtft:
            return kTtftBuckets;
        case kTpot:
        case kItl:
        case kChunk:
            return kTokenLatencyBuckets;
        case kTokensIn:
        case kTokensOut:
        case kKinds:
            break;
    }
    return kTokenBuckets;
}

std::string_view operation_name(size_t route) {
    // OpenTelemetry's gen_ai.operation.name values.
    switch (static_cast<RouteLabel>(route)) {
        case RouteLabel::openai_chat:
        case RouteLabel::ollama_chat:
        case RouteLabel::anthropic_messages:
            return "chat";
        default:
            return "text_completion";
    }
}

constexpr std::string_view kOtherModel = "other";

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

std::string_view to_string(RouteLabel r) {
    switch (r) {
        case RouteLabel::sglang_generate:
            return "sglang_generate";
        case RouteLabel::openai_completions:
            return "openai_completions";
        case RouteLabel::openai_chat:
            return "openai_chat";
        case RouteLabel::tgi_generate:
            return "tgi_generate";
        case RouteLabel::ollama_generate:
            return "ollama_generate";
        case RouteLabel::ollama_chat:
            return "ollama_chat";
        case RouteLabel::llamacpp_completion:
            return "llamacpp_completion";
        case RouteLabel::vllm_generate:
            return "vllm_generate";
        case RouteLabel::anthropic_messages:
            return "anthropic_messages";
        case RouteLabel::kCount:
            break;
    }
    return "unknown";
}

std::string_view to_string(OutcomeLabel o) {
    switch (o) {
        case OutcomeLabel::ok:
            return "ok";
        case OutcomeLabel::client_disconnect:
            return "client_disconnect";
        case OutcomeLabel::upstream_error:
            return "upstream_error";
        case OutcomeLabel::inband_error:
            return "inband_error";
        case OutcomeLabel::truncated:
            return "truncated";
        case OutcomeLabel::timeout:
            return "timeout";
        case OutcomeLabel::rejected:
            return "rejected";
        case OutcomeLabel::kCount:
            break;
    }
    return "unknown";
}

std::string_view to_string(UpstreamErrorKind k) {
    switch (k) {
        case UpstreamErrorKind::connect:
            return "connect";
        case UpstreamErrorKind::timeout:
            return "timeout";
        case UpstreamErrorKind::reset:
            return "reset";
        case UpstreamErrorKind::protocol:
            return "protocol";
        case UpstreamErrorKind::status_4xx:
            return "status_4xx";
        case UpstreamErrorKind::status_5xx:
            return "status_5xx";
        case UpstreamErrorKind::kCount:
            break;
    }
    return "unknown";
}

// ---- WorkerMetrics ---------------------------------------------------------------------------

void WorkerMetrics::Histogram::observe(std::span<const double> bounds, double value,
                                       uint64_t times) {
    if (!std::isfinite(value)) {
        return;  // one NaN would poison _sum for the life of the process
    }
    value = std::max(value, 0.0);
    // le is inclusive: the first bound >= value; past the last bound is the +Inf bucket.
    const auto i =
        static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
    buckets[i].add(times);
    sum.store(sum.load(std::memory_order_relaxed) + value * static_cast<double>(times),
              std::memory_order_relaxed);
}

WorkerMetrics::WorkerMetrics(const Metrics& owner) : owner_(owner) {
    const size_t series_count = kRoutes * owner.model_slots();
    requests_ = std::make_unique<Counter[]>(series_count * kOutcomes * kStatusClassCount);
    tokens_ = std::make_unique<Counter[]>(series_count * kTokenKinds);
    tokens_unknown_ = std::make_unique<Counter[]>(series_count * kUnknownKinds);
    histograms_ = std::make_unique<Histogram[]>(kKinds * series_count);
    for (size_t k = 0; k < kKinds; ++k) {
        for (size_t s = 0; s < series_count; ++s) {
            histograms_[k * series_count + s].buckets =
                std::make_unique<Counter[]>(bounds_of(static_cast<Kind>(k)).size() + 1);
        }
    }
    overhead_ = std::make_unique<Histogram[]>(kRoutes);
    for (size_t r = 0; r < kRoutes; ++r) {
        overhead_[r].buckets = std::make_unique<Counter[]>(kOverheadBuckets.size() + 1);
    }
    upstream_connect_.buckets = std::make_unique<Counter[]>(kConnectBuckets.size() + 1);
    upstream_first_byte_.buckets = std::make_unique<Counter[]>(kTtftBuckets.size() + 1);
}

size_t WorkerMetrics::series(RouteLabel route, int model_slot) const {
    // Both come from code, never from a client; clamping keeps a caller's bug from writing out
    // of bounds.
    const size_t models = owner_.model_slots();
    const size_t r = std::min(static_cast<size_t>(route), kRoutes - 1);
    const size_t m = (model_slot < 0 || static_cast<size_t>(model_slot) >= models)
                         ? models - 1
                         : static_cast<size_t>(model_slot);
    return r * models + m;
}

void WorkerMetrics::request_started() {
    started_.add(1);
}

void WorkerMetrics::request_finished(const RequestRecord& r) {
    const size_t series_count = kRoutes * owner_.model_slots();
    const size_t s = series(r.route, r.model_slot);
    const size_t outcome = std::min(static_cast<size_t>(r.outcome), kOutcomes - 1);
    requests_[(s * kOutcomes + outcome) * kStatusClassCount + status_class(r.status)].add(1);

    auto observe = [&](Kind k, double value) {
        histograms_[k * series_count + s].observe(bounds_of(k), value);
    };
    observe(kE2e, r.e2e_seconds);
    if (r.ttft_seconds) {
        observe(kTtft, *r.ttft_seconds);
    }
    if (r.tpot_seconds) {
        observe(kTpot, *r.tpot_seconds);
    }

    // Tokens come only from the backend's usage. A request that got an answer without a count is
    // counted as unknown rather than estimated.
    const bool answered = r.status >= 200 && r.status < 300;
    if (r.prompt_tokens) {
        tokens_[s * kTokenKinds + kPrompt].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.prompt_tokens, 0)));
        observe(kTokensIn, static_cast<double>(*r.prompt_tokens));
    } else if (answered) {
        tokens_unknown_[s * kUnknownKinds + kUnknownInput].add(1);
    }
    if (r.completion_tokens) {
        tokens_[s * kTokenKinds + kCompletion].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.completion_tokens, 0)));
        observe(kTokensOut, static_cast<double>(*r.completion_tokens));
    } else if (answered) {
        tokens_unknown_[s * kUnknownKinds + kUnknownOutput].add(1);
    }
    if (r.cached_tokens) {
        tokens_[s * kTokenKinds + kCached].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.cached_tokens, 0)));
    }

    if (r.upstream_connect_seconds) {
        upstream_connect_.observe(kConnectBuckets, *r.upstream_connect_seconds);
    }
    if (r.upstream_first_byte_seconds) {
        upstream_first_byte_.observe(kTtftBuckets, *r.upstream_first_byte_seconds);
    }
    overhead_[std::min(static_cast<size_t>(r.route), kRoutes - 1)].observe(kOverheadBuckets,
                                                                           r.overhead_seconds);

    // Release: a scrape that sees this count also sees the matching request_started(), so the
    // in-flight gauge never goes negative.
    finished_.v.store(finished_.get() + 1, std::memory_order_release);
}

void WorkerMetrics::observe_chunk(RouteLabel route, int model_slot, double gap_seconds,
                                  int64_t tokens) {
    // A content-bearing chunk carries at least one token, whatever the backend's count says.
    const int64_t n = std::max<int64_t>(tokens, 1);
    const size_t series_count = kRoutes * owner_.model_slots();
    const size_t s = series(route, model_slot);
    histograms_[kItl * series_count + s].observe(
        kTokenLatencyBuckets, gap_seconds / static_cast<double>(n), static_cast<uint64_t>(n));
    histograms_[kChunk * series_count + s].observe(kTokenLatencyBuckets, gap_seconds);
}

void WorkerMetrics::upstream_error(UpstreamErrorKind kind) {
    upstream_errors_[std::min(static_cast<size_t>(kind), kErrorKinds - 1)].add(1);
}

// ---- Metrics ---------------------------------------------------------------------------------

Metrics::Metrics(const config::Config& config, int workers) {
    backend_name_ = config.backends.empty() ? "default" : config.backends.front().name;

    // Model label values: only names an operator wrote down, each once. "other" needs no slot of
    // its own: it is the overflow slot's label.
    auto add_model = [this](const std::string& name) {
        if (name.empty() || name == kOtherModel ||
            std::find(model_names_.begin(), model_names_.end(), name) != model_names_.end()) {
            return;
        }
        model_names_.push_back(name);
    };
    for (const config::Backend& b : config.backends) {
        add_model(b.model);
    }
    for (const config::Alias& a : config.aliases) {
        add_model(a.name);
        add_model(a.target);
    }
    configured_models_ = model_names_.size();
    if (!config.backends.empty() && !config.backends.front().model.empty() &&
        config.backends.front().model != kOtherModel) {
        default_slot_ = model_slot(config.backends.front().model);
    }
    discovered_slot_ = static_cast<int>(model_names_.size());
    model_names_.emplace_back();  // written once by set_discovered_model()
    model_names_.emplace_back(kOtherModel);

    const int n = std::max(workers, 1);
    workers_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        workers_.push_back(std::make_unique<WorkerMetrics>(*this));
    }
}

Metrics::~Metrics() = default;

int Metrics::model_slot(std::string_view name) const {
    const int other = static_cast<int>(model_names_.size()) - 1;
    if (name.empty()) {
        if (default_slot_ >= 0) {
            return default_slot_;
        }
        const int served = served_slot_.load(std::memory_order_acquire);
        return served >= 0 ? served : other;
    }
    // A handful of names: a linear scan beats hashing the client's string.
    for (size_t i = 0; i < configured_models_; ++i) {
        if (model_names_[i] == name) {
            return static_cast<int>(i);
        }
    }
    if (discovered() && model_names_[static_cast<size_t>(discovered_slot_)] == name) {
        return discovered_slot_;
    }
    return other;
}

void Metrics::set_discovered_model(const std::string& name) {
    if (name.empty() || name == kOtherModel) {
        return;
    }
    for (size_t i = 0; i < configured_models_; ++i) {
        if (model_names_[i] == name) {
            // Already a label (an alias target, say): requests naming no model count there.
            int unset = -1;
            served_slot_.compare_exchange_strong(unset, static_cast<int>(i),
                                                 std::memory_order_acq_rel);
            return;
        }
    }
    // Exactly one writer, before the release store; readers look only after the acquire load.
    if (discovered_claimed_.exchange(true)) {
        return;
    }
    model_names_[static_cast<size_t>(discovered_slot_)] = name;
    discovered_set_.store(true, std::memory_order_release);
    int unset = -1;
    served_slot_.compare_exchange_strong(unset, discovered_slot_, std::memory_order_acq_rel);
}

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

    std::string text;
    text.reserve(last_render_size_.load(std::memory_order_relaxed) + 4096);
    StringSink sink(text);
    std::ostream stream(&sink);
    prometheus::TextSerializer().Serialize(stream, out);
    last_render_size_.store(text.size(), std::memory_order_relaxed);
    return text;
}

}  // namespace infergate
