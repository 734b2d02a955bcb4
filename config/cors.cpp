// CORS: checking and normalising the cors: section, matching a request's Origin, and the header
// lines of answers and preflights (cors.hpp). The Fetch standard's CORS protocol is the
// reference (https://fetch.spec.whatwg.org/#http-cors-protocol).
#include "config/cors.hpp"

#include <charconv>

namespace infergate::config {

namespace {

constexpr std::string_view kAny = "*";

char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

char upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

bool iends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

// RFC 9110 §5.6.2: tchar.
bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
    if (s.empty()) {
        return false;
    }
    for (const char c : s) {
        if (!is_tchar(c)) {
            return false;
        }
    }
    return true;
}

// A host name's characters as a browser serialises them (lower-case letters, digits, '-', '.',
// '_'; IDNs arrive as punycode), labels non-empty.
bool is_host_name(std::string_view host) {
    if (host.empty() || host.front() == '.' || host.back() == '.' ||
        host.find("..") != std::string_view::npos) {
        return false;
    }
    for (const char c : host) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

bool is_ipv6_literal(std::string_view host) {
    if (host.size() < 4 || host.front() != '[' || host.back() != ']') {
        return false;
    }
    for (const char c : host.substr(1, host.size() - 2)) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.';
        if (!ok) {
            return false;
        }
    }
    return true;
}

bool is_scheme(std::string_view s) {
    if (s.empty() || !(s.front() >= 'a' && s.front() <= 'z')) {
        return false;
    }
    for (const char c : s) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
        if (!ok) {
            return false;
        }
    }
    return true;
}

// Checks one configured origin and returns its serialisation as a browser sends it in Origin
// (lower-case, no default port), or an empty string with `error` set. A wildcard keeps its "*.".
std::string normalise_origin(std::string_view text, std::string& error, std::string& note) {
    if (text == kAny) {
        return std::string(kAny);
    }
    if (iequals(text, "null")) {
        return "null";
    }
    std::string s;
    for (const char c : text) {
        s.push_back(lower(c));
    }
    const size_t sep = s.find("://");
    if (sep == std::string::npos || !is_scheme(std::string_view(s).substr(0, sep))) {
        error = "'" + std::string(text) +
                "' is not an origin: write scheme://host[:port], e.g. https://app.example.com, or "
                "\"*\" for any";
        return {};
    }
    const std::string scheme = s.substr(0, sep);
    std::string_view authority = std::string_view(s).substr(sep + 3);
    if (authority.ends_with('/') && authority.find('/') == authority.size() - 1) {
        // A browser's Origin never ends with '/': the entry could never match.
        authority.remove_suffix(1);
        note = "'" + std::string(text) + "' read as '" + scheme + "://" + std::string(authority) +
               "' (an Origin header has no path, not even /)";
    }
    if (authority.find_first_of("/?#") != std::string_view::npos) {
        error = "'" + std::string(text) +
                "' has a path, query or fragment; an origin is scheme://host[:port] only";
        return {};
    }
    if (authority.find('@') != std::string_view::npos) {
        error = "'" + std::string(text) + "' has user information; an origin has none";
        return {};
    }
    std::string_view host = authority;
    std::string_view port;
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
            value > 65535 || port.front() == '0') {
            error = "'" + std::string(text) + "' has an invalid port '" + std::string(port) + "'";
            return {};
        }
        if ((scheme == "http" && value == 80) || (scheme == "https" && value == 443)) {
            // Browsers leave the scheme's default port out of Origin.
            note = "'" + std::string(text) + "' read as '" + scheme + "://" + std::string(host) +
                   "' (a browser leaves the default port " + std::string(port) + " out of Origin)";
            port = {};
        }
    }
    const bool wildcard = host.starts_with("*.");
    const std::string_view name = wildcard ? host.substr(2) : host;
    if (host.find('*') != std::string_view::npos && !wildcard) {
        error = "'" + std::string(text) +
                "': a wildcard may stand only for the leftmost labels of the host, as in "
                "https://*.example.com (or \"*\" alone for any origin)";
        return {};
    }
    if (wildcard && (name.find('.') == std::string_view::npos || !is_host_name(name))) {
        error = "'" + std::string(text) +
                "': a wildcard needs a domain of at least two labels after '*.' "
                "(https://*.example.com), not a whole top-level domain";
        return {};
    }
    if (!wildcard && !is_host_name(host) && !is_ipv6_literal(host)) {
        error = "'" + std::string(text) + "' has an invalid host '" + std::string(host) + "'";
        return {};
    }
    std::string out = scheme + "://" + std::string(host);
    if (!port.empty()) {
        out += ':';
        out += port;
    }
    return out;
}

// Whether `origin` (as the browser sent it) falls under the wildcard entry `pattern`
// (scheme://*.domain[:port]): the same scheme and port, and one or more labels before the
// domain. A port, userinfo or any character a host name cannot hold in the labels never matches.
bool wildcard_match(std::string_view pattern, std::string_view origin) {
    const size_t star = pattern.find("://*.");
    const std::string_view scheme_sep = pattern.substr(0, star + 3);  // "https://"
    const std::string_view suffix = pattern.substr(star + 4);         // ".example.com[:port]"
    if (origin.size() <= scheme_sep.size() + suffix.size() ||
        !iequals(origin.substr(0, scheme_sep.size()), scheme_sep) || !iends_with(origin, suffix)) {
        return false;
    }
    const std::string_view labels =
        origin.substr(scheme_sep.size(), origin.size() - scheme_sep.size() - suffix.size());
    std::string lowered;
    for (const char c : labels) {
        lowered.push_back(lower(c));
    }
    return is_host_name(lowered);
}

void join(std::string& out, const std::vector<std::string>& items, bool skip_any) {
    for (const auto& item : items) {
        if (skip_any && item == kAny) {
            continue;
        }
        if (!out.empty()) {
            out += ", ";
        }
        out += item;
    }
}

bool contains(const std::vector<std::string>& items, std::string_view value) {
    for (const auto& item : items) {
        if (item == value) {
            return true;
        }
    }
    return false;
}

// Header names or methods: tokens, normalised to one case; "*" kept.
void normalise_tokens(std::vector<std::string>& items, const std::string& path, bool to_upper,
                      std::vector<std::string>& errors) {
    std::vector<std::string> out;
    for (size_t i = 0; i < items.size(); ++i) {
        std::string v = items[i];
        if (v != kAny && !is_token(v)) {
            errors.push_back(path + "[" + std::to_string(i) + "]: '" + v + "' is not a valid " +
                             (to_upper ? "method" : "header name") +
                             " (letters, digits and !#$%&'*+-.^_`|~ only)");
            continue;
        }
        for (char& c : v) {
            c = to_upper ? upper(c) : lower(c);
        }
        if (!contains(out, v)) {
            out.push_back(std::move(v));
        }
    }
    items = std::move(out);
}

}  // namespace

std::vector<std::string> default_cors_allowed_headers() {
    return {
        // Keys: OpenAI, Ollama, TGI and Hugging Face clients (Authorization), Anthropic's
        // (x-api-key) and Azure OpenAI's (api-key); what infergate's client keys accept.
        "authorization", "x-api-key", "api-key",
        // A JSON body's type is not CORS-safelisted.
        "content-type", "x-request-id",
        // Anthropic clients; the SDK's browser build also sends the last one.
        "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access",
        // OpenAI clients.
        "openai-organization", "openai-project", "openai-beta", "idempotency-key",
        // The Stainless-generated SDKs (OpenAI's and Anthropic's JS SDKs) describe themselves in
        // these on every request; the Fetch standard has no prefix wildcard, so each is named.
        "x-stainless-arch", "x-stainless-async", "x-stainless-custom-poll-interval",
        "x-stainless-helper", "x-stainless-helper-method", "x-stainless-lang", "x-stainless-os",
        "x-stainless-package-version", "x-stainless-poll-helper", "x-stainless-retry-count",
        "x-stainless-runtime", "x-stainless-runtime-version", "x-stainless-timeout",
        // Browsers that let a page set it (Firefox) and ollama-js; older XHR habits.
        "user-agent", "x-requested-with"};
}

std::vector<std::string> default_cors_expose_headers() {
    return {"x-request-id", "retry-after",     "www-authenticate",
            "allow",        "x-prompt-tokens", "x-generated-tokens"};
}

bool is_token_list(std::string_view value) {
    if (value.find_first_not_of(" \t") == std::string_view::npos) {
        return true;  // an empty list
    }
    size_t pos = 0;
    while (pos <= value.size()) {
        size_t end = value.find(',', pos);
        if (end == std::string_view::npos) {
            end = value.size();
        }
        std::string_view item = value.substr(pos, end - pos);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
            item.remove_prefix(1);
        }
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
            item.remove_suffix(1);
        }
        if (!is_token(item)) {
            return false;
        }
        pos = end + 1;
    }
    return true;
}

std::string_view Cors::allow_origin(std::string_view origin) const {
    if (origin.empty()) {
        return {};
    }
    if (any_origin) {
        return kAny;
    }
    for (const auto& allowed : allowed_origins) {
        if (allowed.find("://*.") != std::string::npos ? wildcard_match(allowed, origin)
                                                       : iequals(allowed, origin)) {
            return origin;
        }
    }
    return {};
}

void Cors::append_response_headers(std::string& out, std::string_view allowed) const {
    if (allowed.empty()) {
        out += "Vary: Origin\r\n";
        return;
    }
    out += "Access-Control-Allow-Origin: ";
    out += allowed;
    out += "\r\n";
    out += response_tail;
}

void Cors::response_headers(std::string_view allowed,
                            std::vector<std::pair<std::string_view, std::string>>& out) const {
    if (!allowed.empty()) {
        out.emplace_back("Access-Control-Allow-Origin", std::string(allowed));
    }
    out.emplace_back("Vary", "Origin");
    if (allowed.empty()) {
        return;
    }
    if (allow_credentials) {
        out.emplace_back("Access-Control-Allow-Credentials", "true");
    }
    if (!expose_line.empty()) {
        out.emplace_back("Access-Control-Expose-Headers", expose_line);
    }
}

void Cors::preflight_headers(std::string_view request_method, std::string_view request_headers,
                             bool private_network,
                             std::vector<std::pair<std::string_view, std::string>>& out) const {
    std::string vary;
    // "*" answers with what was asked (valid tokens only: the value is written back).
    if (any_method && is_token(request_method)) {
        out.emplace_back("Access-Control-Allow-Methods", std::string(request_method));
        vary = "Access-Control-Request-Method";
    } else if (!methods_line.empty()) {
        out.emplace_back("Access-Control-Allow-Methods", methods_line);
    }
    std::string headers = headers_line;
    if (any_header && !request_headers.empty() && is_token_list(request_headers)) {
        headers = std::string(request_headers);
        vary += vary.empty() ? "" : ", ";
        vary += "Access-Control-Request-Headers";
    }
    if (!headers.empty()) {
        out.emplace_back("Access-Control-Allow-Headers", std::move(headers));
    }
    out.emplace_back("Access-Control-Max-Age", std::to_string(max_age));
    if (private_network && allow_private_network) {
        out.emplace_back("Access-Control-Allow-Private-Network", "true");
    }
    if (!vary.empty()) {
        out.emplace_back("Vary", std::move(vary));
    }
}

void prepare_cors(Cors& c, std::vector<std::string>& errors, std::vector<std::string>& notes) {
    std::vector<std::string> origins;
    for (size_t i = 0; i < c.allowed_origins.size(); ++i) {
        std::string error;
        std::string note;
        std::string o = normalise_origin(c.allowed_origins[i], error, note);
        const std::string path = "cors.allowed_origins[" + std::to_string(i) + "]";
        if (!error.empty()) {
            errors.push_back(path + ": " + error);
            continue;
        }
        if (!note.empty()) {
            notes.push_back(path + ": " + note);
        }
        if (!contains(origins, o)) {
            origins.push_back(std::move(o));
        }
    }
    c.allowed_origins = std::move(origins);
    normalise_tokens(c.allowed_methods, "cors.allowed_methods", true, errors);
    normalise_tokens(c.allowed_headers, "cors.allowed_headers", false, errors);
    normalise_tokens(c.expose_headers, "cors.expose_headers", false, errors);
    if (c.max_age < 0) {
        errors.push_back("cors.max_age: must be >= 0 (seconds a browser may cache a preflight)");
    }
    c.any_origin = contains(c.allowed_origins, kAny);
    c.any_method = contains(c.allowed_methods, kAny);
    c.any_header = contains(c.allowed_headers, kAny);
    if (c.allow_credentials && c.any_origin) {
        // Fetch standard, CORS check: with credentials, Access-Control-Allow-Origin must be
        // the origin itself, and a browser refuses "*".
        errors.push_back(
            "cors.allow_credentials: cannot be true while cors.allowed_origins has \"*\": "
            "browsers refuse credentials from an answer that allows any origin (Fetch "
            "standard); list the origins instead");
    }
    if (c.allow_credentials && contains(c.expose_headers, kAny)) {
        errors.push_back(
            "cors.expose_headers: \"*\" is no wildcard to a browser when "
            "cors.allow_credentials is true (Fetch standard); list the headers instead");
    }
    c.methods_line.clear();
    join(c.methods_line, c.allowed_methods, true);
    c.headers_line.clear();
    join(c.headers_line, c.allowed_headers, true);
    c.expose_line.clear();
    join(c.expose_line, c.expose_headers, false);
    // The text of response_headers() for an allowed origin, after its first line.
    c.response_tail = "Vary: Origin\r\n";
    if (c.allow_credentials) {
        c.response_tail += "Access-Control-Allow-Credentials: true\r\n";
    }
    if (!c.expose_line.empty()) {
        c.response_tail += "Access-Control-Expose-Headers: " + c.expose_line + "\r\n";
    }
}

}  // namespace infergate::config
