#include "config/config.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace infergate::config {

namespace {

// Walks a YAML tree, reading known keys into a Config and recording every problem with its path.
class Reader {
public:
    std::vector<std::string> errors;
    std::vector<std::string> notes;

    void fail(const std::string& path, const std::string& message) {
        errors.push_back(path + ": " + message);
    }

    // Rejects keys of `node` not listed in `known`.
    void check_keys(const YAML::Node& node, const std::string& path,
                    std::initializer_list<std::string_view> known) {
        if (!node.IsMap()) {
            fail(path.empty() ? "(top level)" : path, "must be a mapping");
            return;
        }
        for (const auto& kv : node) {
            const auto key = kv.first.as<std::string>("");
            bool found = false;
            for (const auto k : known) {
                found = found || key == k;
            }
            if (!found) {
                std::string list;
                for (const auto k : known) {
                    list += (list.empty() ? "" : ", ") + std::string(k);
                }
                fail(join(path, key), "unknown key (known keys: " + list + ")");
            }
        }
    }

    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? key : path + "." + key;
    }

    template <class T>
    void read(const YAML::Node& node, const std::string& key, const std::string& path, T& out) {
        if (!node.IsMap()) {
            return;  // check_keys said so; operator[] on a scalar or a list would throw
        }
        const YAML::Node v = node[key];
        if (!v || v.IsNull()) {
            return;
        }
        if (!v.IsScalar()) {
            fail(join(path, key), "must be a scalar");
            return;
        }
        try {
            out = v.as<T>();
        } catch (const YAML::Exception&) {
            fail(join(path, key), "cannot read '" + v.Scalar() + "' as " + type_name<T>());
        }
    }

    // A list of strings (a single string is a list of one).
    void read_list(const YAML::Node& node, const std::string& key, const std::string& path,
                   std::vector<std::string>& out) {
        if (!node.IsMap()) {
            return;
        }
        const YAML::Node v = node[key];
        if (!v || v.IsNull()) {
            return;
        }
        if (v.IsScalar()) {
            out.push_back(v.Scalar());
            return;
        }
        if (!v.IsSequence()) {
            fail(join(path, key), "must be a list of strings");
            return;
        }
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].IsScalar()) {
                fail(join(path, key) + "[" + std::to_string(i) + "]", "must be a string");
                continue;
            }
            out.push_back(v[i].Scalar());
        }
    }

    template <class T>
    static std::string type_name() {
        if constexpr (std::is_same_v<T, bool>) {
            return "a boolean";
        } else if constexpr (std::is_integral_v<T>) {
            return "an integer";
        } else {
            return "a string";
        }
    }
};

void read_routing(Reader& r, const YAML::Node& n, Routing& out) {
    r.check_keys(n, "routing",
                 {"balance", "prefix", "max_imbalance", "retries", "outlier_ejection"});
    std::string balance = "prefix";
    r.read(n, "balance", "routing", balance);
    if (balance == "prefix") {
        out.balance = Balance::prefix;
    } else if (balance == "least_outstanding") {
        out.balance = Balance::least_outstanding;
    } else {
        r.fail("routing.balance",
               "must be prefix (prefix-cache affinity, bounded by load) or "
               "least_outstanding; got '" +
                   balance + "'");
    }
    r.read(n, "max_imbalance", "routing", out.max_imbalance);
    if (const YAML::Node p = n.IsMap() ? n["prefix"] : YAML::Node(); p) {
        r.check_keys(p, "routing.prefix", {"block_bytes", "min_match_bytes", "max_blocks"});
        r.read(p, "block_bytes", "routing.prefix", out.prefix_block_bytes);
        r.read(p, "min_match_bytes", "routing.prefix", out.prefix_min_match_bytes);
        r.read(p, "max_blocks", "routing.prefix", out.prefix_max_blocks);
    }
    if (const YAML::Node p = n.IsMap() ? n["retries"] : YAML::Node(); p) {
        r.check_keys(p, "routing.retries",
                     {"attempts", "budget_percent", "budget_min", "hedge_ms"});
        r.read(p, "hedge_ms", "routing.retries", out.hedge_ms);
        r.read(p, "attempts", "routing.retries", out.attempts);
        r.read(p, "budget_percent", "routing.retries", out.budget_percent);
        r.read(p, "budget_min", "routing.retries", out.budget_min);
    }
    if (const YAML::Node p = n.IsMap() ? n["outlier_ejection"] : YAML::Node(); p) {
        const std::string op = "routing.outlier_ejection";
        r.check_keys(p, op, {"consecutive_failures", "ejection_ms", "max_ejection_ms"});
        r.read(p, "consecutive_failures", op, out.consecutive_failures);
        r.read(p, "ejection_ms", op, out.ejection_ms);
        r.read(p, "max_ejection_ms", op, out.max_ejection_ms);
    }
}

void read_cors(Reader& r, const YAML::Node& n, Cors& out) {
    r.check_keys(n, "cors",
                 {"allowed_origins", "allowed_methods", "allowed_headers", "expose_headers",
                  "max_age", "allow_credentials", "allow_private_network"});
    if (!n.IsMap()) {
        return;
    }
    // A list given replaces the default one (as nginx, Envoy and Starlette read theirs).
    for (const auto& [key, list] : {std::pair<const char*, std::vector<std::string>*>{
                                        "allowed_origins", &out.allowed_origins},
                                    {"allowed_methods", &out.allowed_methods},
                                    {"allowed_headers", &out.allowed_headers},
                                    {"expose_headers", &out.expose_headers}}) {
        if (const YAML::Node v = n[key]; v && !v.IsNull()) {
            list->clear();
            r.read_list(n, key, "cors", *list);
        }
    }
    r.read(n, "max_age", "cors", out.max_age);
    r.read(n, "allow_credentials", "cors", out.allow_credentials);
    r.read(n, "allow_private_network", "cors", out.allow_private_network);
}

LoadResult finish(Config c, Reader& r) {
    prepare_cors(c.cors, r.errors, r.notes);
    for (auto& b : c.backends) {
        if (!b.api_key_env.empty()) {
            const char* v = std::getenv(b.api_key_env.c_str());
            b.api_key = v != nullptr ? v : "";
        }
    }
    if (c.auth.enabled()) {
        load_client_keys(c.auth, r.errors);
    }
    auto more = validate(c);
    r.errors.insert(r.errors.end(), more.begin(), more.end());
    LoadResult out;
    out.errors = std::move(r.errors);
    out.notes = std::move(r.notes);
    if (out.errors.empty()) {
        out.config = std::make_shared<const Config>(std::move(c));
    }
    return out;
}

}  // namespace

namespace {

// Why `name` cannot be a model name clients see, or nullopt.
std::optional<std::string> bad_model_name(std::string_view name) {
    for (const char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f) {
            return std::string("holds a quote, a backslash or a control character; model names "
                               "go into every client's JSON and URLs: use another name");
        }
    }
    return std::nullopt;
}

}  // namespace

std::vector<std::string> validate(const Config& c) {
    std::vector<std::string> errors;
    if (c.threads < 1 || c.threads > 256) {
        errors.push_back("threads: must be between 1 and 256");
    }
    if (c.max_body_bytes < 1024) {
        errors.push_back("limits.max_body_bytes: must be >= 1024");
    }
    if (c.max_header_bytes < 1024) {
        errors.push_back("limits.max_header_bytes: must be >= 1024");
    }
    if (!c.admin_host.empty() && c.admin_port != 0 && c.admin_port == c.listen_port) {
        // Both bind with SO_REUSEPORT: the kernel would spread connections across both.
        errors.push_back("admin_listen: port " + std::to_string(c.admin_port) +
                         " is the public listener's (listen); give the admin listener its own "
                         "port, e.g. 127.0.0.1:" +
                         std::to_string(c.listen_port + 1));
    }
    if (c.max_connections < 0) {
        errors.push_back(
            "limits.max_connections: must be >= 1, or 0 to derive it from the "
            "file descriptor limit");
    }
    if (c.client_idle_ms <= 0) {
        errors.push_back("client_idle_ms: must be > 0");
    }
    if (c.client_header_ms <= 0) {
        errors.push_back("client_header_ms: must be > 0");
    }
    if (c.client_body_ms <= 0) {
        errors.push_back("client_body_ms: must be > 0");
    }
    if (c.client_body_min_rate < 0) {
        errors.push_back("client_body_min_rate: must be >= 0 (bytes per second; 0: no minimum)");
    }
    if (c.access_log.empty()) {
        errors.push_back("access_log: must be stderr, off or a file path");
    }
    if (c.backends.empty()) {
        errors.push_back("backends: at least one backend is required");
    }
    const Routing& rt = c.routing;
    const auto positive = [&](int64_t v, const char* path) {
        if (v <= 0) {
            errors.push_back(std::string(path) + ": must be > 0");
        }
    };
    positive(rt.prefix_block_bytes, "routing.prefix.block_bytes");
    positive(rt.prefix_max_blocks, "routing.prefix.max_blocks");
    positive(rt.attempts, "routing.retries.attempts");
    positive(rt.consecutive_failures, "routing.outlier_ejection.consecutive_failures");
    positive(rt.ejection_ms, "routing.outlier_ejection.ejection_ms");
    if (rt.prefix_min_match_bytes < 0 || rt.max_imbalance < 0 || rt.budget_percent < 0 ||
        rt.budget_min < 0 || rt.hedge_ms < 0) {
        errors.push_back(
            "routing: prefix.min_match_bytes, max_imbalance, retries.budget_percent, "
            "retries.budget_min and retries.hedge_ms must be >= 0");
    }
    if (rt.attempts > 10) {
        errors.push_back("routing.retries.attempts: at most 10 tries per request");
    }
    if (rt.max_ejection_ms < rt.ejection_ms) {
        errors.push_back("routing.outlier_ejection.max_ejection_ms: must be >= ejection_ms");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < c.backends.size(); ++i) {
        const Backend& b = c.backends[i];
        const std::string p = "backends[" + std::to_string(i) + "]";
        if (!names.insert(b.name).second) {
            errors.push_back(p + ".name: '" + b.name + "' is used twice");
        }
        for (const auto& m : b.models) {
            if (auto why = bad_model_name(m)) {
                errors.push_back(p + ".models: '" + m + "' " + *why);
            }
            if (m.empty()) {
                errors.push_back(p + ".models: a model name is empty");
            }
        }
        if (b.weight < 1 || b.weight > 1000) {
            errors.push_back(p + ".weight: must be between 1 and 1000");
        }
        if (b.resolve_interval_ms < 100) {
            errors.push_back(p + ".resolve_interval_ms: must be >= 100");
        }
        if (b.health.interval_ms < 100 || b.health.timeout_ms <= 0 ||
            b.health.unhealthy_threshold < 1 || b.health.healthy_threshold < 1) {
            errors.push_back(p +
                             ".health: interval_ms must be >= 100, timeout_ms > 0 and the "
                             "thresholds >= 1");
        }
        if (!b.health.path.empty() && b.health.path.front() != '/') {
            errors.push_back(p + ".health.path: must start with /");
        }
        if (b.url.host.empty()) {
            errors.push_back(p + ".url: is required");
        }
        if (b.timeouts.connect_ms <= 0) {
            errors.push_back(p + ".timeouts.connect_ms: must be > 0");
        }
        if (b.timeouts.first_byte_ms <= 0) {
            errors.push_back(p + ".timeouts.first_byte_ms: must be > 0");
        }
        if (b.timeouts.idle_ms <= 0) {
            errors.push_back(p + ".timeouts.idle_ms: must be > 0");
        }
        if (b.timeouts.total_ms < 0) {
            errors.push_back(p + ".timeouts.total_ms: must be >= 0 (0 = no limit)");
        }
        if (b.max_idle_connections < 0) {
            errors.push_back(p + ".max_idle_connections: must be >= 0");
        }
        if (!b.tls_ca_file.empty() && !b.url.tls) {
            errors.push_back(p + ".tls_ca_file: only applies to an https:// url");
        }
        if (!b.api_key_env.empty() && b.api_key.empty()) {
            errors.push_back(p + ".api_key_env: environment variable " + b.api_key_env +
                             " is not set");
        }
    }
    std::string ca_file;  // one TLS context serves every https backend
    for (size_t i = 0; i < c.backends.size(); ++i) {
        const Backend& b = c.backends[i];
        if (b.url.tls && !b.tls_ca_file.empty() && !ca_file.empty() && b.tls_ca_file != ca_file) {
            errors.push_back("backends[" + std::to_string(i) +
                             "].tls_ca_file: every https backend must use the same CA bundle "
                             "(put both CAs in one PEM file)");
        }
        if (b.url.tls && !b.tls_ca_file.empty()) {
            ca_file = b.tls_ca_file;
        }
    }
    std::set<std::string> alias_names;
    for (size_t i = 0; i < c.aliases.size(); ++i) {
        const std::string p = "models.aliases." + c.aliases[i].name;
        if (c.aliases[i].target.empty()) {
            errors.push_back(p + ": must name the backend's model");
        }
        if (auto why = bad_model_name(c.aliases[i].name)) {
            errors.push_back(p + ": the alias " + *why);
        }
        if (auto why = bad_model_name(c.aliases[i].target)) {
            errors.push_back(p + ": the backend model " + *why);
        }
        if (!alias_names.insert(c.aliases[i].name).second) {
            errors.push_back(p + ": defined twice");
        }
    }
    if (!c.default_model.empty()) {
        // Checked when every backend lists its models; a discovered one may serve it.
        bool known = alias_names.count(c.default_model) > 0;
        bool all_listed = true;
        std::string served;
        for (const Backend& b : c.backends) {
            all_listed = all_listed && !b.models.empty();
            for (const auto& m : b.models) {
                known = known || m == c.default_model;
                served += (served.empty() ? "" : ", ") + m;
            }
        }
        if (all_listed && !known) {
            errors.push_back("models.default: '" + c.default_model +
                             "' is neither served by a backend nor an alias (served: " + served +
                             ")");
        }
    }
    return errors;
}

std::string yaml_quote(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(ch);
        } else if (c < 0x20 || c == 0x7f) {
            out.append("\\x");
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        } else {
            out.push_back(ch);
        }
    }
    out.push_back('"');
    return out;
}

LoadResult load_yaml_text(std::string_view text) {
    Reader r;
    Config c;
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        r.fail("(yaml)", "line " + std::to_string(e.mark.line + 1) + ", column " +
                             std::to_string(e.mark.column + 1) + ": " + e.msg);
        return LoadResult{nullptr, r.errors, {}};
    }
    if (root.IsNull()) {
        root = YAML::Node(YAML::NodeType::Map);
    }
    r.check_keys(
        root, "",
        {"listen", "admin_listen", "threads", "limits", "auth", "backends", "models", "routing",
         "responses", "log_level", "client_idle_ms", "client_header_ms", "client_body_ms",
         "client_body_min_rate", "shutdown_grace_ms", "access_log", "cors"});
    if (!r.errors.empty() && !root.IsMap()) {
        return LoadResult{nullptr, r.errors, {}};
    }
    if (root["listen"]) {
        std::string err;
        if (!parse_listen(root["listen"].as<std::string>(""), c.listen_host, c.listen_port, err)) {
            r.fail("listen", err);
        }
    }
    if (root["admin_listen"]) {
        std::string err;
        if (!parse_listen(root["admin_listen"].as<std::string>(""), c.admin_host, c.admin_port,
                          err)) {
            r.fail("admin_listen", err);
        }
    }
    r.read(root, "threads", "", c.threads);
    r.read(root, "log_level", "", c.log_level);
    r.read(root, "access_log", "", c.access_log);
    r.read(root, "client_idle_ms", "", c.client_idle_ms);
    r.read(root, "client_header_ms", "", c.client_header_ms);
    r.read(root, "client_body_ms", "", c.client_body_ms);
    r.read(root, "client_body_min_rate", "", c.client_body_min_rate);
    r.read(root, "shutdown_grace_ms", "", c.shutdown_grace_ms);
    if (const YAML::Node limits = root["limits"]; limits) {
        r.check_keys(limits, "limits", {"max_body_bytes", "max_header_bytes", "max_connections"});
        r.read(limits, "max_body_bytes", "limits", c.max_body_bytes);
        r.read(limits, "max_header_bytes", "limits", c.max_header_bytes);
        r.read(limits, "max_connections", "limits", c.max_connections);
    }
    if (const YAML::Node auth = root["auth"]; auth) {
        r.check_keys(auth, "auth", {"keys_file", "keys_env"});
        r.read(auth, "keys_file", "auth", c.auth.keys_file);
        r.read(auth, "keys_env", "auth", c.auth.keys_env);
    }
    if (const YAML::Node cors = root["cors"]; cors) {
        read_cors(r, cors, c.cors);
    }
    if (const YAML::Node backends = root["backends"]; backends) {
        if (!backends.IsSequence()) {
            r.fail("backends", "must be a list");
        } else {
            for (size_t i = 0; i < backends.size(); ++i) {
                const YAML::Node n = backends[i];
                const std::string p = "backends[" + std::to_string(i) + "]";
                Backend b;
                r.check_keys(n, p,
                             {"name", "url", "dialect", "model", "models", "weight", "discovery",
                              "resolve_interval_ms", "health", "api_key_env", "tls_ca_file",
                              "timeouts", "max_idle_connections"});
                if (!n.IsMap()) {
                    continue;
                }
                r.read(n, "name", p, b.name);
                std::string url_text;
                r.read(n, "url", p, url_text);
                if (!url_text.empty()) {
                    std::string err;
                    std::string note;
                    if (auto url = parse_url(url_text, err, &note)) {
                        b.url = *url;
                        if (!note.empty()) {
                            r.notes.push_back(p + ".url: " + note);
                        }
                    } else {
                        r.fail(p + ".url", err);
                    }
                }
                std::string dialect = "auto";
                r.read(n, "dialect", p, dialect);
                if (auto d = parse_backend_dialect(dialect)) {
                    b.dialect = *d;
                } else {
                    r.fail(p + ".dialect", "must be one of " + std::string(backend_dialect_names()) +
                                               "; got '" + dialect + "'");
                }
                r.read(n, "model", p, b.model);
                r.read_list(n, "models", p, b.models);
                if (!b.model.empty() && !b.models.empty()) {
                    r.fail(p + ".models", "give model or models, not both");
                } else if (!b.model.empty()) {
                    b.models.push_back(b.model);
                } else if (!b.models.empty()) {
                    b.model = b.models.front();
                }
                r.read(n, "weight", p, b.weight);
                std::string discovery = "single";
                r.read(n, "discovery", p, discovery);
                if (discovery == "dns") {
                    b.discovery = Discovery::dns;
                } else if (discovery != "single") {
                    r.fail(p + ".discovery",
                           "must be single (one replica) or dns (every address "
                           "the host name resolves to); got '" +
                               discovery + "'");
                }
                r.read(n, "resolve_interval_ms", p, b.resolve_interval_ms);
                if (const YAML::Node h = n["health"]; h) {
                    const std::string hp = p + ".health";
                    b.health.configured = true;
                    r.check_keys(h, hp,
                                 {"path", "interval_ms", "timeout_ms", "unhealthy_threshold",
                                  "healthy_threshold"});
                    r.read(h, "path", hp, b.health.path);
                    r.read(h, "interval_ms", hp, b.health.interval_ms);
                    r.read(h, "timeout_ms", hp, b.health.timeout_ms);
                    r.read(h, "unhealthy_threshold", hp, b.health.unhealthy_threshold);
                    r.read(h, "healthy_threshold", hp, b.health.healthy_threshold);
                }
                r.read(n, "api_key_env", p, b.api_key_env);
                r.read(n, "tls_ca_file", p, b.tls_ca_file);
                r.read(n, "max_idle_connections", p, b.max_idle_connections);
                if (const YAML::Node t = n["timeouts"]; t) {
                    const std::string tp = p + ".timeouts";
                    r.check_keys(t, tp, {"connect_ms", "first_byte_ms", "idle_ms", "total_ms"});
                    r.read(t, "connect_ms", tp, b.timeouts.connect_ms);
                    r.read(t, "first_byte_ms", tp, b.timeouts.first_byte_ms);
                    r.read(t, "idle_ms", tp, b.timeouts.idle_ms);
                    r.read(t, "total_ms", tp, b.timeouts.total_ms);
                }
                c.backends.push_back(std::move(b));
            }
        }
    }
    if (const YAML::Node routing = root["routing"]; routing) {
        read_routing(r, routing, c.routing);
    }
    if (const YAML::Node responses = root["responses"]; responses) {
        r.check_keys(responses, "responses", {"store"});
        if (const YAML::Node st = responses.IsMap() ? responses["store"] : YAML::Node(); st) {
            ResponseStoreLimits& l = c.response_store;
            r.check_keys(st, "responses.store", {"max_entries", "max_bytes", "max_age_s"});
            r.read(st, "max_entries", "responses.store", l.max_entries);
            r.read(st, "max_bytes", "responses.store", l.max_bytes);
            r.read(st, "max_age_s", "responses.store", l.max_age_s);
            if (l.max_entries < 0 || l.max_bytes < 0) {
                r.fail("responses.store",
                       "max_entries and max_bytes must be >= 0 (0 keeps nothing)");
            }
            if (l.max_age_s < 1) {
                r.fail("responses.store.max_age_s", "must be >= 1 (seconds a turn is kept)");
            }
        }
    }
    if (const YAML::Node models = root["models"]; models) {
        r.check_keys(models, "models", {"aliases", "default"});
        r.read(models, "default", "models", c.default_model);
        const YAML::Node aliases = models.IsMap() ? models["aliases"] : YAML::Node();
        if (aliases && !aliases.IsNull()) {
            if (!aliases.IsMap()) {
                r.fail("models.aliases", "must be a mapping of alias: backend model");
            } else {
                for (const auto& kv : aliases) {
                    c.aliases.push_back(
                        Alias{kv.first.as<std::string>(""), kv.second.as<std::string>("")});
                }
            }
        }
    }
    return finish(std::move(c), r);
}

LoadResult load_yaml_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return LoadResult{nullptr, {path + ": cannot open the config file"}, {}};
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return load_yaml_text(ss.str());
}

}  // namespace infergate::config
