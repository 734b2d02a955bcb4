#include "proxy/session.hpp"

#include <array>

#include "config/config.hpp"
#include "proxy/client_request.hpp"
#include "proxy/exchange.hpp"
#include "proxy/log.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/router.hpp"
#include "proxy/worker.hpp"
#include "translators/codec.hpp"

namespace infergate {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629, Unicode Table
// 3-7); 0 when it is not one.
size_t utf8_sequence(std::string_view s) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = byte(0);
    if (b0 < 0x80) {
        return 1;
    }
    size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlong form
        hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogate
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlong form
        hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
    } else {
        return 0;
    }
    if (s.size() < n || byte(1) < lo || byte(1) > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xBF) {
            return 0;
        }
    }
    return n;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const size_t n = utf8_sequence(text);
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD for this one byte; resynchronise at the next
            text.remove_prefix(1);
        } else {
            out.append(text.data(), n);
            text.remove_prefix(n);
        }
    }
    return out;
}

std::string rejection_body(int status, std::string_view message, canonical::Dialect dialect) {
    canonical::Error e;
    e.status = status;
    e.message = valid_utf8(message);
    std::string body;
    translators::codec_for(dialect).encode_error(e, body);
    return body;
}

Session::Session(Worker& worker, Socket socket, ListenerKind kind, bool refuse)
    : worker_(worker),
      stream_(std::move(socket)),
      deadline_(worker.deadlines(), &stream_.socket()),
      watch_(stream_.socket(), buffer_, worker.config().max_header_bytes),
      kind_(kind) {
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    const auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) {
        peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
    }
    registration_ = worker_.add_session(this);
    refuse_ = refuse;
    worker_.connections().open.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() {
    worker_.connections().open.fetch_sub(1, std::memory_order_relaxed);
    worker_.remove_session(registration_, served_);
}

void Session::abort_exchange() {
    if (exchange_ != nullptr) {
        exchange_->abort();
    }
}

bool Session::close_if_idle() {
    if (!idle_ || refuse_ || !stream_.socket().is_open()) {
        return false;
    }
    beast::error_code ec;
    stream_.socket().shutdown(Socket::shutdown_both, ec);
    stream_.socket().close(ec);
    return true;
}

Task<void> Session::reject(http::status status, std::string message, unsigned version,
                           canonical::Dialect dialect, CorsHeaders cors, bool logged) {
    http::response<http::string_body> res{status, version};
    res.set(http::field::server, "infergate");
    res.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : cors) {
        res.insert(name, value);
    }
    res.set(http::field::connection, "close");
    res.body() = rejection_body(static_cast<int>(status), message, dialect);
    // No exchange began, so no request id was given: the line says why, with no id.
    if (logged) {
        log_failure({}, static_cast<int>(status), "rejected", Failure{valid_utf8(message), {}, {}});
    }
    res.prepare_payload();
    deadline_.arm(std::chrono::seconds(5));
    co_await http::async_write(stream_, res, use_nothrow);
    deadline_.disarm();
}

Task<void> Session::linger() {
    // The client may still be sending the body we refused. Closing now would reset the
    // connection and the client would see a broken pipe instead of our answer: stop sending,
    // then read and drop what still comes, for a bounded time and amount (nginx's lingering
    // close).
    beast::error_code ec;
    stream_.socket().shutdown(Socket::shutdown_send, ec);
    std::array<char, 16384> sink;
    size_t drained = 0;
    deadline_.arm(std::chrono::seconds(2));  // for the whole drain
    while (drained < 64 * 1024 * 1024) {
        auto [rec, n] = co_await stream_.async_read_some(net::buffer(sink), use_nothrow);
        if (rec) {
            break;
        }
        drained += n;
    }
    deadline_.disarm();
}

beast::error_code Session::parse_buffered(ClientRequestParser& parser, bool body) {
    beast::error_code ec;
    while (buffer_.size() > 0 && !(body ? parser.is_done() : parser.is_header_done())) {
        const size_t used = parser.put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == http::error::need_more) {
            return {};  // the rest is read by an operation
        }
        if (ec || used == 0) {
            break;
        }
    }
    return ec;
}

Task<beast::error_code> Session::read_body(ClientRequestParser& parser, const config::Config& cfg,
                                           bool& too_slow) {
    // Apache's mod_reqtimeout MinRate, over nginx's client_body_timeout: a body trickled a
    // byte just inside every client_body_ms must not hold the connection for ever. After a
    // grace of client_body_ms, each byte received buys 1/rate seconds more.
    using clock = Deadline::clock;
    const auto gap = std::chrono::milliseconds(cfg.client_body_ms);
    const auto start = clock::now();
    const int64_t rate = cfg.client_body_min_rate;
    uint64_t received = 0;
    auto last_read = start;
    beast::error_code ec;
    while (!ec && !parser.is_done()) {
        auto due = last_read + gap;
        if (rate > 0) {
            due = std::min(
                due, start + gap +
                         std::chrono::milliseconds(static_cast<int64_t>(received * 1000 / rate)));
        }
        deadline_.arm_at(due);
        auto [bec, bn] = co_await http::async_read_some(stream_, buffer_, parser, use_nothrow);
        ec = deadline_.settle(bec);
        const auto now = clock::now();
        if (ec == beast::error::timeout) {
            // Bytes kept coming, only too few: the rate ended it, not a stall.
            too_slow = now - last_read < gap;
        }
        last_read = now;
        received += bn;
    }
    co_return ec;
}

Task<void> Session::run(std::shared_ptr<Session> self) {
    if (refuse_) {
        idle_ = false;
        co_await reject(http::status::service_unavailable,
                        "infergate is at its connection limit of " +
                            std::to_string(worker_.connections().cap) +
                            " (limits.max_connections) and every connection is busy; retry "
                            "later, or raise limits.max_connections and the file descriptor "
                            "limit (ulimit -n)",
                        11, canonical::Dialect::openai_chat, {}, false);
        co_await linger();  // the client's request may be on its way: let it read the answer
        beast::error_code ec;
        stream_.socket().close(ec);
        co_return;
    }
    bool first = true;
    for (;;) {
        idle_ = true;
        if (!first) {
            worker_.session_idle(registration_, served_);
            served_ = true;
        }
        if (worker_.stopping()) {
            break;
        }
        // Each request reads the limits of the config running when it began (a reload may
        // replace the worker's while this one is read).
        const std::shared_ptr<const config::Config> snapshot = worker_.config_ptr();
        const config::Config& cfg = *snapshot;
        ClientRequestParser parser;
        parser.body_limit(cfg.max_body_bytes);
        parser.header_limit(cfg.max_header_bytes);
        // Three deadlines, as nginx has: the wait for a request's first byte (keep-alive idle,
        // or client_header_ms on a new connection), the whole head within client_header_ms of
        // its first byte (a head dribbled a byte at a time must not hold the connection for
        // ever), and client_body_ms between two reads of the body, with the body's minimum
        // average rate on top (read_body).
        beast::error_code ec;
        bool body_too_slow = false;
        if (buffer_.size() == 0) {
            deadline_.arm(
                std::chrono::milliseconds(first ? cfg.client_header_ms : cfg.client_idle_ms));
            auto [rec, rn] = co_await stream_.async_read_some(
                buffer_.prepare(beast::read_size(buffer_, 65536)), use_nothrow);
            buffer_.commit(rn);
            ec = deadline_.settle(rec);
        }
        first = false;
        const bool head_started = buffer_.size() > 0;
        // What is buffered is parsed in place: an asynchronous read operation costs ~1k
        // instructions even when it reads nothing, and a head (often the body too) usually
        // comes in the first read.
        if (!ec) {
            ec = parse_buffered(parser, false);
        }
        if (!ec && !parser.is_header_done()) {
            deadline_.arm(std::chrono::milliseconds(cfg.client_header_ms));
            auto [hec, n] = co_await http::async_read_header(stream_, buffer_, parser, use_nothrow);
            ec = deadline_.settle(hec);
        }
        if (!ec) {
            idle_ = false;
            // Refuse an over-long body before reading it, and tell a client that waits for
            // "100 Continue" to go on (curl does for bodies over 1 KiB). Never an HTTP/1.0
            // one: it cannot parse a 1xx response (RFC 9110 §10.1.1, §15.2).
            const auto length = parser.content_length();
            if (length && *length > cfg.max_body_bytes) {
                ec = http::error::body_limit;
            } else {
                if (parser.get().version() >= 11 &&
                    beast::iequals(parser.get()[http::field::expect], "100-continue")) {
                    http::response<http::empty_body> cont{http::status::continue_,
                                                          parser.get().version()};
                    deadline_.arm(std::chrono::milliseconds(cfg.client_body_ms));
                    auto [cec, cn] = co_await http::async_write(stream_, cont, use_nothrow);
                    ec = deadline_.settle(cec);
                }
                // Room for the whole body at once: Beast reads into the buffer's free
                // capacity (512 bytes at first), one syscall per fill.
                if (!ec && length) {
                    buffer_.reserve(buffer_.size() + static_cast<size_t>(*length));
                }
                if (!ec) {
                    ec = parse_buffered(parser, true);
                }
                if (!ec && !parser.is_done()) {
                    ec = co_await read_body(parser, cfg, body_too_slow);
                }
            }
        }
        idle_ = false;
        if (ec) {
            const unsigned version = parser.is_header_done() ? parser.get().version() : 11;
            // The client's dialect when its request line names a generation route; otherwise
            // the OpenAI shape, which every JSON client can read.
            canonical::Dialect dialect = canonical::Dialect::openai_chat;
            Route route;
            // A head cut short still names its route once its request line is parsed (Beast
            // parses the line before the fields have all arrived).
            if (parser.is_header_done() || !parser.get().method_string().empty()) {
                route = match_route(parser.get().method_string(), parser.get().target(), kind_);
            }
            if (route.kind == Route::Kind::generate) {
                dialect = route.dialect;
            }
            // A browser reads the refusal only with the CORS lines. The Origin is known once
            // the fields are parsed (Beast parses a head's fields only when all have arrived,
            // and before it refuses a Content-Length over the body limit).
            CorsHeaders cors;
            if (cfg.cors.enabled()) {
                cfg.cors.response_headers(cfg.cors.allow_origin(parser.get()["Origin"]), cors);
            }
            if (ec == beast::error::timeout) {
                if (body_too_slow) {
                    co_await reject(http::status::request_timeout,
                                    "the request body came too slowly: under " +
                                        std::to_string(cfg.client_body_min_rate) +
                                        " bytes/s on average after the first " +
                                        std::to_string(cfg.client_body_ms) +
                                        " ms (client_body_min_rate); send the body at once",
                                    version, dialect, cors);
                } else if (parser.is_header_done()) {
                    co_await reject(http::status::request_timeout,
                                    "the request body stalled: nothing arrived for " +
                                        std::to_string(cfg.client_body_ms) +
                                        " ms (client_body_ms); send the body without pauses",
                                    version, dialect, cors);
                } else if (head_started) {
                    co_await reject(http::status::request_timeout,
                                    "the request head did not arrive within " +
                                        std::to_string(cfg.client_header_ms) +
                                        " ms of its first byte (client_header_ms); send the "
                                        "request line and headers at once",
                                    version, dialect, cors);
                }
                break;  // no byte of a request yet: an idle connection, closed quietly
            }
            if (auto refusal = parser.framing_refusal(
                    ec, {static_cast<const char*>(buffer_.data().data()), buffer_.size()})) {
                co_await reject(refusal->status, std::move(refusal->message), version, dialect,
                                cors);
                co_await linger();  // its body was not read: the client may still be sending
            } else if (ec == http::error::body_limit) {
                co_await reject(http::status::payload_too_large,
                                "request body is larger than the limit of " +
                                    std::to_string(cfg.max_body_bytes) +
                                    " bytes (limits.max_body_bytes)",
                                version, dialect, cors);
                co_await linger();
            } else if (ec == http::error::header_limit) {
                co_await reject(http::status::request_header_fields_too_large,
                                "request headers are larger than the limit of " +
                                    std::to_string(cfg.max_header_bytes) +
                                    " bytes (limits.max_header_bytes)",
                                version, dialect, cors);
            } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
                       ec != http::error::end_of_stream && ec != http::error::partial_message) {
                co_await reject(http::status::bad_request,
                                "malformed HTTP request: " + ec.message(), version, dialect, cors);
            }
            break;  // EOF, reset or idle timeout: just close
        }
        Exchange exchange(worker_, stream_, deadline_, watch_, parser.release(), peer_, kind_);
        exchange_ = &exchange;
        const bool keep_alive = co_await exchange.run();
        exchange_ = nullptr;
        if (!keep_alive) {
            break;
        }
        if (buffer_.size() == 0 && buffer_.capacity() > 4096) {
            buffer_.shrink_to_fit();  // an idle keep-alive connection keeps no large buffer
        }
    }
    beast::error_code ec;
    stream_.socket().shutdown(Socket::shutdown_send, ec);
    stream_.socket().close(ec);
}

}  // namespace infergate
