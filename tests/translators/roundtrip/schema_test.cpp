// Every client-side encoder's output against its dialect's schema (issue 16 item 5): required
// members present, types and enum values as the API reference and the strict clients have them
// (OpenAI's API reference, whose usage object requires prompt_tokens, completion_tokens and
// total_tokens, as the Vercel AI SDK's zod schemas do; Anthropic's Messages API types; Ollama's
// api.GenerateResponse / api.ChatResponse; TGI's router types; SGLang's /generate; llama.cpp's
// server). Each encoder runs over canonical answers that know everything, nothing, and a part
// (what vLLM's demo server tells: no prompt count, no finish reason in a whole answer).

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"
#include "translators/framing/framing.hpp"
#include "translators/ollama/codec.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::Usage;
using infergate::translators::codec_for;
namespace json = infergate::json;
namespace framing = infergate::framing;

// ---- a small schema checker ------------------------------------------------------------------

enum Kind : unsigned {
    kString = 1,
    kInt = 2,
    kNumber = 4,
    kBool = 8,
    kNull = 16,
    kObject = 32,
    kArray = 64,
};

class Check {
public:
    explicit Check(std::string where) : where_(std::move(where)) {}

    // Member `key` of `obj` must be present (or, `optional`, may be absent) with a type in
    // `kinds` and, for a string, one of `values` when given.
    const json::Value* member(const json::Value& obj, std::string_view path, std::string_view key,
                              unsigned kinds, bool optional = false,
                              const std::vector<std::string_view>& values = {}) {
        const std::string at = std::string(path) + "." + std::string(key);
        const json::Value* v = json::find(obj, key);
        if (v == nullptr) {
            if (!optional) {
                problems_ += at + " is missing; ";
            }
            return nullptr;
        }
        if (!has_kind(*v, kinds)) {
            problems_ += at + " is " + json::to_string(*v) + " (wrong type); ";
            return nullptr;
        }
        if (v->IsString() && values.size() > 0) {
            bool found = false;
            for (std::string_view ok : values) {
                found = found || json::view(*v) == ok;
            }
            if (!found) {
                problems_ += at + " is " + json::to_string(*v) + " (not an allowed value); ";
            }
        }
        return v;
    }
    void fail(const std::string& what) { problems_ += what + "; "; }
    const std::string& problems() const { return problems_; }
    const std::string& where() const { return where_; }

private:
    static bool has_kind(const json::Value& v, unsigned kinds) {
        return ((kinds & kString) && v.IsString()) || ((kinds & kInt) && v.IsInt64()) ||
               ((kinds & kNumber) && v.IsNumber()) || ((kinds & kBool) && v.IsBool()) ||
               ((kinds & kNull) && v.IsNull()) || ((kinds & kObject) && v.IsObject()) ||
               ((kinds & kArray) && v.IsArray());
    }
    std::string where_;
    std::string problems_;
};

// ---- the schemas -----------------------------------------------------------------------------

void openai_usage(Check& c, const json::Value& doc, bool nullable) {
    const json::Value* u =
        c.member(doc, "", "usage", kObject | (nullable ? kNull : 0), /*optional=*/true);
    if (u == nullptr || u->IsNull()) {
        return;
    }
    for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"}) {
        c.member(*u, "usage", k, kInt);
    }
    if (const json::Value* d = c.member(*u, "usage", "prompt_tokens_details", kObject, true)) {
        c.member(*d, "usage.prompt_tokens_details", "cached_tokens", kInt);
    }
}

void openai(Check& c, const json::Value& doc, bool chat, bool chunk) {
    c.member(doc, "", "id", kString);
    c.member(doc, "", "object", kString, false,
             {chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"});
    c.member(doc, "", "created", kInt);
    c.member(doc, "", "model", kString);
    const std::vector<std::string_view> finishes =
        chat ? std::vector<std::string_view>{"stop", "length", "tool_calls", "content_filter",
                                             "function_call"}
             : std::vector<std::string_view>{"stop", "length", "content_filter"};
    if (const json::Value* choices = c.member(doc, "", "choices", kArray)) {
        for (const json::Value& ch : choices->GetArray()) {
            c.member(ch, "choices[]", "index", kInt);
            c.member(ch, "choices[]", "logprobs", kNull | kObject, chunk);
            // Required and non-null in a whole answer; null until the finish in a chunk.
            c.member(ch, "choices[]", "finish_reason", kString | (chunk ? kNull : 0), false,
                     finishes);
            if (chat) {
                const json::Value* m =
                    c.member(ch, "choices[]", chunk ? "delta" : "message", kObject);
                if (m != nullptr && !chunk) {
                    c.member(*m, "message", "role", kString, false, {"assistant"});
                    c.member(*m, "message", "content", kString | kNull);
                }
            } else {
                c.member(ch, "choices[]", "text", kString);
            }
        }
    }
    openai_usage(c, doc, chunk);
}

void anthropic_usage(Check& c, const json::Value& u, std::string_view path, bool delta) {
    c.member(u, path, "input_tokens", kInt, delta);
    c.member(u, path, "output_tokens", kInt);
    c.member(u, path, "cache_read_input_tokens", kInt | kNull, true);
    c.member(u, path, "cache_creation_input_tokens", kInt | kNull, true);
}

#define STOP_REASONS \
    { "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal" }

void anthropic_message(Check& c, const json::Value& m, std::string_view path) {
    c.member(m, path, "id", kString);
    c.member(m, path, "type", kString, false, {"message"});
    c.member(m, path, "role", kString, false, {"assistant"});
    c.member(m, path, "model", kString);
    if (const json::Value* content = c.member(m, path, "content", kArray)) {
        for (const json::Value& b : content->GetArray()) {
            c.member(b, "content[]", "type", kString);
        }
    }
    const json::Value* reason =
        c.member(m, path, "stop_reason", kString | kNull, false, STOP_REASONS);
    const json::Value* seq = c.member(m, path, "stop_sequence", kString | kNull);
    if (reason != nullptr && seq != nullptr &&
        (reason->IsString() && json::view(*reason) == "stop_sequence") != seq->IsString()) {
        c.fail(std::string(path) +
               ".stop_sequence must be a string exactly when stop_reason is "
               "stop_sequence");
    }
    if (const json::Value* u = c.member(m, path, "usage", kObject)) {
        anthropic_usage(c, *u, "usage", false);
    }
}

void anthropic_event(Check& c, std::string_view name, const json::Value& doc) {
    c.member(doc, "", "type", kString, false, {name});
    if (name == "message_start") {
        if (const json::Value* m = c.member(doc, "", "message", kObject)) {
            anthropic_message(c, *m, "message");
        }
    } else if (name == "content_block_start") {
        c.member(doc, "", "index", kInt);
        if (const json::Value* b = c.member(doc, "", "content_block", kObject)) {
            c.member(*b, "content_block", "type", kString);
        }
    } else if (name == "content_block_delta") {
        c.member(doc, "", "index", kInt);
        if (const json::Value* d = c.member(doc, "", "delta", kObject)) {
            c.member(*d, "delta", "type", kString);
        }
    } else if (name == "content_block_stop") {
        c.member(doc, "", "index", kInt);
    } else if (name == "message_delta") {
        if (const json::Value* d = c.member(doc, "", "delta", kObject)) {
            c.member(*d, "delta", "stop_reason", kString | kNull, false, STOP_REASONS);
            c.member(*d, "delta", "stop_sequence", kString | kNull);
        }
        if (const json::Value* u = c.member(doc, "", "usage", kObject)) {
            anthropic_usage(c, *u, "usage", true);
        }
    } else if (name != "message_stop" && name != "ping") {
        c.fail("unknown event " + std::string(name));
    }
}

void ollama(Check& c, const json::Value& doc, bool chat) {
    c.member(doc, "", "model", kString);
    c.member(doc, "", "created_at", kString);
    if (chat) {
        if (const json::Value* m = c.member(doc, "", "message", kObject)) {
            c.member(*m, "message", "role", kString, false, {"assistant"});
            c.member(*m, "message", "content", kString);
        }
    } else {
        c.member(doc, "", "response", kString);
    }
    const json::Value* done = c.member(doc, "", "done", kBool);
    // Go's omitempty: absent, never null.
    c.member(doc, "", "done_reason", kString, true, {"stop", "length"});
    for (const char* k : {"total_duration", "load_duration", "prompt_eval_count",
                          "prompt_eval_duration", "eval_count", "eval_duration"}) {
        c.member(doc, "", k, kInt, true);
    }
    (void)done;
}

void tgi_details(Check& c, const json::Value& d) {
    c.member(d, "details", "finish_reason", kString, false,
             {"length", "eos_token", "stop_sequence"});
    c.member(d, "details", "generated_tokens", kInt);
    c.member(d, "details", "seed", kInt | kNull, true);
}

void tgi(Check& c, const json::Value& doc, bool event) {
    if (!event) {
        c.member(doc, "", "generated_text", kString);
        if (const json::Value* d = c.member(doc, "", "details", kObject | kNull, true);
            d != nullptr && d->IsObject()) {
            tgi_details(c, *d);
        }
        return;
    }
    c.member(doc, "", "index", kInt);
    if (const json::Value* t = c.member(doc, "", "token", kObject)) {
        c.member(*t, "token", "id", kInt);
        c.member(*t, "token", "text", kString);
        c.member(*t, "token", "logprob", kNumber | kNull);
        c.member(*t, "token", "special", kBool);
    }
    c.member(doc, "", "generated_text", kString | kNull);
    if (const json::Value* d = c.member(doc, "", "details", kObject | kNull);
        d != nullptr && d->IsObject()) {
        tgi_details(c, *d);
    }
}

void sglang(Check& c, const json::Value& doc) {
    c.member(doc, "", "text", kString);
    if (const json::Value* m = c.member(doc, "", "meta_info", kObject)) {
        c.member(*m, "meta_info", "id", kString);
        if (const json::Value* f = c.member(*m, "meta_info", "finish_reason", kObject | kNull);
            f != nullptr && f->IsObject()) {
            c.member(*f, "finish_reason", "type", kString, false, {"stop", "length", "abort"});
        }
        // Counts the backend did not report are null (documented), never a guess.
        for (const char* k : {"prompt_tokens", "completion_tokens", "cached_tokens"}) {
            c.member(*m, "meta_info", k, kInt | kNull);
        }
    }
}

void llamacpp(Check& c, const json::Value& doc, bool partial) {
    c.member(doc, "", "index", kInt);
    c.member(doc, "", "content", kString);
    c.member(doc, "", "tokens", kArray, partial);
    c.member(doc, "", "stop", kBool);
    c.member(doc, "", "tokens_predicted", kInt, true);
    c.member(doc, "", "tokens_evaluated", kInt, true);
    if (partial) {
        return;
    }
    c.member(doc, "", "model", kString);
    c.member(doc, "", "stop_type", kString, false, {"none", "eos", "limit", "word"});
    c.member(doc, "", "stopping_word", kString);
    if (const json::Value* t = c.member(doc, "", "timings", kObject)) {
        for (const char* k : {"prompt_n", "predicted_n"}) {
            c.member(*t, "timings", k, kInt);
        }
        for (const char* k : {"prompt_ms", "prompt_per_token_ms", "prompt_per_second",
                              "predicted_ms", "predicted_per_token_ms", "predicted_per_second"}) {
            c.member(*t, "timings", k, kNumber);
        }
    }
}

void vllm_legacy(Check& c, const json::Value& doc) {
    if (const json::Value* t = c.member(doc, "", "text", kArray)) {
        for (const json::Value& s : t->GetArray()) {
            if (!s.IsString()) {
                c.fail("text[] is not a string");
            }
        }
    }
}

// One whole answer or one stream event of dialect `d`.
void check_doc(Dialect d, const json::Value& doc, bool event, std::string_view event_name,
               Check& c) {
    switch (d) {
        case Dialect::openai_completions:
            openai(c, doc, false, event);
            break;
        case Dialect::openai_chat:
            openai(c, doc, true, event);
            break;
        case Dialect::anthropic:
            if (event) {
                anthropic_event(c, event_name, doc);
            } else {
                anthropic_message(c, doc, "");
            }
            break;
        case Dialect::ollama_generate:
            ollama(c, doc, false);
            break;
        case Dialect::ollama_chat:
            ollama(c, doc, true);
            break;
        case Dialect::tgi:
            tgi(c, doc, event);
            break;
        case Dialect::sglang:
            sglang(c, doc);
            break;
        case Dialect::llamacpp:
            llamacpp(c, doc,
                     event && json::find(doc, "stop") != nullptr && doc["stop"].IsBool() &&
                         !doc["stop"].GetBool());
            break;
        case Dialect::vllm_legacy:
            vllm_legacy(c, doc);
            break;
    }
}

// ---- the answers -----------------------------------------------------------------------------

constexpr Dialect kDialects[] = {
    Dialect::sglang,   Dialect::openai_completions, Dialect::openai_chat,
    Dialect::tgi,      Dialect::ollama_generate,    Dialect::ollama_chat,
    Dialect::llamacpp, Dialect::vllm_legacy,        Dialect::anthropic,
};

bool is_chat(Dialect d) {
    return d == Dialect::openai_chat || d == Dialect::ollama_chat || d == Dialect::anthropic;
}

GenerationRequest request_for(Dialect d) {
    GenerationRequest req;
    req.dialect = d;
    req.model = "m";
    req.kind = is_chat(d) ? RequestKind::chat : RequestKind::completion;
    req.prompts.push_back(Prompt{"p", {}, false});
    return req;
}

struct Case {
    const char* name;
    FinishReason finish;
    Usage usage;
};

std::vector<Case> cases() {
    FinishReason stop_seq;
    stop_seq.kind = FinishKind::stop;
    stop_seq.matched_text = "END";
    FinishReason length;
    length.kind = FinishKind::length;
    length.length = 4;
    FinishReason tool;
    tool.kind = FinishKind::tool_calls;
    Usage all;
    all.prompt_tokens = 7;
    all.completion_tokens = 4;
    all.cached_tokens = 3;
    Usage completion_only;  // vLLM's demo server, counted from its records
    completion_only.completion_tokens = 4;
    return {
        {"everything known", stop_seq, all},
        {"nothing known (vLLM demo whole answer)", FinishReason{}, Usage{}},
        {"only the completion count (vLLM demo stream)", length, completion_only},
        {"tool calls", tool, all},
    };
}

void check_bytes(Dialect d, std::string_view out, bool stream, Check& c) {
    if (!stream) {
        json::Document doc;
        if (auto e = json::parse(out, doc, "answer")) {
            c.fail("not JSON: " + e->message);
            return;
        }
        check_doc(d, doc, false, {}, c);
        return;
    }
    const bool ndjson =
        d == Dialect::ollama_generate || d == Dialect::ollama_chat || d == Dialect::vllm_legacy;
    std::vector<std::pair<std::string, std::string>> events;  // name, payload
    if (ndjson) {
        framing::RecordScanner scanner;
        std::vector<std::string> records;
        scanner.feed(out, records);
        scanner.finish(records);
        for (auto& r : records) {
            events.emplace_back("", std::move(r));
        }
    } else {
        framing::SseScanner scanner;
        std::vector<framing::SseEvent> sse;
        scanner.feed(out, sse);
        scanner.finish(sse);
        for (auto& e : sse) {
            if (!e.comment && !framing::is_done_sentinel(e.data)) {
                events.emplace_back(e.event, std::move(e.data));
            }
        }
    }
    if (events.empty()) {
        c.fail("no events");
    }
    for (const auto& [name, payload] : events) {
        json::Document doc;
        if (auto e = json::parse(payload, doc, "event")) {
            c.fail("an event is not JSON: " + e->message);
            continue;
        }
        check_doc(d, doc, true, name, c);
    }
}

}  // namespace

TEST_CASE("schema: every whole answer is valid in its client's dialect") {
    for (Dialect d : kDialects) {
        for (const Case& k : cases()) {
            Check c(std::string(to_string(d)) + ", " + k.name);
            GenerationResult r;
            r.id = "x";
            r.model = "m";
            r.created = 1;
            Choice& ch = r.choices.emplace_back();
            ch.text = "Hello";
            ch.finish = k.finish;
            ch.usage = k.usage;
            r.usage = k.usage;
            std::string out;
            codec_for(d).encode_response(r, request_for(d), out);
            check_bytes(d, out, false, c);
            INFO(c.where() << "\n  " << out);
            CHECK_MESSAGE(c.problems().empty(), c.problems());
        }
    }
}

TEST_CASE("schema: every stream event is valid in its client's dialect") {
    for (Dialect d : kDialects) {
        for (const Case& k : cases()) {
            for (const bool include_usage : {false, true}) {
                Check c(std::string(to_string(d)) + ", " + k.name +
                        (include_usage ? ", usage asked" : ""));
                StreamState s;
                s.id = "x";
                s.model = "m";
                s.created = 1;
                s.include_usage = include_usage;
                s.continuous_usage = include_usage;
                s.max_tokens = 4;
                const infergate::translators::Codec& codec = codec_for(d);
                std::string out;
                StreamEvent a;
                a.text = "Hel";
                a.usage.prompt_tokens = k.usage.prompt_tokens;
                codec.encode_stream_event(a, s, out);
                StreamEvent b;
                b.text = "lo";
                b.finish = k.finish;
                b.usage = k.usage;
                codec.encode_stream_event(b, s, out);
                if (k.usage.prompt_tokens) {
                    StreamEvent u;
                    u.type = StreamEvent::Type::usage;
                    u.usage = k.usage;
                    codec.encode_stream_event(u, s, out);
                }
                StreamEvent done;
                done.type = StreamEvent::Type::done;
                codec.encode_stream_event(done, s, out);
                codec.encode_stream_end(s, out);
                check_bytes(d, out, true, c);
                INFO(c.where() << "\n" << out);
                CHECK_MESSAGE(c.problems().empty(), c.problems());
            }
        }
    }
}
