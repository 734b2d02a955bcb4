// Responses API answers, client side: the response object (api reference "The response object"):
//   {"id", "object": "response", "created_at", "status", "background", "error",
//    "incomplete_details", <the request's settings>, "model", "output": [items],
//    "previous_response_id", "store", "usage"}
// Output items, in the order the answer made them: reasoning ({"type": "reasoning", "summary",
// "content": [{"type": "reasoning_text"}]}, as vLLM and SGLang write a model's reasoning), the
// message ({"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}), then
// one function_call item per tool call.

#include "translators/openai/common.hpp"
#include "translators/responses/codec.hpp"
#include "translators/responses/codec_impl.hpp"

namespace infergate::translators::responses {

using canonical::FinishKind;

const Codec& codec() {
    static const ResponsesCodec instance;
    return instance;
}

namespace wire {

namespace {

std::string_view own_part(std::string_view response_id) {
    return response_id.starts_with("resp_") ? response_id.substr(5) : response_id;
}

}  // namespace

std::string item_id(std::string_view prefix, std::string_view response_id, size_t place) {
    std::string id(prefix);
    id += '_';
    id += own_part(response_id);
    id += '_';
    id += std::to_string(place);
    return id;
}

std::string call_id(const canonical::ToolCall& call, std::string_view response_id, size_t place) {
    return call.id.empty() ? item_id("call", response_id, place) : call.id;
}

void write_message_item(json::Writer& w, std::string_view id, std::string_view text,
                        std::string_view status) {
    w.StartObject();
    key(w, "id");
    string(w, id);
    key(w, "type");
    string(w, "message");
    key(w, "status");
    string(w, status);
    key(w, "role");
    string(w, "assistant");
    key(w, "content");
    w.StartArray();
    w.StartObject();
    key(w, "type");
    string(w, "output_text");
    key(w, "text");
    string(w, text);
    key(w, "annotations");
    w.StartArray();
    w.EndArray();
    key(w, "logprobs");
    w.StartArray();
    w.EndArray();
    w.EndObject();
    w.EndArray();
    w.EndObject();
}

void write_reasoning_item(json::Writer& w, std::string_view id, std::string_view text) {
    w.StartObject();
    key(w, "id");
    string(w, id);
    key(w, "type");
    string(w, "reasoning");
    key(w, "summary");
    w.StartArray();
    w.EndArray();
    key(w, "content");
    w.StartArray();
    w.StartObject();
    key(w, "type");
    string(w, "reasoning_text");
    key(w, "text");
    string(w, text);
    w.EndObject();
    w.EndArray();
    w.EndObject();
}

void write_function_call_item(json::Writer& w, std::string_view id, std::string_view call_id,
                              const canonical::ToolCall& call, std::string_view status) {
    w.StartObject();
    key(w, "id");
    string(w, id);
    key(w, "type");
    string(w, "function_call");
    key(w, "status");
    string(w, status);
    key(w, "call_id");
    string(w, call_id);
    key(w, "name");
    string(w, call.name);
    key(w, "arguments");
    string(w, call.arguments);
    w.EndObject();
}

void write_usage(json::Writer& w, const canonical::Usage& usage) {
    const int64_t input = usage.prompt_tokens.value_or(0);
    const int64_t output = usage.completion_tokens.value_or(0);
    w.StartObject();
    key(w, "input_tokens");
    w.Int64(input);
    key(w, "input_tokens_details");
    w.StartObject();
    key(w, "cached_tokens");
    w.Int64(usage.cached_tokens.value_or(0));
    w.EndObject();
    key(w, "output_tokens");
    w.Int64(output);
    key(w, "output_tokens_details");
    w.StartObject();
    key(w, "reasoning_tokens");
    w.Int64(usage.reasoning_tokens.value_or(0));
    w.EndObject();
    key(w, "total_tokens");
    w.Int64(input + output);
    w.EndObject();
}

Status status_of(const canonical::FinishReason* finish) {
    Status s;
    if (finish == nullptr) {
        return s;
    }
    switch (finish->kind) {
        case FinishKind::length:
            s.status = "incomplete";
            s.incomplete_reason = "max_output_tokens";
            break;
        case FinishKind::content_filter:
            s.status = "incomplete";
            s.incomplete_reason = "content_filter";
            break;
        case FinishKind::abort:
            s.status = "failed";
            break;
        case FinishKind::none:
        case FinishKind::stop:
        case FinishKind::tool_calls:
            break;
    }
    return s;
}

std::string_view item_status(const Status& status) {
    return status.status == "completed" ? "completed" : "incomplete";
}

std::string_view error_code(const canonical::Error& error) {
    if (!error.code.empty()) {
        return error.code;
    }
    if (error.status == 429) {
        return "rate_limit_exceeded";
    }
    if (error.status >= 500) {
        return "server_error";
    }
    return "invalid_prompt";
}

void write_response(json::Writer& w, const ResponseHead& head,
                    const canonical::GenerationRequest::Responses& echo) {
    key(w, "id");
    string(w, head.id);
    key(w, "object");
    string(w, "response");
    key(w, "created_at");
    w.Int64(head.created);
    key(w, "status");
    string(w, head.status.status);
    key(w, "background");
    w.Bool(false);
    key(w, "error");
    if (head.error != nullptr) {
        w.StartObject();
        key(w, "code");
        string(w, error_code(*head.error));
        key(w, "message");
        string(w, head.error->message);
        w.EndObject();
    } else {
        w.Null();
    }
    key(w, "incomplete_details");
    if (head.status.incomplete_reason.empty()) {
        w.Null();
    } else {
        w.StartObject();
        key(w, "reason");
        string(w, head.status.incomplete_reason);
        w.EndObject();
    }
    for (const canonical::Extra& member : echo.echo) {
        key(w, member.key);
        json::write_raw(w, member.json);
    }
    key(w, "model");
    string(w, head.model);
    key(w, "output");
    json::write_raw(w, head.output_json);
    key(w, "previous_response_id");
    if (echo.previous_response_id.empty()) {
        w.Null();
    } else {
        string(w, echo.previous_response_id);
    }
    key(w, "store");
    w.Bool(echo.store);
    key(w, "usage");
    if (head.usage != nullptr) {
        write_usage(w, *head.usage);
    } else {
        w.Null();
    }
}

}  // namespace wire

namespace {

// The output items of one answer, as a JSON array, and each item (id, JSON) for the store.
std::string output_of(const canonical::Choice* c, std::string_view response_id,
                      std::string_view message_status,
                      std::vector<std::pair<std::string, std::string>>* items) {
    std::string out = "[";
    size_t place = 0;
    const auto add = [&](const std::string& id, auto write) {
        std::string item;
        json::StringOut os{&item};
        json::Writer w(os);
        write(w);
        if (place > 0) {
            out += ',';
        }
        out += item;
        if (items != nullptr) {
            items->emplace_back(id, std::move(item));
        }
        ++place;
    };
    if (c != nullptr && !c->reasoning.empty()) {
        const std::string id = wire::item_id("rs", response_id, place);
        add(id, [&](json::Writer& w) { wire::write_reasoning_item(w, id, c->reasoning); });
    }
    // The message when there is text, or nothing else to show (an empty answer): a reasoning
    // item alone (the budget ran out while the model reasoned) is the whole output, as the
    // stream makes it (stream_encode.cpp opens a message only for text or an empty answer).
    if (c == nullptr || !c->text.empty() || (c->tool_calls.empty() && c->reasoning.empty())) {
        const std::string id = wire::item_id("msg", response_id, place);
        const std::string_view text = c != nullptr ? std::string_view(c->text) : "";
        add(id, [&](json::Writer& w) { wire::write_message_item(w, id, text, message_status); });
    }
    if (c != nullptr) {
        for (const canonical::ToolCall& call : c->tool_calls) {
            const std::string id = wire::item_id("fc", response_id, place);
            const std::string cid = wire::call_id(call, response_id, place);
            add(id, [&](json::Writer& w) {
                wire::write_function_call_item(w, id, cid, call, message_status);
            });
        }
    }
    out += ']';
    return out;
}

const canonical::Choice* first_choice(const GenerationResult& result) {
    return result.choices.empty() ? nullptr : &result.choices.front();
}

}  // namespace

void ResponsesCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                                     std::string& out) const {
    const canonical::Choice* c = first_choice(result);
    const wire::Status status = wire::status_of(c != nullptr ? &c->finish : nullptr);
    const std::string output = output_of(c, result.id, wire::item_status(status), nullptr);
    const canonical::Error aborted = openai::upstream_error(
        c != nullptr && !c->finish.message.empty() ? c->finish.message
                                                   : "the backend aborted the generation");
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::ResponseHead head;
    head.id = result.id;
    head.created = result.created;
    head.model = result.model;
    head.status = status;
    head.output_json = output;
    head.usage = &result.usage;
    head.error = status.status == "failed" ? &aborted : nullptr;
    wire::write_response(w, head, req.responses);
    w.EndObject();
}

std::optional<StoredTurn> ResponsesCodec::stored_turn(const GenerationRequest& req,
                                                      const GenerationResult& result) const {
    if (!req.responses.store) {
        return std::nullopt;
    }
    StoredTurn turn;
    turn.id = result.id;
    turn.previous_id = req.responses.previous_response_id;
    for (const std::string& item : req.responses.input_items) {
        std::string id;
        json::Document doc;
        if (!json::parse(item, doc)) {
            if (const json::Value* v = json::find(doc, "id"); v != nullptr && v->IsString()) {
                id.assign(json::view(*v));
            }
        }
        turn.items.emplace_back(std::move(id), item);
    }
    turn.output_from = turn.items.size();
    const canonical::Choice* c = first_choice(result);
    const wire::Status status = wire::status_of(c != nullptr ? &c->finish : nullptr);
    (void)output_of(c, result.id, wire::item_status(status), &turn.items);
    encode_response(result, req, turn.response);
    return turn;
}

namespace wire {

// An error about the chat request the bridge made (from the chat decoder, a backend's encoder
// or pairing) names the chat field; the client wrote the Responses one. Both the param and the
// quoted name in the message are renamed: reasoning_effort -> reasoning.effort,
// max_completion_tokens / max_tokens -> max_output_tokens, response_format -> text.format,
// tool_choice.function.name -> tool_choice.name, verbosity -> text.verbosity,
// tools[i].function.x -> tools[i].x,
// messages[...] -> input.
canonical::Error in_responses_terms(canonical::Error e) {
    struct Rename {
        std::string_view chat;
        std::string_view responses;
        bool prefix;  // also every path under it
    };
    static constexpr Rename kRenames[] = {
        {"reasoning_effort", "reasoning.effort", false},
        {"max_completion_tokens", "max_output_tokens", false},
        {"max_tokens", "max_output_tokens", false},
        {"response_format.json_schema", "text.format", true},
        {"response_format", "text.format", true},
        {"tool_choice.function.name", "tool_choice.name", false},
        {"verbosity", "text.verbosity", false},
    };
    const auto replace_quoted = [&](std::string_view from, std::string_view to) {
        const std::string quoted = "'" + std::string(from) + "'";
        for (size_t at = e.message.find(quoted); at != std::string::npos;
             at = e.message.find(quoted, at + to.size() + 2)) {
            e.message.replace(at, quoted.size(), "'" + std::string(to) + "'");
        }
    };
    for (const Rename& r : kRenames) {
        const std::string_view param = e.param;
        if (param == r.chat || (r.prefix && param.starts_with(r.chat) &&
                                param.size() > r.chat.size() && param[r.chat.size()] == '.')) {
            const std::string renamed =
                std::string(r.responses) + std::string(param.substr(r.chat.size()));
            replace_quoted(param, renamed);
            e.param = renamed;
            break;
        }
    }
    if (e.param.starts_with("tools[")) {
        const size_t at = e.param.find("].function.");
        if (at != std::string::npos) {
            const std::string renamed = e.param.substr(0, at + 1) + e.param.substr(at + 10);
            replace_quoted(e.param, renamed);
            e.param = renamed;
        }
    }
    if (e.param.starts_with("messages")) {
        replace_quoted(e.param, "input");
        e.param = "input";
    }
    return e;
}

}  // namespace wire

void ResponsesCodec::encode_error(const Error& error, std::string& out) const {
    // OpenAI's envelope, as its other routes have it: {"error": {message, type, param, code}}.
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "error");
    openai::write_error_object(w, wire::in_responses_terms(error));
    w.EndObject();
}

// ---- upstream side: never a backend's dialect ---------------------------------------------

namespace {

canonical::Error not_a_backend() {
    canonical::Error e;
    e.status = 500;
    e.type = "server_error";
    e.message =
        "the Responses API is not a backend dialect: requests to /v1/responses go to the "
        "backend's chat API";
    return e;
}

}  // namespace

std::string_view ResponsesCodec::upstream_path(const GenerationRequest&) const {
    return "/v1/responses";
}

Result<std::string> ResponsesCodec::encode_request(const GenerationRequest&,
                                                   const UpstreamOptions&) const {
    return not_a_backend();
}

Result<GenerationResult> ResponsesCodec::decode_response(std::string_view,
                                                         const GenerationRequest&) const {
    return not_a_backend();
}

void ResponsesCodec::decode_stream_event(std::string_view, StreamState&,
                                         std::vector<StreamEvent>& out) const {
    StreamEvent ev;
    ev.type = StreamEvent::Type::error;
    ev.error = not_a_backend();
    out.push_back(std::move(ev));
}

}  // namespace infergate::translators::responses
