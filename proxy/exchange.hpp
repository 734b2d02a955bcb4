#pragma once
// One request/response exchange: matches the route and runs it. A generation is decoded, planned
// (translators/pairing.hpp) and handed to its relay (proxy/generation.hpp); the info routes are
// answered from the model catalogue. The work itself is in the units it owns: the meter
// (request_meter.hpp), the client writer (client_writer.hpp) and the upstream call
// (upstream_call.hpp). Lives on one worker thread, inside its session's coroutine.

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "proxy/client_request.hpp"
#include "proxy/client_writer.hpp"
#include "proxy/net.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/router.hpp"
#include "proxy/routing.hpp"
#include "proxy/upstream_call.hpp"
#include "translators/canonical/catalogue.hpp"
#include "translators/codec.hpp"

namespace infergate {

class Worker;
class ClientAuth;
class DisconnectWatch;
class UpstreamPool;

class Exchange {
public:
    // `client_deadline` times the writes to `client` (the session's, shared with its reads);
    // `watch` is the session's, started while the backend works on a generation.
    Exchange(Worker& worker, Stream& client, Deadline& client_deadline, DisconnectWatch& watch,
             ClientRequest request, const std::string& peer,
             ListenerKind listener = ListenerKind::combined);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // Returns true when the client connection may serve another request.
    Task<bool> run();
    // Shutdown, the grace period over: the backend call is closed, so that the request ends now
    // with an error its client sees (UpstreamCall::abort).
    void abort() { upstream_.abort(); }

private:
    // ---- routes (exchange.cpp: generations; exchange_info.cpp, exchange_native_info.cpp) ----
    Task<bool> dispatch();
    // The route's coroutine, not started (a plain function: dispatch's frame stays small).
    Task<bool> serve(const Route& route);
    Task<bool> method_not_allowed(std::string allow);  // 405 with Allow
    Task<bool> no_route();                             // 404 listing the routes
    // Client keys (exchange_auth.cpp). nullopt: the request may go on; a value: it was answered
    // (401 in the client's dialect) and that is the keep-alive result.
    Task<std::optional<bool>> authorize(const Route& route);
    // The key's limits for a generation (429 with Retry-After when over one).
    Task<std::optional<bool>> admit(ErrorShape front);
    // `path` is the matched route (TGI answers /generate, /generate_stream and / differently).
    Task<bool> generate(canonical::Dialect dialect, std::string_view path);
    Task<bool> generate_by_body(std::string_view path);
    // Embeddings and the tokenizer's routes (exchange_embed.cpp): decoded, routed to a backend
    // that has the route, sent (the client's bytes on the same-dialect fast path), answered.
    Task<bool> embed(canonical::EmbedDialect dialect);
    Task<bool> tokenizer(const Route& route);
    Task<bool> apply_template();
    // The model a request that names none gets: the default model when a backend with the
    // route (`capable`) serves it, else the first model such a backend serves.
    std::string default_model_for(bool (*capable)(const BackendInfo&)) const;
    // Targets the upstream call at a replica of `pool` whose backend is `capable`, skipping the
    // others (when none is, at any: the plan then names what that backend lacks). False when
    // the pool has no replica.
    bool route_capable(const RoutingTable::Pool& pool, bool (*capable)(const BackendInfo&));
    // The call to the routed backend with failover (as Generation::open, without the hedge):
    // nullopt when a 2xx head is in, else the keep-alive result of the error the client got.
    template <class BackCodec>
    Task<std::optional<bool>> call_backend(std::string body, std::string_view path,
                                           ErrorShape front, const BackCodec& back,
                                           const RoutingTable::Pool& pool);
    Task<bool> root();
    Task<bool> serve_metrics();
    Task<bool> reload();  // POST /-/reload: the server re-reads the config file
    // OPTIONS (exchange_cors.cpp): a CORS preflight, or a plain one answered with `allow`, the
    // methods of its route (or of the server, for OPTIONS *), OPTIONS included.
    Task<bool> options(std::string allow);
    Task<bool> models(std::string_view id);
    Task<bool> health(bool generate);
    Task<bool> model_info(bool server_info);
    Task<bool> tgi_info();
    Task<bool> ollama_tags(bool running);
    Task<bool> ollama_version();
    Task<bool> ollama_show();
    Task<bool> llamacpp_props();
    // GET / DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items (the Responses API's
    // stored turns; exchange_responses.cpp).
    Task<bool> stored_response(std::string_view id);
    Task<bool> stored_input(std::string_view id);
    // GET /v1/models in Anthropic's shape (asked for by an `anthropic-version` header).
    Task<bool> anthropic_models(std::string_view id);
    // A GET passed on to the backend and its answer relayed (its status and body), or the
    // failure in `codec`'s error shape.
    Task<bool> relay_get(std::string_view path, const translators::Codec& codec);

    // The name the client used, or the default model when it named none.
    std::string client_model(const canonical::GenerationRequest& req) const;
    // Targets `call` (the exchange's, or a hedge's) at a replica of `pool` (routing.hpp), other
    // than the ones tried already; `same_as`: of that member's dialect (a retry, a hedge). False
    // when none is left.
    bool route(const RoutingTable::Pool& pool, std::string_view prefix_key,
               const PoolMember* same_as, UpstreamCall& call);
    // The upstream call to the primary backend, for an info route that asks the backend.
    void route_primary();
    // A model no backend serves: 404 listing the served ones (503 while a backend's models
    // are not known yet), in the client's dialect.
    Task<bool> unknown_model(ErrorShape front, const std::string& model);
    // A backend not identified yet: 503 saying why.
    Task<bool> not_ready(ErrorShape front, const BackendView& view);
    // What the info routes show: the names clients may use (the served model, then every
    // alias) and the backend's facts.
    canonical::ModelCatalogue catalogue() const;

    Worker& worker_;
    // The config, pool and client keys as they were when the request arrived: a reload
    // replaces the worker's, and this request finishes on these (declared before the units
    // that hold references into them).
    std::shared_ptr<const config::Config> config_;
    std::shared_ptr<const RoutingTable> table_;
    std::shared_ptr<ClientAuth> auth_;
    ClientRequest request_;
    const std::string& peer_;
    std::string request_id_;
    DisconnectWatch& watch_;
    RequestMeter meter_;
    ClientWriter client_;
    UpstreamCall upstream_;
    ListenerKind listener_;  // which routes this connection is served
    // Replicas this request went to (failover skips them): at most routing.retries.attempts
    // (<= 10), kept in place (no allocation per request).
    std::array<uint64_t, 10> tried_{};
    size_t tries_ = 0;
    std::atomic<int>* in_flight_ = nullptr;  // RoutingShared::in_flight while routed
    int key_ = -1;           // the client key the request presented (ClientAuth), or -1
    bool admitted_ = false;  // counted in the key's generations in flight until the end
};

}  // namespace infergate
