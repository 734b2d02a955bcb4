// Hugging Face TGI's router (router/src/server.rs): /generate, /generate_stream, the compat
// POST /, the info routes, and the OpenAI routes (tgi_openai.cpp). axum framing: SSE events are
// `data:{json}` with no space, streams have no terminator, 404/405 have empty bodies.
#include <algorithm>
#include <charconv>

#include "emulator/api.hpp"
#include "emulator/embed.hpp"
#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/tgi_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;

constexpr std::string_view kSse = "text/event-stream";
constexpr std::string_view kEosText = "</s>";
constexpr std::string_view kGarbage[] = {
    "data:{\"index\":1,\"token\":<<garbage\xff\xfe\n\n",
    "data:\x01\x02 not json at all }}]]\n\n",
};
constexpr Framing kFraming{kSse, kJson, "", kGarbage};

enum class Route { kGenerate, kStream, kCompat };

// Rust's f64 Display: shortest round-trip digits, never an exponent.
std::string rust_f64(double v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
    return {buf, end};
}

// TGI never trims: a stop sequence stays in the text together with the rest of its token.
std::string generated_text(const TgiRequest& tr, const Output& o) {
    std::string text;
    if (tr.return_full_text) {
        text.assign(tr.inputs);
    }
    text += o.raw_text;
    return text;
}

std::string_view tgi_finish(const Output& o) {
    return o.finish == Finish::kLength ? "length"
           : o.finish == Finish::kEos  ? "eos_token"
                                       : "stop_sequence";
}

void write_seed(JsonWriter& w, const TgiRequest& tr, std::uint64_t drawn) {
    w.key("seed");
    if (tr.sampling) {
        w.Uint64(tr.seed.value_or(drawn));
    } else {
        w.Null();
    }
}

class TgiErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        if (status == 401) {
            body.clear();  // the auth middleware answers with an empty body
            return "";
        }
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", message);
        w.kv("error_type", status == 422   ? "validation"
                           : status == 429 ? "overloaded"
                           : status == 500 ? "incomplete_generation"
                                           : "generation");
        w.EndObject();
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        event = "data:";
        JsonWriter w(event);
        w.StartObject();
        w.kv("error", message);
        w.kv("error_type", "generation");
        w.EndObject();
        event += "\n\n";
    }
};
const TgiErrors kErrors;

// One event per token, whatever tokens-per-chunk says: a step of k tokens is k events.
class TgiEncoder final : public EventEncoder {
public:
    TgiEncoder(const TgiRequest& tr, std::uint64_t seed) : tr_(tr), seed_(seed) {}
    void on_step(ChoiceState& c, int tokens, bool, EventList& out) override {
        const Output& o = c.out;
        const LogprobSeq seq(o, kEosText);
        for (int k = c.tokens_sent; k < tokens; ++k) {
            const bool final = k + 1 == o.completion_tokens();
            std::string& event = out.next();
            event = "data:";
            JsonWriter w(event);
            w.StartObject();
            w.kv_int("index", k + 1);
            w.key("token");
            write_tgi_token(w, seq, k);
            if (tr_.top_n_tokens > 0) {  // skip_serializing_if = "Vec::is_empty"
                w.key("top_tokens");
                write_tgi_top_tokens(w, seq, k, tr_.top_n_tokens);
            }
            if (final) {
                w.kv("generated_text", generated_text(tr_, o));
            } else {
                w.kv_null("generated_text");
            }
            w.key("details");
            if (final && tr_.details) {
                w.StartObject();
                w.kv("finish_reason", tgi_finish(o));
                w.kv_int("generated_tokens", o.completion_tokens());
                write_seed(w, tr_, seed_);
                w.kv_int("input_length", tr_.key.tokens);
                w.EndObject();
            } else {
                w.Null();
            }
            w.EndObject();
            event += "\n\n";
        }
    }
    void on_end(std::vector<ChoiceState>&, EventList&) override {}

private:
    const TgiRequest& tr_;
    std::uint64_t seed_;
};

void add_timing_headers(Conn& conn, const Request& req, const TgiRequest& tr, const Output& o) {
    const double total = seconds_since(req.received);
    const auto ms = [](double s) { return std::to_string(static_cast<std::int64_t>(s * 1000)); };
    conn.add_header("x-compute-type", "gpu+optimized");
    conn.add_header("x-compute-time", rust_f64(total));
    conn.add_header("x-compute-characters", std::to_string(tr.inputs.size()));
    conn.add_header("x-total-time", ms(total));
    conn.add_header("x-validation-time", "0");
    conn.add_header("x-queue-time", "0");
    conn.add_header("x-inference-time", ms(total));
    conn.add_header("x-time-per-token", ms(total / std::max(1, o.completion_tokens())));
    conn.add_header("x-prompt-tokens", std::to_string(tr.key.tokens));
    conn.add_header("x-generated-tokens", std::to_string(o.completion_tokens()));
}

bool is_json_request(const Request& req) {
    if (req.http == nullptr) {
        return true;
    }
    const auto it = req.http->find(boost::beast::http::field::content_type);
    if (it == req.http->end()) {
        return false;
    }
    const std::string_view type(it->value().data(), it->value().size());
    return type.starts_with("application/json") || type.find("+json") != std::string_view::npos;
}

net::awaitable<void> handle_generate(Request& req, Conn& conn, const Options& options,
                                     Route route) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    TgiRequest tr;
    TgiError error = parse_tgi_request(req.body, doc, doc_ok, route == Route::kCompat, options, tr);
    const bool stream = route == Route::kStream || tr.stream;
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, kErrors, kFraming)) {
        co_return;
    }
    if (!is_json_request(req)) {
        co_await conn.send(415, kPlainText, "Expected request with `Content-Type: application/json`");
        co_return;
    }
    if (error.kind == TgiError::kNone && stream) {
        error = validate_tgi_stream(tr);
    }
    if (error.kind == TgiError::kSyntax || error.kind == TgiError::kShape) {
        co_await conn.send(error.kind == TgiError::kSyntax ? 400 : 422, kPlainText, error.message);
        co_return;
    }
    if (error.kind == TgiError::kValidation) {
        std::string body;
        if (!stream) {
            co_await conn.send(422, kErrors.render_status(422, error.message, body), body);
            co_return;
        }
        // generate_stream reports even validation errors in-band, under a 200.
        body = "data:";
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", error.message);
        w.kv("error_type", "validation");
        w.EndObject();
        body += "\n\n";
        if (co_await conn.begin_stream(kSse)) {
            co_await conn.finish_stream(body);
        }
        co_return;
    }
    tr.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices({tr.key}, 1, tr.max_new_tokens, tr.stop);
    if (tr.format) {
        apply_format(*tr.format, choices, tr.max_new_tokens);
    }
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, tr.key, choices);
    if (!gen) {
        co_return;  // TGI reports no cached prompt tokens: only the prefill time shows a hit
    }
    const std::uint64_t drawn = std::stoull(random_hex_id().substr(0, 15), nullptr, 16);
    if (stream) {
        conn.add_header("x-compute-type", "gpu+optimized");
        conn.add_header("x-compute-characters", std::to_string(tr.inputs.size()));
        conn.add_header("x-accel-buffering", "no");
        conn.add_header("cache-control", "no-cache");
        TgiEncoder encoder(tr, drawn);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        const Output& o = choices.front().out;
        add_timing_headers(conn, req, tr, o);
        JsonWriter w(body);
        if (route == Route::kCompat) {
            w.StartArray();
        }
        w.StartObject();
        w.kv("generated_text", generated_text(tr, o));
        if (tr.details) {
            w.key("details");
            w.StartObject();
            w.kv("finish_reason", tgi_finish(o));
            w.kv_int("generated_tokens", o.completion_tokens());
            write_seed(w, tr, drawn);
            w.key("prefill");
            if (tr.decoder_input_details) {
                const std::vector<PromptToken> prompt = prompt_tokens_from_text(tr.inputs);
                write_tgi_prefill(w, LogprobSeq(prompt, kEosText));
            } else {
                w.StartArray();
                w.EndArray();
            }
            const LogprobSeq seq(o, kEosText);
            w.key("tokens");
            w.StartArray();
            for (int k = 0; k < seq.size(); ++k) {
                write_tgi_token(w, seq, k);
            }
            w.EndArray();
            if (tr.top_n_tokens > 0) {  // after best_of_sequences, omitted when empty
                w.key("top_tokens");
                w.StartArray();
                for (int k = 0; k < seq.size(); ++k) {
                    write_tgi_top_tokens(w, seq, k, tr.top_n_tokens);
                }
                w.EndArray();
            }
            w.EndObject();
        }
        w.EndObject();
        if (route == Route::kCompat) {
            w.EndArray();
        }
    };
    co_await send_generated(conn, req, choices, render, kErrors, kFraming);
}

std::string info_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.kv("model_id", options.model);
    w.kv_null("model_sha");
    w.kv("model_pipeline_tag", "text-generation");
    w.kv_int("max_concurrent_requests", 128);
    w.kv_int("max_best_of", 2);
    w.kv_int("max_stop_sequences", 4);
    w.kv_int("max_input_tokens", options.max_model_len - 1);
    w.kv_int("max_total_tokens", options.max_model_len);
    w.kv_int("validation_workers", 2);
    w.kv_int("max_client_batch_size", 4);
    w.kv("router", "text-generation-router");
    w.kv("version", kTgiVersion);
    w.kv_null("sha");
    w.kv_null("docker_label");
    w.EndObject();
    return body;
}

std::string models_body(const Options& options) {
    return model_list_body(options.model, 0, options.model);  // TGI: created 0, owned_by the id
}

}  // namespace

net::awaitable<void> route_tgi(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    const bool get = req.method == verb::get || req.method == verb::head;
    const bool post = req.method == verb::post;
    if (path == "/generate" || path == "/generate_stream" || (path == "/" && post)) {
        if (!post) {
            co_await conn.send(405, "", "");
            co_return;
        }
        const Route route = path == "/generate"        ? Route::kGenerate
                            : path == "/generate_stream" ? Route::kStream
                                                         : Route::kCompat;
        co_await handle_generate(req, conn, options, route);
    } else if (path == "/v1/chat/completions" || path == "/v1/completions") {
        if (post) {
            co_await handle_tgi_openai(req, conn, options, path == "/v1/chat/completions");
        } else {
            co_await conn.send(405, "", "");
        }
    } else if (path == "/tokenize") {
        if (post) {
            co_await handle_tgi_tokenize(req, conn, options);
        } else {
            co_await conn.send(405, "", "");
        }
    } else if (path == "/" || path == "/health" || path == "/ping") {
        co_await conn.send(get ? 200 : 405, "", "");
    } else if (path == "/info" || path == "/v1/models") {
        if (get) {
            // Built first: GCC mis-destroys a ?: temporary inside a co_await expression.
            const std::string body = path == "/info" ? info_body(options) : models_body(options);
            co_await conn.send(200, kJson, body);
        } else {
            co_await conn.send(405, "", "");
        }
    } else {
        co_await conn.send(404, "", "");  // axum's fallback: empty body
    }
}

}  // namespace infergate::emulator
