#include "proxy/request_meter.hpp"

#include "proxy/log.hpp"
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

}  // namespace

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

}  // namespace infergate
