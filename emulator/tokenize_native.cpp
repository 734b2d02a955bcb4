// llama.cpp's POST /tokenize, /detokenize and /apply-template (examples/server/server.cpp at
// c392e509) and TGI's POST /tokenize (router/src/server.rs, encoding_to_tokens), on
// tokenizer.hpp. TEI's /tokenize and /decode are in tei_tokenize.cpp.
#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

std::string_view json_kind(const Value& v) {
    return v.IsNumber()   ? "number"
           : v.IsBool()   ? "boolean"
           : v.IsNull()   ? "null"
           : v.IsArray()  ? "array"
           : v.IsString() ? "string"
                          : "object";
}

}  // namespace

net::awaitable<void> handle_llamacpp_tokens(Request& req, Conn& conn, LlamaTokenRoute route) {
    auto fail = [&](int status, std::string_view message) -> net::awaitable<void> {
        std::string body;
        render_llamacpp_error(status, message, body);
        co_await conn.send(status, kLlamaJson, body);
    };
    rapidjson::Document doc;
    if (!parse_json(req.body, doc)) {
        co_await fail(500,
                      "[json.exception.parse_error.101] parse error: syntax error while "
                      "parsing value");
        co_return;
    }
    const bool object = doc.IsObject();
    std::string body;
    JsonWriter w(body);
    if (route == LlamaTokenRoute::kTokenize) {
        const Value* content = object ? member(doc, "content") : nullptr;
        std::vector<std::pair<std::int64_t, std::string>> tokens;  // id, piece
        if (content != nullptr) {
            // tokenize_mixed(): a string, or strings and ids mixed; special tokens parsed.
            auto add_text = [&](std::string_view text) {
                for (Token& t : tokenize(text)) {
                    tokens.emplace_back(t.id, std::move(t.piece));
                }
            };
            if (content->IsString()) {
                add_text({content->GetString(), content->GetStringLength()});
            } else if (content->IsArray()) {
                for (const Value& item : content->GetArray()) {
                    if (item.IsString()) {
                        add_text({item.GetString(), item.GetStringLength()});
                    } else if (item.IsInt64()) {
                        const std::int64_t id = item.GetInt64();
                        tokens.emplace_back(id, id_piece(id).value_or(std::string()));
                    } else {
                        co_await fail(500,
                                      "[json.exception.type_error.302] type must be number, "
                                      "but is " +
                                          std::string(json_kind(item)));
                        co_return;
                    }
                }
            } else {
                co_await fail(500, "[json.exception.type_error.302] type must be string, but is " +
                                       std::string(json_kind(*content)));
                co_return;
            }
        }
        bool with_pieces = false;
        get_bool(doc, "with_pieces", with_pieces);
        w.StartObject();
        w.key("tokens");
        w.StartArray();
        for (const auto& [id, piece] : tokens) {
            if (!with_pieces) {
                w.Int64(id);
                continue;
            }
            w.StartObject();
            w.kv_int("id", id);
            w.key("piece");
            if (is_valid_utf8(piece)) {
                w.str(piece);
            } else {
                // Not valid UTF-8 (a byte token): the piece's bytes as numbers.
                w.StartArray();
                for (unsigned char c : piece) {
                    w.Int(c);
                }
                w.EndArray();
            }
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    } else if (route == LlamaTokenRoute::kDetokenize) {
        std::string content;
        if (const Value* tokens = object ? member(doc, "tokens") : nullptr) {
            bool overflow = false;
            const auto ids = id_list(*tokens, overflow);
            if (!ids) {
                co_await fail(500, "[json.exception.type_error.302] type must be array, but is " +
                                       std::string(json_kind(*tokens)));
                co_return;
            }
            content = detokenize(*ids, false);  // special tokens rendered
        }
        w.StartObject();
        w.kv("content", to_valid_utf8(content));  // dump with error_handler_t::replace
        w.EndObject();
    } else {
        const Value* messages = object ? member(doc, "messages") : nullptr;
        ChatTokens chat;
        if (messages == nullptr) {
            co_await fail(500, "[json.exception.out_of_range.403] key 'messages' not found");
            co_return;
        }
        if (!chat_from_messages(*messages, chat)) {
            const std::string text = compact_json(*messages);
            co_await fail(500,
                          "Failed to parse messages: Expected 'messages' to be an array, "
                          "got " +
                              text + "; messages = " + text);
            co_return;
        }
        std::string prompt;
        for (const Token& t : chat.finish()) {
            prompt += t.piece;
        }
        w.StartObject();
        w.kv("prompt", prompt);
        w.EndObject();
    }
    co_await conn.send(200, kLlamaJson, body);
}

net::awaitable<void> handle_tgi_tokenize(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    TgiRequest tr;
    const TgiError error = parse_tgi_request(req.body, doc, doc_ok, false, options, tr);
    if (error.kind == TgiError::kSyntax || error.kind == TgiError::kShape) {
        // axum's Json rejection; /tokenize runs none of validation.rs's checks.
        co_await conn.send(error.kind == TgiError::kSyntax ? 400 : 422, kPlainText, error.message);
        co_return;
    }
    std::string body;
    JsonWriter w(body);
    w.StartArray();
    for (const Token& t : tokenize(tr.inputs)) {
        w.StartObject();
        w.kv_int("id", t.id);
        // String::from_utf8_lossy of the input's bytes at the token's offsets.
        w.kv("text", to_valid_utf8(tr.inputs.substr(t.start, t.stop - t.start)));
        w.kv_int("start", static_cast<std::int64_t>(t.start));
        w.kv_int("stop", static_cast<std::int64_t>(t.stop));
        w.EndObject();
    }
    w.EndArray();
    co_await conn.send(200, kJson, body);
}

}  // namespace infergate::emulator
