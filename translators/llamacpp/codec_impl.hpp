#pragma once
// Internal to translators/llamacpp: the llama.cpp codec class and the wire pieces its request,
// response and stream codecs share. Stateless, so one const instance serves every thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::llamacpp {

class LlamacppCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::llamacpp; }

    // Client side (request_decode.cpp, response_codec.cpp, stream_codec.cpp).
    Result<GenerationRequest> decode_request(std::string_view body) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;

    // Upstream side.
    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
};

// The wire pieces, defined in wire.cpp.
namespace wire {

using json::key;     // shared writer helpers (translators/canonical/json.hpp)
using json::string;

// llama.cpp's stop_type / stopping_word pair for a canonical finish (api-dialects §10.3).
struct StopInfo {
    std::string_view stop_type;
    std::string_view stopping_word;
};
StopInfo stop_info(const canonical::FinishReason& finish);

// The finish a final llama.cpp object describes: its stop_type (or the pre-2024 stopped_eos /
// stopped_word / stopped_limit booleans), stopping_word, and the budget `n_predict` that was sent.
// Returns a message when a field has the wrong type.
std::optional<std::string> read_finish(const json::Value& obj, std::optional<int64_t> n_predict,
                                       canonical::FinishReason& out);

// The `timings` object of a final llama.cpp object, every member a number as llama-server writes
// them: cache_n (when known), prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second,
// predicted_n, predicted_ms, predicted_per_token_ms, predicted_per_second. The durations are
// what the exchange measured (`t`): the prompt is the wait for the first token, prediction the
// time from there to the last one; a whole answer shows only its total, which counts as
// prediction. A count or duration that is unknown or zero makes its rates 0, never null.
void write_timings(json::Writer& w, std::optional<int64_t> cached, std::optional<int64_t> prompt,
                   std::optional<int64_t> predicted, const canonical::Timing& t);

// tokens_evaluated / tokens_predicted, and the cached part of the prompt: timings.cache_n where
// the build reports it, else tokens_evaluated - timings.prompt_n (prompt_n counts only the
// tokens the slot had to evaluate). Returns a message on a wrong type.
std::optional<std::string> read_counts(const json::Value& obj, canonical::Usage& usage);

// `tokens` (the ids of the generated tokens) into `ids`. Returns a message on a wrong type.
std::optional<std::string> read_tokens(const json::Value& obj, std::vector<int64_t>& ids);

// Writes `"tokens": [ids...]`.
void write_tokens(json::Writer& w, const std::vector<int64_t>& ids);

// `completion_probabilities` (one entry per token: id, token, bytes, logprob or prob,
// top_logprobs or top_probs) into `out`. Returns a message when malformed.
std::optional<std::string> read_probs(const json::Value& obj,
                                      std::vector<canonical::TokenLogprob>& out);
// Writes `"completion_probabilities": [...]` as llama-server c392e509 does (probs_vector_to_json:
// probabilities with post_sampling_probs), at most `top` alternatives per token.
void write_probs(json::Writer& w, const std::vector<canonical::TokenLogprob>& entries,
                 bool post_sampling_probs, size_t top);

// The members of a result object that only a llama.cpp client can take (id_slot,
// generation_settings, prompt, has_new_line, truncated, tokens_cached, timings, ...): every
// member the canonical model does not read.
void carry(const json::Value& obj, canonical::Carried& out);

// The carried members for a llama.cpp client (null when they came from another dialect).
const canonical::Carried* own(const canonical::Carried& carried);

// The error object llama.cpp writes: {"code": status, "message": ..., "type": ...}.
void error_object(json::Writer& w, const canonical::Error& error);

// The n_predict that was (or would be) sent upstream for `req`; nullopt = unlimited.
std::optional<int64_t> budget(const GenerationRequest& req);

// A 502 saying what was wrong with the llama.cpp backend's output.
canonical::Error upstream_error(std::string message);

}  // namespace wire

}  // namespace infergate::translators::llamacpp
