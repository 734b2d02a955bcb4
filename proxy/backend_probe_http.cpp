// The probe's HTTP calls: a GET through the backend's pool (probe keys, a 5 s budget, interim
// responses skipped) and the reading of its answer into a Route.
#include "proxy/backend_probe_http.hpp"

#include <optional>
#include <utility>

#include "proxy/upstream_parser.hpp"

namespace infergate::probe {

Task<beast::error_code> round_trip(UpstreamConnection& conn, http::request<http::string_body>& req,
                                   WholeResponse& parser, size_t body_limit) {
    auto [wec, wn] =
        co_await conn.visit([&](auto& s) { return http::async_write(s, req, use_nothrow); });
    beast::error_code ec = wec;
    if (!ec) {
        // The head as every backend call reads it (interim 1xx responses skipped).
        ec = co_await conn.visit([&](auto& s) {
            return read_final_head(s, conn.buffer(), parser,
                                   [body_limit](auto& p) { p.body_limit(body_limit); });
        });
    }
    if (!ec) {
        auto [bec, bn] = co_await conn.visit(
            [&](auto& s) { return http::async_read(s, conn.buffer(), *parser, use_nothrow); });
        ec = bec;
    }
    co_return conn.settle(ec);
}

Task<Reply> get(UpstreamPool& pool, const std::string& path, std::chrono::milliseconds budget) {
    Reply reply;
    bool reused = false;
    auto conn = co_await pool.acquire(reply.ec, reused);
    if (reply.ec) {
        co_return reply;
    }
    const auto& url = pool.backend().url;
    http::request<http::string_body> req{http::verb::get, url.base_path + path, 11};
    req.set(http::field::host, url.authority());
    req.set(http::field::user_agent, "infergate-probe");
    if (!pool.backend().api_key.empty()) {
        // The dialect is not known yet: the key goes in both servers' headers.
        req.set(http::field::authorization, "Bearer " + pool.backend().api_key);
        req.set("x-api-key", pool.backend().api_key);
    } else if (!url.basic_auth.empty()) {
        req.set(http::field::authorization, "Basic " + url.basic_auth);  // from the URL
    }
    req.set("anthropic-version", "2023-06-01");
    req.set(http::field::accept_encoding, "identity");  // the body is parsed here
    // One budget for the request and the response.
    conn->deadline().arm(budget);
    WholeResponse parser;
    if (auto ec = co_await round_trip(*conn, req, parser, 1024 * 1024)) {
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

Task<void> fetch(UpstreamPool& pool, Route& route, std::string path) {
    route.path = std::move(path);
    route.reply = co_await get(pool, route.path);
    const Reply& r = route.reply;
    if (r.ec || r.status != 200 || json::parse(r.body, route.doc, "probe answer") ||
        !route.doc.IsObject()) {
        route.doc.SetNull();
    }
    if (r.ec) {
        route.verdict = r.ec.message();
    } else if (r.status != 200) {
        route.verdict = "HTTP " + std::to_string(r.status);
        if (r.status == 401 || r.status == 403) {
            route.verdict += " (it wants a key: --api-key-env, backends[].api_key_env)";
        }
    }
}

}  // namespace infergate::probe
