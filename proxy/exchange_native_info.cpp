// Exchange: the info routes of the other engines' APIs, answered by infergate itself from what it
// knows about its backend, in each engine's own shape (api-dialects §5.8, §6.1, §6.9, §7.8, §8):
// Ollama's GET /, /api/tags, /api/ps, /api/version, /api/show; TGI's /info; llama.cpp's /props;
// Anthropic's /v1/models. The model list is the same everywhere: the served model and the aliases.
#include "proxy/exchange.hpp"
#include "proxy/routing.hpp"
#include "proxy/worker.hpp"
#include "translators/health.hpp"
#include "translators/info.hpp"

namespace infergate {

Task<bool> Exchange::root() {
    if (request_.method() == http::verb::post) {
        co_return co_await generate(canonical::Dialect::tgi, "/");  // TGI's compat route
    }
    // Ollama's liveness answer (GET and HEAD); TGI's GET / health check reads only the status.
    co_return co_await client_.send(http::status::ok, std::string(translators::ollama::kRootBody),
                                    translators::ollama::kRootContentType);
}

Task<bool> Exchange::ollama_tags(bool running) {
    // The body is a named local, never a temporary inside the co_await: GCC destroys a
    // conditional's temporary twice there.
    const auto c = catalogue();
    std::string body =
        running ? translators::ollama::encode_ps(c) : translators::ollama::encode_tags(c);
    co_return co_await client_.send(http::status::ok, std::move(body));
}

Task<bool> Exchange::ollama_version() {
    std::string body = translators::ollama::encode_version();
    co_return co_await client_.send(http::status::ok, std::move(body));
}

Task<bool> Exchange::ollama_show() {
    auto body = translators::ollama::encode_show(catalogue(), request_.body());
    if (!body) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(
            translators::codec_for(canonical::Dialect::ollama_chat), body.error());
    }
    co_return co_await client_.send(http::status::ok, std::move(body.value()));
}

Task<bool> Exchange::tgi_info() {
    std::string body = translators::tgi::encode_info(catalogue());
    co_return co_await client_.send(http::status::ok, std::move(body));
}

Task<bool> Exchange::llamacpp_props() {
    const auto& info = table_->primary().info;
    if (info.ready && translators::answers_info_route(info.dialect, "/props")) {
        // A llama.cpp backend answers for itself.
        co_return co_await relay_get("/props",
                                     translators::codec_for(canonical::Dialect::llamacpp));
    }
    // Another engine: only what infergate knows.
    std::string body = translators::llamacpp::encode_props(catalogue());
    co_return co_await client_.send(http::status::ok, std::move(body));
}

Task<bool> Exchange::anthropic_models(std::string_view id) {
    const auto c = catalogue();
    if (id.empty()) {
        std::string body = translators::anthropic::encode_models(c);
        co_return co_await client_.send(http::status::ok, std::move(body));
    }
    auto body = translators::anthropic::encode_model(c, id);
    if (!body) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(translators::codec_for(canonical::Dialect::anthropic),
                                              body.error());
    }
    co_return co_await client_.send(http::status::ok, std::move(body.value()));
}

}  // namespace infergate
