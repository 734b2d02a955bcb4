#include "proxy/upstream_call.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "proxy/client_auth.hpp"
#include "proxy/client_request.hpp"
#include "proxy/disconnect_watch.hpp"
#include "proxy/http_head.hpp"
#include "proxy/log.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/routing.hpp"
#include "proxy/upstream_head.hpp"
#include "proxy/upstream_parser.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

constexpr size_t kMaxUpstreamBody = 64 * 1024 * 1024;
constexpr size_t kUpstreamReadBuffer = 16 * 1024;

// A stale keep-alive connection fails like this before any response byte.
bool stale_connection(const beast::error_code& ec) {
    return ec == http::error::end_of_stream || ec == net::error::eof ||
           ec == net::error::connection_reset || ec == net::error::broken_pipe ||
           ec == net::error::connection_aborted;
}

// The backend's response headers the proxy's parser keeps, for Codec::read_response_headers.
class KeptHeaders final : public translators::ResponseHeaders {
public:
    explicit KeptHeaders(const UpstreamResponseParser& parser) : parser_(parser) {}
    std::string_view find(std::string_view name) const override {
        if (name == "x-prompt-tokens") {
            return parser_.prompt_tokens();
        }
        if (name == "x-compute-tokens") {
            return parser_.compute_tokens();
        }
        if (name == "content-type") {
            return parser_.content_type();
        }
        return {};
    }

private:
    const UpstreamResponseParser& parser_;
};

}  // namespace

std::string backend_name(const config::Backend& b) {
    return b.name == "default" ? std::string("the backend") : "the backend '" + b.name + "'";
}

struct UpstreamCall::State {
    std::unique_ptr<UpstreamConnection> conn;
    std::optional<UpstreamResponseParser> parser;
    std::array<char, kUpstreamReadBuffer> buf;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::optional<KeptHeaders> headers;
};

UpstreamCall::UpstreamCall(Worker& worker, const ClientAuth* auth, DisconnectWatch& watch,
                           RequestMeter& meter, const ClientRequest& request,
                           const std::string& request_id)
    : worker_(worker),
      auth_(auth),
      watch_(watch),
      meter_(meter),
      request_(request),
      request_id_(request_id) {}

const config::Backend& UpstreamCall::backend() const {
    return pool_->backend();
}

UpstreamCall::~UpstreamCall() {
    abandon();
    untarget();
}

void UpstreamCall::untarget() {
    if (replica_ != nullptr) {
        replica_->outstanding.fetch_sub(1, std::memory_order_relaxed);
        replica_ = nullptr;
    }
}

void UpstreamCall::target(const RoutingTable& table, const PoolMember& member) {
    abandon();
    untarget();
    view_ = &table.backends()[member.backend];
    replica_ = member.replica;
    routing_ = &table.routing();
    replica_->outstanding.fetch_add(1, std::memory_order_relaxed);
    pool_ = worker_.pool_for(*replica_, view_->config);
    state_.reset();
    counted_ = false;
}

std::unique_ptr<UpstreamCall> UpstreamCall::sibling(RequestMeter& meter) const {
    auto call =
        std::make_unique<UpstreamCall>(worker_, auth_, watch_, meter, request_, request_id_);
    call->drop_origin_ = drop_origin_;
    return call;
}

void UpstreamCall::take_over(UpstreamCall& winner) {
    abandon();
    untarget();
    state_ = std::move(winner.state_);
    pool_ = std::move(winner.pool_);
    view_ = winner.view_;
    replica_ = std::exchange(winner.replica_, nullptr);  // its in-flight count moves here
    routing_ = winner.routing_;
    counted_ = winner.counted_;
    retriable_ = winner.retriable_;
    error_ = winner.error_;
    hedged_out_ = false;
    prefetched_ = std::exchange(winner.prefetched_, false);
    ahead_ = winner.ahead_;  // a view into the state's buffer, which moved here with it
}

void UpstreamCall::reattach() {
    watch_.attach(state_ && state_->conn ? state_->conn.get() : nullptr);
}

void UpstreamCall::count_failure() {
    if (counted_ || aborted_ || replica_ == nullptr) {
        return;
    }
    counted_ = true;
    view_->counters->errors.fetch_add(1, std::memory_order_relaxed);
    if (replica_->failed(*routing_, steady_now_ns())) {
        view_->counters->ejections.fetch_add(1, std::memory_order_relaxed);
        log::warn("backend '" + view_->config.name + "' replica " + replica_->address +
                  " ejected after " + std::to_string(routing_->consecutive_failures) +
                  " failures in a row (routing.outlier_ejection); retried after the ejection "
                  "time");
    }
}

void UpstreamCall::count_success() {
    if (!counted_ && replica_ != nullptr) {
        counted_ = true;
        replica_->succeeded();
    }
}

void UpstreamCall::abandon() {
    if (state_ && state_->conn) {
        state_->conn->close();
    }
}

int UpstreamCall::status() const {
    return state_->parser->status();
}

std::string_view UpstreamCall::content_type() const {
    return state_->parser->content_type();
}

const translators::ResponseHeaders& UpstreamCall::headers() const {
    if (!state_->headers) {
        state_->headers.emplace(*state_->parser);
    }
    return *state_->headers;
}

std::chrono::milliseconds UpstreamCall::op_timeout(int64_t configured_ms) const {
    auto t = std::chrono::milliseconds(configured_ms);
    if (state_ && state_->deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            *state_->deadline - std::chrono::steady_clock::now());
        t = std::min(t, std::max(left, std::chrono::milliseconds(1)));
    }
    return t;
}

bool UpstreamCall::client_left() {
    if (!watch_.client_gone()) {
        return false;
    }
    meter_.set_outcome(Outcome::client_disconnect);
    return true;
}

canonical::Error UpstreamCall::failure(beast::error_code ec, std::string_view stage) {
    if (hedged_out_) {
        return canonical::Error{};  // closed because the other call won: not a failure
    }
    const config::Backend& b = pool_->backend();
    meter_.failure().stage = stage;
    meter_.failure().backend = b.url.text();  // the operator's line; never the client's body
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    const std::string where = backend_name(b);
    if (aborted_) {
        e.status = 503;
        e.type = "service_unavailable";
        meter_.set_outcome(Outcome::truncated);
        e.message =
            "infergate is shutting down and the grace period for requests in flight "
            "(shutdown_grace_ms) is over; this answer is incomplete: retry it";
        meter_.failure().message = e.message;
        return e;
    }
    count_failure();
    if (ec == beast::error::timeout) {
        meter_.note_upstream_error(UpstreamErrorKind::timeout);
        e.status = 504;
        e.type = "timeout";
        meter_.set_outcome(Outcome::timeout);
        e.message = where + " did not answer in time while " + std::string(stage) +
                    " (see backends[].timeouts in the config)";
        meter_.failure().message =
            e.message;  // what the client gets (send_error, or in the stream)
        return e;
    }
    meter_.set_outcome(Outcome::upstream_error);
    worker_.backend_unreachable(ec, b.name);  // refused: the server probes it again
    meter_.note_upstream_error(
        ec == net::error::connection_refused || ec == net::error::host_not_found ||
                ec == net::error::host_not_found_try_again
            ? UpstreamErrorKind::connect
        : stale_connection(ec) || ec == http::error::partial_message ? UpstreamErrorKind::reset
                                                                     : UpstreamErrorKind::protocol);
    if (ec == net::error::connection_refused) {
        e.message = where + " refused the connection; is the inference server running?";
    } else if (ec == net::error::host_not_found || ec == net::error::host_not_found_try_again) {
        e.message = "cannot resolve the host name of " + where;
    } else if (ec == http::error::partial_message) {
        e.message = where + " closed the connection before its response was complete";
    } else if (stale_connection(ec)) {
        e.message = where + " closed the connection while " + std::string(stage);
    } else if (ec == UpstreamErrc::switching_protocols) {
        e.message = where +
                    " answered 101 Switching Protocols, but infergate asked for no "
                    "protocol switch; is the URL that of an HTTP inference server?";
    } else if (ec == UpstreamErrc::content_encoding) {
        e.message = where + " sent its response with Content-Encoding: " +
                    std::string(state_->parser->content_encoding()) +
                    " although infergate asked for Accept-Encoding: identity; infergate reads "
                    "and translates the body and cannot relay compressed bytes: turn off "
                    "response compression on the backend (or the proxy in front of it)";
    } else if (ec.category() == net::error::get_ssl_category()) {
        e.message =
            "TLS with " + where + " failed while " + std::string(stage) + ": " + ec.message();
    } else {
        e.message = where + " failed while " + std::string(stage) + ": " + ec.message();
    }
    meter_.failure().message = e.message;
    return e;
}

Task<bool> UpstreamCall::open(http::verb verb, std::string target, std::string body, bool stream) {
    const config::Backend& b = pool_->backend();
    if (verb != http::verb::post) {
        body.clear();
    }
    view_->counters->requests.fetch_add(1, std::memory_order_relaxed);
    const std::string head =
        upstream_request_head(request_, verb, target, body.size(), stream, b,
                              translators::backend_headers(view_->info.dialect), request_id_,
                              auth_ != nullptr && auth_->enabled(), drop_origin_);
    // Default-initialised on purpose: make_unique would value-initialise, zeroing the 16 KiB
    // read buffer on every request.
    state_.reset(new State);
    retriable_ = false;
    if (b.timeouts.total_ms > 0) {
        state_->deadline = meter_.received() + std::chrono::milliseconds(b.timeouts.total_ms);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        beast::error_code ec;
        bool reused = false;
        const auto connect_start = std::chrono::steady_clock::now();
        {
            RequestMeter::WaitTimer wait{meter_};
            state_->conn = co_await pool_->acquire(ec, reused, attempt > 0);
        }
        if (!ec && !reused) {
            meter_.note_connect(std::chrono::steady_clock::now() - connect_start);
        }
        if (ec) {
            retriable_ = true;
            error_ = failure(ec, "connecting");
            co_return false;
        }
        if (watch_.client_gone() || hedged_out_) {
            state_->conn->close();
            co_return false;
        }
        watch_.attach(state_->conn.get());
        UpstreamConnection& conn = *state_->conn;
        RequestMeter::WaitTimer wait{meter_};
        const std::array<net::const_buffer, 2> wire{net::buffer(head), net::buffer(body)};
        conn.arm(op_timeout(b.timeouts.idle_ms));
        auto [rwec, wn] =
            co_await conn.visit([&](auto& s) { return net::async_write(s, wire, use_nothrow); });
        const beast::error_code wec = conn.settle(rwec);
        if (wec) {
            conn.close();
            if (watch_.client_gone()) {
                co_return false;
            }
            // The request did not all leave, so the backend cannot have acted on it: one try on
            // a new connection when a pooled one turned out closed (between the pool's check
            // and this write).
            if (reused && attempt == 0 && stale_connection(wec)) {
                continue;
            }
            retriable_ = true;
            error_ = failure(wec, "sending the request");
            co_return false;
        }
        // From here on the backend may have the whole request and be working on it: whatever
        // happens next, a POST is not sent again (a second generation, a second charge on a
        // hosted API; RFC 9112 §9.3.1: a proxy must not retry a non-idempotent request by
        // itself). A closed pooled connection must be caught before the write (UpstreamPool).
        const auto sent = std::chrono::steady_clock::now();
        conn.arm(op_timeout(b.timeouts.first_byte_ms));
        const auto setup = [](UpstreamResponseParser& p) {
            p.header_limit(64 * 1024);
            p.body_limit(boost::none);
        };
        beast::error_code hec = conn.settle(co_await conn.visit(
            [&](auto& s) { return read_final_head(s, conn.buffer(), state_->parser, setup); }));
        if (!hec && !state_->parser->content_encoding().empty()) {
            hec = make_error_code(UpstreamErrc::content_encoding);
        }
        if (!hec) {
            ++conn.uses;
            const auto waited = std::chrono::steady_clock::now() - sent;
            meter_.note_first_byte(waited);
            view_->counters->observe_latency(std::chrono::duration<double>(waited).count());
            if (state_->parser->status() >= 500) {
                count_failure();
            } else {
                count_success();
            }
            co_return true;
        }
        conn.close();
        if (watch_.client_gone()) {
            co_return false;
        }
        if (verb == http::verb::get && reused && attempt == 0 && stale_connection(hec)) {
            continue;  // GET is idempotent (RFC 9110 §9.2.2): the info routes may try again
        }
        retriable_ = stale_connection(hec);  // reset or closed before any response byte
        error_ = failure(hec, "waiting for the response");
        if (stale_connection(hec) && verb != http::verb::get) {
            error_.message +=
                "; the request was not retried because the backend may already "
                "have processed it";
        }
        co_return false;
    }
    co_return false;
}

Task<beast::error_code> UpstreamCall::prefetch() {
    std::string_view piece;
    const beast::error_code ec = co_await read_some(piece);
    if (ec) {
        if (!hedged_out_) {
            error_ = failure(ec, "reading the response");
        }
        co_return ec;
    }
    ahead_ = piece;
    prefetched_ = true;
    co_return ec;
}

Task<beast::error_code> UpstreamCall::read_some(std::string_view& out) {
    if (prefetched_) {
        prefetched_ = false;
        out = ahead_;
        co_return beast::error_code{};
    }
    out = {};
    auto& parser = *state_->parser;
    UpstreamConnection& conn = *state_->conn;
    const config::Backend& b = pool_->backend();
    RequestMeter::WaitTimer wait{meter_};
    while (!parser.is_done()) {
        parser.set_output(state_->buf.data(), state_->buf.size());
        conn.arm(op_timeout(b.timeouts.idle_ms));
        auto [rec, n] = co_await conn.visit(
            [&](auto& s) { return http::async_read_some(s, conn.buffer(), parser, use_nothrow); });
        beast::error_code ec = conn.settle(rec);
        if (ec == http::error::need_buffer) {
            ec = {};
        }
        if (ec) {
            co_return ec;
        }
        const size_t got = parser.filled();
        if (got > 0) {
            out = std::string_view(state_->buf.data(), got);
            co_return beast::error_code{};
        }
    }
    co_return beast::error_code{};
}

Task<beast::error_code> UpstreamCall::read_body(std::string& out) {
    for (;;) {
        std::string_view piece;
        if (auto ec = co_await read_some(piece)) {
            co_return ec;
        }
        if (piece.empty()) {
            co_return beast::error_code{};
        }
        if (out.size() + piece.size() > kMaxUpstreamBody) {
            co_return beast::error_code(http::error::body_limit);
        }
        out.append(piece);
    }
}

void UpstreamCall::release(bool reusable) {
    watch_.attach(nullptr);
    if (!state_ || !state_->conn) {
        return;
    }
    if (reusable && state_->parser && state_->parser->is_done() && state_->parser->keep_alive()) {
        pool_->release(std::move(state_->conn));
    } else {
        state_->conn->close();
        state_->conn.reset();
    }
}

Task<void> UpstreamCall::drain() {
    if (!state_ || !state_->conn) {
        co_return;
    }
    state_->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    std::string_view rest;
    bool clean = true;
    for (int i = 0; i < 8; ++i) {
        if (co_await read_some(rest)) {
            clean = false;
            break;
        }
        if (rest.empty()) {
            break;
        }
    }
    release(clean && state_->parser->is_done());
}

}  // namespace infergate
