#pragma once
// Internal to translators/sglang: the SGLang codec class. Its members are defined by job in
// request_decode.cpp, response_codec.cpp, stream_encode.cpp, stream_decode.cpp and codec.cpp;
// everything else reaches it through sglang::codec(). Stateless, so one const instance serves
// every thread.

#include "translators/codec.hpp"

namespace infergate::translators::sglang {

class SglangCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::sglang; }

    // Client side (request_decode.cpp, response_codec.cpp, stream_encode.cpp, codec.cpp).
    Result<GenerationRequest> decode_request(std::string_view body) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;
    size_t choice_ids_wanted(const GenerationRequest& req) const override;

    // Upstream side.
    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
};

}  // namespace infergate::translators::sglang
