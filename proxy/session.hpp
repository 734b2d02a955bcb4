#pragma once
// One downstream connection: owns the socket, the read buffer and the request parser, and runs
// its exchanges one after another (HTTP/1.1 keep-alive). Lives on one worker thread.

#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/deadlines.hpp"
#include "proxy/disconnect_watch.hpp"
#include "proxy/net.hpp"
#include "proxy/router.hpp"
#include "translators/canonical/types.hpp"

namespace infergate {

class Worker;
class ClientRequestParser;
namespace config {
struct Config;
}

// The body of an error answered before any route ran (a request that could not be read), in
// `dialect`'s error shape. `message` may quote the client's bytes: it is written by the JSON
// writer, and any byte that is not part of valid UTF-8 becomes U+FFFD, so the body is always
// valid JSON.
std::string rejection_body(int status, std::string_view message, canonical::Dialect dialect);
// `text` with every byte that is not part of a well-formed UTF-8 sequence (stray continuation
// bytes, truncated or overlong sequences, surrogates, code points above U+10FFFF) replaced by
// U+FFFD.
std::string valid_utf8(std::string_view text);

class Session {
public:
    // `kind`: the listener's, which decides the routes served (router.hpp). `refuse`: the
    // connection limit is reached and no idle connection could be shed: the session answers 503
    // and closes.
    Session(Worker& worker, Socket socket, ListenerKind kind = ListenerKind::combined,
            bool refuse = false);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // `self` keeps the session alive for as long as the coroutine runs.
    Task<void> run(std::shared_ptr<Session> self);
    // Shutdown, the grace period over: the exchange in flight, if any, ends now with an error
    // its client can see (a stream's in-band error, or a 503).
    void abort_exchange();
    // Shutdown and shedding: close the connection now if it is waiting for a request (and was
    // not closed already); true when it did.
    bool close_if_idle();

private:
    Task<void> linger();
    // Feeds what buffer_ holds to `parser`, with no I/O: up to the end of the head, or with
    // `body` as much of the body as is there. need_more is no error here.
    beast::error_code parse_buffered(ClientRequestParser& parser, bool body);
    // Reads the rest of the body: at most client_body_ms between two reads and, with
    // client_body_min_rate, that average rate once the first client_body_ms are over.
    // `too_slow`: the rate ended it (the error is then beast::error::timeout).
    Task<beast::error_code> read_body(ClientRequestParser& parser, const config::Config& cfg,
                                      bool& too_slow);
    using CorsHeaders = std::vector<std::pair<std::string_view, std::string>>;
    // `dialect`: the client's, when its route is known from the request line. `cors`: the
    // CORS lines (config cors:) when the head with its Origin was read.
    // `logged`: false when the caller reports it (rate-limited) instead of one line each.
    Task<void> reject(http::status status, std::string message, unsigned version,
                      canonical::Dialect dialect, CorsHeaders cors = {}, bool logged = true);

    Worker& worker_;
    Stream stream_;
    Deadline deadline_;  // of the client socket's reads (here) and writes (the exchange's)
    beast::flat_buffer buffer_;
    DisconnectWatch watch_;  // reads a pipelined request into buffer_ while the backend works
    std::list<Session*>::iterator registration_;
    std::string peer_;
    bool idle_ = true;
    bool served_ = false;                 // a request was served: in the worker's served list
    class Exchange* exchange_ = nullptr;  // the one running, for abort_exchange()
    bool refuse_ = false;
    ListenerKind kind_;
};

}  // namespace infergate
