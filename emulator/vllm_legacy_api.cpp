// vLLM's legacy demo server (vllm/entrypoints/api_server.py): only GET /health and
// POST /generate. The body is `prompt` + `stream` + SamplingParams(**rest); every failure is an
// uncaught exception, i.e. a bare 500. Answers echo the prompt: {"text": [prompt + output, ...]}.
// Streams are raw JSON records (json.dumps, Python spacing) each followed by "\n" (or "\0" in
// builds before Nov 2024), in a StreamingResponse without a media type, ended by closing.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;
using rapidjson::Value;

constexpr std::string_view kInternalError = "Internal Server Error";
constexpr std::string_view kGarbage[] = {
    "{\"text\": [\"a\", <<garbage\xff\xfe\n",
    "\x01\x02 not json at all }}]]\n",
};
constexpr Framing kFraming{"", kJson, "", kGarbage};

class LegacyErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        if (status == 500) {
            body = kInternalError;  // Starlette's ServerErrorMiddleware
            return kPlainText;
        }
        JsonWriter w(body);  // HTTPException: {"detail": ...}
        w.StartObject();
        w.kv("detail", message);
        w.EndObject();
        return kJson;
    }
    // No in-band error shape: the generator raises and uvicorn drops the connection.
    void render_event(std::string_view, std::string& event) const override { event.clear(); }
};
const LegacyErrors kErrors;

struct LegacyRequest {
    std::string_view prompt;
    bool stream = false;
    int n = 1;
    int max_tokens = 16;
    StopRules stop;
    bool engine_error = false;  // valid SamplingParams the engine refuses (logprobs > 20)
};

bool is_known_key(std::string_view key, bool old_build) {
    static constexpr std::string_view kKeys[] = {
        "n", "best_of", "presence_penalty", "frequency_penalty", "repetition_penalty",
        "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "bad_words",
        "ignore_eos", "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "detokenize",
        "skip_special_tokens", "spaces_between_special_tokens", "logits_processors",
        "include_stop_str_in_output", "truncate_prompt_tokens", "output_kind",
        "guided_decoding", "structured_outputs", "logit_bias", "allowed_token_ids", "extra_args"};
    // Removed from SamplingParams in autumn 2024; the "\0" builds still take them.
    static constexpr std::string_view kOldKeys[] = {"use_beam_search", "length_penalty",
                                                    "early_stopping"};
    return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys) ||
           (old_build && std::find(std::begin(kOldKeys), std::end(kOldKeys), key) !=
                             std::end(kOldKeys));
}

// False for anything that raises before the response starts (KeyError, TypeError, ValueError).
bool parse_legacy(const Value& doc, bool old_build, LegacyRequest& out) {
    const Value* prompt = member(doc, "prompt");
    if (!doc.IsObject() || prompt == nullptr || !prompt->IsString()) {
        return false;
    }
    out.prompt = {prompt->GetString(), prompt->GetStringLength()};
    if (const Value* stream = member(doc, "stream")) {  // any truthy value streams
        out.stream = stream->IsBool() ? stream->GetBool()
                     : stream->IsNumber() ? stream->GetDouble() != 0
                     : stream->IsString() ? stream->GetStringLength() > 0
                     : stream->IsArray()  ? !stream->Empty()
                                          : !stream->ObjectEmpty();
    }
    std::int64_t value = 0;
    double number = 0;
    for (const auto& m : doc.GetObject()) {
        const std::string_view key(m.name.GetString(), m.name.GetStringLength());
        if (key != "prompt" && key != "stream" && !is_known_key(key, old_build)) {
            return false;  // SamplingParams.__init__() got an unexpected keyword argument
        }
    }
    auto int_field = [&](std::string_view name, std::int64_t min_value, int& target) {
        const Lookup got = get_int(doc, name, value);
        if (got == Lookup::kWrongType || (got == Lookup::kOk && value < min_value)) {
            return false;
        }
        if (got == Lookup::kOk) {
            target = static_cast<int>(std::min<std::int64_t>(value, 1 << 30));
        }
        return true;
    };
    if (!int_field("n", 1, out.n) || !int_field("max_tokens", 1, out.max_tokens) ||
        out.n > 1024) {
        return false;
    }
    if (get_number(doc, "temperature", number) == Lookup::kWrongType ||
        (member(doc, "temperature") && number < 0)) {
        return false;
    }
    if (get_number(doc, "top_p", number) == Lookup::kWrongType ||
        (member(doc, "top_p") && !(number > 0 && number <= 1))) {
        return false;
    }
    if (const Lookup got = get_int(doc, "seed", value); got == Lookup::kWrongType) {
        return false;
    } else if (got == Lookup::kOk) {
        out.stop.seed = value;
    }
    // SamplingParams checks logprobs >= 0; the engine allows at most 20 (--max-logprobs),
    // which it checks on the first iteration.
    for (const char* name : {"logprobs", "prompt_logprobs"}) {
        const Lookup got = get_int(doc, name, value);
        if (got == Lookup::kWrongType || (got == Lookup::kOk && value < 0)) {
            return false;
        }
        out.engine_error = out.engine_error || (got == Lookup::kOk && value > 20);
    }
    if (get_bool(doc, "ignore_eos", out.stop.ignore_eos) == Lookup::kWrongType ||
        get_bool(doc, "include_stop_str_in_output", out.stop.keep_stop_string) ==
            Lookup::kWrongType) {
        return false;
    }
    if (const Value* stop = member(doc, "stop")) {
        if (stop->IsString()) {
            out.stop.strings.emplace_back(stop->GetString(), stop->GetStringLength());
        } else if (stop->IsArray()) {
            for (const Value& s : stop->GetArray()) {
                if (!s.IsString()) {
                    return false;
                }
                out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        } else {
            return false;
        }
    }
    if (const Value* ids = member(doc, "stop_token_ids")) {
        if (!ids->IsArray()) {
            return false;
        }
        for (const Value& id : ids->GetArray()) {
            if (!id.IsInt64()) {
                return false;
            }
            out.stop.token_ids.push_back(id.GetInt64());
        }
    }
    return static_cast<std::int64_t>(out.n) * out.max_tokens <= kMaxTotalTokens;
}

// One record per engine step with every choice's text so far, prompt included.
class LegacyEncoder final : public EventEncoder {
public:
    LegacyEncoder(std::string_view prompt, const StopRules& stop, bool nul)
        : prompt_(prompt), holdback_(stop_holdback(stop)), nul_(nul) {}

    void on_step(ChoiceState& c, int tokens, bool last, EventList&) override {
        take_delta(c, visible_holdback(c.out, tokens, last, holdback_));
    }
    void on_step_end(std::vector<ChoiceState>& choices, EventList& out) override {
        std::string& record = out.next();
        record = "{\"text\": [";
        for (std::size_t i = 0; i < choices.size(); ++i) {
            if (i > 0) {
                record += ", ";
            }
            scratch_.assign(prompt_);
            scratch_.append(choices[i].out.raw_text, 0, choices[i].text_sent);
            py_json_string(scratch_, record);
        }
        record += "]}";
        record.push_back(nul_ ? '\0' : '\n');
    }
    void on_end(std::vector<ChoiceState>&, EventList&) override {}

private:
    std::string_view prompt_;
    std::size_t holdback_;
    bool nul_;
    std::string scratch_;
};

net::awaitable<void> handle_generate(Request& req, Conn& conn, const Options& options) {
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    LegacyRequest lr;
    const bool ok = doc_ok && parse_legacy(doc, req.knobs.nul_delimiter, lr);
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, lr.stream, kErrors, kFraming)) {
        co_return;
    }
    if (!ok) {
        co_await conn.send(500, kPlainText, kInternalError);
        co_return;
    }
    const PromptKey key = prompt_from_text(lr.prompt);
    if (key.tokens + lr.max_tokens > options.max_model_len || lr.engine_error) {
        // The engine raises on the first iteration, after a stream's headers went out.
        if (!lr.stream) {
            co_await conn.send(500, kPlainText, kInternalError);
        } else if (co_await conn.begin_stream(kFraming.stream_type)) {
            conn.close_clean();
        }
        co_return;
    }
    lr.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices({key}, lr.n, lr.max_tokens, lr.stop);
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, key, choices);
    if (!gen) {
        co_return;  // its answer has no usage: only the prefill time shows a cache hit
    }
    if (lr.stream) {
        LegacyEncoder encoder(lr.prompt, lr.stop, req.knobs.nul_delimiter);
        co_await run_stream(conn, req, choices, encoder, kErrors, kFraming);
        co_return;
    }
    auto render = [&](std::string& body) {
        JsonWriter w(body);  // JSONResponse: compact, UTF-8 as is
        w.StartObject();
        w.key("text");
        w.StartArray();
        std::string text;
        for (const ChoiceState& c : choices) {
            text.assign(lr.prompt);
            text.append(c.out.final_text());
            w.str(text);
        }
        w.EndArray();
        w.EndObject();
    };
    co_await send_generated(conn, req, choices, render, kErrors, kFraming);
}

}  // namespace

net::awaitable<void> route_vllm_legacy(Request& req, Conn& conn, const Options& options) {
    if (req.path == "/generate") {
        if (req.method == verb::post) {
            co_await handle_generate(req, conn, options);
        } else {
            co_await send_method_not_allowed(conn);
        }
    } else if (req.path == "/health") {
        if (req.method == verb::get) {
            co_await conn.send(200, "", "");
        } else {
            co_await send_method_not_allowed(conn);
        }
    } else {
        co_await send_not_found(conn);
    }
}

}  // namespace infergate::emulator
