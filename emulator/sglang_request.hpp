// Parsing of SGLang's native /generate body: GenerateReqInput.normalize_batch_and_arguments and
// SamplingParams(**params).verify(), with the errors they raise.
#pragma once

#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

inline constexpr int kDefaultMaxNewTokens = 128;

// What went wrong, in SGLang's terms: a ValueError becomes a 400 (or an in-band event on a
// stream); a TypeError from SamplingParams(**params) escapes as a bare 500.
enum class Failure { kNone, kValueError, kTypeError };

struct ItemParams {
    int max_new_tokens = kDefaultMaxNewTokens;
    int n = 1;
    StopRules stop;
};

struct Prompt {
    PromptKey key;
    std::string rid;
};

// Fills `prompts` and `params` (one per prompt) from the body; `batch` is set when the answer
// is an array (list input or n > 1). On kValueError `message` says why.
Failure parse_generate(const rapidjson::Value& doc, const Options& options,
                       std::vector<Prompt>& prompts, std::vector<ItemParams>& params, bool& batch,
                       std::string& message);

}  // namespace infergate::emulator
