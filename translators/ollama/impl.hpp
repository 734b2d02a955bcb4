#pragma once
// Internal to translators/ollama/: the steps both routes share, parameterised by the Api.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/ollama/codec.hpp"

namespace infergate::translators::ollama {

enum class Api { generate, chat };

// "stop" or "length" (Ollama has no other generation finish); empty for FinishKind::none.
std::string_view done_reason_name(canonical::FinishKind kind);

canonical::Error upstream_error(std::string message);

// What only an Ollama client takes from an Ollama answer (`doc`: a whole answer or one stream
// line): the message's members other than role and content, as "message.<key>" (tool_calls,
// thinking, images), and the top-level members the canonical model does not read (context,
// ...). For a client of another dialect that takes tool calls (canonical::takes_tool_calls),
// they are read into `tool_calls` (each arguments object as compact JSON text) and the message's
// thinking into `thinking` (canonical::takes_reasoning); for the others,
// or without `tool_calls`, the error that says they cannot be carried.
std::optional<canonical::Error> carry(const json::Value& doc,
                                      std::optional<canonical::Dialect> client,
                                      canonical::Carried& out,
                                      std::vector<canonical::ToolCall>* tool_calls = nullptr,
                                      std::string* thinking = nullptr);
// The carried members for an Ollama client (null when they came from another dialect).
const canonical::Carried* own(const canonical::Carried& carried);

// request_decode.cpp
Result<GenerationRequest> decode_request(std::string_view body, Api api);

// request_encode.cpp
// True when `req` goes to /api/generate (raw completions, and Ollama generate requests that
// still have their system + prompt shape); otherwise /api/chat.
bool sends_generate(const GenerationRequest& req);
Result<std::string> encode_request(const GenerationRequest& req, const UpstreamOptions& options);

// response_codec.cpp
void encode_response(const GenerationResult& result, const GenerationRequest& req,
                     const Timing& timing, std::string& out, Api api);
void encode_error(const Error& error, std::string& out);
Result<GenerationResult> decode_response(std::string_view body, const GenerationRequest& req);

// Reads done_reason; a load/unload answer is an error (the backend did not generate).
Result<canonical::FinishReason> read_done_reason(const json::Value& doc,
                                                 const GenerationRequest* req);
canonical::Usage read_counts(const json::Value& doc);

// stream_codec.cpp
void encode_stream_event(const StreamEvent& event, StreamState& state, std::string& out, Api api);
void encode_stream_end(StreamState& state, const Timing& timing, std::string& out, Api api);
void encode_stream_error(const Error& error, StreamState& state, std::string& out);
void decode_stream_event(std::string_view data, StreamState& state, std::vector<StreamEvent>& out);

// "tool_calls": [{"id", "function": {"index", "name", "arguments"}}] as Ollama writes them
// (api/types.go ToolCall: "id" omitted when empty; "index" the call's place in the turn, from
// `first_index`; none in a request's history, which keeps what the client sent), each call's
// arguments written as they are: the callers have checked that they hold a JSON object (Ollama
// carries an object).
void write_tool_calls(json::Writer& w, std::span<const canonical::ToolCall> calls,
                      std::optional<size_t> first_index);
// Writes "model", "created_at" as the first members of an object.
void write_head(json::Writer& w, std::string_view model, int64_t created_s, const Timing& timing);
// The log probabilities a line carries, as Ollama writes them (api/types.go Logprob: token,
// logprob, bytes and top_logprobs both omitempty); null `entries` or none: no key (omitempty).
struct LogprobsOut {
    const std::vector<canonical::TokenLogprob>* entries = nullptr;
    size_t top = 0;
};
void write_logprobs(json::Writer& w, const LogprobsOut& lp);
// `logprobs` of an Ollama line or answer into `out`; an error when malformed.
std::optional<canonical::Error> read_logprobs(const json::Value& doc,
                                              std::vector<canonical::TokenLogprob>& out);

// Writes done_reason (when known), the durations (when measured) and the counts (when known),
// and the log probabilities where Ollama puts them: after done_reason in a chat answer
// (ChatResponse), after the counts in a generate answer (GenerateResponse).
void write_tail(json::Writer& w, canonical::FinishKind finish, const canonical::Usage& usage,
                const Timing& timing, Api api = Api::generate, const LogprobsOut& lp = {});

}  // namespace infergate::translators::ollama
