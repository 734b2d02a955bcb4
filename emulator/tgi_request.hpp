// Parsing of TGI's GenerateRequest / CompatGenerateRequest (router/src/lib.rs) and the checks of
// router/src/validation.rs, with axum's rejections for bodies that do not deserialize.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "emulator/generator.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

struct TgiRequest {
    std::string_view inputs;
    PromptKey key;
    int max_new_tokens = 0;
    bool details = false;
    bool decoder_input_details = false;
    bool return_full_text = false;
    int top_n_tokens = 0;   // details.top_tokens / stream top_tokens
    bool sampling = false;  // do_sample or any sampling knob: details.seed is then reported
    std::optional<std::uint64_t> seed;
    StopRules stop;
    bool stream = false;  // POST / only
    std::optional<std::string> format;  // parameters.grammar's structured-output text (format.hpp)
};

struct TgiError {
    enum Kind { kNone, kSyntax, kShape, kValidation } kind = kNone;
    std::string message;  // the full text: axum's plain text, or "Input validation error: ..."
};

// `compat` parses POST /'s body (with `stream`, and return_full_text defaulting to true as for
// a text-generation pipeline). `streaming` adds the checks only /generate_stream makes.
TgiError parse_tgi_request(std::string_view body, const rapidjson::Document& doc, bool doc_ok,
                           bool compat, const Options& options, TgiRequest& out);
// Validation that depends on whether the answer streams (POST / decides from the body).
TgiError validate_tgi_stream(const TgiRequest& req);

// serde's words for a JSON value in an "invalid type" error (`string "x"`, `integer `5``, map)
// and where serde_json gave up reading `body` (" at line L column C"; its end, for a complete
// document).
std::string serde_type(const rapidjson::Value& v);
std::string serde_position(std::string_view body);

// TGI's --max-top-n-tokens default.
inline constexpr std::int64_t kTgiMaxTopNTokens = 5;
// validation.rs's check of top_n_tokens (also the chat routes' top_logprobs).
std::optional<std::string> tgi_check_top_n(std::optional<std::int64_t> top_n_tokens);

// Shared with TGI's OpenAI routes: validation.rs's sampling checks.
std::optional<std::string> tgi_check_sampling(std::optional<double> temperature,
                                              std::optional<double> top_p,
                                              std::optional<std::int64_t> top_k,
                                              std::optional<std::int64_t> max_new_tokens);

}  // namespace infergate::emulator
