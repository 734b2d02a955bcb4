#include "proxy/request_meter.hpp"

#include <unistd.h>

#include <ctime>

#include "proxy/client_request.hpp"
#include "proxy/log.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/json.hpp"

namespace infergate {

namespace {

// Longer messages are cut: a log line stays readable and bounded.
constexpr size_t kMaxMessage = 1024;

// `text` as a JSON string: quotes, backslashes and control characters (a newline would split
// the line) escaped.
void append_quoted(std::string& out, std::string_view text) {
    json::StringOut os{&out};
    json::Writer w(os);
    json::string(w, text);
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

void write_string(json::Writer& w, const char* key, std::string_view value) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

RouteLabel route_label(canonical::Dialect front) {
    using canonical::Dialect;
    switch (front) {
        case Dialect::sglang:
            return RouteLabel::sglang_generate;
        case Dialect::openai_completions:
            return RouteLabel::openai_completions;
        case Dialect::openai_chat:
            return RouteLabel::openai_chat;
        case Dialect::tgi:
            return RouteLabel::tgi_generate;
        case Dialect::ollama_generate:
            return RouteLabel::ollama_generate;
        case Dialect::ollama_chat:
            return RouteLabel::ollama_chat;
        case Dialect::llamacpp:
            return RouteLabel::llamacpp_completion;
        case Dialect::vllm_legacy:
            return RouteLabel::vllm_generate;
        case Dialect::anthropic:
            return RouteLabel::anthropic_messages;
        case Dialect::openai_responses:
            return RouteLabel::openai_responses;
    }
    return RouteLabel::openai_completions;
}

RouteLabel route_label(canonical::EmbedDialect front) {
    using canonical::EmbedDialect;
    switch (front) {
        case EmbedDialect::openai:
            return RouteLabel::openai_embeddings;
        case EmbedDialect::ollama:
            return RouteLabel::ollama_embed;
        case EmbedDialect::ollama_legacy:
            return RouteLabel::ollama_embeddings;
        case EmbedDialect::tei:
            return RouteLabel::tei_embed;
        case EmbedDialect::llamacpp:
            return RouteLabel::llamacpp_embedding;
    }
    return RouteLabel::openai_embeddings;
}

bool request_failed(int status, std::string_view outcome) {
    return outcome != "ok" || status >= 400;
}

std::string failure_line(std::string_view request_id, int status, std::string_view outcome,
                         const Failure& failure) {
    std::string line;
    line.reserve(128 + failure.message.size());
    line += "request failed: id=";
    append_quoted(line, request_id);
    line += " status=";
    line += std::to_string(status);
    line += " outcome=";
    line += outcome;
    if (!failure.stage.empty()) {
        line += " stage=";
        append_quoted(line, failure.stage);
    }
    if (!failure.backend.empty()) {
        line += " backend=";
        append_quoted(line, failure.backend);
    }
    if (!failure.message.empty()) {
        line += " message=";
        std::string_view message = failure.message;
        const bool cut = message.size() > kMaxMessage;
        std::string shortened;
        if (cut) {
            shortened = std::string(message.substr(0, kMaxMessage)) + "...";
            message = shortened;
        }
        append_quoted(line, message);
    }
    return line;
}

void log_failure(std::string_view request_id, int status, std::string_view outcome,
                 const Failure& failure) {
    if (!request_failed(status, outcome) || !log::enabled(log::Level::warn)) {
        return;
    }
    log::warn(failure_line(request_id, status, outcome, failure));
}

void RequestMeter::retrying(int tries, std::string_view request_id, std::string_view backend) {
    if (log::enabled(log::Level::warn)) {
        log::warn("request retried: id=" + std::string(request_id) + " try " +
                  std::to_string(tries) + " on backend '" + std::string(backend) + "' failed (" +
                  (failure_.stage.empty() ? "" : failure_.stage + ": ") + failure_.message +
                  "); trying another replica");
    }
    tries_ = tries + 1;
    outcome_ = Outcome::ok;
    failure_ = Failure{};
}

RequestMeter::RequestMeter(Worker& worker, std::string_view backend_name, uint64_t bytes_in)
    : worker_(worker),
      backend_name_(backend_name),
      received_(std::chrono::steady_clock::now()),
      bytes_in_(bytes_in) {}

void RequestMeter::start_generation(std::string_view front, RouteLabel route) {
    generation_ = true;
    front_name_ = front;
    record_.route = route;
    record_.model_slot = worker_.metrics_registry().model_slot({});
    worker_.metrics().request_started();
}

void RequestMeter::set_model(std::string label) {
    model_label_ = std::move(label);
    record_.model_slot = worker_.metrics_registry().model_slot(model_label_);
}

void RequestMeter::note_content(int64_t tokens) {
    const auto now = std::chrono::steady_clock::now();
    if (!first_content_) {
        first_content_ = now;
    } else {
        worker_.metrics().observe_chunk(record_.route, record_.model_slot,
                                        seconds(now - last_content_), tokens);
    }
    last_content_ = now;
}

void RequestMeter::note_finish(canonical::FinishKind kind) {
    FinishLabel label = FinishLabel::none;
    switch (kind) {
        case canonical::FinishKind::stop:
            label = FinishLabel::stop;
            break;
        case canonical::FinishKind::length:
            label = FinishLabel::length;
            break;
        case canonical::FinishKind::tool_calls:
            label = FinishLabel::tool_calls;
            break;
        case canonical::FinishKind::content_filter:
            label = FinishLabel::content_filter;
            break;
        case canonical::FinishKind::none:
        case canonical::FinishKind::abort:
            return;
    }
    if (record_.finish == FinishLabel::none || label == FinishLabel::tool_calls) {
        record_.finish = label;
    }
}

void RequestMeter::note_usage(const canonical::Usage& usage) {
    record_.prompt_tokens = usage.prompt_tokens;
    record_.completion_tokens = usage.completion_tokens;
    record_.cached_tokens = usage.cached_tokens;
    record_.reasoning_tokens = usage.reasoning_tokens;
}

void RequestMeter::note_upstream_error(UpstreamErrorKind kind) {
    worker_.metrics().upstream_error(kind);
}

void RequestMeter::note_connect(std::chrono::steady_clock::duration d) {
    record_.upstream_connect_seconds = seconds(d);
}

void RequestMeter::note_first_byte(std::chrono::steady_clock::duration d) {
    record_.upstream_first_byte_seconds = seconds(d);
}

canonical::Timing RequestMeter::measured_timing(bool content_now) const {
    // load_duration: the model was loaded already, so it stays unset.
    using std::chrono::duration_cast;
    using std::chrono::nanoseconds;
    const auto now = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> first = first_content_;
    std::chrono::steady_clock::time_point last = last_content_;
    if (content_now) {
        first = first.value_or(now);
        last = now;
    }
    canonical::Timing t;
    t.created_unix_ns =
        duration_cast<nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    t.total_ns = duration_cast<nanoseconds>(now - received_).count();
    if (first) {
        t.prompt_eval_ns = duration_cast<nanoseconds>(*first - received_).count();
        t.eval_ns = duration_cast<nanoseconds>(last - *first).count();
    }
    return t;
}

void RequestMeter::finish(const ClientRequest& request, std::string_view request_id,
                          std::string_view peer) {
    const double e2e = seconds(std::chrono::steady_clock::now() - received_);
    record_.e2e_seconds = e2e;
    record_.outcome = outcome_;
    record_.status = status_;
    record_.streamed = first_content_.has_value();
    if (first_content_) {
        record_.ttft_seconds = seconds(*first_content_ - received_);
        if (record_.completion_tokens && *record_.completion_tokens > 1) {
            // design.md's definition: (e2e − TTFT) / (output tokens − 1).
            record_.tpot_seconds =
                (e2e - *record_.ttft_seconds) / static_cast<double>(*record_.completion_tokens - 1);
        }
    }
    record_.overhead_seconds = std::max(0.0, e2e - seconds(waited_));
    if (generation_) {
        worker_.metrics().request_finished(record_);
    }
    // No status line went out: nginx's 499 ("client closed request") when the client left
    // first, which log tools know; 0 otherwise (the metrics say status_class="none").
    const int status = status_ == 0 && outcome_ == Outcome::client_disconnect ? 499 : status_;
    log_failure(request_id, status, to_string(outcome_), failure_);
    if (const int fd = worker_.access_log_fd(); fd >= 0) {
        write_access_log(fd, request, request_id, peer, status, e2e);
    }
}

void RequestMeter::write_access_log(int fd, const ClientRequest& request,
                                    std::string_view request_id, std::string_view peer, int status,
                                    double e2e) const {
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
    write_string(w, "time", stamp);
    write_string(w, "request_id", request_id);
    write_string(w, "client", peer);
    write_string(w, "method", request.method_string());
    write_string(w, "path", request.target().substr(0, 256));
    write_string(w, "front", front_name_);
    write_string(w, "back", back_name_);
    write_string(w, "backend", backend_name_);
    if (tries_ > 1) {
        w.Key("tries");  // failover: the backend above answered try `tries`
        w.Int(tries_);
    }
    if (!key_name_.empty()) {
        write_string(w, "key", key_name_);  // the key's configured name, never the key
    }
    write_string(w, "model", model_label_);  // logs may hold what the client typed; labels never
    w.Key("status");
    w.Int(status);
    write_string(w, "outcome", to_string(outcome_));
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
