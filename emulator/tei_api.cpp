// Hugging Face text-embeddings-inference (router/src/http/server.rs and types.rs,
// router/src/lib.rs, core/src/infer.rs and tokenization.rs, version 1.9): POST /embed (and POST
// / and /invocations, an embedding model's default routes), POST /v1/embeddings (and
// /embeddings), POST /tokenize, POST /decode, GET /info, GET /health (and / and /ping). axum
// answers any other route with an empty 404.
#include <thread>

#include "emulator/json_util.hpp"
#include "emulator/tei.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;
using rapidjson::Value;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kTeiVersion = "1.9.3-emulator";
constexpr int kMaxBatchTokens = 16384;        // --max-batch-tokens
constexpr int kMaxConcurrent = 512;           // --max-concurrent-requests
constexpr std::size_t kCharMultiplier = 250;  // tokenization.rs MAX_CHAR_MULTIPLIER

// One input: text, or token ids (InputType).
struct TeiInput {
    bool ids = false;
    std::string_view text;
    std::vector<std::int64_t> token_ids;
};

// Input: Single(InputType) | Batch(Vec<InputType>), untagged.
bool read_input_type(const Value& v, TeiInput& out) {
    if (v.IsString()) {
        out.text = {v.GetString(), v.GetStringLength()};
        return true;
    }
    if (!v.IsArray()) {
        return false;
    }
    out.ids = true;
    for (const Value& id : v.GetArray()) {
        if (!id.IsUint()) {
            return false;
        }
        out.token_ids.push_back(id.GetUint());
    }
    return true;
}

bool read_inputs(const Value& v, std::vector<TeiInput>& out, bool& batch) {
    TeiInput single;
    if (read_input_type(v, single)) {
        batch = false;
        out.push_back(std::move(single));
        return true;
    }
    if (!v.IsArray()) {
        return false;
    }
    batch = true;
    for (const Value& item : v.GetArray()) {
        TeiInput one;
        if (!read_input_type(item, one)) {
            return false;
        }
        out.push_back(std::move(one));
    }
    return true;
}

// What embed_pooled does with one input: the prompt, the character limit, the tokenizer with
// truncation, the token limit, then the vector. `tokens` gets the count.
TeiFailure embed_one(const Options& options, const TeiInput& in, bool truncate, bool left,
                     const std::string* prompt_name, bool normalize,
                     std::optional<std::int64_t> dims, std::vector<float>& vector, int& tokens) {
    if (dims && *dims == 0) {
        return tei_validation("`dimensions` should be positive");
    }
    if (in.ids ? in.token_ids.empty() : in.text.empty()) {
        return tei_empty_input("`inputs` cannot be empty");
    }
    std::string pre_prompt;
    if (TeiFailure f = tei_prompt_text(options, prompt_name, pre_prompt)) {
        return f;
    }
    // Ids are decoded and encoded again (tokenize_input); a text gets the prompt in front.
    std::string text =
        in.ids ? detokenize(in.token_ids, !pre_prompt.empty()) : std::string(in.text);
    text.insert(0, pre_prompt);
    const std::size_t max_input = static_cast<std::size_t>(options.max_model_len);
    const std::size_t limit = max_input * kCharMultiplier;
    std::size_t chars = 0;
    std::size_t cut = text.size();
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) {
            if (chars == limit) {
                cut = i;
            }
            ++chars;
        }
    }
    if (chars > limit) {
        if (!truncate) {
            return tei_validation("`inputs` must have less than " + std::to_string(limit) +
                                  " characters. Given: " + std::to_string(chars));
        }
        text.resize(cut);
    }
    std::vector<std::int64_t> ids = ids_of(tokenize(text));
    if (truncate && ids.size() > max_input) {
        if (left) {
            ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(max_input));
        } else {
            ids.resize(max_input);
        }
    }
    if (ids.size() > max_input) {
        return tei_validation("`inputs` must have less than " + std::to_string(max_input) +
                              " tokens. Given: " + std::to_string(ids.size()));
    }
    if (dims && *dims > options.embedding.dim) {
        return tei_validation(
            "`dimensions` should be smaller than the maximum embedding dimension.");
    }
    vector = embed_tokens(options, ids, dims ? static_cast<int>(*dims) : 0, normalize);
    tokens = static_cast<int>(ids.size());
    return {};
}

std::size_t count_chars(const TeiInput& in) {
    if (in.ids) {
        return in.token_ids.size();
    }
    std::size_t n = 0;
    for (char c : in.text) {
        n += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
    }
    return n;
}

// ResponseMetadata's headers.
void add_metadata(Conn& conn, const Request& req, std::size_t chars, int tokens) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - req.received).count();
    conn.add_header("x-compute-type", "gpu+optimized");
    conn.add_header("x-compute-time", std::to_string(ms));
    conn.add_header("x-compute-characters", std::to_string(chars));
    conn.add_header("x-compute-tokens", std::to_string(tokens));
    conn.add_header("x-total-time", std::to_string(ms));
    conn.add_header("x-tokenization-time", "0");
    conn.add_header("x-queue-time", "0");
    conn.add_header("x-inference-time", std::to_string(ms));
}

net::awaitable<void> handle_embed(Request& req, Conn& conn, const Options& options, bool openai) {
    if (co_await early_fault(conn, req, tei_errors())) {
        co_return;
    }
    rapidjson::Document doc;
    TeiRejection rejection;
    std::vector<TeiInput> inputs;
    bool batch = false;
    bool truncate = true;  // --auto-truncate's default
    bool left = false;
    bool normalize = true;
    bool base64_wanted = false;
    std::optional<std::string> prompt_name;
    std::optional<std::int64_t> dims;
    if (!parse_json(req.body, doc)) {
        rejection = tei_syntax_error(req.body, doc);
    } else if (!doc.IsObject()) {
        rejection = tei_shape_error(
            req.body, std::string("invalid type: ") + serde_type(doc) + ", expected struct " +
                          (openai ? "OpenAICompatRequest" : "EmbedRequest"));
    } else {
        const std::string_view field = openai ? "input" : "inputs";
        const Value* input = member(doc, field);
        if (input == nullptr) {
            rejection = tei_shape_error(req.body, "missing field `" + std::string(field) + "`");
        } else if (!read_inputs(*input, inputs, batch)) {
            rejection = tei_shape_error(
                req.body,
                std::string(field) + ": data did not match any variant of untagged enum Input");
        }
        if (rejection.status == 0 && !openai) {
            if (const Value* t = member(doc, "truncate"); t != nullptr && !t->IsNull()) {
                if (!t->IsBool()) {
                    rejection =
                        tei_shape_error(req.body, "truncate: invalid type: " + serde_type(*t) +
                                                      ", expected a boolean");
                } else {
                    truncate = t->GetBool();
                }
            }
            if (const Value* d = member(doc, "truncation_direction"); d != nullptr) {
                const std::string_view s =
                    d->IsString() ? std::string_view(d->GetString(), d->GetStringLength()) : "";
                if (s == "Left" || s == "left") {
                    left = true;
                } else if (s != "Right" && s != "right") {
                    rejection = tei_shape_error(
                        req.body, d->IsString()
                                      ? "truncation_direction: unknown variant `" + std::string(s) +
                                            "`, expected `Left` or `Right`"
                                      : "truncation_direction: invalid type: " + serde_type(*d) +
                                            ", expected enum TruncationDirection");
                }
            }
            if (const Value* p = member(doc, "prompt_name"); p != nullptr && !p->IsNull()) {
                if (!p->IsString()) {
                    rejection =
                        tei_shape_error(req.body, "prompt_name: invalid type: " + serde_type(*p) +
                                                      ", expected a string");
                } else {
                    prompt_name.emplace(p->GetString(), p->GetStringLength());
                }
            }
            if (const Value* n = member(doc, "normalize"); n != nullptr) {
                if (!n->IsBool()) {
                    rejection = tei_shape_error(
                        req.body, "normalize: invalid type: " +
                                      (n->IsNull() ? std::string("null") : serde_type(*n)) +
                                      ", expected a boolean");
                } else {
                    normalize = n->GetBool();
                }
            }
        }
        if (rejection.status == 0 && openai) {
            if (const Value* f = member(doc, "encoding_format"); f != nullptr) {
                const std::string_view s =
                    f->IsString() ? std::string_view(f->GetString(), f->GetStringLength()) : "";
                if (s == "base64") {
                    base64_wanted = true;
                } else if (s != "float") {
                    rejection = tei_shape_error(
                        req.body, f->IsString()
                                      ? "encoding_format: unknown variant `" + std::string(s) +
                                            "`, expected `float` or `base64`"
                                      : "encoding_format: invalid type: " + serde_type(*f) +
                                            ", expected enum EncodingFormat");
                }
            }
            for (const char* name : {"model", "user"}) {
                if (const Value* v = member(doc, name);
                    v != nullptr && !v->IsNull() && !v->IsString()) {
                    rejection = tei_shape_error(req.body, std::string(name) +
                                                              ": invalid type: " + serde_type(*v) +
                                                              ", expected a string");
                }
            }
        }
        if (const Value* d = member(doc, "dimensions");
            rejection.status == 0 && d != nullptr && !d->IsNull()) {
            if (d->IsInt64() && d->GetInt64() < 0) {
                rejection = tei_shape_error(req.body, "dimensions: invalid value: integer `" +
                                                          std::to_string(d->GetInt64()) +
                                                          "`, expected usize");
            } else if (!d->IsUint64()) {
                rejection = tei_shape_error(
                    req.body, "dimensions: invalid type: " + serde_type(*d) + ", expected usize");
            } else {
                dims = static_cast<std::int64_t>(d->GetUint64());
            }
        }
    }
    if (rejection.status != 0) {
        co_await conn.send(rejection.status, kPlainText, rejection.message);
        co_return;
    }
    auto fail = [&](const TeiFailure& f) -> net::awaitable<void> {
        co_await conn.send(tei_error_status(f.type), kJson, tei_error_body(f, openai));
    };
    // (GCC 12 destroys a braced temporary in a co_await's arguments twice: named first.)
    if (const TeiFailure f = tei_batch_error(batch, inputs.size())) {
        co_await fail(f);
        co_return;
    }
    std::vector<std::vector<float>> vectors(inputs.size());
    int tokens = 0;
    std::size_t chars = 0;
    TeiFailure failure;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        int n = 0;
        TeiFailure f;
        if (openai) {
            // The OpenAI route: --auto-truncate, from the right, no prompt, always normalised.
            f = embed_one(options, inputs[i], true, false, nullptr, true, dims, vectors[i], n);
        } else {
            f = embed_one(options, inputs[i], truncate, left, prompt_name ? &*prompt_name : nullptr,
                          normalize, dims, vectors[i], n);
        }
        if (f) {
            failure = std::move(f);
            break;
        }
        tokens += n;
        chars += count_chars(inputs[i]);
    }
    if (failure) {
        co_await fail(failure);
        co_return;
    }
    auto render = [&](std::string& body) {
        add_metadata(conn, req, chars, tokens);
        JsonWriter w(body);
        if (!openai) {
            w.StartArray();  // EmbedResponse(Vec<Vec<f32>>), one vector even for one input
            for (const auto& v : vectors) {
                write_vector(w, v, NumberStyle::kRustF32);
            }
            w.EndArray();
            return;
        }
        w.StartObject();
        w.kv("object", "list");
        w.key("data");
        w.StartArray();
        for (std::size_t i = 0; i < vectors.size(); ++i) {
            w.StartObject();
            w.kv("object", "embedding");
            w.key("embedding");
            if (base64_wanted) {
                w.str(base64(value_bytes(vectors[i], ValueType::kFloat32)));
            } else {
                write_vector(w, vectors[i], NumberStyle::kRustF32);
            }
            w.kv_int("index", static_cast<std::int64_t>(i));
            w.EndObject();
        }
        w.EndArray();
        w.kv("model", options.model);  // served_model_name, whatever the request named
        w.key("usage");
        w.StartObject();
        w.kv_int("prompt_tokens", tokens);
        w.kv_int("total_tokens", tokens);
        w.EndObject();
        w.EndObject();
    };
    co_await send_computed(conn, req, render, tei_errors(), kJson);
}

std::string info_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.kv("model_id", options.model);
    w.kv_null("model_sha");
    w.kv("model_dtype", "float16");
    w.kv("served_model_name", options.model);
    w.key("model_type");
    w.StartObject();
    w.key("embedding");
    w.StartObject();
    w.kv("pooling", pooling_name(options.embedding.pooling));
    w.EndObject();
    w.EndObject();
    w.kv_int("max_concurrent_requests", kMaxConcurrent);
    w.kv_int("max_input_length", options.max_model_len);
    w.kv_int("max_batch_tokens", std::max(kMaxBatchTokens, options.max_model_len));
    w.kv_null("max_batch_requests");
    w.kv_int("max_client_batch_size", kTeiMaxClientBatchSize);
    w.kv_bool("auto_truncate", true);
    w.kv_int("tokenization_workers", options.threads);
    w.kv("version", kTeiVersion);
    w.kv_null("sha");
    w.kv_null("docker_label");
    w.EndObject();
    return body;
}

}  // namespace

net::awaitable<void> route_tei(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    const bool get = req.method == verb::get || req.method == verb::head;
    const bool post = req.method == verb::post;
    const bool embed = path == "/embed" || path == "/invocations";
    const bool openai = path == "/v1/embeddings" || path == "/embeddings";
    if (embed || openai || path == "/tokenize" || path == "/decode") {
        if (!post) {
            co_await conn.send(405, "", "");
        } else if (path == "/tokenize") {
            co_await handle_tei_tokenize(req, conn, options);
        } else if (path == "/decode") {
            co_await handle_tei_decode(req, conn);
        } else {
            co_await handle_embed(req, conn, options, openai);
        }
    } else if (path == "/") {
        // GET: the health route; POST: the embedding model's default route.
        if (post) {
            co_await handle_embed(req, conn, options, false);
        } else if (get) {
            co_await conn.send(200, "", "");
        } else {
            co_await conn.send(405, "", "");
        }
    } else if (path == "/health" || path == "/ping") {
        co_await conn.send(get ? 200 : 405, "", "");
    } else if (path == "/info") {
        if (get) {
            co_await conn.send(200, kJson, info_body(options));
        } else {
            co_await conn.send(405, "", "");
        }
    } else {
        co_await conn.send(404, "", "");  // axum's fallback: empty body
    }
}

}  // namespace infergate::emulator
