#pragma once
// Internal to translators/anthropic: the codec class (members defined by job in
// request_codec.cpp, response_codec.cpp, stream_encode.cpp and stream_decode.cpp) and the wire
// pieces they share.

#include <optional>
#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::anthropic {

class AnthropicCodec final : public Codec {
public:
    Dialect dialect() const override { return Dialect::anthropic; }

    // Client side.
    Result<GenerationRequest> decode_request(std::string_view body) const override;
    void encode_response(const GenerationResult& result, const GenerationRequest& req,
                         std::string& out) const override;
    void encode_stream_event(const StreamEvent& event, StreamState& state,
                             std::string& out) const override;
    void encode_stream_end(StreamState& state, std::string& out) const override;
    void encode_error(const Error& error, std::string& out) const override;
    void encode_stream_error(const Error& error, StreamState& state,
                             std::string& out) const override;
    std::string_view id_prefix() const override { return "msg_"; }

    // Upstream side.
    std::string_view upstream_path(const GenerationRequest& req) const override;
    Result<std::string> encode_request(const GenerationRequest& req,
                                       const UpstreamOptions& options) const override;
    Result<GenerationResult> decode_response(std::string_view body,
                                             const GenerationRequest& req) const override;
    void decode_stream_event(std::string_view data, StreamState& state,
                             std::vector<StreamEvent>& out) const override;
};

namespace wire {

using json::key;     // shared writer helpers (translators/canonical/json.hpp)
using json::string;

// Anthropic message ids start with "msg_"; the exchange's ids get the prefix when they lack it.
std::string message_id(std::string_view id);

// The stop_reason for a canonical finish (api-dialects §10.3); empty = null (no finish, or an
// abort, which Anthropic reports as an error event rather than a stop reason).
std::string_view stop_reason(const canonical::FinishReason* finish);

// Reads `stop_reason` (+ `stop_sequence`) from an object that has them (a message, or a
// message_delta's delta). nullopt = not finished (null/absent); sets `bad` on a wrong type.
std::optional<canonical::FinishReason> read_stop_reason(const json::Value& obj, bool& bad);

// Writes {"input_tokens", ["cache_read_input_tokens",] "output_tokens"}. Anthropic's
// input_tokens is the uncached part only (total = input + cache_creation + cache_read).
void write_usage(json::Writer& w, const canonical::Usage& usage);

// Reads an Anthropic usage object into canonical counts (prompt = the sum of the three input
// counts). Returns a message when a count has the wrong type.
std::optional<std::string> read_usage(const json::Value& usage, canonical::Usage& out);

// Anthropic's error type for an Error (status first for 5xx, then a known Anthropic type).
std::string_view error_type(const canonical::Error& error);

// The HTTP status an Anthropic error type stands for (in-band errors carry only the type).
int status_for_type(std::string_view type);

// A 502 saying what was wrong with the Anthropic backend's output.
canonical::Error upstream_error(std::string message);

// A 502 saying that the backend answered with a tool call, which a client of `client` cannot
// be given yet (tool translation between dialects is not built): never a silent 200 without it.
canonical::Error lost_tool_call(canonical::Dialect client);

// A tool call as a tool_use block {"type", "id", "name", "input"}: the arguments (a JSON
// object, checked by the decoder that read them) as they are; a call without an id gets
// "toolu_<answer id>_<place>".
void write_tool_use(json::Writer& w, const canonical::ToolCall& call, std::string_view answer_id,
                    size_t place);
// The id write_tool_use gives a call that has none.
std::string tool_use_id(std::string_view answer_id, size_t place);

}  // namespace wire
}  // namespace infergate::translators::anthropic
