#pragma once
// CORS (the config's `cors:` section): which browser origins may call infergate, and the header
// lines that tell a browser so (the Fetch standard's CORS protocol, docs/security.md "Browsers").
// Checked and normalised with the rest of the config; the header text every answer carries is
// rendered once there (prepare_cors), so that a request pays for CORS only when it is on. Pure
// string work, no Asio or Beast: tests/config/cors_test.cpp tests it without sockets.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infergate::config {

// The request headers a browser page may send by default: the keys, versions and options each
// official client sends (the OpenAI and Anthropic JS SDKs' own headers included), so that their
// browser builds pass the preflight unchanged. Lower-case, as the Fetch standard compares them.
std::vector<std::string> default_cors_allowed_headers();
// The response headers a page may read besides the CORS-safelisted ones: the request id, a 429's
// Retry-After, a 401's WWW-Authenticate, a 405's Allow and TGI's token counts.
std::vector<std::string> default_cors_expose_headers();

struct Cors {
    // Serialised origins (scheme://host[:port], lower-case, no default port), "*" (any), "null"
    // (sandboxed frames and file: pages) or scheme://*.domain (any subdomain). Empty: CORS off,
    // the default.
    std::vector<std::string> allowed_origins;
    // Upper-case; "*": the method the preflight asks for.
    std::vector<std::string> allowed_methods = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"};
    // Lower-case; "*": the headers the preflight asks for (Authorization included, which the
    // Fetch standard's wildcard does not cover).
    std::vector<std::string> allowed_headers = default_cors_allowed_headers();
    std::vector<std::string> expose_headers = default_cors_expose_headers();
    int64_t max_age = 600;           // seconds a browser may cache a preflight's answer
    bool allow_credentials = false;  // cookies and HTTP auth; a bearer key is no credential here
    // Chrome's Private Network Access: a public page's preflight to a private address asks with
    // Access-Control-Request-Private-Network: true; answered yes only when this is set.
    bool allow_private_network = false;

    // ---- rendered by prepare_cors ----
    bool any_origin = false;   // "*" is listed (then never with credentials)
    bool any_method = false;   // "*" in allowed_methods
    bool any_header = false;   // "*" in allowed_headers
    std::string methods_line;  // "GET, HEAD, ..." (without a "*")
    std::string headers_line;  // "authorization, ..." (without a "*")
    std::string expose_line;   // "x-request-id, ..."
    // What follows Access-Control-Allow-Origin on every answer to an allowed origin:
    // "Vary: Origin\r\n" and the credentials and expose lines.
    std::string response_tail;

    bool enabled() const { return !allowed_origins.empty(); }

    // What Access-Control-Allow-Origin says to a request that sent `origin`: "*", `origin` itself,
    // or empty when it is not allowed (or there is none).
    std::string_view allow_origin(std::string_view origin) const;

    // The CORS lines of an answer ("Name: value\r\n" each). `allowed` is allow_origin()'s result:
    // empty, only "Vary: Origin" (the answer still depends on the origin, for caches).
    void append_response_headers(std::string& out, std::string_view allowed) const;

    // The same as name-value pairs, for a head written by Beast (Session's refusals).
    void response_headers(std::string_view allowed,
                          std::vector<std::pair<std::string_view, std::string>>& out) const;

    // A preflight's own lines, for an allowed origin: Access-Control-Allow-Methods and -Headers
    // (the configured lists, or what the preflight asked for where "*" is configured, with a Vary
    // for it), -Max-Age and, when asked and allowed, -Private-Network. `request_method`,
    // `request_headers`: the Access-Control-Request-Method and -Headers values.
    void preflight_headers(std::string_view request_method, std::string_view request_headers,
                           bool private_network,
                           std::vector<std::pair<std::string_view, std::string>>& out) const;

    bool operator==(const Cors&) const = default;
};

// Checks `cors` and normalises it in place (origins lower-cased and without a default port,
// methods upper-case, header names lower-case), then renders its header text. Errors are
// appended with their path ("cors.allowed_origins[1]: ..."), what was rewritten to `notes`.
// load_yaml_text calls it; a Cors built in code must be passed through it too.
void prepare_cors(Cors& cors, std::vector<std::string>& errors, std::vector<std::string>& notes);

// Whether `value` is a comma-separated list of header names (RFC 9110 tokens, optional spaces
// around the commas), as Access-Control-Request-Headers is; an empty value is one.
bool is_token_list(std::string_view value);

}  // namespace infergate::config
