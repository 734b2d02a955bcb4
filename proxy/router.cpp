#include "proxy/router.hpp"

#include <array>

namespace infergate {

namespace {

using canonical::Dialect;
using K = Route::Kind;

// Where a route is served when an admin listener is configured (without one, everywhere).
enum class On : uint8_t {
    api,     // the public listener only
    ops,     // the admin listener only: what shows the deployment or changes it
    health,  // both: load balancers and orchestrators probe the public port
    // The admin listener only, never on a combined one: what changes the running proxy
    // (POST /-/reload). Without admin_listen it is not served at all (SIGHUP still reloads):
    // a public port must not let whoever reaches it make the proxy re-read its files.
    control,
};

struct Entry {
    std::string_view path;
    std::string_view methods;  // the Allow header value
    Route::Kind kind;
    Dialect dialect = Dialect::openai_completions;
    On on = On::api;
    canonical::EmbedDialect embed = canonical::EmbedDialect::openai;
    std::optional<canonical::TokenizerDialect> tokenizer = std::nullopt;
};

using canonical::EmbedDialect;
using canonical::TokenizerDialect;
constexpr Dialect kNone = Dialect::openai_completions;

bool serves(ListenerKind listener, On on) {
    switch (listener) {
        case ListenerKind::combined:
            return on != On::control;
        case ListenerKind::public_api:
            return on != On::ops && on != On::control;
        case ListenerKind::admin:
            return on != On::api;
    }
    return false;
}

// Several servers share a path (SGLang, TGI and vLLM's demo server all have POST /generate);
// those routes are told apart by the body (see classify_generate_body). Every GET route takes
// HEAD too (RFC 9110 §9.1: a general-purpose server must support both): the same answer's head.
constexpr std::array kRoutes = {
    Entry{"/generate", "POST, PUT", K::generate_by_body},
    Entry{"/generate_stream", "POST", K::generate, Dialect::tgi},
    Entry{"/", "POST, GET, HEAD", K::root, Dialect::tgi},
    Entry{"/v1/completions", "POST", K::generate, Dialect::openai_completions},
    Entry{"/v1/chat/completions", "POST", K::generate, Dialect::openai_chat},
    Entry{"/v1/messages", "POST", K::generate, Dialect::anthropic},
    Entry{"/v1/responses", "POST", K::generate, Dialect::openai_responses},
    Entry{"/api/generate", "POST", K::generate, Dialect::ollama_generate},
    Entry{"/api/chat", "POST", K::generate, Dialect::ollama_chat},
    Entry{"/completion", "POST", K::generate, Dialect::llamacpp},
    Entry{"/completions", "POST", K::generate, Dialect::llamacpp},
    Entry{"/api/tags", "GET, HEAD", K::ollama_tags},
    Entry{"/api/version", "GET, HEAD", K::ollama_version},
    Entry{"/api/show", "POST", K::ollama_show},
    Entry{"/api/ps", "GET, HEAD", K::ollama_ps},
    Entry{"/info", "GET, HEAD", K::tgi_info},
    Entry{"/props", "GET, HEAD", K::llamacpp_props},
    // Embeddings (docs/dialects.md, "Embeddings") and the tokenizer ("Tokenizer routes").
    Entry{"/v1/embeddings", "POST", K::embed, kNone, On::api, EmbedDialect::openai},
    Entry{"/api/embed", "POST", K::embed, kNone, On::api, EmbedDialect::ollama},
    Entry{"/api/embeddings", "POST", K::embed, kNone, On::api, EmbedDialect::ollama_legacy},
    Entry{"/embed", "POST", K::embed, kNone, On::api, EmbedDialect::tei},
    Entry{"/embedding", "POST", K::embed, kNone, On::api, EmbedDialect::llamacpp},
    Entry{"/embeddings", "POST", K::embed, kNone, On::api, EmbedDialect::llamacpp},
    Entry{"/tokenize", "POST", K::tokenize},
    Entry{"/detokenize", "POST", K::detokenize},
    Entry{"/v1/tokenize", "POST", K::tokenize, kNone, On::api, {}, TokenizerDialect::sglang},
    Entry{"/v1/detokenize", "POST", K::detokenize, kNone, On::api, {}, TokenizerDialect::sglang},
    Entry{"/decode", "POST", K::detokenize, kNone, On::api, {}, TokenizerDialect::tei},
    Entry{"/apply-template", "POST", K::apply_template},
    Entry{"/v1/models", "GET, HEAD", Route::Kind::models},
    Entry{"/health", "GET, HEAD", Route::Kind::health, {}, On::health},
    Entry{"/health_generate", "GET, HEAD", Route::Kind::health_generate, {}, On::health},
    Entry{"/get_model_info", "GET, HEAD", Route::Kind::model_info},
    // An ops route is one line with On::ops: served on the admin listener when there is one.
    Entry{"/get_server_info", "GET, HEAD", Route::Kind::server_info, {}, On::ops},  // backend URL
    Entry{"/metrics", "GET, HEAD", Route::Kind::metrics, {}, On::ops},
    Entry{"/-/reload", "POST", Route::Kind::reload, {}, On::control},
};

bool method_listed(std::string_view methods, std::string_view method) {
    if (methods.starts_with(method) &&
        (methods.size() == method.size() || methods[method.size()] == ',')) {
        return true;  // the first (most routes have one method: POST)
    }
    size_t pos = 0;
    while (pos < methods.size()) {
        size_t end = methods.find(',', pos);
        if (end == std::string_view::npos) {
            end = methods.size();
        }
        std::string_view m = methods.substr(pos, end - pos);
        while (!m.empty() && m.front() == ' ') {
            m.remove_prefix(1);
        }
        if (m == method) {
            return true;
        }
        pos = end + 1;
    }
    return false;
}

}  // namespace

Route match_route(std::string_view method, std::string_view target, ListenerKind listener) {
    std::string_view path = target.substr(0, target.find('?'));
    if (path.size() > 1 && path.back() == '/') {
        path.remove_suffix(1);  // "/generate/" is "/generate"
    }
    Route route;
    for (const Entry& e : kRoutes) {
        if (path != e.path || !serves(listener, e.on)) {
            continue;
        }
        if (!method_listed(e.methods, method)) {
            route.kind = Route::Kind::method_not_allowed;
            route.allow = e.methods;
            return route;
        }
        route.kind = e.kind;
        route.dialect = e.dialect;
        route.path = e.path;
        route.embed_dialect = e.embed;
        route.tokenizer = e.tokenizer;
        return route;
    }
    constexpr std::string_view kResponsePrefix = "/v1/responses/";
    if (path.starts_with(kResponsePrefix) && path.size() > kResponsePrefix.size() &&
        serves(listener, On::api)) {
        std::string_view id = path.substr(kResponsePrefix.size());
        constexpr std::string_view kItems = "/input_items";
        const bool items = id.ends_with(kItems) && id.size() > kItems.size();
        if (items) {
            id.remove_suffix(kItems.size());
        }
        if (id.find('/') == std::string_view::npos) {
            const std::string_view allow = items ? "GET, HEAD" : "GET, HEAD, DELETE";
            if (!method_listed(allow, method)) {
                route.kind = Route::Kind::method_not_allowed;
                route.allow = allow;
                return route;
            }
            route.kind = items ? Route::Kind::stored_input : Route::Kind::stored_response;
            route.model_id = percent_decode(id);
            return route;
        }
    }
    constexpr std::string_view kModelPrefix = "/v1/models/";
    if (path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size() &&
        serves(listener, On::api)) {
        if (method != "GET" && method != "HEAD") {
            route.kind = Route::Kind::method_not_allowed;
            route.allow = "GET, HEAD";
            return route;
        }
        route.kind = Route::Kind::model;
        // Model ids may contain '/' (org/name), so everything after the prefix is the id.
        route.model_id = percent_decode(path.substr(kModelPrefix.size()));
        return route;
    }
    return route;
}

std::string route_list(ListenerKind listener) {
    std::string out;
    for (const Entry& e : kRoutes) {
        if (!serves(listener, e.on)) {
            continue;
        }
        out += out.empty() ? "" : ", ";
        out += std::string(e.methods.substr(0, e.methods.find(','))) + " " + std::string(e.path);
    }
    if (serves(listener, On::api)) {
        out +=
            ", GET /v1/models/{model}, GET|DELETE /v1/responses/{id}, "
            "GET /v1/responses/{id}/input_items";
    }
    return out;
}

std::string methods_served(ListenerKind listener) {
    std::string out;
    for (const Entry& e : kRoutes) {
        std::string_view rest = e.methods;
        while (!rest.empty()) {
            const size_t comma = rest.find(',');
            const std::string_view m = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            while (rest.starts_with(' ')) {
                rest.remove_prefix(1);
            }
            if (serves(listener, e.on) && !method_listed(out, m)) {
                out += out.empty() ? "" : ", ";
                out += m;
            }
        }
    }
    if (serves(listener, On::api)) {
        out += ", DELETE";  // DELETE /v1/responses/{id}
    }
    return out + ", OPTIONS";
}

}  // namespace infergate
