// vLLM legacy streams: newline-delimited {"text": [prompt + cumulative output, ...]} records with
// no terminator, no counts and no finish reasons (api-dialects §3.2, §10.2).

#include <algorithm>
#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/vllm_legacy/codec.hpp"
#include "translators/vllm_legacy/codec_impl.hpp"

namespace infergate::translators::vllm_legacy {

using canonical::ChoiceState;
using canonical::stop_prefix_tail;
using canonical::FinishKind;
using canonical::FinishReason;

namespace {

StreamEvent error_event(Error e) {
    StreamEvent ev;
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(e);
    return ev;
}

// One record with every choice's full text so far, prompt first, and the record delimiter.
// Servers since PR #2756 (Nov 2024) end records with "\n"; older ones used "\0". We write "\n":
// current clients split on it, and json.dumps never puts a raw newline inside a record.
void write_record(const StreamState& state, std::string& out) {
    const std::string& prompt = stream_prompt(state);
    const size_t count = std::max(static_cast<size_t>(state.n > 0 ? state.n : 1),
                                  state.choices.size());
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "text");
    w.StartArray();
    for (size_t i = 0; i < count; ++i) {
        wire::joined_string(w, prompt, i < state.choices.size() ? state.choices[i].text : "");
    }
    w.EndArray();
    w.EndObject();
    out.push_back('\n');
}

}  // namespace

// ---- client side -----------------------------------------------------------------------------

void VllmLegacyCodec::encode_stream_event(const StreamEvent& event, StreamState& state,
                                          std::string& out) const {
    if (state.ended || event.type != StreamEvent::Type::chunk) {
        // Usage and done have no wire form here (the stream just ends); errors go through
        // encode_stream_error.
        return;
    }
    // Nothing new to say for an empty delta (a role chunk, a finish-only chunk): finish reasons
    // are not on this wire and the client would only see the same record again.
    if (event.text.empty()) {
        return;
    }
    state.choice(event.index).text.append(event.text);
    state.content_seen = true;
    write_record(state, out);
}

void VllmLegacyCodec::encode_stream_end(StreamState& state, std::string& out) const {
    if (state.ended) {
        return;
    }
    // The real server always sends at least one record; a stream that produced no text at all
    // still owes the client one (the prompt alone, per choice).
    if (!state.content_seen) {
        write_record(state, out);
    }
    state.ended = true;
}

void VllmLegacyCodec::encode_stream_error(const Error& error, StreamState& state,
                                          std::string& out) const {
    if (state.ended) {
        return;
    }
    // The real server has no in-band error: it would drop the connection. We send one
    // {"error": "..."} record instead, so the client fails loudly (its json["text"] lookup
    // raises) rather than taking a cut-off text for a whole answer. There is no terminator.
    encode_error(error, out);
    out.push_back('\n');
    state.ended = true;
}

// ---- upstream side ---------------------------------------------------------------------------

namespace {

void decode_record(std::string_view data, StreamState& state, std::vector<StreamEvent>& out);

}  // namespace

void VllmLegacyCodec::decode_stream_event(std::string_view data, StreamState& state,
                                          std::vector<StreamEvent>& out) const {
    const size_t before = out.size();
    decode_record(data, state, out);
    if (out.size() > before && out.back().type == StreamEvent::Type::error) {
        state.ended = true;  // the stream is over: decode_stream_end infers no finish after it
    }
}

namespace {

void decode_record(std::string_view data, StreamState& state, std::vector<StreamEvent>& out) {
    while (!data.empty() && (data.back() == ' ' || data.back() == '\r' || data.back() == '\n' ||
                             data.back() == '\0')) {
        data.remove_suffix(1);
    }
    if (data.empty() || state.ended) {
        return;
    }
    json::Document doc;
    if (auto err = json::parse(data, doc, "the stream record")) {
        out.push_back(error_event(wire::upstream_error(
            "the vLLM legacy backend sent a malformed stream record: " + err->message)));
        return;
    }
    if (!doc.IsObject()) {
        out.push_back(error_event(wire::upstream_error(
            "the vLLM legacy backend sent a stream record that is " +
            std::string(json::type_name(doc)) + ", not an object")));
        return;
    }
    if (const json::Value* e = json::find(doc, "error"); e != nullptr) {
        // Not something the real server sends, but what this codec's own client side writes
        // (an infergate in front of this backend).
        out.push_back(error_event(wire::upstream_error(
            "the vLLM legacy backend reported an error: " +
            (e->IsString() ? std::string(json::view(*e)) : json::to_string(*e)))));
        return;
    }
    const json::Value* text = json::find(doc, "text");
    if (text == nullptr || !text->IsArray() || text->Empty() ||
        text->Size() > static_cast<rapidjson::SizeType>(wire::kMaxChoices)) {
        out.push_back(error_event(wire::upstream_error(
            "the vLLM legacy backend sent a stream record without a 'text' list of 1 to " +
            std::to_string(wire::kMaxChoices) + " strings")));
        return;
    }
    const std::string& prompt = stream_prompt(state);
    // Validate the whole record before touching the state, so an error leaves it consistent.
    for (rapidjson::SizeType i = 0; i < text->Size(); ++i) {
        const json::Value& t = (*text)[i];
        if (!t.IsString()) {
            out.push_back(error_event(wire::upstream_error(
                "the vLLM legacy backend sent a stream record whose text[" + std::to_string(i) +
                "] is " + std::string(json::type_name(t)) + ", not a string")));
            return;
        }
        if (json::view(t).substr(0, prompt.size()) != prompt) {
            out.push_back(error_event(wire::upstream_error(
                "the vLLM legacy backend sent a stream record whose text[" + std::to_string(i) +
                "] does not start with the prompt it was sent")));
            return;
        }
    }
    for (rapidjson::SizeType i = 0; i < text->Size(); ++i) {
        const std::string_view now = json::view((*text)[i]).substr(prompt.size());
        ChoiceState& c = state.choice(static_cast<int>(i));
        if (now.size() >= c.text.size() && now.compare(0, c.text.size(), c.text) == 0) {
            if (now.size() > c.text.size()) {
                ++c.completion_tokens;  // one record per engine step: one token (an estimate)
            }
            c.text.append(now.substr(c.text.size()));
        } else {
            // A trimmed stop string or a detokenizer correction (api-dialects §10.2): what went
            // out cannot be taken back in a delta protocol, so send nothing for it and diff
            // later records against the new text.
            c.text.assign(now);
            c.sent = now.size();
        }
        // Hold back a tail that may be the start of a stop string the server will trim; it is
        // released by later records or by decode_stream_end() at the end of the body.
        const size_t limit = c.text.size() - stop_prefix_tail(c.text, state.stop);
        if (limit > c.sent) {
            StreamEvent ev;
            ev.type = StreamEvent::Type::chunk;
            ev.index = static_cast<int>(i);
            ev.text.assign(c.text, c.sent, limit - c.sent);
            c.sent = limit;
            out.push_back(std::move(ev));
        }
    }
}

}  // namespace

void VllmLegacyCodec::init_client_stream(StreamState& state, const GenerationRequest& req) const {
    if (!req.prompts.empty()) {
        set_stream_prompt(state, req.prompts.front().text);
    }
}

void VllmLegacyCodec::init_upstream_stream(StreamState& state, const GenerationRequest& req) const {
    if (req.prompts.empty()) {
        return;
    }
    set_stream_prompt(state, req.prompts.front().text);
    // The budget the backend was sent: the client's, else its dialect's default (written
    // explicitly upstream), else the server's own. decode_stream_end infers a length finish
    // from it.
    state.max_tokens = req.sampling.max_tokens;
    if (!state.max_tokens) {
        state.max_tokens = canonical::default_max_tokens(req.dialect);
    }
    if (!state.max_tokens) {
        state.max_tokens = canonical::default_max_tokens(Dialect::vllm_legacy);
    }
}

void decode_stream_end(StreamState& state, std::vector<StreamEvent>& out) {
    if (state.ended) {
        return;
    }
    for (size_t i = 0; i < state.choices.size(); ++i) {
        ChoiceState& c = state.choices[i];
        StreamEvent ev;
        ev.type = StreamEvent::Type::chunk;
        ev.index = static_cast<int>(i);
        ev.text.assign(c.text, std::min(c.sent, c.text.size()));
        c.sent = c.text.size();
        // The server says nothing about why it stopped, but a clean end of the body leaves two
        // causes: the token budget (when the choice took one record per token up to it) or a
        // stop (EOS or a stop string). Clients of dialects that require a finish reason get
        // that inference; the token count itself stays unknown (never sent as usage).
        FinishReason finish;
        if (state.max_tokens && c.completion_tokens >= *state.max_tokens) {
            finish.kind = FinishKind::length;
            finish.length = state.max_tokens;
        } else {
            finish.kind = FinishKind::stop;
        }
        ev.finish = std::move(finish);
        c.finished = true;
        out.push_back(std::move(ev));
    }
    // The end of the body is the only "done".
    StreamEvent done;
    done.type = StreamEvent::Type::done;
    out.push_back(std::move(done));
    state.ended = true;
}

void VllmLegacyCodec::decode_stream_end(StreamState& state, std::vector<StreamEvent>& out) const {
    vllm_legacy::decode_stream_end(state, out);
}

}  // namespace infergate::translators::vllm_legacy
