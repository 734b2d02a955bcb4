// SGLang's POST /v1/embeddings (entrypoints/openai/serving_embedding.py, protocol.py,
// tokenizer_manager.py's validation) and its native POST /encode (http_server.py, io_struct.py
// EmbeddingReqInput, the tokenizer manager's output dict).
#include <algorithm>
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// ErrorResponse as create_error_response writes it: its err_type as given.
void render_sglang_error(int status, std::string_view message, std::string_view type,
                         std::string& body) {
    JsonWriter w(body);
    w.StartObject();
    w.kv("object", "error");
    w.kv("message", message);
    w.kv("type", type);
    w.kv_null("param");
    w.kv_int("code", status);
    w.EndObject();
}

// What the tokenizer manager checks of one embedding input (_validate_one_request, then
// _validate_for_matryoshka_dim), in its order; empty when it passes.
std::string sglang_check(const Options& options, std::size_t tokens,
                         std::optional<std::int64_t> dimensions) {
    const EmbeddingOptions& e = options.embedding;
    if (static_cast<int>(tokens) >= options.max_model_len) {
        return "The input (" + std::to_string(tokens) +
               " tokens) is longer than the model's context length (" +
               std::to_string(options.max_model_len) + " tokens).";
    }
    if (!e.enabled) {
        return "This model does not appear to be an embedding model by default. Please add "
               "`--is-embedding` when launching the server or try another model.";
    }
    if (!dimensions) {
        return {};
    }
    if (!e.matryoshka) {
        return "Model '" + options.model +
               "' does not support matryoshka representation, changing output dimensions will "
               "lead to poor results.";
    }
    if (*dimensions < 1) {
        return "Requested dimensions must be greater than 0";
    }
    if (!e.matryoshka_dims.empty() && std::find(e.matryoshka_dims.begin(), e.matryoshka_dims.end(),
                                                *dimensions) == e.matryoshka_dims.end()) {
        return "Model '" + options.model + "' only supports " + python_list(e.matryoshka_dims) +
               " matryoshka dimensions, using other output dimensions will lead to poor results.";
    }
    if (*dimensions > e.dim) {
        return "Provided dimensions are greater than max embedding dimension: " +
               std::to_string(e.dim);
    }
    return {};
}

// serving_embedding.py's _validate_request.
std::string sglang_validate_input(const OaiInput& input) {
    if (input.size() == 0) {
        return "Input cannot be empty";
    }
    auto blank = [](std::string_view s) {
        return s.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos;
    };
    if (input.shape == OaiInput::Shape::kText) {
        return blank(input.texts[0]) ? "Input cannot be empty or whitespace only" : "";
    }
    if (input.shape == OaiInput::Shape::kTexts) {
        for (std::size_t i = 0; i < input.texts.size(); ++i) {
            if (blank(input.texts[i])) {
                return "Input at index " + std::to_string(i) +
                       " cannot be empty or whitespace only";
            }
        }
    }
    if (input.shape == OaiInput::Shape::kIds) {
        for (std::size_t i = 0; i < input.ids[0].size(); ++i) {
            if (input.ids[0][i] < 0) {
                return "Token ID at index " + std::to_string(i) + " must be non-negative";
            }
        }
    }
    return {};
}

}  // namespace

net::awaitable<void> handle_sglang_embeddings(Request& req, Conn& conn, const Options& options) {
    const ErrorStyle& errors = sglang_oai_errors();
    if (co_await early_fault(conn, req, errors)) {
        co_return;
    }
    auto fail = [&](int status, std::string_view message,
                    std::string_view type) -> net::awaitable<void> {
        std::string body;
        render_sglang_error(status, message, type, body);
        co_await conn.send(status, kJson, body);
    };
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    const Value* input = doc_ok && doc.IsObject() ? member(doc, "input") : nullptr;
    OaiInput in;
    // FastAPI's validation, 400 under the handler SGLang installs.
    if (!doc_ok) {
        co_await fail(400, "JSON decode error", "Bad Request");
        co_return;
    }
    if (!doc.IsObject() || input == nullptr) {
        co_await fail(400,
                      doc.IsObject() ? "Field required: input"
                                     : "Input should be a valid "
                                       "dictionary",
                      "Bad Request");
        co_return;
    }
    if (!read_oai_input(*input, in)) {
        co_await fail(400, "Input should be a valid list: input", "Bad Request");
        co_return;
    }
    std::optional<std::int64_t> dimensions;
    std::int64_t number = 0;
    for (const char* name : {"model", "encoding_format", "user"}) {
        if (const Value* v = member(doc, name); v != nullptr && !v->IsString()) {
            co_await fail(400, std::string("Input should be a valid string: ") + name,
                          "Bad Request");
            co_return;
        }
    }
    if (const Lookup got = get_int(doc, "dimensions", number); got == Lookup::kWrongType) {
        co_await fail(400, "Input should be a valid integer: dimensions", "Bad Request");
        co_return;
    } else if (got == Lookup::kOk) {
        dimensions = number;
    }
    if (const std::string why = sglang_validate_input(in); !why.empty()) {
        co_await fail(400, why, "BadRequestError");
        co_return;
    }
    std::vector<std::vector<std::int64_t>> ids;
    for (std::size_t i = 0; i < in.size(); ++i) {
        ids.push_back(in.shape == OaiInput::Shape::kText || in.shape == OaiInput::Shape::kTexts
                          ? ids_of(tokenize(in.texts[i]))
                          : in.ids[i]);
        if (const std::string why = sglang_check(options, ids.back().size(), dimensions);
            !why.empty()) {
            co_await fail(400, why, "BadRequestError");
            co_return;
        }
    }
    std::vector<std::vector<float>> vectors;
    int prompt_tokens = 0;
    for (const auto& one : ids) {
        vectors.push_back(
            embed_tokens(options, one, dimensions ? static_cast<int>(*dimensions) : 0, true));
        prompt_tokens += static_cast<int>(one.size());
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);
        w.StartObject();
        w.key("data");
        w.StartArray();
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            // encoding_format is read and ignored: always floats.
            w.StartObject();
            w.key("embedding");
            write_vector(w, vectors[i], NumberStyle::kOrjson);
            w.kv_int("index", static_cast<std::int64_t>(i));
            w.kv("object", "embedding");
            w.EndObject();
        }
        w.EndArray();
        w.kv("model", options.model);  // the model path, whatever the request named
        w.kv("object", "list");
        w.key("usage");
        w.StartObject();
        w.kv_int("prompt_tokens", prompt_tokens);
        w.kv_int("total_tokens", prompt_tokens);
        w.kv_int("completion_tokens", 0);
        w.kv_null("prompt_tokens_details");
        w.kv_int("reasoning_tokens", 0);
        w.EndObject();
        w.EndObject();
    };
    co_await send_computed(conn, req, render, errors, kJson);
}

net::awaitable<void> handle_sglang_encode(Request& req, Conn& conn, const Options& options) {
    const ErrorStyle& errors = sglang_native_errors();
    if (co_await early_fault(conn, req, errors)) {
        co_return;
    }
    auto fail = [&](std::string_view message) -> net::awaitable<void> {
        // _create_error_response: {"error": {"message": ...}}, 400.
        std::string body;
        const std::string_view type = errors.render_status(400, message, body);
        co_await conn.send(400, type, body);
    };
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    if (!doc_ok || !doc.IsObject()) {
        std::string body;
        render_sglang_oai_error(
            OaiError{400, doc_ok ? "Input should be a valid dictionary" : "JSON decode error",
                     true},
            body);
        co_await conn.send(400, kJson, body);
        co_return;
    }
    const Value* text = member(doc, "text");
    const Value* input_ids = member(doc, "input_ids");
    // EmbeddingReqInput's field types (FastAPI), then normalize_batch_and_arguments.
    OaiInput in;
    if (text != nullptr && !read_oai_input(*text, in)) {
        std::string body;
        render_sglang_oai_error(OaiError{400, "Input should be a valid string: text", true}, body);
        co_await conn.send(400, kJson, body);
        co_return;
    }
    OaiInput id_input;
    if (input_ids != nullptr &&
        (!read_oai_input(*input_ids, id_input) || id_input.shape == OaiInput::Shape::kText ||
         id_input.shape == OaiInput::Shape::kTexts)) {
        std::string body;
        render_sglang_oai_error(
            OaiError{400, "Input should be a valid list of integers: input_ids", true}, body);
        co_await conn.send(400, kJson, body);
        co_return;
    }
    if (text == nullptr && input_ids == nullptr) {
        co_await fail("At least one of text, input_ids, or image should be provided");
        co_return;
    }
    if (text != nullptr && input_ids != nullptr) {
        co_await fail("text and input_ids cannot be provided at the same time");
        co_return;
    }
    std::optional<std::int64_t> dimensions;
    std::int64_t number = 0;
    if (get_int(doc, "dimensions", number) == Lookup::kOk) {
        dimensions = number;
    }
    const bool batch = text != nullptr ? in.shape != OaiInput::Shape::kText
                                       : id_input.shape == OaiInput::Shape::kIdLists;
    std::vector<std::vector<std::int64_t>> ids;
    if (text != nullptr) {
        for (std::string_view t : in.texts) {
            ids.push_back(ids_of(tokenize(t)));
        }
    } else {
        ids = id_input.ids;
    }
    std::vector<std::string> rids;
    if (const Value* rid = member(doc, "rid")) {
        if (rid->IsString()) {
            rids.emplace_back(rid->GetString(), rid->GetStringLength());
        } else if (rid->IsArray()) {
            for (const Value& one : rid->GetArray()) {
                rids.emplace_back(one.IsString() ? one.GetString() : "");
            }
        }
    }
    for (const auto& one : ids) {
        if (const std::string why = sglang_check(options, one.size(), dimensions); !why.empty()) {
            co_await fail(why);
            co_return;
        }
    }
    std::vector<std::vector<float>> vectors;
    for (const auto& one : ids) {
        vectors.push_back(
            embed_tokens(options, one, dimensions ? static_cast<int>(*dimensions) : 0, true));
    }
    for (std::size_t i = rids.size(); i < ids.size(); ++i) {
        rids.push_back(random_hex_id());
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);
        if (batch) {
            w.StartArray();
        }
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            // {"embedding", "meta_info"}: the output dict the tokenizer manager builds; the
            // route returns it as FastAPI's default JSONResponse (json.dumps).
            w.StartObject();
            w.key("embedding");
            write_vector(w, vectors[i], NumberStyle::kPython);
            w.key("meta_info");
            w.StartObject();
            w.kv("id", rids[i]);
            w.key("finish_reason");
            w.StartObject();
            w.kv("type", "length");
            w.kv_int("length", 0);
            w.EndObject();
            w.kv_int("prompt_tokens", static_cast<std::int64_t>(ids[i].size()));
            w.kv("weight_version", "default");
            w.kv_int("total_retractions", 0);
            const std::string latency = py_float(seconds_since(req.received));
            w.key("e2e_latency");
            w.RawValue(latency.data(), latency.size(), rapidjson::kNumberType);
            w.EndObject();
            w.EndObject();
        }
        if (batch) {
            w.EndArray();
        }
    };
    co_await send_computed(conn, req, render, errors, kJson);
}

}  // namespace infergate::emulator
