#pragma once
// infergate's configuration: parsed once into immutable structs (defaults written in place),
// unknown keys rejected, every error collected with its YAML path and reported together.
// Shared read-only between threads as std::shared_ptr<const Config>.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/cors.hpp"
#include "translators/backend_kind.hpp"

namespace infergate::config {

// The dialect a backend speaks (translators/backend_kind.hpp).
using translators::BackendDialect;
// "auto, openai, sglang, ...": for error messages and --help.
std::string_view backend_dialect_names();
std::string_view to_string(BackendDialect d);
std::optional<BackendDialect> parse_backend_dialect(std::string_view s);

struct Url {
    bool tls = false;
    std::string host;  // an IPv6 address without its brackets
    uint16_t port = 0;
    std::string base_path;  // without a trailing slash; "" for the root
    // From userinfo (http://user:pass@host): base64 of "user:pass", percent-decoded, for an
    // upstream "Authorization: Basic ..." (RFC 7617) when no api key is configured. A secret:
    // authority() and text() never show it; "" without userinfo.
    std::string basic_auth;
    // HOST:PORT as the Host header and URLs write it: [::1]:8000 for an IPv6 address.
    std::string authority() const;
    std::string text() const;  // scheme://authority/base, never the userinfo
    bool operator==(const Url&) const = default;
};
// Parses http://[USER[:PASS]@]HOST[:PORT][/base] and https://...; nullopt with `error` set
// otherwise. Neither `error` nor `note` ever quotes the userinfo (it reads "***@").
// A trailing /v1 on the path is the OpenAI base-URL habit (OPENAI_BASE_URL=http://h:8000/v1),
// not a prefix: every engine serves its routes, /v1/... included, from the base, so it is
// dropped and `note` (when given) says so. A path that ends in an API route
// (/v1/chat/completions, /generate, ...) is an error naming the base URL to give instead.
std::optional<Url> parse_url(std::string_view text, std::string& error,
                             std::string* note = nullptr);

// RFC 4648 base64, with padding.
std::string base64(std::string_view bytes);

// Parses HOST:PORT ([::1]:PORT for IPv6; an empty host means 0.0.0.0). HOST may be a name
// (localhost), resolved when the server starts.
bool parse_listen(std::string_view text, std::string& host, uint16_t& port, std::string& error);

struct Timeouts {
    int64_t connect_ms = 5000;
    // Long prefills and reasoning models: the defaults must not cut them.
    int64_t first_byte_ms = 600000;
    int64_t idle_ms = 600000;
    int64_t total_ms = 0;  // 0 = no limit
    bool operator==(const Timeouts&) const = default;
};

// How a backend's host name becomes replicas.
enum class Discovery : uint8_t {
    // One replica; the name is resolved when a connection is made (again after a failure).
    single,
    // Every address the name resolves to is a replica, resolved again every
    // resolve_interval_ms (a Kubernetes headless Service: engine pods that come and go).
    dns,
};

// Active health checks of each replica (the engine's own health route by default).
struct HealthCheck {
    // Given (health: in the backend's config): checks run. Otherwise they run only where they
    // can steer something: several backends, or discovery: dns (docs/routing.md).
    bool configured = false;
    std::string path;  // empty: the engine's own (translators::health_call)
    int64_t interval_ms = 5000;
    int64_t timeout_ms = 2000;
    int unhealthy_threshold = 3;  // consecutive failed checks that take a replica out
    int healthy_threshold = 1;    // consecutive passed checks that bring it back
    bool operator==(const HealthCheck&) const = default;
};

struct Backend {
    std::string name = "default";
    Url url;
    BackendDialect dialect = BackendDialect::auto_detect;
    std::string model;  // the first of `models` ("" when none is configured)
    // The models it serves (`model: NAME` or `models: [..]`); discovered when empty.
    std::vector<std::string> models;
    int weight = 1;  // its share of a pool's requests, relative to the other members'
    Discovery discovery = Discovery::single;
    int64_t resolve_interval_ms = 5000;  // discovery: dns
    HealthCheck health;
    std::string api_key_env;  // environment variable holding the bearer token
    std::string api_key;      // resolved at load time from api_key_env
    std::string tls_ca_file;  // PEM bundle to verify an https backend (default: system CAs)
    Timeouts timeouts;
    int max_idle_connections = 64;  // per thread
    // Equal backends share a pool across a reload (every field: URL, key, TLS, timeouts).
    bool operator==(const Backend&) const = default;
};

// How requests are spread over the replicas that serve a model (routing:).
enum class Balance : uint8_t {
    least_outstanding,  // power of two choices over requests in flight, weighted
    prefix,  // the replica that served the longest shared prompt prefix, unless overloaded
};

struct Routing {
    Balance balance = Balance::prefix;
    // Prefix-cache affinity (balance: prefix).
    int64_t prefix_block_bytes = 128;      // the index's unit: a prompt's leading bytes in blocks
    int64_t prefix_min_match_bytes = 256;  // a shorter shared prefix is no reason to prefer
    int64_t prefix_max_blocks = 65536;     // the index's size bound (LRU); see docs/routing.md
    // Affinity yields to load: a replica with this many more requests in flight (per unit of
    // weight) than the least loaded member of the pool is not chosen for its cache.
    int64_t max_imbalance = 4;
    // Failover before the first byte reaches the client (docs/routing.md).
    int attempts = 3;         // tries per request in all, across replicas; 1: no failover
    int budget_percent = 20;  // retries in flight at most this share of requests in flight
    int budget_min = 3;       // ... but always at least this many
    // TTFT hedge: no response head within this many ms, the first try's request goes to a
    // second replica too and the first answer wins (the other is closed); 0: off. Counted in
    // the retry budget.
    int64_t hedge_ms = 0;
    // Passive outlier ejection: consecutive failures (connect, reset, 5xx, timeout) that take
    // a replica out for ejection_ms, doubled on each ejection in a row up to max_ejection_ms.
    int consecutive_failures = 3;
    int64_t ejection_ms = 5000;
    int64_t max_ejection_ms = 60000;
    bool operator==(const Routing&) const = default;
};

struct Alias {
    std::string name;    // what clients send
    std::string target;  // the backend's served model name
    bool operator==(const Alias&) const = default;
};

// A key clients must present (auth:). Keys come from a file or an environment variable, never
// from the config itself (docs/security.md).
struct ClientKey {
    std::string name;  // its label in the metrics and the access log; never the key
    std::string key;
    double rps = 0;          // requests per second (a burst of up to one second's worth); 0: none
    int max_concurrent = 0;  // generations in flight at once; 0: no limit
    bool operator==(const ClientKey&) const = default;
};

struct Auth {
    // One key per line (`#` comments and blank lines skipped; named key-1, key-2, ... by line),
    // or YAML: a list of {name, key, rps, max_concurrent}.
    std::string keys_file;
    std::string keys_env;  // an environment variable holding keys, separated by commas or newlines
    std::vector<ClientKey> keys;  // from both, loaded with the config
    bool enabled() const { return !keys_file.empty() || !keys_env.empty(); }
};

// Reads the keys of `auth` (its file and variable) into auth.keys; errors are appended with
// their path ("auth.keys_file: ...") and never quote a key.
void load_client_keys(Auth& auth, std::vector<std::string>& errors);

// The Responses API's store of answered turns (previous_response_id, item_reference,
// GET/DELETE /v1/responses/{id}): in memory, per infergate process, bounded by count, bytes and
// age (docs/dialects.md, "Responses API"). max_entries 0 keeps nothing.
struct ResponseStoreLimits {
    int64_t max_entries = 10000;
    int64_t max_bytes = 64 * 1024 * 1024;
    int64_t max_age_s = 3600;
    bool operator==(const ResponseStoreLimits&) const = default;
};

struct Config {
    // This host only by default, as SGLang's own default: there is no client authentication
    // yet, and a backend key is injected into every request (docs/security.md).
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 30000;  // SGLang's default, so old scripts' URLs stay right
    // admin_listen: where /metrics, /get_server_info and the ops routes are served instead of
    // the public listener (Envoy's admin port). Empty host: unset, everything on `listen`.
    std::string admin_host;
    uint16_t admin_port = 0;
    int threads = 1;
    uint64_t max_body_bytes = 8 * 1024 * 1024;
    uint32_t max_header_bytes = 64 * 1024;
    // Open client connections, all threads together; 0: derived at start from the descriptor
    // limit (RLIMIT_NOFILE), leaving one descriptor per client for its upstream connection.
    int64_t max_connections = 0;
    int64_t client_idle_ms = 120000;  // keep-alive idle between requests
    // The whole request head must arrive within this, counted from its first byte (nginx's
    // client_header_timeout); a new connection's first byte must come within it too.
    int64_t client_header_ms = 60000;
    // The longest wait between two reads of a request body (nginx's client_body_timeout).
    int64_t client_body_ms = 60000;
    // After the first client_body_ms, a body must average at least this many bytes per second
    // (Apache's mod_reqtimeout MinRate, 500 by default there too); 0: no minimum.
    int64_t client_body_min_rate = 500;
    int64_t shutdown_grace_ms = 30000;
    std::vector<Backend> backends;
    std::vector<Alias> aliases;
    // The model of requests that name none (SGLang /generate, TGI, llama.cpp); empty: the
    // first backend's first model.
    std::string default_model;
    ResponseStoreLimits response_store;  // responses.store
    Routing routing;
    Auth auth;  // client keys; off unless keys_file or keys_env is set
    Cors cors;  // browsers from other origins; off unless cors.allowed_origins is set
    std::string log_level = "info";
    // One JSON line per request: "stderr" (default), "off", or a file path (appended to).
    std::string access_log = "stderr";

    const Backend& backend() const { return backends.front(); }
};

struct LoadResult {
    std::shared_ptr<const Config> config;  // null when errors is non-empty
    std::vector<std::string> errors;       // "backends[0].timeouts.connect_ms: must be > 0"
    // What was read differently from how it was written, for the log ("backends[0].url: ...").
    std::vector<std::string> notes;
};

// `text` as a YAML double-quoted scalar, quotes included: backslash, quote and control
// characters escaped, so that any command-line value (the config-free start writes its YAML
// from them) is read back as exactly that string.
std::string yaml_quote(std::string_view text);

// %XX escapes decoded (RFC 3986 §2.1); an invalid or cut escape stays as it is. For URLs'
// userinfo here and request paths in the router.
std::string percent_decode(std::string_view text);

LoadResult load_yaml_file(const std::string& path);
LoadResult load_yaml_text(std::string_view text);

// What a reload changes (SIGHUP, POST /-/reload): the settings that differ between the running
// config and the new one, by their YAML path. `needs_restart` are those bound at start (listen,
// admin_listen, threads, access_log, limits.max_connections): the reload keeps their running
// value and the log says a restart applies them.
struct ConfigChanges {
    std::vector<std::string> applied;        // "backends[0]", "models.aliases", "auth", ...
    std::vector<std::string> needs_restart;  // "listen", "threads", ...
    bool backend_changed = false;  // a backend added, removed or changed (it starts over)
    bool routing_changed = false;            // backends added, removed or changed; models; routing:
};
ConfigChanges diff(const Config& running, const Config& next);
// `next` with the running values of what needs a restart (see ConfigChanges).
Config keep_restart_values(const Config& running, Config next);

// Validates a config built in code (the config-free command line); same error format.
std::vector<std::string> validate(const Config& config);

}  // namespace infergate::config
