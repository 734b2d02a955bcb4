// text-embeddings-inference's tokenizer routes (router/src/http/types.rs TokenizeRequest,
// SimpleToken, DecodeRequest; server.rs tokenize, decode; core/src/tokenization.rs
// into_tokens: a special token has its own text and no offsets).
#include "translators/embedding_wire.hpp"
#include "translators/tei/embedding.hpp"

namespace infergate::translators::tei {

namespace {

using canonical::bad_request;
using canonical::Setting;
using canonical::Token;
namespace wire = embed_wire;

class TokenizerApiCodec final : public TokenizerCodec {
public:
    TokenizerDialect dialect() const override { return TokenizerDialect::tei; }

    Result<TokenizeRequest> decode_tokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        TokenizeRequest req;
        req.dialect = TokenizerDialect::tei;
        const json::Value* inputs = json::find(doc, "inputs");
        if (inputs != nullptr && inputs->IsString()) {
            req.texts.emplace_back(json::view(*inputs));
        } else if (inputs != nullptr && inputs->IsArray()) {
            if (inputs->Empty()) {
                return empty("`inputs` cannot be empty", "inputs");
            }
            req.text_is_list = true;
            for (const auto& x : inputs->GetArray()) {
                if (!x.IsString()) {
                    return bad_request("'inputs' must be a string or a list of strings", "inputs");
                }
                req.texts.emplace_back(json::view(x));
            }
        } else {
            return bad_request("'inputs' is required: a string or a list of strings", "inputs");
        }
        req.pieces = Setting{true, false};  // its answer carries each token's text
        std::optional<canonical::Error> err;
        const auto add = json::get_bool(doc, "add_special_tokens", "add_special_tokens", err);
        req.add_special = Setting{add.value_or(true), add.has_value()};
        req.prompt_name = json::get_string(doc, "prompt_name", "prompt_name", err);
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            return *err;
        }
        wire::collect_extras(doc, {"inputs", "add_special_tokens", "prompt_name", "model"}, nullptr,
                             0, true, req.extras);
        return req;
    }

    void encode_tokenize_answer(const TokenizeResult& result, const TokenizeRequest& req,
                                const TokenizerAnswer& /*answer*/,
                                std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartArray();
        for (size_t i = 0; i < result.items.size(); ++i) {
            const std::string_view input = i < req.texts.size() ? req.texts[i] : std::string_view();
            std::vector<Token> tokens = result.items[i];
            wire::align_pieces(input, tokens);
            w.StartArray();
            for (const Token& t : tokens) {
                // A zero-width token (BOS, EOS) is a special one where the backend did not say.
                const bool special = t.special.value_or(t.start && t.stop && *t.start == *t.stop);
                const bool placed = t.start && t.stop && *t.start <= *t.stop &&
                                    static_cast<size_t>(*t.stop) <= input.size();
                w.StartObject();
                json::key(w, "id");
                w.Int64(t.id);
                json::key(w, "text");
                if (special) {
                    json::string(w, t.has_text ? wire::lossy_utf8(t.text) : std::string());
                } else if (placed) {
                    json::string(
                        w, wire::lossy_utf8(input.substr(static_cast<size_t>(*t.start),
                                                         static_cast<size_t>(*t.stop - *t.start))));
                } else {
                    json::string(w, "");
                }
                json::key(w, "special");
                w.Bool(special);
                json::key(w, "start");
                if (!special && placed) {
                    w.Int64(*t.start);
                } else {
                    w.Null();
                }
                json::key(w, "stop");
                if (!special && placed) {
                    w.Int64(*t.stop);
                } else {
                    w.Null();
                }
                w.EndObject();
            }
            w.EndArray();
        }
        w.EndArray();
    }

    Result<DetokenizeRequest> decode_detokenize(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        DetokenizeRequest req;
        req.dialect = TokenizerDialect::tei;
        const json::Value* ids = json::find(doc, "ids");
        if (ids == nullptr || !ids->IsArray()) {
            return bad_request("'ids' is required: a list of token ids or a list of such lists",
                               "ids");
        }
        if (!ids->Empty() && (*ids)[0].IsArray()) {
            req.ids_is_list = true;
            for (const auto& list : ids->GetArray()) {
                std::vector<int64_t> one;
                if (!list.IsArray() || (!list.Empty() && !wire::read_ids(list, one))) {
                    return bad_request("'ids' must be a list of token ids or a list of such lists",
                                       "ids");
                }
                req.ids.push_back(std::move(one));
            }
        } else {
            std::vector<int64_t> one;
            if (!ids->Empty() && !wire::read_ids(*ids, one)) {
                return bad_request("'ids' must be a list of token ids", "ids");
            }
            req.ids.push_back(std::move(one));
        }
        std::optional<canonical::Error> err;
        const auto skip = json::get_bool(doc, "skip_special_tokens", "skip_special_tokens", err);
        req.skip_special = Setting{skip.value_or(true), skip.has_value()};
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            return *err;
        }
        wire::collect_extras(doc, {"ids", "skip_special_tokens", "model"}, nullptr, 0, true,
                             req.extras);
        return req;
    }

    void encode_detokenize_answer(const DetokenizeResult& result, const DetokenizeRequest& /*req*/,
                                  std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartArray();
        for (const auto& t : result.texts) {
            json::string(w, t);
        }
        w.EndArray();
    }

    void encode_error(const Error& error, std::string& out) const override {
        tei::encode_error(error, out);
    }

    Result<std::string> encode_tokenize(const TokenizeRequest& req,
                                        const TokenizerOptions& o) const override {
        if (req.pieces.said && req.pieces.value) {
            return wire::cannot_carry("with_pieces", o.backend,
                                      "text-embeddings-inference answers each token's place in "
                                      "the input, not llama.cpp's pieces; leave it out");
        }
        if (req.token_strs) {
            return wire::cannot_carry("return_token_strs", o.backend,
                                      "the tokenizer's own token strings come from vLLM only");
        }
        if (req.truncate) {
            return wire::cannot_carry("parameters.truncate", o.backend,
                                      "its /tokenize does not truncate; leave it out");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "inputs");
        wire::write_texts(w, req.texts, req.text_is_list);
        json::key(w, "add_special_tokens");
        w.Bool(req.add_special.value);
        if (req.prompt_name) {
            json::key(w, "prompt_name");
            json::string(w, *req.prompt_name);
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
            return wire::malformed("/tokenize", "expected a JSON list of token lists");
        }
        TokenizeResult r;
        for (const auto& list : doc.GetArray()) {
            if (!list.IsArray()) {
                return wire::malformed("/tokenize", "an item is not a list of tokens");
            }
            std::vector<Token> tokens;
            for (const auto& x : list.GetArray()) {
                const json::Value* id = x.IsObject() ? json::find(x, "id") : nullptr;
                if (id == nullptr || !id->IsInt64()) {
                    return wire::malformed("/tokenize", "a token without its id");
                }
                Token t;
                t.id = id->GetInt64();
                if (const json::Value* s = json::find(x, "text"); s != nullptr && s->IsString()) {
                    t.text = std::string(json::view(*s));
                    t.has_text = true;
                }
                if (const json::Value* s = json::find(x, "special"); s != nullptr && s->IsBool()) {
                    t.special = s->GetBool();
                }
                const json::Value* start = json::find(x, "start");
                const json::Value* stop = json::find(x, "stop");
                if (start != nullptr && stop != nullptr && start->IsInt64() && stop->IsInt64()) {
                    t.start = start->GetInt64();
                    t.stop = stop->GetInt64();
                }
                tokens.push_back(std::move(t));
            }
            r.items.push_back(std::move(tokens));
        }
        return r;
    }

    std::string_view detokenize_path() const override { return "/decode"; }

    Result<std::string> encode_detokenize(const DetokenizeRequest& req,
                                          const TokenizerOptions& o) const override {
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "ids");
        wire::write_id_lists(w, req.ids, req.ids_is_list);
        json::key(w, "skip_special_tokens");
        w.Bool(req.skip_special.value);
        w.EndObject();
        return out;
    }

    Result<DetokenizeResult> decode_detokenize_answer(
        std::string_view body, const DetokenizeRequest& /*req*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "decode answer")) {
            return wire::malformed("/decode", e->message);
        }
        if (!doc.IsArray()) {
            return wire::malformed("/decode", "expected a JSON list of texts");
        }
        DetokenizeResult r;
        for (const auto& t : doc.GetArray()) {
            if (!t.IsString()) {
                return wire::malformed("/decode", "an item is not a string");
            }
            r.texts.emplace_back(json::view(t));
        }
        return r;
    }

    Error decode_error(int status, std::string_view body) const override {
        return codec_for(canonical::Dialect::tgi).decode_error(status, body);
    }

private:
    static canonical::Error empty(std::string message, std::string param) {
        canonical::Error e = bad_request(std::move(message), std::move(param));
        e.code = "Empty";
        return e;
    }
};

}  // namespace

const TokenizerCodec& tokenizer_codec() {
    static const TokenizerApiCodec codec;
    return codec;
}

}  // namespace infergate::translators::tei
