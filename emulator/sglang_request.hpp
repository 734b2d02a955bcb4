// Parsing of SGLang's native /generate body: GenerateReqInput.normalize_batch_and_arguments and
// SamplingParams(**params).verify(), with the errors they raise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/logprobs.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

inline constexpr int kDefaultMaxNewTokens = 128;

// What went wrong, in SGLang's terms: a ValueError becomes a 400 (or an in-band event on a
// stream); a TypeError from SamplingParams(**params) escapes as a bare 500; a field of the wrong
// type is FastAPI's validation error (400, SGLang's flat ErrorResponse).
enum class Failure { kNone, kValueError, kTypeError, kValidation };

struct ItemParams {
    int max_new_tokens = kDefaultMaxNewTokens;
    int n = 1;
    StopRules stop;
    // return_logprob, logprob_start_len (-1: the output only), top_logprobs_num,
    // return_text_in_logprobs: each a scalar or one per item.
    bool return_logprob = false;
    int logprob_start_len = -1;
    int top_logprobs_num = 0;
    bool text_in_logprobs = false;
    // json_schema / regex / ebnf: the structured-output text (format.hpp).
    std::optional<std::string> format;
};

struct Prompt {
    PromptKey key;
    std::string rid;
    const rapidjson::Value* source = nullptr;  // text or ids, for the prompt's tokens
    std::vector<PromptToken> tokens;           // only when its input logprobs are asked
};

// Fills `prompts` and `params` (one per prompt) from the body; `batch` is set when the answer
// is an array (list input or n > 1). On kValueError `message` says why.
Failure parse_generate(const rapidjson::Value& doc, const Options& options,
                       std::vector<Prompt>& prompts, std::vector<ItemParams>& params, bool& batch,
                       std::string& message);

}  // namespace infergate::emulator
