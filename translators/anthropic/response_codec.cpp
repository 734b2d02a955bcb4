// Whole (non-streaming) responses: canonical result → Anthropic message (client side), and an
// Anthropic backend's message → canonical result (upstream side). Only choice 0: the Messages
// API has one answer per request.

#include "translators/anthropic/codec_impl.hpp"
#include "translators/canonical/accumulate.hpp"

namespace infergate::translators::anthropic {

void AnthropicCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                                     std::string& out) const {
    const canonical::Choice* choice = result.choices.empty() ? nullptr : &result.choices.front();
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "id");
    wire::string(w, wire::message_id(result.id));
    wire::key(w, "type");
    wire::string(w, "message");
    wire::key(w, "role");
    wire::string(w, "assistant");
    wire::key(w, "model");
    wire::string(w, result.model.empty() ? req.model : result.model);
    // An Anthropic backend's own message (every content block: tool_use, thinking, ...; its
    // stop_reason and usage as it wrote them) goes to an Anthropic client as it came.
    const canonical::Carried* carried =
        choice != nullptr && choice->carried.from == Dialect::anthropic && !choice->carried.empty()
            ? &choice->carried
            : nullptr;
    if (carried != nullptr) {
        json::write_carried(w, carried->members);
        w.EndObject();
        return;
    }
    wire::key(w, "content");
    w.StartArray();
    // Another dialect's reasoning first, as a thinking block. Its signature is Anthropic's own
    // check that it wrote the text: there is none to give (infergate reads the text back and
    // leaves the signature aside).
    if (choice != nullptr && !choice->reasoning.empty()) {
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, "thinking");
        wire::key(w, "thinking");
        wire::string(w, choice->reasoning);
        wire::key(w, "signature");
        wire::string(w, "");
        w.EndObject();
    }
    // A text block, unless the turn only calls tools (as Anthropic writes such a turn).
    if (choice == nullptr || !choice->text.empty() || choice->tool_calls.empty()) {
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, "text");
        wire::key(w, "text");
        wire::string(w, choice != nullptr ? std::string_view(choice->text) : std::string_view());
        w.EndObject();
    }
    if (choice != nullptr) {
        // Another dialect's tool calls, their arguments checked to be objects by its decoder.
        for (size_t i = 0; i < choice->tool_calls.size(); ++i) {
            wire::write_tool_use(w, choice->tool_calls[i], result.id, i);
        }
    }
    w.EndArray();
    const canonical::FinishReason* finish = choice != nullptr ? &choice->finish : nullptr;
    const std::string_view reason = wire::stop_reason(finish);
    wire::key(w, "stop_reason");
    if (reason.empty()) {
        w.Null();
    } else {
        wire::string(w, reason);
    }
    wire::key(w, "stop_sequence");
    if (reason == "stop_sequence") {
        wire::string(w, *finish->matched_text);
    } else {
        w.Null();
    }
    wire::key(w, "usage");
    canonical::Usage usage = result.usage;
    if (choice != nullptr && !usage.completion_tokens) {
        usage.completion_tokens = choice->usage.completion_tokens;
    }
    if (choice != nullptr && !usage.prompt_tokens) {
        usage.prompt_tokens = choice->usage.prompt_tokens;
        usage.cached_tokens = choice->usage.cached_tokens;
    }
    wire::write_usage(w, usage);
    w.EndObject();
}

Result<GenerationResult> AnthropicCodec::decode_response(std::string_view body,
                                                         const GenerationRequest& req) const {
    json::Document doc;
    if (auto err = json::parse(body, doc, "upstream response")) {
        return wire::upstream_error("the Anthropic backend sent a malformed response: " +
                                    err->message);
    }
    if (!doc.IsObject()) {
        return wire::upstream_error("the Anthropic backend sent a response that is " +
                                    std::string(json::type_name(doc)) + ", not an object");
    }
    if (const json::Value* type = json::find(doc, "type");
        type != nullptr && type->IsString() && json::view(*type) == "error") {
        // An error envelope with a 2xx status: still an error.
        Error e = decode_error(502, body);
        e.status = wire::status_for_type(e.type);
        return e;
    }
    GenerationResult result;
    if (const json::Value* id = json::find(doc, "id"); id != nullptr && id->IsString()) {
        result.id.assign(json::view(*id));
    }
    if (const json::Value* model = json::find(doc, "model");
        model != nullptr && model->IsString()) {
        result.model.assign(json::view(*model));
    }
    canonical::Choice choice;
    const json::Value* content = json::find(doc, "content");
    if (content == nullptr || !content->IsArray()) {
        return wire::upstream_error(
            "the Anthropic backend sent a response without a 'content' list");
    }
    for (const json::Value& block : content->GetArray()) {
        const json::Value* type = json::find(block, "type");
        if (type == nullptr || !type->IsString()) {
            return wire::upstream_error(
                "the Anthropic backend sent a content block without a string 'type'");
        }
        if (json::view(*type) == "tool_use" && req.dialect != Dialect::anthropic) {
            if (!canonical::takes_tool_calls(req.dialect)) {
                return wire::lost_tool_call(req.dialect);
            }
            const json::Value* id = json::find(block, "id");
            const json::Value* name = json::find(block, "name");
            const json::Value* input = json::find(block, "input");
            if (name == nullptr || !name->IsString() || (input != nullptr && !input->IsObject())) {
                return wire::upstream_error(
                    "the Anthropic backend sent a tool_use block without a name or with an "
                    "input that is not an object");
            }
            canonical::ToolCall& call = choice.tool_calls.emplace_back();
            if (id != nullptr && id->IsString()) {
                call.id.assign(json::view(*id));
            }
            call.name.assign(json::view(*name));
            call.arguments = input != nullptr ? json::to_string(*input) : std::string("{}");
            continue;
        }
        if (json::view(*type) == "thinking" && req.dialect != Dialect::anthropic &&
            canonical::takes_reasoning(req.dialect)) {
            if (const json::Value* t = json::find(block, "thinking");
                t != nullptr && t->IsString()) {
                choice.reasoning.append(json::view(*t));
            }
            continue;
        }
        if (json::view(*type) != "text") {
            continue;  // thinking, tool_use, ...: not canonical text (carried below)
        }
        const json::Value* text = json::find(block, "text");
        if (text == nullptr || !text->IsString()) {
            return wire::upstream_error(
                "the Anthropic backend sent a text block without a 'text' string");
        }
        choice.text.append(json::view(*text));
    }
    bool bad = false;
    if (auto finish = wire::read_stop_reason(doc, bad)) {
        choice.finish = std::move(*finish);
    }
    if (bad) {
        return wire::upstream_error(
            "the Anthropic backend sent a response whose 'stop_reason' is not a string");
    }
    if (choice.finish.kind == canonical::FinishKind::length) {
        choice.finish.length = req.sampling.max_tokens;
    }
    if (const json::Value* usage = json::find(doc, "usage"); usage != nullptr) {
        if (auto message = wire::read_usage(*usage, result.usage)) {
            return wire::upstream_error("the Anthropic backend sent a malformed response: " +
                                        *message);
        }
    }
    choice.usage = result.usage;
    if (req.dialect == Dialect::anthropic) {
        // Everything but the identity, which the encoder writes (the model as the client named
        // it): content blocks of every type, stop_reason, stop_sequence, usage, container, ...
        choice.carried.from = Dialect::anthropic;
        json::collect_unknown(doc, {"id", "type", "role", "model"}, choice.carried.members);
    }
    result.choices.push_back(std::move(choice));
    return result;
}

}  // namespace infergate::translators::anthropic
