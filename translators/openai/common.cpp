#include "translators/openai/common.hpp"

#include "translators/canonical/accumulate.hpp"

#include <algorithm>
#include <utility>

namespace infergate::translators::openai {

using canonical::FinishKind;

canonical::Dialect dialect_of(Api api) {
    return api == Api::chat ? canonical::Dialect::openai_chat
                            : canonical::Dialect::openai_completions;
}

std::string_view route_of(Api api) {
    return api == Api::chat ? "/v1/chat/completions" : "/v1/completions";
}

std::string_view chunk_object(Api api) {
    return api == Api::chat ? "chat.completion.chunk" : "text_completion";
}

std::string_view finish_reason_name(FinishKind kind) {
    switch (kind) {
        case FinishKind::none: return {};
        case FinishKind::stop: return "stop";
        case FinishKind::length: return "length";
        case FinishKind::tool_calls: return "tool_calls";
        case FinishKind::content_filter: return "content_filter";
        case FinishKind::abort: return "abort";
    }
    return {};
}

FinishKind parse_finish_kind(std::string_view value) {
    if (value.empty() || value == "none") {
        return FinishKind::none;  // TGI sends "" on intermediate chunks; llama.cpp says "none"
    }
    if (value == "length" || value == "limit" || value == "max_tokens" ||
        value == "model_context_window_exceeded") {
        return FinishKind::length;
    }
    if (value == "tool_calls" || value == "function_call" || value == "tool_use") {
        return FinishKind::tool_calls;
    }
    if (value == "content_filter" || value == "refusal") {
        return FinishKind::content_filter;
    }
    if (value == "abort") {
        return FinishKind::abort;
    }
    // "stop", TGI's "eos_token"/"stop_sequence", llama.cpp's "eos"/"word", and anything new:
    // the choice did end, and an ordinary stop is the least surprising thing to tell a client.
    return FinishKind::stop;
}

std::optional<canonical::FinishReason> read_finish(const json::Value& choice,
                                                   std::optional<int64_t> budget) {
    const json::Value* reason = json::find(choice, "finish_reason");
    if (reason == nullptr || !reason->IsString()) {
        return std::nullopt;
    }
    canonical::FinishReason finish;
    finish.kind = parse_finish_kind(json::view(*reason));
    if (finish.kind == FinishKind::none) {
        return std::nullopt;
    }
    const json::Value* matched = json::find(choice, "stop_reason");  // vLLM
    if (matched == nullptr || matched->IsNull()) {
        matched = json::find(choice, "matched_stop");  // SGLang
    }
    if (matched != nullptr) {
        if (matched->IsString()) {
            finish.matched_text = std::string(json::view(*matched));
        } else if (matched->IsInt64()) {
            finish.matched_token = matched->GetInt64();
        }
    }
    if (finish.kind == FinishKind::length) {
        finish.length = budget;
    }
    return finish;
}

namespace {

std::optional<int64_t> int_member(const json::Value& obj, std::string_view key) {
    const json::Value* v = json::find(obj, key);
    if (v == nullptr || !v->IsInt64()) {
        return std::nullopt;
    }
    return v->GetInt64();
}

}  // namespace

canonical::Usage read_usage(const json::Value& usage) {
    canonical::Usage u;
    if (!usage.IsObject()) {
        return u;
    }
    // One pass; the first of a repeated key counts (as json::find reads it).
    const json::Value* prompt = nullptr;
    const json::Value* completion = nullptr;
    const json::Value* prompt_details = nullptr;
    const json::Value* completion_details = nullptr;
    const json::Value* reasoning = nullptr;
    for (const auto& m : usage.GetObject()) {
        const std::string_view key = json::view(m.name);
        const json::Value** slot = key == "prompt_tokens"               ? &prompt
                                   : key == "completion_tokens"         ? &completion
                                   : key == "prompt_tokens_details"     ? &prompt_details
                                   : key == "completion_tokens_details" ? &completion_details
                                   : key == "reasoning_tokens"          ? &reasoning
                                                                        : nullptr;
        if (slot != nullptr && *slot == nullptr) {
            *slot = &m.value;
        }
    }
    auto count = [](const json::Value* v) -> std::optional<int64_t> {
        return v != nullptr && v->IsInt64() ? std::optional<int64_t>(v->GetInt64()) : std::nullopt;
    };
    u.prompt_tokens = count(prompt);
    u.completion_tokens = count(completion);
    if (prompt_details != nullptr) {
        u.cached_tokens = int_member(*prompt_details, "cached_tokens");
    }
    // OpenAI's place, then SGLang's (its UsageInfo writes 0 without a reasoning parser).
    if (completion_details != nullptr) {
        u.reasoning_tokens = int_member(*completion_details, "reasoning_tokens");
    }
    if (!u.reasoning_tokens) {
        u.reasoning_tokens = count(reasoning);
    }
    return u;
}

bool usage_known(const canonical::Usage& usage) {
    return usage.prompt_tokens || usage.completion_tokens || usage.cached_tokens;
}

bool usage_complete(const canonical::Usage& usage) {
    return usage.prompt_tokens && usage.completion_tokens;
}

std::string_view route_finish_reason(FinishKind kind, Api api) {
    if (api == Api::completions && kind == FinishKind::tool_calls) {
        return "stop";
    }
    return finish_reason_name(kind);
}

std::string_view whole_finish_reason(FinishKind kind, Api api) {
    return kind == FinishKind::none ? std::string_view("stop") : route_finish_reason(kind, api);
}

void write_usage(json::Writer& w, const canonical::Usage& usage) {
    w.StartObject();
    const int64_t prompt = usage.prompt_tokens.value_or(0);
    const int64_t completion = usage.completion_tokens.value_or(0);
    json::key(w, "prompt_tokens");
    w.Int64(prompt);
    json::key(w, "completion_tokens");
    w.Int64(completion);
    json::key(w, "total_tokens");
    w.Int64(prompt + completion);
    if (usage.cached_tokens) {
        json::key(w, "prompt_tokens_details");
        w.StartObject();
        json::key(w, "cached_tokens");
        w.Int64(*usage.cached_tokens);
        w.EndObject();
    }
    if (usage.reasoning_tokens.value_or(0) > 0) {  // 0: what any answer without reasoning means
        json::key(w, "completion_tokens_details");
        w.StartObject();
        json::key(w, "reasoning_tokens");
        w.Int64(*usage.reasoning_tokens);
        w.EndObject();
    }
    w.EndObject();
}

namespace {

// A chat answer's tool_calls for an Ollama or Anthropic client: each {id, type, function:
// {name, arguments}}, the arguments a string holding a JSON object (TGI writes the object
// itself; nothing at all stands for no arguments).
std::optional<canonical::Error> read_tool_calls(const json::Value& calls,
                                                std::vector<canonical::ToolCall>& out,
                                                canonical::Dialect client) {
    for (rapidjson::SizeType i = 0; i < calls.Size(); ++i) {
        canonical::ToolCall& call = out.emplace_back();
        if (!json::read_function_call(calls[i], call)) {
            return upstream_error("the backend's tool_calls[" + std::to_string(i) +
                                  "] has no function name");
        }
        json::Document parsed;
        if (json::parse(call.arguments, parsed) || !parsed.IsObject()) {
            return upstream_error("the backend's tool call '" + call.name +
                                  "' has arguments that are not a JSON object ('" + call.arguments +
                                  "'), which a " + std::string(canonical::to_string(client)) +
                                  " client cannot be given: it carries them as an object");
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<canonical::Error> read_tool_call_deltas(const json::Value& calls,
                                                      std::vector<canonical::ToolCallDelta>& out) {
    if (calls.IsNull()) {
        return std::nullopt;
    }
    const bool list = calls.IsArray();
    if (!list && !calls.IsObject()) {
        return upstream_error("the backend sent malformed stream data: delta.tool_calls is " +
                              std::string(json::type_name(calls)) + ", not a list");
    }
    const rapidjson::SizeType count = list ? calls.Size() : 1;
    for (rapidjson::SizeType i = 0; i < count; ++i) {
        const json::Value& c = list ? calls[i] : calls;
        const std::string at = "delta.tool_calls[" + std::to_string(i) + "]";
        if (!c.IsObject()) {
            return upstream_error("the backend sent malformed stream data: " + at + " is " +
                                  std::string(json::type_name(c)) + ", not an object");
        }
        canonical::ToolCallDelta& piece = out.emplace_back();
        const json::Value* index = json::find(c, "index");
        if (index != nullptr && !index->IsNull() && (!index->IsInt() || index->GetInt() < 0)) {
            return upstream_error("the backend sent malformed stream data: " + at +
                                  ".index is not a non-negative integer");
        }
        piece.index = index != nullptr && index->IsInt() ? index->GetInt() : static_cast<int>(i);
        if (const json::Value* id = json::find(c, "id"); id != nullptr && id->IsString()) {
            piece.id.assign(id->GetString(), id->GetStringLength());
        }
        const json::Value* function = json::find(c, "function");
        if (function == nullptr || !function->IsObject()) {
            continue;
        }
        if (const json::Value* name = json::find(*function, "name");
            name != nullptr && name->IsString()) {
            piece.name.assign(name->GetString(), name->GetStringLength());
        }
        const json::Value* arguments = json::find(*function, "arguments");
        if (arguments != nullptr && arguments->IsString()) {
            piece.arguments.assign(arguments->GetString(), arguments->GetStringLength());
        } else if (arguments != nullptr && arguments->IsObject()) {
            piece.arguments = json::to_string(*arguments);
        }
    }
    return std::nullopt;
}

void write_tool_calls(json::Writer& w, const std::vector<canonical::ToolCall>& calls,
                      std::string_view id_prefix) {
    json::key(w, "tool_calls");
    w.StartArray();
    for (size_t i = 0; i < calls.size(); ++i) {
        const canonical::ToolCall& c = calls[i];
        w.StartObject();
        if (!c.id.empty()) {
            json::key(w, "id");
            json::string(w, c.id);
        } else if (!id_prefix.empty()) {
            json::key(w, "id");
            json::string(w, std::string(id_prefix) + std::to_string(i));
        }
        json::key(w, "type");
        json::string(w, "function");
        json::key(w, "function");
        w.StartObject();
        json::key(w, "name");
        json::string(w, c.name);
        json::key(w, "arguments");
        json::string(w, c.arguments);
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
}

std::optional<canonical::Error> carry(const json::Value& message, std::string_view prefix,
                                      std::optional<canonical::Dialect> client,
                                      canonical::Carried& out,
                                      std::vector<canonical::ToolCall>* tool_calls,
                                      std::string* reasoning) {
    if (!client || !message.IsObject()) {
        return std::nullopt;
    }
    if (*client != canonical::Dialect::openai_chat) {
        if (reasoning != nullptr && canonical::takes_reasoning(*client)) {
            read_reasoning(message, *reasoning);
        }
        const json::Value* calls = json::find(message, "tool_calls");
        if (calls != nullptr && calls->IsArray() && !calls->Empty() && tool_calls != nullptr &&
            canonical::takes_tool_calls(*client)) {
            return read_tool_calls(*calls, *tool_calls, *client);
        }
        if (calls != nullptr && calls->IsArray() && !calls->Empty()) {
            return upstream_error(
                "the backend answered with tool calls (tool_calls), which infergate cannot "
                "translate to a " +
                std::string(canonical::to_string(*client)) +
                " client yet: the answer would lose them. Send tool requests through "
                "POST /v1/chat/completions, which carries them as they are");
        }
        return std::nullopt;
    }
    out.from = canonical::Dialect::openai_chat;
    const size_t before = out.members.size();
    json::collect_unknown(message, {"role", "content"}, out.members, prefix);
    // `"tool_calls": null` and the like say nothing: not worth a chunk of their own.
    out.members.erase(
        std::remove_if(out.members.begin() + static_cast<std::ptrdiff_t>(before), out.members.end(),
                       [](const canonical::Extra& e) { return e.json == "null"; }),
        out.members.end());
    return std::nullopt;
}

void read_reasoning(const json::Value& message, std::string& out) {
    const json::Value* r = json::find(message, "reasoning_content");
    if (r == nullptr || !r->IsString()) {
        r = json::find(message, "reasoning");
    }
    if (r != nullptr && r->IsString()) {
        out.append(json::view(*r));
    }
}

const canonical::Carried* own(const canonical::Carried& carried) {
    return carried.from == canonical::Dialect::openai_chat && !carried.empty() ? &carried : nullptr;
}

void write_error_object(json::Writer& w, const canonical::Error& error) {
    w.StartObject();
    json::key(w, "message");
    json::string(w, error.message);
    json::key(w, "type");
    json::string(w, error.type);
    json::key(w, "param");
    if (error.param.empty()) {
        w.Null();
    } else {
        json::string(w, error.param);
    }
    json::key(w, "code");
    if (error.code.empty()) {
        w.Null();
    } else {
        json::string(w, error.code);
    }
    w.EndObject();
}

canonical::Error upstream_error(std::string message, int status) {
    canonical::Error e;
    e.status = status;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

canonical::Error read_upstream_error(const json::Value& doc) {
    canonical::Error e = upstream_error({});
    const json::Value* err = json::find(doc, "error");
    const json::Value* body = (err != nullptr && err->IsObject()) ? err : &doc;
    if (err != nullptr && err->IsString()) {
        e.message = std::string(json::view(*err));
    } else if (const json::Value* m = json::find(*body, "message"); m != nullptr) {
        e.message = m->IsString() ? std::string(json::view(*m)) : json::to_string(*m);
    }
    if (const json::Value* t = json::find(*body, "type"); t != nullptr && t->IsString()) {
        e.type = std::string(json::view(*t));
    }
    // vLLM puts the HTTP status in `code`; TGI's OpenAI routes in `http_status_code`.
    for (std::string_view key : {"code", "http_status_code"}) {
        const json::Value* c = json::find(*body, key);
        if (c != nullptr && c->IsInt() && c->GetInt() >= 400 && c->GetInt() <= 599) {
            e.status = c->GetInt();
            break;
        }
    }
    if (e.message.empty()) {
        e.message = "the backend reported an error without a message";
    }
    return e;
}

const canonical::SamplingParams* shared_sampling(const canonical::GenerationRequest& req) {
    if (req.item_sampling.empty()) {
        return &req.sampling;
    }
    for (const canonical::SamplingParams& item : req.item_sampling) {
        if (!(item == req.item_sampling.front())) {
            return nullptr;
        }
    }
    return &req.item_sampling.front();
}

std::optional<int64_t> effective_max_tokens(const canonical::SamplingParams& sampling,
                                            canonical::Dialect client_dialect) {
    if (sampling.max_tokens) {
        return sampling.max_tokens;
    }
    return canonical::default_max_tokens(client_dialect);
}

}  // namespace infergate::translators::openai
