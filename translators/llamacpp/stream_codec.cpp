// llama.cpp /completion streams (api-dialects §7.5): SSE `data: {...}` events with DELTA
// `content` and `"stop": false`, ended by one full object with `"stop": true` per prompt; there
// is no [DONE]. In-band errors are `data: {"error": {...}}`.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;

// An upstream "index" beyond this is treated as garbage rather than trusted to size the state.
constexpr int64_t kMaxChoices = 16384;

// ---- client side -----------------------------------------------------------------------------

void write_counts(json::Writer& w, const ChoiceState& c, bool final_event) {
    // Partial events carry counts only once they are the upstream's; the final event always
    // carries tokens_predicted (llama.cpp clients read it there).
    if (c.tokens_exact || final_event) {
        wire::key(w, "tokens_predicted");
        w.Int64(c.completion_tokens);
    }
    if (c.prompt_tokens) {
        wire::key(w, "tokens_evaluated");
        w.Int64(*c.prompt_tokens);
    }
}

// A partial event: its text and, as llama.cpp streams them, the ids of its tokens (left out
// when the backend sent none). A llama.cpp backend's own members (id_slot) are carried.
void write_partial(size_t i, const ChoiceState& c, const StreamEvent& event, const StreamState& s,
                   std::string& out) {
    framing::begin_sse_data(out);
    {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::key(w, "index");
        w.Uint64(i);
        wire::key(w, "content");
        wire::string(w, event.text);
        if (!event.token_ids.empty()) {
            wire::write_tokens(w, event.token_ids);
        }
        wire::key(w, "stop");
        w.Bool(false);
        if (const canonical::Carried* carried = wire::own(event.carried)) {
            json::write_carried(w, carried->members);
        }
        write_counts(w, c, false);
        if (s.logprobs && !event.logprobs.empty()) {
            wire::write_probs(w, event.logprobs, s.post_sampling_probs, s.top_logprobs);
        }
        w.EndObject();
    }
    framing::end_sse_data(out);
}

// The final event. A llama.cpp backend's own members (id_slot, generation_settings, prompt,
// truncated, tokens_cached, its timings, ...) are carried; for other backends they are left out
// (no llama.cpp client needs them) and the timings are what the proxy measured.
void write_final(const StreamState& s, size_t i, const FinishReason& finish, std::string& out,
                 const canonical::Carried* carried = nullptr) {
    const ChoiceState& c = s.choices[i];
    framing::begin_sse_data(out);
    {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::key(w, "index");
        w.Uint64(i);
        wire::key(w, "content");  // everything went out already, as current builds do
        w.String("");
        wire::write_tokens(w, {});  // so do the ids
        wire::key(w, "stop");
        w.Bool(true);
        wire::key(w, "model");
        wire::string(w, s.model);
        write_counts(w, c, true);
        const wire::StopInfo stop = wire::stop_info(finish);
        wire::key(w, "stop_type");
        wire::string(w, stop.stop_type);
        wire::key(w, "stopping_word");
        wire::string(w, stop.stopping_word);
        if (carried != nullptr) {
            json::write_carried(w, carried->members);
        }
        if (carried == nullptr || carried->find("timings") == nullptr) {
            wire::write_timings(w, c.cached_tokens, c.prompt_tokens, c.completion_tokens, s.timing);
        }
        w.EndObject();
    }
    framing::end_sse_data(out);
}

void flush_held(StreamState& s, std::string& out) {
    for (size_t i = 0; i < s.choices.size(); ++i) {
        ChoiceState& c = s.choices[i];
        if (c.held_finish && !c.finished) {
            write_final(s, i, *c.held_finish, out);
            c.finished = true;
        }
        c.held_finish.reset();
    }
}

void encode_chunk(const StreamEvent& event, StreamState& s, std::string& out) {
    const size_t i = event.index > 0 ? static_cast<size_t>(event.index) : 0;
    ChoiceState& c = s.choice(static_cast<int>(i));
    if (c.finished) {
        return;
    }
    if (event.usage.completion_tokens) {
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    } else if (!event.text.empty()) {
        ++c.completion_tokens;  // about one token per chunk until the upstream says
        c.tokens_exact = false;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    if (event.usage.cached_tokens) {
        c.cached_tokens = event.usage.cached_tokens;
    }
    if (!event.text.empty()) {
        c.text.append(event.text);
        s.content_seen = true;
    }
    // llama.cpp streams every token, one whose text is empty (EOS, a stop string held back)
    // included; without ids, an empty chunk is no token.
    const bool finishing = event.finish && event.finish->kind != FinishKind::none;
    if (!event.text.empty() || !event.token_ids.empty() || !event.logprobs.empty()) {
        write_partial(i, c, event, s, out);
    }
    if (finishing) {
        if (c.tokens_exact) {
            write_final(s, i, *event.finish, out, wire::own(event.carried));
            c.finished = true;
            c.held_finish.reset();
        } else {
            // The final event is where clients read token counts: hold it until the upstream's
            // usage report (or the end of the stream).
            c.held_finish = *event.finish;
        }
    }
}

void encode_usage(const StreamEvent& event, StreamState& s, std::string& out) {
    s.usage = event.usage;
    s.usage_final = true;
    const canonical::Usage& u = event.usage;
    if (s.choices.size() <= 1) {
        ChoiceState& c = s.choice(0);
        if (u.completion_tokens) {
            c.completion_tokens = *u.completion_tokens;
            c.tokens_exact = true;
        }
        c.prompt_tokens = u.prompt_tokens ? u.prompt_tokens : c.prompt_tokens;
        c.cached_tokens = u.cached_tokens ? u.cached_tokens : c.cached_tokens;
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

// {"error": {"code", "message", "type"}} after the stream started.
Error read_stream_error(const json::Value& error) {
    Error e;
    e.status = 500;
    e.type = "upstream_error";
    const json::Value* message = error.IsObject() ? json::find(error, "message") : &error;
    if (message != nullptr && message->IsString()) {
        e.message = std::string(json::view(*message));
    } else {
        e.message = "the llama.cpp backend reported an error: " + json::to_string(error);
    }
    if (const json::Value* code = json::find(error, "code");
        code != nullptr && code->IsInt() && code->GetInt() >= 400 && code->GetInt() <= 599) {
        e.status = code->GetInt();
    }
    if (const json::Value* t = json::find(error, "type"); t != nullptr && t->IsString()) {
        e.type = std::string(json::view(*t));
    }
    return e;
}

}  // namespace

// ---- client side -----------------------------------------------------------------------------

void LlamacppCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                        std::string& out) const {
    if (state.ended) {
        return;
    }
    switch (event.type) {
        case StreamEvent::Type::chunk: encode_chunk(event, state, out); break;
        case StreamEvent::Type::usage: encode_usage(event, state, out); break;
        case StreamEvent::Type::done: break;  // encode_stream_end writes what is still due
        case StreamEvent::Type::error: encode_stream_error(event.error, state, out); break;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);
            break;
    }
}

void LlamacppCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    flush_held(state, out);
    // A llama.cpp client reads until an event with "stop": true; every choice gets one, with
    // stop_type "none" when the upstream never said why it ended.
    state.choice(0);
    for (size_t i = 0; i < state.choices.size(); ++i) {
        if (!state.choices[i].finished) {
            write_final(state, i, FinishReason{}, out);
            state.choices[i].finished = true;
        }
    }
    state.ended = true;  // no terminator on the native route
}

void LlamacppCodec::encode_stream_error(const Error& error, StreamState& state,
                                        std::string& out) const {
    if (state.ended) {
        return;
    }
    framing::begin_sse_data(out);
    {
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        wire::key(w, "error");
        wire::error_object(w, error);
        w.EndObject();
    }
    framing::end_sse_data(out);
    state.ended = true;
}

// ---- upstream side ---------------------------------------------------------------------------

void LlamacppCodec::decode_stream_event(std::string_view data, StreamState& state,
                                        std::vector<StreamEvent>& out) const {
    json::Document doc;
    if (auto e =
            json::parse(data, doc, "llama.cpp stream event", canonical::exact_numbers(state))) {
        out.push_back(error_event(wire::upstream_error(e->message)));
        return;
    }
    if (!doc.IsObject()) {
        out.push_back(error_event(wire::upstream_error(
            "a stream event is " + std::string(json::type_name(doc)) + ", not an object")));
        return;
    }
    if (const json::Value* err = json::find(doc, "error")) {
        out.push_back(error_event(read_stream_error(*err)));
        return;
    }
    int64_t index = 0;
    if (const json::Value* i = json::find(doc, "index"); i != nullptr && !i->IsNull()) {
        if (!i->IsInt64() || i->GetInt64() < 0 || i->GetInt64() >= kMaxChoices) {
            out.push_back(error_event(
                wire::upstream_error("'index' is " + json::to_string(*i) +
                                     ", not a choice index")));
            return;
        }
        index = i->GetInt64();
    }
    const json::Value* content = json::find(doc, "content");
    if (content != nullptr && !content->IsNull() && !content->IsString()) {
        out.push_back(error_event(wire::upstream_error("'content' is " +
                                                       std::string(json::type_name(*content)) +
                                                       ", not a string")));
        return;
    }
    const json::Value* stop = json::find(doc, "stop");
    if (stop != nullptr && !stop->IsNull() && !stop->IsBool()) {
        out.push_back(error_event(wire::upstream_error(
            "'stop' is " + std::string(json::type_name(*stop)) + ", not a boolean")));
        return;
    }
    const bool is_final = stop != nullptr && stop->IsBool() && stop->GetBool();

    StreamEvent ev;
    ev.type = StreamEvent::Type::chunk;
    ev.index = static_cast<int>(index);
    if (auto e = wire::read_counts(doc, ev.usage)) {
        out.push_back(error_event(wire::upstream_error(*e)));
        return;
    }
    if (auto e = wire::read_tokens(doc, ev.token_ids)) {
        out.push_back(error_event(wire::upstream_error(*e)));
        return;
    }
    if (auto e = wire::read_probs(doc, ev.logprobs)) {
        out.push_back(error_event(wire::upstream_error(*e)));
        return;
    }
    if (state.client == Dialect::llamacpp) {
        wire::carry(doc, ev.carried);
    }
    ChoiceState& c = state.choice(ev.index);
    if (c.finished) {
        return;  // one finish per choice; anything after it is noise
    }
    std::string_view text =
        content != nullptr && content->IsString() ? json::view(*content) : std::string_view{};
    // Older builds repeated the whole text in the final event (api-dialects §12).
    if (is_final && !c.text.empty() && text == c.text) {
        text = {};
    }
    ev.text = std::string(text);
    c.text.append(text);
    if (ev.usage.completion_tokens) {
        c.completion_tokens = *ev.usage.completion_tokens;
        c.tokens_exact = true;
    } else if (!text.empty()) {
        ++c.completion_tokens;
    }
    if (is_final) {
        FinishReason finish;
        std::optional<int64_t> n_predict = state.max_tokens;
        if (const json::Value* gs = json::find(doc, "generation_settings"); gs != nullptr) {
            if (const json::Value* np = json::find(*gs, "n_predict");
                np != nullptr && np->IsInt64() && np->GetInt64() >= 0) {
                n_predict = np->GetInt64();
            }
        }
        if (auto e = wire::read_finish(doc, n_predict, finish)) {
            out.push_back(error_event(wire::upstream_error(*e)));
            return;
        }
        ev.finish = std::move(finish);
        c.finished = true;
    }
    out.push_back(std::move(ev));
    if (is_final && !state.batch) {
        // No terminator on the native route: the final event of a single prompt ends it. A batch
        // ends when the upstream closes the connection (the prompt count is not in the state).
        StreamEvent done;
        done.type = StreamEvent::Type::done;
        out.push_back(std::move(done));
    }
}

}  // namespace infergate::translators::llamacpp
