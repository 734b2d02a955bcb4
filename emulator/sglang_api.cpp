// SGLang's native API (http_server.py): /generate with text / input_ids batches, per-item
// sampling_params, cumulative-text SSE with meta_info on every event, and the info routes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "emulator/api.hpp"
#include "emulator/chat_extras.hpp"
#include "emulator/embed.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/sglang_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;
using rapidjson::Value;

constexpr std::string_view kSglangVersion = "0.5.0-emulator";

// FINISH_LENGTH / FINISH_MATCHED_TOKEN / FINISH_MATCHED_STR as to_json() renders them.
void write_finish(JsonWriter& w, const Output& o) {
    w.key("finish_reason");
    w.StartObject();
    if (o.finish == Finish::kLength) {
        w.kv("type", "length");
        w.kv_int("length", o.budget);
    } else if (o.finish == Finish::kAbort) {
        // FINISH_ABORT().to_json(): a running request that /abort_request stopped.
        w.kv("type", "abort");
        w.kv("message", "Aborted");
        w.kv_null("status_code");
        w.kv_null("err_type");
    } else {
        w.kv("type", "stop");
        w.key("matched");
        if (o.finish == Finish::kStopString) {
            w.str(o.matched_string);
        } else {
            w.Int64(o.matched_token);
        }
    }
    w.EndObject();
}

// What a choice's meta_info lists when return_logprob is set.
struct ItemLogprobs {
    const ItemParams* params = nullptr;  // null: no logprobs asked
    const std::vector<PromptToken>* prompt = nullptr;
};

// A Python float (its repr), so 2.5e-05 looks like the real thing and not 0.000025.
void write_py_float(JsonWriter& w, std::string_view key, double value) {
    const std::string text = py_float(value);
    w.key(key);
    w.RawValue(text.data(), text.size(), rapidjson::kNumberType);
}

// meta_info's e2e_latency, and on a whole answer response_sent_to_client_ts after `between`
// other keys.
void write_end_times(JsonWriter& w, const Request& req, bool with_sent_ts,
                     const std::function<void()>& between = {}) {
    write_py_float(w, "e2e_latency", seconds_since(req.received));
    if (between) {
        between();
    }
    if (with_sent_ts) {
        write_py_float(
            w, "response_sent_to_client_ts",
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count());
    }
}

// What _handle_abort_req answers for a request /abort_request took out of the waiting queue:
// no text, a meta_info of its own.
void write_queued_abort(JsonWriter& w, const ChoiceState& c, bool batch, const Request& req,
                        bool with_sent_ts) {
    constexpr std::string_view kFinish = R"({"type":"abort","message":"Abort in waiting queue"})";
    w.StartObject();
    w.kv("text", "");
    w.key("output_ids");
    w.RawValue("[]", 2, rapidjson::kArrayType);
    w.key("meta_info");
    w.StartObject();
    w.kv("id", c.id);
    w.key("finish_reason");
    w.RawValue(kFinish.data(), kFinish.size(), rapidjson::kObjectType);
    w.kv("weight_version", "default");
    write_end_times(w, req, with_sent_ts, [&w] { w.kv_int("completion_tokens", 0); });
    w.EndObject();
    if (batch) {
        w.kv_int("index", c.index);
    }
    w.EndObject();
}

// One output dict: {"text","output_ids","meta_info"[, "index"]} after `tokens` tokens.
void write_item(JsonWriter& w, const ChoiceState& c, int tokens, bool last, bool batch,
                const Request& req, bool with_sent_ts, const ItemLogprobs& lp) {
    if (req.gen != nullptr && req.gen->aborted_in_queue()) {
        write_queued_abort(w, c, batch, req, with_sent_ts);
        return;
    }
    const Output& o = c.out;
    const std::size_t cum =
        last ? o.final_len : (tokens > 0 ? o.text_end[static_cast<std::size_t>(tokens - 1)] : 0);
    w.StartObject();
    w.kv("text", std::string_view(o.raw_text).substr(0, cum));
    w.key("output_ids");
    w.StartArray();
    for (int k = 0; k < tokens; ++k) {
        w.Int64(o.token_ids[static_cast<std::size_t>(k)]);
    }
    w.EndArray();
    w.key("meta_info");
    w.StartObject();
    w.kv("id", c.id);
    if (last) {
        write_finish(w, o);
    } else {
        w.kv_null("finish_reason");
    }
    w.kv_int("prompt_tokens", c.prompt_tokens);
    w.kv("weight_version", "default");
    w.kv_int("total_retractions", 0);
    if (lp.params != nullptr) {
        // Cumulative on every stream event, like the lists the tokenizer manager keeps.
        const ItemParams& p = *lp.params;
        const std::optional<LogprobSeq> input =
            p.logprob_start_len >= 0 && lp.prompt != nullptr && !lp.prompt->empty()
                ? std::optional<LogprobSeq>(std::in_place, *lp.prompt, "</s>")
                : std::nullopt;
        write_sglang_meta_logprobs(w, input ? &*input : nullptr, p.logprob_start_len,
                                   LogprobSeq(o, "</s>"), tokens, p.top_logprobs_num,
                                   p.text_in_logprobs);
    }
    w.kv_int("completion_tokens", tokens);
    w.kv_int("cached_tokens", c.cached_tokens);
    w.kv_null("cached_tokens_details");
    w.kv_null("dp_rank");
    if (last) {
        write_end_times(w, req, with_sent_ts);
    }
    w.EndObject();
    if (batch) {
        w.kv_int("index", c.index);
    }
    w.EndObject();
}

// The logprob listing of choice c (index = prompt_i * n + j).
ItemLogprobs logprobs_of(const ChoiceState& c, const std::vector<Prompt>& prompts,
                         const std::vector<ItemParams>& params) {
    const std::size_t i = static_cast<std::size_t>(c.index / params[0].n);
    if (!params[i].return_logprob) {
        return {};
    }
    return {&params[i], &prompts[i].tokens};
}

class NativeEncoder final : public EventEncoder {
public:
    NativeEncoder(const Request& req, bool batch, const std::vector<Prompt>& prompts,
                  const std::vector<ItemParams>& params)
        : req_(req), batch_(batch), prompts_(prompts), params_(params) {}
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        std::string& event = out.next();
        event = "data: ";
        JsonWriter w(event);
        write_item(w, c, tokens, last, batch_, req_, false, logprobs_of(c, prompts_, params_));
        event += "\n\n";
    }
    void on_end(std::vector<ChoiceState>&, EventList&) override {}

private:
    const Request& req_;
    bool batch_;
    const std::vector<Prompt>& prompts_;
    const std::vector<ItemParams>& params_;
};

class NativeErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        if (status == 500) {
            body = "Internal Server Error";  // what an uncaught exception looks like
            return kPlainText;
        }
        JsonWriter w(body);
        w.StartObject();
        if (status == 401) {
            w.kv("error", "Unauthorized");
        } else if (status == 400) {
            w.key("error");
            w.StartObject();
            w.kv("message", message);
            w.EndObject();
        } else {  // HTTPException handler: flat ErrorResponse, type = str(status_code)
            w.kv("object", "error");
            w.kv("message", message);
            w.kv("type", std::to_string(status));
            w.kv_null("param");
            w.kv_int("code", status);
        }
        w.EndObject();
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        event = "data: {\"error\":{\"message\":";
        JsonWriter w(event);
        w.str(message);
        event += "}}\n\n";
    }
};

const NativeErrors kNativeErrors;

// A body that is not a JSON object: FastAPI's validation error, 400 in SGLang's flat shape.
net::awaitable<void> send_not_an_object(Conn& conn, bool doc_ok) {
    std::string body;
    render_sglang_oai_error(
        OaiError{400, doc_ok ? "Input should be a valid dictionary" : "JSON decode error", true},
        body);
    co_await conn.send(400, kJson, body);
}

net::awaitable<void> handle_generate(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    bool stream = false;
    if (doc_ok && get_bool(doc, "stream", stream) == Lookup::kWrongType) {
        stream = false;
    }
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, kNativeErrors)) {
        co_return;
    }
    if (!doc_ok || !doc.IsObject()) {
        co_await send_not_an_object(conn, doc_ok);
        co_return;
    }
    std::vector<Prompt> prompts;
    std::vector<ItemParams> params;
    bool batch = false;
    std::string message;
    const Failure failure = parse_generate(doc, options, prompts, params, batch, message);
    if (failure == Failure::kValidation) {
        std::string body;
        render_sglang_oai_error(OaiError{400, message, true}, body);
        co_await conn.send(400, kJson, body);
        co_return;
    }
    if (failure == Failure::kTypeError) {
        if (!stream) {
            co_await conn.send(500, kPlainText, "Internal Server Error");
        } else if (co_await conn.begin_stream(kEventStream)) {
            conn.close_clean();  // the generator raised after the response started
        }
        co_return;
    }
    if (failure == Failure::kValueError) {
        std::string body;
        if (!stream) {
            const std::string_view type = kNativeErrors.render_status(400, message, body);
            co_await conn.send(400, type, body);
        } else {
            kNativeErrors.render_event(message, body);
            if (co_await conn.begin_stream(kEventStream) && co_await conn.send_chunk(body)) {
                co_await conn.finish_stream(kDoneEvent);
            }
        }
        co_return;
    }

    const int n = params[0].n;
    std::vector<ChoiceState> choices;
    choices.reserve(prompts.size() * static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        ItemParams& p = params[i];
        p.stop.eos_after = req.knobs.eos_after;
        if (p.format) {
            p.return_logprob = false;  // the emulator's logprob model covers generated words only
        }
        for (int j = 0; j < n; ++j) {
            ChoiceState& c = choices.emplace_back();
            c.index = static_cast<int>(i) * n + j;
            c.prompt_tokens = prompts[i].key.tokens;
            c.out = p.format ? format_output(*p.format, p.max_new_tokens)
                             : generate(prompts[i].key.hash, j, p.max_new_tokens, p.stop);
            c.id = prompts[i].rid.empty() ? random_hex_id()
                   : n > 1                ? prompts[i].rid + "_" + std::to_string(j)
                                          : prompts[i].rid;
        }
    }
    std::vector<const PromptKey*> keys;
    std::vector<std::string> rids;  // what /abort_request may name: every item's rid
    for (const Prompt& p : prompts) {
        keys.push_back(&p.key);
        if (!p.rid.empty()) {
            rids.push_back(p.rid);
        }
    }
    for (const ChoiceState& c : choices) {
        rids.push_back(c.id);
    }
    const std::unique_ptr<Generation> gen =
        co_await admit(conn, req, keys, choices, std::move(rids));
    if (!gen) {
        co_return;
    }
    if (stream) {
        NativeEncoder encoder(req, batch, prompts, params);
        co_await run_stream(conn, req, choices, encoder, kNativeErrors);
        co_return;
    }
    auto render = [&](std::string& body) {
        body.reserve(256 + choices.size() * 512);
        JsonWriter w(body);
        if (batch) {
            w.StartArray();
        }
        for (const ChoiceState& c : choices) {
            write_item(w, c, c.out.completion_tokens(), true, false, req, true,
                       logprobs_of(c, prompts, params));
        }
        if (batch) {
            w.EndArray();
        }
    };
    co_await send_generated(conn, req, choices, render, kNativeErrors, kSseFraming);
}

// The rid as a log line shows it: one word (whitespace and control bytes as '?').
std::string loggable(std::string_view rid) {
    std::string out(rid.substr(0, 200));
    for (char& ch : out) {
        const auto u = static_cast<unsigned char>(ch);
        if (u <= 0x20 || u == 0x7f) {
            ch = '?';
        }
    }
    return out;
}

// POST /abort_request: AbortReq {"rid": "...", "abort_all": false}. Stops the generations with
// that rid (replica.hpp), logs `abort rid=<rid> found=<0|1>` (`abort all found=<0|1>`), and
// answers Response(status_code=200): empty, whether or not it found one.
net::awaitable<void> handle_abort(Request& req, Conn& conn) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    if (!doc_ok || !doc.IsObject()) {
        co_await send_not_an_object(conn, doc_ok);
        co_return;
    }
    std::string rid;  // None (or a list, which the tokenizer manager cannot look up) finds none
    if (const Value* v = member(doc, "rid"); v != nullptr && v->IsString()) {
        rid.assign(v->GetString(), v->GetStringLength());
    }
    bool all = false;
    get_bool(doc, "abort_all", all);
    const bool found = req.replica != nullptr && req.replica->abort(rid, all);
    if (req.replica != nullptr) {
        req.replica->log((all ? std::string("abort all") : "abort rid=" + loggable(rid)) +
                         " found=" + (found ? "1" : "0"));
    }
    co_await conn.send(200, "", "");
}

std::string models_body(const Options& options) {
    return model_list_body(options.model, unix_now(), "sglang", [&options](JsonWriter& w) {
        w.kv("root", options.model);
        w.kv_null("parent");
        w.kv_int("max_model_len", options.max_model_len);
    });
}

std::string model_info_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.kv("model_path", options.model);
    w.kv("tokenizer_path", options.model);
    w.kv_bool("is_generation", !options.embedding.enabled);  // --is-embedding
    w.kv_null("preferred_sampling_params");
    w.kv("weight_version", "default");
    w.EndObject();
    return body;
}

std::string server_info_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.kv("model_path", options.model);
    w.kv("tokenizer_path", options.model);
    w.kv("served_model_name", options.model);
    w.kv("host", options.host);
    w.kv_int("port", options.port);
    w.kv_int("context_length", options.max_model_len);
    w.kv_int("tp_size", 1);
    w.kv_int("dp_size", 1);
    w.kv_int("stream_interval", 1);
    w.kv_bool("incremental_streaming_output", false);
    w.kv_bool("skip_tokenizer_init", false);
    w.kv_bool("enable_cache_report", options.replica.prefix_cache > 0);
    w.kv_null("api_key");
    w.key("internal_states");
    w.StartArray();
    w.StartObject();
    w.kv_int("last_gen_throughput", 0);
    w.EndObject();
    w.EndArray();
    w.kv("version", kSglangVersion);
    w.EndObject();
    return body;
}

}  // namespace

const ErrorStyle& sglang_native_errors() {
    return kNativeErrors;
}

net::awaitable<void> route_sglang(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    const bool get = req.method == verb::get;
    const bool post = req.method == verb::post;
    if (path == "/generate") {
        if (post || req.method == verb::put) {
            co_await handle_generate(req, conn, options);
        } else {
            co_await send_method_not_allowed(conn);
        }
        co_return;
    }
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
        if (post) {
            co_await handle_oai_generation(req, conn, options, OaiFlavor::kSglang,
                                           path == "/v1/chat/completions");
        } else {
            co_await send_method_not_allowed(conn);
        }
        co_return;
    }
    const bool encode = path == "/encode";
    if (encode || path == "/v1/embeddings" || path == "/tokenize" || path == "/v1/tokenize" ||
        path == "/detokenize" || path == "/v1/detokenize") {
        if (!post && !(encode && req.method == verb::put)) {
            co_await send_method_not_allowed(conn);
        } else if (encode) {
            co_await handle_sglang_encode(req, conn, options);
        } else if (path == "/v1/embeddings") {
            co_await handle_sglang_embeddings(req, conn, options);
        } else {
            co_await handle_sglang_tokenize(req, conn, options, path.ends_with("/detokenize"));
        }
        co_return;
    }
    // The remaining routes are cheap: decide the answer, then send it once.
    bool allowed = get;
    std::string body;
    std::string_view type = kJson;
    if (path == "/health" || path == "/health_generate") {
        type = "";  // FastAPI Response(status_code=200): empty, no content-type
    } else if (path == "/get_model_info") {
        body = model_info_body(options);
    } else if (path == "/get_server_info") {
        body = server_info_body(options);
    } else if (path == "/v1/models") {
        body = models_body(options);
    } else if (path == "/abort_request") {
        if (post) {
            co_await handle_abort(req, conn);
        } else {
            co_await send_method_not_allowed(conn);
        }
        co_return;
    } else {
        co_await send_not_found(conn);
        co_return;
    }
    if (!allowed) {
        co_await send_method_not_allowed(conn);
        co_return;
    }
    co_await conn.send(200, type, body);
}

}  // namespace infergate::emulator
