// SGLang's OpenAI layer (serving_completions.py / serving_chat.py): plain model_dump_json() of
// its pydantic models, so unset fields appear as null; ids are the engine's request ids;
// matched_stop carries what stopped a choice; chat streams end every choice with a separate
// empty-delta chunk. Deltas are cut from the engine's cumulative text the way SGLang does it.
#include <optional>
#include <span>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

constexpr std::string_view kEosText = "</s>";  // batch_decode keeps special tokens

// The LogProbs of a choice's tokens [from, to); on echo (logprob_start_len 0) the prompt's
// tokens lead, the first without a logprob (serving_completions.py).
void write_completion_logprobs(JsonWriter& w, const OaiContext& ctx, const ChoiceState& c, int from,
                               int to, bool echo) {
    const OaiRequest& r = ctx.req;
    const LogprobSeq output(c.out, kEosText);
    std::optional<LogprobSeq> prompt;
    LogprobSpan spans[2];
    std::size_t count = 0;
    if (echo) {
        prompt.emplace(r.prompt_tokens[static_cast<std::size_t>(c.index / r.n)], kEosText);
        spans[count++] = {&*prompt, 0, prompt->size(), *r.logprobs};
    }
    spans[count++] = {&output, from, to, *r.logprobs};
    write_sglang_completion_logprobs(w, std::span(spans, count), *r.logprobs);
}

void write_matched_stop(JsonWriter& w, const Output& out) {
    w.key("matched_stop");
    switch (out.finish) {
        case Finish::kStopString:
            w.str(out.matched_string);
            break;
        case Finish::kEos:
        case Finish::kStopToken:
            w.Int64(out.matched_token);
            break;
        default:
            w.Null();  // {"type":"length"} has no "matched"
            break;
    }
}

// SGLang's UsageInfo: prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details,
// reasoning_tokens. exclude_none drops the details but keeps reasoning_tokens (0, not None).
// UsageProcessor fills the details (--enable-cache-report) only with `cached` > 0; continuous
// usage never.
void write_usage(JsonWriter& w, int prompt, int completion, bool with_details, int reasoning = 0,
                 int cached = 0) {
    w.key("usage");
    w.StartObject();
    w.kv_int("prompt_tokens", prompt);
    w.kv_int("total_tokens", prompt + completion);
    w.kv_int("completion_tokens", completion);
    write_cached_details_if_any(w, cached, with_details);
    w.kv_int("reasoning_tokens", reasoning);
    w.EndObject();
}

// cached_tokens summed over the prompts (the first choice of each), as UsageProcessor does.
int cached_total(const OaiContext& ctx, const std::vector<ChoiceState>& choices) {
    int total = 0;
    for (const ChoiceState& c : choices) {
        total += c.index % ctx.req.n == 0 ? c.cached_tokens : 0;
    }
    return total;
}

// Reasoning tokens of all choices (each reasons the same).
int reasoning_total(const OaiContext& ctx, std::size_t choices) {
    return ctx.plan != nullptr ? ctx.plan->reasoning_tokens() * static_cast<int>(choices) : 0;
}

// The cumulative text the engine reports after `tokens` tokens: everything decoded so far,
// trimmed only once the choice finished (SGLang does not hold back partial stop strings).
std::size_t cumulative_len(const Output& o, int tokens, bool last) {
    if (last) {
        return o.final_len;
    }
    return tokens > 0 ? o.text_end[static_cast<std::size_t>(tokens - 1)] : 0;
}

// A whole answer's calls: ToolCall(id, index, type, function) where index is the tool's place
// in `tools` (the detector's tool_indices), not the call's.
void write_tool_calls(JsonWriter& w, const OaiContext& ctx) {
    w.key("tool_calls");
    if (!ctx.calls()) {
        w.Null();
        return;
    }
    w.StartArray();
    for (const PlannedCall& call : ctx.plan->calls) {
        w.StartObject();
        w.kv("id", sglang_tool_call_id());
        w.kv_int("index", static_cast<std::int64_t>(call.tool));
        w.kv("type", "function");
        w.key("function");
        w.StartObject();
        w.kv("name", ctx.plan->tool_of(call).name);
        w.kv("arguments", call.args);
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
}

class SglangOaiEncoder final : public EventEncoder {
public:
    explicit SglangOaiEncoder(const OaiContext& ctx) : ctx_(ctx) {}

    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        last_id_ = &c.id;
        if (c.lead_tokens == 0) {
            text_step(c, tokens, last, out);
            return;
        }
        const int lead = c.lead_tokens;
        if (c.tokens_sent == 0) {
            role_chunk(c, out);
        }
        if (c.tokens_sent < lead) {
            lead_spans(*ctx_.plan, c.tokens_sent, std::min(tokens, lead), spans_);
            for (const LeadSpan& span : spans_) {
                lead_chunk(c, span, tokens, out);
            }
        }
        if (ctx_.calls()) {
            if (last) {
                finish_order_.push_back(&c);  // its finish chunk ("tool_calls") comes in on_end
            }
            return;
        }
        if (tokens > lead || last) {
            // The text after the reasoning, counted in its own tokens.
            const int sent = c.tokens_sent;
            c.tokens_sent = std::max(sent - lead, 0);
            shift_ = lead;
            text_step(c, tokens - lead, last, out);
            shift_ = 0;
            c.tokens_sent = sent;
        }
    }

    void text_step(ChoiceState& c, int tokens, bool last, EventList& out) {
        const Output& o = c.out;
        const std::size_t cum = cumulative_len(o, tokens, last);
        // delta = text[len(previous):], which is empty when the final trimmed text got shorter.
        std::string_view delta;
        if (cum > c.text_sent) {
            delta = std::string_view(o.raw_text).substr(c.text_sent, cum - c.text_sent);
        }
        if (ctx_.req.chat) {
            chat_step(c, tokens, last, delta, out);
            // stream_buffers[index] = stream_buffer + delta: it only ever grows.
            c.text_sent += delta.size();
        } else {
            completion_step(c, tokens, last, delta, out);
            c.text_sent = cum;  // stream_offsets[index] = len(content["text"])
        }
    }

    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        if (ctx_.req.chat) {
            // One empty-delta chunk per choice, in the order the choices finished.
            for (const ChoiceState* c : finish_order_) {
                std::string& event = begin(out);
                JsonWriter w(event);
                open_chunk(w, *last_id_);
                w.StartObject();
                w.kv_int("index", c->index);
                write_delta(w, nullptr, {});
                w.kv_null("logprobs");
                // A stop after tool calls becomes "tool_calls"; matched_stop stays the EOS id.
                w.kv("finish_reason", ctx_.calls() ? "tool_calls" : finish_reason_name(c->out));
                write_matched_stop(w, c->out);
                w.EndObject();
                close_chunk(w, nullptr, 0, event);
            }
        }
        if (!ctx_.req.include_usage) {
            return;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w, last_id_ != nullptr ? *last_id_ : ctx_.id);
        w.EndArray();
        // Chat dumps the usage chunk in full; completions use exclude_none.
        write_usage(w, ctx_.prompt_tokens, ctx_.completion_tokens, ctx_.req.chat,
                    reasoning_total(ctx_, choices.size()), cached_total(ctx_, choices));
        w.EndObject();
        event += "\n\n";
    }

private:
    void completion_step(const ChoiceState& c, int tokens, bool last, std::string_view delta,
                         EventList& out) {
        const OaiRequest& r = ctx_.req;
        // The first chunk of an echo is the prompt and the text so far.
        const bool echo = r.echo && c.tokens_sent == 0;
        if (echo) {
            echo_text_ = r.prompt_texts[static_cast<std::size_t>(c.index / r.n)];
            echo_text_.append(delta);
            delta = echo_text_;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w, c.id);
        w.StartObject();
        w.kv_int("index", c.index);
        w.kv("text", delta);
        w.key("logprobs");
        if (r.logprobs) {
            write_completion_logprobs(w, ctx_, c, c.tokens_sent, tokens, echo && *r.logprobs > 0);
        } else {
            w.Null();
        }
        if (last) {
            w.kv("finish_reason", finish_reason_name(c.out));
            write_matched_stop(w, c.out);
        } else {
            w.kv_null("finish_reason");
            w.kv_null("matched_stop");
        }
        w.EndObject();
        close_chunk(w, &c, tokens, event);
    }

    // The first event of a choice.
    void role_chunk(const ChoiceState& c, EventList& out) {
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w, c.id);
        w.StartObject();
        w.kv_int("index", c.index);
        write_delta(w, "assistant", "");
        w.kv_null("logprobs");
        w.kv_null("finish_reason");
        w.kv_null("matched_stop");
        w.EndObject();
        w.EndArray();
        w.kv_null("usage");  // the role chunk never carries usage
        w.EndObject();
        event += "\n\n";
    }

    // A reasoning delta, a call's first delta (its id, index, name and arguments "") or
    // argument fragments (id and name null): DeltaMessage and ToolCall dumped in full.
    void lead_chunk(const ChoiceState& c, const LeadSpan& span, int tokens, EventList& out) {
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w, c.id);
        w.StartObject();
        w.kv_int("index", c.index);
        w.key("delta");
        w.StartObject();
        w.kv_null("role");
        w.kv_null("content");
        if (span.kind == LeadSpan::Kind::kReasoning) {
            w.kv("reasoning_content", span.text);
            w.kv_null("tool_calls");
        } else {
            const bool start = span.kind == LeadSpan::Kind::kCallStart;
            w.kv_null("reasoning_content");
            w.key("tool_calls");
            w.StartArray();
            w.StartObject();
            if (start) {
                w.kv("id", sglang_tool_call_id());
            } else {
                w.kv_null("id");
            }
            w.kv_int("index", static_cast<std::int64_t>(span.call));
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
        }
        w.EndObject();
        w.kv_null("logprobs");
        w.kv_null("finish_reason");
        w.kv_null("matched_stop");
        w.EndObject();
        close_chunk(w, &c, tokens, event);
    }

    void chat_step(ChoiceState& c, int tokens, bool last, std::string_view delta, EventList& out) {
        if (c.tokens_sent == 0 && c.lead_tokens == 0) {  // the first event of this choice
            role_chunk(c, out);
        }
        if (!delta.empty()) {
            // Logprobs ride on content chunks only: a step without text loses its tokens'.
            std::string& event = begin(out);
            JsonWriter w(event);
            open_chunk(w, c.id);
            w.StartObject();
            w.kv_int("index", c.index);
            write_delta(w, nullptr, delta);
            w.key("logprobs");
            if (ctx_.req.logprobs) {
                write_sglang_chat_logprobs(w, LogprobSeq(c.out, kEosText), c.tokens_sent, tokens,
                                           *ctx_.req.logprobs);
            } else {
                w.Null();
            }
            w.kv_null("finish_reason");
            w.kv_null("matched_stop");
            w.EndObject();
            close_chunk(w, &c, tokens, event);
        }
        if (last) {
            finish_order_.push_back(&c);
        }
    }

    // DeltaMessage dumps every field; content is null only in the finish chunk.
    static void write_delta(JsonWriter& w, const char* role, std::optional<std::string_view> text) {
        w.key("delta");
        w.StartObject();
        w.key("role");
        if (role != nullptr) {
            w.String(role);
        } else {
            w.Null();
        }
        w.key("content");
        if (text) {
            w.str(*text);
        } else {
            w.Null();
        }
        w.kv_null("reasoning_content");
        w.kv_null("tool_calls");
        w.EndObject();
    }

    static std::string& begin(EventList& out) {
        std::string& event = out.next();
        event = "data: ";
        return event;
    }

    void open_chunk(JsonWriter& w, const std::string& id) const {
        w.StartObject();
        w.kv("id", id);
        w.kv("object", ctx_.req.chat ? "chat.completion.chunk" : "text_completion");
        w.kv_int("created", ctx_.created);
        w.kv("model", ctx_.req.model);
        w.key("choices");
        w.StartArray();
    }

    void close_chunk(JsonWriter& w, const ChoiceState* c, int tokens, std::string& event) const {
        w.EndArray();
        if (c != nullptr && ctx_.req.continuous_usage) {
            // Text steps count their own tokens: the lead went before them.
            const int all = tokens + shift_;
            write_usage(w, c->prompt_tokens, all, true,
                        ctx_.plan != nullptr ? std::min(all, ctx_.plan->reasoning_tokens()) : 0);
        } else {
            w.kv_null("usage");
        }
        w.EndObject();
        event += "\n\n";
    }

    const OaiContext& ctx_;
    const std::string* last_id_ = nullptr;
    std::vector<const ChoiceState*> finish_order_;
    std::string echo_text_;
    std::vector<LeadSpan> spans_;
    int shift_ = 0;  // lead tokens before a text step's own
};

class SglangOaiErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        render_sglang_oai_error(OaiError{status, std::string(message), false}, body);
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        render_sglang_oai_error_event(OaiError{500, std::string(message), false}, event);
    }
};

}  // namespace

std::unique_ptr<EventEncoder> make_sglang_oai_encoder(const OaiContext& ctx) {
    return std::make_unique<SglangOaiEncoder>(ctx);
}

void render_sglang_oai_response(const OaiContext& ctx, const std::vector<ChoiceState>& choices,
                                std::string& body) {
    const OaiRequest& r = ctx.req;
    const bool chat = r.chat;
    JsonWriter w(body);
    w.StartObject();
    w.kv("id", ctx.id);
    w.kv("object", chat ? "chat.completion" : "text_completion");
    w.kv_int("created", ctx.created);
    w.kv("model", ctx.req.model);
    w.key("choices");
    w.StartArray();
    for (const ChoiceState& c : choices) {
        w.StartObject();
        w.kv_int("index", c.index);
        if (chat) {
            // ChatMessage(content=text if text else None, reasoning_content=..., tool_calls=...)
            w.key("message");
            w.StartObject();
            w.kv("role", "assistant");
            if (ctx.calls()) {
                w.kv_null("content");
            } else {
                w.kv("content", c.out.final_text());
            }
            if (ctx.plan != nullptr && !ctx.plan->reasoning.empty()) {
                w.kv("reasoning_content", ctx.plan->reasoning);
            } else {
                w.kv_null("reasoning_content");
            }
            write_tool_calls(w, ctx);
            w.EndObject();
        } else if (r.echo) {
            w.kv("text", r.prompt_texts[static_cast<std::size_t>(c.index / r.n)] +
                             std::string(c.out.final_text()));
        } else {
            w.kv("text", c.out.final_text());
        }
        w.key("logprobs");
        if (!r.logprobs) {
            w.Null();
        } else if (chat) {
            write_sglang_chat_logprobs(w, LogprobSeq(c.out, kEosText), 0, c.out.completion_tokens(),
                                       *r.logprobs);
        } else {
            write_completion_logprobs(w, ctx, c, 0, c.out.completion_tokens(), r.echo);
        }
        if (ctx.calls()) {
            // _process_tool_calls: a "stop" becomes "tool_calls" and its match is dropped.
            w.kv("finish_reason", "tool_calls");
            w.kv_null("matched_stop");
        } else {
            w.kv("finish_reason", finish_reason_name(c.out));
            write_matched_stop(w, c.out);
        }
        w.EndObject();
    }
    w.EndArray();
    write_usage(w, ctx.prompt_tokens, ctx.completion_tokens, true,
                reasoning_total(ctx, choices.size()), cached_total(ctx, choices));
    w.kv_null("metadata");
    w.EndObject();
}

void render_sglang_oai_error(const OaiError& error, std::string& body) {
    JsonWriter w(body);
    w.StartObject();
    if (error.status == 401) {
        w.kv("error", "Unauthorized");
        w.EndObject();
        return;
    }
    w.kv("object", "error");
    w.kv("message", error.message);
    w.kv("type",
         error.framework ? std::string(reason_phrase(error.status)) : compact_reason(error.status));
    w.kv_null("param");
    w.kv_int("code", error.status);
    w.EndObject();
}

void render_sglang_oai_error_event(const OaiError& error, std::string& event) {
    // create_streaming_error_response: json.dumps({"error": ErrorResponse.model_dump()}).
    event = "data: {\"error\": {\"object\": \"error\", \"message\": ";
    JsonWriter w(event);
    w.str(error.message);
    event += ", \"type\": \"";
    event +=
        error.framework ? std::string(reason_phrase(error.status)) : compact_reason(error.status);
    event += "\", \"param\": null, \"code\": ";
    event += std::to_string(error.status);
    event += "}}\n\n";
}

const ErrorStyle& sglang_oai_errors() {
    static const SglangOaiErrors errors;
    return errors;
}

}  // namespace infergate::emulator
