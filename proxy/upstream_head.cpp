#include "proxy/upstream_head.hpp"

#include "proxy/client_request.hpp"
#include "proxy/http_head.hpp"

namespace infergate {

namespace {

bool forwardable(http::field f) {
    switch (f) {
        case http::field::connection:
        case http::field::proxy_connection:  // the pre-standard Connection some clients send
        case http::field::keep_alive:
        case http::field::proxy_authenticate:
        case http::field::proxy_authorization:
        case http::field::te:
        case http::field::trailer:
        case http::field::transfer_encoding:
        case http::field::upgrade:
        case http::field::host:
        case http::field::content_length:
        case http::field::content_type:
        case http::field::accept:
        case http::field::accept_encoding:  // the proxy must be able to read what comes back
        case http::field::expect:
        case http::field::origin:  // unless the caller says otherwise: upstream_request_head
            return false;
        default:
            return true;
    }
}

// Whether the client named header `name` in a Connection field: then it is for this hop only and
// not forwarded (RFC 9110 §7.6.1; `Connection: close, X-Foo`).
bool named_in_connection(const ClientRequest& request, std::string_view name) {
    for (size_t i = 0; i < request.field_count(); ++i) {
        const ClientRequest::Field f = request.field(i);
        if (f.id != http::field::connection) {
            continue;
        }
        std::string_view rest = f.value;
        std::string_view option;
        while (http_head::next_list_item(rest, option)) {
            if (beast::iequals(option, name)) {
                return true;
            }
        }
    }
    return false;
}

}  // namespace

std::string upstream_request_head(const ClientRequest& request, http::verb verb,
                                  std::string_view target, size_t body_size, bool stream,
                                  const config::Backend& b,
                                  const translators::BackendHeaders& backend_headers,
                                  std::string_view request_id, bool client_keys, bool drop_origin) {
    // The client's end-to-end headers, then the proxy's own (which replace a client's
    // X-Request-Id and, when the backend has a key, its credentials).
    std::string head;
    head.reserve(256 + target.size());
    head += http::to_string(verb);
    head += ' ';
    head += target.empty() ? std::string_view("/") : target;
    head += " HTTP/1.1\r\n";
    // Credentials in the backend's URL (http://user:pass@host) go as Basic auth when no key is
    // configured, replacing the client's Authorization as a key would.
    const bool basic = b.api_key.empty() && !b.url.basic_auth.empty();
    bool has_version = false;
    const bool has_connection = !request[http::field::connection].empty();
    for (size_t i = 0; i < request.field_count(); ++i) {
        const ClientRequest::Field f = request.field(i);
        // Origin is checked only here, among the fields the switch leaves out: a request
        // without one (every non-browser client) pays nothing for it.
        if ((!forwardable(f.id) && (f.id != http::field::origin || drop_origin)) ||
            (has_connection && named_in_connection(request, f.name))) {
            continue;
        }
        if (beast::iequals(f.name, "x-request-id") ||
            (!b.api_key.empty() && beast::iequals(f.name, backend_headers.key_header)) ||
            (basic && f.id == http::field::authorization) ||
            (client_keys &&
             (f.id == http::field::authorization || beast::iequals(f.name, "x-api-key") ||
              beast::iequals(f.name, "api-key")))) {
            continue;
        }
        has_version = has_version || (!backend_headers.version_header.empty() &&
                                      beast::iequals(f.name, backend_headers.version_header));
        http_head::field(head, f.name, f.value);
    }
    http_head::field(head, "Host", b.url.authority());
    http_head::field(head, "X-Request-Id", request_id);
    if (!b.api_key.empty()) {
        head += backend_headers.key_header;
        head += ": ";
        head += backend_headers.key_prefix;
        head += b.api_key;
        head += "\r\n";
    } else if (basic) {
        head += "Authorization: Basic ";
        head += b.url.basic_auth;
        head += "\r\n";
    }
    if (!backend_headers.version_header.empty() && !has_version) {
        http_head::field(head, backend_headers.version_header, backend_headers.version);
    }
    http_head::field(head, "Accept", stream ? "text/event-stream" : "application/json");
    // The body is read and translated here: it must come uncompressed (RFC 9110 §12.5.3).
    http_head::field(head, "Accept-Encoding", "identity");
    if (verb == http::verb::post) {
        http_head::field(head, "Content-Type", "application/json");
        http_head::content_length(head, body_size);
    }
    head += "\r\n";
    return head;
}

}  // namespace infergate
