#pragma once
// What the operator learns of a request that failed: one `warn` line with its id (the client's
// x-request-id header) and the reason, as the client got it. Called once per request, from the
// exchange's finish; pure apart from the log write.

#include <string>
#include <string_view>

namespace infergate {

// Why a request failed, as far as the exchange knows it.
struct Failure {
    std::string message;  // the error's message as the client got it; empty when none was sent
    std::string stage;    // the upstream step that failed ("connecting", ...); empty if none
};

// Whether a request that ended with `status` (0: no status line went out) and `outcome` (as in
// the access log) failed: any outcome but ok, or an error status.
bool request_failed(int status, std::string_view outcome);

// The line (without the level or the time), one line whatever the message holds:
// request failed: id=abc status=502 outcome=upstream_error stage="connecting" message="..."
std::string failure_line(std::string_view request_id, int status, std::string_view outcome,
                         const Failure& failure);

// Writes failure_line at warn level when the request failed.
void log_failure(std::string_view request_id, int status, std::string_view outcome,
                 const Failure& failure);

}  // namespace infergate
