// Exchange: the info routes (models, health, SGLang's model/server info). What they show is
// gathered once, in catalogue(); the bodies come from each dialect's encoder
// (translators/<dialect>/info.hpp, through translators/info.hpp).
#include "proxy/exchange_detail.hpp"
#include "proxy/pairing.hpp"
#include "proxy/version.hpp"
#include "proxy/worker.hpp"
#include "translators/info.hpp"

namespace infergate {

canonical::ModelCatalogue Exchange::catalogue() const {
    const BackendInfo& info = worker_.backend();
    canonical::ModelCatalogue c;
    if (!info.served_model.empty()) {
        c.models.push_back({info.served_model, info.served_model});
    }
    for (const auto& a : worker_.config().aliases) {
        c.models.push_back({a.name, a.target});
    }
    c.served_model = info.served_model;
    c.max_model_len = info.max_model_len;
    c.started_unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(worker_.started().time_since_epoch())
            .count();
    c.version = kVersion;
    c.threads = worker_.config().threads;
    c.backend_url = worker_.pool().backend().url.text();
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
        co_return co_await send(http::status::ok, std::move(body));
    }
    auto body = translators::openai::encode_model(c, id);
    if (!body) {
        outcome_ = Outcome::rejected;
        co_return co_await send_openai_error(body.error());
    }
    co_return co_await send(http::status::ok, std::move(body.value()));
}

namespace {

// Where each engine answers a liveness check (api-dialects §1, health table).
std::string_view health_path(config::BackendDialect d) {
    switch (d) {
        case config::BackendDialect::ollama: return "/";            // "Ollama is running"
        case config::BackendDialect::anthropic: return "/v1/models";  // no health route
        default: return "/health";
    }
}

}  // namespace

Task<bool> Exchange::health(bool generate) {
    const BackendInfo& info = worker_.backend();
    const std::string& base = worker_.pool().backend().url.base_path;
    bool ok = false;
    if (generate && info.ready && info.dialect == config::BackendDialect::sglang) {
        ok = co_await call_upstream(http::verb::get, base + "/health_generate", {}, false);
    } else if (generate && info.ready) {
        // A deep check: one token of real generation, in whatever API the backend speaks.
        canonical::GenerationRequest ping;
        ping.model = info.served_model;
        ping.sampling.max_tokens = 1;
        ping.kind = info.dialect == config::BackendDialect::anthropic
                        ? canonical::RequestKind::chat
                        : canonical::RequestKind::completion;
        ping.dialect = ping.kind == canonical::RequestKind::chat ? canonical::Dialect::openai_chat
                                                                 : canonical::Dialect::openai_completions;
        ping.prompts.push_back(canonical::Prompt{"ping", {}, false});
        ping.messages.push_back(canonical::ChatMessage{"user", "ping", ""});
        const Pairing pairing = pair_dialects(ping.dialect, ping.kind, info.dialect);
        const translators::Codec& back = translators::codec_for(pairing.back);
        auto body = back.encode_request(
            ping, translators::UpstreamOptions{info.served_model, info.flavor, false});
        if (body) {
            ok = co_await call_upstream(http::verb::post,
                                        base + std::string(back.upstream_path(ping)),
                                        std::move(body.value()), false);
        } else {
            error_ = body.error();
        }
    } else {
        ok = co_await call_upstream(http::verb::get, base + std::string(health_path(info.dialect)),
                                    {}, false);
    }
    int status = 503;
    if (ok) {
        std::string ignored;
        const auto ec = co_await read_upstream_body(ignored);
        status = upstream_->status() == 200 && !ec ? 200 : 503;
        finish_upstream(!ec);
    }
    if (status == 200) {
        co_return co_await send(http::status::ok, std::string(translators::llamacpp::kHealthyBody));
    }
    outcome_ = Outcome::upstream_error;
    canonical::Error e;
    e.status = 503;
    e.type = "service_unavailable";
    e.message = ok ? "the backend at " + worker_.pool().backend().url.text() + " is not healthy"
                   : error_.message;
    co_return co_await send_openai_error(e);
}

Task<bool> Exchange::model_info(bool server_info) {
    const BackendInfo& info = worker_.backend();
    if (info.ready && info.dialect == config::BackendDialect::sglang) {
        // An SGLang backend answers for itself.
        const std::string path = server_info ? "/get_server_info" : "/get_model_info";
        if (!co_await call_upstream(http::verb::get, worker_.pool().backend().url.base_path + path,
                                    {}, false)) {
            co_return co_await send_openai_error(error_);
        }
        std::string body;
        const auto ec = co_await read_upstream_body(body);
        finish_upstream(!ec);
        if (ec) {
            co_return co_await send_openai_error(upstream_failure(ec, "reading the response"));
        }
        co_return co_await send(static_cast<http::status>(upstream_->status()), std::move(body));
    }
    // A named local, never a temporary inside the co_await (see ollama_tags).
    const auto c = catalogue();
    std::string out = server_info ? translators::sglang::encode_server_info(c)
                                  : translators::sglang::encode_model_info(c);
    co_return co_await send(http::status::ok, std::move(out));
}

}  // namespace infergate
