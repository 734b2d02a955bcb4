// Server: the listening sockets (addresses a listen value resolves to, binding them per worker)
// and the start-up line that says what is exposed.
#include <algorithm>

#include "proxy/listener.hpp"
#include "proxy/log.hpp"
#include "proxy/server.hpp"
#include "proxy/worker.hpp"

namespace infergate {

// HOST:PORT as a URL writes it: [::1]:30000 for IPv6.
std::string net_text(const tcp::endpoint& e) {
    const std::string host = e.address().to_string();
    return (e.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(e.port());
}

std::vector<net::ip::address> Server::listen_addresses(const std::string& host,
                                                       beast::error_code& ec) {
    ec = {};
    const auto literal = net::ip::make_address(host, ec);
    if (!ec) {
        return {literal};
    }
    // A name (localhost): every address it resolves to, IPv4 first (what the first
    // "listening on" line shows, and what most clients try), each once.
    Resolver resolver(control_.get_executor());
    const auto results = resolver.resolve(host, "", net::ip::resolver_base::passive, ec);
    std::vector<net::ip::address> out;
    if (ec) {
        return out;
    }
    for (const auto& r : results) {
        const auto a = r.endpoint().address();
        if (std::find(out.begin(), out.end(), a) == out.end()) {
            out.push_back(a);
        }
    }
    std::stable_partition(out.begin(), out.end(), [](const auto& a) { return a.is_v4(); });
    return out;
}

void Server::log_exposure(const std::vector<tcp::endpoint>& bound,
                          const std::vector<tcp::endpoint>& admin) const {
    const auto loopback = [](const std::vector<tcp::endpoint>& endpoints) {
        return std::all_of(endpoints.begin(), endpoints.end(),
                           [](const auto& e) { return e.address().is_loopback(); });
    };
    const bool loopback_only = loopback(bound);
    const config::Backend& b = config_->backend();
    std::string line = "exposed: ";
    line += loopback_only ? "this host only (loopback)" : "the network (a non-loopback address)";
    const bool keys = config_->auth.enabled();
    line += keys ? "; client auth: on (" + std::to_string(config_->auth.keys.size()) + " keys)"
                 : "; client auth: off (whoever reaches the port is served)";
    line += b.api_key.empty()
                ? "; backend key: none"
                : "; backend key: injected from $" + b.api_key_env + " into every request";
    if (b.api_key.empty() && !b.url.basic_auth.empty()) {
        line += "; backend credentials: Basic, from the backend URL";
    }
    if (admin.empty()) {
        line +=
            "; /metrics and /get_server_info: on this listener (set admin_listen to move "
            "them off it)";
    } else {
        line += "; /metrics and /get_server_info: on the admin listener only (" +
                net_text(admin.front()) + ", no auth)";
    }
    std::string warning;
    if (!loopback_only && !keys && (!b.api_key.empty() || !b.url.basic_auth.empty())) {
        // Whoever can reach the port spends the operator's key: say so where it is seen.
        warning +=
            " -- anyone who can reach it uses the backend's credentials; listen "
            "on 127.0.0.1, configure client keys (auth:), or keep the port behind a "
            "firewall";
    }
    if (!admin.empty() && !loopback(admin)) {
        // The admin routes show the backend's address and the traffic: no auth protects them.
        warning +=
            " -- the admin listener is on a non-loopback address and has no "
            "authentication: anyone who reaches it reads /metrics and /get_server_info; "
            "put admin_listen on 127.0.0.1, or keep its port behind a firewall";
    }
    if (!warning.empty()) {
        log::warn(line + warning);
    } else {
        log::info(line);
    }
}

std::vector<tcp::endpoint> Server::bind_listeners(const std::string& host, uint16_t port,
                                                  ListenerKind kind, std::string_view option) {
    const std::string opt(option);
    beast::error_code ec;
    const std::vector<net::ip::address> addresses = listen_addresses(host, ec);
    if (addresses.empty()) {
        log::error(opt + ": cannot resolve '" + host + "'" +
                   (ec ? ": " + ec.message() : std::string()) +
                   "; give an IP address (127.0.0.1, 0.0.0.0, [::]) or a resolvable name");
        return {};
    }
    std::vector<tcp::endpoint> bound;
    for (const auto& address : addresses) {
        tcp::endpoint endpoint(address, port);
        std::vector<std::unique_ptr<Listener>> made;
        for (size_t i = 0; i < workers_.size() && !ec; ++i) {
            auto listener = std::make_unique<Listener>(*workers_[i], endpoint, kind, ec);
            if (!ec) {
                // Port 0: every further acceptor (other workers, other addresses) joins the
                // port the first one got.
                endpoint = listener->local_endpoint();
                made.push_back(std::move(listener));
            }
        }
        if (ec) {
            const std::string what = (option == "listen" ? std::string() : opt + ": ") +
                                     "cannot listen on " + net_text(endpoint) + ": " + ec.message();
            if (addresses.size() == 1) {
                log::error(what);
                return {};
            }
            // A name may resolve to a family the host cannot bind (::1 without IPv6).
            log::warn(what + " (skipped: '" + host + "' has other addresses)");
            ec = {};
            continue;
        }
        for (size_t i = 0; i < made.size(); ++i) {
            listeners_[i].push_back(std::move(made[i]));
        }
        port = endpoint.port();
        bound.push_back(endpoint);
    }
    if (bound.empty()) {
        log::error(opt + ": nothing could be bound for '" + host + "'");
    }
    return bound;
}

}  // namespace infergate
