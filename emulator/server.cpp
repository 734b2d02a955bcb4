#include "emulator/server.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"

namespace infergate::emulator {
namespace {

namespace http = boost::beast::http;
constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);
constexpr std::size_t kMaxBody = 8u << 20;
constexpr std::uint32_t kMaxHeader = 64u << 10;

using ReusePort = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

void log_request(const Options& options, std::string_view method, std::string_view target,
                 std::chrono::steady_clock::time_point start) {
    if (options.quiet) {
        return;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    char line[512];
    const int len = std::snprintf(
        line, sizeof(line), "%.*s %.*s %.1fms\n", static_cast<int>(method.size()), method.data(),
        static_cast<int>(std::min<std::size_t>(target.size(), 300)), target.data(), ms);
    // One fwrite per line keeps lines from several threads whole.
    std::fwrite(line, 1, static_cast<std::size_t>(std::min<int>(len, sizeof(line) - 1)), stderr);
}

// Reads one request. Returns false when the connection is done (EOF, error, or an error answer
// that had to close it).
net::awaitable<bool> read_request(Conn& conn, boost::beast::flat_buffer& buffer,
                                  http::request_parser<http::string_body>& parser) {
    parser.header_limit(kMaxHeader);
    parser.body_limit(kMaxBody);
    auto [ec, n] = co_await http::async_read_header(conn.socket(), buffer, parser, kNoThrow);
    if (!ec && !parser.is_done()) {
        // curl waits a second for this before sending a large body.
        if (boost::beast::iequals(parser.get()[http::field::expect], "100-continue")) {
            co_await conn.write_raw("HTTP/1.1 100 Continue\r\n\r\n");
        }
        std::tie(ec, n) = co_await http::async_read(conn.socket(), buffer, parser, kNoThrow);
    }
    if (!ec) {
        co_return true;
    }
    conn.set_close_after_response(true);
    if (ec == http::error::body_limit) {
        co_await conn.send(413, kJson, R"({"detail":"Request body exceeds 8388608 bytes"})");
        co_await conn.drain_and_close();
    } else if (ec != http::error::end_of_stream && ec != net::error::eof &&
               ec != net::error::connection_reset && ec != net::error::operation_aborted &&
               buffer.size() > 0) {
        // uvicorn's answer to bytes that are not HTTP.
        co_await conn.send(400, kPlainText, "Invalid HTTP request received.");
        co_await conn.drain_and_close();
    }
    co_return false;
}

// What the real server's HTTP stack puts in `server`: uvicorn for the Python servers, nothing for
// axum (TGI) and Go's net/http (Ollama), llama.cpp's own fingerprint.
std::string_view server_header(Dialect dialect) {
    switch (dialect) {
        case Dialect::kTgi:
        case Dialect::kOllama:
        case Dialect::kAnthropic:
        case Dialect::kTei:
            return "";
        case Dialect::kLlamacpp:
            return "llama.cpp";
        default:
            return "uvicorn";
    }
}

net::awaitable<void> route(Request& req, Conn& conn, const Options& options) {
    switch (options.dialect) {
        case Dialect::kSglang:
            return route_sglang(req, conn, options);
        case Dialect::kTgi:
            return route_tgi(req, conn, options);
        case Dialect::kOllama:
            return route_ollama(req, conn, options);
        case Dialect::kLlamacpp:
            return route_llamacpp(req, conn, options);
        case Dialect::kVllmLegacy:
            return route_vllm_legacy(req, conn, options);
        case Dialect::kAnthropic:
            return route_anthropic(req, conn, options);
        case Dialect::kTei:
            return route_tei(req, conn, options);
        default:
            return route_openai(req, conn, options);
    }
}

net::awaitable<void> run_session(tcp::socket socket, const Options& options, Replica& replica) {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    Conn conn(std::move(socket));
    conn.set_server_header(server_header(options.dialect));
    boost::beast::flat_buffer buffer;
    EventList events;  // reused by every stream on this connection
    try {
        // Answers to requests that could not be read keep the CLI's style but no 1xx: there is
        // no request a 1xx could belong to.
        WireStyle unread_style = options.defaults.wire;
        unread_style.interim = 0;
        for (;;) {
            http::request_parser<http::string_body> parser;
            conn.set_wire_style(unread_style);
            if (!co_await read_request(conn, buffer, parser)) {
                break;
            }
            const auto& msg = parser.get();
            conn.set_close_after_response(!msg.keep_alive());
            Request req;
            req.received = std::chrono::steady_clock::now();
            req.events = &events;
            req.replica = &replica;
            req.method = msg.method();
            req.http = &msg;
            const std::string_view target(msg.target().data(), msg.target().size());
            req.path = target.substr(0, target.find('?'));
            req.body = msg.body();
            std::string knob_error;
            const bool knobs_ok = resolve_knobs(msg, options.defaults, req.knobs, knob_error);
            WireStyle style = knobs_ok ? req.knobs.wire : options.defaults.wire;
            if (msg.version() < 11) {
                style.interim = 0;  // RFC 9110 15.2: no 1xx to an HTTP/1.0 client
            }
            conn.set_wire_style(style);
            if (!knobs_ok) {
                std::string body;
                JsonWriter w(body);  // the header's value may hold quotes
                w.StartObject();
                w.kv("detail", knob_error);
                w.EndObject();
                co_await conn.send(400, kJson, body);
            } else {
                co_await route(req, conn, options);
            }
            log_request(options, msg.method_string(), target, req.received);
            if (!conn.is_open() || conn.close_after_response()) {
                break;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "session error: %s\n", e.what());
        conn.reset();
    }
    if (conn.is_open()) {
        conn.close_clean();
    }
}

net::awaitable<void> accept_loop(tcp::acceptor& acceptor, const Options& options,
                                 Replica& replica) {
    net::steady_timer backoff(acceptor.get_executor());
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
        if (ec == net::error::operation_aborted || !acceptor.is_open()) {
            co_return;
        }
        if (ec) {
            // Out of descriptors and the like: do not spin, try again shortly.
            backoff.expires_after(std::chrono::milliseconds(10));
            co_await backoff.async_wait(kNoThrow);
            continue;
        }
        net::co_spawn(acceptor.get_executor(), run_session(std::move(socket), options, replica),
                      net::detached);
    }
}

}  // namespace

Server::Server(Options options)
    : options_(std::move(options)), replica_(std::make_unique<Replica>(options_)) {
    for (int i = 0; i < options_.threads; ++i) {
        contexts_.push_back(std::make_unique<net::io_context>(1));
    }
}

Server::~Server() = default;

std::uint16_t Server::bind() {
    tcp::resolver resolver(*contexts_[0]);
    const tcp::endpoint first =
        resolver.resolve(options_.host, std::to_string(options_.port)).begin()->endpoint();
    std::uint16_t port = options_.port;
    for (auto& context : contexts_) {
        auto acceptor = std::make_unique<tcp::acceptor>(*context);
        const tcp::endpoint endpoint(first.address(), port);
        acceptor->open(endpoint.protocol());
        acceptor->set_option(tcp::acceptor::reuse_address(true));
        if (contexts_.size() > 1) {
            // Only with several listeners: one alone must not silently share its port.
            acceptor->set_option(ReusePort(true));
        }
        acceptor->bind(endpoint);
        acceptor->listen(net::socket_base::max_listen_connections);
        port = acceptor->local_endpoint().port();  // the ephemeral port, reused by the rest
        acceptors_.push_back(std::move(acceptor));
    }
    options_.port = port;
    return port;
}

void Server::run() {
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
        net::co_spawn(*contexts_[i], accept_loop(*acceptors_[i], options_, *replica_),
                      net::detached);
    }
    net::signal_set signals(*contexts_[0], SIGINT, SIGTERM);
    signals.async_wait([this](const boost::system::error_code& ec, int) {
        if (!ec) {
            stop();
        }
    });
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < contexts_.size(); ++i) {
        threads.emplace_back([context = contexts_[i].get()] { context->run(); });
    }
    contexts_[0]->run();
    for (auto& t : threads) {
        t.join();
    }
}

void Server::stop() {
    for (auto& context : contexts_) {
        context->stop();
    }
}

}  // namespace infergate::emulator
