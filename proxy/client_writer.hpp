#pragma once
// The client side of one exchange: the response head (status line, the headers every answer
// carries, Content-Length or chunked, Connection for HTTP/1.0 and 1.1), whole bodies, errors in a
// dialect's shape, streams (chunked, or to the end of the connection for an HTTP/1.0 client), HEAD
// (the head GET would have, no body) and keep-alive. Every write is timed by the session's
// deadline; a write that fails marks the request client_disconnect in its meter.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/net.hpp"

namespace infergate {

class ClientRequest;
class Deadline;
class RequestMeter;
class Worker;
namespace config {
struct Cors;
}
namespace canonical {
struct Error;
}
namespace translators {
class Codec;
}

// How an error body is written for the client: a generation codec's encode_error, or the one of
// a route's own API (the embeddings and tokenizer codecs): any object with
// `encode_error(const canonical::Error&, std::string&) const`, borrowed for the call.
class ErrorShape {
public:
    template <class Codec>
    ErrorShape(const Codec& codec)  // NOLINT(google-explicit-constructor): a codec is a shape
        : codec_(&codec), encode_([](const void* c, const canonical::Error& e, std::string& out) {
              static_cast<const Codec*>(c)->encode_error(e, out);
          }) {}
    void encode(const canonical::Error& e, std::string& out) const { encode_(codec_, e, out); }

private:
    const void* codec_;
    void (*encode_)(const void*, const canonical::Error&, std::string&);
};

class ClientWriter {
public:
    // `write_timeout`: the longest a write may wait for the client (client_idle_ms of the
    // config the request started on).
    ClientWriter(Worker& worker, Stream& client, Deadline& deadline, const ClientRequest& request,
                 RequestMeter& meter, const std::string& request_id,
                 std::chrono::milliseconds write_timeout);
    ClientWriter(const ClientWriter&) = delete;
    ClientWriter& operator=(const ClientWriter&) = delete;

    // Headers the next head carries besides the usual ones (a codec's response_headers, Allow).
    std::vector<std::pair<std::string_view, std::string>>& extra_headers() { return extra_; }

    // CORS (config cors:), set by the exchange only when it is on: every head then carries
    // `cors`'s lines for `allowed` (Cors::allow_origin's answer to the request's Origin; empty:
    // Vary only). Both must outlive the writer.
    void set_cors(const config::Cors* cors, std::string_view allowed) {
        cors_ = cors;
        cors_allowed_ = allowed;
    }

    // A whole answer. Returns whether the connection may serve another request.
    Task<bool> send(http::status status, std::string body,
                    std::string_view content_type = "application/json");
    // `e` in `shape` (a status outside 400-599 is sent as 502); its message is what the
    // request's warn line says.
    Task<bool> send_error(ErrorShape shape, const canonical::Error& e);
    // In OpenAI's shape: the routes that belong to no one dialect (404, 405, /metrics ...).
    Task<bool> send_openai_error(const canonical::Error& e);

    // A stream: the head, pieces of body, the end. Each returns false when the client is gone.
    Task<bool> start_stream(std::string_view content_type);
    Task<bool> write(std::string_view bytes);
    Task<bool> end_stream();
    // After a stream: whether the connection may serve another request (never for HTTP/1.0).
    bool keep_alive() const { return keep_alive_; }

private:
    void append_head(unsigned status, std::string_view content_type, bool keep_alive,
                     std::string& out) const;
    // Every write: armed with the client's idle timeout, then settled (false, and the meter's
    // outcome client_disconnect, when it failed). Plain functions, so that a chunk costs one
    // coroutine frame.
    void arm();
    bool settled(beast::error_code ec);

    Worker& worker_;
    std::chrono::milliseconds write_timeout_;
    Stream& client_;
    Deadline& deadline_;
    const ClientRequest& request_;
    RequestMeter& meter_;
    const std::string& request_id_;
    bool keep_alive_;
    bool chunked_;  // false for HTTP/1.0 clients: a stream ends with the connection
    std::vector<std::pair<std::string_view, std::string>> extra_;
    const config::Cors* cors_ = nullptr;  // null: CORS off, no line and no cost
    std::string_view cors_allowed_;
};

}  // namespace infergate
