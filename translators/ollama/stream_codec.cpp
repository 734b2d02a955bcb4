// NDJSON streams: Ollama lines to canonical events, canonical events to Ollama lines.

#include <algorithm>
#include <span>
#include <utility>

#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"
#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::Usage;

namespace {

void push_error(std::vector<StreamEvent>& out, canonical::Error error) {
    StreamEvent& ev = out.emplace_back();
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(error);
}

// Writes one line: {"model","created_at",<text field>,<tail>}\n
class LineWriter {
public:
    LineWriter(std::string& out, const StreamState& state, const Timing& timing, Api api)
        : out_(out), os_{&out}, w_(os_), state_(state), timing_(timing), api_(api) {}

    // `carried`: an Ollama backend's own members of this line (tool_calls, thinking, context).
    // `calls`: another dialect's tool calls, complete, the first of them the turn's
    // `first_call`th.
    json::Writer& begin(std::string_view text, const canonical::Carried* carried = nullptr,
                        std::span<const canonical::ToolCall> calls = {}, size_t first_call = 0,
                        std::string_view thinking = {}) {
        w_.StartObject();
        write_head(w_, state_.model, state_.created, timing_);
        if (api_ == Api::chat) {
            json::key(w_, "message");
            w_.StartObject();
            json::key(w_, "role");
            json::string(w_, "assistant");
            json::key(w_, "content");
            json::string(w_, text);
            if (!thinking.empty()) {
                json::key(w_, "thinking");  // another dialect's reasoning
                json::string(w_, thinking);
            }
            if (carried != nullptr) {
                json::write_carried(w_, carried->members, "message.");
            }
            if (!calls.empty()) {
                write_tool_calls(w_, calls, first_call);
            }
            w_.EndObject();
        } else {
            json::key(w_, "response");
            json::string(w_, text);
        }
        if (carried != nullptr) {
            json::write_carried(w_, carried->members);
        }
        return w_;
    }
    void end() {
        w_.EndObject();
        out_.push_back('\n');
    }

private:
    std::string& out_;
    json::StringOut os_;
    json::Writer w_;
    const StreamState& state_;
    const Timing& timing_;
    Api api_;
};

// The entries of this event when the client asked for them.
LogprobsOut logprobs_of(const StreamEvent& event, const StreamState& state) {
    if (!state.logprobs || event.logprobs.empty()) {
        return {};
    }
    return {&event.logprobs, state.top_logprobs};
}

// Writes the choice's complete tool calls not yet sent (up to `upto`) on a line of their own,
// as Ollama streams each call whole once its parser has it. False, with the stream's error
// written, when one's arguments are not a JSON object: Ollama carries an object.
bool send_calls(ChoiceState& c, size_t upto, StreamState& state, std::string& out, Api api) {
    upto = std::min(upto, c.calls.size());
    if (c.calls_sent >= upto) {
        return true;
    }
    for (size_t i = c.calls_sent; i < upto; ++i) {
        canonical::ToolCall& call = c.calls[i];
        if (call.arguments.empty()) {
            call.arguments = "{}";  // a call without arguments
        }
        json::Document args;
        if (json::parse(call.arguments, args) || !args.IsObject()) {
            encode_stream_error(
                upstream_error("the backend's tool call '" + call.name +
                               "' has arguments that are not a JSON object ('" + call.arguments +
                               "'), which an Ollama client cannot be given: Ollama carries "
                               "them as an object"),
                state, out);
            return false;
        }
    }
    static const Timing kNoTiming;
    LineWriter line(out, state, kNoTiming, api);
    json::Writer& w = line.begin(
        {}, nullptr,
        std::span<const canonical::ToolCall>(c.calls).subspan(c.calls_sent, upto - c.calls_sent),
        c.calls_sent);
    json::key(w, "done");
    w.Bool(false);
    line.end();
    c.calls_sent = upto;
    state.content_seen = true;
    return true;
}

}  // namespace

void encode_stream_event(const StreamEvent& event, StreamState& state, std::string& out, Api api) {
    switch (event.type) {
        case StreamEvent::Type::usage:
            state.usage = event.usage;
            state.usage_final = true;
            return;
        case StreamEvent::Type::done:
            return;  // the done:true line goes out at the end
        case StreamEvent::Type::keepalive:
            return;  // NDJSON has no line that is not a record (Ollama clients parse each one)
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            return;
        case StreamEvent::Type::chunk:
            break;
    }
    // Ollama streams one answer; a stray other index has nowhere to go.
    if (state.ended || event.index > 0) {
        return;
    }
    ChoiceState& c = state.choice(0);
    if (c.finished) {
        return;
    }
    if (event.usage.completion_tokens) {
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    if (event.usage.cached_tokens) {
        c.cached_tokens = event.usage.cached_tokens;
    }
    const canonical::Carried* carried = own(event.carried);
    const bool finishing = event.finish && event.finish->kind != FinishKind::none;
    if (finishing && carried != nullptr) {
        // An Ollama backend's final line: its counts are on it, nothing is left to wait for; it
        // goes out now with what only it carries (context, the last tool calls).
        Usage usage = event.usage;
        usage.prompt_tokens = usage.prompt_tokens ? usage.prompt_tokens : c.prompt_tokens;
        LineWriter line(out, state, state.timing, api);
        json::Writer& w = line.begin(event.text, carried);
        write_tail(w, event.finish->kind, usage, state.timing, api, logprobs_of(event, state));
        line.end();
        c.finished = true;
        state.ended = true;
        state.content_seen = state.content_seen || !event.text.empty();
        return;
    }
    const LogprobsOut lp = logprobs_of(event, state);
    const std::string_view thinking = api == Api::chat ? std::string_view(event.reasoning) : "";
    if (!event.text.empty() || carried != nullptr || lp.entries != nullptr || !thinking.empty()) {
        static const Timing kNoTiming;
        LineWriter line(out, state, kNoTiming, api);
        json::Writer& w = line.begin(event.text, carried, {}, 0, thinking);
        json::key(w, "done");
        w.Bool(false);
        write_logprobs(w, lp);  // after done in both answers (every key between is omitempty)
        line.end();
        state.content_seen = state.content_seen || !event.text.empty() || !thinking.empty();
    }
    // Another dialect's tool calls come in pieces: a call is complete once the next one starts,
    // or the choice finishes.
    for (const canonical::ToolCallDelta& piece : event.tool_calls) {
        if (piece.index >= 0 && static_cast<size_t>(piece.index) >= c.calls.size() &&
            !send_calls(c, c.calls.size(), state, out, api)) {
            return;
        }
        canonical::add_tool_call_delta(c.calls, piece);
    }
    if (finishing && !send_calls(c, c.calls.size(), state, out, api)) {
        return;
    }
    if (finishing) {
        // The final line carries the counts, which an OpenAI upstream reports only after the
        // finish (its usage chunk): hold the finish until the end of the stream.
        c.held_finish = event.finish;
        c.finished = true;
    }
}

void encode_stream_end(StreamState& state, const Timing& timing, std::string& out, Api api) {
    if (state.ended) {
        return;
    }
    ChoiceState& c = state.choice(0);
    if (!send_calls(c, c.calls.size(), state, out, api)) {
        return;
    }
    state.ended = true;
    Usage usage;
    if (state.usage_final) {
        usage = state.usage;
    } else {
        usage.prompt_tokens = c.prompt_tokens ? c.prompt_tokens : state.usage.prompt_tokens;
        if (c.tokens_exact) {
            usage.completion_tokens = c.completion_tokens;  // never a chunk-count estimate
        }
    }
    LineWriter line(out, state, timing, api);
    json::Writer& w = line.begin({});
    // No done_reason when the upstream never said how it finished (Ollama's own behaviour when
    // its runner connection closes).
    write_tail(w, c.held_finish ? c.held_finish->kind : FinishKind::none, usage, timing);
    line.end();
}

void encode_stream_error(const Error& error, StreamState& state, std::string& out) {
    if (state.ended) {
        return;
    }
    state.ended = true;
    encode_error(error, out);
    out.push_back('\n');
}

void decode_stream_event(std::string_view data, StreamState& state, std::vector<StreamEvent>& out) {
    json::Document doc;
    if (auto err = json::parse(data, doc, "stream line", canonical::exact_numbers(state))) {
        push_error(out, upstream_error("the backend sent malformed stream data: " + err->message));
        return;
    }
    if (!doc.IsObject()) {
        push_error(out, upstream_error("the backend sent malformed stream data: expected a JSON "
                                       "object, got " +
                                       std::string(json::type_name(doc))));
        return;
    }
    if (const json::Value* err = json::find(doc, "error"); err != nullptr && !err->IsNull()) {
        push_error(out, upstream_error(err->IsString() ? std::string(json::view(*err))
                                                       : json::to_string(*err)));
        return;
    }
    const json::Value* text = json::find(doc, "response");
    if (text == nullptr) {
        if (const json::Value* message = json::find(doc, "message"); message != nullptr) {
            text = json::find(*message, "content");
        }
    }
    if (text != nullptr && !text->IsString() && !text->IsNull()) {
        push_error(out, upstream_error("the backend sent malformed stream data: the text is " +
                                       std::string(json::type_name(*text)) + ", not a string"));
        return;
    }
    const json::Value* done = json::find(doc, "done");
    if (done == nullptr || !done->IsBool()) {
        push_error(
            out, upstream_error("the backend sent malformed stream data: a line without a boolean "
                                "'done'"));
        return;
    }
    const bool has_text = text != nullptr && text->IsString() && text->GetStringLength() > 0;
    canonical::Carried carried;
    std::vector<canonical::ToolCall> calls;
    std::string thinking;
    if (auto err = carry(doc, state.client, carried, &calls, &thinking)) {
        push_error(out, std::move(*err));
        return;
    }
    // Ollama streams each tool call whole: one piece per call, numbered across the stream.
    ChoiceState& c = state.choice(0);
    std::vector<canonical::ToolCallDelta> pieces;
    for (canonical::ToolCall& call : calls) {
        canonical::ToolCallDelta& piece = pieces.emplace_back();
        piece.index = static_cast<int>(c.calls_sent++);
        piece.id = std::move(call.id);
        piece.name = std::move(call.name);
        piece.arguments = std::move(call.arguments);
    }
    std::vector<canonical::TokenLogprob> logprobs;
    if (auto err = read_logprobs(doc, logprobs)) {
        push_error(out, std::move(*err));
        return;
    }
    if (!done->GetBool()) {
        if (has_text || !carried.empty() || !logprobs.empty() || !pieces.empty() ||
            !thinking.empty()) {
            StreamEvent& ev = out.emplace_back();
            ev.reasoning = std::move(thinking);
            ev.text.assign(has_text ? json::view(*text) : std::string_view());
            ev.carried = std::move(carried);
            ev.logprobs = std::move(logprobs);
            ev.tool_calls = std::move(pieces);
        }
        return;
    }
    Result<canonical::FinishReason> finish = read_done_reason(doc, nullptr);
    if (!finish) {
        push_error(out, finish.error());
        return;
    }
    if (finish->kind == FinishKind::length) {
        finish->length = state.max_tokens;
    }
    if (finish->kind == FinishKind::stop && c.calls_sent > 0) {
        // Ollama ends a turn that calls tools with "stop"; the other dialects say why.
        finish->kind = FinishKind::tool_calls;
    }
    // The final line's text is usually "" but must still be passed on (§6.7).
    StreamEvent& ev = out.emplace_back();
    if (has_text) {
        ev.text.assign(text->GetString(), text->GetStringLength());
    }
    ev.finish = std::move(*finish);
    ev.usage = read_counts(doc);
    ev.carried = std::move(carried);
    ev.logprobs = std::move(logprobs);
    ev.tool_calls = std::move(pieces);
    ev.reasoning = std::move(thinking);
    // Ollama has no terminator after the final object: it is the end.
    out.emplace_back().type = StreamEvent::Type::done;
}

}  // namespace infergate::translators::ollama
