#include <doctest/doctest.h>

#include <algorithm>

#include "config/config.hpp"

using namespace infergate::config;

namespace {
bool has_error(const LoadResult& r, std::string_view text) {
    return std::any_of(r.errors.begin(), r.errors.end(),
                       [&](const std::string& e) { return e.find(text) != std::string::npos; });
}
}  // namespace

TEST_CASE("a full config loads with every value in place") {
    auto r = load_yaml_text(R"(
listen: 127.0.0.1:31000
threads: 2
limits: {max_body_bytes: 4096}
backends:
  - name: gpu
    url: https://vllm.internal:8443/base/
    dialect: vllm
    model: Qwen/Qwen2.5-7B
    timeouts: {connect_ms: 100, first_byte_ms: 200, idle_ms: 300, total_ms: 400}
models:
  aliases:
    fast: Qwen/Qwen2.5-7B
)");
    REQUIRE(r.errors.empty());
    const Config& c = *r.config;
    CHECK(c.listen_host == "127.0.0.1");
    CHECK(c.listen_port == 31000);
    CHECK(c.threads == 2);
    CHECK(c.max_body_bytes == 4096);
    const Backend& b = c.backend();
    CHECK(b.name == "gpu");
    CHECK(b.url.tls);
    CHECK(b.url.host == "vllm.internal");
    CHECK(b.url.port == 8443);
    CHECK(b.url.base_path == "/base");
    CHECK(b.dialect == BackendDialect::openai);
    CHECK(b.timeouts.first_byte_ms == 200);
    CHECK(b.timeouts.total_ms == 400);
    REQUIRE(c.aliases.size() == 1);
    CHECK(c.aliases[0].name == "fast");
    CHECK(c.aliases[0].target == "Qwen/Qwen2.5-7B");
}

TEST_CASE("defaults: SGLang's port, generous timeouts") {
    auto r = load_yaml_text("backends: [{url: 'http://127.0.0.1:8000'}]");
    REQUIRE(r.errors.empty());
    CHECK(r.config->listen_port == 30000);
    CHECK(r.config->listen_host == "127.0.0.1");  // this host only, as SGLang
    CHECK(r.config->backend().dialect == BackendDialect::auto_detect);
    CHECK(r.config->backend().timeouts.first_byte_ms >= 600000);
    CHECK(r.config->backend().timeouts.total_ms == 0);
}

TEST_CASE("every error is collected with its path") {
    auto r = load_yaml_text(R"(
listen: nonsense
threads: 0
colour: blue
backends:
  - url: ftp://x
    dialect: klingon
    timeouts: {connect_ms: 0, idle_ms: abc}
    extra: 1
)");
    CHECK_FALSE(r.config);
    CHECK(has_error(r, "listen: must be HOST:PORT"));
    CHECK(has_error(r, "threads: must be between 1 and 256"));
    CHECK(has_error(r, "colour: unknown key"));
    CHECK(has_error(r, "backends[0].url: 'ftp://x' is not an http:// or https:// URL"));
    CHECK(has_error(r, "backends[0].dialect: must be one of auto, openai (alias vllm), sglang, tgi"));
    CHECK(has_error(r, "backends[0].timeouts.connect_ms: must be > 0"));
    CHECK(has_error(r, "backends[0].timeouts.idle_ms: cannot read 'abc' as an integer"));
    CHECK(has_error(r, "backends[0].extra: unknown key"));
    CHECK(r.errors.size() >= 8);
}

TEST_CASE("a section given as a scalar or a list is an error with its path, not an exception") {
    // config_fuzz found it: `limits: x` made operator[] on a scalar throw YAML::BadSubscript out
    // of the loader (the process ended in std::terminate instead of naming the key).
    auto r = load_yaml_text(R"(
limits: requests on a client connection
auth: [a, b]
models: nothing
backends:
  - url: http://127.0.0.1:8000
    timeouts: 5
)");
    CHECK_FALSE(r.config);
    CHECK(has_error(r, "limits: must be a mapping"));
    CHECK(has_error(r, "auth: must be a mapping"));
    CHECK(has_error(r, "models: must be a mapping"));
    CHECK(has_error(r, "backends[0].timeouts: must be a mapping"));
}

TEST_CASE("broken YAML says where") {
    auto r = load_yaml_text("backends: [\n  {url: 'x'\n");
    CHECK_FALSE(r.config);
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].find("line") != std::string::npos);
}

TEST_CASE("a missing api key variable is an error") {
    auto r = load_yaml_text(
        "backends: [{url: 'http://h:1', api_key_env: INFERGATE_TEST_SURELY_UNSET_VAR}]");
    CHECK(has_error(r, "INFERGATE_TEST_SURELY_UNSET_VAR is not set"));
}

TEST_CASE("URLs") {
    std::string err;
    auto u = parse_url("http://[::1]:9000", err);
    REQUIRE(u);
    CHECK(u->host == "::1");
    CHECK(u->port == 9000);
    CHECK(parse_url("https://api.example.com", err)->port == 443);
    CHECK_FALSE(parse_url("http://host:99999", err));
    CHECK(err.find("bad port") != std::string::npos);
    CHECK_FALSE(parse_url("http://:80", err));
}

TEST_CASE("an IPv6 host is bracketed wherever host and port are written together") {
    std::string err;
    auto u = parse_url("http://[::1]:8000", err);
    REQUIRE(u);
    CHECK(u->authority() == "[::1]:8000");
    CHECK(u->text() == "http://[::1]:8000");
    auto v4 = parse_url("http://127.0.0.1:8000/base", err);
    REQUIRE(v4);
    CHECK(v4->authority() == "127.0.0.1:8000");
    CHECK(v4->text() == "http://127.0.0.1:8000/base");
}

TEST_CASE("a trailing /v1 is the OpenAI base-URL habit, dropped with a note") {
    std::string err;
    std::string note;
    for (const char* text : {"http://h:8000/v1", "http://h:8000/v1/", "http://h:8000/v1//"}) {
        note.clear();
        auto u = parse_url(text, err, &note);
        REQUIRE(u);
        CHECK(u->base_path.empty());
        CHECK(u->text() == "http://h:8000");
        CHECK(note.find("ends in /v1, the OpenAI base-URL habit") != std::string::npos);
        CHECK(note.find("the backend is http://h:8000 ") != std::string::npos);
    }
    // A gateway's own prefix stays; only the /v1 after it goes.
    note.clear();
    auto gw = parse_url("https://gw.example/llm/v1", err, &note);
    REQUIRE(gw);
    CHECK(gw->base_path == "/llm");
    CHECK_FALSE(note.empty());
    // Other paths are a real prefix, without a note.
    note.clear();
    auto prefix = parse_url("http://h:8000/sglang", err, &note);
    REQUIRE(prefix);
    CHECK(prefix->base_path == "/sglang");
    CHECK(note.empty());
    CHECK(parse_url("http://h:8000/v1beta", err, &note)->base_path == "/v1beta");
}

TEST_CASE("a URL that ends in an API route says which base URL to give") {
    std::string err;
    CHECK_FALSE(parse_url("http://h:8000/v1/chat/completions", err));
    CHECK(err.find("ends in the API route /v1/chat/completions; give the server's base URL "
                   "instead: http://h:8000") != std::string::npos);
    CHECK_FALSE(parse_url("http://gw/llm/v1/completions/", err));
    CHECK(err.find("instead: http://gw/llm") != std::string::npos);
    CHECK_FALSE(parse_url("http://h:30000/generate", err));
    CHECK(err.find("instead: http://h:30000") != std::string::npos);
}

TEST_CASE("the loader passes the /v1 note on with its path") {
    auto r = load_yaml_text("backends: [{url: 'http://h:8000/v1'}]");
    REQUIRE(r.errors.empty());
    CHECK(r.config->backend().url.base_path.empty());
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].starts_with("backends[0].url: 'http://h:8000/v1' ends in /v1"));
}

TEST_CASE("several backends, their models, weights, discovery, health and routing") {
    auto r = load_yaml_text(R"(
backends:
  - {name: a, url: 'http://h:8000', models: [m1, m2], weight: 3}
  - name: b
    url: http://engines.llm.svc:8001
    model: m1
    discovery: dns
    resolve_interval_ms: 2000
    health: {path: /healthz, interval_ms: 1000, timeout_ms: 300, unhealthy_threshold: 2}
models:
  default: m2
routing:
  balance: least_outstanding
  max_imbalance: 2
  prefix: {block_bytes: 64, min_match_bytes: 128, max_blocks: 1000}
  retries: {attempts: 2, budget_percent: 10, budget_min: 1, hedge_ms: 250}
  outlier_ejection: {consecutive_failures: 5, ejection_ms: 1000, max_ejection_ms: 8000}
)");
    REQUIRE(r.errors.empty());
    const Config& c = *r.config;
    REQUIRE(c.backends.size() == 2);
    CHECK(c.backends[0].models == std::vector<std::string>{"m1", "m2"});
    CHECK(c.backends[0].model == "m1");
    CHECK(c.backends[0].weight == 3);
    CHECK(c.backends[0].discovery == Discovery::single);
    CHECK(c.backends[1].models == std::vector<std::string>{"m1"});
    CHECK(c.backends[1].discovery == Discovery::dns);
    CHECK(c.backends[1].resolve_interval_ms == 2000);
    CHECK(c.backends[1].health.path == "/healthz");
    CHECK(c.backends[1].health.unhealthy_threshold == 2);
    CHECK(c.backends[1].health.healthy_threshold == 1);
    CHECK(c.default_model == "m2");
    CHECK(c.routing.balance == Balance::least_outstanding);
    CHECK(c.routing.max_imbalance == 2);
    CHECK(c.routing.prefix_block_bytes == 64);
    CHECK(c.routing.prefix_min_match_bytes == 128);
    CHECK(c.routing.prefix_max_blocks == 1000);
    CHECK(c.routing.attempts == 2);
    CHECK(c.routing.budget_percent == 10);
    CHECK(c.routing.hedge_ms == 250);
    CHECK(c.routing.consecutive_failures == 5);
    CHECK(c.routing.max_ejection_ms == 8000);
}

TEST_CASE("routing settings that cannot work are refused with their path") {
    auto r = load_yaml_text(R"(
backends:
  - {name: a, url: 'http://h:8000', model: m1, models: [m2], weight: 0, discovery: srv}
  - {name: a, url: 'http://h:8001', model: m1, health: {path: health}}
models:
  default: nope
routing:
  balance: random
  retries: {attempts: 0}
  outlier_ejection: {ejection_ms: 5000, max_ejection_ms: 10}
)");
    CHECK_FALSE(r.config);
    CHECK(has_error(r, "backends[0].models: give model or models, not both"));
    CHECK(has_error(r, "backends[0].weight: must be between 1 and 1000"));
    CHECK(has_error(r, "backends[0].discovery: must be single (one replica) or dns"));
    CHECK(has_error(r, "backends[1].name: 'a' is used twice"));
    CHECK(has_error(r, "backends[1].health.path: must start with /"));
    CHECK(has_error(r, "models.default: 'nope' is neither served by a backend nor an alias"));
    CHECK(has_error(r, "routing.balance: must be prefix"));
    CHECK(has_error(r, "routing.retries.attempts: must be > 0"));
    CHECK(has_error(r, "routing.outlier_ejection.max_ejection_ms: must be >= ejection_ms"));
}

TEST_CASE("listen addresses") {
    std::string host;
    uint16_t port = 0;
    std::string err;
    CHECK(parse_listen(":0", host, port, err));
    CHECK(host == "0.0.0.0");
    CHECK(port == 0);
    CHECK(parse_listen("[::1]:30000", host, port, err));
    CHECK(host == "::1");
    CHECK(parse_listen("localhost:30000", host, port, err));  // a name, resolved at start
    CHECK(host == "localhost");
    CHECK(parse_listen("[::]:8080", host, port, err));
    CHECK(host == "::");
    CHECK(port == 8080);
    CHECK_FALSE(parse_listen("127.0.0.1", host, port, err));
    CHECK_FALSE(parse_listen("127.0.0.1:x", host, port, err));
}

TEST_CASE("model names that cannot go into a client's JSON as they are are refused") {
    auto r = load_yaml_text(R"(
backends:
  - url: http://127.0.0.1:8000
    model: 'we"ird'
models:
  aliases:
    'gpt\4o': real-model
    fine: "tab\there"
)");
    CHECK_FALSE(r.config);
    CHECK(has_error(
        r, "backends[0].models: 'we\"ird' holds a quote, a backslash or a control character"));
    CHECK(has_error(r, "models.aliases.gpt\\4o: the alias holds a quote, a backslash"));
    CHECK(has_error(r, "models.aliases.fine: the backend model holds a quote"));
    auto ok = load_yaml_text(R"(
backends: [{url: 'http://127.0.0.1:8000', model: 'Qwen/Qwen2.5-7B-Instruct'}]
models: {aliases: {'llama3.2:latest': 'org/model-v1.5_q4', 'gpt-4o': 'x'}}
)");
    CHECK(ok.config);
}

TEST_CASE("yaml_quote: any command-line value reads back as itself") {
    using infergate::config::yaml_quote;
    CHECK(yaml_quote("m") == "\"m\"");
    CHECK(yaml_quote("a\"b") == "\"a\\\"b\"");
    CHECK(yaml_quote("a\\b") == "\"a\\\\b\"");
    CHECK(yaml_quote("a\nb\x01") == "\"a\\x0ab\\x01\"");
    for (const std::string value :
         {"plain", "colon: x", "# not a comment", "- dash", "h\xc3\xa9", "{[&*!|>'%@`]}"}) {
        const auto loaded = infergate::config::load_yaml_text(
            "backends:\n  - url: \"http://127.0.0.1:1\"\n    model: " + yaml_quote(value) + "\n");
        REQUIRE_MESSAGE(loaded.config != nullptr, value);
        CHECK(loaded.config->backends.at(0).model == value);
    }
    // A name the config refuses reaches its check, which names it (not a YAML syntax error).
    const auto refused = infergate::config::load_yaml_text(
        "backends:\n  - url: \"http://127.0.0.1:1\"\n    model: " + yaml_quote("a\"b") + "\n");
    REQUIRE(refused.config == nullptr);
    REQUIRE_FALSE(refused.errors.empty());
    CHECK(refused.errors[0].find("backends[0].model") != std::string::npos);
}

TEST_CASE("client limits: the connection cap and the request deadlines") {
    auto d = load_yaml_text("backends: [{url: 'http://127.0.0.1:8000'}]");
    REQUIRE(d.errors.empty());
    CHECK(d.config->max_connections == 0);  // derived from the descriptor limit at start
    CHECK(d.config->client_header_ms == 60000);
    CHECK(d.config->client_body_ms == 60000);
    CHECK(d.config->client_body_min_rate == 500);
    auto r = load_yaml_text(R"(
limits: {max_connections: 500}
client_header_ms: 1500
client_body_ms: 2500
client_body_min_rate: 0
backends: [{url: 'http://127.0.0.1:8000'}]
)");
    REQUIRE(r.errors.empty());
    CHECK(r.config->max_connections == 500);
    CHECK(r.config->client_header_ms == 1500);
    CHECK(r.config->client_body_ms == 2500);
    CHECK(r.config->client_body_min_rate == 0);
    auto bad = load_yaml_text(R"(
limits: {max_connections: -1}
client_header_ms: 0
client_body_ms: -5
client_body_min_rate: -1
backends: [{url: 'http://127.0.0.1:8000'}]
)");
    CHECK(has_error(bad, "limits.max_connections: must be >= 1, or 0 to derive it"));
    CHECK(has_error(bad, "client_header_ms: must be > 0"));
    CHECK(has_error(bad, "client_body_ms: must be > 0"));
    CHECK(has_error(bad, "client_body_min_rate: must be >= 0 (bytes per second; 0: no minimum)"));
}

TEST_CASE("credentials in a backend URL become Basic auth and are never shown") {
    CHECK(base64("") == "");
    CHECK(base64("f") == "Zg==");
    CHECK(base64("fo") == "Zm8=");
    CHECK(base64("foo") == "Zm9v");
    CHECK(base64("user:secret") == "dXNlcjpzZWNyZXQ=");
    std::string err;
    auto u = parse_url("http://user:secret@vllm.internal:8000/base", err);
    REQUIRE(u);
    CHECK(u->host == "vllm.internal");  // not "user:secret@vllm.internal"
    CHECK(u->port == 8000);
    CHECK(u->base_path == "/base");
    CHECK(u->basic_auth == base64("user:secret"));
    CHECK(u->text() == "http://vllm.internal:8000/base");
    CHECK(u->authority() == "vllm.internal:8000");
    // Percent-encoded (RFC 3986 §2.1), an '@' in the password, IPv6, no password.
    u = parse_url("https://us%20er:p%40ss:w@[::1]:9000", err);
    REQUIRE(u);
    CHECK(u->host == "::1");
    CHECK(u->basic_auth == base64("us er:p@ss:w"));
    CHECK(u->text() == "https://[::1]:9000");
    u = parse_url("http://token@h", err);
    REQUIRE(u);
    CHECK(u->basic_auth == base64("token:"));
    u = parse_url("http://h:8000", err);
    REQUIRE(u);
    CHECK(u->basic_auth.empty());
    // An '@' in the path is not userinfo.
    u = parse_url("http://h:8000/a@b", err);
    REQUIRE(u);
    CHECK(u->host == "h");
    CHECK(u->basic_auth.empty());
    // Errors and notes quote the URL without the secret.
    CHECK_FALSE(parse_url("http://user:secret@h:99999", err));
    CHECK(err.find("secret") == std::string::npos);
    CHECK(err.find("http://***@h:99999") != std::string::npos);
    CHECK_FALSE(parse_url("http://user:secret@h:8000/v1/chat/completions", err));
    CHECK(err.find("secret") == std::string::npos);
    std::string note;
    u = parse_url("http://user:secret@h:8000/v1", err, &note);
    REQUIRE(u);
    CHECK_FALSE(note.empty());
    CHECK(note.find("secret") == std::string::npos);
    auto r = load_yaml_text("backends: [{url: 'ftp://user:secret@h'}]");
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors[0].find("secret") == std::string::npos);
}

TEST_CASE("admin_listen: unset by default, parsed like listen, errors with their path") {
    auto unset = load_yaml_text("backends: [{url: 'http://127.0.0.1:8000'}]");
    REQUIRE(unset.errors.empty());
    CHECK(unset.config->admin_host.empty());  // everything on the public listener, as before

    auto set = load_yaml_text(R"(
listen: 0.0.0.0:30000
admin_listen: 127.0.0.1:30001
backends: [{url: 'http://127.0.0.1:8000'}]
)");
    REQUIRE(set.errors.empty());
    CHECK(set.config->admin_host == "127.0.0.1");
    CHECK(set.config->admin_port == 30001);

    auto v6 = load_yaml_text("admin_listen: '[::1]:0'\nbackends: [{url: 'http://h:8000'}]");
    REQUIRE(v6.errors.empty());
    CHECK(v6.config->admin_host == "::1");
    CHECK(v6.config->admin_port == 0);  // any free port, printed as "admin listening on"

    auto named = load_yaml_text("admin_listen: localhost:9901\nbackends: [{url: 'http://h:8000'}]");
    REQUIRE(named.errors.empty());
    CHECK(named.config->admin_host == "localhost");

    auto bad = load_yaml_text("admin_listen: 127.0.0.1\nbackends: [{url: 'http://h:8000'}]");
    CHECK_FALSE(bad.config);
    CHECK(has_error(bad, "admin_listen: must be HOST:PORT, got '127.0.0.1'"));
    auto bad_port = load_yaml_text("admin_listen: ':x'\nbackends: [{url: 'http://h:8000'}]");
    CHECK(has_error(bad_port, "admin_listen: bad port 'x'"));

    auto same = load_yaml_text(R"(
listen: 0.0.0.0:30000
admin_listen: 127.0.0.1:30000
backends: [{url: 'http://127.0.0.1:8000'}]
)");
    CHECK_FALSE(same.config);
    CHECK(has_error(same, "admin_listen: port 30000 is the public listener's (listen)"));
}

TEST_CASE("the tei dialect (text-embeddings-inference), by either name") {
    for (const char* name : {"tei", "text-embeddings-inference"}) {
        CAPTURE(name);
        auto r = load_yaml_text(std::string("backends:\n  - url: http://127.0.0.1:8080\n"
                                            "    dialect: ") +
                                name + "\n    model: BAAI/bge-small-en-v1.5\n");
        REQUIRE(r.config);
        CHECK(r.config->backend().dialect == BackendDialect::tei);
        CHECK(infergate::config::to_string(r.config->backend().dialect) == "tei");
    }
    auto r = load_yaml_text("backends:\n  - url: http://h:1\n    dialect: teii\n");
    CHECK(
        has_error(r, "vllm_legacy, anthropic, tei (alias text-embeddings-inference); got 'teii'"));
}
