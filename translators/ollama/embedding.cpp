// Ollama's embeddings routes (api/types.go EmbedRequest, EmbedResponse, EmbeddingRequest,
// EmbeddingResponse; server/routes.go EmbedHandler, EmbeddingsHandler).
#include "translators/ollama/embedding.hpp"

#include <iterator>

#include "translators/embedding_wire.hpp"
#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

namespace {

using canonical::bad_request;
using canonical::Setting;
namespace wire = embed_wire;

// Ollama reads a few keys and ignores every other one (Go's json.Unmarshal): those change
// nothing. keep_alive (how long the model stays loaded) and options (the runner's settings and
// sampling, which an embedding does not use) change nothing in the vectors either.
constexpr canonical::InertRule kInert[] = {{"keep_alive", "*"}, {"options", "*"}};

// A string member, or a 400 in Go's words when it has another type.
std::optional<canonical::Error> read_string(const json::Value& doc, std::string_view key,
                                            std::string& out) {
    std::optional<canonical::Error> err;
    if (auto s = json::get_string(doc, key, key, err)) {
        out = std::move(*s);
    }
    return err;
}

class EmbedApiCodec final : public translators::EmbedCodec {
public:
    EmbedDialect dialect() const override { return EmbedDialect::ollama; }

    Result<EmbeddingRequest> decode_request(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        EmbeddingRequest req;
        req.dialect = EmbedDialect::ollama;
        if (auto e = read_string(doc, "model", req.model)) {
            return *e;
        }
        req.input_name = "input";
        if (const json::Value* input = json::find(doc, "input"); input != nullptr) {
            if (input->IsString()) {
                // An empty string embeds nothing: Ollama answers an empty list (and loads the
                // model).
                if (input->GetStringLength() > 0) {
                    req.inputs.push_back(
                        canonical::Prompt{std::string(json::view(*input)), {}, false});
                }
            } else if (input->IsArray()) {
                req.input_is_list = true;
                for (const auto& x : input->GetArray()) {
                    if (!x.IsString()) {
                        return bad_request(
                            "invalid input type: 'input' must be a string or a "
                            "list of strings",
                            "input");
                    }
                    req.inputs.push_back(canonical::Prompt{std::string(json::view(x)), {}, false});
                }
            } else if (!input->IsNull()) {
                return bad_request(
                    "invalid input type: 'input' must be a string or a list of strings", "input");
            }
        }
        std::optional<canonical::Error> err;
        const auto truncate = json::get_bool(doc, "truncate", "truncate", err);
        req.truncate = truncate ? Setting{*truncate, true} : Setting{true, false};
        // Ollama shortens the vectors only for a positive value (0 is "not set").
        if (auto d = json::get_int(doc, "dimensions", "dimensions", err); d && *d > 0) {
            req.dimensions = d;
        }
        if (err) {
            return *err;
        }
        wire::collect_extras(doc, {"model", "input", "truncate", "dimensions"}, kInert,
                             std::size(kInert), true, req.extras);
        return req;
    }

    void encode_response(const EmbeddingResult& result, const EmbeddingRequest& /*req*/,
                         const EmbedAnswer& answer, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "model");
        json::string(w, answer.model);
        json::key(w, "embeddings");
        w.StartArray();
        for (const auto& v : result.vectors) {
            wire::write_vector(w, v);
        }
        w.EndArray();
        // Go's omitempty: the durations and the count appear when not zero.
        if (answer.timing.total_ns && *answer.timing.total_ns > 0) {
            json::key(w, "total_duration");
            w.Int64(*answer.timing.total_ns);
        }
        if (result.prompt_tokens && *result.prompt_tokens > 0) {
            json::key(w, "prompt_eval_count");
            w.Int64(*result.prompt_tokens);
        }
        w.EndObject();
    }

    void encode_error(const Error& error, std::string& out) const override {
        ollama::encode_error(error, out);
    }

    std::string_view upstream_path() const override { return "/api/embed"; }

    Result<std::string> encode_request(const EmbeddingRequest& req,
                                       const EmbedOptions& o) const override {
        if (req.mixed || wire::has_tokens(req)) {
            return wire::cannot_carry(req.input_name, o.backend,
                                      "Ollama embeds text only; send the inputs as text");
        }
        if (req.normalize && !req.normalize->value && req.normalize->said) {
            return wire::cannot_carry("normalize", o.backend,
                                      "Ollama's /api/embed always returns unit-length vectors; "
                                      "leave normalize out, or use a TEI or vLLM backend");
        }
        if (req.truncation_direction == "left") {
            return wire::cannot_carry("truncation_direction", o.backend,
                                      "Ollama truncates an input at its end (it keeps the first "
                                      "tokens); leave it out, or send inputs that fit");
        }
        if (req.prompt_name) {
            return wire::cannot_carry("prompt_name", o.backend,
                                      "prompts by name exist only in text-embeddings-inference; "
                                      "put the prompt's text in front of each input instead");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "model");
        json::string(w, o.model);
        wire::write_inputs(w, "input", req, true);
        // Ollama truncates unless told not to: the client's API's own choice is written when
        // it differs or the client said it.
        if (req.truncate && (req.truncate->said || !req.truncate->value)) {
            json::key(w, "truncate");
            w.Bool(req.truncate->value);
        }
        if (req.dimensions) {
            json::key(w, "dimensions");
            w.Int64(*req.dimensions);
        }
        w.EndObject();
        return out;
    }

    Result<EmbeddingResult> decode_response(std::string_view body,
                                            const ResponseHeaders& /*headers*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "embeddings answer", json::Numbers::exact)) {
            return wire::malformed(upstream_path(), e->message);
        }
        if (!doc.IsObject()) {
            return wire::malformed(upstream_path(), "expected a JSON object");
        }
        const json::Value* list = json::find(doc, "embeddings");
        if (list == nullptr || !list->IsArray()) {
            return wire::malformed(upstream_path(), "no 'embeddings' list");
        }
        EmbeddingResult r;
        r.vectors.resize(list->Size());
        size_t i = 0;
        for (const auto& v : list->GetArray()) {
            if (!wire::read_vector(v, r.vectors[i++])) {
                return wire::malformed(upstream_path(),
                                       "an item of 'embeddings' is not a list of numbers");
            }
        }
        if (const json::Value* n = json::find(doc, "prompt_eval_count");
            n != nullptr && n->IsInt64()) {
            r.prompt_tokens = n->GetInt64();
        }
        return r;
    }

    Result<std::optional<int64_t>> check_response(
        std::string_view body, const ResponseHeaders& /*headers*/) const override {
        return wire::scan_answer(body, upstream_path(), false, "embeddings", "prompt_eval_count");
    }
};

class LegacyEmbedCodec final : public translators::EmbedCodec {
public:
    EmbedDialect dialect() const override { return EmbedDialect::ollama_legacy; }

    Result<EmbeddingRequest> decode_request(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        EmbeddingRequest req;
        req.dialect = EmbedDialect::ollama_legacy;
        req.input_name = "prompt";
        if (auto e = read_string(doc, "model", req.model)) {
            return *e;
        }
        std::string prompt;
        if (auto e = read_string(doc, "prompt", prompt)) {
            return *e;
        }
        // An empty prompt embeds nothing: Ollama answers {"embedding": []} (and loads the
        // model).
        if (!prompt.empty()) {
            req.inputs.push_back(canonical::Prompt{std::move(prompt), {}, false});
        }
        // The vector as the model made it, not normalised; no truncation either.
        req.normalize = Setting{false, false};
        req.truncate = Setting{false, false};
        wire::collect_extras(doc, {"model", "prompt"}, kInert, std::size(kInert), true, req.extras);
        return req;
    }

    void encode_response(const EmbeddingResult& result, const EmbeddingRequest& /*req*/,
                         const EmbedAnswer& /*answer*/, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "embedding");
        wire::write_vector(w, result.vectors.empty() ? std::vector<double>() : result.vectors[0]);
        w.EndObject();
    }

    void encode_error(const Error& error, std::string& out) const override {
        ollama::encode_error(error, out);
    }

    std::string_view upstream_path() const override { return "/api/embeddings"; }

    Result<std::string> encode_request(const EmbeddingRequest& req,
                                       const EmbedOptions& o) const override {
        if (req.inputs.size() != 1 || req.inputs[0].is_tokens || req.mixed) {
            return wire::cannot_carry(req.input_name, o.backend,
                                      "Ollama's /api/embeddings takes one text");
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "model");
        json::string(w, o.model);
        json::key(w, "prompt");
        json::string(w, req.inputs[0].text);
        w.EndObject();
        return out;
    }

    Result<EmbeddingResult> decode_response(std::string_view body,
                                            const ResponseHeaders& /*headers*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "embeddings answer", json::Numbers::exact)) {
            return wire::malformed(upstream_path(), e->message);
        }
        const json::Value* v = doc.IsObject() ? json::find(doc, "embedding") : nullptr;
        EmbeddingResult r;
        r.vectors.resize(1);
        if (v == nullptr || !wire::read_vector(*v, r.vectors[0])) {
            return wire::malformed(upstream_path(), "no 'embedding' list of numbers");
        }
        return r;
    }

    Result<std::optional<int64_t>> check_response(
        std::string_view body, const ResponseHeaders& /*headers*/) const override {
        return wire::scan_answer(body, upstream_path(), false, "embedding");
    }
};

}  // namespace

const translators::EmbedCodec& embed_codec() {
    static const EmbedApiCodec codec;
    return codec;
}

const translators::EmbedCodec& legacy_embed_codec() {
    static const LegacyEmbedCodec codec;
    return codec;
}

}  // namespace infergate::translators::ollama
