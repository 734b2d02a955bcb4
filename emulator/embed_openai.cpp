// POST /v1/embeddings of vLLM (vllm/entrypoints/pooling/embed/: protocol.py, serving.py,
// api_router.py; the renderer's length checks, pooling_params.py's matryoshka checks) and of
// SGLang's OpenAI layer (entrypoints/openai/serving_embedding.py, tokenizer_manager.py's
// validation), and SGLang's native POST /encode (http_server.py, io_struct.py EmbeddingReqInput).
#include <algorithm>
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// One input as the engine gets it: its token ids, and whether it was text.
struct EngineInput {
    std::vector<std::int64_t> ids;
};

std::string py_list(const std::vector<int>& dims) {
    std::string out = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        out += (i > 0 ? ", " : "") + std::to_string(dims[i]);
    }
    return out + "]";
}

// --- vLLM -----------------------------------------------------------------------------------

struct VllmEmbedRequest {
    bool chat = false;
    std::string model;
    OaiInput input;
    std::vector<Token> chat_tokens;
    std::string encoding = "float";
    std::optional<std::int64_t> dimensions;
    std::optional<std::int64_t> truncate;
    bool normalize = true;
    std::string embed_dtype = "float32";
    std::string endianness = "native";
    std::string request_id;
};

// pydantic's wording, shortened as the generation routes have it (openai_request_parser.hpp).
OaiError vllm_invalid(bool chat, std::string_view loc, std::string_view message) {
    std::string text = "1 validation error for ";
    text += chat ? "EmbeddingChatRequest\n" : "EmbeddingCompletionRequest\n";
    text += loc;
    text += "\n  ";
    text += message;
    return {400, std::move(text), true};
}

std::optional<OaiError> one_of(const Value& doc, bool chat, std::string_view name,
                               std::initializer_list<std::string_view> allowed, std::string& out) {
    const Value* v = member(doc, name);
    if (v == nullptr) {
        return std::nullopt;
    }
    std::string expected;
    std::size_t i = 0;
    for (std::string_view a : allowed) {
        expected += i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", ");
        expected += "'" + std::string(a) + "'";
        ++i;
    }
    if (v->IsString()) {
        const std::string_view s(v->GetString(), v->GetStringLength());
        for (std::string_view a : allowed) {
            if (s == a) {
                out.assign(s);
                return std::nullopt;
            }
        }
    }
    return vllm_invalid(chat, name, "Input should be " + expected);
}

std::optional<OaiError> parse_vllm_embed(const Value& doc, VllmEmbedRequest& r) {
    r.chat = member(doc, "messages") != nullptr;
    const bool chat = r.chat;
    if (const Value* model = member(doc, "model")) {
        if (!model->IsString()) {
            return vllm_invalid(chat, "model", "Input should be a valid string");
        }
        r.model.assign(model->GetString(), model->GetStringLength());
    }
    if (chat) {
        const Value& messages = *member(doc, "messages");
        if (!messages.IsArray()) {
            return vllm_invalid(chat, "messages", "Input should be a valid list");
        }
        bool generation_prompt = false;  // EmbeddingChatRequest's default
        if (get_bool(doc, "add_generation_prompt", generation_prompt) == Lookup::kWrongType) {
            return vllm_invalid(chat, "add_generation_prompt", "Input should be a valid boolean");
        }
        ChatTokens tokens;
        for (const Value& m : messages.GetArray()) {
            const Value* role = member(m, "role");
            if (role == nullptr || !role->IsString()) {
                return vllm_invalid(chat, "messages.role", "Field required");
            }
            tokens.add_message({role->GetString(), role->GetStringLength()});
            const Value* content = member(m, "content");
            if (content == nullptr) {
                continue;
            }
            if (content->IsString()) {
                tokens.add_content({content->GetString(), content->GetStringLength()});
            } else if (content->IsArray()) {
                for (const Value& part : content->GetArray()) {
                    const Value* text = member(part, "text");
                    if (text != nullptr && text->IsString()) {
                        tokens.add_content({text->GetString(), text->GetStringLength()});
                    }
                }
            } else {
                return vllm_invalid(chat, "messages.content", "Input should be a valid string");
            }
        }
        r.chat_tokens = tokens.finish(generation_prompt);
    } else {
        const Value* input = member(doc, "input");
        if (input == nullptr) {
            return vllm_invalid(chat, "input", "Field required");
        }
        if (!read_oai_input(*input, r.input)) {
            return vllm_invalid(chat, "input", "Input should be a valid string");
        }
    }
    if (auto e = one_of(doc, chat, "encoding_format", {"float", "base64", "bytes"}, r.encoding)) {
        return e;
    }
    std::int64_t number = 0;
    if (const Lookup got = get_int(doc, "dimensions", number); got == Lookup::kWrongType) {
        return vllm_invalid(chat, "dimensions", "Input should be a valid integer");
    } else if (got == Lookup::kOk) {
        r.dimensions = number;
    }
    if (const Value* user = member(doc, "user"); user != nullptr && !user->IsString()) {
        return vllm_invalid(chat, "user", "Input should be a valid string");
    }
    if (const Lookup got = get_int(doc, "truncate_prompt_tokens", number);
        got == Lookup::kWrongType) {
        return vllm_invalid(chat, "truncate_prompt_tokens", "Input should be a valid integer");
    } else if (got == Lookup::kOk) {
        if (number < -1) {
            return vllm_invalid(chat, "truncate_prompt_tokens",
                                "Input should be greater than or equal to -1");
        }
        r.truncate = number;
    }
    bool flag = false;
    if (get_bool(doc, "add_special_tokens", flag) == Lookup::kWrongType) {
        return vllm_invalid(chat, "add_special_tokens", "Input should be a valid boolean");
    }
    if (const Value* normalize = member(doc, "normalize"); normalize != nullptr) {
        if (normalize->IsBool()) {
            r.normalize = normalize->GetBool();
        } else if (!normalize->IsNull()) {
            return vllm_invalid(chat, "normalize", "Input should be a valid boolean");
        }
    }
    if (auto e =
            one_of(doc, chat, "embed_dtype",
                   {"float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"}, r.embed_dtype)) {
        return e;
    }
    if (auto e = one_of(doc, chat, "endianness", {"native", "big", "little"}, r.endianness)) {
        return e;
    }
    if (get_int(doc, "priority", number) == Lookup::kWrongType) {
        return vllm_invalid(chat, "priority", "Input should be a valid integer");
    }
    if (const Value* id = member(doc, "request_id")) {
        if (!id->IsString()) {
            return vllm_invalid(chat, "request_id", "Input should be a valid string");
        }
        r.request_id.assign(id->GetString(), id->GetStringLength());
    }
    return std::nullopt;
}

OaiError vllm_error(std::string message) {
    return {400, std::move(message), false};
}

// The engine prompts of a request, or the error the server gives them.
std::optional<OaiError> vllm_prompts(const VllmEmbedRequest& r, const Options& options,
                                     std::vector<EngineInput>& out) {
    const int max_len = options.max_model_len;
    if (r.chat) {
        EngineInput& in = out.emplace_back();
        in.ids = ids_of(r.chat_tokens);
        if (static_cast<int>(in.ids.size()) > max_len) {
            return vllm_error("This model's maximum context length is " + std::to_string(max_len) +
                              " tokens. However, you requested " + std::to_string(in.ids.size()) +
                              " tokens in the input for embedding generation. Please reduce the "
                              "length of the input.");
        }
        return std::nullopt;
    }
    // RenderConfig.verify_truncate_prompt_tokens: -1 is the context, 0 renders no prompt.
    std::optional<std::int64_t> keep = r.truncate;
    if (keep && *keep < 0) {
        keep = max_len;
    }
    if (keep && *keep == 0) {
        return std::nullopt;
    }
    if (r.input.size() == 0 ||
        (r.input.shape == OaiInput::Shape::kIdLists && r.input.ids.front().empty())) {
        return vllm_error("please provide at least one prompt");
    }
    for (std::size_t i = 0; i < r.input.size(); ++i) {
        EngineInput& in = out.emplace_back();
        if (r.input.shape == OaiInput::Shape::kText || r.input.shape == OaiInput::Shape::kTexts) {
            in.ids = ids_of(tokenize(r.input.texts[i]));
        } else {
            in.ids = r.input.ids[i];
        }
        // vLLM's tokenizers truncate from the left: the last `keep` tokens stay.
        if (keep && static_cast<std::int64_t>(in.ids.size()) > *keep) {
            in.ids.erase(in.ids.begin(), in.ids.end() - static_cast<std::ptrdiff_t>(*keep));
        }
        if (static_cast<int>(in.ids.size()) > max_len) {
            return vllm_error("This model's maximum context length is " + std::to_string(max_len) +
                              " tokens. However, your request has " +
                              std::to_string(in.ids.size()) +
                              " input tokens. Please reduce the length of the input messages.");
        }
    }
    return std::nullopt;
}

// PoolingParams._set_default_parameters for the embed task.
std::optional<OaiError> vllm_dimensions(const VllmEmbedRequest& r, const Options& options) {
    if (!r.dimensions) {
        return std::nullopt;
    }
    const EmbeddingOptions& e = options.embedding;
    if (!e.matryoshka) {
        return vllm_error("Model \"" + options.model +
                          "\" does not support matryoshka representation, changing output "
                          "dimensions will lead to poor results.");
    }
    if (!e.matryoshka_dims.empty()) {
        if (std::find(e.matryoshka_dims.begin(), e.matryoshka_dims.end(), *r.dimensions) ==
            e.matryoshka_dims.end()) {
            return vllm_error("Model \"" + options.model + "\" only supports " +
                              py_list(e.matryoshka_dims) +
                              " matryoshka dimensions, use other output dimensions will lead to "
                              "poor results.");
        }
    } else if (*r.dimensions < 1) {
        return vllm_error("Dimensions must be greater than 0");
    }
    return std::nullopt;
}

std::string request_header(const Request& req, std::string_view name) {
    if (req.http == nullptr) {
        return {};
    }
    const auto it = req.http->find(name);
    return it == req.http->end() ? std::string() : std::string(it->value());
}

// The values as embed_dtype and endianness ask ("native" is the machine's: little-endian).
std::string vllm_bytes(const VllmEmbedRequest& r, const std::vector<float>& v) {
    const ValueType type = r.embed_dtype == "float16"    ? ValueType::kFloat16
                           : r.embed_dtype == "bfloat16" ? ValueType::kBfloat16
                                                         : ValueType::kFloat32;
    return value_bytes(v, type, r.endianness == "big");
}

net::awaitable<void> vllm_embeddings(Request& req, Conn& conn, const Options& options) {
    const ErrorStyle& errors = vllm_errors();
    if (co_await early_fault(conn, req, errors)) {
        co_return;
    }
    auto fail = [&](const OaiError& e) -> net::awaitable<void> {
        std::string body;
        render_vllm_error(e, body);
        co_await conn.send(e.status, kJson, body);
    };
    rapidjson::Document doc;
    VllmEmbedRequest r;
    std::optional<OaiError> error;
    if (!parse_json(req.body, doc)) {
        error = OaiError{400, "JSON decode error", true};
    } else if (!doc.IsObject()) {
        error = vllm_invalid(false, "body",
                             "Input should be a valid dictionary or object to extract fields "
                             "from");
    } else {
        error = parse_vllm_embed(doc, r);
    }
    if (!error && !options.embedding.enabled) {
        // api_router.py: no embedding handler for a generative model.
        error = vllm_error("The model does not support Embeddings API");
    }
    if (!error && !r.model.empty() && r.model != options.model) {
        error = OaiError{404, "The model `" + r.model + "` does not exist.", false};
    }
    if (!error && r.truncate && *r.truncate > options.max_model_len) {
        error = vllm_error(
            "truncate_prompt_tokens value is greater than max_model_len. Please, select a "
            "smaller truncation size.");
    }
    std::vector<EngineInput> inputs;
    if (!error) {
        error = vllm_prompts(r, options, inputs);
    }
    if (!error) {
        error = vllm_dimensions(r, options);
    }
    if (!error && r.embed_dtype.starts_with("fp8")) {
        error = vllm_error("emulator: embed_dtype " + r.embed_dtype +
                           " is not emulated (float32, float16 and bfloat16 are)");
    }
    for (const EngineInput& in : inputs) {
        if (!error && in.ids.empty()) {
            error = vllm_error("The decoder prompt cannot be empty");
        }
    }
    if (error) {
        co_await fail(*error);
        co_return;
    }
    const int dims = r.dimensions ? static_cast<int>(*r.dimensions) : 0;
    std::vector<std::vector<float>> vectors;
    int prompt_tokens = 0;
    for (const EngineInput& in : inputs) {
        vectors.push_back(embed_tokens(options, in.ids, dims, r.normalize));
        prompt_tokens += static_cast<int>(in.ids.size());
    }
    std::string header_id = request_header(req, "X-Request-Id");
    const std::string id = "embd-" + (!header_id.empty()      ? header_id
                                      : !r.request_id.empty() ? r.request_id
                                                              : random_hex_id());
    const std::int64_t created = unix_now();

    if (r.encoding == "bytes") {
        // EmbeddingBytesResponse: the raw values as a StreamingResponse, their layout in a
        // `metadata` header written by json.dumps.
        std::string metadata = "{\"id\": ";
        py_json_string(id, metadata);
        metadata += ", \"created\": " + std::to_string(created) + ", \"model\": ";
        py_json_string(options.model, metadata);
        metadata += ", \"data\": [";
        std::size_t offset = 0;
        const std::size_t width = r.embed_dtype == "float32" ? 4 : 2;
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            const std::size_t size = vectors[i].size() * width;
            metadata += (i > 0 ? ", " : "");
            metadata += "{\"index\": " + std::to_string(i) + ", \"embed_dtype\": \"" +
                        r.embed_dtype + "\", \"endianness\": \"" + r.endianness +
                        "\", \"start\": " + std::to_string(offset) +
                        ", \"end\": " + std::to_string(offset + size) + ", \"shape\": [" +
                        std::to_string(vectors[i].size()) + "]}";
            offset += size;
        }
        metadata += "], \"usage\": {\"prompt_tokens\": " + std::to_string(prompt_tokens) +
                    ", \"total_tokens\": " + std::to_string(prompt_tokens) + "}}";
        co_await conn.sleep_ms(req.knobs.ttft_ms);
        // Raw bytes: the layout knobs that rewrite JSON or delimit records do not apply; cut
        // writes and 1xx responses do.
        WireStyle raw_style = req.knobs.wire;
        raw_style.json = JsonStyle::kCompact;
        raw_style.ascii_escapes = false;
        raw_style.sse = 0;
        raw_style.ndjson = 0;
        conn.set_wire_style(raw_style);
        conn.add_header("metadata", metadata);
        if (co_await conn.begin_stream("application/octet-stream")) {
            bool ok = true;
            for (std::size_t i = 0; i < vectors.size() && ok; ++i) {
                const std::string raw = vllm_bytes(r, vectors[i]);
                ok = co_await conn.send_chunk(raw);
            }
            if (ok) {
                co_await conn.end_stream();
            }
        }
        co_return;
    }

    auto render = [&](std::string& body) {
        body.reserve(256 + vectors.size() * static_cast<std::size_t>(options.embedding.dim) * 22);
        JsonWriter w(body);
        w.StartObject();
        w.kv("id", id);
        w.kv("object", "list");
        w.kv_int("created", created);
        w.kv("model", options.model);
        w.key("data");
        w.StartArray();
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            w.StartObject();
            w.kv_int("index", static_cast<std::int64_t>(i));
            w.kv("object", "embedding");
            w.key("embedding");
            if (r.encoding == "base64") {
                w.str(base64(vllm_bytes(r, vectors[i])));
            } else {
                write_vector(w, vectors[i], NumberStyle::kPython);
            }
            w.EndObject();
        }
        w.EndArray();
        w.key("usage");
        w.StartObject();
        w.kv_int("prompt_tokens", prompt_tokens);
        w.kv_int("total_tokens", prompt_tokens);
        w.kv_int("completion_tokens", 0);
        w.kv_null("prompt_tokens_details");
        w.EndObject();
        w.EndObject();
    };
    co_await send_computed(conn, req, render, errors, kJson);
}

// --- SGLang ---------------------------------------------------------------------------------

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
        return "Model '" + options.model + "' only supports " + py_list(e.matryoshka_dims) +
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

net::awaitable<void> sglang_embeddings(Request& req, Conn& conn, const Options& options) {
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

// --- the OpenAI API (the generic flavour) ----------------------------------------------------

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

net::awaitable<void> handle_oai_embeddings(Request& req, Conn& conn, const Options& options,
                                           OaiFlavor flavor) {
    if (flavor == OaiFlavor::kVllm) {
        co_await vllm_embeddings(req, conn, options);
    } else {
        co_await sglang_embeddings(req, conn, options);
    }
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
