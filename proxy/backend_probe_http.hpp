#pragma once
// The probe's HTTP calls: one GET of an info route through the backend's pool, kept with its
// parsed body and a verdict. Internal to backend_probe.cpp and backend_probe_http.cpp.

#include <optional>
#include <string>

#include "proxy/net.hpp"
#include "proxy/upstream_pool.hpp"
#include "translators/canonical/json.hpp"

namespace infergate::probe {

struct Reply {
    beast::error_code ec;
    int status = 0;
    std::string server;
    std::string body;
};

// One probed route: its answer, and a verdict for the message that explains the decision.
struct Route {
    std::string path;
    Reply reply;
    json::Document doc;  // the body when the answer is a 200 with a JSON object; null otherwise
    std::string verdict;
};

using WholeResponse = std::optional<http::response_parser<http::string_body>>;

// Writes `req` on `conn` and reads the whole answer into `parser` (interim 1xx responses
// skipped, the body up to `body_limit`), within the deadline the caller armed; settled.
Task<beast::error_code> round_trip(UpstreamConnection& conn, http::request<http::string_body>& req,
                                   WholeResponse& parser, size_t body_limit);

// One GET of `path` within `budget` (request and response together).
Task<Reply> get(UpstreamPool& pool, const std::string& path,
                std::chrono::milliseconds budget = std::chrono::seconds(5));

// GETs `path` and fills `route`: the reply, its JSON object body (else null) and, for a failure
// or a status other than 200, the verdict.
Task<void> fetch(UpstreamPool& pool, Route& route, std::string path);

}  // namespace infergate::probe
