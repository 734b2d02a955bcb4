// llama.cpp's llama-server (tools/server): native /completion and /completions, the info
// routes and the error shape. Every response carries `Server: llama.cpp` (set per connection).
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/embed.hpp"
#include "emulator/format.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;
using rapidjson::Value;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGarbage[] = {
    "data: {\"content\":\" the\",<<garbage\xff\xfe\n\n",
    "data: \x01\x02 not json at all }}]]\n\n",
};
constexpr Framing kFraming{"text/event-stream", kLlamaJson, "", kGarbage};

class LlamaErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        render_llamacpp_error(status, message, body);
        return kLlamaJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        event = "data: ";
        render_llamacpp_error(500, message, event);
        event += "\n\n";
    }
};
const LlamaErrors kErrors;

struct LlamaPrompt {
    PromptKey key;
    std::string text;  // the detokenized prompt the result echoes
};

struct LlamaRequest {
    std::vector<LlamaPrompt> prompts;
    bool batch = false;
    bool stream = false;
    std::int64_t n_predict = -1;
    StopRules stop;
    double temperature = 0.8;
    std::int64_t top_k = 40;
    double top_p = 0.95;
    LlamaProbs probs;
    std::optional<std::string> format;  // json_schema / grammar's structured-output text
};

// One prompt: a string, token ids, or ids and strings mixed (tokenize_mixed).
bool add_prompt(const Value& p, LlamaRequest& out) {
    LlamaPrompt lp;
    if (p.IsString()) {
        lp.text.assign(p.GetString(), p.GetStringLength());
        lp.key = prompt_from_text(lp.text);
    } else if (p.IsArray() && !p.Empty()) {
        std::vector<std::int64_t> ids;
        for (const Value& piece : p.GetArray()) {
            if (piece.IsInt64()) {
                ids.push_back(piece.GetInt64());
                const auto v = piece.GetInt64() - kTokenIdBase;
                lp.text += v >= 0 && v < static_cast<std::int64_t>(vocabulary().size())
                               ? " " + std::string(vocabulary()[static_cast<std::size_t>(v)])
                               : "[" + std::to_string(piece.GetInt64()) + "]";
            } else if (piece.IsString()) {
                const std::string_view s(piece.GetString(), piece.GetStringLength());
                const auto more = pseudo_token_ids(s);
                ids.insert(ids.end(), more.begin(), more.end());
                lp.text += s;
            } else {
                return false;
            }
        }
        lp.key = prompt_from_ids(ids);  // mixed pieces count as their tokens
    } else {
        return false;
    }
    out.prompts.push_back(std::move(lp));
    return true;
}

bool is_single_prompt(const Value& p) {
    if (p.IsString()) {
        return true;
    }
    if (!p.IsArray() || p.Empty()) {
        return false;
    }
    return std::all_of(p.Begin(), p.End(),
                       [](const Value& v) { return v.IsInt64() || v.IsString(); }) &&
           std::any_of(p.Begin(), p.End(), [](const Value& v) { return v.IsInt64(); });
}

// Returns {status, message}; status 0 when the request is fine.
std::pair<int, std::string> parse_llama(const Value& doc, LlamaRequest& out) {
    const Value* prompt = member(doc, "prompt");
    if (prompt == nullptr) {
        return {500, "[json.exception.out_of_range.403] key 'prompt' not found"};
    }
    if (is_single_prompt(*prompt)) {
        add_prompt(*prompt, out);
    } else if (prompt->IsArray() && !prompt->Empty()) {
        out.batch = true;
        for (const Value& p : prompt->GetArray()) {
            if (!add_prompt(p, out)) {
                return {400, "\"prompt\" must be a string, a list of tokens, or a list of mixed "
                             "strings & tokens"};
            }
        }
    } else {
        return {400, "\"prompt\" must be a string, a list of tokens, or a list of mixed strings "
                     "& tokens"};
    }
    get_bool(doc, "stream", out.stream);
    if (get_int(doc, "n_predict", out.n_predict) != Lookup::kOk) {
        get_int(doc, "max_tokens", out.n_predict);
    }
    get_bool(doc, "ignore_eos", out.stop.ignore_eos);
    get_number(doc, "temperature", out.temperature);
    get_int(doc, "top_k", out.top_k);
    get_number(doc, "top_p", out.top_p);
    std::int64_t seed = -1;
    if (get_int(doc, "seed", seed) == Lookup::kOk && seed >= 0) {
        out.stop.seed = seed;
    }
    if (const Value* stop = member(doc, "stop"); stop != nullptr && stop->IsArray()) {
        for (const Value& s : stop->GetArray()) {  // a plain string is silently ignored
            if (s.IsString() && s.GetStringLength() > 0) {
                out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        }
    }
    llamacpp_probs(doc, false, out.probs);
    out.format = read_llamacpp_format(doc).text;
    if (out.format) {
        out.probs.n = 0;  // the emulator's logprob model covers generated words only
    }
    return {0, {}};
}

// completion_probabilities of tokens [from, to): each token's text is what it sent.
void write_probs(JsonWriter& w, const LlamaRequest& lr, const Output& o, int from, int to) {
    std::vector<std::string_view> sent;
    for (int k = from; k < to; ++k) {
        sent.push_back(llamacpp_sent_text(o, k, lr.stop.strings));
    }
    w.key("completion_probabilities");
    write_llamacpp_probs(w, LogprobSeq(o, kLlamaEosText), from, to, lr.probs.n,
                         lr.probs.post_sampling, sent);
}

struct LlamaContext {
    const LlamaRequest& lr;
    const Options& options;
    LlamaTimes times;
    std::vector<int> budgets;  // per prompt
};

std::string_view stop_type(const Output& o) {
    return o.finish == Finish::kLength ? "limit" : o.finish == Finish::kEos ? "eos" : "word";
}

// The final result object (to_json_non_oaicompat); streams send it with empty content.
void write_result(JsonWriter& w, const LlamaContext& ctx, const ChoiceState& c, bool streamed) {
    const Output& o = c.out;
    const LlamaPrompt& p = ctx.lr.prompts[static_cast<std::size_t>(c.index)];
    w.StartObject();
    w.kv_int("index", c.index);
    w.kv("content", streamed ? std::string_view() : o.final_text());
    w.key("tokens");
    w.StartArray();
    w.EndArray();
    w.kv_int("id_slot", c.index);
    w.kv_bool("stop", true);
    w.kv("model", ctx.options.model);
    w.kv_int("tokens_predicted", o.completion_tokens());
    w.kv_int("tokens_evaluated", c.prompt_tokens);
    w.key("generation_settings");
    w.StartObject();
    w.kv_int("n_predict", ctx.lr.n_predict);
    w.key("seed");
    w.Int64(ctx.lr.stop.seed.value_or(4294967295));
    w.key("temperature");
    w.Double(ctx.lr.temperature);
    w.kv_int("top_k", ctx.lr.top_k);
    w.key("top_p");
    w.Double(ctx.lr.top_p);
    w.key("stop");
    w.StartArray();
    for (const std::string& s : ctx.lr.stop.strings) {
        w.str(s);
    }
    w.EndArray();
    w.kv_bool("ignore_eos", ctx.lr.stop.ignore_eos);
    w.kv_bool("stream", ctx.lr.stream);
    w.EndObject();
    w.kv("prompt", p.text);
    w.kv_bool("has_new_line", o.final_text().find('\n') != std::string_view::npos);
    // A budget that came from the context rather than n_predict ran the context full.
    w.kv_bool("truncated", o.finish == Finish::kLength &&
                               (ctx.lr.n_predict < 0 || ctx.lr.n_predict > o.budget));
    w.kv("stop_type", stop_type(o));
    w.kv("stopping_word", o.finish == Finish::kStopString ? o.matched_string : "");
    w.kv_int("tokens_cached", c.prompt_tokens + o.completion_tokens());
    write_llamacpp_timings(w, ctx.times, c.prompt_tokens, c.cached_tokens, o.completion_tokens());
    // Non-stream only (a stream sent them with each token), without a stop word's tokens.
    if (!streamed && ctx.lr.probs.n > 0 && llamacpp_listed_tokens(o) > 0) {
        write_probs(w, ctx.lr, o, 0, llamacpp_listed_tokens(o));
    }
    w.EndObject();
}

class LlamaEncoder final : public EventEncoder {
public:
    explicit LlamaEncoder(LlamaContext& ctx) : ctx_(ctx) {}
    void on_start(std::vector<ChoiceState>&, EventList&) override { ctx_.times.first = Clock::now(); }
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        const std::string_view delta =
            take_delta(c, visible_partial_stop(c.out, tokens, last, ctx_.lr.stop.strings));
        // A held-back partial stop word sends nothing yet; with n_probs every token is sent
        // (c392e509 sends a partial per token), since it carries that token's probabilities.
        const bool probs = ctx_.lr.probs.n > 0;
        if (!delta.empty() || probs) {
            std::string& event = out.next();
            event = "data: ";
            JsonWriter w(event);
            w.StartObject();
            w.kv_int("index", c.index);
            w.kv("content", delta);
            w.key("tokens");
            w.StartArray();
            for (int k = c.tokens_sent; k < tokens; ++k) {
                w.Int64(c.out.token_ids[static_cast<std::size_t>(k)]);
            }
            w.EndArray();
            w.kv_bool("stop", false);
            w.kv_int("id_slot", c.index);
            w.kv_int("tokens_predicted", tokens);
            w.kv_int("tokens_evaluated", c.prompt_tokens);
            if (probs) {
                write_probs(w, ctx_.lr, c.out, c.tokens_sent, tokens);
            }
            w.EndObject();
            event += "\n\n";
        }
        if (last) {
            std::string& event = out.next();
            event = "data: ";
            JsonWriter w(event);
            write_result(w, ctx_, c, true);
            event += "\n\n";
        }
    }
    void on_end(std::vector<ChoiceState>&, EventList&) override {}

private:
    LlamaContext& ctx_;
};

net::awaitable<void> handle_completion(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc) && doc.IsObject();
    LlamaRequest lr;
    bool stream = false;
    if (doc_ok) {
        get_bool(doc, "stream", stream);
    }
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, kErrors, kFraming)) {
        co_return;
    }
    auto fail = [&](int status, std::string message) -> net::awaitable<void> {
        std::string body;
        render_llamacpp_error(status, message, body);
        co_await conn.send(status, kLlamaJson, body);
    };
    if (!doc_ok) {
        co_await fail(500, "[json.exception.parse_error.101] parse error: syntax error while "
                           "parsing value");
        co_return;
    }
    if (auto [status, message] = parse_llama(doc, lr); status != 0) {
        co_await fail(status, message);
        co_return;
    }
    LlamaContext ctx{lr, options, {req.received, Clock::now()}, {}};
    lr.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices;
    for (std::size_t i = 0; i < lr.prompts.size(); ++i) {
        const int tokens = lr.prompts[i].key.tokens;
        const int room = options.max_model_len - tokens;
        if (room <= 0) {
            std::string body = R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":)" +
                               std::to_string(tokens) + R"(,"n_ctx":)" +
                               std::to_string(options.max_model_len) + "}}";
            co_await conn.send(400, kLlamaJson, body);
            co_return;
        }
        const int budget = lr.n_predict >= 0
                               ? static_cast<int>(std::min<std::int64_t>(lr.n_predict, room))
                               : room;
        ChoiceState& c = choices.emplace_back();
        c.index = static_cast<int>(i);
        c.prompt_tokens = tokens;
        c.out = lr.format ? format_output(*lr.format, budget)
                          : generate(lr.prompts[i].key.hash, 0, budget, lr.stop);
    }
    std::vector<const PromptKey*> keys;
    for (const LlamaPrompt& p : lr.prompts) {
        keys.push_back(&p.key);
    }
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, keys, choices);
    if (!gen) {
        co_return;
    }
    ctx.times.received = gen->started();
    if (lr.stream) {
        LlamaEncoder encoder(ctx);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        // Without stream events, the first token is as late as the TTFT knob and the prefill say.
        ctx.times.first = gen->first_token_at();
        JsonWriter w(body);
        if (lr.batch) {
            w.StartArray();
        }
        for (const ChoiceState& c : choices) {
            write_result(w, ctx, c, false);
        }
        if (lr.batch) {
            w.EndArray();
        }
    };
    co_await send_generated(conn, req, choices, render, kErrors, kFraming);
}

}  // namespace

const ErrorStyle& llamacpp_errors() { return kErrors; }


net::awaitable<void> route_llamacpp(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    const bool get = req.method == verb::get;
    const bool post = req.method == verb::post;
    const bool completion = path == "/completion" || path == "/completions";
    const bool oai_generation =
        path == "/v1/completions" || path == "/v1/chat/completions" || path == "/chat/completions";
    if ((completion || oai_generation || path == "/infill") && post && options.embedding.enabled) {
        // handle_completions_impl and the chat handler under --embeddings.
        std::string body;
        render_llamacpp_error(
            501, "This server does not support completions. Start it without `--embeddings`", body);
        co_await conn.send(501, kLlamaJson, body);
    } else if (completion && post) {
        co_await handle_completion(req, conn, options);
    } else if (oai_generation && post) {
        co_await handle_llamacpp_openai(req, conn, options, path != "/v1/completions");
    } else if ((path == "/embedding" || path == "/embeddings" || path == "/v1/embeddings") &&
               post) {
        co_await handle_llamacpp_embeddings(req, conn, options, path == "/v1/embeddings");
    } else if (path == "/tokenize" && post) {
        co_await handle_llamacpp_tokens(req, conn, LlamaTokenRoute::kTokenize);
    } else if (path == "/detokenize" && post) {
        co_await handle_llamacpp_tokens(req, conn, LlamaTokenRoute::kDetokenize);
    } else if (path == "/apply-template" && post) {
        co_await handle_llamacpp_tokens(req, conn, LlamaTokenRoute::kApplyTemplate);
    } else if ((path == "/health" || path == "/v1/health") && get) {
        co_await conn.send(200, kLlamaJson, R"({"status":"ok"})");
    } else if (path == "/props" && (get || post)) {
        co_await conn.send(200, kLlamaJson, llamacpp_props_body(options));
    } else if ((path == "/v1/models" || path == "/models") && get) {
        co_await conn.send(200, kLlamaJson, llamacpp_models_body(options));
    } else {
        // httplib matches method and path together: anything else is its 404.
        std::string body;
        render_llamacpp_error(404, "File Not Found", body);
        co_await conn.send(404, kLlamaJson, body);
    }
}

}  // namespace infergate::emulator
