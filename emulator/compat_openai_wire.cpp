// TGI's and llama.cpp's OpenAI-layer wire: choices, usage, TGI's head and llama.cpp's tail and
// timings, logprobs, stream chunks and whole answers (api-dialects §5.7 and §7.6).
#include "emulator/api.hpp"
#include "emulator/compat_openai.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;

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

void write_usage(JsonWriter& w, const CompatContext& ctx, int prompt, int cached, int completion) {
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
    if (ctx.cache_report && !ctx.tgi) {
        write_cached_details(w, cached);
    }
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
    if (!delta && !ctx.tgi && ctx.plan != nullptr && !ctx.plan->reasoning.empty()) {
        w.kv("reasoning_content", ctx.plan->reasoning);
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

// A whole answer's tool calls. llama.cpp: common_chat_msg::to_json_oaicompat (content null,
// reasoning_content, calls as type, function, id). TGI: OutputMessage::ToolCall (role and calls
// only, id, type, function with description null and the arguments re-serialised compactly);
// its finish is the EOS token's, "stop".
void write_calls_choice(JsonWriter& w, const CompatContext& ctx, const ChoiceState& c) {
    const ChatPlan& plan = *ctx.plan;
    w.StartObject();
    if (!ctx.tgi) {
        w.kv("finish_reason", "tool_calls");
    }
    w.kv_int("index", c.index);
    w.key("message");
    w.StartObject();
    w.kv("role", "assistant");
    if (!ctx.tgi) {
        w.kv_null("content");
        if (!plan.reasoning.empty()) {
            w.kv("reasoning_content", plan.reasoning);
        }
    }
    w.key("tool_calls");
    w.StartArray();
    for (const PlannedCall& call : plan.calls) {
        const ToolSpec& tool = plan.tool_of(call);
        w.StartObject();
        if (ctx.tgi) {
            w.kv("id", ctx.tool_id);
            w.kv("type", "function");
            w.key("function");
            w.StartObject();
            w.kv_null("description");
            w.kv("name", tool.name);
            w.kv("arguments", render_args(tool, ArgsLayout::kCompact));
            w.EndObject();
        } else {
            w.kv("type", "function");
            w.key("function");
            w.StartObject();
            w.kv("name", tool.name);
            w.kv("arguments", call.args);
            w.EndObject();
            w.kv("id", llamacpp_tool_call_id());
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    if (ctx.tgi) {
        w.kv_null("logprobs");
        w.kv("finish_reason", "stop");
    }
    w.EndObject();
}

}  // namespace

void CompatEncoder::on_start(std::vector<ChoiceState>& choices, EventList& out) {
    ctx_.times.first = Clock::now();
    if (ctx_.tgi || !ctx_.req.chat) {
        return;
    }
    for (const ChoiceState& c : choices) {  // llama.cpp: role first, content null
        chunk(out, c, "", std::nullopt, true, false, nullptr);
    }
}

void CompatEncoder::on_step(ChoiceState& c, int tokens, bool last, EventList& out) {
    if (c.lead_tokens == 0) {
        text_step(c, tokens, last, out);
        return;
    }
    const int lead = c.lead_tokens;
    // TGI sends a chunk per token; llama.cpp one per diff of the parsed message.
    for (int t = c.tokens_sent; t < std::min(tokens, lead);) {
        const int upto = ctx_.tgi ? t + 1 : std::min(tokens, lead);
        lead_spans(*ctx_.plan, t, upto, spans_);
        for (const LeadSpan& span : spans_) {
            lead_chunk(out, c, span);
        }
        t = upto;
    }
    if (ctx_.calls()) {
        // llama.cpp: the finish chunk. TGI has none: the EOS token after the call's last brace
        // leaves its tool parser buffering, so only the usage chunk and [DONE] follow.
        if (last && !ctx_.tgi) {
            chunk(out, c, "", "tool_calls", false, false, ctx_.req.include_usage ? nullptr : &c);
        }
        return;
    }
    if (tokens > lead || last) {
        // The text after the reasoning, counted in its own tokens.
        const int sent = c.tokens_sent;
        c.tokens_sent = std::max(sent - lead, 0);
        text_step(c, tokens - lead, last, out);
        c.tokens_sent = sent;
    }
}

// llama.cpp: common_chat_msg_diff_to_json_oaicompat (reasoning_content; a new call's index, id,
// type, name and the arguments parsed so far; then index and arguments). TGI: ToolCallDelta,
// role and one DeltaToolCall with index 0 and the request's one id, the name on the first only.
void CompatEncoder::lead_chunk(EventList& out, const ChoiceState& c, const LeadSpan& span) const {
    std::string& event = begin(out);
    JsonWriter w(event);
    w.StartObject();
    if (ctx_.tgi) {
        tgi_head(w, ctx_, true);
    }
    w.key("choices");
    w.StartArray();
    w.StartObject();
    if (!ctx_.tgi) {
        w.kv_null("finish_reason");
    }
    w.kv_int("index", c.index);
    w.key("delta");
    w.StartObject();
    const bool start = span.kind == LeadSpan::Kind::kCallStart;
    if (span.kind == LeadSpan::Kind::kReasoning) {
        w.kv("reasoning_content", span.text);
    } else if (ctx_.tgi) {
        w.kv("role", "assistant");
        w.key("tool_calls");
        w.StartArray();
        w.StartObject();
        w.kv_int("index", 0);
        w.kv("id", ctx_.tool_id);
        w.kv("type", "function");
        w.key("function");
        w.StartObject();
        if (start) {
            w.kv("name", ctx_.plan->tool_of(ctx_.plan->calls[span.call]).name);
        } else {
            w.kv_null("name");
        }
        w.kv("arguments", span.text);
        w.EndObject();
        w.EndObject();
        w.EndArray();
    } else {
        w.key("tool_calls");
        w.StartArray();
        w.StartObject();
        w.kv_int("index", static_cast<std::int64_t>(span.call));
        if (start) {
            w.kv("id", llamacpp_tool_call_id());
            w.kv("type", "function");
        }
        w.key("function");
        w.StartObject();
        if (start) {
            w.kv("name", ctx_.plan->tool_of(ctx_.plan->calls[span.call]).name);
        }
        w.kv("arguments", span.text);
        w.EndObject();
        w.EndObject();
        w.EndArray();
    }
    w.EndObject();
    if (ctx_.tgi) {
        w.kv_null("logprobs");
        w.kv_null("finish_reason");
    }
    w.EndObject();
    w.EndArray();
    if (!ctx_.tgi) {
        llama_tail(w, ctx_, true);
    } else {
        w.kv_null("usage");
    }
    w.EndObject();
    event += "\n\n";
}

void CompatEncoder::text_step(ChoiceState& c, int tokens, bool last, EventList& out) {
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

void CompatEncoder::on_end(std::vector<ChoiceState>& choices, EventList& out) {
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
    write_usage(w, ctx_, ctx_.prompt_tokens, ctx_.cached_tokens, ctx_.completion_tokens);
    if (!ctx_.tgi) {
        write_llamacpp_timings(w, ctx_.times, ctx_.prompt_tokens, ctx_.cached_tokens,
                               ctx_.completion_tokens);
    }
    w.EndObject();
    event += "\n\n";
}

std::string& CompatEncoder::begin(EventList& out) const {
    std::string& event = out.next();
    event = ctx_.tgi ? "data:" : "data: ";
    return event;
}

void CompatEncoder::chunk(EventList& out, const ChoiceState& c, std::string_view text,
                          std::optional<std::string_view> finish, bool role, bool usage,
                          const ChoiceState* timings, std::optional<TokenRange> logprobs) const {
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
        write_usage(w, ctx_, c.prompt_tokens, c.cached_tokens, c.out.completion_tokens());
    } else if (ctx_.tgi) {
        w.kv_null("usage");
    }
    if (timings != nullptr) {
        write_llamacpp_timings(w, ctx_.times, c.prompt_tokens, c.cached_tokens, c.total_tokens());
    }
    w.EndObject();
    event += "\n\n";
}

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
        if (ctx.calls()) {
            write_calls_choice(w, ctx, c);
            continue;
        }
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
    write_usage(w, ctx, ctx.prompt_tokens, ctx.cached_tokens, ctx.completion_tokens);
    if (!ctx.tgi) {
        write_llamacpp_timings(w, ctx.times, ctx.prompt_tokens, ctx.cached_tokens,
                               ctx.completion_tokens);
    }
    w.EndObject();
}

}  // namespace infergate::emulator
