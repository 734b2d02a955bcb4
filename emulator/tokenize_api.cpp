// The tokenizer routes, all on tokenizer.hpp: vLLM's POST /tokenize and /detokenize
// (vllm/entrypoints/serve/tokenize/, protocol.py TokenizeCompletionRequest / TokenizeChatRequest),
// SGLang's POST /tokenize, /v1/tokenize, /detokenize, /v1/detokenize
// (entrypoints/openai/serving_tokenize.py), llama.cpp's POST /tokenize, /detokenize and
// /apply-template (examples/server/server.cpp at c392e509) and TGI's POST /tokenize
// (router/src/server.rs, encoding_to_tokens). TEI's /tokenize and /decode are in tei_api.cpp.
#include <limits>
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// A chat's template tokens from OpenAI-style messages (text parts only, as the generation routes
// count them). Returns false when `messages` is not a list of objects with a string role.
bool chat_from_messages(const Value& messages, ChatTokens& chat) {
    if (!messages.IsArray()) {
        return false;
    }
    for (const Value& m : messages.GetArray()) {
        const Value* role = m.IsObject() ? member(m, "role") : nullptr;
        if (role == nullptr || !role->IsString()) {
            return false;
        }
        chat.add_message({role->GetString(), role->GetStringLength()});
        const Value* content = member(m, "content");
        if (content == nullptr) {
            continue;
        }
        if (content->IsString()) {
            chat.add_content({content->GetString(), content->GetStringLength()});
        } else if (content->IsArray()) {
            for (const Value& part : content->GetArray()) {
                const Value* text = part.IsObject() ? member(part, "text") : nullptr;
                if (text != nullptr && text->IsString()) {
                    chat.add_content({text->GetString(), text->GetStringLength()});
                }
            }
        } else if (!content->IsNull()) {
            return false;
        }
    }
    return true;
}

// A JSON list of token ids that a tokenizer's decode() takes (u32): nullopt for another shape;
// `overflow` when an id does not fit.
std::optional<std::vector<std::int64_t>> id_list(const Value& v, bool& overflow) {
    if (!v.IsArray()) {
        return std::nullopt;
    }
    std::vector<std::int64_t> ids;
    for (const Value& id : v.GetArray()) {
        if (!id.IsInt64()) {
            return std::nullopt;
        }
        const std::int64_t x = id.GetInt64();
        overflow = overflow || x < 0 || x > std::numeric_limits<std::uint32_t>::max();
        ids.push_back(x);
    }
    return ids;
}

// --- vLLM -----------------------------------------------------------------------------------

OaiError vllm_invalid(std::string_view type, std::string_view loc, std::string_view message) {
    std::string text = "1 validation error for ";
    text += type;
    text += '\n';
    if (!loc.empty()) {
        text += loc;
        text += '\n';
    }
    text += "  ";
    text += message;
    return {400, std::move(text), true};
}

std::optional<OaiError> vllm_tokenize(const Value& doc, const Options& options, std::string& body) {
    const bool chat = member(doc, "messages") != nullptr;
    const std::string_view type = chat ? "TokenizeChatRequest" : "TokenizeCompletionRequest";
    std::string model;
    if (const Value* m = member(doc, "model"); m != nullptr && !m->IsNull()) {
        if (!m->IsString()) {
            return vllm_invalid(type, "model", "Input should be a valid string");
        }
        model.assign(m->GetString(), m->GetStringLength());
    }
    bool flag = false;
    for (const char* name :
         {"add_special_tokens", "add_generation_prompt", "continue_final_message"}) {
        if (get_bool(doc, name, flag) == Lookup::kWrongType) {
            return vllm_invalid(type, name, "Input should be a valid boolean");
        }
    }
    bool token_strs = false;
    if (get_bool(doc, "return_token_strs", token_strs) == Lookup::kWrongType) {
        return vllm_invalid(type, "return_token_strs", "Input should be a valid boolean");
    }
    std::vector<Token> tokens;
    if (chat) {
        bool generation_prompt = true;
        bool continue_final = false;
        get_bool(doc, "add_generation_prompt", generation_prompt);
        get_bool(doc, "continue_final_message", continue_final);
        if (generation_prompt && continue_final) {
            return vllm_invalid(type, "",
                                "Value error, Cannot set both `continue_final_message` and "
                                "`add_generation_prompt` to True.");
        }
        ChatTokens template_tokens;
        if (!chat_from_messages(*member(doc, "messages"), template_tokens)) {
            return vllm_invalid(type, "messages", "Input should be a valid list");
        }
        if (!model.empty() && model != options.model) {
            return OaiError{404, "The model `" + model + "` does not exist.", false};
        }
        const Value* chat_template = member(doc, "chat_template");
        const Value* kwargs = member(doc, "chat_template_kwargs");
        if ((chat_template != nullptr && !chat_template->IsNull()) ||
            (kwargs != nullptr && kwargs->IsObject() &&
             member(*kwargs, "chat_template") != nullptr &&
             !member(*kwargs, "chat_template")->IsNull())) {
            return OaiError{400,
                            "Chat template is passed with request, but "
                            "--trust-request-chat-template is not set. Refused request with "
                            "untrusted chat template.",
                            false};
        }
        tokens = template_tokens.finish(generation_prompt, continue_final);
    } else {
        const Value* prompt = member(doc, "prompt");
        if (prompt == nullptr) {
            return vllm_invalid(type, "prompt", "Field required");
        }
        if (!prompt->IsString()) {
            return vllm_invalid(type, "prompt", "Input should be a valid string");
        }
        if (!model.empty() && model != options.model) {
            return OaiError{404, "The model `" + model + "` does not exist.", false};
        }
        tokens = tokenize({prompt->GetString(), prompt->GetStringLength()});
    }
    JsonWriter w(body);
    w.StartObject();
    w.kv_int("count", static_cast<std::int64_t>(tokens.size()));
    w.kv_int("max_model_len", options.max_model_len);
    w.key("tokens");
    w.StartArray();
    for (const Token& t : tokens) {
        w.Int64(t.id);
    }
    w.EndArray();
    w.key("token_strs");
    if (token_strs) {
        w.StartArray();
        for (const Token& t : tokens) {
            w.str(to_valid_utf8(id_string(t.id)));
        }
        w.EndArray();
    } else {
        w.Null();
    }
    w.EndObject();
    return std::nullopt;
}

std::optional<OaiError> vllm_detokenize(const Value& doc, const Options& options,
                                        std::string& body) {
    constexpr std::string_view kType = "DetokenizeRequest";
    std::string model;
    if (const Value* m = member(doc, "model"); m != nullptr && !m->IsNull()) {
        if (!m->IsString()) {
            return vllm_invalid(kType, "model", "Input should be a valid string");
        }
        model.assign(m->GetString(), m->GetStringLength());
    }
    const Value* tokens = member(doc, "tokens");
    if (tokens == nullptr) {
        return vllm_invalid(kType, "tokens", "Field required");
    }
    bool overflow = false;
    const std::optional<std::vector<std::int64_t>> ids = id_list(*tokens, overflow);
    if (!ids) {
        return vllm_invalid(kType, "tokens", "Input should be a valid list of integers");
    }
    if (!model.empty() && model != options.model) {
        return OaiError{404, "The model `" + model + "` does not exist.", false};
    }
    if (overflow) {
        // decode() raises OverflowError; the route turns it into a RequestValidationError.
        return OaiError{400, "out of range integral type conversion attempted", true};
    }
    JsonWriter w(body);
    w.StartObject();
    w.kv("prompt", to_valid_utf8(detokenize(*ids, false)));
    w.EndObject();
    return std::nullopt;
}

// --- SGLang ---------------------------------------------------------------------------------

void sglang_error(int status, std::string_view message, std::string_view type, std::string& body) {
    JsonWriter w(body);
    w.StartObject();
    w.kv("object", "error");
    w.kv("message", message);
    w.kv("type", type);
    w.kv_null("param");
    w.kv_int("code", status);
    w.EndObject();
}

// Returns the status (200 or the error's) and fills `body`.
int sglang_tokenize(const Value& doc, const Options& options, std::string& body) {
    const Value* prompt = member(doc, "prompt");
    if (prompt == nullptr || !(prompt->IsString() || prompt->IsArray())) {
        sglang_error(
            400,
            prompt == nullptr ? "Field required: prompt" : "Input should be a valid string: prompt",
            "Bad Request", body);
        return 400;
    }
    std::vector<std::string_view> texts;
    if (prompt->IsString()) {
        texts.emplace_back(prompt->GetString(), prompt->GetStringLength());
    } else {
        for (const Value& item : prompt->GetArray()) {
            if (!item.IsString()) {
                sglang_error(400, "Input should be a valid string: prompt", "Bad Request", body);
                return 400;
            }
            texts.emplace_back(item.GetString(), item.GetStringLength());
        }
    }
    bool flag = false;
    if (get_bool(doc, "add_special_tokens", flag) == Lookup::kWrongType) {
        sglang_error(400, "Input should be a valid boolean: add_special_tokens", "Bad Request",
                     body);
        return 400;
    }
    std::vector<std::vector<Token>> lists;
    for (std::string_view text : texts) {
        lists.push_back(tokenize(text));
    }
    JsonWriter w(body);
    w.StartObject();
    w.key("tokens");
    if (prompt->IsArray()) {
        w.StartArray();
    }
    for (const auto& list : lists) {
        w.StartArray();
        for (const Token& t : list) {
            w.Int64(t.id);
        }
        w.EndArray();
    }
    if (prompt->IsArray()) {
        w.EndArray();
    }
    w.key("count");
    if (prompt->IsArray()) {
        w.StartArray();
        for (const auto& list : lists) {
            w.Int64(static_cast<std::int64_t>(list.size()));
        }
        w.EndArray();
    } else {
        w.Int64(static_cast<std::int64_t>(lists[0].size()));
    }
    w.kv_int("max_model_len", options.max_model_len);  // the tokenizer's model_max_length
    w.EndObject();
    return 200;
}

int sglang_detokenize(const Value& doc, std::string& body) {
    const Value* tokens = member(doc, "tokens");
    if (tokens == nullptr || !tokens->IsArray()) {
        sglang_error(
            400,
            tokens == nullptr ? "Field required: tokens" : "Input should be a valid list: tokens",
            "Bad Request", body);
        return 400;
    }
    bool skip_special = true;
    if (get_bool(doc, "skip_special_tokens", skip_special) == Lookup::kWrongType) {
        sglang_error(400, "Input should be a valid boolean: skip_special_tokens", "Bad Request",
                     body);
        return 400;
    }
    // list[int] | list[list[int]]: the first item decides, as the handler reads it.
    const bool nested = !tokens->Empty() && (*tokens)[0].IsArray();
    std::vector<std::vector<std::int64_t>> lists;
    bool overflow = false;
    if (nested) {
        for (const Value& list : tokens->GetArray()) {
            auto ids = id_list(list, overflow);
            if (!ids) {
                sglang_error(400, "Input should be a valid list of integers: tokens", "Bad Request",
                             body);
                return 400;
            }
            lists.push_back(std::move(*ids));
        }
    } else {
        auto ids = id_list(*tokens, overflow);
        if (!ids) {
            sglang_error(400, "Input should be a valid list of integers: tokens", "Bad Request",
                         body);
            return 400;
        }
        lists.push_back(std::move(*ids));
    }
    if (overflow) {
        sglang_error(500,
                     "Internal server error during detokenization: out of range integral type "
                     "conversion attempted",
                     "InternalServerError", body);
        return 500;
    }
    JsonWriter w(body);
    w.StartObject();
    w.key("text");
    if (nested) {
        w.StartArray();
    }
    for (const auto& ids : lists) {
        w.str(to_valid_utf8(detokenize(ids, skip_special)));
    }
    if (nested) {
        w.EndArray();
    }
    w.EndObject();
    return 200;
}

// --- llama.cpp ------------------------------------------------------------------------------

std::string_view json_kind(const Value& v) {
    return v.IsNumber()   ? "number"
           : v.IsBool()   ? "boolean"
           : v.IsNull()   ? "null"
           : v.IsArray()  ? "array"
           : v.IsString() ? "string"
                          : "object";
}

}  // namespace

net::awaitable<void> handle_vllm_tokenize(Request& req, Conn& conn, const Options& options,
                                          bool detokenize_route) {
    rapidjson::Document doc;
    std::optional<OaiError> error;
    std::string body;
    if (!parse_json(req.body, doc)) {
        error = OaiError{400, "JSON decode error", true};
    } else if (!doc.IsObject()) {
        error = vllm_invalid(detokenize_route ? "DetokenizeRequest" : "TokenizeCompletionRequest",
                             "body", "Input should be a valid dictionary");
    } else {
        error = detokenize_route ? vllm_detokenize(doc, options, body)
                                 : vllm_tokenize(doc, options, body);
    }
    if (error) {
        body.clear();
        render_vllm_error(*error, body);
        co_await conn.send(error->status, kJson, body);
        co_return;
    }
    co_await conn.send(200, kJson, body);
}

net::awaitable<void> handle_sglang_tokenize(Request& req, Conn& conn, const Options& options,
                                            bool detokenize_route) {
    rapidjson::Document doc;
    std::string body;
    int status = 400;
    if (!parse_json(req.body, doc)) {
        sglang_error(400, "JSON decode error", "Bad Request", body);
    } else if (!doc.IsObject()) {
        sglang_error(400, "Input should be a valid dictionary", "Bad Request", body);
    } else {
        status =
            detokenize_route ? sglang_detokenize(doc, body) : sglang_tokenize(doc, options, body);
    }
    co_await conn.send(status, kJson, body);
}

net::awaitable<void> handle_llamacpp_tokens(Request& req, Conn& conn, const Options& options,
                                            LlamaTokenRoute route) {
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
    (void)options;
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
