#pragma once
// One generation in flight, as the relays see it: the client's request decoded, the plan
// (translators/pairing.hpp), the codecs of both sides, and the units that do the work (the
// client writer, the upstream call, the meter). Built by the exchange once the request is
// accepted; each relay (whole body, gather, translated stream, pass-through stream) is a function
// over it.

#include <optional>
#include <string>

#include "proxy/client_writer.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/upstream_call.hpp"
#include "translators/canonical/types.hpp"
#include "translators/codec.hpp"
#include "translators/pairing.hpp"

namespace infergate {

class ClientRequest;
class Worker;
struct RoutingShared;

// A callable borrowed for the length of a call (no allocation, unlike std::function).
class Reroute {
public:
    template <class F>
    explicit Reroute(F& f) : self_(&f), fn_([](void* p) { return (*static_cast<F*>(p))(); }) {}
    bool operator()() const { return fn_(self_); }

private:
    void* self_;
    bool (*fn_)(void*);
};

// The same for a callable taking the upstream call to target.
class Retarget {
public:
    template <class F>
    explicit Retarget(F& f)
        : self_(&f), fn_([](void* p, UpstreamCall& c) { return (*static_cast<F*>(p))(c); }) {}
    bool operator()(UpstreamCall& c) const { return fn_(self_, c); }

private:
    void* self_;
    bool (*fn_)(void*, UpstreamCall&);
};

// An answer that says the engine did not take the request (overloaded, draining, starting):
// another replica may. 503 (vLLM, SGLang and TGI when their engine is down or full), 529
// (Anthropic's overloaded_error), 429 that says "overloaded" (TGI's queue). Not a 429 rate
// limit: that one is the client's.
bool refused_by_engine(int status, std::string_view body);

// Counted in RoutingShared::retrying while it lives (the retry budget).
struct RetrySlot {
    RoutingShared* shared = nullptr;
    void take(RoutingShared& s);
    ~RetrySlot();
};

class ResponseStore;

struct Generation {
    Worker& worker;
    ClientRequest& request;  // the client's bytes (the fast path sends them on)
    ClientWriter& client;
    UpstreamCall& upstream;
    RequestMeter& meter;
    const translators::Codec& front;
    const translators::Codec& back;
    canonical::GenerationRequest& req;
    const translators::Plan& plan;
    std::string upstream_model;  // the name the backend serves the model under
    std::string client_model;    // the name the client used (or the default one, if none)
    // Failover (docs/routing.md): the settings, the budget's counters, and the call that
    // targets the upstream call at another replica of the pool (false: none left).
    const config::Routing& routing;
    RoutingShared& routing_state;
    Reroute next_replica;
    Retarget hedge_target;       // targets a hedge's call at another replica (false: none left)
    bool can_fail_over = false;  // the pool has other members and routing.retries allows
    // Set by the exchange when the client's dialect keeps this turn (the Responses API's store):
    // the translated relays fill it with the answer as the client got it (a whole answer's
    // copy, or the one its stream makes).
    canonical::GenerationResult* keep = nullptr;
    ResponseStore* store = nullptr;  // where keep_turn() puts it

    // Puts the kept answer in the store, once it is whole and before its last bytes leave: a
    // client that has its answer finds the turn (GET /v1/responses/{id}, previous_response_id).
    void keep_turn();

    // Sends the request (encoded for the backend, or on the fast path the client's own bytes)
    // and reads the response head. nullopt: a 2xx is in and its body is next. A value: the
    // client has been answered already (an error in its dialect, or nothing when it left), and
    // that is the exchange's keep-alive result.
    Task<std::optional<bool>> open(bool upstream_streams);

    // The first try with a hedge (routing.hedge_ms): when no response head came within
    // hedge_ms, the same request goes to a second replica too, and the first answer wins; the
    // other call is closed. True: `upstream` holds the winner's response head.
    Task<bool> hedged_open(std::string_view path, const std::string& body, bool upstream_streams);
    // One try: hedged_open, or the upstream call's open of `sent` to `target`.
    Task<bool> send_try(bool hedged, const std::string& target, std::string sent,
                        std::string_view path, const std::string& body, bool upstream_streams);

    // An id for the client's response, with its dialect's prefix.
    std::string new_id() const;
    // The client's encoder state for a translated stream.
    canonical::StreamState client_stream_state() const;
    // The backend's decoder state for its stream.
    canonical::StreamState upstream_stream_state() const;
    // A backend stream that broke, or a whole body that could not be read: an error for the
    // client (the call's mapping) unless the client left, when there is no one to tell.
    Task<bool> fail(beast::error_code ec, std::string_view stage);
    // A 502 in the client's dialect for a backend answer that is not what its dialect says.
    Task<bool> refuse_answer(const canonical::Error& e);
};

Task<bool> relay_whole(Generation& g);
// Non-streamed for the client, streamed upstream and gathered into one answer (Plan::gather).
Task<bool> relay_gather(Generation& g);
Task<bool> relay_translated_stream(Generation& g);
Task<bool> relay_passthrough_stream(Generation& g);

int64_t unix_seconds();

}  // namespace infergate
