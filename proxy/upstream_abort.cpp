#include "proxy/upstream_abort.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "proxy/backend_probe_http.hpp"
#include "proxy/log.hpp"
#include "proxy/upstream_parser.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

std::string abort_body(const std::string& rid) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    w.Key("rid");
    w.String(rid.data(), static_cast<rapidjson::SizeType>(rid.size()));
    w.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize());
}

Task<void> send_aborts(std::shared_ptr<UpstreamPool> pool, std::vector<std::string> rids) {
    const config::Backend& b = pool->backend();
    for (const std::string& rid : rids) {
        beast::error_code ec;
        bool reused = false;
        auto conn = co_await pool->acquire(ec, reused);
        if (ec) {
            log::debug("abort of rid " + rid + " not sent: " + ec.message());
            co_return;
        }
        http::request<http::string_body> req{http::verb::post, b.url.base_path + "/abort_request",
                                             11};
        req.set(http::field::host, b.url.authority());
        req.set(http::field::user_agent, "infergate");
        req.set(http::field::content_type, "application/json");
        if (!b.api_key.empty()) {
            req.set(http::field::authorization, "Bearer " + b.api_key);
        } else if (!b.url.basic_auth.empty()) {
            req.set(http::field::authorization, "Basic " + b.url.basic_auth);
        }
        req.body() = abort_body(rid);
        req.prepare_payload();
        conn->deadline().arm(std::chrono::seconds(2));
        probe::WholeResponse parser;
        if (auto e = co_await probe::round_trip(*conn, req, parser, 64 * 1024)) {
            log::debug("abort of rid " + rid + " failed: " + e.message());
            conn->close();
            continue;
        }
        log::debug("abort of rid " + rid + ": HTTP " + std::to_string(parser->get().result_int()));
        if (parser->keep_alive()) {
            pool->release(std::move(conn));
        }
    }
}

}  // namespace

void abort_sglang_requests(Worker& worker, std::shared_ptr<UpstreamPool> pool,
                           std::vector<std::string> rids) {
    net::co_spawn(worker.io(), send_aborts(std::move(pool), std::move(rids)), net::detached);
}

}  // namespace infergate
