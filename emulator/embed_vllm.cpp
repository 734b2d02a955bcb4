// vLLM's POST /v1/embeddings (vllm/entrypoints/pooling/embed/: protocol.py, serving.py,
// api_router.py; the renderer's length checks, pooling_params.py's matryoshka checks).
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
                              python_list(e.matryoshka_dims) +
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

}  // namespace

net::awaitable<void> handle_vllm_embeddings(Request& req, Conn& conn, const Options& options) {
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

}  // namespace infergate::emulator
