#pragma once
// One call to the backend: connect (a pooled connection or a new one), send, skip 1xx, read the
// response head and then its body piece by piece, and release the connection to the pool when
// the response was read whole (closed otherwise). A request is sent again only when that is safe:
// a pooled connection found closed before the request left, or a GET. Every failure is mapped
// once, here, to the error the client gets (502, or 504 for a timeout), its metric and the
// request's warn line. Routing across several backends plugs in here.

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "proxy/net.hpp"
#include "translators/canonical/types.hpp"
#include "translators/codec.hpp"

namespace infergate {

namespace config {
struct Backend;
}  // namespace config

class ClientRequest;
struct BackendView;
struct Replica;
struct PoolMember;
class RoutingTable;
class DisconnectWatch;
class RequestMeter;
class ClientAuth;
class UpstreamConnection;
class UpstreamPool;
class Worker;

// How error bodies name a backend: "the backend", or "the backend 'gpu'" for a named one; never
// its address (the operator's warn line has it).
std::string backend_name(const config::Backend& backend);

class UpstreamCall {
public:
    // `request`: the client's, whose end-to-end headers go upstream; `watch`: the session's,
    // which sees a client that leaves while the backend works. `auth`: the exchange's (the
    // config it started with; null without client keys). The replica is set by target().
    UpstreamCall(Worker& worker, const ClientAuth* auth, DisconnectWatch& watch,
                 RequestMeter& meter, const ClientRequest& request, const std::string& request_id);
    ~UpstreamCall();  // an unfinished call's connection is closed (the backend stops)
    UpstreamCall(const UpstreamCall&) = delete;
    UpstreamCall& operator=(const UpstreamCall&) = delete;

    // The replica the next open() goes to (`table` outlives the call: the exchange holds it).
    // Counted in the replica's requests in flight until the call ends or is targeted again.
    void target(const RoutingTable& table, const PoolMember& member);
    bool targeted() const { return pool_ != nullptr; }
    const std::shared_ptr<UpstreamPool>& pool() const { return pool_; }
    const BackendView& backend_view() const { return *view_; }
    Replica& replica() const { return *replica_; }
    // The last open() failed before the backend could have answered: the connection could not
    // be made, the request did not all leave, or the connection closed before any response
    // byte. Another replica may take the request (never after a timeout: it may be working).
    bool retriable() const { return retriable_; }

    // The client's Origin is not forwarded (infergate's CORS policy allowed it:
    // upstream_head.hpp). Siblings inherit it.
    void drop_origin() { drop_origin_ = true; }

    // Hedging (Generation::hedged_open). A call like this one (the same client request, key,
    // watch) that reports to `meter` instead: a hedge's misses are not the request's.
    std::unique_ptr<UpstreamCall> sibling(RequestMeter& meter) const;
    // The other call won: this one closes now, and an open() under way returns false without
    // an error of its own (nothing is counted against the replica).
    void hedge_out() {
        hedged_out_ = true;
        abandon();
    }
    bool hedged_out() const { return hedged_out_; }
    // `winner`'s replica, connection and response become this call's (the relays read this one).
    void take_over(UpstreamCall& winner);
    // The disconnect watch follows this call's connection again (a hedge attached its own).
    void reattach();
    const std::string& request_id() const { return request_id_; }

    // Sends the request and reads the final response head. false: it failed, and error() says
    // why as the client should hear it, or the client left (client_left()).
    Task<bool> open(http::verb verb, std::string target, std::string body, bool stream);
    const canonical::Error& error() const { return error_; }
    // The backend as the exchange's config has it.
    const config::Backend& backend() const;

    // The response head (after open() succeeded).
    int status() const;
    std::string_view content_type() const;
    // The headers a codec may read (Codec::read_response_headers).
    const translators::ResponseHeaders& headers() const;

    // The next piece of the body; an empty view at its end.
    Task<beast::error_code> read_some(std::string_view& out);
    // Reads the body's first piece ahead, for read_some to return first: a hedge waits for
    // content, not for a streaming server's response head (sent before its first token). A
    // failure is mapped to the client's error (error()) unless the call was hedged out.
    Task<beast::error_code> prefetch();
    // The rest of the body, bounded (64 MiB).
    Task<beast::error_code> read_body(std::string& out);
    // Done with the call: the connection goes back to the pool when `reusable` and the response
    // was read whole, and is closed otherwise.
    void release(bool reusable);
    // After a stream the client has had whole: reads what is left of the response (the chunked
    // terminator) for up to 2 s so that the connection can be reused, then releases it.
    Task<void> drain();
    // Closes the connection now: nobody will read what the backend generates.
    void abandon();
    // Shutdown: closes the connection now; the read that fails says that infergate is shutting
    // down (failure()).
    void abort() {
        aborted_ = true;
        abandon();
    }

    // `ec` while `stage` as the client's error; counted and noted for the warn line.
    canonical::Error failure(beast::error_code ec, std::string_view stage);
    // Whether the client went away while the backend worked (the watch saw it); recorded as the
    // request's outcome, so that an answer nobody received is never counted as ok.
    bool client_left();

private:
    struct State;
    std::chrono::milliseconds op_timeout(int64_t configured_ms) const;

    // The replica's passive health: a failure (connect, reset, timeout, 5xx) or an answer.
    void count_failure();
    void count_success();
    void untarget();

    Worker& worker_;
    std::shared_ptr<UpstreamPool> pool_;
    const BackendView* view_ = nullptr;
    Replica* replica_ = nullptr;
    const config::Routing* routing_ = nullptr;
    bool counted_ = false;  // this try's outcome is in the replica's run already
    bool retriable_ = false;
    bool hedged_out_ = false;
    bool prefetched_ = false;  // read_some returns `ahead_` first
    std::string_view ahead_;
    const ClientAuth* auth_;
    DisconnectWatch& watch_;
    RequestMeter& meter_;
    const ClientRequest& request_;
    const std::string& request_id_;
    std::unique_ptr<State> state_;
    canonical::Error error_;
    bool aborted_ = false;
    bool drop_origin_ = false;
};

}  // namespace infergate
