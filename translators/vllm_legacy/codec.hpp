#pragma once
// vLLM's legacy demo server, POST /generate (api-dialects §3.2, §9, §11.12).

#include <string>
#include <string_view>
#include <vector>

#include "translators/codec.hpp"

namespace infergate::translators::vllm_legacy {

const Codec& codec();

// The dialect's stream has no terminator and no finish reasons: the server just closes the
// body (api-dialects §10.1). The exchange must therefore treat a CLEAN end of the HTTP body as
// the end of a vLLM-legacy upstream stream (not as a truncation), and call decode_stream_end()
// there. A connection that breaks mid-body is still a truncation.
constexpr bool ends_at_eof() { return true; }

// Called (through Codec::decode_stream_end) at the clean end of a vLLM-legacy upstream body (after
// the last record went through decode_stream_event). Appends a chunk for any text still held back
// (a possible stop-string start that turned out to be final) and then a `done` event. Idempotent
// via state.ended.
void decode_stream_end(StreamState& state, std::vector<StreamEvent>& out);

// Both directions need the prompt text, because the wire echoes it in front of every output:
// it lives in StreamState::prompt. The codec's init_client_stream (vLLM-legacy client) and
// init_upstream_stream (vLLM-legacy backend) set it with set_stream_prompt(state,
// req.prompts[0].text).
void set_stream_prompt(StreamState& state, std::string_view prompt);
const std::string& stream_prompt(const StreamState& state);

}  // namespace infergate::translators::vllm_legacy
