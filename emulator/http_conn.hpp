// One downstream connection's write side: HTTP/1.1 responses written as raw bytes (uvicorn's
// header layout), chunked SSE with one write per event, and the socket-level faults. Under a wire
// style (wire_style.hpp) it is also where bodies and events are restyled, 1xx responses go out
// and writes are cut into pieces: every byte the emulator writes passes through here.
//
// A Conn belongs to one session coroutine on one io_context; it is never shared across threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "emulator/wire_style.hpp"

namespace infergate::emulator {

namespace net = boost::asio;
using tcp = net::ip::tcp;

inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kEventStream = "text/event-stream; charset=utf-8";
inline constexpr std::string_view kPlainText = "text/plain; charset=utf-8";

class Conn {
public:
    explicit Conn(tcp::socket socket);

    tcp::socket& socket() { return socket_; }
    bool is_open() const { return socket_.is_open(); }
    // Set when the request asked for "Connection: close"; responses then say so too.
    void set_close_after_response(bool close) { close_after_ = close; }
    bool close_after_response() const { return close_after_; }
    // The `server` header every response of this connection carries ("" = none: axum, Go).
    void set_server_header(std::string_view value) { server_ = value; }
    // Extra "name: value" lines for the next response head only (TGI's x-* timings, ...).
    void add_header(std::string_view name, std::string_view value);
    // The wire style of the next responses (set per request; reseeds the style's generator).
    void set_wire_style(const WireStyle& style);

    // A complete response with Content-Length. An empty content_type omits the header (FastAPI's
    // bare Response(status_code=200) does that).
    net::awaitable<bool> send(int status, std::string_view content_type, std::string_view body);
    // The head send() would write for `body`, without the body (an answer to HEAD).
    net::awaitable<bool> send_head(int status, std::string_view content_type,
                                   std::string_view body);
    // The truncation faults: a head announcing all of `body`, then only its first half.
    net::awaitable<bool> send_truncated(int status, std::string_view content_type,
                                        std::string_view body);
    // Headers of a chunked stream; an empty content_type omits the header (Starlette's
    // StreamingResponse without a media type).
    net::awaitable<bool> begin_stream(std::string_view content_type);
    // One chunk = one event = one write, so every event leaves the process immediately.
    net::awaitable<bool> send_chunk(std::string_view payload);
    net::awaitable<bool> end_stream();
    // The stream's last event, then its end: a style may write the last event differently
    // (noblank-end). Today's bytes and writes are send_chunk + end_stream.
    net::awaitable<bool> finish_stream(std::string_view last_event);
    net::awaitable<bool> write_raw(std::string_view bytes);

    // RST: SO_LINGER 0, then close.
    void reset();
    // RST once the kernel has sent what was written: an abortive close discards unsent bytes,
    // and the mid-stream faults promise their events before the RST. Waits at most a second.
    net::awaitable<void> reset_after_sent();
    // FIN without any terminator.
    void close_clean();
    // Keeps the connection open and silent until the peer closes it, then closes it too.
    net::awaitable<void> stall();
    // After an early error answer: stop writing, swallow what the peer still sends for up to a
    // second (closing with unread bytes would turn our FIN into an RST and eat the answer).
    net::awaitable<void> drain_and_close();

    net::awaitable<void> sleep_ms(std::int64_t ms);
    net::awaitable<void> sleep_for(std::chrono::steady_clock::duration d);

private:
    void append_head(int status);
    void append_fixed_head(int status, std::string_view content_type, std::size_t content_length);
    // Styled path only.
    std::string_view styled_body(std::string_view content_type, std::string_view body);
    void append_interim();
    void append_chunked(std::string_view data);
    net::awaitable<bool> write_pieces(std::string_view bytes);

    tcp::socket socket_;
    net::steady_timer timer_;
    std::string head_;
    std::string extra_;
    std::string_view server_ = "uvicorn";
    bool close_after_ = false;

    WireStyle style_;
    bool styled_ = false;  // style_.active(): the default path never touches what follows
    StyleRng rng_;
    EventStyler styler_;
    std::string body_;   // a restyled body
    std::string event_;  // a restyled event
    std::string wire_;   // the bytes of one styled write, before they are cut into pieces
};

}  // namespace infergate::emulator
