// TGI /generate_stream (api-dialects §5.5): SSE `data:{...}` (no space after the colon), one
// event per generated token with a DELTA in token.text, the last one also carrying the whole
// generated_text and (with parameters.details) the finish reason and counts; no terminator.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/framing/framing.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::ChoiceState;
using canonical::stop_prefix_tail;
using canonical::FinishKind;
using canonical::FinishReason;

// ---- client side -----------------------------------------------------------------------------

void begin_data(std::string& out) { out.append("data:"); }  // axum writes no space (§5.5)
void end_data(std::string& out) { out.append("\n\n"); }

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

// ---- upstream side ---------------------------------------------------------------------------

StreamEvent error_event(Error error) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(error);
    return ev;
}

Error malformed(const std::string& what) {
    return wire::upstream_error("the TGI backend sent malformed stream data: " + what);
}

// HTTP status TGI uses for each error_type (§5.6); in-band errors arrive under a 200.
int status_for(std::string_view type) {
    if (type == "validation" || type == "template_error" ||
        type == "missing_template_variable" || type == "tool_error") {
        return 422;
    }
    if (type == "overloaded") {
        return 429;
    }
    if (type == "generation" || type == "incomplete_generation" ||
        type == "incomplete_generation_stream" || type == "stream_serialization_error") {
        return 500;
    }
    return 502;
}

std::optional<Error> read_final(const json::Value& doc, const json::Value& generated,
                                StreamState& state, StreamEvent& ev) {
    ChoiceState& c = state.choice(0);
    std::string full(json::view(generated));
    FinishReason finish;
    finish.kind = FinishKind::stop;  // no details: TGI ended on its own, the likeliest reason
    const json::Value* d = json::find(doc, "details");
    if (d != nullptr && !d->IsNull()) {
        if (!d->IsObject()) {
            return malformed("'details' is " + std::string(json::type_name(*d)));
        }
        const json::Value* f = json::find(*d, "finish_reason");
        if (f == nullptr || !f->IsString() || !wire::read_finish(json::view(*f), finish)) {
            return malformed("details.finish_reason is " +
                             (f == nullptr ? std::string("missing") : json::to_string(*f)));
        }
        if (json::view(*f) == "stop_sequence") {
            // TGI streamed the stop string and keeps it in generated_text (§10.6): trim it.
            finish.matched_text = wire::trim_stop(full, state.stop);
        }
        for (const auto& [key, target] :
             {std::pair{"generated_tokens", &ev.usage.completion_tokens},
              std::pair{"input_length", &ev.usage.prompt_tokens}}) {
            if (const json::Value* n = json::find(*d, key); n != nullptr && !n->IsNull()) {
                if (!n->IsInt64() || n->GetInt64() < 0) {
                    return malformed(std::string("details.") + key + " is " + json::to_string(*n));
                }
                *target = n->GetInt64();
            }
        }
    }
    if (!ev.usage.completion_tokens) {
        ev.usage.completion_tokens = c.completion_tokens;
    }
    // Prefer the final full text (§10.2); what already went out cannot be taken back, so only
    // a continuation of it is sent.
    if (full.size() >= c.sent && full.compare(0, c.sent, c.text, 0, c.sent) == 0) {
        ev.text = full.substr(c.sent);
    }
    c.text = std::move(full);
    c.sent = c.text.size();
    c.completion_tokens = *ev.usage.completion_tokens;
    c.tokens_exact = true;
    c.prompt_tokens = ev.usage.prompt_tokens;
    c.finished = true;
    ev.finish = std::move(finish);
    return std::nullopt;
}

}  // namespace

// ---- client side -----------------------------------------------------------------------------

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
                Error e = wire::error_from(500, event.finish->message.empty()
                                                    ? "the generation was aborted"
                                                    : event.finish->message,
                                           "generation");
                encode_stream_error(e, state, out);
                return;
            }
            encode_chunk(event, state, out);
            break;
        case StreamEvent::Type::usage: encode_usage(event, state, out); break;
        case StreamEvent::Type::done: flush_held(state, out); break;  // no usage will follow
        case StreamEvent::Type::error: encode_stream_error(event.error, state, out); break;
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

void TgiCodec::encode_stream_error(const Error& error, StreamState& state,
                                   std::string& out) const {
    if (state.ended) {
        return;
    }
    flush_held(state, out);
    begin_data(out);
    encode_error(error, out);
    end_data(out);
    state.ended = true;
}

// ---- upstream side ---------------------------------------------------------------------------

void TgiCodec::decode_stream_event(std::string_view data, StreamState& state,
                                   std::vector<StreamEvent>& out) const {
    while (!data.empty() && (data.back() == ' ' || data.back() == '\r' || data.back() == '\n')) {
        data.remove_suffix(1);
    }
    if (data.empty()) {
        return;
    }
    json::Document doc;
    if (auto err = json::parse(data, doc, "the stream event", canonical::exact_numbers(state))) {
        out.push_back(error_event(malformed(err->message)));
        return;
    }
    if (!doc.IsObject()) {
        const std::string type(json::type_name(doc));
        out.push_back(error_event(malformed("an event that is " + type + ", not an object")));
        return;
    }
    if (const json::Value* e = json::find(doc, "error"); e != nullptr && !e->IsNull()) {
        const json::Value* t = json::find(doc, "error_type");
        const std::string_view type = t != nullptr && t->IsString() ? json::view(*t) : "";
        std::string message = e->IsString() ? std::string(json::view(*e)) : json::to_string(*e);
        out.push_back(error_event(wire::error_from(status_for(type), std::move(message), type)));
        return;
    }
    ChoiceState& c = state.choice(0);
    if (c.finished) {
        return;  // nothing follows TGI's final event; ignore anything that does
    }
    const json::Value* token = json::find(doc, "token");
    const json::Value* generated = json::find(doc, "generated_text");
    const bool final = generated != nullptr && !generated->IsNull();
    if (final && !generated->IsString()) {
        out.push_back(error_event(malformed("'generated_text' is " + json::to_string(*generated))));
        return;
    }
    StreamEvent ev;
    ev.type = StreamEvent::Type::chunk;
    if (token != nullptr && !token->IsNull()) {
        const json::Value* text = json::find(*token, "text");
        if (!token->IsObject() || text == nullptr || !text->IsString()) {
            out.push_back(error_event(malformed("a 'token' without a 'text' string")));
            return;
        }
        if (const json::Value* id = json::find(*token, "id"); id != nullptr && id->IsInt64()) {
            ev.token_ids.push_back(id->GetInt64());
        }
        canonical::TokenLogprob entry;
        if (auto e = wire::read_token(*token, "token", entry)) {
            out.push_back(error_event(malformed(*e)));
            return;
        }
        if (const json::Value* tops = json::find(doc, "top_tokens");
            tops != nullptr && tops->IsArray()) {
            for (rapidjson::SizeType k = 0; k < tops->Size(); ++k) {
                canonical::TokenAlternative alt;
                if (auto e = wire::read_token((*tops)[k], "top_tokens[" + std::to_string(k) + "]",
                                              alt)) {
                    out.push_back(error_event(malformed(*e)));
                    return;
                }
                entry.top.push_back(std::move(alt));
            }
        }
        ev.logprobs.push_back(std::move(entry));
        const json::Value* special = json::find(*token, "special");
        // Special tokens (EOS) are not part of the text (§5.5, §10.13).
        if (special == nullptr || !special->IsBool() || !special->GetBool()) {
            c.text.append(json::view(*text));
            ++c.completion_tokens;
        }
    } else if (!final) {
        out.push_back(error_event(malformed("an event with neither 'token' nor 'generated_text'")));
        return;
    }

    if (final) {
        if (auto err = read_final(doc, *generated, state, ev)) {
            out.push_back(error_event(std::move(*err)));
            return;
        }
        out.push_back(std::move(ev));
        StreamEvent done;
        done.type = StreamEvent::Type::done;  // TGI has no terminator: the final event is it
        out.push_back(std::move(done));
        return;
    }
    // Hold back a tail that may be the start of a stop string (its first byte starts a code
    // point, so the cut never splits one).
    const size_t limit = c.text.size() - stop_prefix_tail(c.text, state.stop);
    if (limit <= c.sent && ev.token_ids.empty() && ev.logprobs.empty()) {
        return;
    }
    if (limit > c.sent) {
        ev.text.assign(c.text, c.sent, limit - c.sent);
        c.sent = limit;
    }
    ev.usage.completion_tokens = c.completion_tokens;
    out.push_back(std::move(ev));
}

}  // namespace infergate::translators::tgi
