#include <doctest/doctest.h>

#include "config/config.hpp"

using namespace infergate::config;

namespace {

Config base() {
    auto r = load_yaml_text(
        "backends:\n  - url: http://127.0.0.1:8000\n    dialect: openai\n"
        "    model: m\nmodels:\n  aliases:\n    a: m\n");
    REQUIRE(r.config);
    return *r.config;
}

}  // namespace

TEST_CASE("diff: equal configs change nothing") {
    const Config a = base();
    const ConfigChanges c = diff(a, a);
    CHECK(c.applied.empty());
    CHECK(c.needs_restart.empty());
    CHECK_FALSE(c.backend_changed);
}

TEST_CASE("diff: an alias is applied, the backend's pool is kept") {
    const Config a = base();
    Config b = a;
    b.aliases.push_back(Alias{"b", "m"});
    const ConfigChanges c = diff(a, b);
    REQUIRE(c.applied.size() == 1);
    CHECK(c.applied[0] == "models.aliases");
    CHECK_FALSE(c.backend_changed);
}

TEST_CASE("diff: backends are matched by name; a changed one starts over, routing follows") {
    const Config a = base();
    Config b = a;
    b.backends[0].timeouts.connect_ms = 1;
    ConfigChanges c = diff(a, b);
    CHECK(c.backend_changed);
    CHECK(c.routing_changed);
    CHECK(c.applied == std::vector<std::string>{"backends[0]"});
    b = a;
    b.backends.push_back(a.backends[0]);
    b.backends[1].name = "second";
    c = diff(a, b);
    CHECK(c.applied == std::vector<std::string>{"backends[1] (added)"});
    c = diff(b, a);
    CHECK(c.applied == std::vector<std::string>{"backends: 'second' removed"});
    b = a;
    b.backends[0].name = "renamed";
    c = diff(a, b);
    CHECK(c.applied ==
          std::vector<std::string>{"backends[0] (added)", "backends: '" + a.backends[0].name +
                                                              "' removed"});
    b = a;
    b.routing.max_imbalance = 9;
    c = diff(a, b);
    CHECK_FALSE(c.backend_changed);
    CHECK(c.routing_changed);
    CHECK(c.applied == std::vector<std::string>{"routing"});
}

TEST_CASE("diff: listen, admin_listen, threads, access_log need a restart and are kept") {
    const Config a = base();
    Config b = a;
    b.listen_port = 1;
    b.admin_host = "127.0.0.1";
    b.admin_port = 2;
    b.threads = 4;
    b.access_log = "off";
    b.max_connections = 10;
    b.client_idle_ms = 5;
    const ConfigChanges c = diff(a, b);
    CHECK(c.needs_restart == std::vector<std::string>{"listen", "admin_listen", "threads",
                                                      "access_log", "limits.max_connections"});
    CHECK(c.applied == std::vector<std::string>{"client_idle_ms"});
    const Config kept = keep_restart_values(a, b);
    CHECK(kept.listen_port == a.listen_port);
    CHECK(kept.admin_host.empty());
    CHECK(kept.threads == a.threads);
    CHECK(kept.access_log == a.access_log);
    CHECK(kept.max_connections == a.max_connections);
    CHECK(kept.client_idle_ms == 5);
    CHECK(diff(a, kept).needs_restart.empty());
}

TEST_CASE("diff: client keys changed") {
    const Config a = base();
    Config b = a;
    b.auth.keys.push_back(ClientKey{"k", "secret"});
    CHECK(diff(a, b).applied == std::vector<std::string>{"auth"});
}
