// SGLang /generate streams from SGLang backends (api-dialects §4.6, §10.2): cumulative text and
// completion_tokens (or deltas with --incremental-streaming-output), diffed into canonical deltas.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/framing/framing.hpp"
#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::FinishReason;
using canonical::stop_prefix_tail;
// An upstream "index" beyond this is treated as garbage rather than trusted to size the state
// (each choice costs memory for the rest of the stream).
constexpr int64_t kMaxChoices = 16384;

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
        out.push_back(error_event(wire::upstream_error(
            "the SGLang backend sent malformed stream data: " + err->message)));
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
            out.push_back(error_event(
                wire::upstream_error("the SGLang backend sent malformed stream data: 'index' is " +
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
    const size_t limit =
        ev.finish ? c.text.size() : c.text.size() - stop_prefix_tail(c.text, state.stop);
    if (limit > c.sent) {
        ev.text.assign(c.text, c.sent, limit - c.sent);
        c.sent = limit;
    }
    out.push_back(std::move(ev));
}

}  // namespace infergate::translators::sglang
