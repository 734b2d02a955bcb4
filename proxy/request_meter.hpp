#pragma once
// What one request is measured as: its timings (TTFT, inter-token gaps, the proxy's own
// overhead), its tokens, its outcome, and at its end the metrics record, the access log line, and
// for a request that failed one `warn` line with its id (the client's x-request-id header) and the
// reason, as the client got it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/metrics.hpp"
#include "translators/canonical/embedding.hpp"
#include "translators/canonical/types.hpp"

namespace infergate {

class Worker;
class ClientRequest;

// How an exchange ended: the metrics' outcome label, which the access log writes too
// (to_string in metrics.hpp).
using Outcome = OutcomeLabel;

// The route label of a generation from a client of `front`'s dialect.
RouteLabel route_label(canonical::Dialect front);
// The route label of an embeddings request from a client of `front`'s API.
RouteLabel route_label(canonical::EmbedDialect front);

// Why a request failed, as far as the exchange knows it.
struct Failure {
    std::string message;  // the error's message as the client got it; empty when none was sent
    std::string stage;    // the upstream step that failed ("connecting", ...); empty if none
    // The backend's URL (without credentials): for the operator's line only; error bodies name
    // the backend without its address.
    std::string backend;
};

// Whether a request that ended with `status` (0: no status line went out) and `outcome` (as in
// the access log) failed: any outcome but ok, or an error status.
bool request_failed(int status, std::string_view outcome);

// The line (without the level or the time), one line whatever the message holds:
// request failed: id=abc status=502 outcome=upstream_error stage="connecting"
// backend="http://..." message="..."
std::string failure_line(std::string_view request_id, int status, std::string_view outcome,
                         const Failure& failure);

// Writes failure_line at warn level when the request failed.
void log_failure(std::string_view request_id, int status, std::string_view outcome,
                 const Failure& failure);

// One request's measurements; lives in its exchange, on one worker thread.
class RequestMeter {
public:
    // `backend_name`: of the backend pool the request started on (a reload may change the
    // worker's while it runs); it must outlive the meter.
    RequestMeter(Worker& worker, std::string_view backend_name, uint64_t bytes_in);
    // The backend the request was routed to (it outlives the meter: the exchange holds its
    // routing table).
    void set_backend_name(std::string_view name) { backend_name_ = name; }
    RequestMeter(const RequestMeter&) = delete;
    RequestMeter& operator=(const RequestMeter&) = delete;

    std::chrono::steady_clock::time_point received() const { return received_; }

    // A generation (counted in the request metrics; other routes are in the access log only),
    // from the client dialect `front` on `route`.
    void start_generation(std::string_view front, RouteLabel route);
    // Which token counts the route has (RequestRecord::input_tokens, output_tokens).
    void count_tokens(bool input, bool output) {
        record_.input_tokens = input;
        record_.output_tokens = output;
    }
    // The model as the client named it (the access log) and its bounded metrics slot.
    void set_model(std::string label);
    void set_back(std::string_view back) { back_name_ = back; }
    // The configured name of the client key the request presented (the access log).
    void set_key(std::string_view name) { key_name_ = name; }
    std::string_view key_name() const { return key_name_; }

    // Content-bearing bytes carrying `tokens` tokens are about to leave for the client.
    void note_content(int64_t tokens);
    void note_usage(const canonical::Usage& usage);
    // A choice's finish: the first one names the answer's, but a tool call wins.
    void note_finish(canonical::FinishKind kind);
    void note_upstream_error(UpstreamErrorKind kind);
    void note_bytes_out(uint64_t n) { bytes_out_ += n; }
    // A new upstream connection took this long; the backend's response head came this long after
    // the request was sent.
    void note_connect(std::chrono::steady_clock::duration d);
    void note_first_byte(std::chrono::steady_clock::duration d);

    // Try `tries` on `backend` failed and the request moves to another replica: the warn line
    // says so now, and the request's outcome is the next try's.
    void retrying(int tries, std::string_view request_id, std::string_view backend);
    int tries() const { return tries_; }

    Outcome outcome() const { return outcome_; }
    void set_outcome(Outcome o) { outcome_ = o; }
    int status() const { return status_; }
    void set_status(int status) { status_ = status; }
    // What the warn line of a failed request says.
    Failure& failure() { return failure_; }

    // What this exchange saw, as the dialects that report durations (Ollama, llama.cpp) write
    // them: prompt evaluation is the wait for the first token, evaluation the time from there to
    // the last one. `content_now`: content is going out now (not noted yet).
    canonical::Timing measured_timing(bool content_now = false) const;

    // Time spent waiting (for the backend or the client) is not the proxy's own overhead.
    struct WaitTimer {
        RequestMeter& m;
        std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
        ~WaitTimer() { m.waited_ += std::chrono::steady_clock::now() - t0; }
    };

    // The end: the metrics record, the warn line of a failed request and the access log line.
    // Once.
    void finish(const ClientRequest& request, std::string_view request_id, std::string_view peer);

private:
    void write_access_log(int fd, const ClientRequest& request, std::string_view request_id,
                          std::string_view peer, int status, double e2e) const;

    Worker& worker_;
    std::string_view backend_name_;
    std::chrono::steady_clock::time_point received_;
    bool generation_ = false;
    RequestRecord record_;
    Outcome outcome_ = Outcome::ok;
    int status_ = 0;  // the status sent to the client; 0 until a status line went out
    Failure failure_;
    std::string_view front_name_;
    std::string_view back_name_;
    std::string_view key_name_;
    std::string model_label_;
    std::chrono::steady_clock::duration waited_{};
    std::optional<std::chrono::steady_clock::time_point> first_content_;
    std::chrono::steady_clock::time_point last_content_;
    int tries_ = 1;
    uint64_t bytes_in_ = 0;
    uint64_t bytes_out_ = 0;
};

}  // namespace infergate
