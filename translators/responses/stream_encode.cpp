// Responses API streams, client side: SSE with named events, each {"type": <its name>,
// "sequence_number", ...} (api reference "Streaming events"):
//   response.created, response.in_progress
//   per output item, in the order the answer makes them:
//     reasoning      output_item.added, content_part.added (reasoning_text),
//                    reasoning_text.delta*, reasoning_text.done, content_part.done,
//                    output_item.done
//     message        output_item.added, content_part.added (output_text),
//                    output_text.delta*, output_text.done, content_part.done, output_item.done
//     function_call  output_item.added, function_call_arguments.delta*,
//                    function_call_arguments.done, output_item.done
//   response.completed | response.incomplete (the token budget, a content filter) |
//   response.failed (after an `error` event)
// No [DONE]: the final response event ends the stream. Only choice 0 (the API has one answer).

#include "translators/canonical/accumulate.hpp"
#include "translators/framing/framing.hpp"
#include "translators/responses/codec_impl.hpp"

namespace infergate::translators::responses {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;

// State use (choice 0 of the client-side StreamState):
//   role_sent          response.created and response.in_progress went out
//   blocks             output items started (the next one's output_index)
//   text_block, thinking_block, tool_block
//                      output_index of the open message, reasoning or function_call item
//   item_text          the open message's or reasoning item's text so far
//   calls, calls_sent  tool calls assembled from their pieces; calls opened as items
//   completion_tokens, prompt_tokens, cached_tokens: running counts (exact once tokens_exact)
//   held_finish        the finish, held until the usage report or the end of the stream

// `event: <type>\ndata: {"type": <type>, "sequence_number": n, <fields>}\n\n`.
template <class Fields>
void emit(std::string_view type, canonical::StreamState& s, std::string& out, Fields fields) {
    out.append("event: ").append(type).append("\ndata: ");
    {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, type);
        wire::key(w, "sequence_number");
        w.Int64(s.sequence++);
        fields(w);
        w.EndObject();
    }
    out.append("\n\n");
}

const canonical::GenerationRequest::Responses& echo_of(const canonical::StreamState& s) {
    static const canonical::GenerationRequest::Responses none;
    return s.responses != nullptr ? *s.responses : none;
}

canonical::Usage usage_of(const canonical::StreamState& s) {
    const ChoiceState* c = s.choices.empty() ? nullptr : &s.choices.front();
    canonical::Usage u = s.usage_final ? s.usage : canonical::Usage{};
    if (c != nullptr) {
        if (!u.completion_tokens) {
            u.completion_tokens = c->completion_tokens;
        }
        if (!u.prompt_tokens) {
            u.prompt_tokens = c->prompt_tokens.value_or(0);
            u.cached_tokens = c->cached_tokens;
        }
    }
    return u;
}

// {"response": {...}} for the lifecycle events.
void write_response_member(json::Writer& w, const canonical::StreamState& s,
                           const wire::Status& status, bool final, const canonical::Error* error) {
    wire::key(w, "response");
    w.StartObject();
    wire::ResponseHead head;
    head.id = s.id;
    head.created = s.created;
    head.model = s.model;
    head.status = status;
    std::string output;
    if (final) {
        output = "[" + s.output_items + "]";
        head.output_json = output;
    }
    const canonical::Usage usage = usage_of(s);
    head.usage = final ? &usage : nullptr;
    head.error = error;
    wire::write_response(w, head, echo_of(s));
    w.EndObject();
}

void ensure_start(canonical::StreamState& s, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.role_sent) {
        return;
    }
    c.role_sent = true;
    wire::Status in_progress;
    in_progress.status = "in_progress";
    for (std::string_view type : {"response.created", "response.in_progress"}) {
        emit(type, s, out,
             [&](json::Writer& w) { write_response_member(w, s, in_progress, false, nullptr); });
    }
}

// The item's place and id members of the events about it.
void item_ref(json::Writer& w, std::string_view id, int index) {
    wire::key(w, "item_id");
    wire::string(w, id);
    wire::key(w, "output_index");
    w.Int(index);
}

void add_done_item(canonical::StreamState& s, const std::string& json) {
    if (!s.output_items.empty()) {
        s.output_items += ',';
    }
    s.output_items += json;
}

template <class WriteItem>
void item_done(canonical::StreamState& s, int index, std::string& out, WriteItem write_item) {
    std::string item;
    json::StringOut os{&item};
    json::Writer iw(os);
    write_item(iw);
    emit("response.output_item.done", s, out, [&](json::Writer& w) {
        wire::key(w, "output_index");
        w.Int(index);
        wire::key(w, "item");
        json::write_raw(w, item);
    });
    add_done_item(s, item);
}

// A content part event of the open message or reasoning item: {"type": <part_type>, "text"}
// (an output_text part also has its annotations and logprobs).
void part_event(std::string_view type, canonical::StreamState& s, std::string_view id, int index,
                std::string_view part_type, std::string_view text, std::string& out) {
    emit(type, s, out, [&](json::Writer& w) {
        item_ref(w, id, index);
        wire::key(w, "content_index");
        w.Int(0);
        wire::key(w, "part");
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, part_type);
        wire::key(w, "text");
        wire::string(w, text);
        if (part_type == "output_text") {
            wire::key(w, "annotations");
            w.StartArray();
            w.EndArray();
            wire::key(w, "logprobs");
            w.StartArray();
            w.EndArray();
        }
        w.EndObject();
    });
}

void close_message(canonical::StreamState& s, std::string_view item_status, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.text_block < 0) {
        return;
    }
    const int index = c.text_block;
    const std::string id = wire::item_id("msg", s.id, static_cast<size_t>(index));
    emit("response.output_text.done", s, out, [&](json::Writer& w) {
        item_ref(w, id, index);
        wire::key(w, "content_index");
        w.Int(0);
        wire::key(w, "text");
        wire::string(w, c.item_text);
        wire::key(w, "logprobs");
        w.StartArray();
        w.EndArray();
    });
    part_event("response.content_part.done", s, id, index, "output_text", c.item_text, out);
    item_done(s, index, out,
              [&](json::Writer& w) { wire::write_message_item(w, id, c.item_text, item_status); });
    c.text_block = -1;
    c.item_text.clear();
}

void close_reasoning(canonical::StreamState& s, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.thinking_block < 0) {
        return;
    }
    const int index = c.thinking_block;
    const std::string id = wire::item_id("rs", s.id, static_cast<size_t>(index));
    emit("response.reasoning_text.done", s, out, [&](json::Writer& w) {
        item_ref(w, id, index);
        wire::key(w, "content_index");
        w.Int(0);
        wire::key(w, "text");
        wire::string(w, c.item_text);
    });
    part_event("response.content_part.done", s, id, index, "reasoning_text", c.item_text, out);
    item_done(s, index, out,
              [&](json::Writer& w) { wire::write_reasoning_item(w, id, c.item_text); });
    c.thinking_block = -1;
    c.item_text.clear();
}

void close_call(canonical::StreamState& s, std::string& out,
                std::string_view status = "completed") {
    ChoiceState& c = s.choice(0);
    if (c.tool_block < 0 || c.calls_sent == 0) {
        return;
    }
    const int index = c.tool_block;
    const canonical::ToolCall& call = c.calls[c.calls_sent - 1];
    const std::string id = wire::item_id("fc", s.id, static_cast<size_t>(index));
    const std::string cid = wire::call_id(call, s.id, static_cast<size_t>(index));
    emit("response.function_call_arguments.done", s, out, [&](json::Writer& w) {
        item_ref(w, id, index);
        wire::key(w, "name");
        wire::string(w, call.name);
        wire::key(w, "arguments");
        wire::string(w, call.arguments);
    });
    item_done(s, index, out,
              [&](json::Writer& w) { wire::write_function_call_item(w, id, cid, call, status); });
    c.tool_block = -1;
}

// The items still open, with `item_status` (wire::item_status: "incomplete" when the answer
// did not complete, so a call cut short is not taken for a whole one).
void close_all(canonical::StreamState& s, std::string_view item_status, std::string& out) {
    close_reasoning(s, out);
    close_message(s, item_status, out);
    close_call(s, out, item_status);
}

void write_reasoning(canonical::StreamState& s, std::string_view text, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.thinking_block < 0) {
        close_message(s, "completed", out);
        close_call(s, out);
        c.thinking_block = c.blocks++;
        const std::string id = wire::item_id("rs", s.id, static_cast<size_t>(c.thinking_block));
        emit("response.output_item.added", s, out, [&](json::Writer& w) {
            wire::key(w, "output_index");
            w.Int(c.thinking_block);
            wire::key(w, "item");
            w.StartObject();
            wire::key(w, "id");
            wire::string(w, id);
            wire::key(w, "type");
            wire::string(w, "reasoning");
            wire::key(w, "summary");
            w.StartArray();
            w.EndArray();
            w.EndObject();
        });
        part_event("response.content_part.added", s, id, c.thinking_block, "reasoning_text", "",
                   out);
    }
    c.item_text.append(text);
    const std::string id = wire::item_id("rs", s.id, static_cast<size_t>(c.thinking_block));
    emit("response.reasoning_text.delta", s, out, [&](json::Writer& w) {
        item_ref(w, id, c.thinking_block);
        wire::key(w, "content_index");
        w.Int(0);
        wire::key(w, "delta");
        wire::string(w, text);
    });
}

void open_message(canonical::StreamState& s, std::string& out) {
    ChoiceState& c = s.choice(0);
    close_reasoning(s, out);
    close_call(s, out);
    c.text_block = c.blocks++;
    const std::string id = wire::item_id("msg", s.id, static_cast<size_t>(c.text_block));
    emit("response.output_item.added", s, out, [&](json::Writer& w) {
        wire::key(w, "output_index");
        w.Int(c.text_block);
        wire::key(w, "item");
        w.StartObject();
        wire::key(w, "id");
        wire::string(w, id);
        wire::key(w, "type");
        wire::string(w, "message");
        wire::key(w, "status");
        wire::string(w, "in_progress");
        wire::key(w, "role");
        wire::string(w, "assistant");
        wire::key(w, "content");
        w.StartArray();
        w.EndArray();
        w.EndObject();
    });
    part_event("response.content_part.added", s, id, c.text_block, "output_text", "", out);
}

void write_text(canonical::StreamState& s, std::string_view text, std::string& out) {
    ChoiceState& c = s.choice(0);
    if (c.text_block < 0) {
        open_message(s, out);
    }
    c.item_text.append(text);
    const std::string id = wire::item_id("msg", s.id, static_cast<size_t>(c.text_block));
    emit("response.output_text.delta", s, out, [&](json::Writer& w) {
        item_ref(w, id, c.text_block);
        wire::key(w, "content_index");
        w.Int(0);
        wire::key(w, "delta");
        wire::string(w, text);
        wire::key(w, "logprobs");
        w.StartArray();
        w.EndArray();
    });
}

void write_call_pieces(canonical::StreamState& s,
                       const std::vector<canonical::ToolCallDelta>& pieces, std::string& out) {
    ChoiceState& c = s.choice(0);
    for (const canonical::ToolCallDelta& piece : pieces) {
        canonical::add_tool_call_delta(c.calls, piece);
        const size_t call = static_cast<size_t>(piece.index);
        if (call >= c.calls.size()) {
            continue;  // (a decoder's defect: add_tool_call_delta ignored it)
        }
        if (call + 1 > c.calls_sent) {
            // A new call: its item opens (the one before is done: calls come one after another).
            close_reasoning(s, out);
            close_message(s, "completed", out);
            close_call(s, out);
            c.calls_sent = call + 1;
            c.tool_block = c.blocks++;
            const canonical::ToolCall& tc = c.calls[call];
            const std::string id = wire::item_id("fc", s.id, static_cast<size_t>(c.tool_block));
            const std::string cid = wire::call_id(tc, s.id, static_cast<size_t>(c.tool_block));
            emit("response.output_item.added", s, out, [&](json::Writer& w) {
                wire::key(w, "output_index");
                w.Int(c.tool_block);
                wire::key(w, "item");
                canonical::ToolCall opened = tc;
                opened.arguments.clear();
                wire::write_function_call_item(w, id, cid, opened, "in_progress");
            });
        } else if (call + 1 < c.calls_sent || c.tool_block < 0) {
            continue;  // a piece of a call already done: the stream's calls do not interleave
        }
        if (!piece.arguments.empty()) {
            const std::string id = wire::item_id("fc", s.id, static_cast<size_t>(c.tool_block));
            emit("response.function_call_arguments.delta", s, out, [&](json::Writer& w) {
                item_ref(w, id, c.tool_block);
                wire::key(w, "delta");
                wire::string(w, piece.arguments);
            });
        }
    }
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

void write_tail(canonical::StreamState& s, std::string& out) {
    ensure_start(s, out);
    ChoiceState& c = s.choice(0);
    const wire::Status status = wire::status_of(c.held_finish ? &*c.held_finish : nullptr);
    if (c.blocks == 0) {
        open_message(s, out);  // an answer without content still has its (empty) message
    }
    close_all(s, wire::item_status(status), out);
    const std::string_view type =
        status.status == "incomplete" ? "response.incomplete" : "response.completed";
    emit(type, s, out,
         [&](json::Writer& w) { write_response_member(w, s, status, true, nullptr); });
    c.finished = true;
    c.held_finish.reset();
    s.ended = true;
}

}  // namespace

void ResponsesCodec::init_client_stream(StreamState& state, const GenerationRequest& req) const {
    state.responses = &req.responses;
}

void ResponsesCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                         std::string& out) const {
    if (state.ended) {
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk: {
            if (event.index != 0) {
                return;  // one answer per response; the upstream request had n = 1
            }
            ChoiceState& c = state.choice(0);
            take_counts(c, event.usage);
            const bool content =
                !event.text.empty() || !event.reasoning.empty() || !event.tool_calls.empty();
            if (content || event.finish) {
                ensure_start(state, out);
            }
            if (content) {
                state.content_seen = true;
                if (!event.usage.completion_tokens) {
                    ++c.completion_tokens;  // one chunk is roughly one token until a count comes
                }
            }
            if (!event.reasoning.empty()) {
                write_reasoning(state, event.reasoning, out);
            }
            // Text before the calls that a chunk starts (a whole call in the line that carries
            // text too, as Ollama streams them): the message comes before the calls, as in the
            // whole answer, so the items the store keeps have the ids the stream gave them. The
            // pieces of a call already open go first, so that it is closed with all its
            // arguments.
            const bool call_open = c.tool_block >= 0;
            if (call_open && !event.tool_calls.empty()) {
                write_call_pieces(state, event.tool_calls, out);
            }
            if (!event.text.empty()) {
                write_text(state, event.text, out);
            }
            if (!call_open && !event.tool_calls.empty()) {
                write_call_pieces(state, event.tool_calls, out);
            }
            if (event.finish && event.finish->kind != FinishKind::none && !c.held_finish) {
                if (event.finish->kind == FinishKind::abort) {
                    Error e;
                    e.status = 502;
                    e.type = "upstream_error";
                    e.message = event.finish->message.empty() ? "the backend aborted the generation"
                                                              : event.finish->message;
                    encode_stream_error(e, state, out);
                    return;
                }
                // response.completed carries the usage, which the upstream's final report (it
                // follows at once) makes exact.
                c.held_finish = *event.finish;
            }
            break;
        }
        case StreamEvent::Type::usage:
            state.usage = event.usage;
            state.usage_final = true;
            take_counts(state.choice(0), event.usage);
            break;
        case StreamEvent::Type::done:
            break;  // encode_stream_end writes the tail once
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            break;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);  // SSE clients skip comments
            break;
    }
}

void ResponsesCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    write_tail(state, out);
}

void ResponsesCodec::encode_stream_error(const Error& client_error, StreamState& state,
                                         std::string& out) const {
    if (state.ended) {
        return;
    }
    const Error error = wire::in_responses_terms(client_error);
    // The `error` event, then response.failed with the items done so far (the API's own end of
    // a failed stream): a client sees the failure in either.
    ensure_start(state, out);
    emit("error", state, out, [&](json::Writer& w) {
        wire::key(w, "code");
        wire::string(w, wire::error_code(error));
        wire::key(w, "message");
        wire::string(w, error.message);
        wire::key(w, "param");
        if (error.param.empty()) {
            w.Null();
        } else {
            wire::string(w, error.param);
        }
    });
    close_all(state, "incomplete", out);
    wire::Status failed;
    failed.status = "failed";
    emit("response.failed", state, out,
         [&](json::Writer& w) { write_response_member(w, state, failed, true, &error); });
    state.ended = true;
}

}  // namespace infergate::translators::responses
