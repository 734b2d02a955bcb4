// POST /v1/embeddings: OpenAI's embeddings API and the OpenAI-compatible layers of vLLM
// (vllm/entrypoints/pooling/embed/protocol.py), SGLang (entrypoints/openai/protocol.py,
// EmbeddingRequest), llama.cpp (examples/server/server.cpp, handle_embeddings_impl) and TEI.
#include <algorithm>
#include <iterator>

#include "translators/embedding_wire.hpp"
#include "translators/openai/embedding.hpp"
#include "translators/openai/response_codec.hpp"

namespace infergate::translators::openai {

namespace {

using canonical::bad_request;
using canonical::Setting;
namespace wire = embed_wire;

constexpr std::string_view kApi = "/v1/embeddings";

// A client's keys that change nothing in the vectors (OpenAI's `user`: an end-user id).
constexpr canonical::InertRule kInert[] = {{"user", "*"}};

class EmbeddingsCodec final : public EmbedCodec {
public:
    EmbedDialect dialect() const override { return EmbedDialect::openai; }

    Result<EmbeddingRequest> decode_request(std::string_view body) const override {
        json::Document doc;
        if (auto e = json::parse_request_object(body, doc)) {
            return *e;
        }
        EmbeddingRequest req;
        req.dialect = EmbedDialect::openai;
        std::optional<canonical::Error> err;
        if (auto m = json::get_string(doc, "model", "model", err)) {
            req.model = std::move(*m);
        }
        if (err) {
            return *err;
        }
        const json::Value* input = json::find(doc, "input");
        const json::Value* messages = json::find(doc, "messages");
        if ((input == nullptr || input->IsNull()) && (messages == nullptr || messages->IsNull())) {
            return bad_request(
                "'input' is required: a string, a list of strings, a list of "
                "token ids or a list of token-id lists",
                "input");
        }
        if (input != nullptr && !input->IsNull()) {
            wire::InputRules rules;
            rules.tokens = true;
            if (auto e = wire::read_inputs(*input, "input", rules, req)) {
                return *e;
            }
        }
        if (const json::Value* f = json::find(doc, "encoding_format");
            f != nullptr && !f->IsNull()) {
            if (!f->IsString() || (json::view(*f) != "float" && json::view(*f) != "base64")) {
                return bad_request("'encoding_format' must be \"float\" or \"base64\"",
                                   "encoding_format");
            }
            req.base64 = json::view(*f) == "base64";
        }
        req.dimensions = json::get_int(doc, "dimensions", "dimensions", err, 1, 1 << 20);
        if (auto n = json::get_bool(doc, "normalize", "normalize", err)) {
            req.normalize = Setting{*n, true};  // vLLM's
        }
        if (err) {
            return *err;
        }
        // OpenAI never truncates: an input over the model's limit is an error.
        req.truncate = Setting{false, false};
        // `messages` (vLLM's chat embeddings) and every other key: raw, for a backend of the
        // client's own API.
        wire::collect_extras(doc, {"model", "input", "encoding_format", "dimensions", "normalize"},
                             kInert, std::size(kInert), false, req.extras);
        return req;
    }

    void encode_response(const EmbeddingResult& result, const EmbeddingRequest& req,
                         const EmbedAnswer& answer, std::string& out) const override {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "object");
        json::string(w, "list");
        json::key(w, "data");
        w.StartArray();
        for (size_t i = 0; i < result.vectors.size(); ++i) {
            w.StartObject();
            json::key(w, "object");
            json::string(w, "embedding");
            json::key(w, "index");
            w.Uint64(i);
            json::key(w, "embedding");
            wire::write_vector(w, result.vectors[i], req.base64);
            w.EndObject();
        }
        w.EndArray();
        json::key(w, "model");
        json::string(w, answer.model);
        if (result.prompt_tokens) {
            json::key(w, "usage");
            w.StartObject();
            json::key(w, "prompt_tokens");
            w.Int64(*result.prompt_tokens);
            json::key(w, "total_tokens");
            w.Int64(*result.prompt_tokens);
            w.EndObject();
        }
        w.EndObject();
    }

    void encode_error(const Error& error, std::string& out) const override {
        openai::encode_error(error, out);
    }

    std::string_view upstream_path() const override { return kApi; }

    Result<std::string> encode_request(const EmbeddingRequest& req,
                                       const EmbedOptions& o) const override {
        const bool vllm = o.flavor == Flavor::vllm;
        const bool llamacpp = o.flavor == Flavor::llamacpp;
        if (req.mixed) {
            return wire::cannot_carry(req.input_name, o.backend,
                                      "a prompt that mixes text and token ids exists only in "
                                      "llama.cpp's API; send text or token ids");
        }
        if (wire::mixes_kinds(req)) {
            return wire::cannot_carry(req.input_name, o.backend,
                                      "its OpenAI-compatible layer takes texts or token-id lists "
                                      "in one request, not both; send one kind per request");
        }
        if (req.dimensions && llamacpp) {
            return wire::cannot_carry("dimensions", o.backend,
                                      "llama.cpp returns the model's full vectors; leave "
                                      "dimensions out, or use a backend that shortens them "
                                      "(vLLM, SGLang, TEI, Ollama, OpenAI)");
        }
        if (req.normalize && !req.normalize->value && req.normalize->said && !vllm) {
            return wire::cannot_carry("normalize", o.backend,
                                      "its OpenAI-compatible layer always returns unit-length "
                                      "vectors; leave normalize out, or use a vLLM or TEI "
                                      "backend");
        }
        if (req.truncate && req.truncate->value) {
            const bool left = req.truncation_direction == "left";
            if (vllm && !left && req.truncate->said) {
                return wire::cannot_carry(
                    "truncate", o.backend,
                    "vLLM truncates from the left (it keeps an input's last tokens), and the "
                    "client's API keeps the first ones; send truncation_direction \"left\", or "
                    "inputs that fit");
            }
            if (!vllm && req.truncate->said) {
                return wire::cannot_carry("truncate", o.backend,
                                          "its OpenAI-compatible layer does not truncate inputs "
                                          "(one that is too long is an error); send inputs that "
                                          "fit, or use a TEI, Ollama or vLLM backend");
            }
        }
        if (req.truncation_direction == "left" && !vllm) {
            return wire::cannot_carry("truncation_direction", o.backend,
                                      "it does not truncate inputs; leave it out");
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
        if (!o.model.empty()) {
            json::key(w, "model");
            json::string(w, o.model);
        }
        wire::write_inputs(w, "input", req, req.input_is_list);
        json::key(w, "encoding_format");
        json::string(w, req.base64 ? "base64" : "float");
        if (req.dimensions) {
            json::key(w, "dimensions");
            w.Int64(*req.dimensions);
        }
        if (vllm && req.normalize && !req.normalize->value) {
            json::key(w, "normalize");
            w.Bool(false);
        }
        if (vllm && req.truncate && req.truncate->value && req.truncation_direction == "left") {
            json::key(w, "truncate_prompt_tokens");
            w.Int(-1);  // to the model's length, keeping the last tokens
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
        if (!doc.IsObject()) {
            return wire::malformed(kApi, "expected a JSON object");
        }
        const json::Value* data = json::find(doc, "data");
        if (data == nullptr || !data->IsArray()) {
            return wire::malformed(kApi, "no 'data' list");
        }
        EmbeddingResult r;
        r.vectors.resize(data->Size());
        std::vector<bool> seen(data->Size(), false);
        size_t position = 0;
        for (const auto& item : data->GetArray()) {
            const size_t here = position++;
            if (!item.IsObject()) {
                return wire::malformed(kApi, "an item of 'data' is not an object");
            }
            size_t index = here;
            if (const json::Value* i = json::find(item, "index"); i != nullptr && !i->IsNull()) {
                if (!i->IsUint64() || i->GetUint64() >= data->Size()) {
                    return wire::malformed(kApi, "an item's 'index' is not a position in 'data'");
                }
                index = static_cast<size_t>(i->GetUint64());
            }
            if (seen[index]) {
                return wire::malformed(kApi, "two items have the index " + std::to_string(index));
            }
            seen[index] = true;
            const json::Value* v = json::find(item, "embedding");
            if (v != nullptr && v->IsString()) {
                if (!canonical::read_base64_floats(json::view(*v), r.vectors[index])) {
                    return wire::malformed(kApi,
                                           "an 'embedding' string is not base64 of float32 values");
                }
            } else if (v == nullptr || !wire::read_vector(*v, r.vectors[index])) {
                return wire::malformed(kApi,
                                       "an item's 'embedding' is not a list of numbers or a "
                                       "base64 string");
            }
        }
        if (const json::Value* usage = json::find(doc, "usage");
            usage != nullptr && usage->IsObject()) {
            if (const json::Value* p = json::find(*usage, "prompt_tokens");
                p != nullptr && p->IsInt64()) {
                r.prompt_tokens = p->GetInt64();
            }
        }
        return r;
    }

    Result<std::optional<int64_t>> check_response(
        std::string_view body, const ResponseHeaders& /*headers*/) const override {
        return wire::scan_answer(body, kApi, false, "data", "usage", "prompt_tokens");
    }
};

}  // namespace

const EmbedCodec& embeddings_codec() {
    static const EmbeddingsCodec codec;
    return codec;
}

}  // namespace infergate::translators::openai
