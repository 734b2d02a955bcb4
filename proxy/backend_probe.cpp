#include "proxy/backend_probe.hpp"

#include "proxy/upstream_parser.hpp"
#include "translators/canonical/json.hpp"

namespace infergate {

namespace {

struct Reply {
    beast::error_code ec;
    int status = 0;
    std::string server;
    std::string body;
};

Task<Reply> get(UpstreamPool& pool, const std::string& path) {
    Reply reply;
    bool reused = false;
    auto conn = co_await pool.acquire(reply.ec, reused);
    if (reply.ec) {
        co_return reply;
    }
    const auto& url = pool.backend().url;
    http::request<http::empty_body> req{http::verb::get, url.base_path + path, 11};
    req.set(http::field::host, url.host + ":" + std::to_string(url.port));
    req.set(http::field::user_agent, "infergate-probe");
    if (!pool.backend().api_key.empty()) {
        // The dialect is not known yet: the key goes in both servers' headers.
        req.set(http::field::authorization, "Bearer " + pool.backend().api_key);
        req.set("x-api-key", pool.backend().api_key);
    }
    req.set("anthropic-version", "2023-06-01");
    req.set(http::field::accept_encoding, "identity");  // the body is parsed here
    // One 5 s budget for the request and the response.
    conn->deadline().arm(std::chrono::seconds(5));
    auto [wec, wn] = co_await conn->visit([&](auto& s) { return http::async_write(s, req, use_nothrow); });
    if (wec) {
        reply.ec = conn->settle(wec);
        co_return reply;
    }
    // The head as every backend call reads it (interim 1xx responses skipped), then the body.
    std::optional<http::response_parser<http::string_body>> parser;
    auto rec = co_await conn->visit([&](auto& s) {
        return read_final_head(s, conn->buffer(), parser,
                               [](auto& p) { p.body_limit(1024 * 1024); });
    });
    if (!rec) {
        auto [bec, bn] = co_await conn->visit(
            [&](auto& s) { return http::async_read(s, conn->buffer(), *parser, use_nothrow); });
        rec = bec;
    }
    if (auto ec = conn->settle(rec)) {
        reply.ec = ec;
        co_return reply;
    }
    reply.status = parser->get().result_int();
    reply.server = std::string(parser->get()[http::field::server]);
    reply.body = parser->get().body();
    if (parser->keep_alive()) {
        pool.release(std::move(conn));
    }
    co_return reply;
}

}  // namespace

namespace {

// `doc` is left null unless the reply is a 200 with a JSON object.
void parse_object(const Reply& r, json::Document& doc) {
    if (r.ec || r.status != 200 || json::parse(r.body, doc) || !doc.IsObject()) {
        doc.SetNull();
    }
}

std::string string_member(const json::Value& v, const char* key) {
    if (!v.IsObject()) {
        return {};
    }
    const auto* m = json::find(v, key);
    return m != nullptr && m->IsString() ? std::string(json::view(*m)) : std::string();
}

std::optional<int64_t> int_member(const json::Value& v, const char* key) {
    if (!v.IsObject()) {
        return std::nullopt;
    }
    const auto* m = json::find(v, key);
    return m != nullptr && m->IsInt64() ? std::optional<int64_t>(m->GetInt64()) : std::nullopt;
}

translators::Flavor flavor_of(config::BackendDialect d) {
    return d == config::BackendDialect::sglang ? translators::Flavor::sglang
                                               : translators::Flavor::generic;
}

}  // namespace

Task<ProbeResult> probe_backend(const config::Backend& backend, net::ssl::context* tls) {
    auto executor = co_await net::this_coro::executor;
    Deadlines deadlines;  // outlives the pool and its connections
    deadlines.start(executor, Deadlines::tick_for(std::chrono::seconds(5)));
    UpstreamPool pool(executor, deadlines, backend, backend.url.tls ? tls : nullptr);
    ProbeResult result;
    BackendInfo& info = result.info;
    info.served_model = backend.model;
    using D = config::BackendDialect;

    // 1. GET /v1/models: most engines serve it; `owned_by`, the Server header and Anthropic's
    // shape identify several of them at once.
    const Reply models = co_await get(pool, "/v1/models");
    if (models.ec) {
        info.detail = "no answer from " + backend.url.text() + ": " + models.ec.message();
        co_return result;
    }
    result.reachable = true;
    std::string owned_by;
    std::string listed_model;
    bool anthropic_shape = false;
    json::Document mdoc;
    parse_object(models, mdoc);
    if (mdoc.IsObject()) {
        const json::Value* data = json::find(mdoc, "data");
        if (data != nullptr && data->IsArray() && !data->Empty() && (*data)[0].IsObject()) {
            const json::Value& m = (*data)[0];
            listed_model = string_member(m, "id");
            owned_by = string_member(m, "owned_by");
            info.max_model_len = int_member(m, "max_model_len");
            anthropic_shape = string_member(m, "type") == "model" &&
                              json::find(m, "display_name") != nullptr &&
                              json::find(m, "object") == nullptr;
        }
    }
    const bool llamacpp_server = models.server.find("llama.cpp") != std::string::npos;

    std::optional<D> found;
    std::string how;
    std::string model;  // the engine's own model name, where its fingerprint route tells it
    if (owned_by == "sglang") {
        found = D::sglang;
        how = "/v1/models owned_by \"sglang\"";
    } else if (owned_by == "vllm") {
        found = D::openai;
        info.flavor = translators::Flavor::vllm;
        how = "/v1/models owned_by \"vllm\"";
    } else if (owned_by == "llamacpp" || llamacpp_server) {
        found = D::llamacpp;
        how = llamacpp_server ? "the Server: llama.cpp header" : "/v1/models owned_by \"llamacpp\"";
    } else if (anthropic_shape) {
        found = D::anthropic;
        how = "/v1/models in Anthropic's shape";
    }
    // 2. The engines' own info routes, most specific first.
    if (!found) {
        const Reply sgl = co_await get(pool, "/get_model_info");
        json::Document sdoc;
        parse_object(sgl, sdoc);
        if (sdoc.IsObject() && json::find(sdoc, "model_path") != nullptr) {
            found = D::sglang;
            how = "GET /get_model_info answered";
            model = string_member(sdoc, "model_path");
        }
    }
    if (!found) {
        const Reply tgi = co_await get(pool, "/info");
        json::Document tdoc;
        parse_object(tgi, tdoc);
        if (string_member(tdoc, "router") == "text-generation-router") {
            found = D::tgi;
            how = "GET /info router \"text-generation-router\"";
            model = string_member(tdoc, "model_id");
            if (auto total = int_member(tdoc, "max_total_tokens")) {
                info.max_model_len = total;
            }
        }
    }
    if (!found) {
        const Reply root = co_await get(pool, "/");
        if (!root.ec && root.status == 200 && root.body.starts_with("Ollama is running")) {
            found = D::ollama;
            how = "GET / \"Ollama is running\"";
            json::Document tags;
            parse_object(co_await get(pool, "/api/tags"), tags);
            if (const auto* list = tags.IsObject() ? json::find(tags, "models") : nullptr;
                list != nullptr && list->IsArray() && !list->Empty()) {
                model = string_member((*list)[0], "name");
            }
        }
    }
    if (!found && !listed_model.empty()) {
        json::Document vdoc;
        parse_object(co_await get(pool, "/version"), vdoc);
        found = D::openai;
        if (!string_member(vdoc, "version").empty()) {
            info.flavor = translators::Flavor::vllm;
            how = "GET /version answered (vLLM)";
        } else {
            how = "/v1/models answered (owned_by \"" + owned_by + "\")";
        }
    }
    if (!found && models.status == 404) {
        // vLLM's demo server has only /generate and /health.
        const Reply health = co_await get(pool, "/health");
        if (!health.ec && health.status == 200) {
            found = D::vllm_legacy;
            how = "only GET /health answered (vLLM's legacy demo server)";
        }
    }
    if (found == D::llamacpp) {
        json::Document props;
        parse_object(co_await get(pool, "/props"), props);
        if (props.IsObject()) {
            if (const auto* s = json::find(props, "default_generation_settings");
                s != nullptr && s->IsObject()) {
                if (auto n_ctx = int_member(*s, "n_ctx"); n_ctx && *n_ctx > 0) {
                    info.max_model_len = n_ctx;
                }
            }
        }
    }
    if (found && found != D::openai) {
        info.flavor = flavor_of(*found);
    }

    if (backend.dialect != D::auto_detect) {
        if (!found) {
            how = "configured";
        } else if (backend.dialect != *found) {
            how += "; overridden by the configured dialect";
        }
        if (!found || backend.dialect != *found) {
            info.flavor = flavor_of(backend.dialect);
        }
        found = backend.dialect;
    }
    if (info.served_model.empty()) {
        info.served_model = !listed_model.empty() ? listed_model : model;
    }
    if (info.served_model.empty() && found == D::vllm_legacy) {
        // The demo server has no model name at all; clients see the backend's configured name.
        info.served_model = backend.name;
    }
    if (!found) {
        info.detail = "could not tell what serves " + backend.url.text() +
                      ": none of GET /v1/models (HTTP " + std::to_string(models.status) +
                      "), /get_model_info, /info, / or /health answered like SGLang, vLLM, TGI, "
                      "Ollama, llama.cpp, vLLM's demo server or Anthropic; set backends[].dialect "
                      "(or --upstream-dialect)";
        co_return result;
    }
    info.dialect = *found;
    info.ready = true;
    info.detail = std::string(config::to_string(info.dialect)) + " via " + how;
    co_return result;
}

}  // namespace infergate
