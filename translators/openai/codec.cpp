#include "translators/openai/codec.hpp"

#include "translators/openai/common.hpp"
#include "translators/openai/request_codec.hpp"
#include "translators/openai/response_codec.hpp"
#include "translators/openai/stream_codec.hpp"

namespace infergate::translators::openai {

namespace {

// Both routes share every step; the Api picks the few places where they differ. Stateless and
// immutable, so one instance of each serves every thread.
class OpenAiCodec : public Codec {
public:
    Dialect dialect() const override { return dialect_of(api_); }

    Result<GenerationRequest> decode_request(std::string_view body) const override {
        return openai::decode_request(body, api_);
    }
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override {
        openai::encode_response(result, req, out, api_);
    }
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override {
        openai::encode_stream_event(event, state, out, api_);
    }
    void encode_stream_end(StreamState& state, std::string& out) const override {
        openai::encode_stream_end(state, out, api_);
    }
    void encode_error(const Error& error, std::string& out) const override {
        openai::encode_error(error, out);
    }
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override {
        openai::encode_stream_error(error, state, out);
    }

    std::string_view id_prefix() const override {
        return api_ == Api::chat ? "chatcmpl-" : "cmpl-";
    }

    std::string_view upstream_path(const GenerationRequest& /*req*/) const override {
        return route_of(api_);
    }
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override {
        return openai::encode_request(req, options, api_);
    }
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override {
        return openai::decode_response(body, req, api_);
    }
    Result<canonical::ResponseFacts> check_response(std::string_view body,
                                                    const GenerationRequest& req) const override {
        return openai::check_response(body, req, api_);
    }
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override {
        openai::decode_stream_event(data, state, out, api_);
    }

protected:
    explicit OpenAiCodec(Api api) : api_(api) {}

private:
    const Api api_;
};

class CompletionsCodec final : public OpenAiCodec {
public:
    CompletionsCodec() : OpenAiCodec(Api::completions) {}
};

class ChatCodec final : public OpenAiCodec {
public:
    ChatCodec() : OpenAiCodec(Api::chat) {}
};

}  // namespace

const Codec& completions_codec() {
    static const CompletionsCodec codec;
    return codec;
}

const Codec& chat_codec() {
    static const ChatCodec codec;
    return codec;
}

}  // namespace infergate::translators::openai
