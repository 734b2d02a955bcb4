// Ollama's /api/generate and /api/chat (server/routes.go): NDJSON deltas, streaming unless
// "stream": false, a final done:true object with nanosecond metrics, in-band {"error"} lines.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/logprob_wire.hpp"
#include "emulator/ollama.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;
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

struct OllamaRequest {
    bool chat = false;
    std::string model;  // echoed as sent
    bool stream = true;
    bool raw = false;
    std::string prompt;  // after the template (generate)
    PromptKey key;
    bool load_only = false;  // empty prompt / no messages: a model-load request
    int budget = 0;
    StopRules stop;
    bool logprobs = false;  // `logprobs`, with `top_logprobs` alternatives (0-20)
    int top_logprobs = 0;
};

// Ollama's substitute for text/template on our one template: {{ .System }} and {{ .Prompt }}.
std::string apply_template(std::string_view tmpl, std::string_view system, std::string_view prompt) {
    std::string out(tmpl);
    auto replace_all = [&out](std::string_view from, std::string_view to) {
        for (std::size_t pos = out.find(from); pos != std::string::npos;
             pos = out.find(from, pos + to.size())) {
            out.replace(pos, from.size(), to);
        }
    };
    if (tmpl == kOllamaTemplate) {
        out.clear();
        if (!system.empty()) {
            out.append("<|system|> ").append(system).append(" ");
        }
        out.append("<|user|> ").append(prompt).append(" <|assistant|>");
        return out;
    }
    for (std::string_view p : {"{{ .System }}", "{{.System}}"}) {
        replace_all(p, system);
    }
    for (std::string_view p : {"{{ .Prompt }}", "{{.Prompt}}"}) {
        replace_all(p, prompt);
    }
    return out;
}

std::string_view string_field(const Value& doc, std::string_view name) {
    const Value* v = member(doc, name);
    return v != nullptr && v->IsString() ? std::string_view(v->GetString(), v->GetStringLength())
                                         : std::string_view();
}

// encoding/json's name for a JSON value's type in an UnmarshalTypeError.
std::string go_json_type(const Value& v) {
    if (v.IsString()) {
        return "string";
    }
    if (v.IsBool()) {
        return "bool";
    }
    if (v.IsNumber()) {
        return "number " + py_number(v);
    }
    return v.IsArray() ? "array" : "object";
}

// Returns {status, message} of the first error, or status 0.
std::pair<int, std::string> parse_ollama(const Value& doc, bool chat, const Options& options,
                                         OllamaRequest& out) {
    out.chat = chat;
    out.model = std::string(string_field(doc, "model"));
    get_bool(doc, "stream", out.stream);
    get_bool(doc, "raw", out.raw);
    // Decoding errors come first (ShouldBindJSON), then the top_logprobs range.
    const std::string_view type = chat ? "ChatRequest" : "GenerateRequest";
    if (get_bool(doc, "logprobs", out.logprobs) == Lookup::kWrongType) {
        return {400, "json: cannot unmarshal " + go_json_type(*member(doc, "logprobs")) +
                         " into Go struct field " + std::string(type) + ".logprobs of type bool"};
    }
    if (const Value* top = member(doc, "top_logprobs")) {
        if (!top->IsInt64()) {
            return {400, "json: cannot unmarshal " + go_json_type(*top) + " into Go struct field " +
                             std::string(type) + ".top_logprobs of type int"};
        }
        if (top->GetInt64() < 0 || top->GetInt64() > 20) {
            return {400, "top_logprobs must be between 0 and 20"};
        }
        out.top_logprobs = static_cast<int>(top->GetInt64());
    }
    if (out.model.empty()) {
        return {400, "model is required"};
    }
    if (!ollama_model_matches(options, out.model)) {
        return {404, "model \"" + out.model + "\" not found, try pulling it first"};
    }
    const Value* opts = member(doc, "options");
    std::int64_t num_predict = -1;
    if (opts != nullptr) {
        if (!opts->IsObject()) {
            return {400, "json: cannot unmarshal options into Go struct field of type map"};
        }
        std::int64_t value = 0;
        double number = 0;
        if (get_int(*opts, "num_predict", num_predict) == Lookup::kWrongType) {
            return {400, "invalid int option \"num_predict\""};
        }
        if (const Lookup got = get_int(*opts, "seed", value); got == Lookup::kWrongType) {
            return {400, "invalid int option \"seed\""};
        } else if (got == Lookup::kOk) {
            out.stop.seed = value;
        }
        for (const char* name : {"temperature", "top_p", "min_p", "typical_p", "repeat_penalty"}) {
            if (get_number(*opts, name, number) == Lookup::kWrongType) {
                return {400, std::string("invalid float option \"") + name + "\""};
            }
        }
        if (const Value* stop = member(*opts, "stop")) {
            if (!stop->IsArray()) {
                return {400, "invalid string array option \"stop\""};
            }
            for (const Value& s : stop->GetArray()) {
                if (!s.IsString()) {
                    return {400, "invalid string array option \"stop\""};
                }
                out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        }
    }
    if (chat) {
        const Value* messages = member(doc, "messages");
        if (messages != nullptr && !messages->IsArray()) {
            return {400, "json: cannot unmarshal messages into Go struct field of type []api.Message"};
        }
        out.load_only = messages == nullptr || messages->Empty();
        ChatPromptBuilder builder;
        if (messages != nullptr) {
            for (const Value& m : messages->GetArray()) {
                builder.add_message(string_field(m, "role"));
                builder.add_content(string_field(m, "content"));
            }
        }
        out.key = builder.finish();
    } else {
        const std::string_view prompt = string_field(doc, "prompt");
        const std::string_view system = string_field(doc, "system");
        const std::string_view tmpl = string_field(doc, "template");
        if (out.raw && (!tmpl.empty() || !system.empty() || member(doc, "context") != nullptr)) {
            return {400, "raw mode does not support template, system, or context"};
        }
        out.load_only = prompt.empty();
        out.prompt = out.raw ? std::string(prompt)
                             : apply_template(tmpl.empty() ? kOllamaTemplate : tmpl, system, prompt);
        out.key = prompt_from_text(out.prompt);
    }
    const int room = options.max_model_len - out.key.tokens;
    if (room <= 0 && !out.load_only) {
        return {400, "input length exceeds maximum context length"};
    }
    // -1 (unlimited) and -2 (fill the context) stop where the context ends.
    out.budget = num_predict > 0 ? static_cast<int>(std::min<std::int64_t>(num_predict, room)) : room;
    return {0, {}};
}

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
void write_done(JsonWriter& w, const OllamaRequest& r, const Output& o, const Timings& t,
                bool with_logprobs) {
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
        {"eval_count", o.completion_tokens()}, {"eval_duration", t.eval},
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
    OllamaEncoder(const OllamaRequest& r, const Request& req, Clock::time_point started)
        : r_(r), req_(req), started_(started) {}
    void on_start(std::vector<ChoiceState>&, EventList&) override { first_ = Clock::now(); }
    void on_step(ChoiceState& c, int tokens, bool last, EventList& out) override {
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
        write_done(w, r_, choices.front().out, t, false);  // the lines carried them
        w.EndObject();
        line += '\n';
    }

private:
    const OllamaRequest& r_;
    const Request& req_;
    Clock::time_point started_, first_;
    int logprobs_sent_ = 0;
};

std::string go_json_error(std::string_view body, const rapidjson::Document& doc) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return "missing request body";
    }
    const std::size_t at = doc.GetErrorOffset();
    if (at >= body.size()) {
        return "unexpected EOF";
    }
    return "invalid character '" + std::string(1, body[at]) + "' looking for beginning of value";
}

}  // namespace

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
    const Clock::time_point started = Clock::now();
    r.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices({r.key}, 1, r.budget, r.stop);
    if (r.stream) {
        OllamaEncoder encoder(r, req, started);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        const Clock::time_point now = Clock::now();
        Timings t;
        t.load = nanos_between(req.received, started);
        t.total = nanos_between(req.received, now);
        t.prompt_eval = std::min<std::int64_t>(std::int64_t{req.knobs.ttft_ms} * 1000000,
                                               t.total - t.load);
        t.eval = std::max<std::int64_t>(t.total - t.load - t.prompt_eval, 0);
        const Output& o = choices.front().out;
        JsonWriter w(body);
        w.StartObject();
        write_head(w, r);
        write_text(w, r, o.final_text());
        write_done(w, r, o, t, true);
        w.EndObject();
    };
    co_await send_generated(conn, req.knobs, choices, render, kErrors, kFraming);
}

}  // namespace infergate::emulator
