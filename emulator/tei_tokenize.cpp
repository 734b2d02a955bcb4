// TEI's POST /tokenize and POST /decode (router/src/http/server.rs tokenize / decode,
// core/src/tokenization.rs into_tokens and decode_ids), on tokenizer.hpp.
#include <algorithm>

#include "emulator/json_util.hpp"
#include "emulator/tei.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {

using rapidjson::Value;

net::awaitable<void> handle_tei_tokenize(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    TeiRejection rejection;
    std::vector<std::string_view> texts;
    bool batch = false;
    std::optional<std::string> prompt_name;
    if (!parse_json(req.body, doc)) {
        rejection = tei_syntax_error(req.body, doc);
    } else if (!doc.IsObject()) {
        rejection = tei_shape_error(
            req.body, "invalid type: " + serde_type(doc) + ", expected struct TokenizeRequest");
    } else if (const Value* inputs = member(doc, "inputs"); inputs == nullptr) {
        rejection = tei_shape_error(req.body, "missing field `inputs`");
    } else if (inputs->IsString()) {
        texts.emplace_back(inputs->GetString(), inputs->GetStringLength());
    } else if (inputs->IsArray()) {
        batch = true;
        for (const Value& item : inputs->GetArray()) {
            if (!item.IsString()) {
                rejection =
                    tei_shape_error(req.body,
                                    "inputs: data did not match any variant of untagged enum "
                                    "TokenizeInput");
                break;
            }
            texts.emplace_back(item.GetString(), item.GetStringLength());
        }
    } else {
        rejection = tei_shape_error(
            req.body, "inputs: data did not match any variant of untagged enum TokenizeInput");
    }
    if (rejection.status == 0) {
        bool flag = true;
        if (get_bool(doc, "add_special_tokens", flag) == Lookup::kWrongType) {
            rejection =
                tei_shape_error(req.body, "add_special_tokens: invalid type: " +
                                              serde_type(*member(doc, "add_special_tokens")) +
                                              ", expected a boolean");
        }
        if (const Value* p = member(doc, "prompt_name"); p != nullptr && !p->IsNull()) {
            if (p->IsString()) {
                prompt_name.emplace(p->GetString(), p->GetStringLength());
            } else {
                rejection =
                    tei_shape_error(req.body, "prompt_name: invalid type: " + serde_type(*p) +
                                                  ", expected a string");
            }
        }
    }
    if (rejection.status != 0) {
        co_await conn.send(rejection.status, kPlainText, rejection.message);
        co_return;
    }
    auto fail = [&](const TeiFailure& f) -> net::awaitable<void> {
        co_await conn.send(tei_error_status(f.type), kJson, tei_error_body(f, false));
    };
    if (const TeiFailure f = tei_batch_error(batch, texts.size())) {
        co_await fail(f);
        co_return;
    }
    std::string body;
    JsonWriter w(body);
    w.StartArray();  // TokenizeResponse(Vec<Vec<SimpleToken>>): nested even for one input
    for (std::string_view text : texts) {
        if (text.empty()) {
            co_await fail(tei_empty_input("`inputs` cannot be empty"));
            co_return;
        }
        std::string input;
        if (const TeiFailure f =
                tei_prompt_text(options, prompt_name ? &*prompt_name : nullptr, input)) {
            co_await fail(f);
            co_return;
        }
        input += text;
        w.StartArray();
        for (const Token& t : tokenize(input)) {
            w.StartObject();
            w.kv_int("id", t.id);
            if (t.special) {
                // A special token: its own text, no offsets.
                w.kv("text", t.piece);
                w.kv_bool("special", true);
                w.kv_null("start");
                w.kv_null("stop");
            } else {
                w.kv("text",
                     to_valid_utf8(std::string_view(input).substr(t.start, t.stop - t.start)));
                w.kv_bool("special", false);
                w.kv_int("start", static_cast<std::int64_t>(t.start));
                w.kv_int("stop", static_cast<std::int64_t>(t.stop));
            }
            w.EndObject();
        }
        w.EndArray();
    }
    w.EndArray();
    co_await conn.send(200, kJson, body);
}

net::awaitable<void> handle_tei_decode(Request& req, Conn& conn) {
    rapidjson::Document doc;
    TeiRejection rejection;
    std::vector<std::vector<std::int64_t>> lists;
    bool skip_special = true;
    auto read_ids = [](const Value& v, std::vector<std::int64_t>& out) {
        if (!v.IsArray()) {
            return false;
        }
        for (const Value& id : v.GetArray()) {
            if (!id.IsUint()) {
                return false;
            }
            out.push_back(id.GetUint());
        }
        return true;
    };
    if (!parse_json(req.body, doc)) {
        rejection = tei_syntax_error(req.body, doc);
    } else if (!doc.IsObject()) {
        rejection = tei_shape_error(
            req.body, "invalid type: " + serde_type(doc) + ", expected struct DecodeRequest");
    } else if (const Value* ids = member(doc, "ids"); ids == nullptr) {
        rejection = tei_shape_error(req.body, "missing field `ids`");
    } else {
        // InputIds: Single(Vec<u32>) | Batch(Vec<Vec<u32>>), untagged: [] is a Single.
        std::vector<std::int64_t> single;
        if (read_ids(*ids, single)) {
            lists.push_back(std::move(single));
        } else if (ids->IsArray()) {
            for (const Value& list : ids->GetArray()) {
                if (!read_ids(list, lists.emplace_back())) {
                    rejection = tei_shape_error(
                        req.body, "ids: data did not match any variant of untagged enum InputIds");
                    break;
                }
            }
            if (rejection.status == 0 && lists.empty()) {
                lists.emplace_back();
            }
        } else {
            rejection = tei_shape_error(
                req.body, "ids: data did not match any variant of untagged enum InputIds");
        }
        if (rejection.status == 0 &&
            get_bool(doc, "skip_special_tokens", skip_special) == Lookup::kWrongType) {
            rejection =
                tei_shape_error(req.body, "skip_special_tokens: invalid type: " +
                                              serde_type(*member(doc, "skip_special_tokens")) +
                                              ", expected a boolean");
        }
    }
    if (rejection.status != 0) {
        co_await conn.send(rejection.status, kPlainText, rejection.message);
        co_return;
    }
    if (const TeiFailure f = tei_batch_error(true, lists.size()); f && !lists.empty()) {
        co_await conn.send(tei_error_status(f.type), kJson, tei_error_body(f, false));
        co_return;
    }
    std::string body;
    JsonWriter w(body);
    w.StartArray();  // DecodeResponse(Vec<String>)
    for (const auto& ids : lists) {
        if (ids.empty()) {
            const TeiFailure f = tei_empty_input("`input_ids` cannot be empty");
            co_await conn.send(tei_error_status(f.type), kJson, tei_error_body(f, false));
            co_return;
        }
        w.str(to_valid_utf8(detokenize(ids, skip_special)));
    }
    w.EndArray();
    co_await conn.send(200, kJson, body);
}

}  // namespace infergate::emulator
