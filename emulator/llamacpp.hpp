// Pieces shared by llama.cpp's native routes (llamacpp_api.cpp) and its OpenAI layer
// (compat_openai.cpp): the error shape, the timings object, the JSON content type.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/json_util.hpp"
#include "emulator/options.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

inline constexpr std::string_view kLlamaJson = "application/json; charset=utf-8";
inline constexpr std::string_view kLlamaBuild = "b6500-emulator";

// {"error":{"code","message","type"}} (format_error_response); the type follows the status.
void render_llamacpp_error(int status, std::string_view message, std::string& body);
std::string_view llamacpp_error_type(int status);
const ErrorStyle& llamacpp_errors();

// "timings": cache_n / prompt_n / prompt_ms / predicted_n / predicted_ms and the derived rates,
// from when the slot took the request (its arrival, unless it queued), the first token and now.
// Of `prompt` tokens, `cached` came from the prefix cache (cache_n); the rest were evaluated
// (prompt_n).
struct LlamaTimes {
    std::chrono::steady_clock::time_point received, first;
};
void write_llamacpp_timings(JsonWriter& w, const LlamaTimes& t, int prompt, int cached,
                            int predicted_n);

// Token probabilities a request asks for (c392e509's params_from_json): `n_probs`, with
// `logprobs` as its alias while n_probs is 0; on the chat route `logprobs: true` sets n_probs to
// `top_logprobs` (default 20) first. Values of the wrong type count as absent, as json_value()
// has it. Returns the message of the 500 for top_logprobs without logprobs.
struct LlamaProbs {
    int n = 0;  // > 0: completion_probabilities / logprobs with n alternatives
    bool post_sampling = false;
};
std::optional<std::string> llamacpp_probs(const rapidjson::Value& doc, bool chat, LlamaProbs& out);

// What token k of `out` sent (text_to_send): its share of the text once the partial-stop
// hold-back let it through; "" for a held-back token and for EOS.
std::string_view llamacpp_sent_text(const Output& out, int k,
                                    const std::vector<std::string>& stops);
// How many tokens completion_probabilities has on a non-stream answer: a stop word's tokens
// are dropped from its end.
int llamacpp_listed_tokens(const Output& out);

// EOS decodes to "" (common_token_to_piece without special tokens).
inline constexpr std::string_view kLlamaEosText = "";

// GET /props and GET /v1/models (also /models).
std::string llamacpp_props_body(const Options& options);
std::string llamacpp_models_body(const Options& options);

}  // namespace infergate::emulator
