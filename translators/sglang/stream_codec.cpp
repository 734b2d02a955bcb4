// SGLang /generate streams: SSE `data: {...}` events whose text and completion_tokens are
// CUMULATIVE, ended by `data: [DONE]` (api-dialects §4.6, §10.2). The canonical stream carries
// deltas, so the client side re-accumulates and the upstream side diffs.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/framing/framing.hpp"
#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::ChoiceState;
using canonical::stop_prefix_tail;
using canonical::FinishKind;
using canonical::FinishReason;

constexpr std::string_view kDone = framing::kSseDone;

// An upstream "index" beyond this is treated as garbage rather than trusted to size the state
// (each choice costs memory for the rest of the stream).
constexpr int64_t kMaxChoices = 16384;

// ---- client side -----------------------------------------------------------------------------

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

// ---- upstream side ---------------------------------------------------------------------------

StreamEvent error_event(Error error) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(error);
    return ev;
}

std::optional<int> status_of(const json::Value& obj) {
    for (const std::string_view key : {"code", "status_code"}) {
        const json::Value* v = json::find(obj, key);
        if (v != nullptr && v->IsInt() && v->GetInt() >= 400 && v->GetInt() <= 599) {
            return v->GetInt();
        }
    }
    return std::nullopt;
}

// SGLang's in-band error: {"error": {"message": ...}} (a ValueError after the stream started).
Error read_stream_error(const json::Value& doc, const json::Value& error) {
    Error e = wire::upstream_error({});
    const json::Value* message = error.IsObject() ? json::find(error, "message") : &error;
    if (message != nullptr && message->IsString()) {
        e.message.assign(message->GetString(), message->GetStringLength());
    } else {
        e.message = "the SGLang backend reported an error: " + json::to_string(error);
    }
    std::optional<int> status = error.IsObject() ? status_of(error) : std::nullopt;
    if (!status) {
        status = status_of(doc);
    }
    if (status) {
        e.status = *status;
        if (*status < 500) {
            e.type = *status == 429 ? "rate_limit_error" : "invalid_request_error";
        }
    }
    return e;
}

}  // namespace

// ---- client side -----------------------------------------------------------------------------

void SglangCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                      std::string& out) const {
    if (state.ended) {
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk: encode_chunk(event, state, out); break;
        case StreamEvent::Type::usage: encode_usage(event, state, out); break;
        case StreamEvent::Type::done: break;  // encode_stream_end writes the terminator once
        case StreamEvent::Type::error: encode_stream_error(event.error, state, out); break;
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

// ---- upstream side ---------------------------------------------------------------------------

namespace {

// Whether an SGLang stream carries each event's own text (--incremental-streaming-output) rather
// than the text so far; nullopt while the events seen cannot tell. SGLang sends `output_ids` with
// the text: this event's tokens only in that mode, fewer than meta_info.completion_tokens, and
// all of them otherwise. Without output_ids, text that neither extends nor corrects the text so
// far (a correction keeps most of it: a stop string trimmed off its end, a replacement
// character made whole) is a delta.
std::optional<bool> delta_text_evidence(const json::Value& doc, const json::Value* meta,
                                        std::string_view so_far, std::string_view now) {
    if (so_far.empty()) {
        return std::nullopt;  // a first event reads the same either way
    }
    const json::Value* ids = json::find(doc, "output_ids");
    const json::Value* count =
        meta != nullptr && meta->IsObject() ? json::find(*meta, "completion_tokens") : nullptr;
    if (ids != nullptr && ids->IsArray() && count != nullptr && count->IsInt64()) {
        const auto have = static_cast<int64_t>(ids->Size());
        if (have < count->GetInt64()) {
            return true;
        }
        if (have > 1) {
            return false;
        }
    }
    if (now.starts_with(so_far) || so_far.starts_with(now)) {
        return std::nullopt;
    }
    const size_t common = static_cast<size_t>(
        std::mismatch(so_far.begin(), so_far.end(), now.begin(), now.end()).first - so_far.begin());
    if (common * 2 < std::min(so_far.size(), now.size())) {
        return true;
    }
    return std::nullopt;
}

}  // namespace

void SglangCodec::decode_stream_event(std::string_view data, StreamState& state,
                                      std::vector<StreamEvent>& out) const {
    if (framing::is_done_sentinel(data)) {
        StreamEvent ev;
        ev.type = StreamEvent::Type::done;
        out.push_back(std::move(ev));
        return;
    }
    json::Document doc;
    if (auto err = json::parse(data, doc, "the stream event", canonical::exact_numbers(state))) {
        out.push_back(error_event(
            wire::upstream_error("the SGLang backend sent malformed stream data: " +
                                 err->message)));
        return;
    }
    if (!doc.IsObject()) {
        out.push_back(error_event(wire::upstream_error(
            "the SGLang backend sent malformed stream data: an event that is " +
            std::string(json::type_name(doc)) + ", not an object")));
        return;
    }
    if (const json::Value* error = json::find(doc, "error"); error != nullptr) {
        out.push_back(error_event(read_stream_error(doc, *error)));
        return;
    }

    int64_t index = 0;
    if (const json::Value* v = json::find(doc, "index"); v != nullptr && !v->IsNull()) {
        if (!v->IsInt64() || v->GetInt64() < 0 || v->GetInt64() >= kMaxChoices) {
            out.push_back(error_event(wire::upstream_error(
                "the SGLang backend sent malformed stream data: 'index' is " +
                json::to_string(*v) + ", not a choice index")));
            return;
        }
        index = v->GetInt64();
    }
    const json::Value* text = json::find(doc, "text");
    if (text == nullptr || !text->IsString()) {
        out.push_back(error_event(wire::upstream_error(
            "the SGLang backend sent malformed stream data: an event without a 'text' string "
            "(is it running with --skip-tokenizer-init?)")));
        return;
    }

    StreamEvent ev;
    ev.type = StreamEvent::Type::chunk;
    ev.index = static_cast<int>(index);
    ChoiceState& c = state.choice(ev.index);
    const std::string_view now(text->GetString(), text->GetStringLength());
    const json::Value* meta = json::find(doc, "meta_info");
    if (!state.delta_text) {
        state.delta_text = delta_text_evidence(doc, meta, c.text, now);
    }
    if (state.delta_text.value_or(false)) {
        c.text.append(now);
    } else if (now.size() >= c.text.size() && now.compare(0, c.text.size(), c.text) == 0) {
        c.text.append(now.substr(c.text.size()));
    } else {
        // A trimmed stop string or a detokenizer correction: what went out cannot be taken back
        // in a delta protocol, so send nothing for it and diff later events against the new text.
        c.text.assign(now);
        c.sent = now.size();
    }

    // The ids of this event's tokens: output_ids holds them all so far, or (incremental
    // streaming) this event's own.
    if (const json::Value* ids = json::find(doc, "output_ids"); ids != nullptr && ids->IsArray()) {
        const size_t before = state.delta_text.value_or(false) || !c.tokens_exact
                                  ? 0
                                  : static_cast<size_t>(c.completion_tokens);
        for (rapidjson::SizeType i = static_cast<rapidjson::SizeType>(before); i < ids->Size();
             ++i) {
            if ((*ids)[i].IsInt64()) {
                ev.token_ids.push_back((*ids)[i].GetInt64());
            }
        }
    }
    if (meta != nullptr && meta->IsObject()) {
        if (auto message = wire::read_counts(*meta, ev.usage)) {
            out.push_back(error_event(wire::upstream_error(
                "the SGLang backend sent malformed stream data: " + *message)));
            return;
        }
        if (ev.usage.completion_tokens) {
            c.completion_tokens = *ev.usage.completion_tokens;
            c.tokens_exact = true;
        }
        if (ev.usage.prompt_tokens) {
            c.prompt_tokens = ev.usage.prompt_tokens;
        }
        if (ev.usage.cached_tokens) {
            c.cached_tokens = ev.usage.cached_tokens;
        }
        std::vector<canonical::TokenLogprob> prompt;
        size_t total = 0;
        if (auto message =
                wire::read_logprobs(*meta, c.prompt_logprobs_seen ? nullptr : &prompt, ev.logprobs,
                                    c.logprobs_seen, total, state.delta_text.value_or(false))) {
            out.push_back(error_event(wire::upstream_error(
                "the SGLang backend sent malformed stream data: " + *message)));
            return;
        }
        c.logprobs_seen = total;
        if (!prompt.empty()) {
            ev.prompt_logprobs = std::move(prompt);
            c.prompt_logprobs_seen = true;
        }
        if (const json::Value* id = json::find(*meta, "id");
            id != nullptr && id->IsString() && c.id.empty()) {
            c.id.assign(id->GetString(), id->GetStringLength());
        }
        if (const json::Value* f = json::find(*meta, "finish_reason"); f != nullptr) {
            FinishReason finish;
            if (!wire::read_finish_reason(*f, finish)) {
                out.push_back(error_event(wire::upstream_error(
                    "the SGLang backend sent malformed stream data: meta_info.finish_reason is " +
                    json::to_string(*f))));
                return;
            }
            if (finish.kind != FinishKind::none && !c.finished) {
                ev.finish = std::move(finish);
                c.finished = true;
            }
        }
    }
    // Emit what is certain: everything once finished, else all but a tail that may be the
    // start of a stop string the server will trim (its first byte starts a code point, so the
    // cut never splits one).
    const size_t limit = ev.finish ? c.text.size() : c.text.size() - stop_prefix_tail(c.text, state.stop);
    if (limit > c.sent) {
        ev.text.assign(c.text, c.sent, limit - c.sent);
        c.sent = limit;
    }
    out.push_back(std::move(ev));
}

}  // namespace infergate::translators::sglang
