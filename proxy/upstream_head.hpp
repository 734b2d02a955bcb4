#pragma once
// The head of a request to the backend: the client's end-to-end headers (hop-by-hop ones, those
// the client named in Connection, and the ones the proxy sets itself dropped), then the proxy's
// own: Host, X-Request-Id, the operator's key in the header the backend's API reads (or the
// credentials of the backend's URL as Basic auth), the version
// header that API requires, Accept, Accept-Encoding: identity, and for a POST the body's type and
// length. `client_keys`: the client authenticated to infergate with a key (auth:), which is
// infergate's and never goes upstream (Authorization, x-api-key and api-key are dropped).
// `drop_origin`: infergate's CORS policy allowed the client's Origin (config cors:), which is
// then not forwarded: a backend with its own origin check (Ollama refuses, with 403, every
// origin outside OLLAMA_ORIGINS) would veto what the operator allowed.

#include <string>
#include <string_view>

#include "config/config.hpp"
#include "proxy/net.hpp"
#include "translators/backend_kind.hpp"

namespace infergate {

class ClientRequest;

std::string upstream_request_head(const ClientRequest& request, http::verb verb,
                                  std::string_view target, size_t body_size, bool stream,
                                  const config::Backend& backend,
                                  const translators::BackendHeaders& backend_headers,
                                  std::string_view request_id, bool client_keys = false,
                                  bool drop_origin = false);

}  // namespace infergate
