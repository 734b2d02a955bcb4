// The OpenAI layers of TGI (router/src/server.rs chat_completions / completions) and llama.cpp
// (server-task.cpp to_json_oaicompat*). Requests are parsed by openai_request.cpp; budgets,
// checks and every wire shape are the servers' own (api-dialects §5.7 and §7.6).
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/tgi_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kTgiDone = "data:[DONE]\n\n";
constexpr Framing kTgiFraming{"text/event-stream", kJson, kTgiDone, {}};
constexpr Framing kLlamaFraming{"text/event-stream", kLlamaJson, kDoneEvent, {}};

struct CompatContext {
    const OaiRequest& req;
    bool tgi = false;
    std::string id;
    std::int64_t created = 0;
    int prompt_tokens = 0;
    int completion_tokens = 0;
    LlamaTimes times;
    // TGI chat: `logprobs` (probs.n = top_logprobs); llama.cpp: n_probs > 0.
    LlamaProbs probs;
    bool logprobs = false;
};

// Tokens [from, to) of a choice whose logprobs a chunk or an answer carries.
struct TokenRange {
    int from = 0;
    int to = 0;
};

// TGI's ChatCompletionLogprobs, or llama.cpp's {"content": completion_probabilities}.
void write_logprobs(JsonWriter& w, const CompatContext& ctx, const ChoiceState& c,
                    TokenRange range) {
    if (ctx.tgi) {
        write_tgi_chat_logprobs(w, LogprobSeq(c.out, "</s>"), range.from, range.to, ctx.probs.n);
        return;
    }
    std::vector<std::string_view> sent;
    for (int k = range.from; k < range.to; ++k) {
        sent.push_back(llamacpp_sent_text(c.out, k, ctx.req.stop.strings));
    }
    w.StartObject();
    w.key("content");
    write_llamacpp_probs(w, LogprobSeq(c.out, kLlamaEosText), range.from, range.to, ctx.probs.n,
                         ctx.probs.post_sampling, sent);
    w.EndObject();
}

std::string fingerprint(bool tgi) {
    return tgi ? std::string(kTgiVersion) + "-native" : std::string(kLlamaBuild);
}

// TGI's FinishReason::format(true) on chat; completions streams keep the raw name.
std::string_view tgi_reason(const Output& o, bool openai) {
    return o.finish == Finish::kLength       ? "length"
           : o.finish == Finish::kStopString ? "stop_sequence"
           : openai                          ? "stop"
                                             : "eos_token";
}

void write_usage(JsonWriter& w, const CompatContext& ctx, int prompt, int completion) {
    w.key("usage");
    w.StartObject();
    if (ctx.tgi) {
        w.kv_int("prompt_tokens", prompt);
        w.kv_int("completion_tokens", completion);
    } else {
        w.kv_int("completion_tokens", completion);
        w.kv_int("prompt_tokens", prompt);
    }
    w.kv_int("total_tokens", prompt + completion);
    w.EndObject();
}

// TGI's text keeps a matched stop sequence; llama.cpp's does not.
std::string_view final_text(const CompatContext& ctx, const Output& o) {
    return ctx.tgi ? std::string_view(o.raw_text) : o.final_text();
}

void tgi_head(JsonWriter& w, const CompatContext& ctx, bool chunk) {
    const bool chat = ctx.req.chat;
    w.kv("object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    w.kv("id", "");
    w.kv_int("created", ctx.created);
    w.kv("model", ctx.req.model);
    w.kv("system_fingerprint", fingerprint(true));
}

void llama_tail(JsonWriter& w, const CompatContext& ctx, bool chunk) {
    w.kv_int("created", ctx.created);
    w.kv("id", ctx.id);
    w.kv("model", ctx.req.model);
    w.kv("system_fingerprint", fingerprint(false));
    w.kv("object", ctx.req.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                : "text_completion");
}

void write_finish(JsonWriter& w, std::optional<std::string_view> finish, bool empty_string) {
    w.key("finish_reason");
    if (finish) {
        w.str(*finish);
    } else if (empty_string) {
        w.str("");  // TGI's intermediate completion chunks: empty string, not null
    } else {
        w.Null();
    }
}

// `logprobs`: the tokens whose logprobs the choice carries (none: null, or absent where the
// server leaves the key out).
void write_choice(JsonWriter& w, const CompatContext& ctx, const ChoiceState& c,
                  std::string_view text, std::optional<std::string_view> finish, bool delta,
                  bool role, std::optional<TokenRange> logprobs = std::nullopt) {
    w.StartObject();
    if (!ctx.req.chat) {
        // TGI: index, text, logprobs, finish_reason; llama.cpp: text, index, logprobs, ...
        if (ctx.tgi) {
            w.kv_int("index", c.index);
            w.kv("text", text);
        } else {
            w.kv("text", text);
            w.kv_int("index", c.index);
        }
        w.key("logprobs");
        if (logprobs) {
            write_logprobs(w, ctx, c, *logprobs);
        } else {
            w.Null();
        }
        write_finish(w, finish, ctx.tgi && delta);
        w.EndObject();
        return;
    }
    if (!ctx.tgi) {
        write_finish(w, finish, false);
    }
    w.kv_int("index", c.index);
    w.key(delta ? "delta" : "message");
    w.StartObject();
    if (role || ctx.tgi || !delta) {
        w.kv("role", "assistant");
    }
    if (role && !ctx.tgi) {
        w.kv_null("content");  // llama.cpp's first chunk: content null
    } else if (!(delta && !ctx.tgi && finish)) {
        w.kv("content", text);  // llama.cpp's finish chunk has an empty delta
    }
    w.EndObject();
    if (ctx.tgi) {
        w.key("logprobs");
        if (logprobs) {
            write_logprobs(w, ctx, c, *logprobs);
        } else {
            w.Null();
        }
        write_finish(w, finish, false);
    } else if (logprobs) {
        w.key("logprobs");  // llama.cpp adds the key after the delta / message, when it has any
        write_logprobs(w, ctx, c, *logprobs);
    }
    w.EndObject();
}

class CompatEncoder final : public EventEncoder {
public:
    explicit CompatEncoder(CompatContext& ctx) : ctx_(ctx) {}

    void on_start(std::vector<ChoiceState>& choices, EventList& out) override {
        ctx_.times.first = Clock::now();
        if (ctx_.tgi || !ctx_.req.chat) {
            return;
        }
        for (const ChoiceState& c : choices) {  // llama.cpp: role first, content null
            chunk(out, c, "", std::nullopt, true, false, nullptr);
        }
    }

    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        const bool probs = ctx_.logprobs;
        if (ctx_.tgi) {  // one chunk per token, the finish on the last one
            for (int k = c.tokens_sent; k < tokens; ++k) {
                const auto end = static_cast<std::size_t>(k + 1);
                const std::size_t from = raw_len_after(c.out, k);
                const std::string_view text =
                    std::string_view(c.out.raw_text).substr(from, c.out.text_end[end - 1] - from);
                const bool final = last && k + 1 == tokens;
                chunk(out, c, text,
                      final ? std::optional(tgi_reason(c.out, ctx_.req.chat)) : std::nullopt, false,
                      final && !ctx_.req.chat, nullptr,
                      probs ? std::optional(TokenRange{k, k + 1}) : std::nullopt);
            }
            return;
        }
        const std::string_view delta =
            take_delta(c, visible_partial_stop(c.out, tokens, last, ctx_.req.stop.strings));
        // With n_probs every token's partial goes out (it carries the token's probabilities),
        // even when its text is held back.
        if (!delta.empty() || probs) {
            chunk(out, c, delta, std::nullopt, false, false, nullptr,
                  probs ? std::optional(TokenRange{c.tokens_sent, tokens}) : std::nullopt);
        }
        if (last) {
            const std::string_view reason = c.out.finish == Finish::kLength ? "length" : "stop";
            // Completions: the final chunk always has usage; chat: timings unless a usage
            // chunk follows.
            const bool usage = !ctx_.req.chat;
            const bool timings = !ctx_.req.chat || !ctx_.req.include_usage;
            chunk(out, c, "", reason, false, usage, timings ? &c : nullptr);
        }
    }

    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        if (!ctx_.req.chat || !ctx_.req.include_usage) {
            return;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        w.StartObject();
        if (ctx_.tgi) {
            tgi_head(w, ctx_, true);
        }
        w.key("choices");
        w.StartArray();
        w.EndArray();
        if (!ctx_.tgi) {
            llama_tail(w, ctx_, true);
        }
        write_usage(w, ctx_, ctx_.prompt_tokens, ctx_.completion_tokens);
        if (!ctx_.tgi) {
            write_llamacpp_timings(w, ctx_.times, ctx_.prompt_tokens, ctx_.completion_tokens);
        }
        w.EndObject();
        event += "\n\n";
    }

private:
    std::string& begin(EventList& out) const {
        std::string& event = out.next();
        event = ctx_.tgi ? "data:" : "data: ";
        return event;
    }

    void chunk(EventList& out, const ChoiceState& c, std::string_view text,
               std::optional<std::string_view> finish, bool role, bool usage,
               const ChoiceState* timings,
               std::optional<TokenRange> logprobs = std::nullopt) const {
        std::string& event = begin(out);
        JsonWriter w(event);
        w.StartObject();
        if (ctx_.tgi) {
            tgi_head(w, ctx_, true);
        }
        w.key("choices");
        w.StartArray();
        write_choice(w, ctx_, c, text, finish, true, role, logprobs);
        w.EndArray();
        if (!ctx_.tgi) {
            llama_tail(w, ctx_, true);
        }
        if (usage) {  // per prompt (TGI completions) / per request (llama.cpp completions)
            write_usage(w, ctx_, c.prompt_tokens, c.out.completion_tokens());
        } else if (ctx_.tgi) {
            w.kv_null("usage");
        }
        if (timings != nullptr) {
            write_llamacpp_timings(w, ctx_.times, c.prompt_tokens, c.out.completion_tokens());
        }
        w.EndObject();
        event += "\n\n";
    }

    CompatContext& ctx_;
};

void render_response(const CompatContext& ctx, const std::vector<ChoiceState>& choices,
                     std::string& body) {
    JsonWriter w(body);
    w.StartObject();
    if (ctx.tgi) {
        tgi_head(w, ctx, false);
    }
    w.key("choices");
    w.StartArray();
    for (const ChoiceState& c : choices) {
        const std::string_view reason =
            ctx.tgi ? tgi_reason(c.out, true)
                    : (c.out.finish == Finish::kLength ? "length" : "stop");
        // llama.cpp leaves a stop word's tokens out of a non-stream listing.
        const int listed = ctx.tgi ? c.out.completion_tokens() : llamacpp_listed_tokens(c.out);
        const bool probs = ctx.logprobs && listed > 0;
        write_choice(w, ctx, c, final_text(ctx, c.out), reason, false, false,
                     probs ? std::optional(TokenRange{0, listed}) : std::nullopt);
    }
    w.EndArray();
    if (!ctx.tgi) {
        llama_tail(w, ctx, false);
    }
    write_usage(w, ctx, ctx.prompt_tokens, ctx.completion_tokens);
    if (!ctx.tgi) {
        write_llamacpp_timings(w, ctx.times, ctx.prompt_tokens, ctx.completion_tokens);
    }
    w.EndObject();
}

class TgiOaiErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", message);
        w.kv("error_type", status == 422 ? "validation" : "generation");
        w.EndObject();
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        event = "data:";
        JsonWriter w(event);
        w.StartObject();
        w.key("error");
        w.StartObject();
        w.kv("message", message);
        w.kv_int("http_status_code", 500);
        w.EndObject();
        w.EndObject();
        event += "\n\n";
    }
};
const TgiOaiErrors kTgiErrors;

net::awaitable<void> handle_compat(Request& req, Conn& conn, const Options& options, bool chat,
                                   bool tgi) {
    const ErrorStyle& errors = tgi ? static_cast<const ErrorStyle&>(kTgiErrors) : llamacpp_errors();
    const Framing& framing = tgi ? kTgiFraming : kLlamaFraming;
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    bool stream = false;
    if (doc_ok && doc.IsObject()) {
        get_bool(doc, "stream", stream);
    }
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, errors, framing)) {
        co_return;
    }
    OaiRequest oai;
    std::optional<OaiError> error = parse_oai_request(
        doc, doc_ok, chat, tgi ? OaiFlavor::kTgi : OaiFlavor::kLlamacpp, options, oai);
    int longest = 0;
    for (const PromptKey& p : oai.prompts) {
        longest = std::max(longest, p.tokens);
    }
    const int room = options.max_model_len - longest;
    LlamaProbs probs;
    if (!error && !tgi) {
        // Parameters llama.cpp's completions route refuses, and its chat route's logprobs.
        std::optional<std::string> refused;
        for (const char* param : {"best_of", "echo", "suffix"}) {
            if (!chat && !refused && doc.IsObject() && doc.HasMember(param)) {
                refused = std::string("Unsupported param: ") + param;
            }
        }
        if (!refused) {
            refused = llamacpp_probs(doc, chat, probs);
        }
        if (refused) {
            std::string body;
            render_llamacpp_error(500, *refused, body);
            co_await conn.send(500, kLlamaJson, body);
            co_return;
        }
    }
    if (!error && tgi) {
        probs.n = oai.logprobs.value_or(0);
        if (auto m = tgi_check_sampling(oai.temperature == 0.0 ? std::nullopt : oai.temperature,
                                        oai.top_p, std::nullopt, oai.requested_max_tokens)) {
            error = OaiError{422, "Input validation error: " + *m, false};
        } else if (auto top = tgi_check_top_n(oai.top_logprobs)) {
            error = OaiError{422, "Input validation error: " + *top, false};
        } else if (room <= 0 || oai.requested_max_tokens.value_or(0) > room) {
            error = OaiError{422,
                             "Input validation error: `inputs` tokens + `max_new_tokens` must be <= " +
                                 std::to_string(options.max_model_len) + ". Given: " +
                                 std::to_string(longest) + " `inputs` tokens and " +
                                 std::to_string(oai.requested_max_tokens.value_or(room)) +
                                 " `max_new_tokens`",
                             false};
        }
    } else if (!error && room <= 0) {
        error = OaiError{400, "the request exceeds the available context size, try increasing it",
                         false};
    }
    if (error) {
        std::string body;
        if (tgi && error->framework) {
            co_await conn.send(422, kPlainText,
                               "Failed to deserialize the JSON body into the target type: " +
                                   error->message);
        } else if (tgi) {
            co_await conn.send(422, errors.render_status(422, error->message, body), body);
        } else {
            render_llamacpp_error(error->status, error->message, body);
            co_await conn.send(error->status, kLlamaJson, body);
        }
        co_return;
    }
    // Both fill the context when no budget is given (TGI v3, llama.cpp n_predict -1).
    const std::int64_t wanted = oai.requested_max_tokens.value_or(room);
    oai.max_tokens = static_cast<int>(std::clamp<std::int64_t>(wanted, 0, room));
    oai.n = 1;  // TGI ignores n; llama.cpp serves one choice per prompt
    oai.stop.keep_stop_string = tgi;
    oai.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices(oai.prompts, 1, oai.max_tokens, oai.stop);
    CompatContext ctx{.req = oai,
                      .tgi = tgi,
                      .id = (chat ? "chatcmpl-" : "cmpl-") + random_alnum(32),
                      .created = unix_now(),
                      .times = {req.received, Clock::now()},
                      .probs = probs,
                      .logprobs = tgi ? oai.logprobs.has_value() : probs.n > 0};
    for (const ChoiceState& c : choices) {
        ctx.prompt_tokens += c.prompt_tokens;
        ctx.completion_tokens += c.out.completion_tokens();
    }
    if (oai.stream) {
        CompatEncoder encoder(ctx);
        co_await run_stream(conn, req, choices, encoder, errors, framing);
        co_return;
    }
    auto render = [&](std::string& body) {
        ctx.times.first = req.received + std::chrono::milliseconds(req.knobs.ttft_ms);
        render_response(ctx, choices, body);
    };
    co_await send_generated(conn, req.knobs, choices, render, errors, framing);
}

}  // namespace

net::awaitable<void> handle_tgi_openai(Request& req, Conn& conn, const Options& options,
                                       bool chat) {
    co_await handle_compat(req, conn, options, chat, true);
}

net::awaitable<void> handle_llamacpp_openai(Request& req, Conn& conn, const Options& options,
                                            bool chat) {
    co_await handle_compat(req, conn, options, chat, false);
}

}  // namespace infergate::emulator
