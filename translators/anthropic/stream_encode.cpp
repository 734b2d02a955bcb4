// Anthropic streams, client side: SSE with named events (api-dialects §8.4, §11.4), written as
//   message_start → content_block_start → content_block_delta* → content_block_stop →
//   message_delta → message_stop
// lazily (message_start on the first event) and the tail exactly once. Only choice 0: the API
// has one answer.

#include <algorithm>

#include "translators/anthropic/codec_impl.hpp"
#include "translators/framing/framing.hpp"

namespace infergate::translators::anthropic {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;

// State use (choice 0 of the client-side StreamState):
//   role_sent          message_start and content_block_start went out
//   completion_tokens  output tokens so far (exact once tokens_exact)
//   prompt_tokens      input tokens, once known
//   sent               the input_tokens value message_start carried: this encoder never diffs
//                      text, so the field is free; message_delta repeats input_tokens only when
//                      the real count differs from it (it became known later, §10.11 rule 4)
//   held_finish        the finish, held until exact counts (usage event) or the stream's end
//   finished           the tail went out (state.ended too: message_stop is the terminator)

// Writes `event: <name>\ndata: ` ... `\n\n` around JSON written in place.
class Event {
public:
    Event(std::string_view name, std::string& out) : out_(out), os_{&out}, w_(os_) {
        out.append("event: ").append(name).append("\ndata: ");
    }
    ~Event() { out_.append("\n\n"); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    json::Writer& w() { return w_; }

private:
    std::string& out_;
    json::StringOut os_;
    json::Writer w_;
};

void write_type(json::Writer& w, std::string_view type) {
    wire::key(w, "type");
    wire::string(w, type);
}

// An event about block `index`: {"type": <event>, "index", <member>: {"type": <type>, ...}},
// the inner object's other members written by `fields`.
template <class Fields>
void block_event(std::string_view event, int index, std::string_view member, std::string_view type,
                 std::string& out, Fields fields) {
    Event ev(event, out);
    json::Writer& w = ev.w();
    w.StartObject();
    write_type(w, event);
    wire::key(w, "index");
    w.Int(index);
    wire::key(w, member);
    w.StartObject();
    write_type(w, type);
    fields(w);
    w.EndObject();
    w.EndObject();
}

// A content_block_delta of block `index`: {"type": <type>, <key>: <value>}.
void write_delta(int index, std::string_view type, std::string_view key, std::string_view value,
                 std::string& out) {
    block_event("content_block_delta", index, "delta", type, out, [&](json::Writer& w) {
        wire::key(w, key);
        wire::string(w, value);
    });
}

// Content blocks are numbered as they start: the text block (one at a time, opened when text
// comes), and the blocks an Anthropic backend sent that only an Anthropic client takes
// (tool_use, thinking, ...; carried raw, each between its own start and stop).
// A content_block_start of block `index`, its content_block {"type": <type>, ...} written by
// `fields` after the type.
template <class Fields>
void start_block(int index, std::string_view type, std::string& out, Fields fields) {
    block_event("content_block_start", index, "content_block", type, out, fields);
}

void open_text_block(ChoiceState& c, std::string& out) {
    c.text_block = c.blocks++;
    start_block(c.text_block, "text", out, [](json::Writer& w) {
        wire::key(w, "text");
        wire::string(w, "");
    });
}

void close_block(int index, std::string& out) {
    Event ev("content_block_stop", out);
    ev.w().StartObject();
    write_type(ev.w(), "content_block_stop");
    wire::key(ev.w(), "index");
    ev.w().Int(index);
    ev.w().EndObject();
}

void close_text_block(ChoiceState& c, std::string& out) {
    if (c.text_block >= 0) {
        close_block(c.text_block, out);
        c.text_block = -1;
    }
}

void close_tool_block(ChoiceState& c, std::string& out) {
    if (c.tool_block >= 0) {
        close_block(c.tool_block, out);
        c.tool_block = -1;
    }
}

void close_thinking_block(ChoiceState& c, std::string& out) {
    if (c.thinking_block >= 0) {
        close_block(c.thinking_block, out);
        c.thinking_block = -1;
    }
}

// Another dialect's reasoning as a thinking block (content_block_start with an empty thinking
// and signature, thinking_delta pieces), open until another block starts. No signature_delta:
// there is no Anthropic signature to give.
void write_thinking(ChoiceState& c, std::string_view text, std::string& out) {
    if (c.thinking_block < 0) {
        close_text_block(c, out);
        close_tool_block(c, out);
        c.thinking_block = c.blocks++;
        start_block(c.thinking_block, "thinking", out, [](json::Writer& w) {
            wire::key(w, "thinking");
            wire::string(w, "");
            wire::key(w, "signature");
            wire::string(w, "");
        });
    }
    write_delta(c.thinking_block, "thinking_delta", "thinking", text, out);
}

// A carried block event: content_block_start (the block), content_block_delta (the delta) or
// content_block_stop, numbered by this encoder.
void write_carried_block(ChoiceState& c, const canonical::Carried& carried, std::string& out) {
    for (const canonical::Extra& e : carried.members) {
        if (e.key == "content_block_start") {
            close_text_block(c, out);
            Event ev("content_block_start", out);
            json::Writer& w = ev.w();
            w.StartObject();
            write_type(w, "content_block_start");
            wire::key(w, "index");
            w.Int(c.blocks++);
            wire::key(w, "content_block");
            json::write_raw(w, e.json);
            w.EndObject();
        } else if (e.key == "content_block_delta" && c.blocks > 0) {
            Event ev("content_block_delta", out);
            json::Writer& w = ev.w();
            w.StartObject();
            write_type(w, "content_block_delta");
            wire::key(w, "index");
            w.Int(c.blocks - 1);
            wire::key(w, "delta");
            json::write_raw(w, e.json);
            w.EndObject();
        } else if (e.key == "content_block_stop" && c.blocks > 0 && c.text_block < 0) {
            close_block(c.blocks - 1, out);
        }
    }
}

void ensure_start(StreamState& s, const canonical::Usage& first, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.role_sent) {
        return;
    }
    c.role_sent = true;
    if (first.prompt_tokens) {
        c.prompt_tokens = first.prompt_tokens;
        c.cached_tokens = first.cached_tokens;
    }
    c.sent = static_cast<size_t>(c.prompt_tokens.value_or(0));
    {
        Event ev("message_start", out);
        json::Writer& w = ev.w();
        w.StartObject();
        write_type(w, "message_start");
        wire::key(w, "message");
        w.StartObject();
        wire::key(w, "id");
        wire::string(w, wire::message_id(s.id));
        write_type(w, "message");
        wire::key(w, "role");
        wire::string(w, "assistant");
        wire::key(w, "content");
        w.StartArray();
        w.EndArray();
        wire::key(w, "model");
        wire::string(w, s.model);
        wire::key(w, "stop_reason");
        w.Null();
        wire::key(w, "stop_sequence");
        w.Null();
        wire::key(w, "usage");
        canonical::Usage u;
        u.prompt_tokens = c.prompt_tokens;
        u.cached_tokens = c.cached_tokens;
        // Anthropic reports the first token here (1); later counts supersede it.
        u.completion_tokens = std::min<int64_t>(first.completion_tokens.value_or(0), 1);
        wire::write_usage(w, u);
        w.EndObject();
        w.EndObject();
    }
    // The text block opens with the first text, so that a turn that only calls tools starts
    // with its tool_use block, as Anthropic streams it; an answer with no content at all gets
    // an empty one at the end (write_tail).
}

// Another dialect's tool-call pieces: each call a tool_use block (content_block_start with its
// id, name and an empty input), its arguments as input_json_delta fragments; a block closes
// when the next block starts or the message ends. `c.calls_sent`: calls started.
void write_tool_pieces(ChoiceState& c, const StreamState& s,
                       const std::vector<canonical::ToolCallDelta>& pieces, std::string& out) {
    for (const canonical::ToolCallDelta& piece : pieces) {
        const size_t at = static_cast<size_t>(std::max(piece.index, 0));
        if (at >= c.calls_sent) {
            close_text_block(c, out);
            close_thinking_block(c, out);
            close_tool_block(c, out);  // the previous call's
            c.calls_sent = at + 1;
            c.tool_block = c.blocks++;
            start_block(c.tool_block, "tool_use", out, [&](json::Writer& w) {
                wire::key(w, "id");
                wire::string(w, piece.id.empty() ? wire::tool_use_id(s.id, at) : piece.id);
                wire::key(w, "name");
                wire::string(w, piece.name);
                wire::key(w, "input");
                w.StartObject();
                w.EndObject();
            });
        }
        if (piece.arguments.empty() || c.tool_block < 0) {
            continue;
        }
        write_delta(c.tool_block, "input_json_delta", "partial_json", piece.arguments, out);
    }
}

void write_tail(StreamState& s, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.blocks == 0) {
        open_text_block(c, out);  // an answer without content still has its (empty) text block
    }
    close_thinking_block(c, out);
    close_text_block(c, out);
    close_tool_block(c, out);
    {
        const FinishReason* finish = c.held_finish ? &*c.held_finish : nullptr;
        // A stream that ended without a finish says null rather than inventing one.
        const std::string_view reason = wire::stop_reason(finish);
        Event ev("message_delta", out);
        json::Writer& w = ev.w();
        w.StartObject();
        write_type(w, "message_delta");
        wire::key(w, "delta");
        w.StartObject();
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
        w.EndObject();
        wire::key(w, "usage");
        w.StartObject();
        if (c.prompt_tokens && static_cast<size_t>(*c.prompt_tokens) != c.sent) {
            const int64_t cached = c.cached_tokens.value_or(0);
            wire::key(w, "input_tokens");
            w.Int64(*c.prompt_tokens >= cached ? *c.prompt_tokens - cached : *c.prompt_tokens);
        }
        wire::key(w, "output_tokens");
        w.Int64(c.completion_tokens);
        w.EndObject();
        w.EndObject();
    }
    {
        Event ev("message_stop", out);
        ev.w().StartObject();
        write_type(ev.w(), "message_stop");
        ev.w().EndObject();
    }
    c.finished = true;
    c.held_finish.reset();
    s.ended = true;
}

void take_counts(ChoiceState& c, const canonical::Usage& u) {
    if (u.completion_tokens) {
        c.completion_tokens = *u.completion_tokens;
        c.tokens_exact = true;
    }
    if (u.prompt_tokens) {
        c.prompt_tokens = u.prompt_tokens;
        c.cached_tokens = u.cached_tokens;
    }
}

void encode_chunk(const AnthropicCodec& codec, const StreamEvent& event, StreamState& s,
                  std::string& out) {
    if (event.index != 0) {
        return;  // one answer per message; the upstream request had n = 1
    }
    ChoiceState& c = s.choice(0);
    const bool finishing = event.finish && event.finish->kind != FinishKind::none;
    const bool carried = event.carried.from == Dialect::anthropic && !event.carried.empty();
    if (!c.role_sent && !event.usage.prompt_tokens && event.text.empty() && !finishing &&
        !carried && event.tool_calls.empty() && event.reasoning.empty()) {
        // message_start carries input_tokens: it waits for the first event that tells them or
        // brings content (never longer), so that a count the backend gives before its first
        // token (continuous usage, a llama.cpp or Anthropic backend) is not written as 0.
        take_counts(c, event.usage);
        return;
    }
    ensure_start(s, event.usage, out);
    take_counts(c, event.usage);
    if (carried) {
        write_carried_block(c, event.carried, out);
    }
    if (!event.reasoning.empty()) {
        if (!event.usage.completion_tokens) {
            ++c.completion_tokens;
        }
        s.content_seen = true;
        write_thinking(c, event.reasoning, out);
    }
    if (!event.tool_calls.empty()) {
        if (!event.usage.completion_tokens) {
            ++c.completion_tokens;
        }
        s.content_seen = true;
        write_tool_pieces(c, s, event.tool_calls, out);
    }
    if (!event.text.empty()) {
        if (!event.usage.completion_tokens) {
            ++c.completion_tokens;  // one chunk is roughly one token until a real count comes
        }
        s.content_seen = true;
        if (c.text_block < 0) {
            close_thinking_block(c, out);
            close_tool_block(c, out);
            open_text_block(c, out);  // text after another block gets a block of its own
        }
        write_delta(c.text_block, "text_delta", "text", event.text, out);
    }
    if (event.finish && event.finish->kind != FinishKind::none && !c.held_finish) {
        if (event.finish->kind == FinishKind::abort) {
            Error e = wire::upstream_error(event.finish->message.empty()
                                               ? "the backend aborted the generation"
                                               : event.finish->message);
            codec.encode_stream_error(e, s, out);
            return;
        }
        // message_delta is where clients read output_tokens, and a running count on the finish
        // chunk may still lack the last (EOS) token that the upstream's final usage counts: the
        // tail waits for that usage report or the end of the stream, which follow at once.
        c.held_finish = *event.finish;
    }
}

void encode_usage(const StreamEvent& event, StreamState& s, std::string& out) {
    s.usage = event.usage;
    s.usage_final = true;
    ensure_start(s, event.usage, out);
    take_counts(s.choice(0), event.usage);
    if (s.choice(0).held_finish) {
        write_tail(s, out);
    }
}

}  // namespace

void AnthropicCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                         std::string& out) const {
    if (state.ended) {
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk:
            encode_chunk(*this, event, state, out);
            break;
        case StreamEvent::Type::usage:
            encode_usage(event, state, out);
            break;
        case StreamEvent::Type::done:
            break;  // encode_stream_end writes the tail once
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            break;
        case StreamEvent::Type::keepalive:
            if (!state.choice(0).role_sent) {
                // Before message_start (which waits for the input count) a comment keeps the
                // connection busy just as well: SSE clients skip it.
                framing::write_sse_comment(event.text, out);
                break;
            }
            // Anthropic's own keep-alive, after message_start and the first block's start as
            // the API sends it.
            if (state.choice(0).blocks == 0) {
                open_text_block(state.choice(0), out);
            }
            framing::write_sse_event("ping", R"({"type": "ping"})", out);
            break;
    }
}

void AnthropicCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    ensure_start(state, {}, out);
    write_tail(state, out);
}

void AnthropicCodec::encode_stream_error(const Error& error, StreamState& state,
                                         std::string& out) const {
    if (state.ended) {
        return;
    }
    // Anthropic ends a failed stream with the error event alone: no message_stop follows.
    out.append("event: error\ndata: ");
    encode_error(error, out);
    out.append("\n\n");
    state.ended = true;
}

}  // namespace infergate::translators::anthropic
