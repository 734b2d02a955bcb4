// Anthropic streams, upstream side: a backend's named SSE events (api-dialects §8.4, §11.4)
// turned back into canonical ones by their "type". Only choice 0: the API has one answer.

#include "translators/anthropic/codec_impl.hpp"
#include "translators/canonical/accumulate.hpp"

namespace infergate::translators::anthropic {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;

void push_error(Error e, std::vector<StreamEvent>& out) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(e);
    out.push_back(std::move(ev));
}

void push_malformed(std::string what, std::vector<StreamEvent>& out) {
    push_error(wire::upstream_error("the Anthropic backend sent malformed stream data: " +
                                    std::move(what)),
               out);
}

StreamEvent chunk() {
    StreamEvent ev;
    ev.type = StreamEvent::Type::chunk;
    return ev;
}

}  // namespace

void AnthropicCodec::decode_stream_event(std::string_view data, StreamState& state,
                                         std::vector<StreamEvent>& out) const {
    json::Document doc;
    if (auto err = json::parse(data, doc, "the stream event")) {
        push_malformed(err->message, out);
        return;
    }
    const json::Value* type = doc.IsObject() ? json::find(doc, "type") : nullptr;
    if (type == nullptr || !type->IsString()) {
        push_malformed("an event without a string 'type'", out);
        return;
    }
    const std::string_view t = json::view(*type);
    ChoiceState& c = state.choice(0);
    if (t == "message_start") {
        const json::Value* message = json::find(doc, "message");
        const json::Value* usage = message != nullptr ? json::find(*message, "usage") : nullptr;
        StreamEvent ev = chunk();
        if (usage != nullptr) {
            canonical::Usage u;
            if (auto msg = wire::read_usage(*usage, u)) {
                push_malformed("message_start " + *msg, out);
                return;
            }
            // The initial output_tokens (1) is not a running count worth trusting; the prompt
            // count is, and Anthropic clients want it before any text.
            c.prompt_tokens = u.prompt_tokens;
            c.cached_tokens = u.cached_tokens;
            ev.usage.prompt_tokens = u.prompt_tokens;
            ev.usage.cached_tokens = u.cached_tokens;
        }
        out.push_back(std::move(ev));
    } else if (t == "content_block_start") {
        const json::Value* block = json::find(doc, "content_block");
        const json::Value* btype = block != nullptr ? json::find(*block, "type") : nullptr;
        if (btype == nullptr || !btype->IsString()) {
            push_malformed("a content_block_start without a typed 'content_block'", out);
            return;
        }
        const json::Value* index = json::find(doc, "index");
        const int at = index != nullptr && index->IsInt() ? index->GetInt() : -1;
        if (json::view(*btype) == "text") {
            c.text_block = at;  // its deltas are canonical text, its stop nothing to carry
            return;
        }
        c.text_block = -1;
        if (json::view(*btype) == "tool_use" && state.client &&
            *state.client != Dialect::anthropic) {
            if (!canonical::takes_tool_calls(*state.client)) {
                push_error(wire::lost_tool_call(*state.client), out);
                return;
            }
            // A call's first piece: its id and name; the input follows as input_json_delta.
            const json::Value* id = json::find(*block, "id");
            const json::Value* name = json::find(*block, "name");
            if (name == nullptr || !name->IsString()) {
                push_malformed("a tool_use block without a 'name' string", out);
                return;
            }
            StreamEvent ev = chunk();
            canonical::ToolCallDelta& piece = ev.tool_calls.emplace_back();
            piece.index = static_cast<int>(c.calls_sent++);
            if (id != nullptr && id->IsString()) {
                piece.id.assign(json::view(*id));
            }
            piece.name.assign(json::view(*name));
            if (const json::Value* input = json::find(*block, "input");
                input != nullptr && input->IsObject() && input->MemberCount() > 0) {
                piece.arguments = json::to_string(*input);
            }
            c.tool_block = at;
            out.push_back(std::move(ev));
            return;
        }
        if (state.client == Dialect::anthropic) {
            StreamEvent ev = chunk();
            ev.carried.from = Dialect::anthropic;
            ev.carried.members.push_back({"content_block_start", json::to_string(*block)});
            out.push_back(std::move(ev));
        }
    } else if (t == "content_block_stop") {
        const json::Value* index = json::find(doc, "index");
        const int at = index != nullptr && index->IsInt() ? index->GetInt() : -1;
        if (state.client == Dialect::anthropic && at != c.text_block) {
            StreamEvent ev = chunk();
            ev.carried.from = Dialect::anthropic;
            ev.carried.members.push_back({"content_block_stop", "null"});
            out.push_back(std::move(ev));
        }
        c.text_block = -1;
        if (at == c.tool_block) {
            c.tool_block = -1;
        }
    } else if (t == "content_block_delta") {
        const json::Value* delta = json::find(doc, "delta");
        const json::Value* dtype = delta != nullptr ? json::find(*delta, "type") : nullptr;
        if (dtype == nullptr || !dtype->IsString()) {
            push_malformed("a content_block_delta without a typed 'delta'", out);
            return;
        }
        const json::Value* index = json::find(doc, "index");
        if (json::view(*dtype) == "input_json_delta" && c.tool_block >= 0 && index != nullptr &&
            index->IsInt() && index->GetInt() == c.tool_block) {
            const json::Value* partial = json::find(*delta, "partial_json");
            if (partial == nullptr || !partial->IsString()) {
                push_malformed("an input_json_delta without a 'partial_json' string", out);
                return;
            }
            StreamEvent ev = chunk();
            canonical::ToolCallDelta& piece = ev.tool_calls.emplace_back();
            piece.index = static_cast<int>(c.calls_sent) - 1;
            piece.arguments.assign(json::view(*partial));
            out.push_back(std::move(ev));
            return;
        }
        if (json::view(*dtype) == "thinking_delta" && state.client &&
            *state.client != Dialect::anthropic && canonical::takes_reasoning(*state.client)) {
            const json::Value* thinking = json::find(*delta, "thinking");
            if (thinking == nullptr || !thinking->IsString()) {
                push_malformed("a thinking_delta without a 'thinking' string", out);
                return;
            }
            StreamEvent ev = chunk();
            ev.reasoning.assign(json::view(*thinking));
            out.push_back(std::move(ev));
            return;
        }
        if (json::view(*dtype) != "text_delta") {
            // thinking, tool-input JSON, citations: not canonical text, carried to an
            // Anthropic client
            if (state.client == Dialect::anthropic) {
                StreamEvent ev = chunk();
                ev.carried.from = Dialect::anthropic;
                ev.carried.members.push_back({"content_block_delta", json::to_string(*delta)});
                out.push_back(std::move(ev));
            }
            return;
        }
        const json::Value* text = json::find(*delta, "text");
        if (text == nullptr || !text->IsString()) {
            push_malformed("a text_delta without a 'text' string", out);
            return;
        }
        StreamEvent ev = chunk();
        ev.text.assign(json::view(*text));
        out.push_back(std::move(ev));
    } else if (t == "message_delta") {
        StreamEvent ev = chunk();
        if (const json::Value* usage = json::find(doc, "usage"); usage != nullptr) {
            canonical::Usage u;
            if (auto msg = wire::read_usage(*usage, u)) {
                push_malformed("message_delta " + *msg, out);
                return;
            }
            if (u.completion_tokens) {
                c.completion_tokens = *u.completion_tokens;  // cumulative
                c.tokens_exact = true;
            }
            if (u.prompt_tokens) {
                c.prompt_tokens = u.prompt_tokens;
                c.cached_tokens = u.cached_tokens;
            }
        }
        if (c.tokens_exact) {
            ev.usage.completion_tokens = c.completion_tokens;
        }
        ev.usage.prompt_tokens = c.prompt_tokens;
        ev.usage.cached_tokens = c.cached_tokens;
        const json::Value* delta = json::find(doc, "delta");
        if (delta != nullptr && delta->IsObject()) {
            bool bad = false;
            std::optional<FinishReason> finish = wire::read_stop_reason(*delta, bad);
            if (bad) {
                push_malformed("message_delta.delta.stop_reason is not a string", out);
                return;
            }
            if (finish && !c.finished) {
                if (finish->kind == FinishKind::length) {
                    finish->length = state.max_tokens;
                }
                ev.finish = std::move(finish);
                c.finished = true;
            }
        }
        out.push_back(std::move(ev));
        // The final counts: the aggregate usage of the request.
        StreamEvent usage;
        usage.type = StreamEvent::Type::usage;
        usage.usage = out.back().usage;
        state.usage = usage.usage;
        state.usage_final = true;
        out.push_back(std::move(usage));
    } else if (t == "message_stop") {
        StreamEvent ev;
        ev.type = StreamEvent::Type::done;
        out.push_back(std::move(ev));
    } else if (t == "ping") {
        StreamEvent ev;
        ev.type = StreamEvent::Type::keepalive;
        ev.text = " ping";  // as an SSE comment: ": ping"
        out.push_back(std::move(ev));
    } else if (t == "error") {
        const json::Value* error = json::find(doc, "error");
        Error e = wire::upstream_error("the Anthropic backend reported an error");
        if (error != nullptr && error->IsObject()) {
            if (const json::Value* et = json::find(*error, "type");
                et != nullptr && et->IsString()) {
                e.type.assign(json::view(*et));
                e.status = wire::status_for_type(e.type);
            }
            if (const json::Value* m = json::find(*error, "message");
                m != nullptr && m->IsString()) {
                e.message.assign(json::view(*m));
            }
        }
        push_error(std::move(e), out);
    }
    // Event types newer than this code carry no text.
}

}  // namespace infergate::translators::anthropic
