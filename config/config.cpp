#include "config/config.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace infergate::config {

std::string_view to_string(BackendDialect d) {
    switch (d) {
        case BackendDialect::auto_detect: return "auto";
        case BackendDialect::openai: return "openai";
        case BackendDialect::sglang: return "sglang";
        case BackendDialect::tgi: return "tgi";
        case BackendDialect::ollama: return "ollama";
        case BackendDialect::llamacpp: return "llamacpp";
        case BackendDialect::vllm_legacy: return "vllm_legacy";
        case BackendDialect::anthropic: return "anthropic";
    }
    return "auto";
}

std::string_view backend_dialect_names() {
    return "auto, openai (alias vllm), sglang, tgi, ollama, llamacpp (alias llama.cpp), "
           "vllm_legacy, anthropic";
}

std::optional<BackendDialect> parse_backend_dialect(std::string_view s) {
    if (s == "auto") {
        return BackendDialect::auto_detect;
    }
    if (s == "openai" || s == "vllm") {
        return BackendDialect::openai;
    }
    if (s == "sglang") {
        return BackendDialect::sglang;
    }
    if (s == "tgi") {
        return BackendDialect::tgi;
    }
    if (s == "ollama") {
        return BackendDialect::ollama;
    }
    if (s == "llamacpp" || s == "llama.cpp") {
        return BackendDialect::llamacpp;
    }
    if (s == "vllm_legacy") {
        return BackendDialect::vllm_legacy;
    }
    if (s == "anthropic") {
        return BackendDialect::anthropic;
    }
    return std::nullopt;
}

std::string Url::authority() const {
    // RFC 3986 3.2.2: an IPv6 literal is written in brackets, or its colons read as the port's.
    std::string s = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    s += ':';
    s += std::to_string(port);
    return s;
}

std::string Url::text() const {
    return (tls ? "https://" : "http://") + authority() + base_path;
}

namespace {

// Generation and info routes a pasted endpoint URL may end in (longest first).
constexpr std::string_view kApiRoutes[] = {
    "/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/messages",
    "/v1/models",           "/generate_stream",  "/api/generate",   "/api/chat",
    "/completions",         "/completion",       "/generate",
};

}  // namespace

std::string base64(std::string_view bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                           static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                           static_cast<unsigned char>(bytes[i + 2]);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (i < bytes.size()) {
        uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        if (i + 1 < bytes.size()) {
            v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        }
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

namespace {

// %XX escapes decoded (RFC 3986 §2.1); an invalid escape stays as it is.
std::string percent_decoded(std::string_view s) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

std::optional<Url> parse_url(std::string_view raw, std::string& error, std::string* note) {
    Url url;
    // The URL as messages may quote it: credentials replaced, so that no error, note or log
    // line carries them.
    std::string shown(raw);
    std::string_view userinfo;
    {
        const size_t scheme_end = raw.find("://");
        const size_t start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
        const size_t end = raw.find_first_of("/?#", start);
        const std::string_view auth =
            raw.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        const size_t at = auth.rfind('@');
        if (at != std::string_view::npos) {
            userinfo = auth.substr(0, at);
            shown = std::string(raw.substr(0, start)) + "***@" +
                    std::string(raw.substr(start + at + 1));
        }
    }
    const std::string_view text = shown;
    std::string_view rest;
    if (text.starts_with("http://")) {
        rest = text.substr(7);
    } else if (text.starts_with("https://")) {
        url.tls = true;
        rest = text.substr(8);
    } else {
        error = "'" + std::string(text) + "' is not an http:// or https:// URL";
        return std::nullopt;
    }
    if (!userinfo.empty()) {
        rest.remove_prefix(4);  // "***@"
        const size_t colon = userinfo.find(':');
        const std::string user = percent_decoded(userinfo.substr(0, colon));
        const std::string pass = colon == std::string_view::npos
                                     ? std::string()
                                     : percent_decoded(userinfo.substr(colon + 1));
        // RFC 7617 §2: the user-id cannot contain a colon.
        if (user.find(':') != std::string::npos) {
            error = "the user name in '" + std::string(text) +
                    "' contains a colon, which Basic authentication cannot carry";
            return std::nullopt;
        }
        url.basic_auth = base64(user + ":" + pass);
    }
    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view path = rest.substr(slash);
        while (!path.empty() && path.back() == '/') {
            path.remove_suffix(1);
        }
        url.base_path = std::string(path);
    }
    std::string_view port_text;
    if (authority.starts_with("[")) {  // [::1]:8000
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) {
            error = "unterminated IPv6 address in '" + std::string(text) + "'";
            return std::nullopt;
        }
        url.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size() && authority[close + 1] == ':') {
            port_text = authority.substr(close + 2);
        }
    } else {
        const size_t colon = authority.rfind(':');
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
        }
    }
    if (url.host.empty()) {
        error = "no host in '" + std::string(text) + "'";
        return std::nullopt;
    }
    const std::string scheme = url.tls ? "https://" : "http://";
    for (const std::string_view route : kApiRoutes) {
        if (url.base_path.ends_with(route)) {
            std::string base(url.base_path.substr(0, url.base_path.size() - route.size()));
            if (base.ends_with("/v1")) {
                base.resize(base.size() - 3);
            }
            error = "'" + std::string(text) + "' ends in the API route " + std::string(route) +
                    "; give the server's base URL instead: " + scheme + std::string(authority) +
                    base;
            return std::nullopt;
        }
    }
    if (url.base_path.ends_with("/v1")) {
        url.base_path.resize(url.base_path.size() - 3);
        if (note != nullptr) {
            const std::string root = scheme + std::string(authority) + url.base_path;
            *note =
                "'" + std::string(text) +
                "' ends in /v1, the OpenAI base-URL habit (OPENAI_BASE_URL): every engine "
                "serves its routes, /v1/... included, from the server root, so the backend is " +
                root + " (requests go to " + root + "/v1/chat/completions, " + root +
                "/generate, ...)";
        }
    }
    if (port_text.empty()) {
        url.port = url.tls ? 443 : 80;
    } else {
        unsigned value = 0;
        const auto [ptr, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc() || ptr != port_text.data() + port_text.size() || value == 0 ||
            value > 65535) {
            error = "bad port '" + std::string(port_text) + "' in '" + std::string(text) + "'";
            return std::nullopt;
        }
        url.port = static_cast<uint16_t>(value);
    }
    return url;
}

bool parse_listen(std::string_view text, std::string& host, uint16_t& port, std::string& error) {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        error = "must be HOST:PORT, got '" + std::string(text) + "'";
        return false;
    }
    std::string_view h = text.substr(0, colon);
    if (h.starts_with("[") && h.ends_with("]")) {
        h = h.substr(1, h.size() - 2);
    }
    unsigned value = 0;
    const std::string_view port_text = text.substr(colon + 1);
    const auto [ptr, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
        value > 65535) {
        error = "bad port '" + std::string(port_text) + "' in '" + std::string(text) + "'";
        return false;
    }
    host = h.empty() ? "0.0.0.0" : std::string(h);
    port = static_cast<uint16_t>(value);
    return true;
}

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

LoadResult finish(Config c, Reader& r) {
    for (auto& b : c.backends) {
        if (!b.api_key_env.empty()) {
            const char* v = std::getenv(b.api_key_env.c_str());
            b.api_key = v != nullptr ? v : "";
        }
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
    if (c.access_log.empty()) {
        errors.push_back("access_log: must be stderr, off or a file path");
    }
    if (c.backends.empty()) {
        errors.push_back("backends: at least one backend is required");
    }
    if (c.backends.size() > 1) {
        // Accepting them and serving from the first alone would ignore configuration silently.
        errors.push_back(
            "backends[1]: routing across several backends is not supported yet; "
            "give exactly one backend (" +
            std::to_string(c.backends.size()) + " are listed)");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < c.backends.size(); ++i) {
        const Backend& b = c.backends[i];
        const std::string p = "backends[" + std::to_string(i) + "]";
        if (!names.insert(b.name).second) {
            errors.push_back(p + ".name: '" + b.name + "' is used twice");
        }
        if (auto why = bad_model_name(b.model)) {
            errors.push_back(p + ".model: " + *why);
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
        {"listen", "threads", "limits", "backends", "models", "log_level", "client_idle_ms",
         "client_header_ms", "client_body_ms", "shutdown_grace_ms", "access_log"});
    if (!r.errors.empty() && !root.IsMap()) {
        return LoadResult{nullptr, r.errors, {}};
    }
    if (root["listen"]) {
        std::string err;
        if (!parse_listen(root["listen"].as<std::string>(""), c.listen_host, c.listen_port, err)) {
            r.fail("listen", err);
        }
    }
    r.read(root, "threads", "", c.threads);
    r.read(root, "log_level", "", c.log_level);
    r.read(root, "access_log", "", c.access_log);
    r.read(root, "client_idle_ms", "", c.client_idle_ms);
    r.read(root, "client_header_ms", "", c.client_header_ms);
    r.read(root, "client_body_ms", "", c.client_body_ms);
    r.read(root, "shutdown_grace_ms", "", c.shutdown_grace_ms);
    if (const YAML::Node limits = root["limits"]; limits) {
        r.check_keys(limits, "limits", {"max_body_bytes", "max_header_bytes", "max_connections"});
        r.read(limits, "max_body_bytes", "limits", c.max_body_bytes);
        r.read(limits, "max_header_bytes", "limits", c.max_header_bytes);
        r.read(limits, "max_connections", "limits", c.max_connections);
    }
    if (const YAML::Node backends = root["backends"]; backends) {
        if (!backends.IsSequence()) {
            r.fail("backends", "must be a list");
        } else {
            for (size_t i = 0; i < backends.size(); ++i) {
                const YAML::Node n = backends[i];
                const std::string p = "backends[" + std::to_string(i) + "]";
                Backend b;
                r.check_keys(n, p, {"name", "url", "dialect", "model", "api_key_env", "tls_ca_file", "timeouts",
                                    "max_idle_connections"});
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
    if (const YAML::Node models = root["models"]; models) {
        r.check_keys(models, "models", {"aliases"});
        if (const YAML::Node aliases = models["aliases"]; aliases && !aliases.IsNull()) {
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
