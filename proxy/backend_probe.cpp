#include "proxy/backend_probe.hpp"

#include "translators/canonical/json.hpp"

namespace infergate {

namespace {

struct Reply {
    beast::error_code ec;
    int status = 0;
    std::string server;
    std::string body;
};

net::awaitable<Reply> get(UpstreamPool& pool, const std::string& path) {
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
        req.set(http::field::authorization, "Bearer " + pool.backend().api_key);
    }
    conn->expires_after(std::chrono::seconds(5));
    auto [wec, wn] = co_await conn->visit([&](auto& s) { return http::async_write(s, req, use_nothrow); });
    if (wec) {
        reply.ec = wec;
        co_return reply;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(1024 * 1024);
    auto [rec, rn] = co_await conn->visit(
        [&](auto& s) { return http::async_read(s, conn->buffer(), parser, use_nothrow); });
    if (rec) {
        reply.ec = rec;
        co_return reply;
    }
    reply.status = parser.get().result_int();
    reply.server = std::string(parser.get()[http::field::server]);
    reply.body = parser.get().body();
    if (parser.keep_alive()) {
        pool.release(std::move(conn));
    }
    co_return reply;
}

}  // namespace

net::awaitable<ProbeResult> probe_backend(const config::Backend& backend, net::ssl::context* tls) {
    auto executor = co_await net::this_coro::executor;
    UpstreamPool pool(executor, backend, backend.url.tls ? tls : nullptr);
    ProbeResult result;
    BackendInfo& info = result.info;
    info.served_model = backend.model;

    std::string owned_by;
    std::string listed_model;
    const Reply models = co_await get(pool, "/v1/models");
    if (models.ec) {
        info.detail = "no answer from " + backend.url.text() + ": " + models.ec.message();
        co_return result;
    }
    result.reachable = true;
    json::Document doc;
    if (models.status == 200 && !json::parse(models.body, doc) && doc.IsObject()) {
        const json::Value* data = json::find(doc, "data");
        if (data != nullptr && data->IsArray() && !data->Empty() && (*data)[0].IsObject()) {
            const json::Value& m = (*data)[0];
            if (const auto* id = json::find(m, "id"); id != nullptr && id->IsString()) {
                listed_model = std::string(json::view(*id));
            }
            if (const auto* o = json::find(m, "owned_by"); o != nullptr && o->IsString()) {
                owned_by = std::string(json::view(*o));
            }
            if (const auto* len = json::find(m, "max_model_len"); len != nullptr && len->IsInt64()) {
                info.max_model_len = len->GetInt64();
            }
        }
    }
    // SGLang's own info route is the surest fingerprint (a route name alone is not: several
    // servers serve other servers' routes).
    std::string model_path;
    const Reply sgl = co_await get(pool, "/get_model_info");
    json::Document sdoc;
    const bool is_sglang = !sgl.ec && sgl.status == 200 && !json::parse(sgl.body, sdoc) &&
                           sdoc.IsObject() && json::find(sdoc, "model_path") != nullptr;
    if (is_sglang) {
        if (const auto* p = json::find(sdoc, "model_path"); p->IsString()) {
            model_path = std::string(json::view(*p));
        }
    }

    std::string how;
    if (is_sglang || owned_by == "sglang") {
        info.dialect = config::BackendDialect::sglang;
        info.flavor = translators::Flavor::sglang;
        how = is_sglang ? "GET /get_model_info answered" : "/v1/models owned_by \"sglang\"";
    } else if (owned_by == "vllm") {
        info.dialect = config::BackendDialect::openai;
        info.flavor = translators::Flavor::vllm;
        how = "/v1/models owned_by \"vllm\"";
    } else if (!listed_model.empty()) {
        info.dialect = config::BackendDialect::openai;
        info.flavor = translators::Flavor::generic;
        how = "/v1/models answered (owned_by \"" + owned_by + "\")";
    }
    if (backend.dialect != config::BackendDialect::auto_detect) {
        if (how.empty()) {
            how = "configured";
            info.flavor = backend.dialect == config::BackendDialect::sglang
                              ? translators::Flavor::sglang
                              : translators::Flavor::generic;
        } else if (backend.dialect != info.dialect) {
            how += "; overridden by the configured dialect";
            info.flavor = backend.dialect == config::BackendDialect::sglang
                              ? translators::Flavor::sglang
                              : translators::Flavor::generic;
        }
        info.dialect = backend.dialect;
    }
    if (info.served_model.empty()) {
        info.served_model = !listed_model.empty() ? listed_model : model_path;
    }
    if (how.empty()) {
        info.detail = "could not tell the dialect of " + backend.url.text() +
                      ": neither GET /v1/models nor GET /get_model_info answered like a known "
                      "server (HTTP " + std::to_string(models.status) +
                      "); set backends[].dialect (or --upstream-dialect)";
        co_return result;
    }
    info.ready = true;
    info.detail = std::string(config::to_string(info.dialect)) + " via " + how;
    co_return result;
}

}  // namespace infergate
