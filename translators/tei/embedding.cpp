// text-embeddings-inference's POST /embed (router/src/http/types.rs EmbedRequest, EmbedResponse;
// server.rs embed: the token count goes in the x-compute-tokens header) and its error body.
#include "translators/tei/embedding.hpp"

#include <iterator>

#include "translators/embedding_wire.hpp"

namespace infergate::translators::tei {

namespace {

using canonical::bad_request;
using canonical::Setting;
namespace wire = embed_wire;

constexpr std::string_view kApi = "/embed";

// TEI's ErrorType names (serialized as the variants are spelled).
constexpr std::string_view kErrorTypes[] = {"Unhealthy",  "Backend",   "Overloaded",
                                            "Validation", "Tokenizer", "Empty"};

class EmbedApiCodec final : public translators::EmbedCodec {
public:
    EmbedDialect dialect() const override { return EmbedDialect::tei; }

    Result<EmbeddingRequest> decode_request(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        EmbeddingRequest req;
        req.dialect = EmbedDialect::tei;
        const json::Value* inputs = json::find(doc, "inputs");
        if (inputs == nullptr || inputs->IsNull()) {
            return bad_request(
                "'inputs' is required: a string, a list of token ids, or a list "
                "of strings and token-id lists",
                "inputs");
        }
        wire::InputRules rules;
        rules.tokens = true;
        rules.mixed_list = true;
        if (auto e = wire::read_inputs(*inputs, "inputs", rules, req)) {
            return *e;
        }
        std::optional<canonical::Error> err;
        if (auto n = json::get_bool(doc, "normalize", "normalize", err)) {
            req.normalize = Setting{*n, true};
        }
        if (auto t = json::get_bool(doc, "truncate", "truncate", err)) {
            req.truncate = Setting{*t, true};
        }
        if (auto d = json::get_string(doc, "truncation_direction", "truncation_direction", err)) {
            if (*d == "left" || *d == "Left") {
                req.truncation_direction = "left";
            } else if (*d == "right" || *d == "Right") {
                req.truncation_direction = "right";
            } else {
                return bad_request("'truncation_direction' must be \"left\" or \"right\"",
                                   "truncation_direction");
            }
        }
        req.prompt_name = json::get_string(doc, "prompt_name", "prompt_name", err);
        req.dimensions = json::get_int(doc, "dimensions", "dimensions", err, 1, 1 << 20);
        // TEI serves one model and reads no name; a client that names one is routed by it.
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            return *err;
        }
        // Any other key TEI ignores (serde without deny_unknown_fields).
        wire::collect_extras(doc,
                             {"inputs", "normalize", "truncate", "truncation_direction",
                              "prompt_name", "dimensions", "model"},
                             nullptr, 0, true, req.extras);
        return req;
    }

    void encode_response(const EmbeddingResult& result, const EmbeddingRequest& /*req*/,
                         const EmbedAnswer& /*answer*/, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartArray();
        for (const auto& v : result.vectors) {
            wire::write_vector(w, v);
        }
        w.EndArray();
    }

    void answer_headers(const EmbeddingRequest& req, std::optional<int64_t> prompt_tokens,
                        HeaderList& out) const override {
        // What TEI's ResponseMetadata writes that a client can use: the counts.
        size_t chars = 0;
        for (const canonical::Prompt& p : req.inputs) {
            chars += p.is_tokens ? p.token_ids.size() : canonical::count_chars(p.text);
        }
        out.emplace_back("x-compute-characters", std::to_string(chars));
        if (prompt_tokens) {
            out.emplace_back("x-compute-tokens", std::to_string(*prompt_tokens));
        }
    }

    void encode_error(const Error& error, std::string& out) const override {
        tei::encode_error(error, out);
    }

    std::string_view upstream_path() const override { return kApi; }

    Result<std::string> encode_request(const EmbeddingRequest& req,
                                       const EmbedOptions& o) const override {
        if (req.mixed) {
            return wire::cannot_carry(req.input_name, o.backend,
                                      "a prompt that mixes text and token ids exists only in "
                                      "llama.cpp's API; send text or token ids");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::write_inputs(w, "inputs", req, req.input_is_list);
        if (req.normalize && (req.normalize->said || !req.normalize->value)) {
            json::key(w, "normalize");
            w.Bool(req.normalize->value);
        }
        if (req.truncate) {
            json::key(w, "truncate");
            w.Bool(req.truncate->value);
        }
        if (req.truncation_direction) {
            json::key(w, "truncation_direction");
            // The variants' own names: every TEI release reads them (the lower-case aliases
            // came later).
            json::string(w, *req.truncation_direction == "left" ? "Left" : "Right");
        }
        if (req.prompt_name) {
            json::key(w, "prompt_name");
            json::string(w, *req.prompt_name);
        }
        if (req.dimensions) {
            json::key(w, "dimensions");
            w.Int64(*req.dimensions);
        }
        w.EndObject();
        return out;
    }

    Result<EmbeddingResult> decode_response(std::string_view body,
                                            const ResponseHeaders& headers) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "embeddings answer", json::Numbers::exact)) {
            return wire::malformed(kApi, e->message);
        }
        if (!doc.IsArray()) {
            return wire::malformed(kApi, "expected a JSON list of vectors");
        }
        EmbeddingResult r;
        r.vectors.resize(doc.Size());
        size_t i = 0;
        for (const auto& v : doc.GetArray()) {
            if (!wire::read_vector(v, r.vectors[i++])) {
                return wire::malformed(kApi, "an item is not a list of numbers");
            }
        }
        r.prompt_tokens = wire::header_count(headers, "x-compute-tokens");
        return r;
    }

    Result<std::optional<int64_t>> check_response(std::string_view body,
                                                  const ResponseHeaders& headers) const override {
        auto checked = wire::scan_answer(body, kApi, true);
        if (!checked) {
            return checked;
        }
        return wire::header_count(headers, "x-compute-tokens");
    }

    Error decode_error(int status, std::string_view body) const override {
        // TGI's envelope and TGI's reader: the error_type is kept in `code`.
        return codec_for(canonical::Dialect::tgi).decode_error(status, body);
    }
};

}  // namespace

void encode_error(const Error& error, std::string& out) {
    std::string_view type;
    for (const std::string_view t : kErrorTypes) {
        type = error.code == t ? t : type;
    }
    if (type.empty()) {
        type = error.status == 429   ? "Overloaded"
               : error.status == 503 ? "Unhealthy"
               : error.status >= 500 ? "Backend"
               : error.status == 422 ? "Tokenizer"
                                     : "Validation";
    }
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "error");
    json::string(w, error.message);
    json::key(w, "error_type");
    json::string(w, type);
    w.EndObject();
}

const translators::EmbedCodec& embed_codec() {
    static const EmbedApiCodec codec;
    return codec;
}

}  // namespace infergate::translators::tei
