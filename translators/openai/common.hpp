#pragma once
// Pieces shared by the OpenAI completions and chat codecs (internal to translators/openai/).
// The two routes differ in a handful of places (prompt vs messages, `text` vs `delta.content`,
// the chunk `object` name); every function here takes the Api and branches only there.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::openai {

enum class Api { completions, chat };

canonical::Dialect dialect_of(Api api);
std::string_view route_of(Api api);  // "/v1/completions" or "/v1/chat/completions"

// The `object` value of a stream chunk ("text_completion" or "chat.completion.chunk").
std::string_view chunk_object(Api api);

// OpenAI's finish_reason string for a canonical kind; empty for FinishKind::none (written as null).
std::string_view finish_reason_name(canonical::FinishKind kind);

// Maps any finish value an OpenAI-compatible server sends (OpenAI, vLLM, SGLang, TGI's
// eos_token/stop_sequence, llama.cpp's eos/word/limit/none) to a canonical kind.
canonical::FinishKind parse_finish_kind(std::string_view value);

// Reads a choice's finish: `finish_reason` plus vLLM's `stop_reason` or SGLang's `matched_stop`
// (a string is the stop text that fired, an integer the stop token). Returns nullopt when the
// choice is not finished (null, "" or absent). `budget` fills FinishReason::length on a
// length finish so that dialects reporting the budget (SGLang) can say it.
std::optional<canonical::FinishReason> read_finish(const json::Value& choice,
                                                   std::optional<int64_t> budget);

// Reads an OpenAI `usage` object (prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens); ignores anything that is not an object or an integer.
canonical::Usage read_usage(const json::Value& usage);

bool usage_known(const canonical::Usage& usage);

// Whether `usage` can be written as OpenAI's usage object, whose prompt_tokens,
// completion_tokens and total_tokens are all required (strict clients such as the Vercel AI SDK
// reject one without them): both counts known. Otherwise the object is left out, which every
// OpenAI schema allows, rather than a count made up.
bool usage_complete(const canonical::Usage& usage);

// Writes a complete usage object (usage_complete): prompt_tokens, completion_tokens,
// total_tokens, and prompt_tokens_details.cached_tokens when the cached count is known.
void write_usage(json::Writer& w, const canonical::Usage& usage);
// "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}], the arguments
// as OpenAI's string. A call without an id gets `id_prefix` + its place, or, with an empty
// prefix, no "id" (a request's history keeps what the client sent).
void write_tool_calls(json::Writer& w, const std::vector<canonical::ToolCall>& calls,
                      std::string_view id_prefix);

// The finish_reason of a finished choice in a whole answer, which OpenAI's schemas require to be
// one of their values: a backend that did not say why it ended (vLLM's demo server) gets
// "stop", the ordinary end of a generation.
std::string_view whole_finish_reason(canonical::FinishKind kind, Api api);

// finish_reason_name, within the values the route's schema allows: the completions route has no
// tool_calls (a model that ended on a tool call ended on its own: "stop").
std::string_view route_finish_reason(canonical::FinishKind kind, Api api);

// What only an OpenAI chat client takes from a chat answer's `message` (or a chunk's `delta`):
// its members other than role and content (tool_calls, refusal, reasoning_content, ...), keyed
// "<prefix><key>". For a client of another dialect, tool calls are read into `tool_calls` where
// that client's encoder writes them (an Ollama or Anthropic client: arguments that are not a
// JSON object are an error, those carry an object), and the reasoning into `reasoning`;
// elsewhere the error that says they cannot be carried.
std::optional<canonical::Error> carry(const json::Value& message, std::string_view prefix,
                                      std::optional<canonical::Dialect> client,
                                      canonical::Carried& out,
                                      std::vector<canonical::ToolCall>* tool_calls = nullptr,
                                      std::string* reasoning = nullptr);
// A message's or delta's reasoning as vLLM, SGLang and llama.cpp write it: `reasoning_content`,
// or `reasoning` (vLLM >= 0.11.1 writes both, the same text; newer releases only the second).
// Appended to `out`.
void read_reasoning(const json::Value& message, std::string& out);
// A chunk's `delta.tool_calls` as pieces ([{"index", "id", "type", "function": {"name",
// "arguments"}}], the first piece of a call with its id and name, the others with a fragment of
// the arguments; TGI has written one object instead of a list, and arguments as an object).
std::optional<canonical::Error> read_tool_call_deltas(const json::Value& calls,
                                                      std::vector<canonical::ToolCallDelta>& out);
// The carried members for an OpenAI chat client (null when they came from another dialect).
const canonical::Carried* own(const canonical::Carried& carried);

// Writes the value of an OpenAI error envelope's "error" key: {message, type, param, code}.
void write_error_object(json::Writer& w, const canonical::Error& error);

// The error for an upstream body or event that cannot be read.
canonical::Error upstream_error(std::string message, int status = 502);

// Reads an in-band upstream error (`{"error": {...}}` or `{"error": "text"}`, vLLM's old flat
// `{"object": "error", ...}`, TGI's `http_status_code`); status from an integer code, else 502.
canonical::Error read_upstream_error(const json::Value& doc);

// The sampling settings an OpenAI backend gets for `req`: `sampling`, or the per-item settings
// of an SGLang batch when they all agree. Null when they differ (one set per OpenAI request).
const canonical::SamplingParams* shared_sampling(const canonical::GenerationRequest& req);

// The output budget the client's dialect implies when it named none (api-dialects §10.4):
// SGLang native 128, OpenAI completions 16, OpenAI chat none (the model maximum).
std::optional<int64_t> effective_max_tokens(const canonical::SamplingParams& sampling,
                                            canonical::Dialect client_dialect);

}  // namespace infergate::translators::openai
