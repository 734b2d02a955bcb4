#include "proxy/exchange.hpp"

#include "proxy/client_auth.hpp"
#include "proxy/disconnect_watch.hpp"
#include "proxy/generation.hpp"
#include "proxy/router.hpp"
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
      pool_(worker.pool_ptr()),
      auth_(worker.auth_ptr()),
      request_(std::move(request)),
      peer_(peer),
      request_id_(),
      watch_(watch),
      meter_(worker, pool_->backend().name, request_.body().size()),
      client_(worker, client, client_deadline, request_, meter_, request_id_,
              std::chrono::milliseconds(config_->client_idle_ms)),
      upstream_(worker, *pool_, auth_.get(), watch, meter_, request_, request_id_),
      listener_(listener) {
    const auto rid = request_["X-Request-Id"];
    request_id_ = !rid.empty() && rid.size() <= 128 ? std::string(rid) : worker_.random_hex(32);
}

Exchange::~Exchange() {
    watch_.stop();
    if (admitted_) {
        auth_->release(key_);  // the ClientAuth that admitted it, even after a reload
    }
}

Task<bool> Exchange::run() {
    const bool keep_alive = co_await dispatch();
    meter_.finish(request_, request_id_, peer_);
    co_return keep_alive;
}

Task<bool> Exchange::dispatch() {
    const Route route = match_route(request_.method_string(), request_.target(), listener_);
    if (auto refused = co_await authorize(route)) {
        co_return *refused;
    }
    switch (route.kind) {
        case Route::Kind::metrics: co_return co_await serve_metrics();
        case Route::Kind::reload:
            co_return co_await reload();
        case Route::Kind::generate: co_return co_await generate(route.dialect, route.path);
        case Route::Kind::generate_by_body: co_return co_await generate_by_body(route.path);
        case Route::Kind::root: co_return co_await root();
        case Route::Kind::tgi_info: co_return co_await tgi_info();
        case Route::Kind::ollama_tags: co_return co_await ollama_tags(false);
        case Route::Kind::ollama_ps: co_return co_await ollama_tags(true);
        case Route::Kind::ollama_version: co_return co_await ollama_version();
        case Route::Kind::ollama_show: co_return co_await ollama_show();
        case Route::Kind::llamacpp_props: co_return co_await llamacpp_props();
        case Route::Kind::models: co_return co_await models({});
        case Route::Kind::model: co_return co_await models(route.model_id);
        case Route::Kind::health: co_return co_await health(false);
        case Route::Kind::health_generate: co_return co_await health(true);
        case Route::Kind::model_info: co_return co_await model_info(false);
        case Route::Kind::server_info: co_return co_await model_info(true);
        case Route::Kind::method_not_allowed: {
            meter_.set_outcome(Outcome::rejected);
            client_.extra_headers().emplace_back("Allow", std::string(route.allow));
            canonical::Error e;
            e.status = 405;
            e.message = "method " + std::string(request_.method_string()) + " is not allowed on " +
                        std::string(request_.target()) + "; allowed: " + std::string(route.allow);
            co_return co_await client_.send_openai_error(e);
        }
        case Route::Kind::not_found: break;
    }
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

std::string Exchange::upstream_model(const canonical::GenerationRequest& req) const {
    for (const auto& a : config_->aliases) {
        if (a.name == req.model) {
            return a.target;
        }
    }
    const std::string& served = worker_.backend().served_model;
    if (req.model.empty()) {
        return served;
    }
    // Ollama names a model's default tag either way: "llama3.2" is "llama3.2:latest".
    constexpr std::string_view kLatest = ":latest";
    if (req.model.size() == served.size() + kLatest.size() && req.model.starts_with(served) &&
        req.model.ends_with(kLatest)) {
        return served;
    }
    if (served.size() == req.model.size() + kLatest.size() && served.starts_with(req.model) &&
        served.ends_with(kLatest)) {
        return served;
    }
    return req.model;
}

std::string Exchange::client_model(const canonical::GenerationRequest& req) const {
    return req.model.empty() ? worker_.backend().served_model : req.model;
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
    auto decoded = front.decode_request(request_.body());
    if (!decoded) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, decoded.error());
    }
    canonical::GenerationRequest& req = decoded.value();
    front.prepare_request(req, path);
    meter_.set_model(client_model(req));
    const BackendInfo& info = worker_.backend();
    if (!info.ready) {
        meter_.set_outcome(Outcome::upstream_error);
        canonical::Error e;
        e.status = 503;
        e.type = "service_unavailable";
        // The probe's detail names URLs: the client gets it without the backend's address.
        const std::string url = pool_->backend().url.text();
        std::string detail = info.detail;
        // "GET http://h:8000/v1/models" becomes "GET /v1/models"; "serves http://h:8000"
        // becomes "serves the backend".
        for (size_t at = detail.find(url); at != std::string::npos; at = detail.find(url, at)) {
            const bool path_follows =
                at + url.size() < detail.size() && detail[at + url.size()] == '/';
            detail.replace(at, url.size(), path_follows ? "" : "the backend");
        }
        meter_.failure().backend = url;
        e.message =
            backend_name(pool_->backend()) + " is not ready yet (" + detail + "); retry shortly";
        co_return co_await client_.send_error(front, e);
    }
    const translators::Plan plan = translators::plan_generation(
        dialect, req,
        translators::BackendFacts{info.dialect, info.flavor, pool_->backend().url.host});
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
    }
    Generation g{worker_, request_, client_, upstream_,           meter_,           front,
                 back,    req,      plan,    upstream_model(req), client_model(req)};
    watch_.start();
    // if/else, never a conditional inside the co_await: GCC 12 destroys its temporary twice.
    if (req.stream && plan.fast_path) {
        co_return co_await relay_passthrough_stream(g);
    }
    if (req.stream) {
        co_return co_await relay_translated_stream(g);
    }
    if (plan.gather) {
        co_return co_await relay_gather(g);
    }
    co_return co_await relay_whole(g);
}

}  // namespace infergate
