#include "translators/anthropic/codec.hpp"

#include "translators/anthropic/codec_impl.hpp"

namespace infergate::translators::anthropic {

using canonical::FinishKind;
using canonical::FinishReason;

const Codec& codec() {
    static const AnthropicCodec instance;
    return instance;
}

std::string_view AnthropicCodec::upstream_path(const GenerationRequest& /*req*/) const {
    return "/v1/messages";
}

void AnthropicCodec::encode_error(const Error& error, std::string& out) const {
    // {"type":"error","error":{"type","message"}} (api-dialects §8.5); Anthropic has no param
    // field, so the message (which names the field) carries it.
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "type");
    wire::string(w, "error");
    wire::key(w, "error");
    w.StartObject();
    wire::key(w, "type");
    wire::string(w, wire::error_type(error));
    wire::key(w, "message");
    wire::string(w, error.message);
    w.EndObject();
    w.EndObject();
}

namespace wire {

namespace {

constexpr std::string_view kErrorTypes[] = {
    "invalid_request_error", "authentication_error", "billing_error",    "permission_error",
    "not_found_error",       "request_too_large",    "rate_limit_error", "api_error",
    "timeout_error",         "overloaded_error"};

bool is_anthropic_type(std::string_view type) {
    for (std::string_view t : kErrorTypes) {
        if (t == type) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::string message_id(std::string_view id) {
    if (id.rfind("msg_", 0) == 0) {
        return std::string(id);
    }
    return "msg_" + std::string(id);
}

std::string tool_use_id(std::string_view answer_id, size_t place) {
    return "toolu_" + std::string(answer_id) + "_" + std::to_string(place);
}

void write_tool_use(json::Writer& w, const canonical::ToolCall& call, std::string_view answer_id,
                    size_t place) {
    w.StartObject();
    key(w, "type");
    string(w, "tool_use");
    key(w, "id");
    string(w, call.id.empty() ? tool_use_id(answer_id, place) : call.id);
    key(w, "name");
    string(w, call.name);
    key(w, "input");
    json::write_raw(w, call.arguments.empty() ? std::string_view("{}") : call.arguments);
    w.EndObject();
}

canonical::Error lost_tool_call(canonical::Dialect client) {
    canonical::Error e = upstream_error({});
    e.message =
        "the Anthropic backend answered with a tool call (a tool_use block), which "
        "infergate cannot translate to a " +
        std::string(canonical::to_string(client)) +
        " client yet: the answer would lose it. Send tool requests through the "
        "Anthropic Messages API (POST /v1/messages), which carries them as they are";
    return e;
}

std::string_view stop_reason(const FinishReason* finish) {
    if (finish == nullptr) {
        return {};
    }
    switch (finish->kind) {
        case FinishKind::stop:
            return finish->matched_text ? "stop_sequence" : "end_turn";
        case FinishKind::length:
            return "max_tokens";
        case FinishKind::tool_calls:
            return "tool_use";
        case FinishKind::content_filter:
            return "refusal";
        case FinishKind::none:
        case FinishKind::abort:
            return {};
    }
    return {};
}

std::optional<FinishReason> read_stop_reason(const json::Value& obj, bool& bad) {
    const json::Value* v = json::find(obj, "stop_reason");
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsString()) {
        bad = true;
        return std::nullopt;
    }
    const std::string_view name = json::view(*v);
    FinishReason f;
    if (name == "max_tokens" || name == "model_context_window_exceeded") {
        f.kind = FinishKind::length;
    } else if (name == "tool_use") {
        f.kind = FinishKind::tool_calls;
    } else if (name == "refusal") {
        f.kind = FinishKind::content_filter;
    } else {
        // end_turn, stop_sequence, pause_turn, and reasons newer than this code: the model
        // stopped on its own.
        f.kind = FinishKind::stop;
    }
    if (name == "stop_sequence") {
        if (const json::Value* s = json::find(obj, "stop_sequence");
            s != nullptr && s->IsString()) {
            f.matched_text = std::string(json::view(*s));
        }
    }
    return f;
}

void write_usage(json::Writer& w, const canonical::Usage& usage) {
    const int64_t prompt = usage.prompt_tokens.value_or(0);
    const int64_t cached = usage.cached_tokens.value_or(0);
    w.StartObject();
    key(w, "input_tokens");
    w.Int64(prompt >= cached ? prompt - cached : prompt);
    if (usage.cached_tokens && prompt >= cached) {
        key(w, "cache_read_input_tokens");
        w.Int64(cached);
    }
    key(w, "output_tokens");
    w.Int64(usage.completion_tokens.value_or(0));
    w.EndObject();
}

std::optional<std::string> read_usage(const json::Value& usage, canonical::Usage& out) {
    if (!usage.IsObject()) {
        return "'usage' is " + std::string(json::type_name(usage)) + ", not an object";
    }
    std::optional<int64_t> input;
    for (const std::string_view k :
         {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}) {
        const json::Value* v = json::find(usage, k);
        if (v == nullptr || v->IsNull()) {
            continue;
        }
        if (!v->IsInt64() || v->GetInt64() < 0) {
            return "usage." + std::string(k) + " is " + json::to_string(*v) + ", not a token count";
        }
        input = input.value_or(0) + v->GetInt64();
        if (k == "cache_read_input_tokens") {
            out.cached_tokens = v->GetInt64();
        }
    }
    if (input) {
        out.prompt_tokens = input;
    }
    if (const json::Value* v = json::find(usage, "output_tokens"); v != nullptr && !v->IsNull()) {
        if (!v->IsInt64() || v->GetInt64() < 0) {
            return "usage.output_tokens is " + json::to_string(*v) + ", not a token count";
        }
        out.completion_tokens = v->GetInt64();
    }
    return std::nullopt;
}

std::string_view error_type(const canonical::Error& error) {
    if (error.status == 529 || error.status == 503 ||
        error.type.find("overloaded") != std::string::npos) {
        return "overloaded_error";
    }
    if (error.status == 504) {
        return "timeout_error";
    }
    if (error.status >= 500) {
        return "api_error";
    }
    if (is_anthropic_type(error.type)) {
        return error.type;
    }
    switch (error.status) {
        case 401:
            return "authentication_error";
        case 402:
            return "billing_error";
        case 403:
            return "permission_error";
        case 404:
            return "not_found_error";
        case 413:
            return "request_too_large";
        case 429:
            return "rate_limit_error";
        default:
            break;
    }
    return error.status >= 400 && error.status < 500 ? "invalid_request_error" : "api_error";
}

int status_for_type(std::string_view type) {
    if (type == "invalid_request_error") {
        return 400;
    }
    if (type == "authentication_error") {
        return 401;
    }
    if (type == "billing_error") {
        return 402;
    }
    if (type == "permission_error") {
        return 403;
    }
    if (type == "not_found_error") {
        return 404;
    }
    if (type == "request_too_large") {
        return 413;
    }
    if (type == "rate_limit_error") {
        return 429;
    }
    if (type == "timeout_error") {
        return 504;
    }
    if (type == "overloaded_error") {
        return 529;
    }
    return 502;  // api_error and unknown types: the backend failed
}

canonical::Error upstream_error(std::string message) {
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

}  // namespace wire
}  // namespace infergate::translators::anthropic
