// The Responses API's stored turns: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items (docs/dialects.md, "Responses API"). The turns themselves are
// written by the generation exchange (Exchange::generate) through the store.

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

}  // namespace

Task<bool> Exchange::stored_response(std::string_view id) {
    ResponseStore& store = worker_.responses();
    if (request_.method_string() == "DELETE") {
        if (!store.erase(id)) {
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
    std::optional<std::string> body = store.response(id);
    if (!body) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(not_found(id));
    }
    co_return co_await client_.send(http::status::ok, std::move(*body));
}

Task<bool> Exchange::stored_input(std::string_view id) {
    std::optional<std::vector<std::string>> items = worker_.responses().input_items(id);
    if (!items) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_openai_error(not_found(id));
    }
    // {"object": "list", "data": [items, newest first as the API lists them by default],
    //  "first_id", "last_id", "has_more": false}. An item the client sent without an id is
    // listed with one made from the response's.
    const std::string_view own = id.starts_with("resp_") ? id.substr(5) : id;
    std::vector<std::string> ids;
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    w.StartObject();
    w.Key("object");
    w.String("list");
    w.Key("data");
    w.StartArray();
    for (size_t n = items->size(); n-- > 0;) {
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
        ids.emplace_back(doc["id"].GetString(), doc["id"].GetStringLength());
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
    w.Bool(false);
    w.EndObject();
    co_return co_await client_.send(http::status::ok, sb.GetString());
}

}  // namespace infergate
