// ClientAuth (proxy/client_auth.*): which key a request presents, and each key's limits.
#include "proxy/client_auth.hpp"

#include <doctest/doctest.h>

#include <string>

#include "proxy/client_request.hpp"
#include "tests/proxy/parse_util.hpp"

namespace infergate {

namespace {

config::Auth keys() {
    config::Auth a;
    a.keys_file = "(test)";
    a.keys.push_back({"team-a", "sk-aaaaaaaaaaaa", 0, 0});
    a.keys.push_back({"team-b", "sk-bbbbbbbbbbbb", 2, 1});
    return a;
}

}  // namespace

TEST_CASE("the key a request presents: Bearer, x-api-key or api-key") {
    using test::parse_head;
    CHECK(ClientAuth::presented(parse_head("GET / HTTP/1.1\r\nHost: h\r\n"
                                           "Authorization: bearer  sk-1\r\n")) == "sk-1");
    CHECK(ClientAuth::presented(parse_head("GET / HTTP/1.1\r\nHost: h\r\nx-api-key: sk-2\r\n")) ==
          "sk-2");
    CHECK(ClientAuth::presented(parse_head("GET / HTTP/1.1\r\nHost: h\r\napi-key: sk-3\r\n")) ==
          "sk-3");
    // Basic credentials are not a key.
    CHECK(ClientAuth::presented(parse_head("GET / HTTP/1.1\r\nHost: h\r\n"
                                           "Authorization: Basic dTpw\r\n"))
              .empty());
}

TEST_CASE("find: only a configured key, whole") {
    ClientAuth auth(keys());
    CHECK(auth.enabled());
    CHECK(auth.find("sk-aaaaaaaaaaaa") == 0);
    CHECK(auth.find("sk-bbbbbbbbbbbb") == 1);
    CHECK(auth.name(1) == "team-b");
    CHECK(auth.find("sk-aaaaaaaaaaa") == -1);    // a prefix
    CHECK(auth.find("sk-aaaaaaaaaaaaa") == -1);  // longer
    CHECK(auth.find("") == -1);
    CHECK_FALSE(ClientAuth(config::Auth{}).enabled());
}

TEST_CASE("limits: requests per second (with a one-second burst) and generations in flight") {
    ClientAuth auth(keys());
    int retry = 0;
    // No limits on team-a.
    for (int i = 0; i < 100; ++i) {
        REQUIRE(auth.admit(0, retry) == ClientAuth::Admission::ok);
    }
    // team-b: one in flight at a time.
    CHECK(auth.admit(1, retry) == ClientAuth::Admission::ok);
    CHECK(auth.admit(1, retry) == ClientAuth::Admission::too_many_in_flight);
    CHECK(retry == 1);
    auth.release(1);
    // Two per second: the burst of two is used now (one above and this one).
    CHECK(auth.admit(1, retry) == ClientAuth::Admission::ok);
    auth.release(1);
    CHECK(auth.admit(1, retry) == ClientAuth::Admission::rate_limited);
    CHECK(retry == 1);
    const std::string text = auth.render();
    CHECK(text.find("infergate_client_key_limited_total{key=\"team-b\",limit=\"rps\"} 1\n") !=
          std::string::npos);
    CHECK(text.find(
              "infergate_client_key_limited_total{key=\"team-b\",limit=\"max_concurrent\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("sk-") == std::string::npos);
}

TEST_CASE("the scrape counts requests by key name and refusals by reason") {
    ClientAuth auth(keys());
    auth.count_request(0);
    auth.count_request(0);
    auth.count_refusal(ClientAuth::Refusal::missing);
    auth.count_refusal(ClientAuth::Refusal::invalid);
    auth.count_refusal(ClientAuth::Refusal::invalid);
    const std::string text = auth.render();
    CHECK(text.find("infergate_client_key_requests_total{key=\"team-a\"} 2\n") !=
          std::string::npos);
    CHECK(text.find("infergate_client_key_requests_total{key=\"team-b\"} 0\n") !=
          std::string::npos);
    CHECK(text.find("infergate_auth_failures_total{reason=\"missing\"} 1\n") != std::string::npos);
    CHECK(text.find("infergate_auth_failures_total{reason=\"invalid\"} 2\n") != std::string::npos);
    CHECK(ClientAuth(config::Auth{}).render().empty());
}

TEST_CASE("a reload keeps each key's counts and generations in flight by name") {
    ClientAuth before(keys());
    int retry = 0;
    before.count_request(0);
    before.count_refusal(ClientAuth::Refusal::missing);
    REQUIRE(before.admit(1, retry) == ClientAuth::Admission::ok);  // team-b: one in flight
    config::Auth next = keys();
    next.keys[1].key = "sk-bbbbbbbbbbbb-rotated";  // same name, new key
    next.keys.erase(next.keys.begin());            // team-a removed
    next.keys.push_back({"team-c", "sk-cccccccccccc", 0, 0});
    ClientAuth after(next, &before);
    // team-b's generation admitted before the reload still counts against max_concurrent 1.
    CHECK(after.admit(0, retry) == ClientAuth::Admission::too_many_in_flight);
    before.release(1);  // it ends, released where it was admitted
    CHECK(after.admit(0, retry) == ClientAuth::Admission::ok);
    CHECK(after.find("sk-bbbbbbbbbbbb") == -1);
    CHECK(after.find("sk-bbbbbbbbbbbb-rotated") == 0);
    CHECK(after.find("sk-aaaaaaaaaaaa") == -1);
    after.count_request(1);
    const std::string text = after.render();
    CHECK(text.find(
              "infergate_client_key_limited_total{key=\"team-b\",limit=\"max_concurrent\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("infergate_client_key_requests_total{key=\"team-c\"} 1\n") !=
          std::string::npos);
    CHECK(text.find("team-a") == std::string::npos);
    CHECK(text.find("infergate_auth_failures_total{reason=\"missing\"} 1\n") != std::string::npos);
}

}  // namespace infergate
