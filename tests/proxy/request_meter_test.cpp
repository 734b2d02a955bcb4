#include <doctest/doctest.h>

#include <string>

#include "proxy/request_meter.hpp"

using infergate::Failure;
using infergate::failure_line;
using infergate::request_failed;

TEST_CASE("which requests failed") {
    CHECK_FALSE(request_failed(200, "ok"));
    CHECK_FALSE(request_failed(304, "ok"));
    CHECK(request_failed(400, "rejected"));
    CHECK(request_failed(404, "ok"));  // an unknown route ends "ok" for the exchange
    CHECK(request_failed(502, "upstream_error"));
    CHECK(request_failed(200, "truncated"));  // the stream had begun: status 200, yet it failed
    CHECK(request_failed(200, "inband_error"));
    CHECK(request_failed(499, "client_disconnect"));
    CHECK(request_failed(0, "timeout"));
}

TEST_CASE("the failure line names the request, the outcome, the stage and the message") {
    const Failure f{"the backend refused the connection; is the inference server running?",
                    "connecting", "http://127.0.0.1:9"};
    CHECK(failure_line("abc123", 502, "upstream_error", f) ==
          "request failed: id=\"abc123\" status=502 outcome=upstream_error stage=\"connecting\" "
          "backend=\"http://127.0.0.1:9\" message=\"the backend refused the connection; is the "
          "inference server running?\"");
    CHECK(failure_line("r1", 499, "client_disconnect", Failure{}) ==
          "request failed: id=\"r1\" status=499 outcome=client_disconnect");
}

TEST_CASE("the failure line stays one bounded line whatever the message and id hold") {
    // A client's id and a message quoting the client's bytes may hold anything.
    const Failure f{"bad \"value\"\nsecond line\t\x01 end", "", ""};
    const std::string line = failure_line("id\nwith \"quotes\"", 400, "rejected", f);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.find('\x01') == std::string::npos);
    CHECK(line ==
          "request failed: id=\"id\\nwith \\\"quotes\\\"\" status=400 outcome=rejected "
          "message=\"bad \\\"value\\\"\\nsecond line\\t\\u0001 end\"");
    const std::string huge = failure_line(
        "x", 502, "upstream_error", Failure{std::string(5000, 'm'), "reading the stream", ""});
    CHECK(huge.size() < 1200);
    CHECK(huge.find("m...\"") != std::string::npos);
}
