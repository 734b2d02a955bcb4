// llama-server's native embeddings route (examples/server/server.cpp at c392e509:
// handle_embeddings_impl, server_task_result_embd::to_json_non_oaicompat; utils.hpp
// tokenize_input_prompts for the shapes of `input` / `content`).
#include "translators/llamacpp/embedding.hpp"

#include "translators/embedding_wire.hpp"
#include "translators/llamacpp/codec.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::bad_request;
using canonical::Setting;
namespace wire = embed_wire;

constexpr std::string_view kApi = "/embedding";

bool is_int(const json::Value& v) {
    return v.IsInt64();
}

// utils.hpp json_is_array_of_mixed_numbers_strings: an array holding both.
bool mixed_array(const json::Value& v) {
    bool text = false;
    bool number = false;
    for (const auto& x : v.GetArray()) {
        text = text || x.IsString();
        number = number || is_int(x);
    }
    return text && number;
}

bool all_ints(const json::Value& v) {
    for (const auto& x : v.GetArray()) {
        if (!is_int(x)) {
            return false;
        }
    }
    return true;
}

class EmbedApiCodec final : public translators::EmbedCodec {
public:
    EmbedDialect dialect() const override { return EmbedDialect::llamacpp; }

    Result<EmbeddingRequest> decode_request(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        EmbeddingRequest req;
        req.dialect = EmbedDialect::llamacpp;
        // `input` first, then `content`: the order llama-server reads them in.
        const char* name = "input";
        const json::Value* input = json::find(doc, "input");
        if (input == nullptr) {
            name = "content";
            input = json::find(doc, "content");
        }
        if (input == nullptr) {
            return bad_request("\"input\" or \"content\" must be provided", "content");
        }
        req.input_name = name;
        if (auto e = read_prompts(*input, name, req)) {
            return *e;
        }
        if (const json::Value* f = json::find(doc, "encoding_format"); f != nullptr) {
            // Checked as llama-server checks it; its native answer is always floats.
            if (!f->IsString() || (json::view(*f) != "float" && json::view(*f) != "base64")) {
                return bad_request(
                    "The format to return the embeddings in. Can be either float "
                    "or base64",
                    "encoding_format");
            }
        }
        std::optional<canonical::Error> err;
        // llama-server reads no model name here; a client that names one is routed by it.
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        // Newer builds' embd_normalize: 2 (Euclidean) is the default, -1 none; other norms have
        // no equivalent elsewhere and stay with llama.cpp backends.
        bool other_norm = false;
        if (auto n = json::get_int(doc, "embd_normalize", "embd_normalize", err)) {
            if (*n == -1) {
                req.normalize = Setting{false, true};
            } else {
                other_norm = *n != 2;
            }
        }
        if (err) {
            return *err;
        }
        req.truncate = Setting{false, false};  // an input over the batch size is an error
        // Every other key llama-server ignores here.
        wire::collect_extras(doc,
                             {"input", "content", "encoding_format", "model", "embd_normalize"},
                             nullptr, 0, true, req.extras);
        if (other_norm) {
            canonical::Extra e;
            e.key = "embd_normalize";
            e.json = json::to_string(*json::find(doc, "embd_normalize"));
            req.extras.push_back(std::move(e));
        }
        return req;
    }

    void encode_response(const EmbeddingResult& result, const EmbeddingRequest& /*req*/,
                         const EmbedAnswer& /*answer*/, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartArray();
        for (size_t i = 0; i < result.vectors.size(); ++i) {
            w.StartObject();
            json::key(w, "index");
            w.Uint64(i);
            json::key(w, "embedding");
            w.StartArray();  // one pooled vector per input
            wire::write_vector(w, result.vectors[i]);
            w.EndArray();
            w.EndObject();
        }
        w.EndArray();
    }

    void encode_error(const Error& error, std::string& out) const override {
        codec().encode_error(error, out);
    }

    std::string_view upstream_path() const override { return kApi; }

    Result<std::string> encode_request(const EmbeddingRequest& req,
                                       const EmbedOptions& o) const override {
        if (req.dimensions) {
            return wire::cannot_carry("dimensions", o.backend,
                                      "llama.cpp returns the model's full vectors; leave "
                                      "dimensions out");
        }
        if (auto e = wire::refuse_extras(req.extras, o.backend)) {
            return *e;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        if (req.mixed) {
            json::key(w, "content");
            json::write_raw(w, req.raw_input);
        } else {
            wire::write_inputs(w, "content", req, req.input_is_list);
        }
        w.EndObject();
        return out;
    }

    Result<EmbeddingResult> decode_response(std::string_view body,
                                            const ResponseHeaders& /*headers*/) const override {
        json::Document doc;
        if (auto e = json::parse(body, doc, "embeddings answer", json::Numbers::exact)) {
            return wire::malformed(kApi, e->message);
        }
        EmbeddingResult r;
        // Before 2025 one input's answer was {"embedding": [...]}.
        if (doc.IsObject()) {
            r.vectors.resize(1);
            if (auto e = read_item(doc, r.vectors[0])) {
                return *e;
            }
            return r;
        }
        if (!doc.IsArray()) {
            return wire::malformed(kApi, "expected a JSON list");
        }
        r.vectors.resize(doc.Size());
        std::vector<bool> seen(doc.Size(), false);
        size_t position = 0;
        for (const auto& item : doc.GetArray()) {
            size_t index = position++;
            if (!item.IsObject()) {
                return wire::malformed(kApi, "an item is not an object");
            }
            if (const json::Value* i = json::find(item, "index"); i != nullptr) {
                if (!i->IsUint64() || i->GetUint64() >= doc.Size()) {
                    return wire::malformed(kApi, "an item's 'index' is not a position");
                }
                index = static_cast<size_t>(i->GetUint64());
            }
            if (seen[index]) {
                return wire::malformed(kApi, "two items have the index " + std::to_string(index));
            }
            seen[index] = true;
            if (auto e = read_item(item, r.vectors[index])) {
                return *e;
            }
        }
        return r;
    }

    Result<std::optional<int64_t>> check_response(
        std::string_view body, const ResponseHeaders& /*headers*/) const override {
        auto array = wire::scan_answer(body, kApi, true);
        if (array) {
            return array;
        }
        return wire::scan_answer(body, kApi, false, "embedding");
    }

private:
    // `input` / `content` as tokenize_input_prompts reads it.
    static std::optional<canonical::Error> read_prompts(const json::Value& v, const char* name,
                                                        EmbeddingRequest& req) {
        const std::string path(name);
        auto keep_raw = [&] {
            req.mixed = true;
            req.raw_input = json::to_string(v);
        };
        auto shape = [&] {
            return bad_request("'" + path +
                                   "' must be a string, a list of tokens, a list of mixed strings "
                                   "& tokens, or a list of prompts",
                               path);
        };
        if (v.IsString()) {
            req.inputs.push_back(canonical::Prompt{std::string(json::view(v)), {}, false});
            return std::nullopt;
        }
        if (!v.IsArray()) {
            return shape();
        }
        if (v.Empty()) {
            return bad_request("Input content cannot be empty", path);
        }
        if (mixed_array(v)) {
            keep_raw();
            return std::nullopt;
        }
        if (all_ints(v)) {
            canonical::Prompt p;
            p.is_tokens = true;
            if (!wire::read_ids(v, p.token_ids)) {
                return bad_request("'" + path + "' holds a token id out of range", path);
            }
            req.inputs.push_back(std::move(p));
            return std::nullopt;
        }
        req.input_is_list = true;
        for (const auto& x : v.GetArray()) {
            if (x.IsString()) {
                req.inputs.push_back(canonical::Prompt{std::string(json::view(x)), {}, false});
            } else if (x.IsArray() && !x.Empty() && all_ints(x)) {
                canonical::Prompt p;
                p.is_tokens = true;
                if (!wire::read_ids(x, p.token_ids)) {
                    return bad_request("'" + path + "' holds a token id out of range", path);
                }
                req.inputs.push_back(std::move(p));
            } else if (x.IsArray() && mixed_array(x)) {
                keep_raw();
                return std::nullopt;
            } else {
                return bad_request("element of \"" + path +
                                       "\" must be a string, an list of tokens, or a list of "
                                       "mixed strings & tokens",
                                   path);
            }
        }
        return std::nullopt;
    }

    // One result's `embedding`: the pooled vector, written as a list of one vector (or, in
    // older builds, the vector itself). Several rows are per-token vectors (pooling "none"),
    // which no other API has.
    static std::optional<canonical::Error> read_item(const json::Value& item,
                                                     std::vector<double>& out) {
        const json::Value* e = json::find(item, "embedding");
        if (e == nullptr || !e->IsArray()) {
            return wire::malformed(kApi, "an item has no 'embedding' list");
        }
        if (!e->Empty() && (*e)[0].IsArray()) {
            if (e->Size() != 1) {
                return wire::malformed(
                    kApi,
                    "the backend answered per-token vectors (a model with pooling \"none\"), "
                    "which only a llama.cpp client can take; start llama-server with --pooling "
                    "mean (or cls, last)");
            }
            e = &(*e)[0];
        }
        if (!wire::read_vector(*e, out)) {
            return wire::malformed(kApi, "an 'embedding' is not a list of numbers");
        }
        return std::nullopt;
    }
};

}  // namespace

const translators::EmbedCodec& embed_codec() {
    static const EmbedApiCodec codec;
    return codec;
}

}  // namespace infergate::translators::llamacpp
