// Ollama's /api/generate and /api/chat request: the fields the emulator reads, decoded and checked
// in the order and with the messages of server/routes.go (ShouldBindJSON, then the handler).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

struct OllamaRequest {
    bool chat = false;
    std::string model;  // echoed as sent
    bool stream = true;
    bool raw = false;
    std::string prompt;  // after the template (generate)
    PromptKey key;
    bool load_only = false;  // empty prompt / no messages: a model-load request
    int budget = 0;
    StopRules stop;
    bool logprobs = false;  // `logprobs`, with `top_logprobs` alternatives (0-20)
    int top_logprobs = 0;
    std::optional<std::string> format;  // `format`'s structured-output text (format.hpp)
};

// Returns {status, message} of the first error, or status 0.
std::pair<int, std::string> parse_ollama(const rapidjson::Value& doc, bool chat,
                                         const Options& options, OllamaRequest& out);

// encoding/json's message for a body that is not JSON (empty, cut short, a bad character).
std::string go_json_error(std::string_view body, const rapidjson::Document& doc);

}  // namespace infergate::emulator
