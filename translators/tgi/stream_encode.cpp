// TGI /generate_stream for TGI clients (api-dialects §5.5): SSE `data:{...}` (no space after the
// colon), one event per generated token with a DELTA in token.text, the last one also carrying
// the whole generated_text and (with parameters.details) the finish reason and counts.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;

void begin_data(std::string& out) {
    out.append("data:");
}  // axum writes no space (§5.5)
void end_data(std::string& out) {
    out.append("\n\n");
}

// One StreamResponse: one token. Its id is the backend's when it sent one, else 0 (TGI's client
// types require an integer); logprob is null (TGI's client types allow it). `final_finish`
// makes it the last event: generated_text = the whole text, and details when the client asked
// for them.
void write_event(const StreamState& s, const ChoiceState& c, int64_t index, int64_t id,
                 std::string_view text, bool special, const FinishReason* final_finish,
                 std::string& out) {
    // The token's logprob entry, when the backend gave one (held with the token: c.logprobs).
    const canonical::TokenLogprob* entry = c.logprobs.empty() ? nullptr : &c.logprobs.back();
    begin_data(out);
    {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::key(w, "index");
        w.Int64(index);
        wire::key(w, "token");
        canonical::TokenAlternative tok;
        if (entry != nullptr) {
            tok = *entry;
        }
        tok.id = id != 0 || !tok.id ? id : *tok.id;
        tok.token = std::string(text);
        tok.special = entry != nullptr && entry->special ? *entry->special : special;
        wire::token(w, tok);
        // TGI writes top_tokens only when not empty (router/src/lib.rs StreamResponse).
        const size_t top = s.top_logprobs;
        if (top > 0 && entry != nullptr && !entry->top.empty()) {
            wire::key(w, "top_tokens");
            w.StartArray();
            for (size_t i = 0; i < std::min(top, entry->top.size()); ++i) {
                wire::token(w, entry->top[i]);
            }
            w.EndArray();
        }
        wire::key(w, "generated_text");
        if (final_finish != nullptr) {
            wire::string(w, c.text);
        } else {
            w.Null();
        }
        wire::key(w, "details");
        if (final_finish != nullptr && s.include_usage) {
            w.StartObject();
            wire::key(w, "finish_reason");
            wire::string(w, wire::finish_name(*final_finish));
            wire::key(w, "generated_tokens");
            w.Int64(c.completion_tokens);
            wire::key(w, "seed");
            w.Null();  // the stream state does not know the seed
            const std::optional<int64_t> input =
                c.prompt_tokens ? c.prompt_tokens : s.usage.prompt_tokens;
            if (input) {
                wire::key(w, "input_length");
                w.Int64(*input);
            }
            w.EndObject();
        } else {
            w.Null();
        }
        w.EndObject();
    }
    end_data(out);
}

// The held token event goes out as an ordinary one: another token followed it.
void write_held(const StreamState& s, ChoiceState& c, std::string& out) {
    if (!c.held_token_index) {
        return;
    }
    const std::string_view text = std::string_view(c.text).substr(std::min(c.sent, c.text.size()));
    write_event(s, c, *c.held_token_index, c.held_token_id.value_or(0), text, text.empty(), nullptr,
                out);
    c.logprobs.clear();
    c.sent = c.text.size();
    c.held_token_index.reset();
    c.held_token_id.reset();
}

// The last event: TGI's last token event, which also carries generated_text (and details). It
// is the held token when there is one (the text not yet sent rides on it); when the last token
// already went out as an ordinary event (a backend that reports the finish after its last
// token, without ids or a count that says so), one empty special token stands in for the
// finish, as TGI's own last event is the (special, skipped) EOS token.
void write_final(const StreamState& s, ChoiceState& c, const FinishReason& finish,
                 std::string& out) {
    const std::string_view tail = std::string_view(c.text).substr(std::min(c.sent, c.text.size()));
    const int64_t index = c.held_token_index.value_or(c.completion_tokens + 1);
    write_event(s, c, index, c.held_token_id.value_or(0), tail, tail.empty(), &finish, out);
    c.logprobs.clear();
    c.sent = c.text.size();
    c.finished = true;
    c.held_finish.reset();
    c.held_token_index.reset();
    c.held_token_id.reset();
}

void flush_held(StreamState& s, std::string& out) {
    for (ChoiceState& c : s.choices) {
        if (c.held_finish && !c.finished) {
            const FinishReason f = *c.held_finish;
            write_final(s, c, f, out);
        } else if (!c.finished) {
            write_held(s, c, out);  // no finish came: the held token was an ordinary one
        }
        c.held_finish.reset();
    }
}

// TGI streams exactly one event per generated token, the last one carrying generated_text. A
// token whose text is empty (EOS, other special tokens, a stop-string prefix held back) and a
// token that reaches the budget may be the last: such an event is held until the next token or
// the finish, which follows at once; no text waits for it.
void encode_chunk(const StreamEvent& event, StreamState& s, std::string& out) {
    if (event.index != 0) {
        return;  // TGI has one sequence per request; the exchange never asks for more
    }
    ChoiceState& c = s.choice(0);
    if (c.finished) {
        return;
    }
    // A chunk of several tokens whose entries spell its text exactly goes out as one event per
    // token, each with its own entry, as TGI streams them (a backend may send several tokens
    // per chunk: SGLang's stream_interval, vLLM under load). Without entries that spell it, the
    // text cannot be cut into tokens faithfully and goes out as one event.
    if (event.logprobs.size() > 1 &&
        (event.token_ids.empty() || event.token_ids.size() == event.logprobs.size())) {
        size_t length = 0;
        for (const canonical::TokenLogprob& e : event.logprobs) {
            length += e.token.size();
        }
        bool spelled = length == event.text.size();
        for (size_t i = 0, at = 0; spelled && i < event.logprobs.size(); ++i) {
            const std::string& t = event.logprobs[i].token;
            spelled = event.text.compare(at, t.size(), t) == 0;
            at += t.size();
        }
        if (spelled) {
            const size_t n = event.logprobs.size();
            for (size_t i = 0; i < n; ++i) {
                StreamEvent part;
                part.index = event.index;
                part.text = event.logprobs[i].token;
                part.logprobs.push_back(event.logprobs[i]);
                if (!event.token_ids.empty()) {
                    part.token_ids.push_back(event.token_ids[i]);
                }
                if (i + 1 == n) {  // the chunk's counts and finish belong after its last token
                    part.usage = event.usage;
                    part.finish = event.finish;
                }
                encode_chunk(part, s, out);
            }
            return;
        }
    }
    const bool counted_more =
        event.usage.completion_tokens && *event.usage.completion_tokens > c.completion_tokens;
    const bool token = !event.text.empty() || !event.token_ids.empty() || counted_more;
    if (token) {
        write_held(s, c, out);  // it was not the last
    }
    if (!event.logprobs.empty()) {
        // One event per token: a chunk whose entries do not spell its text goes out as one
        // event, with the last entry.
        c.logprobs.assign(1, event.logprobs.back());
    }
    c.text.append(event.text);
    if (event.usage.completion_tokens) {
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    } else if (token) {
        // A delta upstream without counts: its ids, else one chunk ~ one token.
        c.completion_tokens += std::max<int64_t>(1, static_cast<int64_t>(event.token_ids.size()));
        c.tokens_exact = false;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    if (!event.text.empty()) {
        s.content_seen = true;
    }
    const bool finishing = event.finish && event.finish->kind != FinishKind::none;
    const bool at_budget = s.max_tokens && c.completion_tokens >= *s.max_tokens;
    if (token && (finishing || event.text.empty() || at_budget)) {
        // When the running count jumped by k, the text is k tokens' text, which cannot be split
        // back into tokens faithfully: it goes out as one token event.
        c.held_token_index = c.completion_tokens;
        if (!event.token_ids.empty()) {
            c.held_token_id = event.token_ids.back();
        }
    } else if (token) {
        write_event(s, c, c.completion_tokens, event.token_ids.empty() ? 0 : event.token_ids.back(),
                    std::string_view(c.text).substr(c.sent), false, nullptr, out);
        c.logprobs.clear();
        c.sent = c.text.size();
    }
    if (finishing) {
        if (s.include_usage && !c.tokens_exact) {
            // The client reads generated_tokens from the last event: hold it (with its text)
            // until the upstream's usage report or the end of the stream.
            c.held_finish = *event.finish;
            return;
        }
        write_final(s, c, *event.finish, out);
    }
}

void encode_usage(const StreamEvent& event, StreamState& s, std::string& out) {
    s.usage = event.usage;
    s.usage_final = true;
    ChoiceState& c = s.choice(0);
    if (event.usage.completion_tokens) {
        if (*event.usage.completion_tokens > c.completion_tokens && c.held_finish &&
            !c.held_token_index) {
            // The backend counted a last token it sent no text for (EOS): the final event is
            // that token.
            c.held_token_index = *event.usage.completion_tokens;
        }
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    flush_held(s, out);
}

}  // namespace

void TgiCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                   std::string& out) const {
    if (state.ended) {
        return;
    }
    if (state.prompt_logprob_start) {
        // decoder_input_details on /generate_stream: TGI answers the stream with this in-band
        // error and nothing else (server.rs generate_stream_internal, PrefillDetailsStream).
        encode_stream_error(wire::error_from(422,
                                             "`decoder_input_details` == true is not supported "
                                             "when streaming tokens",
                                             "validation"),
                            state, out);
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk:
            if (event.finish && event.finish->kind == FinishKind::abort) {
                // TGI has no abort reason: its streams end such a generation with an error.
                StreamEvent text_only = event;
                text_only.finish.reset();
                encode_chunk(text_only, state, out);
                Error e =
                    wire::error_from(500,
                                     event.finish->message.empty() ? "the generation was aborted"
                                                                   : event.finish->message,
                                     "generation");
                encode_stream_error(e, state, out);
                return;
            }
            encode_chunk(event, state, out);
            break;
        case StreamEvent::Type::usage:
            encode_usage(event, state, out);
            break;
        case StreamEvent::Type::done:
            flush_held(state, out);
            break;  // no usage will follow
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            break;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);
            break;
    }
}

void TgiCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    flush_held(state, out);  // TGI has no terminator: the connection just closes
    state.ended = true;
}

void TgiCodec::encode_stream_error(const Error& error, StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    flush_held(state, out);
    begin_data(out);
    encode_error(error, out);
    end_data(out);
    state.ended = true;
}

}  // namespace infergate::translators::tgi
