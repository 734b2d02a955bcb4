// Exchange: the info routes of the other engines' APIs, answered by infergate itself from what it
// knows about its backend, in each engine's own shape (api-dialects §5.8, §6.1, §6.9, §7.8, §8):
// Ollama's GET /, /api/tags, /api/ps, /api/version, /api/show; TGI's /info; llama.cpp's /props;
// Anthropic's /v1/models. The model list is the same everywhere: the served model and the aliases.
#include "proxy/exchange_detail.hpp"
#include "proxy/version.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/json.hpp"
#include "translators/ollama/codec.hpp"

namespace infergate {

namespace {

// The Ollama API level infergate's Ollama front follows (the ollama/ollama revision read for
// api-dialects.md); clients that gate features on /api/version compare against this.
constexpr std::string_view kOllamaApiVersion = "0.12.0";

std::string rfc3339(std::chrono::system_clock::time_point t) {
    return translators::ollama::format_created_at(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

void ollama_details(json::Writer& w) {
    // The backend's weights are not visible through its API: the fields are present (clients
    // index them) and empty.
    w.Key("details");
    w.StartObject();
    w.Key("parent_model");
    w.String("");
    w.Key("format");
    w.String("");
    w.Key("family");
    w.String("");
    w.Key("families");
    w.Null();
    w.Key("parameter_size");
    w.String("");
    w.Key("quantization_level");
    w.String("");
    w.EndObject();
}

}  // namespace

Task<bool> Exchange::root() {
    if (request_.method() == http::verb::post) {
        co_return co_await generate(canonical::Dialect::tgi, "/");  // TGI's compat route
    }
    // Ollama's liveness answer (GET and HEAD); TGI's GET / health check reads only the status.
    co_return co_await send(http::status::ok, "Ollama is running", "text/plain; charset=utf-8");
}

Task<bool> Exchange::ollama_tags(bool running) {
    const std::string modified = rfc3339(worker_.started());
    const auto& info = worker_.backend();
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("models");
    w.StartArray();
    for (const auto& [name, target] : model_entries()) {
        w.StartObject();
        w.Key("name");
        w.String(name);
        w.Key("model");
        w.String(name);
        if (running) {
            w.Key("size");
            w.Int(0);
            w.Key("digest");
            w.String("");
            ollama_details(w);
            w.Key("expires_at");
            w.String("0001-01-01T00:00:00Z");  // Ollama's "never" (a zero Go time)
            w.Key("size_vram");
            w.Int(0);
            if (info.max_model_len) {
                w.Key("context_length");
                w.Int64(*info.max_model_len);
            }
        } else {
            w.Key("modified_at");
            w.String(modified);
            w.Key("size");
            w.Int(0);
            w.Key("digest");
            w.String("");
            ollama_details(w);
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    co_return co_await send(http::status::ok, std::move(out));
}

Task<bool> Exchange::ollama_version() {
    std::string out = "{\"version\":\"" + std::string(kOllamaApiVersion) + "\"}";
    co_return co_await send(http::status::ok, std::move(out));
}

Task<bool> Exchange::ollama_show() {
    const translators::Codec& ollama = translators::codec_for(canonical::Dialect::ollama_chat);
    json::Document doc;
    if (auto err = json::parse(request_.body(), doc)) {
        outcome_ = Outcome::rejected;
        co_return co_await send_error(ollama, *err);
    }
    std::string wanted;
    for (const char* key : {"model", "name"}) {  // "name" is the older spelling
        if (doc.IsObject()) {
            if (const auto* v = json::find(doc, key); v != nullptr && v->IsString()) {
                wanted = std::string(json::view(*v));
                break;
            }
        }
    }
    if (wanted.empty()) {
        outcome_ = Outcome::rejected;
        co_return co_await send_error(ollama, canonical::bad_request("model is required", "model"));
    }
    const auto entries = model_entries();
    const auto match = [&wanted](const auto& e) {
        return e.first == wanted || e.first + ":latest" == wanted;
    };
    if (std::find_if(entries.begin(), entries.end(), match) == entries.end()) {
        outcome_ = Outcome::rejected;
        canonical::Error e;
        e.status = 404;
        e.type = "not_found_error";
        e.message = "model '" + wanted + "' not found";
        co_return co_await send_error(ollama, e);
    }
    const auto& info = worker_.backend();
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("modelfile");
    w.String("");
    w.Key("parameters");
    w.String("");
    w.Key("template");
    w.String("");
    ollama_details(w);
    w.Key("model_info");
    w.StartObject();
    if (info.max_model_len) {
        w.Key("general.context_length");
        w.Int64(*info.max_model_len);
    }
    w.EndObject();
    w.Key("capabilities");
    w.StartArray();
    w.String("completion");
    w.EndArray();
    w.Key("modified_at");
    w.String(rfc3339(worker_.started()));
    w.EndObject();
    co_return co_await send(http::status::ok, std::move(out));
}

Task<bool> Exchange::tgi_info() {
    const auto& info = worker_.backend();
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("model_id");
    w.String(info.served_model);
    w.Key("model_sha");
    w.Null();
    w.Key("model_pipeline_tag");
    w.String("text-generation");
    // TGI's own defaults for the limits infergate does not enforce itself.
    w.Key("max_concurrent_requests");
    w.Int(128);
    w.Key("max_best_of");
    w.Int(1);
    w.Key("max_stop_sequences");
    w.Int(4);
    if (info.max_model_len) {
        w.Key("max_input_tokens");
        w.Int64(std::max<int64_t>(1, *info.max_model_len - 1));
        w.Key("max_total_tokens");
        w.Int64(*info.max_model_len);
    } else {
        w.Key("max_input_tokens");
        w.Null();
        w.Key("max_total_tokens");
        w.Null();
    }
    w.Key("validation_workers");
    w.Int(worker_.config().threads);
    w.Key("max_client_batch_size");
    w.Int(1);
    w.Key("router");
    w.String("text-generation-router");
    w.Key("version");
    w.String(kVersion);
    w.Key("sha");
    w.Null();
    w.Key("docker_label");
    w.Null();
    w.EndObject();
    co_return co_await send(http::status::ok, std::move(out));
}

Task<bool> Exchange::llamacpp_props() {
    const auto& info = worker_.backend();
    if (info.ready && info.dialect == config::BackendDialect::llamacpp) {
        // A llama.cpp backend answers for itself: its slots, model file, chat template, build
        // and generation defaults are facts only it knows.
        const translators::Codec& llama = translators::codec_for(canonical::Dialect::llamacpp);
        if (!co_await call_upstream(http::verb::get,
                                    worker_.pool().backend().url.base_path + "/props", {}, false)) {
            co_return co_await send_error(llama, error_);
        }
        std::string body;
        const auto ec = co_await read_upstream_body(body);
        finish_upstream(!ec);
        if (ec) {
            co_return co_await send_error(llama, upstream_failure(ec, "reading the response"));
        }
        const std::string_view ctype = upstream_->parser->content_type();
        co_return co_await send(static_cast<http::status>(upstream_->status()), std::move(body),
                                ctype.empty() ? "application/json" : ctype);
    }
    // Another engine: only what infergate knows. Its slot count (the engine batches as it
    // likes), chat template and model file are not visible through its API, so total_slots,
    // chat_template and the like are left out rather than made up.
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("default_generation_settings");
    w.StartObject();
    if (info.max_model_len) {
        w.Key("n_ctx");
        w.Int64(*info.max_model_len);
    }
    w.Key("params");
    w.StartObject();
    w.Key("n_predict");
    w.Int(-1);  // llama.cpp's "until the end": what a llama.cpp client gets with no budget
    w.EndObject();
    w.EndObject();
    w.Key("model_path");
    w.String(info.served_model);  // the model's name: the only name the backend's API gives
    w.Key("modalities");
    w.StartObject();
    w.Key("vision");
    w.Bool(false);
    w.EndObject();
    w.Key("build_info");
    w.String(std::string("infergate-") + kVersion);
    w.EndObject();
    co_return co_await send(http::status::ok, std::move(out));
}

Task<bool> Exchange::anthropic_models(std::string_view id) {
    const std::string created = rfc3339(worker_.started());
    const auto entries = model_entries();
    auto write = [&created](json::Writer& w, const std::string& name) {
        w.StartObject();
        w.Key("type");
        w.String("model");
        w.Key("id");
        w.String(name);
        w.Key("display_name");
        w.String(name);
        w.Key("created_at");
        w.String(created);
        w.EndObject();
    };
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    if (id.empty()) {
        w.StartObject();
        w.Key("data");
        w.StartArray();
        for (const auto& e : entries) {
            write(w, e.first);
        }
        w.EndArray();
        w.Key("has_more");
        w.Bool(false);
        w.Key("first_id");
        entries.empty() ? w.Null() : w.String(entries.front().first);
        w.Key("last_id");
        entries.empty() ? w.Null() : w.String(entries.back().first);
        w.EndObject();
        co_return co_await send(http::status::ok, std::move(out));
    }
    for (const auto& e : entries) {
        if (e.first == id) {
            write(w, e.first);
            co_return co_await send(http::status::ok, std::move(out));
        }
    }
    outcome_ = Outcome::rejected;
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = "model: " + std::string(id);
    co_return co_await send_error(translators::codec_for(canonical::Dialect::anthropic), e);
}

}  // namespace infergate
