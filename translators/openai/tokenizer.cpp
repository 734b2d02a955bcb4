// The tokenizer routes of the OpenAI-compatible servers that have them: vLLM's
// (vllm/entrypoints/openai/protocol.py TokenizeCompletionRequest, TokenizeChatRequest,
// TokenizeResponse, DetokenizeRequest, DetokenizeResponse) and SGLang's
// (srt/entrypoints/openai/protocol.py TokenizeRequest, DetokenizeRequest: a prompt may be a list,
// the text comes back as "text").
#include <algorithm>
#include <iterator>

#include "translators/embedding_wire.hpp"
#include "translators/openai/embedding.hpp"
#include "translators/openai/response_codec.hpp"

namespace infergate::translators::openai {

namespace {

using canonical::bad_request;
using canonical::Setting;
using canonical::Token;
namespace wire = embed_wire;

// A key pydantic drops: it changes nothing (vLLM logs it, SGLang does not).
bool known_tokenize_key(std::string_view key) {
    return key == "model" || key == "prompt" || key == "add_special_tokens" ||
           key == "return_token_strs";
}

// vLLM's chat tokenize keys: they shape the prompt the template renders.
constexpr std::string_view kChatKeys[] = {
    "messages",      "add_generation_prompt", "continue_final_message",
    "chat_template", "chat_template_kwargs",  "mm_processor_kwargs",
    "tools"};

bool is_chat_key(std::string_view key) {
    return std::find(std::begin(kChatKeys), std::end(kChatKeys), key) != std::end(kChatKeys);
}

std::optional<canonical::Error> read_model(const json::Value& doc, std::string& model) {
    std::optional<canonical::Error> err;
    if (auto m = json::get_string(doc, "model", "model", err)) {
        model = std::move(*m);
    }
    return err;
}

// The answer's `tokens` (a list of ids, or with SGLang a list of such lists for a list of
// prompts) into `out`, one list per text.
bool read_token_lists(const json::Value& tokens, bool batch, std::vector<std::vector<Token>>& out) {
    auto one = [](const json::Value& list, std::vector<Token>& into) {
        if (!list.IsArray()) {
            return false;
        }
        for (const auto& id : list.GetArray()) {
            if (!id.IsInt64()) {
                return false;
            }
            Token t;
            t.id = id.GetInt64();
            into.push_back(std::move(t));
        }
        return true;
    };
    if (!batch) {
        out.resize(1);
        return one(tokens, out[0]);
    }
    if (!tokens.IsArray()) {
        return false;
    }
    out.resize(tokens.Size());
    size_t i = 0;
    for (const auto& list : tokens.GetArray()) {
        if (!one(list, out[i++])) {
            return false;
        }
    }
    return true;
}

// What an OpenAI-layer tokenizer backend cannot take from a request of another API.
std::optional<canonical::Error> check_carried(const TokenizeRequest& req, const TokenizerOptions& o,
                                              bool list_ok, bool token_strs_ok) {
    if (req.texts.size() > 1 && !list_ok) {
        return wire::cannot_carry(req.dialect == TokenizerDialect::tei ? "inputs" : "prompt",
                                  o.backend,
                                  "its /tokenize takes one text per request; send one request "
                                  "per text");
    }
    if (req.pieces.said && req.pieces.value) {
        return wire::cannot_carry("with_pieces", o.backend,
                                  "its tokenizer answers token ids (and vLLM the tokenizer's own "
                                  "token strings), not llama.cpp's pieces; leave it out");
    }
    if (req.token_strs && !token_strs_ok) {
        return wire::cannot_carry("return_token_strs", o.backend,
                                  "the tokenizer's own token strings come from vLLM only; leave "
                                  "it out");
    }
    if (req.truncate) {
        return wire::cannot_carry("parameters.truncate", o.backend,
                                  "its /tokenize does not truncate; leave it out");
    }
    if (req.prompt_name) {
        return wire::cannot_carry("prompt_name", o.backend,
                                  "prompts by name exist only in text-embeddings-inference; put "
                                  "the prompt's text in front of the input instead");
    }
    return wire::refuse_extras(req.extras, o.backend);
}

class OpenAiTokenizerCodec final : public TokenizerCodec {
public:
    explicit OpenAiTokenizerCodec(TokenizerDialect d) : dialect_(d) {}
    TokenizerDialect dialect() const override { return dialect_; }

    Result<TokenizeRequest> decode_tokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        TokenizeRequest req;
        req.dialect = dialect_;
        if (auto e = read_model(doc, req.model)) {
            return *e;
        }
        const json::Value* prompt = json::find(doc, "prompt");
        const json::Value* messages = json::find(doc, "messages");
        std::optional<canonical::Error> err;
        if (messages != nullptr && !messages->IsNull() && dialect_ == TokenizerDialect::vllm) {
            // A chat, rendered with the model's template by vLLM itself.
            req.chat = true;
        } else if (prompt == nullptr || prompt->IsNull()) {
            return bad_request("'prompt' is required: the text to tokenize", "prompt");
        } else if (prompt->IsString()) {
            req.texts.emplace_back(json::view(*prompt));
        } else if (prompt->IsArray() && dialect_ == TokenizerDialect::sglang) {
            req.text_is_list = true;
            for (const auto& p : prompt->GetArray()) {
                if (!p.IsString()) {
                    return bad_request("'prompt' must be a string or a list of strings", "prompt");
                }
                req.texts.emplace_back(json::view(p));
            }
        } else {
            return bad_request(dialect_ == TokenizerDialect::sglang
                                   ? "'prompt' must be a string or a list of strings"
                                   : "'prompt' must be a string",
                               "prompt");
        }
        // vLLM adds special tokens to a text by default and not to a rendered chat (its
        // template writes them).
        const auto add = json::get_bool(doc, "add_special_tokens", "add_special_tokens", err);
        req.add_special = Setting{add.value_or(!req.chat), add.has_value()};
        if (dialect_ == TokenizerDialect::vllm) {
            req.token_strs =
                json::get_bool(doc, "return_token_strs", "return_token_strs", err).value_or(false);
        }
        if (err) {
            return *err;
        }
        for (const auto& m : doc.GetObject()) {
            const std::string_view key = json::view(m.name);
            if (known_tokenize_key(key) && !(key == "prompt" && req.chat)) {
                continue;
            }
            canonical::Extra e;
            e.key = std::string(key);
            e.json = json::to_string(m.value);
            e.inert = !is_chat_key(key) || e.json == "null";
            req.extras.push_back(std::move(e));
        }
        return req;
    }

    void encode_tokenize_answer(const TokenizeResult& result, const TokenizeRequest& req,
                                const TokenizerAnswer& answer, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        const auto max_len = result.max_model_len ? result.max_model_len : answer.max_model_len;
        const bool list = dialect_ == TokenizerDialect::sglang && req.text_is_list;
        auto ids = [&](const std::vector<Token>& tokens) {
            w.StartArray();
            for (const Token& t : tokens) {
                w.Int64(t.id);
            }
            w.EndArray();
        };
        w.StartObject();
        if (dialect_ == TokenizerDialect::vllm) {
            // vLLM's field order (TokenizeResponse): count, max_model_len, tokens, token_strs.
            const std::vector<Token> none;
            const auto& tokens = result.items.empty() ? none : result.items.front();
            json::key(w, "count");
            w.Uint64(tokens.size());
            if (max_len) {
                json::key(w, "max_model_len");
                w.Int64(*max_len);
            }
            json::key(w, "tokens");
            ids(tokens);
            json::key(w, "token_strs");
            if (req.token_strs) {
                w.StartArray();
                for (const Token& t : tokens) {
                    json::string(w, t.token_str.value_or(""));
                }
                w.EndArray();
            } else {
                w.Null();
            }
        } else {
            json::key(w, "tokens");
            if (list) {
                w.StartArray();
                for (const auto& item : result.items) {
                    ids(item);
                }
                w.EndArray();
            } else {
                ids(result.items.empty() ? std::vector<Token>() : result.items.front());
            }
            json::key(w, "count");
            if (list) {
                w.StartArray();
                for (const auto& item : result.items) {
                    w.Uint64(item.size());
                }
                w.EndArray();
            } else {
                w.Uint64(result.items.empty() ? 0 : result.items.front().size());
            }
            if (max_len) {
                json::key(w, "max_model_len");
                w.Int64(*max_len);
            }
        }
        w.EndObject();
    }

    Result<DetokenizeRequest> decode_detokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        DetokenizeRequest req;
        req.dialect = dialect_;
        if (auto e = read_model(doc, req.model)) {
            return *e;
        }
        const json::Value* tokens = json::find(doc, "tokens");
        if (tokens == nullptr || !tokens->IsArray()) {
            return bad_request("'tokens' is required: a list of token ids", "tokens");
        }
        if (dialect_ == TokenizerDialect::sglang && !tokens->Empty() && (*tokens)[0].IsArray()) {
            req.ids_is_list = true;
            for (const auto& list : tokens->GetArray()) {
                std::vector<int64_t> ids;
                if (!list.IsArray() || (!list.Empty() && !wire::read_ids(list, ids))) {
                    return bad_request(
                        "'tokens' must be a list of token ids or a list of such "
                        "lists",
                        "tokens");
                }
                req.ids.push_back(std::move(ids));
            }
        } else {
            std::vector<int64_t> ids;
            if (!tokens->Empty() && !wire::read_ids(*tokens, ids)) {
                return bad_request("'tokens' must be a list of token ids (integers from 0)",
                                   "tokens");
            }
            req.ids.push_back(std::move(ids));
        }
        std::optional<canonical::Error> err;
        if (dialect_ == TokenizerDialect::sglang) {
            const auto skip =
                json::get_bool(doc, "skip_special_tokens", "skip_special_tokens", err);
            req.skip_special = Setting{skip.value_or(true), skip.has_value()};
        } else {
            req.skip_special = Setting{false, false};  // vLLM decodes every token
        }
        if (err) {
            return *err;
        }
        wire::collect_extras(doc, {"model", "tokens", "skip_special_tokens"}, nullptr, 0, true,
                             req.extras);
        return req;
    }

    void encode_detokenize_answer(const DetokenizeResult& result, const DetokenizeRequest& req,
                                  std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, dialect_ == TokenizerDialect::vllm ? "prompt" : "text");
        if (req.ids_is_list) {
            w.StartArray();
            for (const auto& t : result.texts) {
                json::string(w, t);
            }
            w.EndArray();
        } else {
            json::string(w, result.texts.empty() ? std::string() : result.texts.front());
        }
        w.EndObject();
    }

    void encode_error(const Error& error, std::string& out) const override {
        openai::encode_error(error, out);
    }

    Result<std::string> encode_tokenize(const TokenizeRequest& req,
                                        const TokenizerOptions& o) const override {
        const bool sglang = dialect_ == TokenizerDialect::sglang;
        if (auto e = check_carried(req, o, sglang, !sglang)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        if (!o.model.empty()) {
            json::key(w, "model");
            json::string(w, o.model);
        }
        json::key(w, "prompt");
        wire::write_texts(w, req.texts, req.text_is_list && sglang);
        json::key(w, "add_special_tokens");
        w.Bool(req.add_special.value);
        if (req.token_strs) {
            json::key(w, "return_token_strs");
            w.Bool(true);
        }
        w.EndObject();
        return out;
    }

    Result<TokenizeResult> decode_tokenize_answer(std::string_view body,
                                                  const TokenizeRequest& req) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "tokenize answer")) {
            return wire::malformed("/tokenize", e->message);
        }
        const json::Value* tokens = doc.IsObject() ? json::find(doc, "tokens") : nullptr;
        TokenizeResult r;
        const bool batch =
            tokens != nullptr && tokens->IsArray() && !tokens->Empty() && (*tokens)[0].IsArray();
        if (tokens == nullptr || !read_token_lists(*tokens, batch, r.items)) {
            return wire::malformed("/tokenize", "no 'tokens' list of token ids");
        }
        if (const json::Value* m = json::find(doc, "max_model_len"); m != nullptr && m->IsInt64()) {
            r.max_model_len = m->GetInt64();
        }
        if (const json::Value* s = json::find(doc, "token_strs");
            s != nullptr && s->IsArray() && !r.items.empty() && s->Size() == r.items[0].size()) {
            for (size_t i = 0; i < s->Size(); ++i) {
                if ((*s)[static_cast<rapidjson::SizeType>(i)].IsString()) {
                    r.items[0][i].token_str =
                        std::string(json::view((*s)[static_cast<rapidjson::SizeType>(i)]));
                }
            }
        }
        (void)req;
        return r;
    }

    Result<std::string> encode_detokenize(const DetokenizeRequest& req,
                                          const TokenizerOptions& o) const override {
        const bool sglang = dialect_ == TokenizerDialect::sglang;
        if (req.ids.size() > 1 && !sglang) {
            return wire::cannot_carry(req.dialect == TokenizerDialect::tei ? "ids" : "tokens",
                                      o.backend,
                                      "vLLM's /detokenize takes one list of tokens per request");
        }
        if (!sglang && req.skip_special.said && req.skip_special.value) {
            return wire::cannot_carry("skip_special_tokens", o.backend,
                                      "vLLM's /detokenize writes every token, special ones "
                                      "included; leave it out");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        if (!o.model.empty()) {
            json::key(w, "model");
            json::string(w, o.model);
        }
        json::key(w, "tokens");
        wire::write_id_lists(w, req.ids, req.ids_is_list && sglang);
        if (sglang) {
            json::key(w, "skip_special_tokens");
            w.Bool(req.skip_special.value);
        }
        w.EndObject();
        return out;
    }

    Result<DetokenizeResult> decode_detokenize_answer(
        std::string_view body, const DetokenizeRequest& /*req*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "detokenize answer")) {
            return wire::malformed("/detokenize", e->message);
        }
        const json::Value* text =
            doc.IsObject() ? json::find(doc, dialect_ == TokenizerDialect::vllm ? "prompt" : "text")
                           : nullptr;
        DetokenizeResult r;
        if (text != nullptr && text->IsString()) {
            r.texts.emplace_back(json::view(*text));
            return r;
        }
        if (text != nullptr && text->IsArray()) {
            for (const auto& t : text->GetArray()) {
                if (!t.IsString()) {
                    return wire::malformed("/detokenize", "a text that is not a string");
                }
                r.texts.emplace_back(json::view(t));
            }
            return r;
        }
        return wire::malformed("/detokenize", dialect_ == TokenizerDialect::vllm
                                                  ? "no 'prompt' string"
                                                  : "no 'text' string");
    }

    Error decode_error(int status, std::string_view body) const override {
        return codec_for(canonical::Dialect::openai_chat).decode_error(status, body);
    }

private:
    TokenizerDialect dialect_;
};

}  // namespace

const TokenizerCodec& vllm_tokenizer_codec() {
    static const OpenAiTokenizerCodec codec(TokenizerDialect::vllm);
    return codec;
}

const TokenizerCodec& sglang_tokenizer_codec() {
    static const OpenAiTokenizerCodec codec(TokenizerDialect::sglang);
    return codec;
}

}  // namespace infergate::translators::openai
