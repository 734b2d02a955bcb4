// TGI's POST /tokenize (router/src/server.rs tokenize, encoding_to_tokens; lib.rs SimpleToken)
// and POST /chat_tokenize (lib.rs ChatTokenizeResponse).
#include "translators/tgi/tokenizer.hpp"

#include "translators/embedding_wire.hpp"
#include "translators/tgi/codec.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::Setting;
using canonical::Token;
namespace wire = embed_wire;

// TGI answers a body it cannot read with 422 (axum's Json rejection).
canonical::Error invalid(std::string message, std::string param) {
    canonical::Error e = canonical::bad_request(std::move(message), std::move(param));
    e.status = 422;
    return e;
}

class TokenizerApiCodec final : public TokenizerCodec {
public:
    TokenizerDialect dialect() const override { return TokenizerDialect::tgi; }

    Result<TokenizeRequest> decode_tokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            e->status = 422;
            return *e;
        }
        TokenizeRequest req;
        req.dialect = TokenizerDialect::tgi;
        const json::Value* inputs = json::find(doc, "inputs");
        if (inputs == nullptr || !inputs->IsString()) {
            return invalid("'inputs' is required: the text to tokenize", "inputs");
        }
        req.texts.emplace_back(json::view(*inputs));
        req.pieces = Setting{true, false};  // its answer carries each token's text
        std::optional<canonical::Error> err;
        const auto add = json::get_bool(doc, "add_special_tokens", "add_special_tokens", err);
        req.add_special = Setting{add.value_or(true), add.has_value()};
        if (const json::Value* p = json::find(doc, "parameters"); p != nullptr && p->IsObject()) {
            // Only the truncation changes a tokenization; the generation settings do not.
            req.truncate = json::get_int(*p, "truncate", "parameters.truncate", err, 0);
        }
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            err->status = 422;
            return *err;
        }
        wire::collect_extras(doc, {"inputs", "parameters", "add_special_tokens", "model"}, nullptr,
                             0, true, req.extras);
        return req;
    }

    void encode_tokenize_answer(const TokenizeResult& result, const TokenizeRequest& req,
                                const TokenizerAnswer& /*answer*/,
                                std::string& out) const override {
        const std::string_view input = req.texts.empty() ? std::string_view() : req.texts.front();
        std::vector<Token> tokens = result.items.empty() ? std::vector<Token>() : result.items[0];
        wire::align_pieces(input, tokens);
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartArray();
        for (const Token& t : tokens) {
            // Without offsets (a tokenizer that reports ids only) TGI writes "" and 0, 0.
            const size_t start = t.start ? static_cast<size_t>(*t.start) : 0;
            const size_t stop = t.stop ? static_cast<size_t>(*t.stop) : 0;
            w.StartObject();
            json::key(w, "id");
            w.Int64(t.id);
            json::key(w, "text");
            json::string(w, start <= stop && stop <= input.size()
                                ? wire::lossy_utf8(input.substr(start, stop - start))
                                : std::string());
            json::key(w, "start");
            w.Uint64(start);
            json::key(w, "stop");
            w.Uint64(stop);
            w.EndObject();
        }
        w.EndArray();
    }

    void encode_error(const Error& error, std::string& out) const override {
        codec().encode_error(error, out);
    }

    Result<std::string> encode_tokenize(const TokenizeRequest& req,
                                        const TokenizerOptions& o) const override {
        if (req.texts.size() > 1) {
            return wire::cannot_carry("inputs", o.backend,
                                      "TGI's /tokenize takes one text per request; send one "
                                      "request per text");
        }
        if (req.pieces.said && req.pieces.value) {
            return wire::cannot_carry("with_pieces", o.backend,
                                      "TGI answers each token's place in the input, not "
                                      "llama.cpp's pieces; leave it out");
        }
        if (req.token_strs) {
            return wire::cannot_carry("return_token_strs", o.backend,
                                      "the tokenizer's own token strings come from vLLM only");
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
        json::key(w, "inputs");
        wire::write_texts(w, req.texts, false);
        json::key(w, "add_special_tokens");
        w.Bool(req.add_special.value);
        if (req.truncate) {
            json::key(w, "parameters");
            w.StartObject();
            json::key(w, "truncate");
            w.Int64(*req.truncate);
            w.EndObject();
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
        if (!doc.IsArray()) {
            return wire::malformed("/tokenize", "expected a JSON list of tokens");
        }
        TokenizeResult r;
        r.items.resize(1);
        for (const auto& x : doc.GetArray()) {
            const json::Value* id = x.IsObject() ? json::find(x, "id") : nullptr;
            if (id == nullptr || !id->IsInt64()) {
                return wire::malformed("/tokenize", "a token without its id");
            }
            Token t;
            t.id = id->GetInt64();
            if (const json::Value* text = json::find(x, "text");
                text != nullptr && text->IsString()) {
                t.text = std::string(json::view(*text));
                t.has_text = true;
            }
            const json::Value* start = json::find(x, "start");
            const json::Value* stop = json::find(x, "stop");
            if (start != nullptr && stop != nullptr && start->IsInt64() && stop->IsInt64()) {
                t.start = start->GetInt64();
                t.stop = stop->GetInt64();
            }
            r.items[0].push_back(std::move(t));
        }
        return r;
    }

    std::string_view detokenize_path() const override { return {}; }

    Error decode_error(int status, std::string_view body) const override {
        return codec().decode_error(status, body);
    }
};

}  // namespace

const TokenizerCodec& tokenizer_codec() {
    static const TokenizerApiCodec codec;
    return codec;
}

Result<std::string> encode_chat_tokenize(std::string_view messages_json, std::string_view model) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    if (!model.empty()) {
        json::key(w, "model");
        json::string(w, model);
    }
    json::key(w, "messages");
    json::write_raw(w, messages_json);
    w.EndObject();
    return out;
}

Result<std::string> decode_templated_text(std::string_view body) {
    json::Document doc;
    if (auto e = json::parse(body, doc, "chat_tokenize answer")) {
        return wire::malformed("/chat_tokenize", e->message);
    }
    const json::Value* text = doc.IsObject() ? json::find(doc, "templated_text") : nullptr;
    if (text == nullptr || !text->IsString()) {
        return wire::malformed("/chat_tokenize", "no 'templated_text' string");
    }
    return std::string(json::view(*text));
}

}  // namespace infergate::translators::tgi
