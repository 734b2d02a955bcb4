#pragma once
// Finds out what speaks behind the backend URL (api-dialects §1 and §9 fingerprints) and which
// model it serves, by GETting its info routes. Runs off the request path, at start-up and again
// until the backend answers.

#include "config/config.hpp"
#include "proxy/net.hpp"
#include "proxy/worker.hpp"

namespace infergate {

// One probe round. `reachable` is false when the backend did not answer at all (still starting,
// wrong address): the caller retries.
struct ProbeResult {
    bool reachable = false;
    BackendInfo info;
};

// `ip`: probe this address (a replica found by DNS discovery) rather than the URL's host.
Task<ProbeResult> probe_backend(const config::Backend& backend, net::ssl::context* tls,
                                std::optional<net::ip::address> ip = std::nullopt);

}  // namespace infergate
