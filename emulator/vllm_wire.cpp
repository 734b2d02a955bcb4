// vLLM's OpenAI-compatible server, byte for byte where it matters: non-stream bodies are
// model_dump() of its response classes, chat chunks are model_dump_json(exclude_unset=True)
// (absent keys are really absent), and the final usage chunk excludes nulls.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

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
void write_usage(JsonWriter& w, int prompt, int completion, bool with_details) {
    w.key("usage");
    w.StartObject();
    w.kv_int("prompt_tokens", prompt);
    w.kv_int("total_tokens", prompt + completion);
    w.kv_int("completion_tokens", completion);
    if (with_details) {
        w.kv_null("prompt_tokens_details");
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
        const std::string_view text = next_delta(c, tokens, last);
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w);
        w.StartObject();
        w.kv_int("index", c.index);
        if (ctx_.req.chat) {
            w.key("delta");
            w.StartObject();
            w.kv("content", text);
            w.EndObject();
            w.kv_null("logprobs");
            if (last) {
                w.kv("finish_reason", finish_reason_name(c.out));
                write_stop_reason(w, c.out);
            } else {
                w.kv_null("finish_reason");
            }
        } else {
            w.kv("text", text);
            w.kv_null("logprobs");
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

    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        if (!ctx_.req.include_usage) {
            return;
        }
        std::string& event = begin(out);
        JsonWriter w(event);
        open_chunk(w);
        w.EndArray();
        write_usage(w, ctx_.prompt_tokens, ctx_.completion_tokens, false);
        w.EndObject();
        event += "\n\n";
    }

private:
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
            write_usage(w, c.prompt_tokens, tokens, false);
        }
        w.EndObject();
        event += "\n\n";
    }

    std::string_view next_delta(ChoiceState& c, int tokens, bool last) const {
        return take_delta(c, visible_holdback(c.out, tokens, last, holdback_));
    }

    const OaiContext& ctx_;
    std::size_t holdback_ = 0;
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
    const bool chat = ctx.req.chat;
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
            w.key("message");
            w.StartObject();
            w.kv("role", "assistant");
            w.kv("content", c.out.final_text());
            w.kv_null("refusal");
            w.kv_null("annotations");
            w.kv_null("audio");
            w.kv_null("function_call");
            w.key("tool_calls");
            w.StartArray();
            w.EndArray();
            w.kv_null("reasoning_content");
            w.EndObject();
        } else {
            w.kv("text", c.out.final_text());
        }
        w.kv_null("logprobs");
        w.kv("finish_reason", finish_reason_name(c.out));
        write_stop_reason(w, c.out);
        w.kv_null("token_ids");
        if (!chat) {
            w.kv_null("prompt_logprobs");
            w.kv_null("prompt_token_ids");
        }
        w.EndObject();
    }
    w.EndArray();
    w.kv_null("service_tier");
    w.kv_null("system_fingerprint");
    write_usage(w, ctx.prompt_tokens, ctx.completion_tokens, true);
    if (chat) {
        w.kv_null("prompt_logprobs");
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
