// vLLM's POST /tokenize and /detokenize (vllm/entrypoints/serve/tokenize/, protocol.py
// TokenizeCompletionRequest / TokenizeChatRequest) and SGLang's POST /tokenize, /v1/tokenize,
// /detokenize, /v1/detokenize (entrypoints/openai/serving_tokenize.py), on tokenizer.hpp.
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

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

}  // namespace infergate::emulator
