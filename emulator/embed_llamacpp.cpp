// llama.cpp's POST /embedding, /embeddings and /v1/embeddings (examples/server/server.cpp
// handle_embeddings_impl and utils.hpp at c392e509, the engine the real-engine tests run; its
// answers were checked against that build).
#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/llamacpp.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// llama-server's default physical batch (-ub 512): a non-causal input must fit in one.
constexpr int kLlamaUbatch = 512;

// One prompt of tokenize_input_prompts(): a string, ids, or ids and strings mixed.
bool llama_tokenize_mixed(const Value& v, std::vector<std::int64_t>& out) {
    if (v.IsString()) {
        out = ids_of(tokenize({v.GetString(), v.GetStringLength()}));
        return true;
    }
    if (!v.IsArray()) {
        return false;
    }
    for (const Value& item : v.GetArray()) {
        if (item.IsString()) {
            for (const Token& t : tokenize({item.GetString(), item.GetStringLength()})) {
                out.push_back(t.id);
            }
        } else if (item.IsInt64()) {
            out.push_back(item.GetInt64());
        } else {
            return false;
        }
    }
    return true;
}

bool all_ints(const Value& v) {
    for (const Value& e : v.GetArray()) {
        if (!e.IsInt64()) {
            return false;
        }
    }
    return true;
}

bool mixed(const Value& v) {
    bool str = false;
    bool num = false;
    for (const Value& e : v.GetArray()) {
        str = str || e.IsString();
        num = num || e.IsInt64();
    }
    return str && num;
}

// tokenize_input_prompts(): the prompts, or the message of the runtime_error it throws.
std::string llama_prompts(const Value& prompt, std::vector<std::vector<std::int64_t>>& out) {
    if (prompt.IsString() || (prompt.IsArray() && mixed(prompt))) {
        llama_tokenize_mixed(prompt, out.emplace_back());
    } else if (prompt.IsArray() && all_ints(prompt)) {
        llama_tokenize_mixed(prompt, out.emplace_back());
    } else if (prompt.IsArray()) {
        for (const Value& p : prompt.GetArray()) {
            if (p.IsString() || (p.IsArray() && (mixed(p) || all_ints(p)))) {
                llama_tokenize_mixed(p, out.emplace_back());
            } else {
                return "element of \"prompt\" must be a string, an list of tokens, or a list of "
                       "mixed strings & tokens";
            }
        }
    } else {
        return "\"prompt\" must be a string, an list of tokens, a list of mixed strings & "
               "tokens, or a list of prompts";
    }
    if (out.empty()) {
        return "\"prompt\" must not be empty";
    }
    return {};
}

}  // namespace

net::awaitable<void> handle_llamacpp_embeddings(Request& req, Conn& conn, const Options& options,
                                                bool oai) {
    const ErrorStyle& errors = llamacpp_errors();
    if (co_await early_fault(conn, req, errors)) {
        co_return;
    }
    auto fail = [&](int status, std::string_view message) -> net::awaitable<void> {
        std::string body;
        render_llamacpp_error(status, message, body);
        co_await conn.send(status, kLlamaJson, body);
    };
    rapidjson::Document doc;
    if (!parse_json(req.body, doc)) {
        co_await fail(500,
                      "[json.exception.parse_error.101] parse error: syntax error while "
                      "parsing value");
        co_return;
    }
    const bool none = options.embedding.pooling == Pooling::kNone;
    if (oai && none) {
        co_await fail(400,
                      "Pooling type 'none' is not OAI compatible. Please use a different "
                      "pooling type");
        co_return;
    }
    const Value* prompt = doc.IsObject() ? member(doc, "input") : nullptr;
    if (prompt == nullptr && doc.IsObject()) {
        prompt = member(doc, "content");
        oai = false;  // "content" is not OAI compatible: the native answer
    }
    if (prompt == nullptr) {
        co_await fail(400, "\"input\" or \"content\" must be provided");
        co_return;
    }
    bool base64_wanted = false;
    if (const Value* format = member(doc, "encoding_format")) {
        if (!format->IsString()) {
            co_await fail(500, "[json.exception.type_error.302] type must be string, but is " +
                                   std::string(format->IsNumber()  ? "number"
                                               : format->IsBool()  ? "boolean"
                                               : format->IsNull()  ? "null"
                                               : format->IsArray() ? "array"
                                                                   : "object"));
            co_return;
        }
        const std::string_view f(format->GetString(), format->GetStringLength());
        if (f == "base64") {
            base64_wanted = true;
        } else if (f != "float") {
            co_await fail(400,
                          "The format to return the embeddings in. Can be either float or "
                          "base64");
            co_return;
        }
    }
    std::vector<std::vector<std::int64_t>> prompts;
    if (const std::string why = llama_prompts(*prompt, prompts); !why.empty()) {
        co_await fail(500, why);
        co_return;
    }
    for (const auto& ids : prompts) {
        if (ids.empty()) {
            co_await fail(400, "Input content cannot be empty");
            co_return;
        }
    }
    for (const auto& ids : prompts) {
        // update_slots' checks of a non-causal task, the first failing one answers.
        const int n = static_cast<int>(ids.size());
        if (n > kLlamaUbatch) {
            co_await fail(500, "input is too large to process. increase the physical batch size");
            co_return;
        }
        if (n > options.max_model_len) {
            co_await fail(500, "input is larger than the max context size. skipping");
            co_return;
        }
    }
    std::string model = "gpt-3.5-turbo";  // DEFAULT_OAICOMPAT_MODEL
    if (const Value* m = member(doc, "model"); m != nullptr && m->IsString()) {
        model.assign(m->GetString(), m->GetStringLength());
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);
        std::vector<float> one;
        if (!oai) {
            // json(responses): [{"index","embedding":[[...], ...]}], a vector per token without
            // pooling, else the pooled one, normalised.
            w.StartArray();
            for (std::size_t i = 0; i < prompts.size(); ++i) {
                w.StartObject();
                w.kv_int("index", static_cast<std::int64_t>(i));
                w.key("embedding");
                w.StartArray();
                if (none) {
                    for (std::int64_t id : prompts[i]) {
                        token_vector(id, options.embedding.dim, one);
                        write_vector(w, one, NumberStyle::kNlohmann);
                    }
                } else {
                    write_vector(w, embed_tokens(options, prompts[i], 0, true),
                                 NumberStyle::kNlohmann);
                }
                w.EndArray();
                w.EndObject();
            }
            w.EndArray();
            return;
        }
        // format_embeddings_response_oaicompat.
        int tokens = 0;
        w.StartObject();
        w.kv("model", model);
        w.kv("object", "list");
        for (const auto& ids : prompts) {
            tokens += static_cast<int>(ids.size());
        }
        w.key("usage");
        w.StartObject();
        w.kv_int("prompt_tokens", tokens);
        w.kv_int("total_tokens", tokens);
        w.EndObject();
        w.key("data");
        w.StartArray();
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            const std::vector<float> v = embed_tokens(options, prompts[i], 0, true);
            w.StartObject();
            w.key("embedding");
            if (base64_wanted) {
                w.str(base64(value_bytes(v, ValueType::kFloat32)));
            } else {
                write_vector(w, v, NumberStyle::kNlohmann);
            }
            w.kv_int("index", static_cast<std::int64_t>(i));
            w.kv("object", "embedding");
            if (base64_wanted) {
                w.kv("encoding_format", "base64");
            }
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    };
    co_await send_computed(conn, req, render, errors, kLlamaJson);
}

}  // namespace infergate::emulator
