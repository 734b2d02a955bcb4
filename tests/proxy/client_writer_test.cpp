// ClientWriter (proxy/client_writer.*) over a real loopback connection: what a client reads.
#include "proxy/client_writer.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "config/cors.hpp"
#include "proxy/client_request.hpp"
#include "proxy/deadlines.hpp"
#include "proxy/metrics.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/worker.hpp"
#include "tests/proxy/parse_util.hpp"
#include "translators/canonical/types.hpp"

namespace infergate {
namespace {

using test::parse_head;

std::shared_ptr<const config::Config> test_config() {
    auto c = std::make_shared<config::Config>();
    c->backends.emplace_back();
    c->backends[0].model = "m";
    return c;
}

// A worker, a connected pair of sockets on it (`peer` plays the client) and one ClientWriter for
// `head`'s request on the proxy's end.
struct Rig {
    std::shared_ptr<const config::Config> config = test_config();
    Metrics metrics{*config, 1};
    ConnectionBudget connections;
    Worker worker{0, config, nullptr, metrics, -1, connections};
    Socket peer{worker.io().get_executor()};
    Stream stream{worker.io().get_executor()};
    Deadline deadline{worker.deadlines()};
    ClientRequest request;
    RequestMeter meter{worker, "test-backend", 0};
    std::string request_id = "rid-1";
    std::unique_ptr<ClientWriter> writer;

    explicit Rig(std::string_view head) : request(parse_head(head)) {
        Acceptor acceptor(worker.io().get_executor(),
                          tcp::endpoint(net::ip::address_v4::loopback(), 0));
        peer.connect(acceptor.local_endpoint());
        acceptor.accept(stream.socket());
        deadline.attach(stream.socket());
        writer = std::make_unique<ClientWriter>(worker, stream, deadline, request, meter,
                                                request_id, std::chrono::milliseconds(5000));
    }

    // Runs `task` to its end on the worker's context; returns its result.
    bool run(Task<bool> task) {
        std::optional<bool> result;
        net::co_spawn(worker.io(), std::move(task),
                      [&](std::exception_ptr, bool r) { result = r; });
        for (int i = 0; i < 200 && !result; ++i) {
            worker.io().restart();
            worker.io().run_for(std::chrono::milliseconds(10));
        }
        REQUIRE(result.has_value());
        return *result;
    }

    // What the client has been sent so far.
    std::string received() {
        std::string out;
        char buf[4096];
        beast::error_code ec;
        while (peer.available(ec) > 0 && !ec) {
            const size_t n = peer.read_some(net::buffer(buf), ec);
            out.append(buf, n);
        }
        return out;
    }
};

}  // namespace

TEST_CASE("a whole answer: status line, the usual headers, Content-Length, then the body") {
    Rig rig("POST /v1/completions HTTP/1.1\r\nHost: h\r\n");
    CHECK(rig.run(rig.writer->send(http::status::ok, "{\"a\":1}")));
    const std::string got = rig.received();
    CHECK(got.starts_with("HTTP/1.1 200 OK\r\n"));
    CHECK(got.find("Server: infergate\r\n") != std::string::npos);
    CHECK(got.find("Content-Type: application/json\r\n") != std::string::npos);
    CHECK(got.find("X-Request-Id: rid-1\r\n") != std::string::npos);
    CHECK(got.find("Connection:") == std::string::npos);  // HTTP/1.1 keeps it by default
    CHECK(got.ends_with("Content-Length: 7\r\n\r\n{\"a\":1}"));
    CHECK(rig.meter.status() == 200);
}

TEST_CASE("HEAD gets GET's Content-Length and no body") {
    Rig rig("HEAD /v1/models HTTP/1.1\r\nHost: h\r\n");
    CHECK(rig.run(rig.writer->send(http::status::ok, "0123456789")));
    const std::string got = rig.received();
    CHECK(got.ends_with("Content-Length: 10\r\n\r\n"));
}

TEST_CASE("an error in a dialect's shape; Connection: close when the client asked for it") {
    Rig rig("POST /api/chat HTTP/1.1\r\nHost: h\r\nConnection: close\r\n");
    canonical::Error e;
    e.status = 404;
    e.message = "model 'x' not found";
    rig.writer->extra_headers().emplace_back("Allow", "GET");
    CHECK_FALSE(rig.run(
        rig.writer->send_error(translators::codec_for(canonical::Dialect::ollama_chat), e)));
    const std::string got = rig.received();
    CHECK(got.starts_with("HTTP/1.1 404 Not Found\r\n"));
    CHECK(got.find("Connection: close\r\n") != std::string::npos);
    CHECK(got.find("Allow: GET\r\n") != std::string::npos);
    CHECK(got.ends_with(R"({"error":"model 'x' not found"})"));
    CHECK(rig.meter.failure().message == e.message);
}

TEST_CASE("an HTTP/1.1 stream is chunked, one chunk per write, and ends with the last chunk") {
    Rig rig("POST /v1/completions HTTP/1.1\r\nHost: h\r\n");
    CHECK(rig.run(rig.writer->start_stream("text/event-stream")));
    CHECK(rig.run(rig.writer->write("data: {}\n\n")));
    CHECK(rig.run(rig.writer->end_stream()));
    CHECK(rig.writer->keep_alive());
    const std::string got = rig.received();
    CHECK(got.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
    CHECK(got.find("Cache-Control: no-cache\r\n") != std::string::npos);
    CHECK(got.ends_with("\r\n\r\na\r\ndata: {}\n\n\r\n0\r\n\r\n"));
}

TEST_CASE("an HTTP/1.0 stream is the raw bytes and ends with the connection") {
    Rig rig("POST /generate HTTP/1.0\r\nConnection: keep-alive\r\n");
    CHECK(rig.run(rig.writer->start_stream("text/event-stream")));
    CHECK(rig.run(rig.writer->write("data: {}\n\n")));
    CHECK(rig.run(rig.writer->end_stream()));
    CHECK_FALSE(rig.writer->keep_alive());
    const std::string got = rig.received();
    CHECK(got.starts_with("HTTP/1.0 200 OK\r\n"));
    CHECK(got.find("Transfer-Encoding") == std::string::npos);
    CHECK(got.find("Connection: keep-alive") == std::string::npos);
    CHECK(got.ends_with("\r\n\r\ndata: {}\n\n"));
}

// A CORS policy for `origins`, as the config loader prepares it.
config::Cors cors_for(std::vector<std::string> origins) {
    config::Cors c;
    c.allowed_origins = std::move(origins);
    std::vector<std::string> errors;
    std::vector<std::string> notes;
    config::prepare_cors(c, errors, notes);
    REQUIRE(errors.empty());
    return c;
}

TEST_CASE("CORS off: no CORS line at all") {
    Rig rig("POST /v1/completions HTTP/1.1\r\nHost: h\r\nOrigin: https://app.test\r\n");
    CHECK(rig.run(rig.writer->send(http::status::ok, "{}")));
    const std::string got = rig.received();
    CHECK(got.find("Access-Control-") == std::string::npos);
    CHECK(got.find("Vary") == std::string::npos);
}

TEST_CASE("CORS on: every head carries the lines, whole answers, errors and streams alike") {
    const config::Cors cors = cors_for({"https://app.test"});
    const std::string expected =
        "Access-Control-Allow-Origin: https://app.test\r\nVary: Origin\r\n"
        "Access-Control-Expose-Headers: x-request-id, retry-after, www-authenticate, allow, "
        "x-prompt-tokens, x-generated-tokens\r\n";
    {
        Rig rig("GET /v1/models HTTP/1.1\r\nHost: h\r\n");
        rig.writer->set_cors(&cors, cors.allow_origin("https://app.test"));
        CHECK(rig.run(rig.writer->send(http::status::ok, "{}")));
        const std::string got = rig.received();
        CHECK(got.find(expected) != std::string::npos);
        CHECK(got.find("\r\n\r\n") > got.find(expected));  // in the head
    }
    {
        Rig rig("POST /api/chat HTTP/1.1\r\nHost: h\r\n");
        rig.writer->set_cors(&cors, cors.allow_origin("https://app.test"));
        canonical::Error e;
        e.status = 429;
        e.message = "over the limit";
        rig.writer->extra_headers().emplace_back("Retry-After", "1");
        CHECK(rig.run(
            rig.writer->send_error(translators::codec_for(canonical::Dialect::ollama_chat), e)));
        const std::string got = rig.received();
        CHECK(got.starts_with("HTTP/1.1 429 "));
        CHECK(got.find("Retry-After: 1\r\n" + expected) != std::string::npos);
    }
    {
        Rig rig("POST /v1/completions HTTP/1.1\r\nHost: h\r\n");
        rig.writer->set_cors(&cors, cors.allow_origin("https://app.test"));
        CHECK(rig.run(rig.writer->start_stream("text/event-stream")));
        CHECK(rig.run(rig.writer->write("data: {}\n\n")));
        CHECK(rig.run(rig.writer->end_stream()));
        const std::string got = rig.received();
        CHECK(got.find(expected) != std::string::npos);
        CHECK(got.find(expected) < got.find("Transfer-Encoding: chunked\r\n"));
    }
}

TEST_CASE("CORS on, an origin not allowed: Vary only, no Access-Control line") {
    const config::Cors cors = cors_for({"https://app.test"});
    Rig rig("GET /v1/models HTTP/1.1\r\nHost: h\r\n");
    rig.writer->set_cors(&cors, cors.allow_origin("https://evil.test"));
    CHECK(rig.run(rig.writer->send(http::status::ok, "{}")));
    const std::string got = rig.received();
    CHECK(got.find("Vary: Origin\r\n") != std::string::npos);
    CHECK(got.find("Access-Control-") == std::string::npos);
}

TEST_CASE("a 204 has no Content-Length (RFC 9110 §8.6)") {
    Rig rig("OPTIONS /v1/models HTTP/1.1\r\nHost: h\r\n");
    CHECK(rig.run(rig.writer->send(http::status::no_content, std::string())));
    const std::string got = rig.received();
    CHECK(got.starts_with("HTTP/1.1 204 No Content\r\n"));
    CHECK(got.find("Content-Length") == std::string::npos);
    CHECK(got.ends_with("\r\n\r\n"));
}

TEST_CASE("a write to a client that left fails and marks the request client_disconnect") {
    Rig rig("POST /v1/completions HTTP/1.1\r\nHost: h\r\n");
    CHECK(rig.run(rig.writer->start_stream("text/event-stream")));
    rig.peer.set_option(net::socket_base::linger(true, 0));  // a reset, not a clean close
    rig.peer.close();
    bool ok = true;
    // The first write after a reset may still be accepted by the kernel; a later one is not.
    for (int i = 0; i < 50 && ok; ++i) {
        ok = rig.run(rig.writer->write(std::string(64 * 1024, 'x')));
    }
    CHECK_FALSE(ok);
    CHECK(rig.meter.outcome() == Outcome::client_disconnect);
}

}  // namespace infergate
