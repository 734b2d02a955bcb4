// SGLang /generate streams for SGLang clients (api-dialects §4.6, §10.2): SSE `data: {...}` events
// whose text and completion_tokens are CUMULATIVE, ended by `data: [DONE]`; the canonical stream
// carries deltas, so this side re-accumulates them.

#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"
#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;
constexpr std::string_view kDone = framing::kSseDone;

std::string_view event_id(const StreamState& s, size_t i, const ChoiceState& c) {
    if (i < s.request_ids.size()) {
        return s.request_ids[i];  // SGLang echoes the client's rid as meta_info.id
    }
    return c.id.empty() ? std::string_view(s.id) : std::string_view(c.id);
}

// One SGLang event for choice `i`: the whole text so far, meta_info with the running counts and,
// in a batch, the choice's index. These are framing::write_sse_data's bytes, written in place:
// the cumulative text is re-sent on every event, so an extra copy per event would double the
// work on long generations.
void write_event(const StreamState& s, size_t i, const FinishReason* finish, std::string& out) {
    const ChoiceState& c = s.choices[i];
    wire::ensure_room(out, c.text.size() + 200);
    framing::begin_sse_data(out);
    {
        wire::OutWriter w(out);
        w->StartObject();
        wire::key(*w, "text");
        wire::string(*w, c.text);
        wire::key(*w, "meta_info");
        const wire::LogprobOut logprobs{s.logprobs, s.top_logprobs, s.logprob_text,
                                        &c.prompt_logprobs, &c.logprobs};
        wire::meta_info(*w, event_id(s, i, c), finish, c.prompt_tokens, c.completion_tokens,
                        c.cached_tokens, &logprobs);
        if (s.batch) {
            wire::key(*w, "index");
            w->Uint64(i);
        }
        w->EndObject();
    }
    framing::end_sse_data(out);
}

void flush_held(StreamState& s, std::string& out) {
    for (size_t i = 0; i < s.choices.size(); ++i) {
        ChoiceState& c = s.choices[i];
        if (c.held_finish && !c.finished) {
            write_event(s, i, &*c.held_finish, out);
            c.finished = true;
        }
        c.held_finish.reset();
    }
}

void encode_chunk(const StreamEvent& event, StreamState& s, std::string& out) {
    const size_t i = event.index > 0 ? static_cast<size_t>(event.index) : 0;
    ChoiceState& c = s.choice(static_cast<int>(i));
    if (c.finished) {
        return;  // a finish went out: SGLang clients stop reading this choice there
    }
    c.text.append(event.text);
    // SGLang re-sends every logprob entry so far on each event, as it does the text.
    c.logprobs.insert(c.logprobs.end(), event.logprobs.begin(), event.logprobs.end());
    if (!event.prompt_logprobs.empty() && !c.prompt_logprobs_seen) {
        c.prompt_logprobs = event.prompt_logprobs;
        c.prompt_logprobs_seen = true;
    }
    const bool new_entries = !event.logprobs.empty() && s.logprobs;
    if (event.usage.completion_tokens) {
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    } else if (!event.text.empty()) {
        // A delta upstream without running counts: one chunk is roughly one token. SGLang
        // clients read completion_tokens on every event, so an estimate beats nothing, and the
        // final event waits for the real count (see held_finish).
        ++c.completion_tokens;
        c.tokens_exact = false;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    if (event.usage.cached_tokens) {
        c.cached_tokens = event.usage.cached_tokens;
    }
    if (!event.text.empty()) {
        s.content_seen = true;
    }
    if (event.finish && event.finish->kind != FinishKind::none) {
        if (c.tokens_exact) {
            write_event(s, i, &*event.finish, out);
            c.finished = true;
            c.held_finish.reset();
            return;
        }
        // The final event is the one clients take their token counts from; hold it until the
        // upstream's usage report (or the end of the stream) makes them exact.
        c.held_finish = *event.finish;
    }
    if (!event.text.empty() || new_entries) {
        write_event(s, i, nullptr, out);
    }
}

void encode_usage(const StreamEvent& event, StreamState& s, std::string& out) {
    s.usage = event.usage;
    s.usage_final = true;
    const canonical::Usage& u = event.usage;
    if (s.choices.size() == 1) {
        ChoiceState& c = s.choices.front();
        if (u.completion_tokens) {
            c.completion_tokens = *u.completion_tokens;
            c.tokens_exact = true;
        }
        if (u.prompt_tokens) {
            c.prompt_tokens = u.prompt_tokens;
        }
        if (u.cached_tokens) {
            c.cached_tokens = u.cached_tokens;
        }
    } else if (!s.choices.empty() && s.choices.size() <= static_cast<size_t>(s.n)) {
        // Several samples of one prompt: the aggregate's prompt count is every choice's, while
        // the completion total cannot be split, so the per-choice estimates stay.
        for (ChoiceState& c : s.choices) {
            if (!c.prompt_tokens) {
                c.prompt_tokens = u.prompt_tokens;
            }
            if (!c.cached_tokens) {
                c.cached_tokens = u.cached_tokens;
            }
        }
    }
    flush_held(s, out);
}

}  // namespace

void SglangCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                      std::string& out) const {
    if (state.ended) {
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk:
            encode_chunk(event, state, out);
            break;
        case StreamEvent::Type::usage:
            encode_usage(event, state, out);
            break;
        case StreamEvent::Type::done:
            break;  // encode_stream_end writes the terminator once
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            break;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);
            break;
    }
}

void SglangCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    flush_held(state, out);
    out.append(kDone);
    state.ended = true;
}

void SglangCodec::encode_stream_error(const Error& error, StreamState& state,
                                      std::string& out) const {
    if (state.ended) {
        return;
    }
    // Finishes that already happened are facts; send them before the error ends the stream.
    flush_held(state, out);
    framing::begin_sse_data(out);
    encode_error(error, out);
    framing::end_sse_data(out);
    // SGLang itself still sends [DONE] after an in-band error (api-dialects §4.6).
    out.append(kDone);
    state.ended = true;
}

}  // namespace infergate::translators::sglang
