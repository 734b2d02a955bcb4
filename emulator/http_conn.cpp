#include "emulator/http_conn.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <ctime>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "emulator/json_util.hpp"

namespace infergate::emulator {
namespace {

constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

// uvicorn sends a date header; formatting it once per second per thread keeps it off the hot path.
std::string_view http_date() {
    thread_local std::time_t cached_second = 0;
    thread_local char cached[40] = {};
    thread_local std::size_t cached_len = 0;
    const std::time_t now = std::time(nullptr);
    if (now != cached_second) {
        std::tm tm{};
        gmtime_r(&now, &tm);
        cached_len = std::strftime(cached, sizeof(cached), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        cached_second = now;
    }
    return {cached, cached_len};
}

}  // namespace

Conn::Conn(tcp::socket socket) : socket_(std::move(socket)), timer_(socket_.get_executor()) {
    head_.reserve(256);
}

void Conn::append_head(int status) {
    head_.clear();
    head_ += "HTTP/1.1 ";
    head_ += std::to_string(status);
    head_ += ' ';
    head_ += reason_phrase(status);
    head_ += "\r\ndate: ";
    head_ += http_date();
    head_ += "\r\n";
    if (!server_.empty()) {
        head_ += "server: ";
        head_ += server_;
        head_ += "\r\n";
    }
    if (close_after_) {
        head_ += "connection: close\r\n";
    }
    head_ += extra_;
    extra_.clear();
    // Callers add content-length / content-type / transfer-encoding in uvicorn's order.
}

void Conn::add_header(std::string_view name, std::string_view value) {
    extra_ += name;
    extra_ += ": ";
    extra_ += value;
    extra_ += "\r\n";
}

void Conn::set_wire_style(const WireStyle& style) {
    style_ = style;
    styled_ = style.active();
    rng_.reseed(style.seed);
}

net::awaitable<bool> Conn::send(int status, std::string_view content_type, std::string_view body) {
    if (styled_) {
        body = styled_body(content_type, body);
        append_fixed_head(status, content_type, body.size());
        wire_.clear();
        append_interim();
        wire_ += head_;
        wire_ += body;
        co_return co_await write_pieces(wire_);
    }
    append_fixed_head(status, content_type, body.size());
    if (!socket_.is_open()) {
        co_return false;
    }
    // Head and body leave in one gathered write.
    const std::array<net::const_buffer, 2> buffers = {net::buffer(head_),
                                                      net::buffer(body.data(), body.size())};
    auto [error, n] = co_await net::async_write(socket_, buffers, kNoThrow);
    co_return !error;
}

net::awaitable<bool> Conn::send_head(int status, std::string_view content_type,
                                     std::string_view body) {
    append_fixed_head(status, content_type, styled_body(content_type, body).size());
    wire_.clear();
    append_interim();
    wire_ += head_;
    co_return co_await write_raw(wire_);
}

net::awaitable<bool> Conn::send_truncated(int status, std::string_view content_type,
                                          std::string_view body) {
    body = styled_body(content_type, body);
    append_fixed_head(status, content_type, body.size());
    wire_.clear();
    append_interim();
    wire_ += head_;
    co_return co_await write_raw(wire_) && co_await write_raw(body.substr(0, body.size() / 2));
}

void Conn::append_fixed_head(int status, std::string_view content_type,
                             std::size_t content_length) {
    append_head(status);
    head_ += "content-length: ";
    head_ += std::to_string(content_length);
    head_ += "\r\n";
    if (!content_type.empty()) {
        head_ += "content-type: ";
        head_ += content_type;
        head_ += "\r\n";
    }
    head_ += "\r\n";
}

net::awaitable<bool> Conn::begin_stream(std::string_view content_type) {
    append_head(200);
    if (!content_type.empty()) {
        head_ += "content-type: ";
        head_ += content_type;
        head_ += "\r\n";
    }
    head_ += "transfer-encoding: chunked\r\n\r\n";
    if (styled_) {
        // The content type is the framing the client will parse: SSE, or delimited records
        // (NDJSON, and vLLM legacy's untyped stream).
        styler_.begin(content_type.find("event-stream") != std::string_view::npos
                          ? EventStyler::Framing::kSse
                          : EventStyler::Framing::kRecords);
        wire_.clear();
        append_interim();
        wire_ += head_;
        co_return co_await write_pieces(wire_);
    }
    co_return co_await write_raw(head_);
}

net::awaitable<bool> Conn::send_chunk(std::string_view payload) {
    if (payload.empty()) {
        co_return true;  // an empty chunk would end the stream
    }
    if (styled_) {
        event_.clear();
        styler_.event(payload, false, style_, rng_, event_);
        wire_.clear();
        append_chunked(event_);
        co_return co_await write_pieces(wire_);
    }
    std::array<char, 24> prefix{};
    auto [end, ec] = std::to_chars(prefix.data(), prefix.data() + 16, payload.size(), 16);
    *end++ = '\r';
    *end++ = '\n';
    const std::array<net::const_buffer, 3> buffers = {
        net::buffer(prefix.data(), static_cast<std::size_t>(end - prefix.data())),
        net::buffer(payload.data(), payload.size()),
        net::buffer("\r\n", 2),
    };
    auto [error, n] = co_await net::async_write(socket_, buffers, kNoThrow);
    co_return !error;
}

net::awaitable<bool> Conn::end_stream() { co_return co_await write_raw("0\r\n\r\n"); }

net::awaitable<bool> Conn::finish_stream(std::string_view last_event) {
    if (!styled_) {
        co_return co_await send_chunk(last_event) && co_await end_stream();
    }
    event_.clear();
    styler_.event(last_event, true, style_, rng_, event_);
    wire_.clear();
    append_chunked(event_);
    wire_ += "0\r\n\r\n";
    co_return co_await write_pieces(wire_);
}

net::awaitable<bool> Conn::write_raw(std::string_view bytes) {
    if (styled_) {
        co_return co_await write_pieces(bytes);
    }
    if (!socket_.is_open()) {
        co_return false;
    }
    auto [error, n] =
        co_await net::async_write(socket_, net::buffer(bytes.data(), bytes.size()), kNoThrow);
    co_return !error;
}

std::string_view Conn::styled_body(std::string_view content_type, std::string_view body) {
    if (!styled_ || !content_type.starts_with("application/json")) {
        return body;
    }
    const JsonLayout layout{style_.json, style_.ascii_escapes, false};
    return restyle_json(body, layout, rng_, body_) ? std::string_view(body_) : body;
}

void Conn::append_interim() {
    if ((style_.interim & kInterim100) != 0) {
        wire_ += "HTTP/1.1 100 Continue\r\n\r\n";
    }
    if ((style_.interim & kInterim103) != 0) {
        wire_ +=
            "HTTP/1.1 103 Early Hints\r\nlink: </static/style.css>; rel=preload; as=style\r\n\r\n";
    }
}

// One chunk, or with split writes chunks of 1..split_max bytes: chunk boundaries then fall
// anywhere in an event, and write_pieces cuts across them again.
void Conn::append_chunked(std::string_view data) {
    auto chunk = [this](std::string_view piece) {
        std::array<char, 24> size{};
        auto [end, ec] = std::to_chars(size.data(), size.data() + 16, piece.size(), 16);
        wire_.append(size.data(), end);
        wire_ += "\r\n";
        wire_ += piece;
        wire_ += "\r\n";
    };
    if (style_.split_max <= 0) {
        if (!data.empty()) {
            chunk(data);
        }
        return;
    }
    while (!data.empty()) {
        const std::size_t n =
            std::min(data.size(), 1 + rng_.below(static_cast<std::size_t>(style_.split_max)));
        chunk(data.substr(0, n));
        data.remove_prefix(n);
    }
}

// Each piece is its own write; with TCP_NODELAY each leaves as its own segment, so a reader
// sees the bytes split at arbitrary places.
net::awaitable<bool> Conn::write_pieces(std::string_view bytes) {
    if (!socket_.is_open()) {
        co_return false;
    }
    while (!bytes.empty()) {
        std::size_t n = bytes.size();
        if (style_.split_max > 0) {
            n = std::min(n, 1 + rng_.below(static_cast<std::size_t>(style_.split_max)));
        }
        auto [error, written] =
            co_await net::async_write(socket_, net::buffer(bytes.data(), n), kNoThrow);
        if (error) {
            co_return false;
        }
        bytes.remove_prefix(n);
    }
    co_return true;
}

void Conn::reset() {
    boost::system::error_code ec;
    socket_.set_option(net::socket_base::linger(true, 0), ec);
    socket_.close(ec);
}

net::awaitable<void> Conn::reset_after_sent() {
    // Small writes may still sit in the send queue (the kernel coalesces them while earlier
    // segments are in flight); there is no completion to wait for, so poll the queue.
    for (int i = 0; i < 1000 && socket_.is_open(); ++i) {
        int unsent = 0;
        if (::ioctl(socket_.native_handle(), SIOCOUTQ, &unsent) != 0 || unsent == 0) {
            break;
        }
        timer_.expires_after(std::chrono::milliseconds(1));
        co_await timer_.async_wait(kNoThrow);
    }
    reset();
}

void Conn::close_clean() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
}

net::awaitable<void> Conn::stall() {
    std::array<char, 1024> scratch{};
    for (;;) {
        auto [ec, n] = co_await socket_.async_read_some(net::buffer(scratch), kNoThrow);
        if (ec) {
            break;
        }
    }
    boost::system::error_code ignored;
    socket_.close(ignored);
}

net::awaitable<void> Conn::drain_and_close() {
    using namespace net::experimental::awaitable_operators;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    auto read_to_eof = [this]() -> net::awaitable<void> {
        std::array<char, 4096> scratch{};
        std::size_t total = 0;
        while (total < (64u << 20)) {
            auto [error, n] = co_await socket_.async_read_some(net::buffer(scratch), kNoThrow);
            if (error) {
                co_return;
            }
            total += n;
        }
    };
    timer_.expires_after(std::chrono::seconds(1));
    co_await (read_to_eof() || timer_.async_wait(net::use_awaitable));
    socket_.close(ec);
}

net::awaitable<void> Conn::sleep_ms(std::int64_t ms) {
    co_await sleep_for(std::chrono::milliseconds(ms));
}

net::awaitable<void> Conn::sleep_for(std::chrono::steady_clock::duration d) {
    if (d <= std::chrono::steady_clock::duration::zero()) {
        co_return;
    }
    timer_.expires_after(d);
    co_await timer_.async_wait(kNoThrow);
}

}  // namespace infergate::emulator
