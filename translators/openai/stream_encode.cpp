// Client side of OpenAI streams: canonical events to SSE chunks, written straight into the
// output (the hot path of every translated stream), the usage chunk, [DONE] and errors.

#include "translators/canonical/logprobs.hpp"
#include "translators/openai/stream_codec.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>

#include "translators/framing/framing.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/logprobs.hpp"

namespace infergate::translators::openai {

using canonical::ChoiceState;
using canonical::FinishKind;
using canonical::Usage;

namespace {

constexpr std::string_view kDone = framing::kSseDone;

enum class Part { role, content, finish };

// The logprobs one content chunk carries, and where its text offsets continue from.
struct ChunkLogprobs {
    const std::vector<canonical::TokenLogprob>* prompt = nullptr;
    const std::vector<canonical::TokenLogprob>* generated = nullptr;
    size_t* offset = nullptr;
    size_t top = 0;
};

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
                const canonical::Carried* carried = nullptr, const ChunkLogprobs* lp = nullptr) {
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
        if (lp == nullptr) {
            w_.Null();
        } else if (api_ == Api::chat) {
            write_chat_logprobs(w_, *lp->generated, lp->top);
        } else {
            write_completion_logprobs(w_, lp->prompt, *lp->generated, *lp->offset, lp->top);
        }
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

    // One chunk carrying a piece of choice `index`'s reasoning: {"reasoning_content": ...} as
    // vLLM, SGLang and llama.cpp stream it.
    void reasoning(int index, std::string_view text, const Usage* usage) {
        begin();
        w_.StartObject();
        json::key(w_, "index");
        w_.Int(index);
        json::key(w_, "delta");
        w_.StartObject();
        json::key(w_, "reasoning_content");
        json::string(w_, text);
        w_.EndObject();
        json::key(w_, "logprobs");
        w_.Null();
        json::key(w_, "finish_reason");
        w_.Null();
        w_.EndObject();
        end(usage);
    }

    // One chunk carrying pieces of choice `index`'s tool calls, as vLLM streams them: a call's
    // first piece with its id, type and name, each with the next fragment of its arguments.
    // `started`: how many of the choice's calls went out before (a piece past them starts one).
    void tool_calls(int index, std::span<const canonical::ToolCallDelta> pieces, size_t& started,
                    const Usage* usage) {
        begin();
        w_.StartObject();
        json::key(w_, "index");
        w_.Int(index);
        json::key(w_, "delta");
        w_.StartObject();
        json::key(w_, "tool_calls");
        w_.StartArray();
        for (const canonical::ToolCallDelta& piece : pieces) {
            const size_t at = static_cast<size_t>(std::max(piece.index, 0));
            const bool first = at >= started;
            started = std::max(started, at + 1);
            w_.StartObject();
            json::key(w_, "index");
            w_.Uint64(at);
            if (first) {
                json::key(w_, "id");
                if (!piece.id.empty()) {
                    json::string(w_, piece.id);
                } else {
                    // The same id a whole answer's call gets (write_tool_calls).
                    json::string(w_, "call_" + state_.id + "_" + std::to_string(at));
                }
                json::key(w_, "type");
                json::string(w_, "function");
            }
            json::key(w_, "function");
            w_.StartObject();
            if (first || !piece.name.empty()) {
                json::key(w_, "name");
                json::string(w_, piece.name);
            }
            json::key(w_, "arguments");
            json::string(w_, piece.arguments);
            w_.EndObject();
            w_.EndObject();
        }
        w_.EndArray();
        w_.EndObject();
        json::key(w_, "logprobs");
        w_.Null();
        json::key(w_, "finish_reason");
        w_.Null();
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

}  // namespace

void init_stream_state(StreamState& state, const GenerationRequest& req) {
    canonical::set_logprob_request(state, req);
    state.n = req.sampling.n;  // which prompt a choice echoes: index / n
}

void encode_stream_event(const StreamEvent& event, StreamState& state, std::string& out, Api api) {
    switch (event.type) {
        case StreamEvent::Type::usage:
            state.usage = event.usage;
            state.usage_final = true;
            return;
        case StreamEvent::Type::done:
            return;  // the terminator goes out in encode_stream_end, after the usage chunk
        case StreamEvent::Type::error:
            encode_stream_error(event.error, state, out);
            return;
        case StreamEvent::Type::keepalive:
            framing::write_sse_comment(event.text, out);
            return;
        case StreamEvent::Type::chunk:
            break;
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
    } else if (!event.text.empty() || !event.reasoning.empty() || !event.tool_calls.empty()) {
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
    // Completions echo: the prompt goes in front of the choice's first chunk (a token-id
    // prompt's text from its entries); with max_tokens 0 it is all there is (vLLM).
    const bool first = !c.prompt_done;
    c.prompt_done = true;
    std::string echo_text;
    bool echoing = false;
    if (api == Api::completions && state.echo && first) {
        const int n = state.n > 0 ? state.n : 1;
        const size_t prompt_index = static_cast<size_t>(index / n);
        if (prompt_index < state.prompts.size()) {
            echoing = true;
            const canonical::Prompt& p = state.prompts[prompt_index];
            if (!p.is_tokens) {
                echo_text = p.text;
            } else {
                for (const canonical::TokenLogprob& t : event.prompt_logprobs) {
                    echo_text += t.token;
                }
            }
        }
    }
    const bool scoring = api == Api::completions && state.echo && state.max_tokens == 0;
    static const std::vector<canonical::TokenLogprob> kNone;
    const std::string_view text = scoring ? std::string_view() : std::string_view(event.text);
    const std::vector<canonical::TokenLogprob>& generated = scoring ? kNone : event.logprobs;
    // Logprobs go out when the client asked (an empty form where the backend sent none); a
    // state nobody told about the request still passes on what the backend sent.
    const bool with_logprobs =
        state.logprobs || !generated.empty() || (echoing && !event.prompt_logprobs.empty());
    const size_t top = state.logprobs ? state.top_logprobs : SIZE_MAX;
    const bool tokens_now = !generated.empty() || (echoing && !event.prompt_logprobs.empty());
    const bool calls_now = api == Api::chat && !event.tool_calls.empty();
    const bool reasoning_now = api == Api::chat && !event.reasoning.empty();
    if (text.empty() && echo_text.empty() && !tokens_now && !finishing && carried == nullptr &&
        !calls_now && !reasoning_now) {
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
    if (reasoning_now) {
        chunks.reasoning(index, event.reasoning, usage_ptr);  // reasoning comes before the text
        state.content_seen = true;
    }
    if (!text.empty() || !echo_text.empty() || tokens_now || carried != nullptr) {
        const bool prompt_entries = echoing && !event.prompt_logprobs.empty();
        if (echoing && !prompt_entries) {
            c.text_offset += canonical::code_points(echo_text);  // offsets count the echo
        }
        ChunkLogprobs lp{prompt_entries ? &event.prompt_logprobs : nullptr, &generated,
                         &c.text_offset, top};
        std::string with_echo;
        std::string_view chunk_text = text;
        if (!echo_text.empty()) {
            with_echo.assign(echo_text).append(text);
            chunk_text = with_echo;
        }
        chunks.choice(index, Part::content, chunk_text, FinishKind::none, usage_ptr, carried,
                      with_logprobs ? &lp : nullptr);
        state.content_seen = true;
    }
    if (calls_now) {
        chunks.tool_calls(index, event.tool_calls, c.calls_sent, usage_ptr);
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

}  // namespace infergate::translators::openai
