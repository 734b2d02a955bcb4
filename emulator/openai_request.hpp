// Parsing and validation of /v1/completions and /v1/chat/completions bodies, in the order and
// with the messages of vLLM's OpenAI server or SGLang's OpenAI layer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/logprobs.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

// kTgi / kLlamacpp: those servers' own OpenAI layers (compat_openai.cpp) — parsed with the same
// types, but budgets and sampling checks are left to the caller (raw values below).
enum class OaiFlavor { kVllm, kSglang, kTgi, kLlamacpp };

struct OaiRequest {
    bool chat = false;
    std::string model;  // the name the response carries
    std::vector<PromptKey> prompts;
    int n = 1;
    int max_tokens = 16;  // the resolved token budget
    StopRules stop;
    bool stream = false;
    bool include_usage = false;
    bool continuous_usage = false;
    // As sent, for the compat flavours' own checks.
    std::optional<std::int64_t> requested_max_tokens;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<std::int64_t> top_logprobs;  // chat, as sent (TGI validates it as top_n_tokens)

    // Log probabilities (docs/emulator.md, "Log probabilities"). `logprobs`: asked for, with
    // that many alternatives (completions `logprobs: N`; chat `top_logprobs` when `logprobs` is
    // true); `prompt_logprobs`: the prompt's too (vLLM, and implied by echo with logprobs).
    std::optional<int> logprobs;
    std::optional<int> prompt_logprobs;
    bool echo = false;       // completions: the prompt leads the text
    bool echo_only = false;  // vLLM echo with max_tokens 0: the prompt, and one hidden token
    // Per prompt, its text and tokens, when echo or a prompt listing needs them.
    std::vector<std::string> prompt_texts;
    std::vector<std::vector<PromptToken>> prompt_tokens;

    // Structured output (format.hpp): the answer's text, if the request constrains its output.
    std::optional<std::string> format;
    // The compat flavours: the refusal their own checks give the constraint (TGI's validation,
    // llama.cpp's parser), for the handler to report in its order.
    std::optional<std::string> format_error;
};

struct OaiError {
    int status = 400;
    std::string message;
    // True for errors FastAPI/pydantic raise before the handler runs (malformed JSON, missing or
    // mistyped fields): both servers label those "Bad Request" instead of their own type name.
    bool framework = false;
};

// Fills `out` from a parsed body; returns the first error the real server would report.
// `doc_ok` is false when the body was not valid JSON.
std::optional<OaiError> parse_oai_request(const rapidjson::Document& doc, bool doc_ok, bool chat,
                                          OaiFlavor flavor, const Options& options,
                                          OaiRequest& out);

}  // namespace infergate::emulator
