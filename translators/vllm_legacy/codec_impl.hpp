#pragma once
// Internal to translators/vllm_legacy: the codec class (members defined in request_codec.cpp,
// response_codec.cpp and stream_codec.cpp) and the wire helpers they share.

#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::vllm_legacy {

class VllmLegacyCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::vllm_legacy; }
    // Newline-delimited JSON records ("\0" before PR #2756, Nov 2024); the proxy's
    // framing::RecordScanner splits on both.
    Framing framing() const override { return Framing::ndjson; }

    Result<GenerationRequest> decode_request(std::string_view body) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;
    void init_client_stream(StreamState& state, const GenerationRequest& req) const override;

    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
    void init_upstream_stream(StreamState& state, const GenerationRequest& req) const override;
    void decode_stream_end(StreamState& state, std::vector<StreamEvent>& out) const override;
};

namespace wire {

// The most choices one response may carry (bounds memory on a broken upstream).
inline constexpr int kMaxChoices = 1024;

using json::key;     // shared writer helpers (translators/canonical/json.hpp)
using json::string;

// Writes one string value made of `prefix` + `rest` (the echoed prompt and the output).
void joined_string(json::Writer& w, std::string_view prefix, std::string_view rest);

// vLLM SamplingParams keys the canonical model has no field for but a real server accepts; a
// vLLM-legacy client's values travel as raw JSON in GenerationRequest::extras.
bool is_passthrough_key(std::string_view key);

// A 502 saying what was wrong with the backend's output.
canonical::Error upstream_error(std::string message);

}  // namespace wire
}  // namespace infergate::translators::vllm_legacy
