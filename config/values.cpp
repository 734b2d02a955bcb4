// The values inside a configuration that have their own syntax: backend dialect names, backend
// URLs (userinfo, IPv6 hosts, a pasted endpoint path), listen addresses. config.cpp reads the
// YAML around them.
#include <charconv>

#include "config/config.hpp"

namespace infergate::config {

std::string_view to_string(BackendDialect d) {
    switch (d) {
        case BackendDialect::auto_detect:
            return "auto";
        case BackendDialect::openai:
            return "openai";
        case BackendDialect::sglang:
            return "sglang";
        case BackendDialect::tgi:
            return "tgi";
        case BackendDialect::ollama:
            return "ollama";
        case BackendDialect::llamacpp:
            return "llamacpp";
        case BackendDialect::vllm_legacy:
            return "vllm_legacy";
        case BackendDialect::anthropic:
            return "anthropic";
        case BackendDialect::tei:
            return "tei";
    }
    return "auto";
}

std::string_view backend_dialect_names() {
    return "auto, openai (alias vllm), sglang, tgi, ollama, llamacpp (alias llama.cpp), "
           "vllm_legacy, anthropic, tei (alias text-embeddings-inference)";
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
    if (s == "tei" || s == "text-embeddings-inference") {
        return BackendDialect::tei;
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

// %XX escapes decoded (RFC 3986 §2.1); an invalid escape stays as it is.
std::string percent_decode(std::string_view s) {
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
        const std::string user = percent_decode(userinfo.substr(0, colon));
        const std::string pass = colon == std::string_view::npos
                                     ? std::string()
                                     : percent_decode(userinfo.substr(colon + 1));
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

}  // namespace infergate::config
