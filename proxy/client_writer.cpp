#include "proxy/client_writer.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include "config/cors.hpp"
#include "proxy/client_request.hpp"
#include "proxy/deadlines.hpp"
#include "proxy/http_head.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/worker.hpp"
#include "translators/codec.hpp"

namespace infergate {

ClientWriter::ClientWriter(Worker& worker, Stream& client, Deadline& deadline,
                           const ClientRequest& request, RequestMeter& meter,
                           const std::string& request_id, std::chrono::milliseconds write_timeout)
    : worker_(worker),
      write_timeout_(write_timeout),
      client_(client),
      deadline_(deadline),
      request_(request),
      meter_(meter),
      request_id_(request_id),
      keep_alive_(request.keep_alive()),
      chunked_(request.version() >= 11) {}

void ClientWriter::append_head(unsigned status, std::string_view content_type, bool keep_alive,
                               std::string& out) const {
    const unsigned version = request_.version();
    http_head::status_line(out, version, status);
    http_head::field(out, "Server", "infergate");
    http_head::field(out, "Content-Type", content_type);
    http_head::field(out, "X-Request-Id", request_id_);
    for (const auto& [name, value] : extra_) {
        http_head::field(out, name, value);
    }
    if (cors_ != nullptr) [[unlikely]] {
        cors_->append_response_headers(out, cors_allowed_);
    }
    // HTTP/1.1 keeps the connection unless told; HTTP/1.0 closes it unless told.
    if (version >= 11 && !keep_alive) {
        http_head::field(out, "Connection", "close");
    } else if (version < 11 && keep_alive) {
        http_head::field(out, "Connection", "keep-alive");
    }
}

bool ClientWriter::settled(beast::error_code ec) {
    if (deadline_.settle(ec)) {
        meter_.set_outcome(Outcome::client_disconnect);
        return false;
    }
    return true;
}

void ClientWriter::arm() {
    deadline_.arm(write_timeout_);
}

Task<bool> ClientWriter::send(http::status status, std::string body,
                              std::string_view content_type) {
    const unsigned code = static_cast<unsigned>(status);
    meter_.set_status(static_cast<int>(code));
    const bool keep_alive = keep_alive_ && !worker_.stopping();
    std::string head;
    head.reserve(256);
    append_head(code, content_type, keep_alive, head);
    if (code >= 200 && code != 204 && code != 304) {
        // For HEAD too: the length GET would have (RFC 9110 §8.6, §9.3.2), without the body.
        http_head::content_length(head, body.size());
    }
    head += "\r\n";
    if (request_.method() == http::verb::head) {
        body.clear();
    }
    meter_.note_bytes_out(body.size());
    const std::array<net::const_buffer, 2> wire{net::buffer(head), net::buffer(body)};
    RequestMeter::WaitTimer wait{meter_};
    arm();
    auto [ec, n] = co_await net::async_write(client_, wire, use_nothrow);
    co_return settled(ec) && keep_alive;
}

Task<bool> ClientWriter::send_error(ErrorShape shape, const canonical::Error& e) {
    meter_.failure().message = e.message;
    std::string body;
    shape.encode(e, body);
    const int status = e.status >= 400 && e.status <= 599 ? e.status : 502;
    co_return co_await send(static_cast<http::status>(status), std::move(body));
}

Task<bool> ClientWriter::send_openai_error(const canonical::Error& e) {
    co_return co_await send_error(translators::codec_for(canonical::Dialect::openai_chat), e);
}

Task<bool> ClientWriter::start_stream(std::string_view content_type) {
    meter_.set_status(200);
    if (!chunked_) {
        keep_alive_ = false;  // HTTP/1.0: the end of the stream is the end of the connection
    }
    std::string head;
    head.reserve(256);
    append_head(200, content_type, keep_alive_, head);
    http_head::field(head, "Cache-Control", "no-cache");
    http_head::field(head, "X-Accel-Buffering", "no");
    if (chunked_) {
        http_head::field(head, "Transfer-Encoding", "chunked");
    }
    head += "\r\n";
    RequestMeter::WaitTimer wait{meter_};
    arm();
    auto [ec, n] = co_await net::async_write(client_, net::buffer(head), use_nothrow);
    co_return settled(ec);
}

Task<bool> ClientWriter::write(std::string_view bytes) {
    meter_.note_bytes_out(bytes.size());
    RequestMeter::WaitTimer wait{meter_};
    arm();
    if (!chunked_) {
        auto [ec, n] = co_await net::async_write(
            client_, net::const_buffer(bytes.data(), bytes.size()), use_nothrow);
        co_return settled(ec);
    }
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
    auto [ec, n] = co_await net::async_write(client_, wire, use_nothrow);
    co_return settled(ec);
}

Task<bool> ClientWriter::end_stream() {
    if (!chunked_) {
        co_return true;
    }
    RequestMeter::WaitTimer wait{meter_};
    arm();
    auto [ec, n] =
        co_await net::async_write(client_, net::const_buffer("0\r\n\r\n", 5), use_nothrow);
    co_return settled(ec);
}

}  // namespace infergate
