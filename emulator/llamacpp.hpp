// Pieces shared by llama.cpp's native routes (llamacpp_api.cpp) and its OpenAI layer
// (compat_openai.cpp): the error shape, the timings object, the JSON content type.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

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

// "timings": prompt_n / prompt_ms / predicted_n / predicted_ms and the derived rates, from the
// request's arrival, the first token and now.
struct LlamaTimes {
    std::chrono::steady_clock::time_point received, first;
};
void write_llamacpp_timings(JsonWriter& w, const LlamaTimes& t, int prompt_n, int predicted_n);

// GET /props and GET /v1/models (also /models).
std::string llamacpp_props_body(const Options& options);
std::string llamacpp_models_body(const Options& options);

}  // namespace infergate::emulator
