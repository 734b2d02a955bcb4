#pragma once
// The canonical model: the one vocabulary every dialect is translated to and from.
// Plain value types; no I/O, no allocation policy beyond the standard library.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace infergate::canonical {

// Every wire dialect infergate speaks, on either side.
enum class Dialect {
    sglang,              // SGLang native POST /generate
    openai_completions,  // POST /v1/completions
    openai_chat,         // POST /v1/chat/completions
    tgi,                 // Hugging Face TGI POST /generate, /generate_stream, POST /
    ollama_generate,     // Ollama POST /api/generate (NDJSON)
    ollama_chat,         // Ollama POST /api/chat (NDJSON)
    llamacpp,            // llama.cpp llama-server POST /completion
    vllm_legacy,         // vLLM's demo server POST /generate
    anthropic,           // Anthropic POST /v1/messages
};

std::string_view to_string(Dialect d);

// The output length a client of `d` gets when it names none (api-dialects §10.4); nullopt where
// the dialect's answer is "until the end of the context" (OpenAI chat, TGI v3+, Ollama and
// llama.cpp's -1) or it has no default (Anthropic requires max_tokens). Encoders for another
// dialect write this value explicitly, so the client gets what its own server would give it.
std::optional<int64_t> default_max_tokens(Dialect d);

enum class RequestKind { completion, chat };

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

// A translation or proxy error, rendered by the client dialect's error codec.
// `status` is the HTTP status to answer with; `type` is an OpenAI-style error type
// ("invalid_request_error", "not_found_error", "upstream_error", ...); `param` names the
// offending field with its JSON path when there is one ("sampling_params.temperature").
struct Error {
    int status = 500;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // empty = none
    std::string code;   // empty = none
};

Error bad_request(std::string message, std::string param = {});

// A value or an Error; the translators never throw on bad input.
template <class T>
class Result {
public:
    Result(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {}      // NOLINT(google-explicit-constructor)
    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() { return std::get<0>(v_); }
    const T& value() const { return std::get<0>(v_); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

// One prompt: text, or token ids (never both).
struct Prompt {
    std::string text;
    std::vector<int64_t> token_ids;
    bool is_tokens = false;
};

struct ChatMessage {
    std::string role;     // system, developer, user, assistant, tool
    std::string content;  // text parts joined
    std::string name;     // optional
};

// Sampling settings. An empty optional means "the client did not say"; encoders then write the
// client dialect's default explicitly where the backend's default differs (api-dialects §10.4).
struct SamplingParams {
    std::optional<int64_t> max_tokens;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> top_k;
    std::optional<double> min_p;
    std::optional<double> frequency_penalty;
    std::optional<double> presence_penalty;
    std::optional<double> repetition_penalty;
    std::optional<int64_t> min_tokens;
    std::optional<int64_t> seed;
    std::optional<bool> ignore_eos;
    std::optional<bool> skip_special_tokens;
    // Keep the matched stop string in the output (SGLang no_stop_trim, vLLM
    // include_stop_str_in_output).
    std::optional<bool> keep_stop_str;
    std::vector<std::string> stop;
    std::vector<int64_t> stop_token_ids;
    int n = 1;

    bool operator==(const SamplingParams&) const = default;
};

// A key the canonical model does not name, kept as raw JSON so that it survives a pass-through to
// a backend of the same family (e.g. SGLang's `lora_path`, OpenAI's `response_format`).
struct Extra {
    std::string key;
    std::string json;  // the value, serialized compactly

    bool operator==(const Extra&) const = default;
};

struct GenerationRequest {
    Dialect dialect = Dialect::openai_completions;  // the dialect it was decoded from
    RequestKind kind = RequestKind::completion;
    std::string model;  // as the client sent it; empty when the dialect has none (/generate)

    // Completion prompts. `prompt_is_list` says the client sent a list (a batch), which changes
    // the response shape even for one element.
    std::vector<Prompt> prompts;
    bool prompt_is_list = false;

    std::vector<ChatMessage> messages;  // chat only

    SamplingParams sampling;
    // SGLang batches may carry one sampling_params object per item; empty when all items share
    // `sampling`. Dialects without per-item settings refuse a request whose items differ.
    std::vector<SamplingParams> item_sampling;

    bool echo = false;        // OpenAI completions: prepend the prompt to the output
    bool non_text_content = false;  // chat content had non-text parts (images, audio, ...)

    bool stream = false;
    bool include_usage = false;     // OpenAI stream_options.include_usage
    bool continuous_usage = false;  // vLLM/SGLang stream_options.continuous_usage_stats

    std::vector<std::string> request_ids;  // SGLang rid (one, or one per batch item)

    // Logprobs: kept for same-family pass-through.
    std::optional<bool> return_logprob;   // SGLang return_logprob / OpenAI chat logprobs
    std::optional<int64_t> top_logprobs;  // SGLang top_logprobs_num / OpenAI top_logprobs / completions logprobs

    std::vector<Extra> extras;           // unknown top-level keys
    std::vector<Extra> sampling_extras;  // unknown keys inside SGLang sampling_params
};

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

// Members of a backend's answer that the canonical model has no name for, kept as raw JSON for
// a client that speaks the backend's own dialect: llama.cpp's `generation_settings`, `id_slot`,
// `tokens_cached` and `timings`, Anthropic's tool_use and thinking blocks, the `tool_calls` of
// Ollama and OpenAI-dialect engines. Only the encoder of dialect `from` writes them, and each
// dialect says where (docs/dialects.md, "Fields carried between the same dialect"). Decoders
// fill it only when told that the client speaks their dialect (GenerationRequest::dialect for a
// whole answer, StreamState::client for a stream), so no other pair pays for it.
struct Carried {
    Dialect from = Dialect::openai_chat;
    std::vector<Extra> members;  // key (a dialect-defined path) and raw value

    bool empty() const { return members.empty(); }
    // The member named `key`, or null.
    const Extra* find(std::string_view key) const {
        for (const Extra& e : members) {
            if (e.key == key) {
                return &e;
            }
        }
        return nullptr;
    }
    bool operator==(const Carried&) const = default;
};

enum class FinishKind { none, stop, length, tool_calls, content_filter, abort };

struct FinishReason {
    FinishKind kind = FinishKind::none;
    std::optional<std::string> matched_text;  // the stop string that fired, when known
    std::optional<int64_t> matched_token;     // the stop token id that fired (EOS included), when known
    std::optional<int64_t> length;            // the token budget that was reached
    std::string message;                      // abort reason

    bool operator==(const FinishReason&) const = default;
};

struct Usage {
    std::optional<int64_t> prompt_tokens;
    std::optional<int64_t> completion_tokens;
    std::optional<int64_t> cached_tokens;

    bool operator==(const Usage&) const = default;
};

struct Choice {
    int index = 0;
    std::string text;  // generated text only (never the prompt)
    FinishReason finish;
    Usage usage;  // per choice where the dialect reports it (SGLang meta_info)
    std::string id;
    std::vector<int64_t> token_ids;  // the generated tokens' ids, when the backend sent them
    Carried carried;                 // for a client of the backend's own dialect only
};

// Wall-clock facts of one request as the proxy measured them (codecs are pure and cannot
// measure time): for the dialects whose answers carry durations (Ollama's `*_duration`,
// llama.cpp's `timings`). Absent where nothing was measured.
struct Timing {
    std::optional<int64_t> created_unix_ns;  // when the answer was made (a precise `created`)
    std::optional<int64_t> total_ns;         // request received to the end of the answer
    std::optional<int64_t> load_ns;          // model loading (never measured by a proxy)
    std::optional<int64_t> prompt_eval_ns;   // request received to the first token
    std::optional<int64_t> eval_ns;          // first token to last token
};

struct GenerationResult {
    std::string id;
    std::string model;
    int64_t created = 0;
    std::vector<Choice> choices;  // sorted by index
    Usage usage;                  // aggregate
    Timing timing;                // set by the exchange before the client's encoder runs
};

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

// One decoded stream event.
//   chunk: new text (a delta, possibly empty) for choice `index`, optionally its finish reason,
//          optionally that choice's running token counts in `usage`.
//   usage: the aggregate usage of the whole request (OpenAI's final usage-only chunk).
//   error: an in-band error; the stream ends after it.
//   done:  the upstream's own terminator ([DONE], or the end of a dialect without one).
struct StreamEvent {
    // keepalive: the backend said it is still working (an SSE comment such as `: ping`, an
    // Anthropic ping event); `text` holds the comment text. Passed on where the client's dialect
    // has a form for it, so that nothing in between cuts a long prefill for silence.
    enum class Type { chunk, usage, error, done, keepalive };
    Type type = Type::chunk;
    int index = 0;
    std::string text;
    std::optional<FinishReason> finish;
    Usage usage;
    Error error;
    // The ids of the tokens this chunk carries, when the backend sent them (llama.cpp `tokens`,
    // SGLang `output_ids`, vLLM `token_ids`, TGI `token.id`). A chunk may carry a token whose
    // text is empty (EOS, a held-back stop-string prefix): it is still a token.
    std::vector<int64_t> token_ids;
    Carried carried;  // for a client of the backend's own dialect only
};

}  // namespace infergate::canonical
