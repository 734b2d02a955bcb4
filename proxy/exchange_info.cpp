// Exchange: the info routes (models, health, SGLang's model/server info, /metrics). What they show
// is gathered once, in catalogue(); the bodies come from each dialect's encoder
// (translators/<dialect>/info.hpp, through translators/info.hpp).
#include "proxy/client_auth.hpp"
#include "proxy/exchange.hpp"
#include "proxy/routing.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/version.hpp"
#include "proxy/worker.hpp"
#include "translators/health.hpp"
#include "translators/info.hpp"

namespace infergate {

canonical::ModelCatalogue Exchange::catalogue() const {
    const BackendView& primary = table_->primary();
    const BackendInfo& info = primary.info;
    canonical::ModelCatalogue c;
    // Every backend's models (the union), then every alias.
    for (const auto& m : table_->model_names()) {
        std::string target = m;
        for (const auto& a : config_->aliases) {
            target = a.name == m ? a.target : target;
        }
        c.models.push_back({m, target});
    }
    c.served_model = table_->default_model();
    c.max_model_len = info.max_model_len;
    c.started_unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(worker_.started().time_since_epoch())
            .count();
    c.version = kVersion;
    c.threads = config_->threads;
    c.backend_url = primary.config.url.text();
    c.backend_ready = info.ready;
    c.backend_dialect = std::string(config::to_string(info.dialect));
    c.backend_detail = info.detail;
    return c;
}

Task<bool> Exchange::models(std::string_view id) {
    if (!request_["anthropic-version"].empty()) {
        co_return co_await anthropic_models(id);  // the Anthropic SDK's models.list()
    }
    const auto c = catalogue();
    if (id.empty()) {
        std::string body = translators::openai::encode_models(c);
        co_return co_await client_.send(http::status::ok, std::move(body));
    }
    auto body = translators::openai::encode_model(c, id);
    if (!body) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(body.error());
    }
    co_return co_await client_.send(http::status::ok, std::move(body.value()));
}

Task<bool> Exchange::health(bool generate) {
    const BackendInfo& info = table_->primary().info;
    route_primary();
    bool ok = false;
    // A deep check needs to know what the backend speaks; until then, its liveness route.
    auto call = translators::health_call(info.dialect, generate && info.ready, info.served_model,
                                         info.flavor);
    canonical::Error failure;
    if (!upstream_.targeted()) {
        failure.message = backend_name(table_->primary().config) +
                          " has no replica: its host name resolved to no address yet";
    } else if (call) {
        translators::HealthCall& c = call.value();
        ok = co_await upstream_.open(c.post ? http::verb::post : http::verb::get,
                                     upstream_.backend().url.base_path + c.path, std::move(c.body),
                                     false);
        failure = upstream_.error();
    } else {
        failure = call.error();
    }
    int status = 503;
    if (ok && upstream_.targeted()) {
        std::string ignored;
        const auto ec = co_await upstream_.read_body(ignored);
        status = upstream_.status() == 200 && !ec ? 200 : 503;
        upstream_.release(!ec);
    }
    if (status == 200) {
        co_return co_await client_.send(http::status::ok,
                                        std::string(translators::llamacpp::kHealthyBody));
    }
    meter_.set_outcome(Outcome::upstream_error);
    canonical::Error e;
    e.status = 503;
    e.type = "service_unavailable";
    meter_.failure().backend = table_->primary().config.url.text();
    e.message = ok ? backend_name(table_->primary().config) + " is not healthy" : failure.message;
    co_return co_await client_.send_openai_error(e);
}

Task<bool> Exchange::serve_metrics() {
    std::string text = worker_.metrics_registry().render();
    if (const ClientAuth* auth = auth_.get()) {
        text += auth->render();
    }
    co_return co_await client_.send(http::status::ok, std::move(text),
                                    "text/plain; version=0.0.4; charset=utf-8");
}

Task<bool> Exchange::reload() {
    Worker::ReloadOutcome outcome = co_await worker_.reload();
    if (outcome.status != 200) {
        meter_.set_outcome(Outcome::rejected);
    }
    co_return co_await client_.send(static_cast<http::status>(outcome.status),
                                    std::move(outcome.body), "application/json");
}

Task<bool> Exchange::relay_get(std::string_view path, const translators::Codec& codec) {
    route_primary();
    if (!upstream_.targeted()) {
        canonical::Error e;
        e.status = 503;
        e.type = "service_unavailable";
        e.message = backend_name(table_->primary().config) +
                    " has no replica: its host name resolved to no address yet";
        co_return co_await client_.send_error(codec, e);
    }
    if (!co_await upstream_.open(
            http::verb::get, upstream_.backend().url.base_path + std::string(path), {}, false)) {
        co_return co_await client_.send_error(codec, upstream_.error());
    }
    std::string body;
    const auto ec = co_await upstream_.read_body(body);
    upstream_.release(!ec);
    if (ec) {
        co_return co_await client_.send_error(codec, upstream_.failure(ec, "reading the response"));
    }
    const std::string_view ctype = upstream_.content_type();
    co_return co_await client_.send(static_cast<http::status>(upstream_.status()), std::move(body),
                                    ctype.empty() ? "application/json" : ctype);
}

Task<bool> Exchange::model_info(bool server_info) {
    const BackendInfo& info = table_->primary().info;
    const std::string_view path = server_info ? "/get_server_info" : "/get_model_info";
    if (info.ready && translators::answers_info_route(info.dialect, path)) {
        co_return co_await relay_get(path, translators::codec_for(canonical::Dialect::openai_chat));
    }
    // A named local, never a temporary inside the co_await (see ollama_tags).
    const auto c = catalogue();
    std::string out = server_info ? translators::sglang::encode_server_info(c)
                                  : translators::sglang::encode_model_info(c);
    co_return co_await client_.send(http::status::ok, std::move(out));
}

}  // namespace infergate
