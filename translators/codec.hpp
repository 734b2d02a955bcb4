#pragma once
// The codec interface every dialect implements, and the registry that maps a dialect to it.
// Codecs are stateless and thread-safe: one const instance per dialect serves every thread.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "translators/canonical/stream_state.hpp"
#include "translators/canonical/types.hpp"
#include "translators/conversation.hpp"

namespace infergate::translators {

using canonical::Dialect;
using canonical::Error;
using canonical::GenerationRequest;
using canonical::GenerationResult;
using canonical::Result;
using canonical::StreamEvent;
using canonical::StreamState;
using canonical::Usage;

// What kind of backend sits behind an OpenAI-dialect upstream; decides which non-standard
// extensions may be sent (vLLM and SGLang accept `continuous_usage_stats`, `top_k`, ...; the
// hosted OpenAI API rejects unknown fields) and the names a setting is sent under where the
// engines read different ones (the token budget, the repetition penalty, logit_bias:
// docs/dialects.md, "Parameters"). `tgi`, `llamacpp` and `openai` (the hosted API) are told
// apart by the proxy from the backend's dialect and host (translators/pairing.hpp, openai_flavor);
// the probe alone finds generic, vllm or sglang.
enum class Flavor { generic, vllm, sglang, tgi, llamacpp, openai };

// vLLM and SGLang: running token counts on every stream chunk (continuous_usage_stats).
constexpr bool has_running_usage(Flavor f) {
    return f == Flavor::vllm || f == Flavor::sglang;
}

// How the exchange wants the upstream request written.
struct UpstreamOptions {
    std::string model;        // the backend's served model name (empty: leave as is)
    Flavor flavor = Flavor::generic;
    bool stream = false;      // ask the upstream to stream (may differ from the client's wish)
    // The backend is known to accept OpenAI's stream_options (vLLM, SGLang, TGI, llama.cpp,
    // OpenAI itself): a streamed request asks it for usage. Strict OpenAI-compatible servers may
    // refuse a field they do not know, so others are not sent it.
    bool stream_usage = true;
};

// How a dialect frames a stream on the wire.
enum class Framing { sse, ndjson };

// Response headers a dialect writes beside its body: names are literals (lower case), values
// owned.
using HeaderList = std::vector<std::pair<std::string_view, std::string>>;

// The backend's response headers, as far as the proxy keeps them (an absent or unkept header
// reads empty). Names are lower case.
class ResponseHeaders {
public:
    virtual std::string_view find(std::string_view name) const = 0;

protected:
    ~ResponseHeaders() = default;
};

class Codec {
public:
    virtual ~Codec() = default;
    virtual Dialect dialect() const = 0;
    virtual Framing framing() const { return Framing::sse; }

    // ---- client side -----------------------------------------------------------------------
    // Decodes a client's request body. Errors are 400s naming the field.
    virtual Result<GenerationRequest> decode_request(std::string_view body) const = 0;
    // Encodes a whole (non-streaming) response body for `req`.
    virtual void encode_response(const GenerationResult& result, const GenerationRequest& req,
                                 std::string& out) const = 0;
    // Appends the wire bytes (zero or more framed events) for one canonical event.
    virtual void encode_stream_event(const StreamEvent& event, StreamState& state,
                                     std::string& out) const = 0;
    // Appends whatever still has to go out at the end of the stream (held finishes, the usage
    // chunk, the terminator). Idempotent: a second call appends nothing.
    virtual void encode_stream_end(StreamState& state, std::string& out) const = 0;
    // A non-streaming error body in this dialect's shape.
    virtual void encode_error(const Error& error, std::string& out) const = 0;
    // An in-band error after the stream started, followed by the terminator where the dialect
    // has one.
    virtual void encode_stream_error(const Error& error, StreamState& state,
                                     std::string& out) const = 0;

    // ---- client side hooks: each runs once per request or per stream, never per byte --------
    // decode_request for a dialect that keeps conversation state on the server (the Responses
    // API): earlier turns are read through `lookup` (null: nothing is stored). Default:
    // decode_request.
    virtual Result<GenerationRequest> decode_stateful(std::string_view body,
                                                      const ConversationLookup* lookup) const;
    // The turn to keep for a later request that continues it, when the client asked for it
    // (the Responses API's `store`): `result` is the whole answer the client got, or the one
    // its stream made. Default: none.
    virtual std::optional<StoredTurn> stored_turn(const GenerationRequest& req,
                                                  const GenerationResult& result) const;
    // Where a dialect's request needs more than its body: `path` is the route it came to (TGI:
    // /generate never streams, /generate_stream always does, POST / may wrap its answer in an
    // array). Runs right after decode_request. Default: nothing.
    virtual void prepare_request(GenerationRequest& req, std::string_view path) const;
    // The prefix of the response ids the proxy makes up for this dialect's clients ("cmpl-").
    virtual std::string_view id_prefix() const;
    // How many per-choice ids (GenerationRequest::request_ids) the proxy makes up for `req` when
    // the answer is translated: a dialect whose clients read one id per choice (SGLang's
    // meta_info.id, one per prompt and sample) and whose request named none. Default: 0.
    virtual size_t choice_ids_wanted(const GenerationRequest& req) const;
    // Completes the encoder state the proxy filled (id, model, n, usage wishes, logprobs) with
    // what only this dialect needs from `req` (vLLM legacy: the prompt it echoes). Default:
    // nothing.
    virtual void init_client_stream(StreamState& state, const GenerationRequest& req) const;
    // Appends the headers a whole (non-streaming) response carries beside its body in this
    // dialect (TGI: the token counts). Default: none.
    virtual void response_headers(const GenerationResult& result, HeaderList& out) const;

    // ---- upstream side ---------------------------------------------------------------------
    // The path to send `req` to on a backend speaking this dialect.
    virtual std::string_view upstream_path(const GenerationRequest& req) const = 0;
    // Encodes `req` for a backend speaking this dialect. Errors are 400s saying what cannot be
    // translated and what would work instead.
    virtual Result<std::string> encode_request(const GenerationRequest& req,
                                               const UpstreamOptions& options) const = 0;
    // Decodes a whole upstream response body.
    virtual Result<GenerationResult> decode_response(std::string_view body,
                                                     const GenerationRequest& req) const = 0;
    // Same-dialect fast path: the backend's whole response goes to the client as it is. Checks
    // that it is what the dialect says (failing exactly as decode_response would) and returns
    // only what the metrics need, its usage and how it ended. Default: decode_response.
    virtual Result<canonical::ResponseFacts> check_response(std::string_view body,
                                                            const GenerationRequest& req) const;
    // Decodes one upstream stream event (an SSE `data` payload or an NDJSON line) into zero or
    // more canonical events. Malformed data yields an error event.
    virtual void decode_stream_event(std::string_view data, StreamState& state,
                                     std::vector<StreamEvent>& out) const = 0;
    // Normalises an upstream error response (any envelope, or plain text).
    virtual Error decode_error(int status, std::string_view body) const;

    // ---- upstream side hooks: each runs once per request or per stream, never per byte ------
    // Completes the decoder state the proxy filled (n, logprobs, stops, client) with what only
    // this dialect needs from `req` (vLLM legacy: the prompt and the token budget sent).
    // Default: nothing.
    virtual void init_upstream_stream(StreamState& state, const GenerationRequest& req) const;
    // The backend ended its stream body cleanly without this dialect's terminator (the proxy
    // has not seen a `done` event). A dialect with no terminator appends what it held back and
    // a `done` event (vLLM legacy); idempotent. Default: nothing, so the stream is truncated.
    virtual void decode_stream_end(StreamState& state, std::vector<StreamEvent>& out) const;
    // Reads what a whole response tells only in its headers into `result`, after
    // decode_response (TGI's /generate: the prompt's length). Default: nothing.
    virtual void read_response_headers(const ResponseHeaders& headers,
                                       GenerationResult& result) const;
};

// Never returns null: every Dialect has a codec.
const Codec& codec_for(Dialect dialect);

}  // namespace infergate::translators
