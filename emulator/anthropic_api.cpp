// Anthropic's Messages API: POST /v1/messages (message object, or the named-event SSE sequence
// message_start .. message_stop) and GET /v1/models. Errors are
// {"type":"error","error":{"type","message"},"request_id"}; mid-stream faults are `event: error`.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/chat_extras.hpp"
#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;
using rapidjson::Value;

constexpr std::string_view kGarbage[] = {
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",<<garbage\xff\xfe\n\n",
    "event: \x01\x02\ndata: not json at all }}]]\n\n",
};
constexpr Framing kFraming{kEventStream, kJson, "", kGarbage};

std::string_view error_type(int status) {
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 402: return "billing_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "request_too_large";
        case 429: return "rate_limit_error";
        case 504: return "timeout_error";
        case 529: return "overloaded_error";
        default: return "api_error";
    }
}

class AnthropicErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        JsonWriter w(body);
        w.StartObject();
        w.kv("type", "error");
        w.key("error");
        w.StartObject();
        w.kv("type", error_type(status));
        w.kv("message", message);
        w.EndObject();
        w.kv("request_id", "req_" + random_alnum(24));
        w.EndObject();
        return kJson;
    }
    // The SDK fixture's bytes: json.dumps spacing, no request_id.
    void render_event(std::string_view message, std::string& event) const override {
        event = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"api_error\", "
                "\"message\": ";
        py_json_string(message, event);
        event += "}}\n\n";
    }
};
const AnthropicErrors kErrors;

struct MessagesRequest {
    std::string model;
    int max_tokens = 0;
    bool stream = false;
    PromptKey key;
    StopRules stop;
};

std::optional<std::string> add_content(const Value& content, ChatPromptBuilder& builder,
                                       std::string_view where) {
    if (content.IsString()) {
        builder.add_content({content.GetString(), content.GetStringLength()});
        return std::nullopt;
    }
    if (!content.IsArray()) {
        return std::string(where) + ": Input should be a valid list";
    }
    for (const Value& block : content.GetArray()) {
        const Value* text = member(block, "text");
        if (text != nullptr && text->IsString()) {
            builder.add_content({text->GetString(), text->GetStringLength()});
        }
    }
    return std::nullopt;
}

// The Messages API's request fields. It refuses any other (pydantic's extra="forbid"): there
// are no log probabilities, so `logprobs` / `top_logprobs` get "Extra inputs are not permitted".
constexpr std::string_view kKnownFields[] = {
    "model",       "messages",           "max_tokens",    "system",       "stop_sequences",
    "stream",      "temperature",        "top_p",         "top_k",        "metadata",
    "tools",       "tool_choice",        "thinking",      "service_tier", "container",
    "mcp_servers", "context_management", "output_format", "output_config"};

// The first invalid_request_error the API would give, or nullopt.
std::optional<std::string> parse_messages(const Value& doc, MessagesRequest& out) {
    const Value* model = member(doc, "model");
    if (model == nullptr || !model->IsString()) {
        return std::string("model: Field required");
    }
    out.model.assign(model->GetString(), model->GetStringLength());
    std::int64_t max_tokens = 0;
    const Lookup got = get_int(doc, "max_tokens", max_tokens);
    if (got == Lookup::kAbsent) {
        return std::string("max_tokens: Field required");
    }
    if (got == Lookup::kWrongType || max_tokens < 1) {
        return std::string("max_tokens: Input should be greater than or equal to 1");
    }
    out.max_tokens = static_cast<int>(std::min<std::int64_t>(max_tokens, 1 << 20));
    const Value* messages = member(doc, "messages");
    if (messages == nullptr) {
        return std::string("messages: Field required");
    }
    if (!messages->IsArray()) {
        return std::string("messages: Input should be a valid list");
    }
    double number = 0;
    if (get_number(doc, "temperature", number) == Lookup::kOk && !(number >= 0 && number <= 1)) {
        return std::string("temperature: range: 0..1");
    }
    get_bool(doc, "stream", out.stream);
    ChatPromptBuilder builder;
    // The system prompt counts like an OpenAI system message, so counts agree across dialects.
    if (const Value* system = member(doc, "system")) {
        builder.add_message("system");
        if (auto e = add_content(*system, builder, "system")) {
            return e;
        }
    }
    for (const Value& m : messages->GetArray()) {
        const Value* role = member(m, "role");
        if (role == nullptr || !role->IsString()) {
            return std::string("messages.0.role: Field required");
        }
        const std::string_view r(role->GetString(), role->GetStringLength());
        if (r != "user" && r != "assistant") {
            return "messages: Unexpected role \"" + std::string(r) +
                   "\". Allowed roles are \"user\" or \"assistant\"";
        }
        builder.add_message(r);
        if (const Value* content = member(m, "content")) {
            if (auto e = add_content(*content, builder, "messages.content")) {
                return e;
            }
        }
    }
    out.key = builder.finish();
    if (const Value* stops = member(doc, "stop_sequences")) {
        if (!stops->IsArray()) {
            return std::string("stop_sequences: Input should be a valid list");
        }
        for (const Value& s : stops->GetArray()) {
            if (s.IsString()) {
                out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        }
    }
    for (const auto& m : doc.GetObject()) {
        const std::string_view key(m.name.GetString(), m.name.GetStringLength());
        if (std::find(std::begin(kKnownFields), std::end(kKnownFields), key) ==
            std::end(kKnownFields)) {
            return std::string(key) + ": Extra inputs are not permitted";
        }
    }
    return std::nullopt;
}

std::string_view stop_reason(const Output& o) {
    return o.finish == Finish::kLength       ? "max_tokens"
           : o.finish == Finish::kStopString ? "stop_sequence"
                                             : "end_turn";
}

void write_stop_sequence(JsonWriter& w, const Output& o) {
    if (o.finish == Finish::kStopString) {
        w.kv("stop_sequence", o.matched_string);
    } else {
        w.kv_null("stop_sequence");
    }
}

// input_tokens are the prompt's tokens after the last cache hit: the prefix cache's `cached`
// tokens are read from the cache instead (total = input + creation + read).
void write_usage(JsonWriter& w, int prompt, int cached, int output) {
    w.key("usage");
    w.StartObject();
    w.kv_int("input_tokens", prompt - cached);
    w.kv_int("cache_creation_input_tokens", 0);
    w.kv_int("cache_read_input_tokens", cached);
    w.kv_int("output_tokens", output);
    w.kv("service_tier", "standard");
    w.EndObject();
}

// message_start, then per content block content_block_start, its deltas and content_block_stop
// (a thinking block's signature_delta last; a tool_use block's input_json_delta fragments, the
// first ""), then message_delta and message_stop. A ping follows the first block's start.
class MessagesEncoder final : public EventEncoder {
public:
    MessagesEncoder(const MessagesRequest& r, std::string id, const ChatPlan& plan)
        : r_(r), id_(std::move(id)), holdback_(stop_holdback(r.stop)), plan_(plan) {}
    void on_start(std::vector<ChoiceState>& choices, EventList& out) override {
        std::string& start = begin(out, "message_start");
        JsonWriter w(start);
        w.StartObject();
        w.kv("type", "message_start");
        w.key("message");
        w.StartObject();
        w.kv("id", id_);
        w.kv("type", "message");
        w.kv("role", "assistant");
        w.key("content");
        w.StartArray();
        w.EndArray();
        w.kv("model", r_.model);
        w.kv_null("stop_reason");
        w.kv_null("stop_sequence");
        write_usage(w, r_.key.tokens, choices.front().cached_tokens, 1);
        w.EndObject();
        w.EndObject();
        start += "\n\n";
        if (!plan_.reasoning.empty()) {
            open_block(Block::kThinking, 0, out);
        } else if (!plan_.calls.empty()) {
            open_block(Block::kToolUse, 0, out);
        } else {
            open_block(Block::kText, 0, out);
        }
        out.next() = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
    }
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        const int lead = c.lead_tokens;
        if (c.tokens_sent < lead) {
            lead_spans(plan_, c.tokens_sent, std::min(tokens, lead), spans_);
            for (const LeadSpan& span : spans_) {
                if (span.kind == LeadSpan::Kind::kReasoning) {
                    delta(R"({"type":"thinking_delta","thinking":)", span.text, out);
                    continue;
                }
                if (span.kind == LeadSpan::Kind::kCallStart) {
                    if (open_ != Block::kToolUse || call_ != span.call) {
                        open_block(Block::kToolUse, span.call, out);
                    }
                    delta(R"({"type":"input_json_delta","partial_json":)", "", out);
                }
                if (span.kind == LeadSpan::Kind::kArgs) {
                    delta(R"({"type":"input_json_delta","partial_json":)", span.text, out);
                }
            }
        }
        if (!plan_.calls.empty() || (tokens <= lead && !last)) {
            return;
        }
        if (open_ != Block::kText) {
            open_block(Block::kText, 0, out);
        }
        // The text after the thinking, counted in its own tokens.
        const int sent = c.tokens_sent;
        c.tokens_sent = std::max(sent - lead, 0);
        const std::string_view text =
            take_delta(c, visible_holdback(c.out, tokens - lead, last, holdback_));
        c.tokens_sent = sent;
        if (!text.empty()) {
            delta(R"({"type":"text_delta","text":)", text, out);
        }
    }
    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        const ChoiceState& c = choices.front();
        const Output& o = c.out;
        if (plan_.calls.empty() && open_ != Block::kText) {
            open_block(Block::kText, 0, out);  // a text block, if empty
        }
        close_block(out);
        std::string& delta = begin(out, "message_delta");
        JsonWriter w(delta);
        w.StartObject();
        w.kv("type", "message_delta");
        w.key("delta");
        w.StartObject();
        w.kv("stop_reason", plan_.calls.empty() ? stop_reason(o) : "tool_use");
        write_stop_sequence(w, o);
        w.EndObject();
        w.key("usage");
        w.StartObject();
        w.kv_int("output_tokens", c.total_tokens());
        w.EndObject();
        w.EndObject();
        delta += "\n\n";
        out.next() = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    }

private:
    enum class Block { kNone, kThinking, kText, kToolUse };

    static std::string& begin(EventList& out, std::string_view name) {
        std::string& event = out.next();
        event = "event: ";
        event += name;
        event += "\ndata: ";
        return event;
    }

    // content_block_delta of the open block: `head` is the delta object up to its text value.
    void delta(std::string_view head, std::string_view text, EventList& out) const {
        std::string& event = begin(out, "content_block_delta");
        event += R"({"type":"content_block_delta","index":)";
        event += std::to_string(index_);
        event += R"(,"delta":)";
        event += head;
        JsonWriter w(event);
        w.str(text);
        event += "}}\n\n";
    }

    void close_block(EventList& out) {
        if (open_ == Block::kNone) {
            return;
        }
        if (open_ == Block::kThinking) {
            delta(R"({"type":"signature_delta","signature":)", thinking_signature(plan_.reasoning),
                  out);
        }
        std::string& stop = begin(out, "content_block_stop");
        stop += R"({"type":"content_block_stop","index":)" + std::to_string(index_) + "}\n\n";
        open_ = Block::kNone;
    }

    void open_block(Block block, std::size_t call, EventList& out) {
        if (open_ != Block::kNone) {
            close_block(out);
            ++index_;
        }
        open_ = block;
        call_ = call;
        std::string& start = begin(out, "content_block_start");
        JsonWriter w(start);
        w.StartObject();
        w.kv("type", "content_block_start");
        w.kv_int("index", index_);
        w.key("content_block");
        w.StartObject();
        if (block == Block::kThinking) {
            w.kv("type", "thinking");
            w.kv("thinking", "");
            w.kv("signature", "");
        } else if (block == Block::kToolUse) {
            w.kv("type", "tool_use");
            w.kv("id", anthropic_tool_use_id());
            w.kv("name", plan_.tool_of(plan_.calls[call]).name);
            w.key("input");
            w.StartObject();
            w.EndObject();
        } else {
            w.kv("type", "text");
            w.kv("text", "");
        }
        w.EndObject();
        w.EndObject();
        start += "\n\n";
    }

    const MessagesRequest& r_;
    std::string id_;
    std::size_t holdback_;
    const ChatPlan& plan_;
    std::vector<LeadSpan> spans_;
    Block open_ = Block::kNone;
    int index_ = 0;
    std::size_t call_ = 0;
};

bool has_header(const Request& req, std::string_view name) {
    return req.http == nullptr || req.http->find(name) != req.http->end();
}

net::awaitable<void> handle_messages(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc) && doc.IsObject();
    MessagesRequest r;
    bool stream = false;
    if (doc_ok) {
        get_bool(doc, "stream", stream);
    }
    conn.add_header("request-id", "req_" + random_alnum(24));
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, kErrors, kFraming)) {
        co_return;
    }
    std::optional<std::string> error;
    int status = 400;
    if (!has_header(req, "anthropic-version")) {
        error = "anthropic-version: header is required";
    } else if (!doc_ok) {
        error = "There was an issue with your request body: the JSON could not be parsed";
    } else if ((error = parse_messages(doc, r))) {
    } else if (r.model != options.model) {
        status = 404;
        error = "model: " + r.model;
    }
    if (error) {
        std::string body;
        co_await conn.send(status, kErrors.render_status(status, *error, body), body);
        co_return;
    }
    const int room = options.max_model_len - r.key.tokens;
    if (room <= 0 || r.max_tokens > room) {
        std::string body;
        const std::string message = "prompt is too long: " + std::to_string(r.key.tokens) +
                                    " tokens + max_tokens " + std::to_string(r.max_tokens) +
                                    " > " + std::to_string(options.max_model_len) + " maximum";
        co_await conn.send(400, kErrors.render_status(400, message, body), body);
        co_return;
    }
    r.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices({r.key}, 1, r.max_tokens, r.stop);
    // Anthropic streams partial_json with json.dumps spacing.
    ChatAsk ask = read_chat_ask(doc, ChatFamily::kAnthropic);
    ask.format = read_anthropic_format(doc).text;
    const ChatPlan plan =
        plan_chat(std::move(ask), req.knobs, {ArgsLayout::kPython, true, kMaxToolCalls});
    if (plan.any()) {
        apply_plan(plan, choices, r.max_tokens);
    }
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, r.key, choices);
    if (!gen) {
        co_return;
    }
    std::string id = "msg_" + random_alnum(24);
    if (r.stream) {
        MessagesEncoder encoder(r, std::move(id), plan);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        const Output& o = choices.front().out;
        JsonWriter w(body);
        w.StartObject();
        w.kv("model", r.model);
        w.kv("id", id);
        w.kv("type", "message");
        w.kv("role", "assistant");
        w.key("content");
        w.StartArray();
        if (!plan.reasoning.empty()) {
            w.StartObject();
            w.kv("type", "thinking");
            w.kv("thinking", plan.reasoning);
            w.kv("signature", thinking_signature(plan.reasoning));
            w.EndObject();
        }
        for (const PlannedCall& call : plan.calls) {
            w.StartObject();
            w.kv("type", "tool_use");
            w.kv("id", anthropic_tool_use_id());
            w.kv("name", plan.tool_of(call).name);
            w.key("input");
            write_args_object(w, plan.tool_of(call));
            w.EndObject();
        }
        if (plan.calls.empty()) {
            w.StartObject();
            w.kv("type", "text");
            w.kv("text", o.final_text());
            w.EndObject();
        }
        w.EndArray();
        w.kv("stop_reason", plan.calls.empty() ? stop_reason(o) : "tool_use");
        write_stop_sequence(w, o);
        write_usage(w, r.key.tokens, choices.front().cached_tokens, choices.front().total_tokens());
        w.EndObject();
    };
    co_await send_generated(conn, req, choices, render, kErrors, kFraming);
}

std::string models_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.key("data");
    w.StartArray();
    w.StartObject();
    w.kv("type", "model");
    w.kv("id", options.model);
    w.kv("display_name", options.model);
    w.kv("created_at", "2025-01-01T00:00:00Z");
    w.EndObject();
    w.EndArray();
    w.kv_bool("has_more", false);
    w.kv("first_id", options.model);
    w.kv("last_id", options.model);
    w.EndObject();
    return body;
}

}  // namespace

net::awaitable<void> route_anthropic(Request& req, Conn& conn, const Options& options) {
    std::string body;
    if (req.path == "/v1/messages" && req.method == verb::post) {
        co_await handle_messages(req, conn, options);
    } else if (req.path == "/v1/models" && req.method == verb::get) {
        co_await conn.send(200, kJson, models_body(options));
    } else if (req.path == "/v1/messages" || req.path == "/v1/models") {
        co_await conn.send(405, kErrors.render_status(405, "Method Not Allowed", body), body);
    } else {
        co_await conn.send(404, kErrors.render_status(404, "Not Found", body), body);
    }
}

}  // namespace infergate::emulator
