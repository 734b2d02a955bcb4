#include "proxy/upstream_head.hpp"

#include <doctest/doctest.h>

#include <string>

#include "proxy/client_request.hpp"
#include "tests/proxy/parse_util.hpp"

namespace infergate {
namespace {

using test::parse_head;

config::Backend backend(std::string key = {}) {
    config::Backend b;
    b.url.host = "engine";
    b.url.port = 8000;
    b.api_key = std::move(key);
    return b;
}

}  // namespace

TEST_CASE("the client's end-to-end headers go upstream; hop-by-hop and Connection-named do not") {
    const ClientRequest r = parse_head(
        "GET /v1/models HTTP/1.1\r\nHost: proxy\r\nConnection: keep-alive, X-Hop\r\n"
        "X-Hop: 1\r\nX-Trace: abc\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
        "Accept-Encoding: gzip\r\nX-Request-Id: client-id\r\nAuthorization: Bearer client\r\n");
    const std::string head = upstream_request_head(r, http::verb::get, "/v1/models", 0, false,
                                                   backend(), translators::BackendHeaders{}, "rid");
    CHECK(head.starts_with("GET /v1/models HTTP/1.1\r\n"));
    CHECK(head.find("X-Trace: abc\r\n") != std::string::npos);
    CHECK(head.find("X-Hop") == std::string::npos);
    CHECK(head.find("Keep-Alive") == std::string::npos);
    CHECK(head.find("TE:") == std::string::npos);
    CHECK(head.find("gzip") == std::string::npos);
    CHECK(head.find("client-id") == std::string::npos);
    CHECK(head.find("Host: engine:8000\r\n") != std::string::npos);
    CHECK(head.find("X-Request-Id: rid\r\n") != std::string::npos);
    CHECK(head.find("Accept-Encoding: identity\r\n") != std::string::npos);
    // No key configured: the client's own credentials go through.
    CHECK(head.find("Authorization: Bearer client\r\n") != std::string::npos);
    CHECK(head.find("Content-Length") == std::string::npos);
    CHECK(head.ends_with("\r\n\r\n"));
}

TEST_CASE("the operator's key replaces the client's, in the header the backend's API reads") {
    const ClientRequest r = parse_head(
        "POST /v1/messages HTTP/1.1\r\nHost: p\r\nx-api-key: client\r\n"
        "Authorization: Bearer client\r\n");
    std::string head = upstream_request_head(r, http::verb::post, "/v1/chat/completions", 12, true,
                                             backend("sk-op"), translators::BackendHeaders{}, "r");
    CHECK(head.find("Authorization: Bearer sk-op\r\n") != std::string::npos);
    CHECK(head.find("Bearer client") == std::string::npos);
    CHECK(head.find("Accept: text/event-stream\r\n") != std::string::npos);
    CHECK(head.find("Content-Type: application/json\r\n") != std::string::npos);
    CHECK(head.find("Content-Length: 12\r\n") != std::string::npos);

    const auto anthropic = translators::backend_headers(translators::BackendDialect::anthropic);
    head = upstream_request_head(r, http::verb::post, "/v1/messages", 2, false, backend("sk-op"),
                                 anthropic, "r");
    CHECK(head.find("x-api-key: sk-op\r\n") != std::string::npos);
    CHECK(head.find("x-api-key: client") == std::string::npos);
    CHECK(head.find("anthropic-version: 2023-06-01\r\n") != std::string::npos);
}

TEST_CASE("credentials in the backend URL go as Basic auth, unless a key is configured") {
    const ClientRequest r =
        parse_head("POST /v1/completions HTTP/1.1\r\nHost: p\r\nAuthorization: Bearer client\r\n");
    config::Backend b = backend();
    b.url.basic_auth = "dTpw";  // base64("u:p")
    std::string head = upstream_request_head(r, http::verb::post, "/v1/completions", 2, false, b,
                                             translators::BackendHeaders{}, "r");
    CHECK(head.find("Authorization: Basic dTpw\r\n") != std::string::npos);
    CHECK(head.find("Bearer client") == std::string::npos);
    b.api_key = "sk-op";
    head = upstream_request_head(r, http::verb::post, "/v1/completions", 2, false, b,
                                 translators::BackendHeaders{}, "r");
    CHECK(head.find("Authorization: Bearer sk-op\r\n") != std::string::npos);
    CHECK(head.find("Basic") == std::string::npos);
}

TEST_CASE("a client key (auth:) is infergate's: it never goes upstream") {
    const ClientRequest r = parse_head(
        "POST /v1/messages HTTP/1.1\r\nHost: p\r\nAuthorization: Bearer ig-key\r\n"
        "x-api-key: ig-key\r\napi-key: ig-key\r\nX-Other: kept\r\n");
    const std::string head =
        upstream_request_head(r, http::verb::post, "/v1/messages", 2, false, backend(),
                              translators::BackendHeaders{}, "r", true);
    CHECK(head.find("ig-key") == std::string::npos);
    CHECK(head.find("X-Other: kept\r\n") != std::string::npos);
}

TEST_CASE("a client's own anthropic-version wins over the default") {
    const ClientRequest r =
        parse_head("POST /v1/messages HTTP/1.1\r\nHost: p\r\nanthropic-version: 2024-01-01\r\n");
    const std::string head = upstream_request_head(
        r, http::verb::post, "/v1/messages", 2, false, backend(),
        translators::backend_headers(translators::BackendDialect::anthropic), "r");
    CHECK(head.find("anthropic-version: 2024-01-01\r\n") != std::string::npos);
    CHECK(head.find("2023-06-01") == std::string::npos);
}

TEST_CASE("Origin goes upstream unless infergate's CORS policy allowed it") {
    const ClientRequest r = parse_head(
        "POST /api/chat HTTP/1.1\r\nHost: p\r\nOrigin: https://chat.example.com\r\n"
        "Content-Type: application/json\r\n");
    const std::string kept = upstream_request_head(r, http::verb::post, "/api/chat", 2, true,
                                                   backend(), translators::BackendHeaders{}, "r");
    CHECK(kept.find("Origin: https://chat.example.com\r\n") != std::string::npos);
    const std::string dropped =
        upstream_request_head(r, http::verb::post, "/api/chat", 2, true, backend(),
                              translators::BackendHeaders{}, "r", false, true);
    CHECK(dropped.find("Origin") == std::string::npos);
    // The other fields the proxy sets itself stay its own either way.
    CHECK(dropped.find("Content-Type: application/json\r\n") != std::string::npos);
    CHECK(dropped.find("Host: engine:8000\r\n") != std::string::npos);
}

}  // namespace infergate
