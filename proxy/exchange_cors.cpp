// Exchange: OPTIONS on any route. A CORS preflight (Origin and Access-Control-Request-Method) is
// answered 204 with the policy of the config's cors: section when the origin is allowed, and 403
// without any CORS line otherwise, so that the browser blocks the request; a plain OPTIONS gets
// 204 with Allow (RFC 9110 §9.3.7). The CORS lines of every other answer are written by
// ClientWriter (set in the Exchange's constructor); docs/security.md, "Browsers".
#include <string>

#include "config/cors.hpp"
#include "proxy/exchange.hpp"

namespace infergate {

Task<bool> Exchange::options(std::string allow) {
    client_.extra_headers().emplace_back("Allow", std::move(allow));
    const std::string_view origin = request_["Origin"];
    const std::string_view method = request_["Access-Control-Request-Method"];
    if (origin.empty() || method.empty()) {
        co_return co_await client_.send(http::status::no_content, std::string());
    }
    const config::Cors& cors = config_->cors;
    if (cors.allow_origin(origin).empty()) {
        meter_.set_outcome(Outcome::rejected);
        canonical::Error e;
        e.status = 403;
        e.type = "permission_error";
        e.code = "cors_origin_not_allowed";
        const std::string quoted = "'" + std::string(origin.substr(0, 200)) + "'";
        e.message =
            cors.enabled()
                ? "the origin " + quoted +
                      " may not call this server from a browser: it is not in "
                      "cors.allowed_origins; add it there to allow it"
                : "this server answers no cross-origin requests from browsers (CORS is off: "
                  "cors.allowed_origins is empty); to let the page at " +
                      quoted + " call it, add that origin to cors.allowed_origins";
        co_return co_await client_.send_openai_error(e);
    }
    const std::string_view private_network = request_["Access-Control-Request-Private-Network"];
    cors.preflight_headers(method, request_["Access-Control-Request-Headers"],
                           beast::iequals(private_network, "true"), client_.extra_headers());
    co_return co_await client_.send(http::status::no_content, std::string());
}

}  // namespace infergate
