// The OpenAI API's own POST /v1/embeddings: the openai dialect's generic flavour
// (--openai-flavor generic), its shapes and refusals as the API answers them.
#include <algorithm>
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

std::string api_invalid(std::string_view field) {
    return "'$." + std::string(field) +
           "' is invalid. Please check the API reference: "
           "https://platform.openai.com/docs/api-reference.";
}

// The request's checks, in the API's order; 0 when it passes.
int generic_check(const rapidjson::Document& doc, bool doc_ok, const Options& options,
                  OaiInput& input, std::optional<std::int64_t>& dims, bool& base64_wanted,
                  std::string& body) {
    auto invalid = [&](std::string message, std::string_view code = {}) {
        body = openai_api_error(message, "invalid_request_error", code);
        return 400;
    };
    if (!doc_ok) {
        return invalid(
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but "
            "what was sent was not valid JSON. If you have trouble figuring out how to fix this, "
            "please contact us through our help center at help.openai.com.)");
    }
    const Value* model = doc.IsObject() ? member(doc, "model") : nullptr;
    if (model == nullptr || !model->IsString()) {
        return invalid("you must provide a model parameter");
    }
    const std::string_view name(model->GetString(), model->GetStringLength());
    if (name != options.model) {
        body = openai_api_error(
            "The model `" + std::string(name) + "` does not exist or you do not have access to it.",
            "invalid_request_error", "model_not_found");
        return 404;
    }
    const Value* in = member(doc, "input");
    if (in == nullptr || !read_oai_input(*in, input) || input.size() == 0) {
        return invalid(api_invalid("input"));
    }
    for (std::string_view t : input.texts) {
        if (t.empty()) {
            return invalid(api_invalid("input"));
        }
    }
    for (const auto& ids : input.ids) {
        if (ids.empty()) {
            return invalid(api_invalid("input"));
        }
    }
    if (const Value* f = member(doc, "encoding_format"); f != nullptr && !f->IsNull()) {
        const std::string_view v =
            f->IsString() ? std::string_view(f->GetString(), f->GetStringLength()) : "";
        if (v != "float" && v != "base64") {
            return invalid(api_invalid("encoding_format"));
        }
        base64_wanted = v == "base64";
    }
    if (const Value* u = member(doc, "user"); u != nullptr && !u->IsNull() && !u->IsString()) {
        return invalid(api_invalid("user"));
    }
    if (const Value* d = member(doc, "dimensions"); d != nullptr && !d->IsNull()) {
        const EmbeddingOptions& e = options.embedding;
        if (!d->IsInt64() || d->GetInt64() < 1) {
            return invalid(api_invalid("dimensions"));
        }
        if (!e.matryoshka) {
            return invalid("This model does not support specifying dimensions.");
        }
        if (!e.matryoshka_dims.empty() &&
            std::find(e.matryoshka_dims.begin(), e.matryoshka_dims.end(), d->GetInt64()) ==
                e.matryoshka_dims.end()) {
            return invalid(api_invalid("dimensions"));
        }
        dims = d->GetInt64();
    }
    return 0;
}

}  // namespace

std::string openai_api_error(std::string_view message, std::string_view type,
                             std::string_view code) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.key("error");
    w.StartObject();
    w.kv("message", message);
    w.kv("type", type);
    w.kv_null("param");
    if (code.empty()) {
        w.kv_null("code");
    } else {
        w.kv("code", code);
    }
    w.EndObject();
    w.EndObject();
    return body;
}

net::awaitable<void> handle_generic_embeddings(Request& req, Conn& conn, const Options& options) {
    // The API's error for every status a fault names: invalid_request_error, server_error.
    class ApiErrors final : public ErrorStyle {
    public:
        std::string_view render_status(int status, std::string_view message,
                                       std::string& body) const override {
            body =
                openai_api_error(message, status >= 500 ? "server_error" : "invalid_request_error");
            return kJson;
        }
        void render_event(std::string_view, std::string& event) const override { event.clear(); }
    };
    static const ApiErrors errors;
    if (co_await early_fault(conn, req, errors)) {
        co_return;
    }
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    OaiInput input;
    std::optional<std::int64_t> dims;
    bool base64_wanted = false;
    std::string body;
    int status = generic_check(doc, doc_ok, options, input, dims, base64_wanted, body);
    std::vector<std::vector<std::int64_t>> ids;
    int tokens = 0;
    for (std::size_t i = 0; status == 0 && i < input.size(); ++i) {
        ids.push_back(input.shape == OaiInput::Shape::kText ||
                              input.shape == OaiInput::Shape::kTexts
                          ? ids_of(tokenize(input.texts[i]))
                          : input.ids[i]);
        const int n = static_cast<int>(ids.back().size());
        tokens += n;
        if (n > options.max_model_len) {
            body = openai_api_error(
                "This model's maximum context length is " + std::to_string(options.max_model_len) +
                    " tokens, however you requested " + std::to_string(n) + " tokens (" +
                    std::to_string(n) +
                    " in your prompt; 0 for the completion). Please reduce your prompt; or "
                    "completion length.",
                "invalid_request_error");
            status = 400;
        }
    }
    if (status != 0) {
        co_await conn.send(status, kJson, body);
        co_return;
    }
    std::vector<std::vector<float>> vectors;
    for (const auto& one : ids) {
        vectors.push_back(embed_tokens(options, one, dims ? static_cast<int>(*dims) : 0, true));
    }
    auto render = [&](std::string& out) {
        JsonWriter w(out);
        w.StartObject();
        w.kv("object", "list");
        w.key("data");
        w.StartArray();
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            w.StartObject();
            w.kv("object", "embedding");
            w.kv_int("index", static_cast<std::int64_t>(i));
            w.key("embedding");
            if (base64_wanted) {
                w.str(base64(value_bytes(vectors[i], ValueType::kFloat32)));
            } else {
                write_vector(w, vectors[i], NumberStyle::kPython);
            }
            w.EndObject();
        }
        w.EndArray();
        w.kv("model", options.model);
        w.key("usage");
        w.StartObject();
        w.kv_int("prompt_tokens", tokens);
        w.kv_int("total_tokens", tokens);
        w.EndObject();
        w.EndObject();
    };
    co_await send_computed(conn, req, render, errors, kJson);
}

}  // namespace infergate::emulator
