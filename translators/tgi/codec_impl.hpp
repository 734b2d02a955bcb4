#pragma once
// Internal to translators/tgi: the TGI codec class (members defined by job in request_decode.cpp,
// request_encode.cpp, response_codec.cpp, stream_encode.cpp, stream_decode.cpp and codec.cpp)
// and the wire helpers they share.

#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::tgi {

class TgiCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::tgi; }

    Result<GenerationRequest> decode_request(std::string_view body) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;
    void prepare_request(GenerationRequest& req, std::string_view path) const override;
    void response_headers(const GenerationResult& result, HeaderList& out) const override;

    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
    Error decode_error(int status, std::string_view body) const override;
    void read_response_headers(const ResponseHeaders& headers,
                               GenerationResult& result) const override;
};

namespace wire {

using json::key;     // shared writer helpers (translators/canonical/json.hpp)
using json::string;

// TGI's native finish_reason for a canonical one (api-dialects §10.3): a stop whose string is
// known is "stop_sequence", any other stop (EOS, stop token, unknown) is "eos_token".
std::string_view finish_name(const canonical::FinishReason& f);

// Reads TGI's finish_reason string; false when it is not one TGI sends.
bool read_finish(std::string_view name, canonical::FinishReason& out);

// TGI's error_type for a canonical error: Error::code when it carries one (a TGI upstream's own
// error_type, kept by decode_error), else one derived from the status.
std::string_view error_type(const Error& e);

// An Error for TGI's {"error": "...", "error_type": "..."} (HTTP status when known).
Error error_from(int status, std::string message, std::string_view error_type);

// A 422 for a TGI client's invalid request (TGI's own status for validation failures, §5.6);
// defined in request_decode.cpp, also used by request_encode.cpp.
Error invalid(std::string message, std::string param);

// A 502 saying what was wrong with the TGI backend's output.
Error upstream_error(std::string message);

// TGI's Token {id, text, logprob, special} (router/src/lib.rs); `prefill` writes its
// PrefillToken {id, text, logprob} instead. An unknown id is 0 (TGI's client types require an
// integer), an unknown logprob null (TGI serializes the NaN of the first prompt token so).
void token(json::Writer& w, const canonical::TokenAlternative& t, bool prefill = false);

// Reads a Token or PrefillToken object at `path` (logprob null or absent: unknown).
std::optional<std::string> read_token(const json::Value& v, const std::string& path,
                                      canonical::TokenAlternative& out);

// Removes the longest stop string that `text` ends with; returns it (nullopt when none).
std::optional<std::string> trim_stop(std::string& text, const std::vector<std::string>& stops);

}  // namespace wire

}  // namespace infergate::translators::tgi
