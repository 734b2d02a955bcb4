// Per-request recording (WorkerMetrics, written once per request and once per streamed chunk)
// and the model label slots (Metrics); render() is in metrics_render.cpp.
#include "proxy/metrics.hpp"

#include "proxy/routing.hpp"

#include <algorithm>
#include <cmath>

#include "proxy/metrics_layout.hpp"

namespace infergate {

namespace {

using namespace metrics_detail;

size_t status_class(int status) {
    if (status >= 200 && status < 600) {
        return static_cast<size_t>(status / 100 - 2);
    }
    return kStatusClassCount - 1;
}

constexpr std::string_view kOtherModel = "other";

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
        case RouteLabel::openai_embeddings:
            return "openai_embeddings";
        case RouteLabel::ollama_embed:
            return "ollama_embed";
        case RouteLabel::ollama_embeddings:
            return "ollama_embeddings";
        case RouteLabel::tei_embed:
            return "tei_embed";
        case RouteLabel::llamacpp_embedding:
            return "llamacpp_embedding";
        case RouteLabel::tokenize:
            return "tokenize";
        case RouteLabel::detokenize:
            return "detokenize";
        case RouteLabel::apply_template:
            return "apply_template";
        case RouteLabel::openai_responses:
            return "openai_responses";
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

std::string_view to_string(FinishLabel f) {
    switch (f) {
        case FinishLabel::none:
            return "none";
        case FinishLabel::stop:
            return "stop";
        case FinishLabel::length:
            return "length";
        case FinishLabel::tool_calls:
            return "tool_calls";
        case FinishLabel::content_filter:
            return "content_filter";
        case FinishLabel::kCount:
            break;
    }
    return "none";
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
    finishes_ = std::make_unique<Counter[]>(series_count * kFinishes);
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
    if (r.finish != FinishLabel::none) {
        finishes_[s * kFinishes + std::min(static_cast<size_t>(r.finish), kFinishes - 1)].add(1);
    }

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
    } else if (answered && r.input_tokens) {
        tokens_unknown_[s * kUnknownKinds + kUnknownInput].add(1);
    }
    if (r.completion_tokens) {
        tokens_[s * kTokenKinds + kCompletion].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.completion_tokens, 0)));
        observe(kTokensOut, static_cast<double>(*r.completion_tokens));
    } else if (answered && r.output_tokens) {
        tokens_unknown_[s * kUnknownKinds + kUnknownOutput].add(1);
    }
    if (r.cached_tokens) {
        tokens_[s * kTokenKinds + kCached].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.cached_tokens, 0)));
    }
    if (r.reasoning_tokens) {
        tokens_[s * kTokenKinds + kReasoning].add(
            static_cast<uint64_t>(std::max<int64_t>(*r.reasoning_tokens, 0)));
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
    // One backend: its name. Several: "all", the per-request families being the whole
    // endpoint's; per backend, the infergate_backend_* families (docs/metrics.md).
    backend_name_ = config.backends.empty()      ? "default"
                    : config.backends.size() > 1 ? "all"
                                                 : config.backends.front().name;

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
        for (const auto& m : b.models) {
            add_model(m);
        }
    }
    for (const config::Alias& a : config.aliases) {
        add_model(a.name);
        add_model(a.target);
    }
    configured_models_ = model_names_.size();
    const std::string& default_model = !config.default_model.empty() ? config.default_model
                                       : config.backends.empty()     ? config.default_model
                                                                 : config.backends.front().model;
    if (!default_model.empty() && default_model != kOtherModel) {
        default_slot_ = model_slot(default_model);
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

}  // namespace infergate

namespace infergate {

void Metrics::set_routing(std::shared_ptr<const RoutingTable> table) {
    std::lock_guard lock(routing_mutex_);
    routing_ = std::move(table);
}

}  // namespace infergate
