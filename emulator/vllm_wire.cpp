// vLLM's OpenAI-compatible server, byte for byte where it matters: non-stream bodies are
// model_dump() of its response classes, chat chunks are model_dump_json(exclude_unset=True)
// (absent keys are really absent), and the final usage chunk excludes nulls.
#include <algorithm>
#include <optional>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

constexpr std::string_view kEosText = "</s>";  // tokenizer.decode([eos]) keeps specials

// The prompt a choice continues, for echo and prompt listings.
const std::vector<PromptToken>& prompt_of(const OaiContext& ctx, const ChoiceState& c) {
    return ctx.req.prompt_tokens[static_cast<std::size_t>(c.index / ctx.req.n)];
}

// CompletionLogProbs of a choice's tokens [from, to), led by its prompt on echo.
void write_completion_logprobs(JsonWriter& w, const OaiContext& ctx, const ChoiceState& c, int from,
                               int to, bool echo, int initial_offset) {
    const OaiRequest& r = ctx.req;
    const LogprobSeq output(c.out, kEosText);
    std::optional<LogprobSeq> prompt;
    LogprobSpan spans[2];
    std::size_t count = 0;
    if (echo) {
        prompt.emplace(prompt_of(ctx, c), kEosText);
        spans[count++] = {&*prompt, 0, prompt->size(), r.prompt_logprobs.value_or(0)};
    }
    if (!(echo && r.echo_only)) {  // echo with max_tokens 0 lists the prompt only
        spans[count++] = {&output, from, to, *r.logprobs};
    }
    write_vllm_completion_logprobs(w, std::span(spans, count), *r.logprobs, initial_offset);
}

void write_prompt_logprobs(JsonWriter& w, const OaiContext& ctx, const ChoiceState& c) {
    w.key("prompt_logprobs");
    if (ctx.req.prompt_logprobs) {
        write_vllm_prompt_logprobs(w, LogprobSeq(prompt_of(ctx, c), kEosText),
                                   *ctx.req.prompt_logprobs);
    } else {
        w.Null();
    }
}

void write_stop_reason(JsonWriter& w, const Output& out) {
    w.key("stop_reason");
    switch (out.finish) {
        case Finish::kStopString:
            w.str(out.matched_string);
            break;
        case Finish::kStopToken:
            w.Int64(out.matched_token);
            break;
        default:
            w.Null();  // EOS and the budget: vLLM reports null
            break;
    }
}

// UsageInfo field order: prompt_tokens, total_tokens, completion_tokens[, prompt_tokens_details].
// The details say `cached` tokens when the prefix cache served any (a continuous-usage chunk
// never does); otherwise null (`with_details`, a whole answer) or nothing (exclude_none).
void write_usage(JsonWriter& w, int prompt, int completion, bool with_details, int cached = 0) {
    w.key("usage");
    w.StartObject();
    w.kv_int("prompt_tokens", prompt);
    w.kv_int("total_tokens", prompt + completion);
    w.kv_int("completion_tokens", completion);
    write_cached_details_if_any(w, cached, with_details);
    w.EndObject();
}

// ChatMessage: tool calls (hermes: content null; a named tool_choice: content ""), reasoning
// as `reasoning` and its deprecated copy `reasoning_content` (vLLM >= 0.11.1, PR #27752).
void write_message(JsonWriter& w, const OaiContext& ctx, const ChoiceState& c) {
    const ChatPlan* plan = ctx.plan;
    w.key("message");
    w.StartObject();
    w.kv("role", "assistant");
    if (!ctx.calls()) {
        w.kv("content", c.out.final_text());
    } else if (plan->named) {
        w.kv("content", "");
    } else {
        w.kv_null("content");
    }
    w.kv_null("refusal");
    w.kv_null("annotations");
    w.kv_null("audio");
    w.kv_null("function_call");
    w.key("tool_calls");
    w.StartArray();
    if (plan != nullptr) {
        for (const PlannedCall& call : plan->calls) {
            w.StartObject();
            w.kv("id", vllm_tool_call_id());
            w.kv("type", "function");
            w.key("function");
            w.StartObject();
            w.kv("name", plan->tool_of(call).name);
            w.kv("arguments", call.args);
            w.EndObject();
            w.EndObject();
        }
    }
    w.EndArray();
    if (plan != nullptr && !plan->reasoning.empty()) {
        w.kv("reasoning", plan->reasoning);
        w.kv("reasoning_content", plan->reasoning);
    } else {
        w.kv_null("reasoning_content");
    }
    w.EndObject();
}

class VllmEncoder final : public EventEncoder {
public:
    // vLLM holds back len(longest stop) - 1 characters so a stop string never leaks into a
    // delta before it is known to match.
    explicit VllmEncoder(const OaiContext& ctx)
        : ctx_(ctx), holdback_(stop_holdback(ctx.req.stop)) {}

    void on_start(std::vector<ChoiceState>& choices, EventList& out) override {
        if (!ctx_.req.chat) {
            return;
        }
        for (const ChoiceState& c : choices) {
            std::string& event = begin(out);
            JsonWriter w(event);
            open_chunk(w);
            w.StartObject();
            w.kv_int("index", c.index);
            w.key("delta");
            w.StartObject();
            w.kv("role", "assistant");
            w.kv("content", "");
            w.EndObject();
            w.kv_null("logprobs");
            w.kv_null("finish_reason");
            w.EndObject();
            close_chunk(w, c, 0, event);
        }
    }

    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        if (c.lead_tokens == 0) {
            text_step(c, tokens, last, out);
            return;
        }
        const int lead = c.lead_tokens;
        if (c.tokens_sent < lead) {
            lead_spans(*ctx_.plan, c.tokens_sent, std::min(tokens, lead), spans_);
            for (const LeadSpan& span : spans_) {
                lead_chunk(c, span, tokens, out);
            }
        }
        if (ctx_.calls()) {
            if (last) {
                // The EOS step after the calls: an empty delta with the finish. A named
                // tool_choice finishes "stop" (OpenAI's rule, kept by serving_chat.py).
                std::string& event = begin(out);
                JsonWriter w(event);
                open_chunk(w);
                w.StartObject();
                w.kv_int("index", c.index);
                w.key("delta");
                w.StartObject();
                w.EndObject();
                w.kv_null("logprobs");
                w.kv("finish_reason", ctx_.plan->named ? "stop" : "tool_calls");
                write_stop_reason(w, c.out);
                w.EndObject();
                close_chunk(w, c, tokens, event);
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

    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        if (!ctx_.req.include_usage) {
            return;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w);
        w.EndArray();
        // num_cached_tokens of the first result the stream saw: the first prompt's.
        write_usage(w, ctx_.prompt_tokens, ctx_.completion_tokens, false,
                    choices.front().cached_tokens);
        w.EndObject();
        event += "\n\n";
    }

private:
    // A reasoning delta (vLLM >= 0.11.1 writes `reasoning` and its deprecated copy
    // `reasoning_content`), a call's first delta (hermes: id, type, index and the name; a named
    // tool_choice also sends the arguments so far) or argument fragments.
    void lead_chunk(const ChoiceState& c, const LeadSpan& span, int tokens, EventList& out) {
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w);
        w.StartObject();
        w.kv_int("index", c.index);
        w.key("delta");
        w.StartObject();
        if (span.kind == LeadSpan::Kind::kReasoning) {
            w.kv("reasoning", span.text);
            w.kv("reasoning_content", span.text);
        } else {
            const auto k = static_cast<std::int64_t>(span.call);
            w.key("tool_calls");
            w.StartArray();
            w.StartObject();
            if (span.kind == LeadSpan::Kind::kCallStart) {
                w.kv("id", vllm_tool_call_id());
                w.kv("type", "function");
                w.kv_int("index", k);
                w.key("function");
                w.StartObject();
                w.kv("name", ctx_.plan->tool_of(ctx_.plan->calls[span.call]).name);
                if (ctx_.plan->named) {
                    w.kv("arguments", span.text);
                }
                w.EndObject();
            } else {
                w.kv_int("index", k);
                w.key("function");
                w.StartObject();
                w.kv("arguments", span.text);
                w.EndObject();
            }
            w.EndObject();
            w.EndArray();
        }
        w.EndObject();
        w.kv_null("logprobs");
        w.kv_null("finish_reason");
        w.EndObject();
        close_chunk(w, c, tokens, event);
    }

    void text_step(ChoiceState& c, int tokens, bool last, EventList& out) {
        const OaiRequest& r = ctx_.req;
        const int shown = static_cast<int>(c.text_sent);  // previous_text_lens: the text so far
        std::string_view text = next_delta(c, tokens, last);
        // The first chunk of an echo carries the prompt (and its logprobs) before the delta.
        const bool echo = r.echo && c.tokens_sent == 0;
        if (echo) {
            echo_text_ = r.prompt_texts[static_cast<std::size_t>(c.index / r.n)];
            echo_text_.append(r.echo_only ? std::string_view() : text);
            text = echo_text_;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w);
        w.StartObject();
        w.kv_int("index", c.index);
        if (r.chat) {
            w.key("delta");
            w.StartObject();
            w.kv("content", text);
            w.EndObject();
            w.key("logprobs");
            if (r.logprobs) {
                write_vllm_chat_logprobs(w, LogprobSeq(c.out, kEosText), c.tokens_sent, tokens,
                                         *r.logprobs);
            } else {
                w.Null();
            }
            if (last) {
                w.kv("finish_reason", finish_reason_name(c.out));
                write_stop_reason(w, c.out);
            } else {
                w.kv_null("finish_reason");
            }
        } else {
            w.kv("text", text);
            w.key("logprobs");
            if (r.logprobs) {
                // initial_text_offset = previous_text_lens[i], which never counts the echo.
                write_completion_logprobs(w, ctx_, c, c.tokens_sent, tokens, echo, shown);
            } else {
                w.Null();
            }
            if (last) {
                w.kv("finish_reason", finish_reason_name(c.out));
                write_stop_reason(w, c.out);
            } else {
                w.kv_null("finish_reason");
                w.kv_null("stop_reason");
            }
            w.kv_null("prompt_token_ids");
            w.kv_null("token_ids");
        }
        w.EndObject();
        close_chunk(w, c, tokens, event);
    }

    static std::string& begin(EventList& out) {
        std::string& event = out.next();
        event = "data: ";
        return event;
    }

    void open_chunk(JsonWriter& w) const {
        w.StartObject();
        w.kv("id", ctx_.id);
        w.kv("object", ctx_.req.chat ? "chat.completion.chunk" : "text_completion");
        w.kv_int("created", ctx_.created);
        w.kv("model", ctx_.req.model);
        w.key("choices");
        w.StartArray();
    }

    void close_chunk(JsonWriter& w, const ChoiceState& c, int tokens, std::string& event) const {
        w.EndArray();
        if (ctx_.req.continuous_usage) {
            write_usage(w, c.prompt_tokens, tokens + shift_, false);  // text steps: lead first
        }
        w.EndObject();
        event += "\n\n";
    }

    std::string_view next_delta(ChoiceState& c, int tokens, bool last) const {
        return take_delta(c, visible_holdback(c.out, tokens, last, holdback_));
    }

    const OaiContext& ctx_;
    std::size_t holdback_ = 0;
    std::string echo_text_;
    std::vector<LeadSpan> spans_;
    int shift_ = 0;  // lead tokens before a text step's own
};

class VllmErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        render_vllm_error(OaiError{status, std::string(message), false}, body);
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        // create_streaming_error_response goes through json.dumps: note the spaces.
        event = "data: {\"error\": {\"message\": ";
        JsonWriter w(event);
        w.str(message);
        event += ", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n";
    }
};

// vLLM names error types after exceptions: BadRequestError, NotFoundError, InternalServerError.
std::string vllm_error_type(int status) {
    std::string type = compact_reason(status);
    if (!type.ends_with("Error")) {
        type += "Error";
    }
    return type;
}

}  // namespace

std::unique_ptr<EventEncoder> make_vllm_encoder(const OaiContext& ctx) {
    return std::make_unique<VllmEncoder>(ctx);
}

void render_vllm_response(const OaiContext& ctx, const std::vector<ChoiceState>& choices,
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
            write_message(w, ctx, c);
        } else if (r.echo) {
            std::string text = r.prompt_texts[static_cast<std::size_t>(c.index / r.n)];
            text.append(r.echo_only ? std::string_view() : c.out.final_text());
            w.kv("text", text);
        } else {
            w.kv("text", c.out.final_text());
        }
        w.key("logprobs");
        if (!r.logprobs) {
            w.Null();
        } else if (chat) {
            write_vllm_chat_logprobs(w, LogprobSeq(c.out, kEosText), 0, c.out.completion_tokens(),
                                     *r.logprobs);
        } else {
            write_completion_logprobs(w, ctx, c, 0, c.out.completion_tokens(), r.echo, 0);
        }
        w.kv("finish_reason", !ctx.calls()      ? finish_reason_name(c.out)
                              : ctx.plan->named ? "stop"
                                                : "tool_calls");
        write_stop_reason(w, c.out);
        w.kv_null("token_ids");
        if (!chat) {
            write_prompt_logprobs(w, ctx, c);
            w.kv_null("prompt_token_ids");
        }
        w.EndObject();
    }
    w.EndArray();
    w.kv_null("service_tier");
    w.kv_null("system_fingerprint");
    // The last prompt's num_cached_tokens (last_final_res / final_res).
    write_usage(w, ctx.prompt_tokens, ctx.completion_tokens, true, choices.back().cached_tokens);
    if (chat) {
        write_prompt_logprobs(w, ctx, choices.front());
        w.kv_null("prompt_token_ids");
    }
    w.kv_null("kv_transfer_params");
    w.EndObject();
}

void render_vllm_error(const OaiError& error, std::string& body) {
    JsonWriter w(body);
    if (error.status == 401) {
        w.StartObject();
        w.kv("error", "Unauthorized");
        w.EndObject();
        return;
    }
    // vLLM >= 0.10.1: nested, integer code; FastAPI-level errors carry the reason phrase as type.
    w.StartObject();
    w.key("error");
    w.StartObject();
    w.kv("message", error.message);
    w.kv("type", error.framework ? std::string(reason_phrase(error.status))
                                 : vllm_error_type(error.status));
    w.kv_null("param");
    w.kv_int("code", error.status);
    w.EndObject();
    w.EndObject();
}

const ErrorStyle& vllm_errors() {
    static const VllmErrors errors;
    return errors;
}

}  // namespace infergate::emulator
