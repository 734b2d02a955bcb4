// TGI /generate_stream from TGI backends (api-dialects §5.5): one SSE event per token with a
// DELTA in token.text, the last one carrying generated_text and the finish; no terminator.

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;
using canonical::stop_prefix_tail;

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
    if (type == "validation" || type == "template_error" || type == "missing_template_variable" ||
        type == "tool_error") {
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
