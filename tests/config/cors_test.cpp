// CORS (config/cors.*): the cors: section's checks, origin matching, and the header lines of
// answers and preflights.
#include "config/cors.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/config.hpp"

using namespace infergate::config;

namespace {

const std::string kBackend = "backends: [{url: 'http://127.0.0.1:8000', model: m}]\n";

bool has(const std::vector<std::string>& lines, std::string_view text) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

Cors prepared(std::vector<std::string> origins, bool credentials = false) {
    Cors c;
    c.allowed_origins = std::move(origins);
    c.allow_credentials = credentials;
    std::vector<std::string> errors;
    std::vector<std::string> notes;
    prepare_cors(c, errors, notes);
    REQUIRE(errors.empty());
    return c;
}

using Headers = std::vector<std::pair<std::string_view, std::string>>;

std::string header(const Headers& h, std::string_view name) {
    for (const auto& [n, v] : h) {
        if (n == name) {
            return v;
        }
    }
    return "(absent)";
}

}  // namespace

TEST_CASE("cors: off by default, with the default lists in place") {
    auto r = load_yaml_text(kBackend);
    REQUIRE(r.errors.empty());
    const Cors& c = r.config->cors;
    CHECK_FALSE(c.enabled());
    CHECK(c.allow_origin("https://app.example.com").empty());
    CHECK(c.max_age == 600);
    CHECK_FALSE(c.allow_credentials);
    for (const char* h : {"authorization", "x-api-key", "anthropic-version", "anthropic-beta",
                          "content-type", "x-request-id", "openai-organization", "openai-project",
                          "x-stainless-os", "x-stainless-retry-count", "x-stainless-timeout",
                          "anthropic-dangerous-direct-browser-access"}) {
        CAPTURE(h);
        CHECK(std::find(c.allowed_headers.begin(), c.allowed_headers.end(), h) !=
              c.allowed_headers.end());
    }
    CHECK(c.methods_line == "GET, HEAD, POST, PUT, DELETE, OPTIONS");
}

TEST_CASE("cors: every key read, lists replace the defaults and are normalised") {
    auto r = load_yaml_text(kBackend + R"(
cors:
  allowed_origins: [HTTPS://App.Example.com, "http://localhost:5173", "https://*.example.org"]
  allowed_methods: [get, POST]
  allowed_headers: [Authorization, Content-Type, X-Custom]
  expose_headers: [X-Request-Id]
  max_age: 7200
  allow_credentials: true
  allow_private_network: true
)");
    INFO((r.errors.empty() ? std::string() : r.errors.front()));
    REQUIRE(r.errors.empty());
    const Cors& c = r.config->cors;
    CHECK(c.enabled());
    CHECK(c.allowed_origins == std::vector<std::string>{"https://app.example.com",
                                                        "http://localhost:5173",
                                                        "https://*.example.org"});
    CHECK(c.allowed_methods == std::vector<std::string>{"GET", "POST"});
    CHECK(c.headers_line == "authorization, content-type, x-custom");
    CHECK(c.max_age == 7200);
    CHECK(c.allow_credentials);
    CHECK(c.allow_private_network);
    CHECK(c.response_tail ==
          "Vary: Origin\r\nAccess-Control-Allow-Credentials: true\r\n"
          "Access-Control-Expose-Headers: x-request-id\r\n");
}

TEST_CASE("cors: a single string is a list of one") {
    auto r = load_yaml_text(kBackend + "cors:\n  allowed_origins: '*'\n");
    REQUIRE(r.errors.empty());
    CHECK(r.config->cors.any_origin);
    CHECK(r.config->cors.allow_origin("https://anything.test") == "*");
}

TEST_CASE("cors: bad values are errors naming their path") {
    auto r = load_yaml_text(kBackend + R"(
cors:
  allowed_origins: [app.example.com, "https://a.example.com/path", "https://*", "https://x.*.com",
                    "https://*.com", "http://h:0", "http://u@h", ""]
  allowed_methods: ["PO ST"]
  allowed_headers: ["x-bad header"]
  expose_headers: ["a:b"]
  max_age: -1
  unknown: 1
)");
    CHECK_FALSE(r.config);
    CHECK(has(r.errors, "cors.allowed_origins[0]: 'app.example.com' is not an origin"));
    CHECK(has(r.errors, "cors.allowed_origins[1]: 'https://a.example.com/path' has a path"));
    CHECK(has(r.errors, "cors.allowed_origins[2]:"));
    CHECK(has(r.errors, "cors.allowed_origins[3]: 'https://x.*.com': a wildcard may stand only"));
    CHECK(has(r.errors, "cors.allowed_origins[4]: 'https://*.com': a wildcard needs a domain"));
    CHECK(has(r.errors, "cors.allowed_origins[5]: 'http://h:0' has an invalid port"));
    CHECK(has(r.errors, "cors.allowed_origins[6]: 'http://u@h' has user information"));
    CHECK(has(r.errors, "cors.allowed_origins[7]:"));
    CHECK(has(r.errors, "cors.allowed_methods[0]: 'PO ST' is not a valid method"));
    CHECK(has(r.errors, "cors.allowed_headers[0]: 'x-bad header' is not a valid header name"));
    CHECK(has(r.errors, "cors.expose_headers[0]: 'a:b'"));
    CHECK(has(r.errors, "cors.max_age: must be >= 0"));
    CHECK(has(r.errors, "cors.unknown: unknown key"));
}

TEST_CASE("cors: \"*\" with credentials is refused at load, as the Fetch standard forbids it") {
    auto r = load_yaml_text(kBackend + "cors: {allowed_origins: ['*'], allow_credentials: true}\n");
    CHECK_FALSE(r.config);
    CHECK(has(r.errors, "cors.allow_credentials: cannot be true while cors.allowed_origins has"));
    auto e = load_yaml_text(kBackend +
                            "cors: {allowed_origins: ['https://a.test'], allow_credentials: "
                            "true, expose_headers: ['*']}\n");
    CHECK(has(e.errors, "cors.expose_headers: \"*\" is no wildcard"));
    // Without credentials both are fine.
    CHECK(load_yaml_text(kBackend + "cors: {allowed_origins: ['*'], expose_headers: ['*']}\n")
              .config);
}

TEST_CASE("cors: what a browser never sends is rewritten, with a note") {
    auto r = load_yaml_text(kBackend +
                            "cors:\n  allowed_origins: ['https://a.test:443', 'http://b.test:80', "
                            "'https://c.test/', 'http://d.test:8080']\n");
    REQUIRE(r.errors.empty());
    CHECK(r.config->cors.allowed_origins ==
          std::vector<std::string>{"https://a.test", "http://b.test", "https://c.test",
                                   "http://d.test:8080"});
    CHECK(has(r.notes, "cors.allowed_origins[0]: 'https://a.test:443' read as 'https://a.test'"));
    CHECK(has(r.notes, "cors.allowed_origins[2]: 'https://c.test/' read as 'https://c.test'"));
}

TEST_CASE("cors: exact origins match whole, case aside, and are echoed as sent") {
    const Cors c =
        prepared({"https://app.example.com", "http://localhost:5173", "null", "http://[::1]:8080"});
    CHECK(c.allow_origin("https://app.example.com") == "https://app.example.com");
    CHECK(c.allow_origin("https://APP.example.com") == "https://APP.example.com");
    CHECK(c.allow_origin("http://localhost:5173") == "http://localhost:5173");
    CHECK(c.allow_origin("null") == "null");
    CHECK(c.allow_origin("http://[::1]:8080") == "http://[::1]:8080");
    for (const char* no : {"http://app.example.com", "https://app.example.com:444",
                           "https://app.example.com.evil.test", "https://evil-app.example.com",
                           "https://app.example.co", "http://localhost:5174", "http://localhost",
                           "https://app.example.com/", "", "*"}) {
        CAPTURE(no);
        CHECK(c.allow_origin(no).empty());
    }
}

TEST_CASE("cors: a wildcard matches subdomains only, with the same scheme and port") {
    const Cors c = prepared({"https://*.example.com", "http://*.dev.test:8080"});
    CHECK(c.allow_origin("https://a.example.com") == "https://a.example.com");
    CHECK(c.allow_origin("https://a.b.example.com") == "https://a.b.example.com");
    CHECK(c.allow_origin("http://x.dev.test:8080") == "http://x.dev.test:8080");
    for (const char* no :
         {"https://example.com", "https://evilexample.com", "http://a.example.com",
          "https://a.example.com:8443", "https://.example.com", "https://a..example.com",
          "https://a:1@b.example.com", "https://a/b.example.com", "https://a.example.com.evil",
          "http://x.dev.test", "http://x.dev.test:8081", "https://*.example.com"}) {
        CAPTURE(no);
        CHECK(c.allow_origin(no).empty());
    }
}

TEST_CASE("cors: the answer's lines for an allowed origin, and Vary alone for the others") {
    const Cors c = prepared({"https://app.test"});
    std::string out;
    c.append_response_headers(out, c.allow_origin("https://app.test"));
    CHECK(out ==
          "Access-Control-Allow-Origin: https://app.test\r\nVary: Origin\r\n"
          "Access-Control-Expose-Headers: x-request-id, retry-after, www-authenticate, allow, "
          "x-prompt-tokens, x-generated-tokens\r\n");
    std::string other;
    c.append_response_headers(other, c.allow_origin("https://other.test"));
    CHECK(other == "Vary: Origin\r\n");
    const Cors any = prepared({"*"});
    std::string star;
    any.append_response_headers(star, any.allow_origin("https://other.test"));
    CHECK(star.starts_with("Access-Control-Allow-Origin: *\r\nVary: Origin\r\n"));
    const Cors cred = prepared({"https://app.test"}, true);
    std::string with;
    cred.append_response_headers(with, cred.allow_origin("https://app.test"));
    CHECK(with.find("Access-Control-Allow-Credentials: true\r\n") != std::string::npos);
}

TEST_CASE("cors: the name-value form says the same as the text form") {
    for (const bool credentials : {false, true}) {
        const Cors c = prepared({"https://app.test"}, credentials);
        for (const char* origin : {"https://app.test", "https://other.test", ""}) {
            CAPTURE(origin);
            std::string text;
            c.append_response_headers(text, c.allow_origin(origin));
            Headers pairs;
            c.response_headers(c.allow_origin(origin), pairs);
            std::string joined;
            for (const auto& [name, value] : pairs) {
                joined += std::string(name) + ": " + value + "\r\n";
            }
            CHECK(joined == text);
        }
    }
}

TEST_CASE("cors: a preflight answers the configured lists whatever was asked") {
    const Cors c = prepared({"https://app.test"});
    Headers h;
    c.preflight_headers("PATCH", "x-unknown, authorization", false, h);
    CHECK(header(h, "Access-Control-Allow-Methods") == c.methods_line);
    CHECK(header(h, "Access-Control-Allow-Headers") == c.headers_line);
    CHECK(header(h, "Access-Control-Max-Age") == "600");
    CHECK(header(h, "Access-Control-Allow-Private-Network") == "(absent)");
    CHECK(header(h, "Vary") == "(absent)");  // the answer does not depend on what was asked
}

TEST_CASE("cors: \"*\" methods and headers answer what the preflight asked, with Vary") {
    Cors c;
    c.allowed_origins = {"https://app.test"};
    c.allowed_methods = {"*"};
    c.allowed_headers = {"*"};
    c.allow_private_network = true;
    std::vector<std::string> errors;
    std::vector<std::string> notes;
    prepare_cors(c, errors, notes);
    REQUIRE(errors.empty());
    Headers h;
    // Authorization is named: the Fetch standard's "*" would not cover it.
    c.preflight_headers("PATCH", "authorization,content-type, x-stainless-os", true, h);
    CHECK(header(h, "Access-Control-Allow-Methods") == "PATCH");
    CHECK(header(h, "Access-Control-Allow-Headers") ==
          "authorization,content-type, x-stainless-os");
    CHECK(header(h, "Access-Control-Allow-Private-Network") == "true");
    CHECK(header(h, "Vary") == "Access-Control-Request-Method, Access-Control-Request-Headers");
    // Something that is not a list of header names is not written back.
    Headers bad;
    c.preflight_headers("GET\r\nX: y", "a b, c\r\nSet-Cookie: x", false, bad);
    CHECK(header(bad, "Access-Control-Allow-Methods") == "(absent)");
    CHECK(header(bad, "Access-Control-Allow-Headers") == "(absent)");
}

TEST_CASE("cors: is_token_list takes what browsers send and nothing else") {
    CHECK(is_token_list(""));
    CHECK(is_token_list("authorization"));
    CHECK(is_token_list("authorization,content-type"));
    CHECK(is_token_list("authorization, content-type ,\tx-a"));
    CHECK_FALSE(is_token_list("a,,b"));
    CHECK_FALSE(is_token_list("a b"));
    CHECK_FALSE(is_token_list(","));
    CHECK_FALSE(is_token_list("a:b"));
}

TEST_CASE("cors: a reload sees a changed policy") {
    auto a = load_yaml_text(kBackend);
    auto b = load_yaml_text(kBackend + "cors: {allowed_origins: ['https://app.test']}\n");
    REQUIRE(a.config);
    REQUIRE(b.config);
    const ConfigChanges changes = diff(*a.config, *b.config);
    CHECK(changes.applied == std::vector<std::string>{"cors"});
    CHECK(changes.needs_restart.empty());
    CHECK_FALSE(changes.routing_changed);
    CHECK(diff(*b.config, *b.config).applied.empty());
}
