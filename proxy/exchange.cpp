#include "proxy/exchange.hpp"

#include <memory>

#include "proxy/client_auth.hpp"
#include "proxy/disconnect_watch.hpp"
#include "proxy/generation.hpp"
#include "proxy/response_store.hpp"
#include "proxy/router.hpp"
#include "proxy/upstream_abort.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"
#include "translators/classify.hpp"
#include "translators/pairing.hpp"
#include "translators/passthrough.hpp"

namespace infergate {

Exchange::Exchange(Worker& worker, Stream& client, Deadline& client_deadline,
                   DisconnectWatch& watch, ClientRequest request, const std::string& peer,
                   ListenerKind listener)
    : worker_(worker),
      config_(worker.config_ptr()),
      table_(worker.table()),
      auth_(worker.auth_ptr()),
      request_(std::move(request)),
      peer_(peer),
      request_id_(),
      watch_(watch),
      meter_(worker, table_->primary().config.name, request_.body().size()),
      client_(worker, client, client_deadline, request_, meter_, request_id_,
              std::chrono::milliseconds(config_->client_idle_ms)),
      upstream_(worker, auth_.get(), watch, meter_, request_, request_id_),
      listener_(listener) {
    const auto rid = request_["X-Request-Id"];
    request_id_ = !rid.empty() && rid.size() <= 128 ? std::string(rid) : worker_.random_hex(32);
    if (config_->cors.enabled()) [[unlikely]] {
        // Every answer to this request carries the CORS lines (docs/security.md, "Browsers");
        // an origin allowed here is not the backend's to refuse.
        const std::string_view allowed = config_->cors.allow_origin(request_["Origin"]);
        client_.set_cors(&config_->cors, allowed);
        if (!allowed.empty()) {
            upstream_.drop_origin();
        }
    }
}

Exchange::~Exchange() {
    watch_.stop();
    if (in_flight_ != nullptr) {
        in_flight_->fetch_sub(1, std::memory_order_relaxed);
    }
    if (admitted_) {
        auth_->release(key_);  // the ClientAuth that admitted it, even after a reload
    }
}

Task<bool> Exchange::run() {
    const bool keep_alive = co_await dispatch();
    meter_.finish(request_, request_id_, peer_);
    co_return keep_alive;
}

// A small frame on purpose: Asio recycles coroutine frames of up to 1 KB only (its allocator
// keeps a block's size in one byte of 4-byte chunks), and GCC gives every local and awaitable
// of every branch its own place in the frame. The routes' own coroutines are chosen by a plain
// function (serve), so that a new route adds nothing here.
Task<bool> Exchange::dispatch() {
    const Route route = match_route(request_.method_string(), request_.target(), listener_);
    if (auto refused = co_await authorize(route)) {
        co_return *refused;
    }
    co_return co_await serve(route);
}

Task<bool> Exchange::serve(const Route& route) {
    switch (route.kind) {
        case Route::Kind::metrics: return serve_metrics();
        case Route::Kind::reload: return reload();
        case Route::Kind::generate: return generate(route.dialect, route.path);
        case Route::Kind::generate_by_body: return generate_by_body(route.path);
        case Route::Kind::embed: return embed(route.embed_dialect);
        case Route::Kind::tokenize:
        case Route::Kind::detokenize: return tokenizer(route);
        case Route::Kind::apply_template: return apply_template();
        case Route::Kind::root: return root();
        case Route::Kind::tgi_info: return tgi_info();
        case Route::Kind::ollama_tags: return ollama_tags(false);
        case Route::Kind::ollama_ps: return ollama_tags(true);
        case Route::Kind::ollama_version: return ollama_version();
        case Route::Kind::ollama_show: return ollama_show();
        case Route::Kind::llamacpp_props: return llamacpp_props();
        case Route::Kind::models: return models({});
        case Route::Kind::model: return models(route.model_id);
        case Route::Kind::health: return health(false);
        case Route::Kind::health_generate: return health(true);
        case Route::Kind::model_info: return model_info(false);
        case Route::Kind::stored_response: return stored_response(route.model_id);
        case Route::Kind::stored_input: return stored_input(route.model_id);
        case Route::Kind::server_info: return model_info(true);
        case Route::Kind::method_not_allowed: {
            // Every route also answers OPTIONS (exchange_cors.cpp).
            std::string allow = std::string(route.allow) + ", OPTIONS";
            if (request_.method() == http::verb::options) {
                return options(std::move(allow));
            }
            return method_not_allowed(std::move(allow));
        }
        case Route::Kind::not_found: break;
    }
    if (request_.method() == http::verb::options && request_.target() == "*") {
        return options(methods_served(listener_));  // RFC 9110 §9.3.7: the server
    }
    return no_route();
}

Task<bool> Exchange::method_not_allowed(std::string allow) {
    meter_.set_outcome(Outcome::rejected);
    client_.extra_headers().emplace_back("Allow", allow);
    canonical::Error e;
    e.status = 405;
    e.message = "method " + std::string(request_.method_string()) + " is not allowed on " +
                std::string(request_.target()) + "; allowed: " + allow;
    co_return co_await client_.send_openai_error(e);
}

Task<bool> Exchange::no_route() {
    meter_.set_outcome(Outcome::rejected);
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = "no route " + std::string(request_.method_string()) + " " +
                std::string(request_.target().substr(0, 200)) +
                "; infergate serves: " + route_list(listener_);
    if (request_.target() == "/-/reload") {
        e.message +=
            ". /-/reload is served on the admin listener only (set admin_listen); "
            "or send infergate SIGHUP";
    }
    co_return co_await client_.send_openai_error(e);
}

// ---------------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------------

std::string Exchange::client_model(const canonical::GenerationRequest& req) const {
    return req.model.empty() ? table_->default_model() : req.model;
}

bool Exchange::route(const RoutingTable::Pool& pool, std::string_view prefix_key,
                     const PoolMember* same_as, UpstreamCall& call) {
    if (tries_ == tried_.size()) {
        return false;
    }
    const PoolMember* m =
        table_->choose(pool, prefix_key, std::span(tried_.data(), tries_), same_as, worker_.rng());
    if (m == nullptr) {
        return false;
    }
    tried_[tries_++] = m->replica->id;
    call.target(*table_, *m);
    if (&call == &upstream_) {  // a hedge's call names its backend only if it wins
        meter_.set_backend_name(table_->backends()[m->backend].config.name);
    }
    return true;
}

void Exchange::route_primary() {
    const BackendView& view = table_->primary();
    // Its first available replica (info routes are not balanced: they are rare and cheap).
    const SteadyNs now = steady_now_ns();
    const auto b = static_cast<uint32_t>(&view - table_->backends().data());
    Replica* pick = nullptr;
    for (const auto& r : view.replicas) {
        pick = pick == nullptr || (!pick->available(now) && r->available(now)) ? r.get() : pick;
    }
    if (pick != nullptr) {
        upstream_.target(*table_, PoolMember{pick, b, view.config.weight});
        meter_.set_backend_name(view.config.name);
    }
}

Task<bool> Exchange::not_ready(ErrorShape front, const BackendView& view) {
    meter_.set_outcome(Outcome::upstream_error);
    canonical::Error e;
    e.status = 503;
    e.type = "service_unavailable";
    // The probe's detail names URLs: the client gets it without the backend's address.
    const std::string url = view.config.url.text();
    std::string detail = view.info.detail;
    // "GET http://h:8000/v1/models" becomes "GET /v1/models"; "serves http://h:8000"
    // becomes "serves the backend".
    for (size_t at = detail.find(url); at != std::string::npos; at = detail.find(url, at)) {
        const bool path_follows = at + url.size() < detail.size() && detail[at + url.size()] == '/';
        detail.replace(at, url.size(), path_follows ? "" : "the backend");
    }
    meter_.failure().backend = url;
    e.message = backend_name(view.config) + " is not ready yet (" + detail + "); retry shortly";
    co_return co_await client_.send_error(front, e);
}

Task<bool> Exchange::unknown_model(ErrorShape front, const std::string& model) {
    // A backend whose models are not known yet may serve it: not ready rather than unknown.
    for (const BackendView& view : table_->backends()) {
        if (!view.info.ready) {
            co_return co_await not_ready(front, view);
        }
    }
    meter_.set_outcome(Outcome::rejected);
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.code = "model_not_found";
    e.param = "model";
    std::string served;
    for (const auto& m : table_->model_names()) {
        served += (served.empty() ? "'" : ", '") + m + "'";
    }
    e.message = (model.empty() ? std::string("no model was named and no default model is served")
                               : "the model '" + model.substr(0, 200) + "' is not served here") +
                "; served models: " + (served.empty() ? std::string("none") : served);
    co_return co_await client_.send_error(front, e);
}

Task<bool> Exchange::generate_by_body(std::string_view path) {
    auto dialect = translators::classify_generate_body(request_.body());
    if (!dialect) {
        meter_.start_generation("unknown", RouteLabel::sglang_generate);
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(dialect.error());
    }
    co_return co_await generate(dialect.value(), path);
}

Task<bool> Exchange::generate(canonical::Dialect dialect, std::string_view path) {
    const translators::Codec& front = translators::codec_for(dialect);
    meter_.start_generation(canonical::to_string(dialect), route_label(dialect));
    if (auto refused = co_await admit(front)) {
        co_return *refused;
    }
    // The Responses API reads earlier turns from the store (none when it keeps nothing): the
    // turns of the client key this request presented.
    // (The lookup lives in a lambda's stack, not in this coroutine's frame: a frame over 1 KB
    // is never recycled by Asio's allocator, so every byte kept here costs an allocation.)
    const bool storing = config_->response_store.max_entries > 0;
    auto decoded = [&] {
        const ResponseStore::Scoped turns(worker_.responses(), meter_.key_name());
        return front.decode_stateful(request_.body(), storing ? &turns : nullptr);
    }();
    if (!decoded) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, decoded.error());
    }
    canonical::GenerationRequest& req = decoded.value();
    req.responses.store = req.responses.store && storing;  // the answer says whether it was
    front.prepare_request(req, path);
    meter_.set_model(client_model(req));
    std::string upstream_model;
    const RoutingTable::Pool* pool = table_->find(req.model, upstream_model);
    if (pool == nullptr) {
        co_return co_await unknown_model(front, req.model);
    }
    // Prefix affinity reads the prompt only where there is a choice to make.
    const std::string key =
        table_->routing().balance == config::Balance::prefix && pool->members.size() > 1
            ? prefix_key(req)
            : std::string();
    if (!route(*pool, key, nullptr, upstream_)) {
        // Its backends have no replica: discovery: dns found no address (yet).
        meter_.set_outcome(Outcome::upstream_error);
        canonical::Error e;
        e.status = 503;
        e.type = "service_unavailable";
        e.message = "no replica of the model '" + upstream_model +
                    "' is known: its backend's host name resolved to no address yet (discovery: "
                    "dns); retry shortly";
        co_return co_await client_.send_error(front, e);
    }
    in_flight_ = &table_->shared().in_flight;
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    const BackendView& view = upstream_.backend_view();
    const BackendInfo& info = view.info;
    const std::string named = backend_name(view.config);
    const translators::Plan plan = translators::plan_generation(
        dialect, req,
        translators::BackendFacts{info.dialect, info.flavor, view.config.url.host, named});
    if (plan.refusal) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, *plan.refusal);
    }
    if (auto e = translators::check_passthrough(req, plan)) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, *e);
    }
    const translators::Codec& back = translators::codec_for(plan.back);
    meter_.set_back(canonical::to_string(plan.back));
    if (!plan.fast_path) {
        // Ids the client's dialect reads per choice (SGLang's meta_info.id); the fast path
        // relays the backend's own.
        const size_t count = front.choice_ids_wanted(req);
        for (size_t i = 0; i < count; ++i) {
            req.request_ids.push_back(worker_.random_hex(32));
        }
        // SGLang's /generate gets a rid it can be told to abort by (one prompt, one choice: a
        // batch's rids would have to be one per item).
        if (plan.back == canonical::Dialect::sglang && req.request_ids.empty() &&
            req.prompts.size() <= 1 && req.sampling.n <= 1) {
            req.request_ids.push_back(worker_.random_hex(32));
        }
    }
    // Failover (Generation::open): another replica of the pool, of the first one's dialect.
    const PoolMember first{&upstream_.replica(),
                           static_cast<uint32_t>(&view - table_->backends().data()),
                           view.config.weight};
    auto next_replica = [&] { return route(*pool, key, &first, upstream_); };
    auto hedge_target = [&](UpstreamCall& call) { return route(*pool, key, &first, call); };
    Generation g{worker_,
                 request_,
                 client_,
                 upstream_,
                 meter_,
                 front,
                 back,
                 req,
                 plan,
                 std::move(upstream_model),
                 client_model(req),
                 table_->routing(),
                 table_->shared(),
                 Reroute(next_replica),
                 Retarget(hedge_target),
                 pool->members.size() > 1 && table_->routing().attempts > 1};
    // Only for a turn to store, and on the heap: not in this coroutine's frame (above).
    std::unique_ptr<canonical::GenerationResult> kept;
    if (req.responses.store) {
        kept = std::make_unique<canonical::GenerationResult>();
        g.keep = kept.get();  // stored by the relay before the answer's last bytes leave
        g.store = &worker_.responses();
    }
    watch_.start();
    bool keep_alive = false;
    // if/else, never a conditional inside the co_await: GCC 12 destroys its temporary twice.
    if (req.stream && plan.fast_path) {
        keep_alive = co_await relay_passthrough_stream(g);
    } else if (req.stream) {
        keep_alive = co_await relay_translated_stream(g);
    } else if (plan.gather) {
        keep_alive = co_await relay_gather(g);
    } else {
        keep_alive = co_await relay_whole(g);
    }
    // The client left while SGLang worked: its connection is closed already; the rids are
    // aborted too (upstream_abort.hpp).
    if (meter_.outcome() == Outcome::client_disconnect && !req.request_ids.empty() &&
        upstream_.targeted() &&
        upstream_.backend_view().info.dialect == config::BackendDialect::sglang) {
        abort_sglang_requests(worker_, upstream_.pool(), req.request_ids);
    }
    co_return keep_alive;
}

}  // namespace infergate
