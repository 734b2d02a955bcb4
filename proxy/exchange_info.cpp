// Exchange: the info routes (models, health, SGLang's model/server info).
#include "proxy/exchange_detail.hpp"
#include "proxy/pairing.hpp"
#include "proxy/version.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/json.hpp"

namespace infergate {

namespace {

void write_model(json::Writer& w, const std::string& id, int64_t created, const BackendInfo& info,
                 const std::string& root) {
    w.StartObject();
    w.Key("id");
    w.String(id);
    w.Key("object");
    w.String("model");
    w.Key("created");
    w.Int64(created);
    w.Key("owned_by");
    w.String("infergate");
    w.Key("root");
    w.String(root);
    if (info.max_model_len) {
        w.Key("max_model_len");
        w.Int64(*info.max_model_len);
    }
    w.EndObject();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> Exchange::model_entries() const {
    std::vector<std::pair<std::string, std::string>> entries;
    const BackendInfo& info = worker_.backend();
    if (!info.served_model.empty()) {
        entries.emplace_back(info.served_model, info.served_model);
    }
    for (const auto& a : worker_.config().aliases) {
        entries.emplace_back(a.name, a.target);
    }
    return entries;
}

Task<bool> Exchange::models(std::string_view id) {
    if (!request_["anthropic-version"].empty()) {
        co_return co_await anthropic_models(id);  // the Anthropic SDK's models.list()
    }
    const BackendInfo& info = worker_.backend();
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                                worker_.started().time_since_epoch()).count();
    const auto entries = model_entries();
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    if (id.empty()) {
        w.StartObject();
        w.Key("object");
        w.String("list");
        w.Key("data");
        w.StartArray();
        for (const auto& [name, root] : entries) {
            write_model(w, name, created, info, root);
        }
        w.EndArray();
        w.EndObject();
        co_return co_await send(http::status::ok, std::move(out));
    }
    for (const auto& [name, root] : entries) {
        if (name == id) {
            write_model(w, name, created, info, root);
            co_return co_await send(http::status::ok, std::move(out));
        }
    }
    outcome_ = Outcome::rejected;
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.param = "model";
    std::string known;
    for (const auto& entry : entries) {
        known += (known.empty() ? "" : ", ") + entry.first;
    }
    e.message = "The model `" + std::string(id) + "` does not exist. Models served here: " +
                (known.empty() ? "(none discovered yet)" : known);
    co_return co_await send_openai_error(e);
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
        // llama-server's answer; the other engines' clients read only the status.
        co_return co_await send(http::status::ok, R"({"status":"ok"})");
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
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("model_path");
    w.String(info.served_model);
    w.Key("tokenizer_path");
    w.String(info.served_model);
    w.Key("is_generation");
    w.Bool(true);
    if (server_info) {
        w.Key("served_model_name");
        w.String(info.served_model);
        w.Key("version");
        w.String(std::string("infergate-") + kVersion);
        w.Key("backend");
        w.StartObject();
        w.Key("url");
        w.String(worker_.pool().backend().url.text());
        w.Key("ready");
        w.Bool(info.ready);
        w.Key("dialect");
        w.String(info.ready ? std::string(config::to_string(info.dialect)) : "unknown");
        w.Key("detected");
        w.String(info.detail);
        w.EndObject();
    } else {
        w.Key("preferred_sampling_params");
        w.Null();
        w.Key("weight_version");
        w.String("default");
    }
    w.EndObject();
    co_return co_await send(http::status::ok, std::move(out));
}

}  // namespace infergate
