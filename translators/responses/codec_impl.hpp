#pragma once
// Internal to translators/responses: the codec class (members defined by job in
// request_decode.cpp, response_encode.cpp and stream_encode.cpp) and the wire pieces they share.

#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::responses {

class ResponsesCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::openai_responses; }

    // Client side.
    Result<GenerationRequest> decode_request(std::string_view body) const override;
    Result<GenerationRequest> decode_stateful(std::string_view body,
                                              const ConversationLookup* lookup) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;
    std::string_view id_prefix() const override { return "resp_"; }
    void init_client_stream(StreamState& state, const GenerationRequest& req) const override;
    std::optional<StoredTurn> stored_turn(const GenerationRequest& req,
                                          const GenerationResult& result) const override;

    // Upstream side: no backend speaks it to infergate (requests go to the backend's chat
    // API), so these only refuse.
    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
};

namespace wire {

using json::key;
using json::string;

// An output item's id: `prefix` ("msg", "fc", "rs") + the response id's own part + its place in
// the output, so that a stream's items and the stored answer's have the same ids.
std::string item_id(std::string_view prefix, std::string_view response_id, size_t place);
// A function call's call_id: the backend's id, else one made up from the response id.
std::string call_id(const canonical::ToolCall& call, std::string_view response_id, size_t place);

// Output items, each {"id", "type", ...} with status "completed".
void write_message_item(json::Writer& w, std::string_view id, std::string_view text,
                        std::string_view status);
void write_reasoning_item(json::Writer& w, std::string_view id, std::string_view text);
void write_function_call_item(json::Writer& w, std::string_view id, std::string_view call_id,
                              const canonical::ToolCall& call, std::string_view status);

// {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
//  "output_tokens_details": {"reasoning_tokens"}, "total_tokens"}
void write_usage(json::Writer& w, const canonical::Usage& usage);

// How an answer ended: "completed", "incomplete" (with its reason: "max_output_tokens",
// "content_filter") or "failed" (an abort).
struct Status {
    std::string_view status = "completed";
    std::string_view incomplete_reason;  // empty: incomplete_details is null
};
Status status_of(const canonical::FinishReason* finish);

// The response object's members, written inside an open object. `output_json` is the output
// array's JSON ("[]" while in progress); `usage` null writes "usage": null; `error` non-null
// writes "error": {code, message}.
struct ResponseHead {
    std::string_view id;
    int64_t created = 0;
    std::string_view model;
    Status status;
    std::string_view output_json = "[]";
    const canonical::Usage* usage = nullptr;
    const canonical::Error* error = nullptr;
};
void write_response(json::Writer& w, const ResponseHead& head,
                    const canonical::GenerationRequest::Responses& echo);

// The error code a Responses client reads for an error ("server_error", "rate_limit_exceeded",
// "invalid_prompt", ...).
std::string_view error_code(const canonical::Error& error);
// The status of the answer's items: "completed" when the answer completed, else "incomplete".
std::string_view item_status(const Status& status);
canonical::Error in_responses_terms(canonical::Error e);

}  // namespace wire
}  // namespace infergate::translators::responses
