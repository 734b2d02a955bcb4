#pragma once
// Maps a request's method and path to what infergate does with it. Stateless; built once. The
// routes a listener serves depend on its kind: with an admin listener, the ops routes (metrics,
// server info) are served there only, and the public listener does not list them.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "translators/canonical/embedding.hpp"
#include "translators/canonical/types.hpp"

namespace infergate {

struct Route {
    enum class Kind {
        generate,          // a generation in `dialect`
        generate_by_body,  // POST /generate: SGLang, TGI or vLLM legacy, told apart by the body
        root,              // "/": GET/HEAD answer like Ollama, POST is TGI's compat route
        tgi_info,          // GET /info
        ollama_tags,       // GET /api/tags
        ollama_version,    // GET /api/version
        ollama_show,       // POST /api/show
        ollama_ps,         // GET /api/ps
        llamacpp_props,    // GET /props
        models,            // GET /v1/models
        model,             // GET /v1/models/{id}
        health,            // GET /health
        health_generate,   // GET /health_generate
        model_info,        // GET /get_model_info
        server_info,       // GET /get_server_info
        metrics,           // GET /metrics (Prometheus)
        reload,            // POST /-/reload (admin listener only): re-read the config file
        embed,             // embeddings in `embed_dialect`
        tokenize,          // a tokenize: `tokenizer` names the API, else the body does
        detokenize,        // a detokenize: `tokenizer` names the API, else the body or backend
        apply_template,    // POST /apply-template (llama.cpp): a chat rendered, not generated
        stored_response,   // GET, DELETE /v1/responses/{id}: a stored Responses API turn
        stored_input,      // GET /v1/responses/{id}/input_items
        not_found,
        method_not_allowed,
    };
    Kind kind = Kind::not_found;
    canonical::Dialect dialect = canonical::Dialect::openai_completions;
    // Kind::model: the {id} part, percent-decoded (org%2Fname); stored_response, stored_input:
    // the response id.
    std::string model_id;
    std::string_view allow;     // Kind::method_not_allowed: the Allow header value
    std::string_view path;      // the matched route ("/generate_stream"; TGI's answer depends on it)
    canonical::EmbedDialect embed_dialect = canonical::EmbedDialect::openai;  // Kind::embed
    // Kind::tokenize, detokenize: the API the path belongs to (SGLang's /v1/tokenize, TEI's
    // /decode); nullopt where several servers share it (POST /tokenize, /detokenize).
    std::optional<canonical::TokenizerDialect> tokenizer;
};

// Which routes a listener serves.
enum class ListenerKind : uint8_t {
    combined,    // no admin listener configured: every route (the default)
    public_api,  // admin_listen set: the API and health routes, no ops route
    admin,       // the admin listener: ops and health routes only
};

// `method` as in the request line; `target` may carry a query string, which is ignored. A route
// the listener does not serve is not_found, as if it did not exist.
Route match_route(std::string_view method, std::string_view target,
                  ListenerKind listener = ListenerKind::combined);

// Decodes %XX escapes (SDKs encode the '/' of org/name model ids); invalid escapes stay as is.
using config::percent_decode;

// "GET /health, POST /generate, ...": for the 404 message; the routes `listener` serves only.
std::string route_list(ListenerKind listener = ListenerKind::combined);

// "POST, PUT, GET, HEAD, OPTIONS": every method some route of `listener` takes (OPTIONS *).
std::string methods_served(ListenerKind listener = ListenerKind::combined);

}  // namespace infergate
