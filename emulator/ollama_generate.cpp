// Ollama's /api/generate and /api/chat (server/routes.go): NDJSON deltas, streaming unless
// "stream": false, a final done:true object with nanosecond metrics, in-band {"error"} lines.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/chat_extras.hpp"
#include "emulator/embed.hpp"
#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/ollama.hpp"
#include "emulator/ollama_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kNdjson = "application/x-ndjson";
constexpr std::string_view kGarbage[] = {
    "{\"model\":\"m\",\"response\":<<garbage\xff\xfe\n",
    "\x01\x02 not json at all }}]]\n",
};
constexpr Framing kFraming{kNdjson, kGoJson, "", kGarbage};

class OllamaErrors final : public ErrorStyle {
public:
    std::string_view render_status(int, std::string_view message,
                                   std::string& body) const override {
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", message);
        w.EndObject();
        return kGoJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        render_status(500, message, event);
        event += '\n';
    }
};
const OllamaErrors kErrors;

void write_head(JsonWriter& w, const OllamaRequest& r) {
    w.kv("model", r.model);
    w.kv("created_at", rfc3339_now());
}

void write_text(JsonWriter& w, const OllamaRequest& r, std::string_view text) {
    if (r.chat) {
        w.key("message");
        w.StartObject();
        w.kv("role", "assistant");
        w.kv("content", text);
        w.EndObject();
    } else {
        w.kv("response", text);
    }
}

// api.Message with thinking and tool calls (both omitempty): ToolCall{id, function{index, name,
// arguments}}, the arguments an object in the schema's order.
void write_message(JsonWriter& w, const ChatPlan& plan, std::string_view text,
                   std::string_view thinking, std::size_t first_call, std::size_t end_call) {
    w.key("message");
    w.StartObject();
    w.kv("role", "assistant");
    w.kv("content", text);
    if (!thinking.empty()) {
        w.kv("thinking", thinking);
    }
    if (first_call < end_call) {
        w.key("tool_calls");
        w.StartArray();
        for (std::size_t k = first_call; k < end_call; ++k) {
            const ToolSpec& tool = plan.tool_of(plan.calls[k]);
            w.StartObject();
            w.kv("id", ollama_tool_call_id());
            w.key("function");
            w.StartObject();
            w.kv_int("index", static_cast<std::int64_t>(k));
            w.kv("name", tool.name);
            w.key("arguments");
            write_args_object(w, tool);
            w.EndObject();
            w.EndObject();
        }
        w.EndArray();
    }
    w.EndObject();
}

struct Timings {
    std::int64_t load = 0, prompt_eval = 0, eval = 0, total = 0;
};

// The tokens whose logprobs Ollama returns: every generated one but EOS (the runner computes
// none for it) and those a stop string's truncation removed (their text is gone).
int listed_tokens(const Output& o) {
    int n = o.completion_tokens();
    if (o.finish == Finish::kEos) {
        --n;
    }
    while (n > 0 && raw_len_after(o, n - 1) >= o.final_len && o.finish == Finish::kStopString) {
        --n;  // the token starts at or after the cut
    }
    return n;
}

void write_logprobs(JsonWriter& w, const OllamaRequest& r, const Output& o, int from, int to) {
    w.key("logprobs");
    write_ollama_logprobs(w, LogprobSeq(o, ""), from, to, r.top_logprobs);
}

// The final object's tail: done_reason, context, metrics (zero values omitted, like omitempty);
// `logprobs` (non-stream: all of them) after done_reason on chat, at the very end on generate.
void write_done(JsonWriter& w, const OllamaRequest& r, const ChoiceState& c, const Timings& t,
                bool with_logprobs) {
    const Output& o = c.out;
    const bool logprobs = with_logprobs && r.logprobs && listed_tokens(o) > 0;
    w.kv_bool("done", true);
    w.kv("done_reason", o.finish == Finish::kLength ? "length" : "stop");
    if (logprobs && r.chat) {
        write_logprobs(w, r, o, 0, listed_tokens(o));
    }
    if (!r.chat && !r.raw) {
        w.key("context");
        w.StartArray();
        for (std::int64_t id : pseudo_token_ids(r.prompt)) {
            w.Int64(id);
        }
        for (std::int64_t id : o.token_ids) {
            if (id != kEosTokenId) {
                w.Int64(id);
            }
        }
        w.EndArray();
    }
    const std::pair<const char*, std::int64_t> metrics[] = {
        {"total_duration", t.total},         {"load_duration", t.load},
        {"prompt_eval_count", r.key.tokens}, {"prompt_eval_duration", t.prompt_eval},
        {"eval_count", c.total_tokens()},    {"eval_duration", t.eval},
    };
    for (const auto& [name, value] : metrics) {
        if (value != 0) {
            w.kv_int(name, value);
        }
    }
    if (logprobs && !r.chat) {
        write_logprobs(w, r, o, 0, listed_tokens(o));
    }
}

class OllamaEncoder final : public EventEncoder {
public:
    OllamaEncoder(const OllamaRequest& r, const Request& req, Clock::time_point started,
                  const ChatPlan& plan)
        : r_(r), req_(req), started_(started), plan_(plan) {}
    void on_start(std::vector<ChoiceState>&, EventList&) override { first_ = Clock::now(); }
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
        if (c.lead_tokens == 0) {
            text_step(c, tokens, last, out);
            return;
        }
        const int lead = c.lead_tokens;
        if (c.tokens_sent < lead) {
            lead_line(c.tokens_sent, std::min(tokens, lead), out);
        }
        if (plan_.calls.empty() && tokens > lead) {
            // The text after the thinking, counted in its own tokens.
            const int sent = c.tokens_sent;
            c.tokens_sent = std::max(sent - lead, 0);
            text_step(c, tokens - lead, last, out);
            c.tokens_sent = sent;
        }
    }

    void text_step(ChoiceState& c, int tokens, bool last, EventList& out) {
        const std::string_view delta =
            take_delta(c, visible_partial_stop(c.out, tokens, last, r_.stop.strings));
        if (delta.empty()) {
            return;  // held back (partial stop) or an EOS step: the runner sends nothing
        }
        std::string& line = out.next();
        JsonWriter w(line);
        w.StartObject();
        write_head(w, r_);
        write_text(w, r_, delta);
        w.kv_bool("done", false);
        if (r_.logprobs) {
            // The pending tokens go with the text that shows them: those whose text has begun.
            const Output& o = c.out;
            int upto = logprobs_sent_;
            while (upto < listed_tokens(o) && raw_len_after(o, upto) < c.text_sent) {
                ++upto;
            }
            if (upto > logprobs_sent_) {
                write_logprobs(w, r_, o, logprobs_sent_, upto);
                logprobs_sent_ = upto;
            }
        }
        w.EndObject();
        line += '\n';
    }
    void on_end(std::vector<ChoiceState>& choices, EventList& out) override {
        const Clock::time_point now = Clock::now();
        const Timings t{nanos_between(req_.received, started_), nanos_between(started_, first_),
                        nanos_between(first_, now), nanos_between(req_.received, now)};
        std::string& line = out.next();
        JsonWriter w(line);
        w.StartObject();
        write_head(w, r_);
        write_text(w, r_, "");
        write_done(w, r_, choices.front(), t, false);  // the lines carried them
        w.EndObject();
        line += '\n';
    }

private:
    // One line per runner step: the thinking it adds, and the calls whose last token it
    // generated (the tool parser hands over whole calls).
    void lead_line(int from, int to, EventList& out) {
        std::string_view thinking;
        lead_spans(plan_, from, to, spans_);
        if (!spans_.empty() && spans_.front().kind == LeadSpan::Kind::kReasoning) {
            thinking = spans_.front().text;
        }
        std::size_t first = plan_.calls.size();
        std::size_t end = first;
        int base = plan_.reasoning_tokens();
        for (std::size_t k = 0; k < plan_.calls.size(); ++k) {
            base += plan_.calls[k].tokens();  // the token after the call's last
            if (from < base && base <= to) {
                first = std::min(first, k);
                end = k + 1;
            }
        }
        if (thinking.empty() && first == end) {
            return;  // the parser is still reading a call
        }
        std::string& line = out.next();
        JsonWriter w(line);
        w.StartObject();
        write_head(w, r_);
        write_message(w, plan_, "", thinking, first, end);
        w.kv_bool("done", false);
        w.EndObject();
        line += '\n';
    }

    const OllamaRequest& r_;
    const Request& req_;
    Clock::time_point started_, first_;
    int logprobs_sent_ = 0;
    const ChatPlan& plan_;
    std::vector<LeadSpan> spans_;
};

}  // namespace

const ErrorStyle& ollama_errors() {
    return kErrors;
}

net::awaitable<void> handle_ollama_generation(Request& req, Conn& conn, const Options& options,
                                              bool chat) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc) && doc.IsObject();
    OllamaRequest r;
    bool stream = true;
    if (doc_ok) {
        get_bool(doc, "stream", stream);
    }
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, kErrors, kFraming)) {
        co_return;
    }
    if (!doc_ok) {
        co_await send_ollama_error(conn, 400, go_json_error(req.body, doc));
        co_return;
    }
    if (auto [status, message] = parse_ollama(doc, chat, options, r); status != 0) {
        co_await send_ollama_error(conn, status, message);
        co_return;
    }
    if (options.embedding.enabled) {
        // An embedding model lacks the completion capability (scheduleRunner's check).
        co_await send_ollama_error(conn, 400,
                                   quoted(r.model, '"') + (chat ? " does not support chat"
                                                                : " does not support generate"));
        co_return;
    }
    if (r.load_only) {
        std::string body;
        JsonWriter w(body);
        w.StartObject();
        write_head(w, r);
        write_text(w, r, "");
        w.kv_bool("done", true);
        w.kv("done_reason", "load");
        w.EndObject();
        co_await conn.send(200, kGoJson, body);
        co_return;
    }
    r.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices({r.key}, 1, r.budget, r.stop);
    ChatPlan plan;
    if (chat) {
        ChatAsk ask = read_chat_ask(doc, ChatFamily::kOllama);
        ask.format = std::move(r.format);
        plan = plan_chat(std::move(ask), req.knobs, {ArgsLayout::kCompact, true, kMaxToolCalls});
        if (plan.any()) {
            apply_plan(plan, choices, r.budget);
            r.logprobs = false;  // the emulator's logprob model covers generated words only
        }
    } else if (r.format) {
        apply_format(*r.format, choices, r.budget);
        r.logprobs = false;
    }
    // Ollama reports no cached prompt tokens; a queue wait shows as load_duration, as the wait
    // for its scheduler's runner does.
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, r.key, choices);
    if (!gen) {
        co_return;
    }
    const Clock::time_point started = Clock::now();
    if (r.stream) {
        OllamaEncoder encoder(r, req, started, plan);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        const Clock::time_point now = Clock::now();
        Timings t;
        t.load = nanos_between(req.received, started);
        t.total = nanos_between(req.received, now);
        t.prompt_eval = std::min<std::int64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(gen->first_token_delay()).count(),
            t.total - t.load);
        t.eval = std::max<std::int64_t>(t.total - t.load - t.prompt_eval, 0);
        const Output& o = choices.front().out;
        JsonWriter w(body);
        w.StartObject();
        write_head(w, r);
        if (plan.any()) {
            // The streamed lines joined: content, thinking and every call.
            write_message(w, plan, o.final_text(), plan.reasoning, 0, plan.calls.size());
        } else {
            write_text(w, r, o.final_text());
        }
        write_done(w, r, choices.front(), t, true);
        w.EndObject();
    };
    co_await send_generated(conn, req, choices, render, kErrors, kFraming);
}

}  // namespace infergate::emulator
