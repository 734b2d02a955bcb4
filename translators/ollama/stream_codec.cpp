// NDJSON streams: Ollama lines to canonical events, canonical events to Ollama lines.

#include <utility>

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
    json::Writer& begin(std::string_view text, const canonical::Carried* carried = nullptr) {
        w_.StartObject();
        write_head(w_, state_.model, state_.created, timing_);
        if (api_ == Api::chat) {
            json::key(w_, "message");
            w_.StartObject();
            json::key(w_, "role");
            json::string(w_, "assistant");
            json::key(w_, "content");
            json::string(w_, text);
            if (carried != nullptr) {
                json::write_carried(w_, carried->members, "message.");
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
    if (!event.text.empty() || carried != nullptr || lp.entries != nullptr) {
        static const Timing kNoTiming;
        LineWriter line(out, state, kNoTiming, api);
        json::Writer& w = line.begin(event.text, carried);
        json::key(w, "done");
        w.Bool(false);
        write_logprobs(w, lp);  // after done in both answers (every key between is omitempty)
        line.end();
        state.content_seen = state.content_seen || !event.text.empty();
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
    state.ended = true;
    const ChoiceState& c = state.choice(0);
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
    if (auto err = carry(doc, state.client, carried)) {
        push_error(out, std::move(*err));
        return;
    }
    std::vector<canonical::TokenLogprob> logprobs;
    if (auto err = read_logprobs(doc, logprobs)) {
        push_error(out, std::move(*err));
        return;
    }
    if (!done->GetBool()) {
        if (has_text || !carried.empty() || !logprobs.empty()) {
            StreamEvent& ev = out.emplace_back();
            ev.text.assign(has_text ? json::view(*text) : std::string_view());
            ev.carried = std::move(carried);
            ev.logprobs = std::move(logprobs);
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
    // The final line's text is usually "" but must still be passed on (§6.7).
    StreamEvent& ev = out.emplace_back();
    if (has_text) {
        ev.text.assign(text->GetString(), text->GetStringLength());
    }
    ev.finish = std::move(*finish);
    ev.usage = read_counts(doc);
    ev.carried = std::move(carried);
    ev.logprobs = std::move(logprobs);
    // Ollama has no terminator after the final object: it is the end.
    out.emplace_back().type = StreamEvent::Type::done;
}

}  // namespace infergate::translators::ollama
