// Ollama's POST /api/embed and /api/embeddings (server/routes.go EmbedHandler and
// EmbeddingsHandler at v0.12.6, api/types.go; the runner's refusal for a model without pooling).
#include <algorithm>
#include <chrono>
#include <optional>

#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/ollama.hpp"
#include "emulator/ollama_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;
using Clock = std::chrono::steady_clock;

// The runner's answer for a model whose pooling type is none (ollamarunner's embeddings
// handler), passed on by the server as a 500.
constexpr std::string_view kOllamaNoEmbeddings = "this model does not support embeddings";
// Ollama's default num_ctx (api.DefaultOptions, OLLAMA_CONTEXT_LENGTH unset).
constexpr int kOllamaDefaultCtx = 4096;

// encoding/json's name for a JSON value's type in an UnmarshalTypeError.
std::string go_type(const Value& v) {
    if (v.IsString()) {
        return "string";
    }
    if (v.IsBool()) {
        return "bool";
    }
    if (v.IsNumber()) {
        return "number " + py_number(v);
    }
    return v.IsArray() ? "array" : "object";
}

std::string go_field_error(const Value& v, std::string_view type, std::string_view field,
                           std::string_view go) {
    return "json: cannot unmarshal " + go_type(v) + " into Go struct field " + std::string(type) +
           "." + std::string(field) + " of type " + std::string(go);
}

// time.ParseDuration's verdict on a keep_alive string: empty when it parses.
std::string go_duration_error(std::string_view s) {
    const std::string quoted_s = quoted(s, '"');
    std::string_view rest = s;
    if (!rest.empty() && (rest[0] == '-' || rest[0] == '+')) {
        rest.remove_prefix(1);
    }
    if (rest == "0") {
        return {};
    }
    if (rest.empty()) {
        return "time: invalid duration " + quoted_s;
    }
    while (!rest.empty()) {
        std::size_t i = 0;
        bool digits = false;
        while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
            ++i;
            digits = true;
        }
        if (i < rest.size() && rest[i] == '.') {
            ++i;
            while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
                ++i;
                digits = true;
            }
        }
        if (!digits) {
            return "time: invalid duration " + quoted_s;
        }
        const std::size_t unit_start = i;
        while (i < rest.size() && rest[i] != '.' && (rest[i] < '0' || rest[i] > '9')) {
            ++i;
        }
        const std::string_view unit = rest.substr(unit_start, i - unit_start);
        if (unit.empty()) {
            return "time: missing unit in duration " + quoted_s;
        }
        static constexpr std::string_view kUnits[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs",
                                                      "ms", "s",  "m",         "h"};
        if (std::find(std::begin(kUnits), std::end(kUnits), unit) == std::end(kUnits)) {
            return "time: unknown unit " + quoted(unit, '"') + " in duration " + quoted_s;
        }
        rest.remove_prefix(i);
    }
    return {};
}

// keep_alive (api.Duration's UnmarshalJSON): a number of seconds or a duration string.
std::string check_keep_alive(const Value& doc) {
    const Value* v = member(doc, "keep_alive");
    if (v == nullptr || v->IsNull() || v->IsNumber()) {
        return {};
    }
    if (v->IsString()) {
        return go_duration_error({v->GetString(), v->GetStringLength()});
    }
    return std::string("Unsupported type: '") +
           (v->IsBool()    ? "bool"
            : v->IsArray() ? "[]interface {}"
                           : "map[string]interface {}") +
           "'";
}

// The context an input must fit (min(num_ctx, the model's)); a bad num_ctx is scheduleRunner's
// error (handleScheduleError: a 500).
std::optional<int> ollama_context(const Value& doc, const Options& options, std::string& error) {
    int num_ctx = kOllamaDefaultCtx;
    if (const Value* opts = member(doc, "options"); opts != nullptr && opts->IsObject()) {
        if (const Value* n = member(*opts, "num_ctx")) {
            if (!n->IsNumber()) {
                error = "invalid int option \"num_ctx\"";
                return std::nullopt;
            }
            num_ctx = static_cast<int>(n->GetDouble());
        }
    }
    return std::min(num_ctx, options.max_model_len);
}

net::awaitable<void> ollama_embed(Request& req, Conn& conn, const Options& options,
                                  const Value& doc) {
    const ErrorStyle& errors = ollama_errors();
    constexpr std::string_view kType = "EmbedRequest";
    std::string model;
    // ShouldBindJSON: the field types, in the order the fields come.
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view name(it->name.GetString(), it->name.GetStringLength());
        const Value& v = it->value;
        std::string error;
        if (v.IsNull()) {
            continue;
        }
        if (name == "model" && !v.IsString()) {
            error = go_field_error(v, kType, "model", "string");
        } else if (name == "truncate" && !v.IsBool()) {
            error = go_field_error(v, kType, "truncate", "bool");
        } else if (name == "dimensions" && !v.IsInt64()) {
            error = go_field_error(v, kType, "dimensions", "int");
        } else if (name == "options" && !v.IsObject()) {
            error = go_field_error(v, kType, "options", "map[string]interface {}");
        } else if (name == "keep_alive") {
            error = check_keep_alive(doc);
        }
        if (!error.empty()) {
            co_await send_ollama_error(conn, 400, error);
            co_return;
        }
    }
    if (const Value* m = member(doc, "model"); m != nullptr && m->IsString()) {
        model.assign(m->GetString(), m->GetStringLength());
    }
    bool truncate = true;
    get_bool(doc, "truncate", truncate);
    std::int64_t dimensions = 0;
    get_int(doc, "dimensions", dimensions);
    std::vector<std::string_view> inputs;
    if (const Value* input = member(doc, "input"); input != nullptr && !input->IsNull()) {
        if (input->IsString()) {
            if (input->GetStringLength() > 0) {
                inputs.emplace_back(input->GetString(), input->GetStringLength());
            }
        } else if (input->IsArray()) {
            for (const Value& item : input->GetArray()) {
                if (!item.IsString()) {
                    co_await send_ollama_error(conn, 400, "invalid input type");
                    co_return;
                }
                inputs.emplace_back(item.GetString(), item.GetStringLength());
            }
        } else {
            co_await send_ollama_error(conn, 400, "invalid input type");
            co_return;
        }
    }
    if (!ollama_model_matches(options, model)) {
        co_await send_ollama_error(conn, 404, "model '" + model + "' not found");
        co_return;
    }
    std::string context_error;
    const std::optional<int> context = ollama_context(doc, options, context_error);
    if (!context) {
        co_await send_ollama_error(conn, 500, context_error);
        co_return;
    }
    const Clock::time_point loaded = Clock::now();
    std::vector<std::vector<std::int64_t>> ids;
    int count = 0;
    for (std::string_view text : inputs) {
        std::vector<std::int64_t> one = ids_of(tokenize(text));
        int ctx_len = *context;
        if (static_cast<int>(one.size()) > ctx_len) {
            if (!truncate) {
                co_await send_ollama_error(conn, 400, "input exceeds maximum context length");
                co_return;
            }
            // Room for the BOS the emulator's model would add (add_bos_token true); it adds no
            // EOS (add_eos_token false).
            if (one.front() != kBosId) {
                --ctx_len;
            }
            if (ctx_len <= 0) {
                co_await send_ollama_error(conn, 400,
                                           "input after truncation exceeds maximum context length");
                co_return;
            }
            one.resize(static_cast<std::size_t>(ctx_len));
        }
        count += static_cast<int>(one.size());
        ids.push_back(std::move(one));
    }
    if (!ids.empty() && !options.embedding.enabled) {
        co_await send_ollama_error(conn, 500, kOllamaNoEmbeddings);
        co_return;
    }
    std::vector<std::vector<float>> vectors;
    for (const auto& one : ids) {
        vectors.push_back(embed_tokens(
            options, one, static_cast<int>(std::max<std::int64_t>(0, dimensions)), true));
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);
        w.StartObject();
        w.kv("model", model);
        w.key("embeddings");
        w.StartArray();
        for (const auto& v : vectors) {
            write_vector(w, v, NumberStyle::kGo32);
        }
        w.EndArray();
        if (!vectors.empty()) {  // a load-only request leaves the omitempty fields out
            w.kv_int("total_duration",
                     std::max<std::int64_t>(1, nanos_between(req.received, Clock::now())));
            w.kv_int("load_duration",
                     std::max<std::int64_t>(1, nanos_between(req.received, loaded)));
            w.kv_int("prompt_eval_count", count);
        }
        w.EndObject();
    };
    co_await send_computed(conn, req, render, errors, kGoJson);
}

net::awaitable<void> ollama_embeddings(Request& req, Conn& conn, const Options& options,
                                       const Value& doc) {
    constexpr std::string_view kType = "EmbeddingRequest";
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view name(it->name.GetString(), it->name.GetStringLength());
        const Value& v = it->value;
        std::string error;
        if (v.IsNull()) {
            continue;
        }
        if ((name == "model" || name == "prompt") && !v.IsString()) {
            error = go_field_error(v, kType, name, "string");
        } else if (name == "options" && !v.IsObject()) {
            error = go_field_error(v, kType, "options", "map[string]interface {}");
        } else if (name == "keep_alive") {
            error = check_keep_alive(doc);
        }
        if (!error.empty()) {
            co_await send_ollama_error(conn, 400, error);
            co_return;
        }
    }
    std::string model;
    std::string_view prompt;
    if (const Value* m = member(doc, "model"); m != nullptr && m->IsString()) {
        model.assign(m->GetString(), m->GetStringLength());
    }
    if (const Value* p = member(doc, "prompt"); p != nullptr && p->IsString()) {
        prompt = {p->GetString(), p->GetStringLength()};
    }
    if (model.empty()) {
        co_await send_ollama_error(conn, 400, "model is required");
        co_return;
    }
    if (!ollama_model_matches(options, model)) {
        co_await send_ollama_error(conn, 404,
                                   "model \"" + model + "\" not found, try pulling it first");
        co_return;
    }
    std::string context_error;
    const std::optional<int> context = ollama_context(doc, options, context_error);
    if (!context) {
        co_await send_ollama_error(conn, 500, context_error);
        co_return;
    }
    std::vector<float> vector;
    if (!prompt.empty()) {  // an empty prompt only loads the model
        if (!options.embedding.enabled) {
            co_await send_ollama_error(conn, 500, kOllamaNoEmbeddings);
            co_return;
        }
        const std::vector<std::int64_t> ids = ids_of(tokenize(prompt));
        if (static_cast<int>(ids.size()) > *context) {
            // The runner does not truncate an embedding's input.
            co_await send_ollama_error(
                conn, 500,
                "Failed to create new sequence: the input length exceeds the context length");
            co_return;
        }
        vector = embed_tokens(options, ids, 0, false);  // as the model gives it: not normalised
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);
        w.StartObject();
        w.key("embedding");
        write_vector(w, vector, NumberStyle::kGo64);  // []float64 of the float32 values
        w.EndObject();
    };
    co_await send_computed(conn, req, render, ollama_errors(), kGoJson);
}

}  // namespace

net::awaitable<void> handle_ollama_embed(Request& req, Conn& conn, const Options& options,
                                         bool legacy) {
    if (co_await early_fault(conn, req, ollama_errors())) {
        co_return;
    }
    rapidjson::Document doc;
    if (!parse_json(req.body, doc)) {
        co_await send_ollama_error(conn, 400, go_json_error(req.body, doc));
        co_return;
    }
    if (!doc.IsObject()) {
        co_await send_ollama_error(conn, 400,
                                   "json: cannot unmarshal " + go_type(doc) +
                                       " into Go value of type api." +
                                       (legacy ? "EmbeddingRequest" : "EmbedRequest"));
        co_return;
    }
    if (legacy) {
        co_await ollama_embeddings(req, conn, options, doc);
    } else {
        co_await ollama_embed(req, conn, options, doc);
    }
}

}  // namespace infergate::emulator
