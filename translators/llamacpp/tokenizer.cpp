// llama-server's tokenizer routes (examples/server/server.cpp at c392e509: handle_tokenize,
// handle_detokenize; utils.hpp format_tokenizer_response, format_detokenized_response).
#include "translators/embedding_wire.hpp"
#include "translators/llamacpp/codec.hpp"
#include "translators/llamacpp/embedding.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::bad_request;
using canonical::Setting;
using canonical::Token;
namespace wire = embed_wire;

class TokenizerApiCodec final : public TokenizerCodec {
public:
    TokenizerDialect dialect() const override { return TokenizerDialect::llamacpp; }

    Result<TokenizeRequest> decode_tokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        TokenizeRequest req;
        req.dialect = TokenizerDialect::llamacpp;
        // Without a content llama-server answers {"tokens": []}.
        if (const json::Value* c = json::find(doc, "content"); c != nullptr) {
            if (c->IsString()) {
                req.texts.emplace_back(json::view(*c));
            } else if (c->IsArray()) {
                // Strings and token ids in one prompt (tokenize_mixed): llama.cpp's own.
                for (const auto& x : c->GetArray()) {
                    if (!x.IsString() && !x.IsInt64()) {
                        return bad_request(
                            "'content' must be a string or a list of strings and "
                            "token ids",
                            "content");
                    }
                }
                req.mixed = true;
            } else {
                return bad_request("'content' must be a string or a list of strings and token ids",
                                   "content");
            }
        }
        std::optional<canonical::Error> err;
        const auto add = json::get_bool(doc, "add_special", "add_special", err);
        req.add_special = Setting{add.value_or(false), add.has_value()};
        const auto pieces = json::get_bool(doc, "with_pieces", "with_pieces", err);
        req.pieces = Setting{pieces.value_or(false), pieces.value_or(false)};
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);  // llama-server reads none; routed by it
        }
        const auto parse_special = json::get_bool(doc, "parse_special", "parse_special", err);
        if (err) {
            return *err;
        }
        wire::collect_extras(doc,
                             {"content", "add_special", "with_pieces", "model", "parse_special"},
                             nullptr, 0, true, req.extras);
        if (parse_special == false) {
            // Special tokens written in the text read as text: the other tokenizers parse them.
            canonical::Extra e;
            e.key = "parse_special";
            e.json = "false";
            req.extras.push_back(std::move(e));
        }
        return req;
    }

    void encode_tokenize_answer(const TokenizeResult& result, const TokenizeRequest& req,
                                const TokenizerAnswer& /*answer*/,
                                std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "tokens");
        w.StartArray();
        if (!result.items.empty()) {
            for (const Token& t : result.items.front()) {
                if (!req.pieces.value) {
                    w.Int64(t.id);
                    continue;
                }
                w.StartObject();
                json::key(w, "id");
                w.Int64(t.id);
                json::key(w, "piece");
                if (t.text_bytes || !canonical::valid_utf8(t.text)) {
                    // Not UTF-8: the bytes as numbers, as llama-server writes them.
                    w.StartArray();
                    for (const char c : t.text) {
                        w.Int(static_cast<unsigned char>(c));
                    }
                    w.EndArray();
                } else {
                    json::string(w, t.text);
                }
                w.EndObject();
            }
        }
        w.EndArray();
        w.EndObject();
    }

    Result<DetokenizeRequest> decode_detokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        DetokenizeRequest req;
        req.dialect = TokenizerDialect::llamacpp;
        std::vector<int64_t> ids;
        if (const json::Value* t = json::find(doc, "tokens"); t != nullptr) {
            if (!t->IsArray() || (!t->Empty() && !wire::read_ids(*t, ids))) {
                return bad_request("'tokens' must be a list of token ids", "tokens");
            }
        }
        req.ids.push_back(std::move(ids));
        req.skip_special = Setting{false, false};  // llama-server writes every token's piece
        std::optional<canonical::Error> err;
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            return *err;
        }
        wire::collect_extras(doc, {"tokens", "model"}, nullptr, 0, true, req.extras);
        return req;
    }

    void encode_detokenize_answer(const DetokenizeResult& result, const DetokenizeRequest& /*req*/,
                                  std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "content");
        json::string(w, result.texts.empty() ? std::string() : result.texts.front());
        w.EndObject();
    }

    void encode_error(const Error& error, std::string& out) const override {
        codec().encode_error(error, out);
    }

    Result<std::string> encode_tokenize(const TokenizeRequest& req,
                                        const TokenizerOptions& o) const override {
        if (req.texts.size() > 1) {
            return wire::cannot_carry(req.dialect == TokenizerDialect::tei ? "inputs" : "prompt",
                                      o.backend,
                                      "llama.cpp's /tokenize takes one text per request; send "
                                      "one request per text");
        }
        if (req.token_strs) {
            return wire::cannot_carry("return_token_strs", o.backend,
                                      "the tokenizer's own token strings come from vLLM only; "
                                      "llama.cpp has each token's text (llama.cpp's with_pieces)");
        }
        if (req.truncate) {
            return wire::cannot_carry("parameters.truncate", o.backend,
                                      "llama.cpp's /tokenize does not truncate; leave it out");
        }
        if (req.prompt_name) {
            return wire::cannot_carry("prompt_name", o.backend,
                                      "prompts by name exist only in text-embeddings-inference");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "content");
        wire::write_texts(w, req.texts, false);
        json::key(w, "add_special");
        w.Bool(req.add_special.value);
        if (req.pieces.value) {
            json::key(w, "with_pieces");
            w.Bool(true);
        }
        w.EndObject();
        return out;
    }

    Result<TokenizeResult> decode_tokenize_answer(std::string_view body,
                                                  const TokenizeRequest& /*req*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "tokenize answer")) {
            return wire::malformed("/tokenize", e->message);
        }
        const json::Value* tokens = doc.IsObject() ? json::find(doc, "tokens") : nullptr;
        if (tokens == nullptr || !tokens->IsArray()) {
            return wire::malformed("/tokenize", "no 'tokens' list");
        }
        TokenizeResult r;
        r.items.resize(1);
        for (const auto& x : tokens->GetArray()) {
            Token t;
            if (x.IsInt64()) {
                t.id = x.GetInt64();
            } else if (x.IsObject()) {
                const json::Value* id = json::find(x, "id");
                const json::Value* piece = json::find(x, "piece");
                if (id == nullptr || !id->IsInt64() || piece == nullptr) {
                    return wire::malformed("/tokenize", "a token without its id and piece");
                }
                t.id = id->GetInt64();
                t.has_text = true;
                if (piece->IsString()) {
                    t.text = std::string(json::view(*piece));
                } else if (piece->IsArray()) {
                    t.text_bytes = true;
                    for (const auto& b : piece->GetArray()) {
                        if (!b.IsInt() || b.GetInt() < 0 || b.GetInt() > 255) {
                            return wire::malformed("/tokenize", "a piece byte out of range");
                        }
                        t.text += static_cast<char>(b.GetInt());
                    }
                } else {
                    return wire::malformed("/tokenize", "a piece that is neither text nor bytes");
                }
            } else {
                return wire::malformed("/tokenize", "a token that is neither an id nor an object");
            }
            r.items[0].push_back(std::move(t));
        }
        return r;
    }

    Result<std::string> encode_detokenize(const DetokenizeRequest& req,
                                          const TokenizerOptions& o) const override {
        if (req.ids.size() > 1) {
            return wire::cannot_carry(req.dialect == TokenizerDialect::tei ? "ids" : "tokens",
                                      o.backend,
                                      "llama.cpp's /detokenize takes one list of tokens per "
                                      "request");
        }
        if (req.skip_special.said && req.skip_special.value) {
            return wire::cannot_carry("skip_special_tokens", o.backend,
                                      "llama.cpp's /detokenize writes every token, special ones "
                                      "included; leave it out");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "tokens");
        wire::write_id_lists(w, req.ids, false);
        w.EndObject();
        return out;
    }

    Result<DetokenizeResult> decode_detokenize_answer(
        std::string_view body, const DetokenizeRequest& /*req*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "detokenize answer")) {
            return wire::malformed("/detokenize", e->message);
        }
        const json::Value* c = doc.IsObject() ? json::find(doc, "content") : nullptr;
        if (c == nullptr || !c->IsString()) {
            return wire::malformed("/detokenize", "no 'content' string");
        }
        DetokenizeResult r;
        r.texts.emplace_back(json::view(*c));
        return r;
    }

    Error decode_error(int status, std::string_view body) const override {
        return codec().decode_error(status, body);
    }
};

}  // namespace

const TokenizerCodec& tokenizer_codec() {
    static const TokenizerApiCodec codec;
    return codec;
}

}  // namespace infergate::translators::llamacpp
