#include "translators/ollama/codec.hpp"

#include <utility>

#include "translators/canonical/catalogue.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

namespace {

// Both routes share every step; the Api picks the few places where they differ (prompt vs
// messages, `response` vs `message.content`). Stateless and immutable.
class OllamaCodec : public Codec {
public:
    explicit OllamaCodec(Api api) : api_(api) {}

    Dialect dialect() const override {
        return api_ == Api::chat ? Dialect::ollama_chat : Dialect::ollama_generate;
    }
    Framing framing() const override { return Framing::ndjson; }
    Api api() const { return api_; }

    Result<GenerationRequest> decode_request(std::string_view body) const override {
        return ollama::decode_request(body, api_);
    }
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override {
        ollama::encode_response(result, req, result.timing, out, api_);
    }
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override {
        ollama::encode_stream_event(event, state, out, api_);
    }
    void encode_stream_end(StreamState& state, std::string& out) const override {
        ollama::encode_stream_end(state, state.timing, out, api_);
    }
    void encode_error(const Error& error, std::string& out) const override {
        ollama::encode_error(error, out);
    }
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override {
        ollama::encode_stream_error(error, state, out);
    }

    // The upstream side picks the route from the request, not from which of the two codecs
    // was asked: a raw completion must go to /api/generate with raw:true, a chat to /api/chat.
    std::string_view upstream_path(const GenerationRequest& req) const override {
        return sends_generate(req) ? "/api/generate" : "/api/chat";
    }
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override {
        return ollama::encode_request(req, options);
    }
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override {
        return ollama::decode_response(body, req);
    }
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override {
        ollama::decode_stream_event(data, state, out);
    }

private:
    const Api api_;
};

const OllamaCodec& generate_impl() {
    static const OllamaCodec codec(Api::generate);
    return codec;
}

const OllamaCodec& chat_impl() {
    static const OllamaCodec codec(Api::chat);
    return codec;
}

Api api_of(const Codec& codec) {
    return codec.dialect() == Dialect::ollama_chat ? Api::chat : Api::generate;
}

}  // namespace

const Codec& generate_codec() {
    return generate_impl();
}
const Codec& chat_codec() {
    return chat_impl();
}

void encode_response(const Codec& codec, const GenerationResult& result,
                     const GenerationRequest& req, const Timing& timing, std::string& out) {
    encode_response(result, req, timing, out, api_of(codec));
}

void encode_stream_end(const Codec& codec, StreamState& state, const Timing& timing,
                       std::string& out) {
    encode_stream_end(state, timing, out, api_of(codec));
}

std::string format_created_at(int64_t unix_ns) {
    return canonical::format_rfc3339(unix_ns);
}

std::string_view done_reason_name(canonical::FinishKind kind) {
    switch (kind) {
        case canonical::FinishKind::none:
            return {};
        case canonical::FinishKind::length:
            return "length";
        // Ollama reports EOS, stop strings and tool calls all as "stop"; an aborted or
        // filtered generation also ended, and "stop" is what an Ollama client understands.
        default:
            return "stop";
    }
}

canonical::Error upstream_error(std::string message) {
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

void write_tool_calls(json::Writer& w, std::span<const canonical::ToolCall> calls,
                      std::optional<size_t> first_index) {
    json::key(w, "tool_calls");
    w.StartArray();
    for (size_t i = 0; i < calls.size(); ++i) {
        const canonical::ToolCall& c = calls[i];
        w.StartObject();
        if (!c.id.empty()) {
            json::key(w, "id");
            json::string(w, c.id);
        }
        json::key(w, "function");
        w.StartObject();
        if (first_index) {
            json::key(w, "index");
            w.Uint64(*first_index + i);
        }
        json::key(w, "name");
        json::string(w, c.name);
        json::key(w, "arguments");
        json::write_raw(w, c.arguments);
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
}

void write_head(json::Writer& w, std::string_view model, int64_t created_s, const Timing& timing) {
    json::key(w, "model");
    json::string(w, model);
    json::key(w, "created_at");
    json::string(w, format_created_at(timing.created_unix_ns.value_or(created_s * 1'000'000'000)));
}

void write_logprobs(json::Writer& w, const LogprobsOut& lp) {
    if (lp.entries == nullptr || lp.entries->empty()) {
        return;
    }
    json::key(w, "logprobs");
    json::write_token_entries(w, *lp.entries, {.omit_empty = true}, lp.top);
}

std::optional<canonical::Error> read_logprobs(const json::Value& doc,
                                              std::vector<canonical::TokenLogprob>& out) {
    const json::Value* lp = json::find(doc, "logprobs");
    if (lp == nullptr || lp->IsNull()) {
        return std::nullopt;
    }
    if (auto e = json::read_token_entries(*lp, "logprobs", out)) {
        return upstream_error("the backend sent malformed log probabilities: " + *e);
    }
    return std::nullopt;
}

void write_tail(json::Writer& w, canonical::FinishKind finish, const canonical::Usage& usage,
                const Timing& timing, Api api, const LogprobsOut& lp) {
    json::key(w, "done");
    w.Bool(true);
    if (const std::string_view reason = done_reason_name(finish); !reason.empty()) {
        json::key(w, "done_reason");
        json::string(w, reason);
    }
    if (api == Api::chat) {
        write_logprobs(w, lp);
    }
    // Ollama's own order; every metric is omitempty there, so unknown ones are simply absent
    // (never a guessed 0).
    auto opt = [&w](std::string_view key, const std::optional<int64_t>& v) {
        if (v) {
            json::key(w, key);
            w.Int64(*v);
        }
    };
    opt("total_duration", timing.total_ns);
    opt("load_duration", timing.load_ns);
    opt("prompt_eval_count", usage.prompt_tokens);
    opt("prompt_eval_duration", timing.prompt_eval_ns);
    opt("eval_count", usage.completion_tokens);
    opt("eval_duration", timing.eval_ns);
    if (api == Api::generate) {
        write_logprobs(w, lp);
    }
}

}  // namespace infergate::translators::ollama
