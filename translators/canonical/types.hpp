#pragma once
// The canonical model: the one vocabulary every dialect is translated to and from.
// Plain value types; no I/O, no allocation policy beyond the standard library.

#include <cstdint>
#include <initializer_list>
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
    // OpenAI POST /v1/responses: a client dialect only. Its requests are decoded into the chat
    // request they are equivalent to (`dialect` openai_chat), so every backend's chat encoder
    // takes them as it takes an OpenAI chat client's (docs/dialects.md, "Responses API").
    openai_responses,
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

// A tool call an assistant made: `arguments` is the JSON text of the arguments object exactly
// as the producer wrote it (OpenAI carries it as a string; a dialect that carries an object,
// Ollama's, serialises it compactly), so that it goes on byte for byte where both sides carry
// a string.
struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;

    bool operator==(const ToolCall&) const = default;
};

// An image in a chat message: base64 bytes with their media type, or a URL (an OpenAI
// `image_url` part, an Ollama `images` entry, an Anthropic `image` block).
struct Image {
    std::string media_type;  // image/png, image/jpeg, ...; empty when unknown (base64 only)
    std::string data;        // base64, without a data: prefix
    std::string url;         // set instead of `data` for an image given by URL
    size_t at = 0;           // where in the message's `content` it came (between its text parts)

    bool operator==(const Image&) const = default;
};

// The media type of base64 image bytes from their first bytes (PNG, JPEG, GIF, WebP: what
// Anthropic, OpenAI and Ollama's vision models take); empty for anything else.
std::string_view sniff_image_type(std::string_view base64);

// A key the canonical model does not name, kept as raw JSON so that it survives a pass-through to
// a backend of the same family (e.g. SGLang's `lora_path`, OpenAI's `response_format`).
struct Extra {
    std::string key;
    std::string json;  // the value, serialized compactly
    // The client's own server would not change its output for it: a key it does not read, a
    // null or the documented default ("watermark": false), a setting with no effect on the text
    // (OpenAI's `user`, Ollama's `keep_alive` and runner options). A backend of another family
    // goes without it; any other extra is refused there (refuse_foreign_extras). Set by the
    // client's decoder, which knows its server.
    bool inert = false;

    bool operator==(const Extra&) const = default;
};

struct ChatMessage {
    std::string role;     // system, developer, user, assistant, tool
    std::string content;  // text parts joined
    std::string name;     // optional
    std::vector<ToolCall> tool_calls;  // an assistant's calls, in order
    std::string tool_call_id;          // role tool: the call this message answers
    // Role tool: the result is an error (Anthropic is_error). OpenAI and Ollama have no such
    // flag: their backends get the result's text, as vLLM's own /v1/messages sends it.
    bool tool_error = false;
    // An assistant turn's reasoning as the client sent it back in the history (Ollama
    // `thinking`, vLLM/SGLang `reasoning_content`).
    std::string reasoning;
    // The client's content parts as it sent them (compact JSON), when they were not all text
    // (images, audio, files): an encoder of the client's own family writes them back as they
    // were; the others refuse the request (non_text_content).
    std::string parts_json;
    std::vector<Image> images;  // in the order the client sent them
    // The message's members the canonical model does not name (an OpenAI assistant turn's
    // `refusal`, `annotations`, `audio`, `function_call`, ...), raw: an encoder of the client's
    // own family writes them back, the others refuse the non-inert ones (refuse_foreign_extras).
    std::vector<Extra> extras;

    bool operator==(const ChatMessage&) const = default;
};

// A message's text and images in the order they came: `on_text(std::string_view)` for each run
// of text between images (none when empty), `on_image(const Image&)` for each image.
template <class OnText, class OnImage>
void for_each_part(const ChatMessage& m, OnText&& on_text, OnImage&& on_image) {
    size_t from = 0;
    const auto text = [&](size_t to) {
        to = to < m.content.size() ? to : m.content.size();
        if (to > from) {
            on_text(std::string_view(m.content).substr(from, to - from));
            from = to;
        }
    };
    for (const Image& image : m.images) {
        text(image.at);
        on_image(image);
    }
    text(m.content.size());
}

// A message of text only.
inline ChatMessage text_message(std::string role, std::string content) {
    ChatMessage m;
    m.role = std::move(role);
    m.content = std::move(content);
    return m;
}

// One logit bias: `bias` is added to token `token`'s logit before sampling (OpenAI's scale,
// -100 to 100; -100 in practice bans the token).
struct LogitBias {
    int64_t token = 0;
    double bias = 0;

    bool operator==(const LogitBias&) const = default;
};

// Sampling settings. An empty optional means "the client did not say"; encoders then write the
// client dialect's default explicitly where the backend's default differs (api-dialects §10.4).
// Each encoder writes every setting under the name its engine reads, or refuses the request
// with a 400 naming it: docs/dialects.md, "Parameters", has the table.
struct SamplingParams {
    std::optional<int64_t> max_tokens;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> top_k;
    std::optional<double> min_p;
    std::optional<double> frequency_penalty;
    std::optional<double> presence_penalty;
    std::optional<double> repetition_penalty;
    // Locally typical sampling (TGI, llama.cpp, Ollama); 1 means off.
    std::optional<double> typical_p;
    // How many recent tokens the penalties look at (llama.cpp, Ollama: 64 by default, -1 the
    // whole context); it matters only while a penalty is in effect (penalties_active).
    std::optional<int64_t> repeat_last_n;
    std::optional<int64_t> min_tokens;
    std::optional<int64_t> seed;
    std::optional<bool> ignore_eos;
    std::optional<bool> skip_special_tokens;
    // Keep the matched stop string in the output (SGLang no_stop_trim, vLLM
    // include_stop_str_in_output).
    std::optional<bool> keep_stop_str;
    std::vector<std::string> stop;
    std::vector<int64_t> stop_token_ids;
    std::vector<LogitBias> logit_bias;  // one entry per token, in the client's order
    int n = 1;

    bool operator==(const SamplingParams&) const = default;
};

struct GenerationRequest {
    // The dialect it was decoded from; a Responses request reads openai_chat (the chat request
    // it is equivalent to, which every backend encoder takes) until it is encoded, then
    // openai_responses (Generation::open), which decoders of the answer read as the client's.
    Dialect dialect = Dialect::openai_completions;
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
    // Parts the chat dialects do not translate (audio, files, documents): refused by every
    // backend of another family. Images are translated (ChatMessage::images) where the backend
    // takes them; the others refuse them through non_text_content.
    bool untranslated_parts = false;

    bool stream = false;
    bool include_usage = false;     // OpenAI stream_options.include_usage
    bool continuous_usage = false;  // vLLM/SGLang stream_options.continuous_usage_stats

    std::vector<std::string> request_ids;  // SGLang rid (one, or one per batch item)

    // Log probabilities (docs/dialects.md, "Log probabilities"). `return_logprob`: the client
    // wants each generated token's logprob (SGLang return_logprob, OpenAI chat logprobs, an
    // OpenAI completions logprobs of any number, TGI details, llama.cpp n_probs > 0, Ollama
    // logprobs); `top_logprobs`: how many most likely alternatives per token (0: none).
    std::optional<bool> return_logprob;
    std::optional<int64_t> top_logprobs;
    // The prompt's tokens too, from this index on (SGLang logprob_start_len >= 0; 0 for an
    // OpenAI echo with logprobs and for TGI decoder_input_details); nullopt: generated only.
    std::optional<int64_t> prompt_logprob_start;
    // Output-shape choices of one dialect, set by its decoder and read by its encoder only:
    // SGLang return_text_in_logprobs (token text in its triples, else null), llama.cpp
    // post_sampling_probs (probabilities `prob`/`top_probs` instead of logprobs).
    bool logprob_text = false;
    bool post_sampling_probs = false;
    // TGI's `details`: its answer carries each token's logprob, null where unknown. Backends
    // that can report them are asked; the others are not refused for it (wants_logprobs is
    // false unless the client asked for more: top_n_tokens, decoder_input_details).
    bool logprobs_if_available = false;

    std::vector<Extra> extras;           // unknown top-level keys
    std::vector<Extra> sampling_extras;  // unknown keys inside SGLang sampling_params

    // The Responses API's own state (translators/responses): set by its decoder, read by its
    // encoder and by the proxy's store of answers; empty for every other dialect.
    struct Responses {
        std::string previous_response_id;  // the stored turn this one continues ("" = none)
        bool store = false;                // keep this turn (the client's `store`)
        // This request's `input` as items (compact JSON, item_reference resolved): what a later
        // turn that names this one as its previous gets back.
        std::vector<std::string> input_items;
        // The request's settings the response object repeats ("instructions", "tools", ...),
        // in its order, each with its JSON value.
        std::vector<Extra> echo;
    };
    Responses responses;
};

// ---------------------------------------------------------------------------------------------
// Parameters across dialects
// ---------------------------------------------------------------------------------------------

// A logit_bias key as OpenAI, vLLM and SGLang read it: a token id written in decimal digits
// (Python's int() of the key; at most 10 digits, at most 2^31 - 1). nullopt for anything else.
std::optional<int64_t> token_id_key(std::string_view key);

// Adds `bias` for `token`: one entry per token, at the place of its first appearance, with the
// last value (as a Python dict keyed by token reads a list of pairs).
void add_logit_bias(std::vector<LogitBias>& biases, int64_t token, double bias);

// The biases of an object {"<token id>": bias, ...} from its members in wire order (keys
// unescaped), as the Python servers read it: json.loads keeps a repeated key at its first place
// with its last value, then int() of the keys merges spellings of one token ("7", "007") the
// same way. Returns the first key that is not a token id, or nullopt when all are.
std::optional<std::string> logit_bias_from_object(
    const std::vector<std::pair<std::string, double>>& members, std::vector<LogitBias>& out);

// A decoder's rule for Extra::inert: `key` is inert with any value ("*") or with one of the
// compact JSON texts in `values`, separated by '|' ("false|0"). A null value always is.
struct InertRule {
    std::string_view key;
    std::string_view values;
};
bool is_inert(std::string_view key, std::string_view json, const InertRule* rules, size_t count);
template <size_t N>
bool is_inert(std::string_view key, std::string_view json, const InertRule (&rules)[N]) {
    return is_inert(key, json, rules, N);
}

// Whether a repetition, frequency or presence penalty is in effect: only then does
// repeat_last_n (the penalties' window) change anything.
bool penalties_active(const SamplingParams& s);

// The first client parameter of `req` that a backend of another dialect family cannot carry
// (an extra that is not inert), as a 400 that names it by its path in the client's body
// (`options.mirostat`, `sampling_params.ebnf`, `parameters.adapter_id`) and says that only a
// backend speaking the client's own dialect takes it. `backend` names the backend for the
// message ("a TGI backend"). nullopt when there is none.
// `carried`: keys the backend's encoder writes itself (a client's `tools` and `tool_choice`,
// through function_tools), not refused. `carries_output_format`: the encoder writes the
// client's structured output (canonical/output_format.hpp), so its keys are not refused.
std::optional<Error> refuse_foreign_extras(const GenerationRequest& req, std::string_view backend,
                                           std::initializer_list<std::string_view> carried = {},
                                           bool carries_output_format = false);

// The extra named `key`, or null.
const Extra* find_extra(const GenerationRequest& req, std::string_view key);

// A client's `tools` for the other family of the one wire shape OpenAI and Ollama share
// ([{"type": "function", "function": {"name", "description", "parameters"}}]): nullopt when
// `json` is such a list that `backend` can take as it is, else the 400 naming what it cannot
// (another tool type, OpenAI's `strict`).
std::optional<Error> check_function_tools(std::string_view json, std::string_view backend);

// A client's tools for an OpenAI-family or Ollama backend, in the shape those two share
// ([{"type": "function", "function": {"name", "description", "parameters"}}]): an OpenAI or
// Ollama client's own list as it is (check_function_tools), an Anthropic client's
// {name, description, input_schema} tools converted. `tool_choice` in OpenAI's shape ("auto",
// "none", "required", {"type": "function", "function": {"name"}}; empty when the client gave
// none), and whether the client asked for one call at a time (Anthropic
// disable_parallel_tool_use). An error names what `backend` cannot take (a server tool, another
// tool type, OpenAI's strict).
struct FunctionTools {
    std::string tools;        // empty: no tools
    std::string tool_choice;  // empty: none given
    bool one_call_at_a_time = false;
};
Result<FunctionTools> function_tools(const GenerationRequest& req, std::string_view backend);

// Where a client of `client` wrote the setting the canonical model calls `name` (the field
// names of SamplingParams, and `include_stop_str_in_output` for keep_stop_str): "max_tokens" is
// `options.num_predict` to an Ollama client, `sampling_params.max_new_tokens` to an SGLang one.
std::string client_param(Dialect client, std::string_view name);

// A 400 for a setting `backend` has no way to honour, named as the client wrote it
// (client_param): "'<param>' has no equivalent in <backend>; <instead>".
Error unsupported_setting(Dialect client, std::string_view name, std::string_view backend,
                          std::string_view instead);

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
    // Of completion_tokens, those spent reasoning, where the backend reports them (OpenAI
    // completion_tokens_details.reasoning_tokens, SGLang usage and meta_info reasoning_tokens).
    std::optional<int64_t> reasoning_tokens;

    bool operator==(const Usage&) const = default;
};

// One token with its log probability, as an engine reports it. `token` is its text as the
// engine wrote it (engines cut a partial UTF-8 sequence off, or replace it); `bytes` its raw
// bytes when the engine sent them (llama.cpp, OpenAI chat, Ollama), which may be a partial UTF-8
// sequence. `logprob` is absent for the first prompt token (nothing predicts it); `prob` is set
// instead of it by llama.cpp's post_sampling_probs, which reports probabilities.
struct TokenAlternative {
    std::string token;
    std::optional<int64_t> id;
    std::optional<std::string> bytes;
    std::optional<double> logprob;
    std::optional<double> prob;
    std::optional<bool> special;  // TGI: a special token (EOS, ...)

    bool operator==(const TokenAlternative&) const = default;
};

// A generated or prompt token: the chosen one, and the most likely alternatives at its position
// (most likely first; whether the chosen token is among them is the engine's affair).
struct TokenLogprob : TokenAlternative {
    std::vector<TokenAlternative> top;

    bool operator==(const TokenLogprob&) const = default;
};

struct Choice {
    int index = 0;
    std::string text;  // generated text only (never the prompt)
    std::vector<ToolCall> tool_calls;  // the assistant's tool calls (chat), in order
    // The assistant's reasoning (chat), for a client of another dialect that has a place for it
    // (canonical::takes_reasoning): vLLM/SGLang reasoning_content, Ollama thinking, Anthropic
    // thinking blocks (their signature, Anthropic's own check, stays with Anthropic clients).
    std::string reasoning;
    FinishReason finish;
    Usage usage;  // per choice where the dialect reports it (SGLang meta_info)
    std::string id;
    std::vector<int64_t> token_ids;  // the generated tokens' ids, when the backend sent them
    // One entry per generated token when logprobs were asked and the backend gave them; the
    // prompt's entries (from GenerationRequest::prompt_logprob_start) for a prompt request.
    std::vector<TokenLogprob> logprobs;
    std::vector<TokenLogprob> prompt_logprobs;
    Carried carried;  // for a client of the backend's own dialect only
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

// What the metrics need from a whole answer: its usage, and how it ended (tool_calls when any
// choice called a tool, else the first choice's finish; answer_finish).
struct ResponseFacts {
    Usage usage;
    FinishKind finish = FinishKind::none;

    bool operator==(const ResponseFacts&) const = default;
};

struct GenerationResult {
    std::string id;
    std::string model;
    int64_t created = 0;
    std::vector<Choice> choices;  // sorted by index
    Usage usage;                  // aggregate
    Timing timing;                // set by the exchange before the client's encoder runs
};

// How an answer ended, for the metrics: tool_calls when any choice called a tool, else the
// first choice's finish that says one.
FinishKind answer_finish(const GenerationResult& result);

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

// A piece of a streamed tool call: of the call at `index` among the choice's calls. The first
// piece of a call carries its id (when the backend gave one) and name; `arguments` is the next
// fragment of its arguments' JSON text, to be appended to the ones before.
struct ToolCallDelta {
    int index = 0;
    std::string id;
    std::string name;
    std::string arguments;

    bool operator==(const ToolCallDelta&) const = default;
};

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
    // The log probabilities of the tokens this chunk carries, and, once (on the choice's first
    // chunk), the prompt's (see Choice).
    std::vector<TokenLogprob> logprobs;
    std::vector<TokenLogprob> prompt_logprobs;
    // Pieces of the choice's tool calls (chat): OpenAI's deltas as they come, or one piece per
    // whole call from a dialect that streams whole calls (Ollama).
    std::vector<ToolCallDelta> tool_calls;
    std::string reasoning;  // the next piece of the choice's reasoning (see Choice::reasoning)
    Carried carried;        // for a client of the backend's own dialect only
};

}  // namespace infergate::canonical
