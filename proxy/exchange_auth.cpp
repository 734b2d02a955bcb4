// Exchange: client keys (config auth:, proxy/client_auth.hpp). Every route but the health checks
// and OPTIONS needs a configured key when keys are set (on the admin listener none does); a
// generation is also held to the key's limits.
#include <string>

#include "proxy/client_auth.hpp"
#include "proxy/exchange.hpp"
#include "proxy/worker.hpp"
#include "translators/classify.hpp"

namespace infergate {

namespace {

// Answered without a key: the liveness and readiness checks that load balancers and
// orchestrators send without credentials.
bool public_route(const Route& route, http::verb method) {
    // A CORS preflight never carries credentials (Fetch standard, CORS-preflight request), and
    // the request it clears is checked: vLLM, SGLang and llama-server skip OPTIONS too.
    if (method == http::verb::options) {
        return true;
    }
    switch (route.kind) {
        case Route::Kind::health:
        case Route::Kind::health_generate:
            return true;
        case Route::Kind::root:
            return method != http::verb::post;  // Ollama's "Ollama is running"
        default:
            return false;
    }
}

// The dialect whose error shape the client reads.
canonical::Dialect client_dialect(const Route& route, const ClientRequest& request) {
    using canonical::Dialect;
    switch (route.kind) {
        case Route::Kind::generate:
            return route.dialect;
        case Route::Kind::generate_by_body: {
            auto d = translators::classify_generate_body(request.body());
            return d ? d.value() : Dialect::sglang;
        }
        case Route::Kind::root:
        case Route::Kind::tgi_info:
            return Dialect::tgi;
        case Route::Kind::ollama_tags:
        case Route::Kind::ollama_version:
        case Route::Kind::ollama_show:
        case Route::Kind::ollama_ps:
            return Dialect::ollama_chat;
        case Route::Kind::llamacpp_props:
        case Route::Kind::apply_template:
            return Dialect::llamacpp;
        case Route::Kind::embed:
            switch (route.embed_dialect) {
                case canonical::EmbedDialect::ollama:
                case canonical::EmbedDialect::ollama_legacy:
                    return Dialect::ollama_chat;
                case canonical::EmbedDialect::tei:
                    return Dialect::tgi;  // TEI's error body is TGI's
                case canonical::EmbedDialect::llamacpp:
                    return Dialect::llamacpp;
                case canonical::EmbedDialect::openai:
                    break;
            }
            break;
        case Route::Kind::tokenize:
        case Route::Kind::detokenize:
            if (route.tokenizer == canonical::TokenizerDialect::tei) {
                return Dialect::tgi;
            }
            break;
        default:
            break;
    }
    return request["anthropic-version"].empty() ? Dialect::openai_chat : Dialect::anthropic;
}

}  // namespace

Task<std::optional<bool>> Exchange::authorize(const Route& route) {
    ClientAuth* auth = auth_.get();
    // The admin listener is the operator's (admin_listen, on loopback or a private network):
    // Prometheus scrapes it without a client key.
    if (auth == nullptr || !auth->enabled() || listener_ == ListenerKind::admin ||
        public_route(route, request_.method())) {
        co_return std::nullopt;
    }
    const std::string_view presented = ClientAuth::presented(request_);
    key_ = auth->find(presented);
    if (key_ >= 0) {
        auth->count_request(key_);
        meter_.set_key(auth->name(key_));
        co_return std::nullopt;
    }
    auth->count_refusal(presented.empty() ? ClientAuth::Refusal::missing
                                          : ClientAuth::Refusal::invalid);
    meter_.set_outcome(Outcome::rejected);
    canonical::Error e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = presented.empty()
                    ? "this server requires an API key: send it as 'Authorization: Bearer <key>' "
                      "(the api_key or token setting of OpenAI, Ollama, TGI and Hugging Face "
                      "clients) or as 'x-api-key: <key>' (Anthropic clients)"
                    : "the API key sent is not one this server accepts; check the key "
                      "('Authorization: Bearer <key>' or 'x-api-key: <key>')";
    client_.extra_headers().emplace_back("WWW-Authenticate", "Bearer realm=\"infergate\"");
    const auto dialect = client_dialect(route, request_);
    co_return co_await client_.send_error(translators::codec_for(dialect), e);
}

Task<std::optional<bool>> Exchange::admit(ErrorShape front) {
    if (key_ < 0) {
        co_return std::nullopt;
    }
    ClientAuth& auth = *auth_.get();
    int retry_after = 1;
    const auto admission = auth.admit(key_, retry_after);
    if (admission == ClientAuth::Admission::ok) {
        admitted_ = true;
        co_return std::nullopt;
    }
    meter_.set_outcome(Outcome::rejected);
    canonical::Error e;
    e.status = 429;
    e.type = "rate_limit_error";
    e.code = "rate_limit_exceeded";
    e.message = "the API key '" + auth.name(key_) + "' is over its limit of " +
                (admission == ClientAuth::Admission::rate_limited
                     ? std::string("requests per second")
                     : std::string("generations in flight at once")) +
                "; retry in " + std::to_string(retry_after) + " s";
    client_.extra_headers().emplace_back("Retry-After", std::to_string(retry_after));
    co_return co_await client_.send_error(front, e);
}

}  // namespace infergate
