// Exchange: what it measures (tokens, timings, outcome), the /metrics route and the access log.
#include <unistd.h>

#include <ctime>

#include "proxy/exchange_detail.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/json.hpp"

namespace infergate {

void Exchange::note_content(int64_t tokens) {
    const auto now = std::chrono::steady_clock::now();
    if (!first_content_) {
        first_content_ = now;
    } else {
        worker_.metrics().observe_chunk(
            record_.route, record_.model_slot,
            std::chrono::duration<double>(now - last_content_).count(), tokens);
    }
    last_content_ = now;
}

void Exchange::note_usage(const canonical::Usage& usage) {
    record_.prompt_tokens = usage.prompt_tokens;
    record_.completion_tokens = usage.completion_tokens;
    record_.cached_tokens = usage.cached_tokens;
}

void Exchange::note_upstream_error(UpstreamErrorKind kind) {
    worker_.metrics().upstream_error(kind);
}

Task<bool> Exchange::serve_metrics() {
    co_return co_await send(http::status::ok, worker_.metrics_registry().render(),
                            "text/plain; version=0.0.4; charset=utf-8");
}

namespace {

OutcomeLabel outcome_label(Outcome o) {
    switch (o) {
        case Outcome::ok: return OutcomeLabel::ok;
        case Outcome::client_disconnect: return OutcomeLabel::client_disconnect;
        case Outcome::upstream_error: return OutcomeLabel::upstream_error;
        case Outcome::inband_error: return OutcomeLabel::inband_error;
        case Outcome::truncated: return OutcomeLabel::truncated;
        case Outcome::timeout: return OutcomeLabel::timeout;
        case Outcome::rejected: return OutcomeLabel::rejected;
    }
    return OutcomeLabel::ok;
}

void write_optional(json::Writer& w, const char* key, const std::optional<int64_t>& v) {
    w.Key(key);
    if (v) {
        w.Int64(*v);
    } else {
        w.Null();
    }
}

void write_ms(json::Writer& w, const char* key, const std::optional<double>& seconds) {
    w.Key(key);
    if (seconds) {
        w.Double(static_cast<double>(static_cast<int64_t>(*seconds * 1e6)) / 1e3);
    } else {
        w.Null();
    }
}

}  // namespace

void Exchange::finish_record() {
    const auto now = std::chrono::steady_clock::now();
    const double e2e = std::chrono::duration<double>(now - received_).count();
    record_.e2e_seconds = e2e;
    record_.outcome = outcome_label(outcome_);
    record_.status = status_;
    record_.streamed = first_content_.has_value();
    if (first_content_) {
        record_.ttft_seconds = std::chrono::duration<double>(*first_content_ - received_).count();
        if (record_.completion_tokens && *record_.completion_tokens > 1) {
            // design.md's definition: (e2e − TTFT) / (output tokens − 1).
            record_.tpot_seconds = (e2e - *record_.ttft_seconds) /
                                   static_cast<double>(*record_.completion_tokens - 1);
        }
    }
    record_.overhead_seconds =
        std::max(0.0, e2e - std::chrono::duration<double>(waited_).count());
    if (generation_) {
        worker_.metrics().request_finished(record_);
    }
    // No status line went out: nginx's 499 ("client closed request") when the client left
    // first, which log tools know; 0 otherwise (the metrics say status_class="none").
    const int status = status_ == 0 && outcome_ == Outcome::client_disconnect ? 499 : status_;
    log_failure(request_id_, status, to_string(outcome_), failure_);

    const int fd = worker_.access_log_fd();
    if (fd < 0) {
        return;
    }
    std::string line;
    line.reserve(512);
    json::StringOut os{&line};
    json::Writer w(os);
    char stamp[32];
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    w.StartObject();
    w.Key("time");
    w.String(stamp);
    w.Key("request_id");
    w.String(request_id_);
    w.Key("client");
    w.String(peer_);
    w.Key("method");
    w.String(request_.method_string().data(),
             static_cast<rapidjson::SizeType>(request_.method_string().size()));
    const std::string_view target = request_.target().substr(0, 256);
    w.Key("path");
    w.String(target.data(), static_cast<rapidjson::SizeType>(target.size()));
    w.Key("front");
    w.String(front_name_.data(), static_cast<rapidjson::SizeType>(front_name_.size()));
    w.Key("back");
    w.String(back_name_.data(), static_cast<rapidjson::SizeType>(back_name_.size()));
    w.Key("backend");
    w.String(worker_.pool().backend().name);
    w.Key("model");
    w.String(model_label_);  // logs may hold what the client typed; metric labels never do
    w.Key("status");
    w.Int(status);
    w.Key("outcome");
    const auto outcome = to_string(outcome_);
    w.String(outcome.data(), static_cast<rapidjson::SizeType>(outcome.size()));
    write_ms(w, "e2e_ms", e2e);
    write_ms(w, "ttft_ms", record_.ttft_seconds);
    write_optional(w, "prompt_tokens", record_.prompt_tokens);
    write_optional(w, "completion_tokens", record_.completion_tokens);
    w.Key("bytes_in");
    w.Uint64(bytes_in_);
    w.Key("bytes_out");
    w.Uint64(bytes_out_);
    w.EndObject();
    line += '\n';
    // One write per line on an O_APPEND descriptor: lines from different threads never mix.
    [[maybe_unused]] const auto written = ::write(fd, line.data(), line.size());
}

}  // namespace infergate
