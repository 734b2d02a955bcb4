// The Responses API's stored turns: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items (docs/dialects.md, "Responses API"). The turns themselves are
// written by the generation exchange (Exchange::generate) through the store.

#include <charconv>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "proxy/exchange.hpp"
#include "proxy/response_store.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

canonical::Error not_found(std::string_view id) {
    canonical::Error e;
    e.status = 404;
    e.message = "Response with id '" + std::string(id.substr(0, 200)) +
                "' not found. It was never stored (store: false), was deleted, or has expired "
                "(responses.store limits; each infergate process keeps its own)";
    e.param = "response_id";
    return e;
}

// One query parameter's value (`name=value` between '?'/'&'), undecoded; nullopt if absent.
std::optional<std::string_view> query_value(std::string_view target, std::string_view name) {
    const size_t q = target.find('?');
    if (q == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const size_t amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        const size_t eq = pair.find('=');
        if (pair.substr(0, eq) == name) {
            return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
        }
    }
    return std::nullopt;
}

canonical::Error bad_query(std::string_view param, std::string message) {
    canonical::Error e;
    e.status = 400;
    e.message = std::move(message);
    e.param = std::string(param);
    return e;
}

}  // namespace

Task<bool> Exchange::stored_response(std::string_view id) {
    ResponseStore& store = worker_.responses();
    if (request_.method_string() == "DELETE") {
        if (!store.erase(id, meter_.key_name())) {
            meter_.set_outcome(Outcome::rejected);
            co_return co_await client_.send_openai_error(not_found(id));
        }
        rapidjson::StringBuffer sb;
        rapidjson::Writer<rapidjson::StringBuffer> w(sb);
        w.StartObject();
        w.Key("id");
        w.String(id.data(), static_cast<rapidjson::SizeType>(id.size()));
        w.Key("object");
        w.String("response");
        w.Key("deleted");
        w.Bool(true);
        w.EndObject();
        co_return co_await client_.send(http::status::ok, sb.GetString());
    }
    std::optional<std::string> body = store.response(id, meter_.key_name());
    if (!body) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(not_found(id));
    }
    co_return co_await client_.send(http::status::ok, std::move(*body));
}

Task<bool> Exchange::stored_input(std::string_view id) {
    std::optional<std::vector<std::string>> items =
        worker_.responses().input_items(id, meter_.key_name());
    if (!items) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(not_found(id));
    }
    // Query: order (desc, the default, or asc), limit (1..100, default 20), after (an item id:
    // the page after it), as OpenAI's list endpoints take them; `include` adds nothing here
    // (the items are kept whole).
    const std::string_view target = request_.target();
    const std::string_view order = query_value(target, "order").value_or("desc");
    if (order != "asc" && order != "desc") {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(bad_query(
            "order",
            "'order' must be asc or desc, not '" + std::string(order.substr(0, 50)) + "'"));
    }
    size_t limit = 20;
    if (const auto v = query_value(target, "limit")) {
        size_t n = 0;
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (ec != std::errc() || end != v->data() + v->size() || n < 1 || n > 100) {
            meter_.set_outcome(Outcome::rejected);
            co_return co_await client_.send_openai_error(
                bad_query("limit", "'limit' must be an integer from 1 to 100"));
        }
        limit = n;
    }
    const std::string_view after = query_value(target, "after").value_or("");
    // {"object": "list", "data": [the page's items], "first_id", "last_id", "has_more"}. An
    // item the client sent without an id is listed with one made from the response's.
    const std::string_view own = id.starts_with("resp_") ? id.substr(5) : id;
    std::vector<std::string> ids;
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    w.StartObject();
    w.Key("object");
    w.String("list");
    w.Key("data");
    w.StartArray();
    bool started = after.empty();
    bool more = false;
    for (size_t k = 0; k < items->size(); ++k) {
        const size_t n = order == "desc" ? items->size() - 1 - k : k;
        rapidjson::Document doc;
        doc.Parse((*items)[n].data(), (*items)[n].size());
        if (doc.HasParseError() || !doc.IsObject()) {
            continue;
        }
        if (!doc.HasMember("id") || !doc["id"].IsString()) {
            const std::string made = "msg_" + std::string(own) + "_in" + std::to_string(n);
            doc.RemoveMember("id");
            doc.AddMember("id", rapidjson::Value(made.c_str(), doc.GetAllocator()),
                          doc.GetAllocator());
        }
        const std::string_view item_id(doc["id"].GetString(), doc["id"].GetStringLength());
        if (!started) {
            started = item_id == after;
            continue;
        }
        if (ids.size() == limit) {
            more = true;
            break;
        }
        ids.emplace_back(item_id);
        doc.Accept(w);
    }
    w.EndArray();
    w.Key("first_id");
    if (ids.empty()) {
        w.Null();
    } else {
        w.String(ids.front().c_str());
    }
    w.Key("last_id");
    if (ids.empty()) {
        w.Null();
    } else {
        w.String(ids.back().c_str());
    }
    w.Key("has_more");
    w.Bool(more);
    w.EndObject();
    co_return co_await client_.send(http::status::ok, sb.GetString());
}

}  // namespace infergate
