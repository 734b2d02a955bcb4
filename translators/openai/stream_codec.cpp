#include "translators/openai/stream_codec.hpp"

#include <utility>

#include "translators/framing/framing.hpp"

namespace infergate::translators::openai {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::Usage;

namespace {

constexpr std::string_view kDone = framing::kSseDone;

enum class Part { role, content, finish };

// Writes SSE chunk events straight into `out` ("data: " + JSON + "\n\n"), one Writer reused for
// every chunk of one call. framing::write_sse_data would need each chunk's JSON in a temporary
// string first; this is the hot path of every stream.
class ChunkWriter {
public:
    ChunkWriter(std::string& out, const StreamState& state, Api api)
        : out_(out), os_{&out}, w_(os_), state_(state), api_(api) {}

    // `data: {"id":..,"object":..,"created":..,"model":..,"choices":[`
    json::Writer& begin() {
        framing::begin_sse_data(out_);
        w_.Reset(os_);
        w_.StartObject();
        json::key(w_, "id");
        json::string(w_, state_.id);
        json::key(w_, "object");
        json::string(w_, chunk_object(api_));
        json::key(w_, "created");
        w_.Int64(state_.created);
        json::key(w_, "model");
        json::string(w_, state_.model);
        json::key(w_, "choices");
        w_.StartArray();
        return w_;
    }

    // `]` + optional `"usage":{...}` (only a complete one) + `}\n\n`
    void end(const Usage* usage) {
        w_.EndArray();
        if (usage != nullptr && usage_complete(*usage)) {
            json::key(w_, "usage");
            write_usage(w_, *usage);
        }
        w_.EndObject();
        framing::end_sse_data(out_);
    }

    // One chunk carrying one part of choice `index`.
    void choice(int index, Part part, std::string_view text, FinishKind finish, const Usage* usage,
                const canonical::Carried* carried = nullptr) {
        begin();
        w_.StartObject();
        json::key(w_, "index");
        w_.Int(index);
        if (api_ == Api::chat) {
            json::key(w_, "delta");
            w_.StartObject();
            if (part == Part::role) {
                json::key(w_, "role");
                json::string(w_, "assistant");
                json::key(w_, "content");
                json::string(w_, "");
            } else if (part == Part::content) {
                // A tool-call delta has no content, as OpenAI writes it.
                if (!text.empty() || carried == nullptr) {
                    json::key(w_, "content");
                    json::string(w_, text);
                }
                if (carried != nullptr) {
                    json::write_carried(w_, carried->members, "delta.");
                }
            }
            w_.EndObject();
        } else {
            json::key(w_, "text");
            json::string(w_, part == Part::content ? text : std::string_view());
        }
        json::key(w_, "logprobs");
        w_.Null();
        json::key(w_, "finish_reason");
        const std::string_view reason = route_finish_reason(finish, api_);
        if (part == Part::finish && !reason.empty()) {
            json::string(w_, reason);
        } else {
            w_.Null();
        }
        w_.EndObject();
        end(usage);
    }

private:
    std::string& out_;
    json::StringOut os_;
    json::Writer w_;
    const StreamState& state_;
    Api api_;
};

// vLLM's continuous_usage_stats shape: that choice's running counts.
Usage running_usage(const ChoiceState& c, const StreamState& state) {
    Usage u;
    u.prompt_tokens = c.prompt_tokens ? c.prompt_tokens : state.usage.prompt_tokens;
    u.completion_tokens = c.completion_tokens;
    return u;
}

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

void push_error(std::vector<StreamEvent>& out, canonical::Error error) {
    StreamEvent& ev = out.emplace_back();
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(error);
}

}  // namespace

void encode_stream_event(const StreamEvent& event, StreamState& state, std::string& out, Api api) {
    switch (event.type) {
        case StreamEvent::Type::usage:
            state.usage = event.usage;
            state.usage_final = true;
            return;
        case StreamEvent::Type::done:
            return;  // the terminator goes out in encode_stream_end, after the usage chunk
        case StreamEvent::Type::error: encode_stream_error(event.error, state, out); return;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);
            return;
        case StreamEvent::Type::chunk: break;
    }
    if (state.ended) {
        return;
    }
    const int index = event.index < 0 ? 0 : event.index;
    ChoiceState& c = state.choice(index);
    if (c.finished) {
        return;  // nothing may follow a choice's finish chunk
    }
    if (event.usage.completion_tokens) {
        c.completion_tokens = *event.usage.completion_tokens;
        c.tokens_exact = true;
    } else if (!event.text.empty()) {
        ++c.completion_tokens;  // an estimate until the backend's usage report arrives
        c.tokens_exact = false;
    }
    if (event.usage.prompt_tokens) {
        c.prompt_tokens = event.usage.prompt_tokens;
    }
    if (event.usage.cached_tokens) {
        c.cached_tokens = event.usage.cached_tokens;
    }
    const bool finishing = event.finish && event.finish->kind != FinishKind::none;
    const canonical::Carried* carried = api == Api::chat ? own(event.carried) : nullptr;
    if (event.text.empty() && !finishing && carried == nullptr) {
        return;
    }
    // Up to three chunks (role, text, finish) of ~200 bytes besides the text, id and model.
    constexpr size_t kChunkOverhead = 200;
    out.reserve(out.size() + 3 * (kChunkOverhead + state.id.size() + state.model.size()) +
                event.text.size());
    ChunkWriter chunks(out, state, api);
    if (api == Api::chat && !c.role_sent) {
        // OpenAI clients take the role from the first delta of each choice.
        chunks.choice(index, Part::role, {}, FinishKind::none, nullptr);
        c.role_sent = true;
    }
    Usage usage;
    const Usage* usage_ptr = nullptr;
    if (state.continuous_usage) {
        usage = running_usage(c, state);
        usage_ptr = &usage;
    }
    if (!event.text.empty() || carried != nullptr) {
        chunks.choice(index, Part::content, event.text, FinishKind::none, usage_ptr, carried);
        state.content_seen = true;
    }
    if (finishing) {
        chunks.choice(index, Part::finish, {}, event.finish->kind, usage_ptr);
        c.finished = true;
    }
}

void encode_stream_end(StreamState& state, std::string& out, Api api) {
    if (state.ended) {
        return;
    }
    state.ended = true;
    // The usage chunk (choices: []) only when the client asked: clients that did not ask
    // index choices[0] of every chunk and crash on it.
    // A usage the backend did not report in full cannot be written in OpenAI's shape (all three
    // counts are required): the chunk is left out rather than a count made up.
    const Usage usage = state.aggregate_usage();
    if (state.include_usage && usage_complete(usage)) {
        ChunkWriter chunks(out, state, api);
        chunks.begin();
        chunks.end(&usage);
    }
    out.append(kDone);
}

void encode_stream_error(const Error& error, StreamState& state, std::string& out) {
    if (state.ended) {
        return;  // after [DONE] nothing can reach the client any more
    }
    state.ended = true;
    // The OpenAI SDK raises on any data object with a top-level "error" key (api-dialects §2.5).
    framing::begin_sse_data(out);
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "error");
    write_error_object(w, error);
    w.EndObject();
    framing::end_sse_data(out);
    out.append(kDone);
}

void decode_stream_event(std::string_view data, StreamState& state, std::vector<StreamEvent>& out,
                         Api api) {
    const std::string_view payload = trim(data);
    if (framing::is_done_sentinel(payload)) {
        out.emplace_back().type = StreamEvent::Type::done;
        return;
    }
    json::Document doc;
    if (auto err = json::parse(payload, doc, "stream event")) {
        push_error(out, upstream_error("the backend sent malformed stream data: " + err->message));
        return;
    }
    if (!doc.IsObject()) {
        push_error(out, upstream_error("the backend sent malformed stream data: expected a JSON "
                                       "object, got " +
                                       std::string(json::type_name(doc))));
        return;
    }
    const json::Value* error = json::find(doc, "error");
    const json::Value* object = json::find(doc, "object");
    if ((error != nullptr && !error->IsNull()) ||
        (object != nullptr && object->IsString() && json::view(*object) == "error")) {
        push_error(out, read_upstream_error(doc));
        return;
    }
    Usage usage;
    if (const json::Value* u = json::find(doc, "usage"); u != nullptr) {
        usage = read_usage(*u);
    }
    const json::Value* choices = json::find(doc, "choices");
    if (choices == nullptr || !choices->IsArray() || choices->Empty()) {
        if (usage_known(usage)) {
            StreamEvent& ev = out.emplace_back();
            ev.type = StreamEvent::Type::usage;
            ev.usage = usage;
        }
        return;
    }
    for (rapidjson::SizeType i = 0; i < choices->Size(); ++i) {
        const json::Value& item = (*choices)[i];
        if (!item.IsObject()) {
            push_error(out, upstream_error("the backend sent malformed stream data: choices[" +
                                           std::to_string(i) + "] is " +
                                           std::string(json::type_name(item)) + ", not an object"));
            return;
        }
        const json::Value* text = nullptr;
        canonical::Carried carried;
        if (api == Api::chat) {
            if (const json::Value* delta = json::find(item, "delta")) {
                text = json::find(*delta, "content");
                if (auto lost = carry(*delta, "delta.", state.client, carried)) {
                    push_error(out, std::move(*lost));
                    return;
                }
            }
        } else {
            text = json::find(item, "text");
        }
        const bool has_text = text != nullptr && text->IsString() && text->GetStringLength() > 0;
        std::optional<canonical::FinishReason> finish = read_finish(item, state.max_tokens);
        // vLLM's token ids (return_token_ids): a token whose text is empty is still one.
        const json::Value* ids = json::find(item, "token_ids");
        const bool has_ids = ids != nullptr && ids->IsArray() && !ids->Empty();
        // Role-only and empty deltas carry nothing a client of another dialect could use, but
        // a prompt count that comes before any text (continuous usage) is worth passing on.
        if (!has_text && !finish && !has_ids && !usage.prompt_tokens && carried.empty()) {
            continue;
        }
        StreamEvent& ev = out.emplace_back();
        ev.carried = std::move(carried);
        if (has_ids) {
            for (const json::Value& id : ids->GetArray()) {
                if (id.IsInt64()) {
                    ev.token_ids.push_back(id.GetInt64());
                }
            }
        }
        ev.type = StreamEvent::Type::chunk;
        const json::Value* index = json::find(item, "index");
        ev.index = index != nullptr && index->IsInt() ? index->GetInt() : static_cast<int>(i);
        if (has_text) {
            ev.text.assign(text->GetString(), text->GetStringLength());
        }
        ev.finish = std::move(finish);
        // vLLM/SGLang continuous_usage_stats: the usage on a chunk with choices is that
        // choice's running count.
        ev.usage = usage;
    }
}

}  // namespace infergate::translators::openai
