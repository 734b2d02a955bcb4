// Exchange: the backend call and the client-side writes (the generation logic is in
// exchange.cpp, the info routes in exchange_info.cpp).
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>

#include "proxy/exchange_detail.hpp"
#include "proxy/log.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

constexpr size_t kMaxUpstreamBody = 64 * 1024 * 1024;

// The Messages API version infergate's Anthropic codec writes (a client's own header wins).
constexpr std::string_view kAnthropicVersion = "2023-06-01";

bool forwardable(http::field f) {
    switch (f) {
        case http::field::connection:
        case http::field::proxy_connection:  // the pre-standard Connection some clients send
        case http::field::keep_alive:
        case http::field::proxy_authenticate:
        case http::field::proxy_authorization:
        case http::field::te:
        case http::field::trailer:
        case http::field::transfer_encoding:
        case http::field::upgrade:
        case http::field::host:
        case http::field::content_length:
        case http::field::content_type:
        case http::field::accept:
        case http::field::accept_encoding:  // the proxy must be able to read what comes back
        case http::field::expect:
            return false;
        default:
            return true;
    }
}

// Whether the client named header `name` in a Connection field: then it is for this hop only and
// not forwarded (RFC 9110 §7.6.1; `Connection: close, X-Foo`).
bool named_in_connection(const ClientRequest& request, std::string_view name) {
    for (size_t i = 0; i < request.field_count(); ++i) {
        const ClientRequest::Field f = request.field(i);
        if (f.id != http::field::connection) {
            continue;
        }
        std::string_view rest = f.value;
        while (!rest.empty()) {
            const size_t comma = rest.find(',');
            std::string_view option = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            while (!option.empty() && (option.front() == ' ' || option.front() == '\t')) {
                option.remove_prefix(1);
            }
            while (!option.empty() && (option.back() == ' ' || option.back() == '\t')) {
                option.remove_suffix(1);
            }
            if (beast::iequals(option, name)) {
                return true;
            }
        }
    }
    return false;
}

// Header blocks are written straight into one string, sent with the body as one gather write:
// building a Beast message (an allocation and a tree insertion per field) and serialising it
// cost more than the rest of a small request.
void add_field(std::string& out, std::string_view name, std::string_view value) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
}

void add_status_line(std::string& out, unsigned version, unsigned status) {
    out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    const char code[3] = {static_cast<char>('0' + status / 100 % 10),
                          static_cast<char>('0' + status / 10 % 10),
                          static_cast<char>('0' + status % 10)};
    out.append(code, 3);
    out += ' ';
    out += http::obsolete_reason(static_cast<http::status>(status));
    out += "\r\n";
}

// A stale keep-alive connection fails like this before any response byte.
bool stale_connection(const beast::error_code& ec) {
    return ec == http::error::end_of_stream || ec == net::error::eof ||
           ec == net::error::connection_reset || ec == net::error::broken_pipe ||
           ec == net::error::connection_aborted;
}

}  // namespace

std::chrono::milliseconds Exchange::op_timeout(int64_t configured_ms) const {
    auto t = std::chrono::milliseconds(configured_ms);
    if (upstream_ && upstream_->deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            *upstream_->deadline - std::chrono::steady_clock::now());
        t = std::min(t, std::max(left, std::chrono::milliseconds(1)));
    }
    return t;
}

void Exchange::start_watch() {
    watch_.start();
}

bool Exchange::client_left() {
    if (!watch_.client_gone()) {
        return false;
    }
    outcome_ = Outcome::client_disconnect;
    return true;
}

canonical::Error Exchange::upstream_failure(beast::error_code ec, std::string_view stage) {
    const config::Backend& b = worker_.pool().backend();
    failure_.stage = stage;
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    const std::string where = "the backend at " + b.url.text();
    if (ec == beast::error::timeout) {
        note_upstream_error(UpstreamErrorKind::timeout);
        e.status = 504;
        e.type = "timeout";
        outcome_ = Outcome::timeout;
        e.message = where + " did not answer in time while " + std::string(stage) +
                    " (see backends[].timeouts in the config)";
        failure_.message = e.message;  // what the client gets (send_error, or in the stream)
        return e;
    }
    outcome_ = Outcome::upstream_error;
    worker_.backend_unreachable(ec);  // refused: the server probes the backend again
    note_upstream_error(ec == net::error::connection_refused || ec == net::error::host_not_found ||
                                ec == net::error::host_not_found_try_again
                            ? UpstreamErrorKind::connect
                        : stale_connection(ec) || ec == http::error::partial_message
                            ? UpstreamErrorKind::reset
                            : UpstreamErrorKind::protocol);
    if (ec == net::error::connection_refused) {
        e.message = where + " refused the connection; is the inference server running?";
    } else if (ec == net::error::host_not_found || ec == net::error::host_not_found_try_again) {
        e.message = "cannot resolve the backend host '" + b.url.host + "'";
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
                    std::string(upstream_->parser->content_encoding()) +
                    " although infergate asked for Accept-Encoding: identity; infergate reads "
                    "and translates the body and cannot relay compressed bytes: turn off "
                    "response compression on the backend (or the proxy in front of it)";
    } else if (ec.category() == net::error::get_ssl_category()) {
        e.message = "TLS with " + b.url.text() + " failed while " + std::string(stage) + ": " +
                    ec.message();
    } else {
        e.message = where + " failed while " + std::string(stage) + ": " + ec.message();
    }
    failure_.message = e.message;
    return e;
}

Task<bool> Exchange::call_upstream(http::verb verb, std::string target, std::string body,
                                   bool stream) {
    const config::Backend& b = worker_.pool().backend();
    const bool anthropic = worker_.backend().dialect == config::BackendDialect::anthropic;
    // The request head: the client's end-to-end headers, then the proxy's own (which replace a
    // client's X-Request-Id and, when the backend has a key, its credentials).
    std::string head;
    head.reserve(256 + target.size());
    head += http::to_string(verb);
    head += ' ';
    head += target.empty() ? std::string_view("/") : std::string_view(target);
    head += " HTTP/1.1\r\n";
    bool has_anthropic_version = false;
    const bool has_connection = !request_[http::field::connection].empty();
    for (size_t i = 0; i < request_.field_count(); ++i) {
        const ClientRequest::Field f = request_.field(i);
        if (!forwardable(f.id) || (has_connection && named_in_connection(request_, f.name))) {
            continue;
        }
        if (beast::iequals(f.name, "x-request-id") ||
            (!b.api_key.empty() && (anthropic ? beast::iequals(f.name, "x-api-key")
                                              : f.id == http::field::authorization))) {
            continue;
        }
        has_anthropic_version =
            has_anthropic_version || beast::iequals(f.name, "anthropic-version");
        add_field(head, f.name, f.value);
    }
    add_field(head, "Host", b.url.authority());
    add_field(head, "X-Request-Id", request_id_);
    if (!b.api_key.empty()) {
        if (anthropic) {
            add_field(head, "x-api-key", b.api_key);
        } else {
            head += "Authorization: Bearer ";
            head += b.api_key;
            head += "\r\n";
        }
    }
    if (anthropic && !has_anthropic_version) {
        add_field(head, "anthropic-version", kAnthropicVersion);
    }
    add_field(head, "Accept", stream ? "text/event-stream" : "application/json");
    // The body is read and translated here: it must come uncompressed (RFC 9110 §12.5.3).
    add_field(head, "Accept-Encoding", "identity");
    if (verb == http::verb::post) {
        add_field(head, "Content-Type", "application/json");
        char length[24];
        const auto end = std::to_chars(length, length + sizeof length, body.size()).ptr;
        add_field(head, "Content-Length",
                  std::string_view(length, static_cast<size_t>(end - length)));
    } else {
        body.clear();
    }
    head += "\r\n";

    // Default-initialised on purpose: make_unique would value-initialise, zeroing the 16 KiB
    // read buffer on every request.
    upstream_.reset(new Upstream);
    if (b.timeouts.total_ms > 0) {
        upstream_->deadline = received_ + std::chrono::milliseconds(b.timeouts.total_ms);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
        beast::error_code ec;
        bool reused = false;
        const auto connect_start = std::chrono::steady_clock::now();
        {
            WaitTimer wait{*this};
            upstream_->conn = co_await worker_.pool().acquire(ec, reused, attempt > 0);
        }
        if (!ec && !reused) {
            record_.upstream_connect_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - connect_start)
                    .count();
        }
        if (ec) {
            error_ = upstream_failure(ec, "connecting");
            co_return false;
        }
        if (watch_.client_gone()) {
            upstream_->conn->close();
            co_return false;
        }
        watch_.attach(upstream_->conn.get());
        UpstreamConnection& conn = *upstream_->conn;
        WaitTimer wait{*this};
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
            error_ = upstream_failure(wec, "sending the request");
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
            [&](auto& s) { return read_final_head(s, conn.buffer(), upstream_->parser, setup); }));
        if (!hec && !upstream_->parser->content_encoding().empty()) {
            hec = make_error_code(UpstreamErrc::content_encoding);
        }
        if (!hec) {
            ++conn.uses;
            record_.upstream_first_byte_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
            co_return true;
        }
        conn.close();
        if (watch_.client_gone()) {
            co_return false;
        }
        if (verb == http::verb::get && reused && attempt == 0 && stale_connection(hec)) {
            continue;  // GET is idempotent (RFC 9110 §9.2.2): the info routes may try again
        }
        error_ = upstream_failure(hec, "waiting for the response");
        if (stale_connection(hec) && verb != http::verb::get) {
            error_.message +=
                "; the request was not retried because the backend may already "
                "have processed it";
        }
        co_return false;
    }
    co_return false;
}

Task<beast::error_code> Exchange::read_upstream_some(std::string_view& out) {
    out = {};
    auto& parser = *upstream_->parser;
    UpstreamConnection& conn = *upstream_->conn;
    const config::Backend& b = worker_.pool().backend();
    WaitTimer wait{*this};
    while (!parser.is_done()) {
        parser.set_output(upstream_->buf.data(), upstream_->buf.size());
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
            out = std::string_view(upstream_->buf.data(), got);
            co_return beast::error_code{};
        }
    }
    co_return beast::error_code{};
}

Task<beast::error_code> Exchange::read_upstream_body(std::string& out) {
    for (;;) {
        std::string_view piece;
        if (auto ec = co_await read_upstream_some(piece)) {
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

void Exchange::finish_upstream(bool reusable) {
    watch_.attach(nullptr);
    if (!upstream_ || !upstream_->conn) {
        return;
    }
    if (reusable && upstream_->parser && upstream_->parser->is_done() &&
        upstream_->parser->keep_alive()) {
        worker_.pool().release(std::move(upstream_->conn));
    } else {
        upstream_->conn->close();
        upstream_->conn.reset();
    }
}

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------

void Exchange::append_response_head(unsigned status, std::string_view content_type, bool keep_alive,
                                    std::string& out) const {
    const unsigned version = request_.version();
    add_status_line(out, version, status);
    add_field(out, "Server", "infergate");
    add_field(out, "Content-Type", content_type);
    add_field(out, "X-Request-Id", request_id_);
    if (!allow_.empty()) {
        add_field(out, "Allow", allow_);
    }
    for (const auto& [name, value] : extra_headers_) {
        add_field(out, name, value);
    }
    // HTTP/1.1 keeps the connection unless told; HTTP/1.0 closes it unless told.
    if (version >= 11 && !keep_alive) {
        add_field(out, "Connection", "close");
    } else if (version < 11 && keep_alive) {
        add_field(out, "Connection", "keep-alive");
    }
}

Task<bool> Exchange::send(http::status status, std::string body, std::string_view content_type) {
    status_ = static_cast<int>(status);
    const bool keep_alive = keep_alive_ && !worker_.stopping();
    std::string head;
    head.reserve(256);
    append_response_head(status_, content_type, keep_alive, head);
    if (status_ >= 200 && status_ != 204 && status_ != 304) {
        // For HEAD too: the length GET would have (RFC 9110 §8.6, §9.3.2), without the body.
        char length[24];
        const auto end = std::to_chars(length, length + sizeof length, body.size()).ptr;
        add_field(head, "Content-Length",
                  std::string_view(length, static_cast<size_t>(end - length)));
    }
    head += "\r\n";
    if (request_.method() == http::verb::head) {
        body.clear();
    }
    bytes_out_ += body.size();
    WaitTimer wait{*this};
    const std::array<net::const_buffer, 2> wire{net::buffer(head), net::buffer(body)};
    client_deadline_.arm(std::chrono::milliseconds(worker_.config().client_idle_ms));
    auto [wec, n] = co_await net::async_write(client_, wire, use_nothrow);
    if (client_deadline_.settle(wec)) {
        outcome_ = Outcome::client_disconnect;
        co_return false;
    }
    co_return keep_alive;
}

Task<bool> Exchange::send_error(const translators::Codec& codec, const canonical::Error& e) {
    failure_.message = e.message;
    std::string body;
    codec.encode_error(e, body);
    const int status = e.status >= 400 && e.status <= 599 ? e.status : 502;
    co_return co_await send(static_cast<http::status>(status), std::move(body));
}

Task<bool> Exchange::send_openai_error(const canonical::Error& e) {
    co_return co_await send_error(translators::codec_for(canonical::Dialect::openai_chat), e);
}

Task<bool> Exchange::start_stream(std::string_view content_type) {
    status_ = 200;
    if (!chunked_) {
        keep_alive_ = false;  // HTTP/1.0: the end of the stream is the end of the connection
    }
    std::string head;
    head.reserve(256);
    append_response_head(200, content_type, keep_alive_, head);
    add_field(head, "Cache-Control", "no-cache");
    add_field(head, "X-Accel-Buffering", "no");
    if (chunked_) {
        add_field(head, "Transfer-Encoding", "chunked");
    }
    head += "\r\n";
    WaitTimer wait{*this};
    client_deadline_.arm(std::chrono::milliseconds(worker_.config().client_idle_ms));
    auto [wec, n] = co_await net::async_write(client_, net::buffer(head), use_nothrow);
    if (client_deadline_.settle(wec)) {
        outcome_ = Outcome::client_disconnect;
        co_return false;
    }
    co_return true;
}

Task<bool> Exchange::write_stream(std::string_view bytes) {
    bytes_out_ += bytes.size();
    WaitTimer wait{*this};
    client_deadline_.arm(std::chrono::milliseconds(worker_.config().client_idle_ms));
    beast::error_code ec;
    if (chunked_) {
        // One gather write: "<hex size>\r\n", the bytes, "\r\n".
        char size_line[20];
        int len = 0;
        for (size_t v = bytes.size(); len == 0 || v != 0; v >>= 4) {
            size_line[len++] = "0123456789abcdef"[v & 0xf];
        }
        std::reverse(size_line, size_line + len);
        size_line[len++] = '\r';
        size_line[len++] = '\n';
        const std::array<net::const_buffer, 3> wire{
            net::const_buffer(size_line, static_cast<size_t>(len)),
            net::const_buffer(bytes.data(), bytes.size()), net::const_buffer("\r\n", 2)};
        auto [wec, n] = co_await net::async_write(client_, wire, use_nothrow);
        ec = wec;
    } else {
        auto [wec, n] = co_await net::async_write(
            client_, net::const_buffer(bytes.data(), bytes.size()), use_nothrow);
        ec = wec;
    }
    if (client_deadline_.settle(ec)) {
        outcome_ = Outcome::client_disconnect;
        if (upstream_ && upstream_->conn) {
            upstream_->conn->close();  // stop the generation nobody will read
        }
        co_return false;
    }
    co_return true;
}

Task<bool> Exchange::end_stream() {
    if (!chunked_) {
        co_return true;
    }
    WaitTimer wait{*this};
    client_deadline_.arm(std::chrono::milliseconds(worker_.config().client_idle_ms));
    auto [wec, n] =
        co_await net::async_write(client_, net::const_buffer("0\r\n\r\n", 5), use_nothrow);
    if (client_deadline_.settle(wec)) {
        outcome_ = Outcome::client_disconnect;
        co_return false;
    }
    co_return true;
}

}  // namespace infergate
