// The OpenAI request parser's order and its general steps: field types, stop, sampling checks and
// the token budget (the logprob fields and the prompts are in openai_request_logprobs.cpp and
// openai_request_prompt.cpp).
#include "emulator/openai_request.hpp"

#include <algorithm>

#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/openai_request_parser.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

constexpr int kDefaultChatBudget = 256;  // stand-in for vLLM's "rest of the context"
constexpr int kDefaultCompletionBudget = 16;
// vLLM's --max-logprobs default, and the vocabulary size -1 ("all") stands for.
constexpr std::int64_t kVllmMaxLogprobs = 20;
constexpr std::int64_t kVocabSize = 164;

}  // namespace

std::optional<OaiError> OaiParser::run() {
    if (!doc_.IsObject()) {
        return framework("body",
                         "Input should be a valid dictionary or object to extract fields "
                         "from");
    }
    out_.chat = chat_;
    if (auto e = parse_types()) {
        return e;
    }
    if (auto e = parse_format()) {
        return e;
    }
    if (auto e = parse_logprobs()) {
        return e;
    }
    if (auto e = chat_ ? parse_messages() : parse_prompt()) {
        return e;
    }
    if (flavor_ == OaiFlavor::kTgi || flavor_ == OaiFlavor::kLlamacpp) {
        out_.requested_max_tokens = max_tokens_;
        out_.temperature = temperature_;
        out_.top_p = top_p_;
        out_.n = static_cast<int>(std::clamp<std::int64_t>(n_, 1, 1024));
        if (out_.model.empty() || (flavor_ == OaiFlavor::kTgi && out_.model == "tgi")) {
            out_.model = options_.model;
        }
        out_.format_error = std::move(format_invalid_);
        return std::nullopt;
    }
    const Value* stream_options = member(doc_, "stream_options");
    if (vllm_ && stream_options != nullptr && !out_.stream) {
        return framework("", "Value error, Stream options can only be defined when `stream=True`.");
    }
    if (!vllm_ && !chat_ && max_tokens_ && *max_tokens_ <= 0) {
        return framework("max_tokens", "Value error, max_tokens must be positive");
    }
    // vLLM checks the model before anything the engine would reject.
    if (vllm_ && !out_.model.empty() && out_.model != options_.model) {
        return OaiError{404, "The model `" + out_.model + "` does not exist.", false};
    }
    if (out_.model.empty()) {
        // vLLM answers with its served name; SGLang echoes its DEFAULT_MODEL_NAME.
        out_.model = vllm_ ? options_.model : "default";
    }
    if (auto e = validate_sampling()) {
        return e;
    }
    if (auto e = resolve_budget()) {
        return e;
    }
    const std::int64_t total =
        static_cast<std::int64_t>(out_.prompts.size()) * out_.n * std::max(out_.max_tokens, 1);
    if (total > kMaxTotalTokens) {
        return serving("emulator limit: " + std::to_string(total) +
                       " tokens requested over all "
                       "choices, at most " +
                       std::to_string(kMaxTotalTokens) + " allowed.");
    }
    if (format_invalid_) {
        return serving(std::move(*format_invalid_));  // the engine's grammar checks come last
    }
    return std::nullopt;
}

std::optional<OaiError> OaiParser::parse_format() {
    FormatAsk ask = read_oai_format(doc_, flavor_, chat_);
    if (!ask.error) {
        out_.format = std::move(ask.text);
        return std::nullopt;
    }
    FormatError& e = *ask.error;
    if (e.kind == FormatError::Kind::kInvalid) {
        format_invalid_ = std::move(e.message);
        return std::nullopt;
    }
    if (flavor_ == OaiFlavor::kTgi) {
        // serde's path and message, which the handler puts after axum's prefix.
        return OaiError{422, e.where + ": " + e.message, true};
    }
    return framework(e.where, e.message);
}

std::optional<OaiError> OaiParser::parse_types() {
    if (const Value* model = member(doc_, "model")) {
        if (!model->IsString()) {
            return framework("model", "Input should be a valid string");
        }
        out_.model.assign(model->GetString(), model->GetStringLength());
    }
    if (get_bool(doc_, "stream", out_.stream) == Lookup::kWrongType) {
        return framework("stream", "Input should be a valid boolean");
    }
    if (const Value* so = member(doc_, "stream_options")) {
        if (!so->IsObject()) {
            return framework("stream_options", "Input should be a valid dictionary");
        }
        // vLLM's StreamOptions.include_usage defaults to true, SGLang's to false.
        bool include = vllm_;
        bool continuous = false;
        if (get_bool(*so, "include_usage", include) == Lookup::kWrongType ||
            get_bool(*so, "continuous_usage_stats", continuous) == Lookup::kWrongType) {
            return framework("stream_options", "Input should be a valid boolean");
        }
        out_.include_usage = include;
        out_.continuous_usage = vllm_ ? include && continuous : continuous;
    }
    std::int64_t value = 0;
    for (const char* name : {"max_completion_tokens", "max_tokens"}) {
        if (!chat_ && name[4] == 'c') {
            continue;  // completions have no max_completion_tokens
        }
        const Lookup got = get_int(doc_, name, value);
        if (got == Lookup::kWrongType) {
            return framework(name, "Input should be a valid integer");
        }
        if (got == Lookup::kOk && !max_tokens_) {
            max_tokens_ = value;
        }
    }
    switch (get_int(doc_, "n", n_)) {
        case Lookup::kWrongType:
            return framework("n", "Input should be a valid integer");
        default:
            break;
    }
    double number = 0;
    for (auto [name, target] : {std::pair{"temperature", &temperature_}, {"top_p", &top_p_}}) {
        const Lookup got = get_number(doc_, name, number);
        if (got == Lookup::kWrongType) {
            return framework(name, "Input should be a valid number");
        }
        if (got == Lookup::kOk) {
            *target = number;
        }
    }
    if (const Lookup got = get_int(doc_, "seed", value); got == Lookup::kWrongType) {
        return framework("seed", "Input should be a valid integer");
    } else if (got == Lookup::kOk) {
        out_.stop.seed = value;
    }
    const char* keep_key = vllm_ ? "include_stop_str_in_output" : "no_stop_trim";
    for (auto [name, target] : {std::pair{"ignore_eos", &out_.stop.ignore_eos},
                                {keep_key, &out_.stop.keep_stop_string}}) {
        if (get_bool(doc_, name, *target) == Lookup::kWrongType) {
            return framework(name, "Input should be a valid boolean");
        }
    }
    return parse_stop();
}

std::optional<OaiError> OaiParser::parse_stop() {
    if (const Value* stop = member(doc_, "stop")) {
        if (stop->IsString()) {
            out_.stop.strings.emplace_back(stop->GetString(), stop->GetStringLength());
        } else if (stop->IsArray()) {
            for (const Value& s : stop->GetArray()) {
                if (!s.IsString()) {
                    return framework("stop", "Input should be a valid string");
                }
                out_.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        } else {
            return framework("stop", "Input should be a valid string");
        }
    }
    if (const Value* ids = member(doc_, "stop_token_ids")) {
        if (!ids->IsArray()) {
            return framework("stop_token_ids", "Input should be a valid list");
        }
        for (const Value& id : ids->GetArray()) {
            if (!id.IsInt64()) {
                return framework("stop_token_ids", "Input should be a valid integer");
            }
            out_.stop.token_ids.push_back(id.GetInt64());
        }
    }
    return std::nullopt;
}


std::optional<OaiError> OaiParser::validate_sampling() {
    if (n_ < 1) {
        return serving("n must be at least 1, got " + std::to_string(n_) + ".");
    }
    if (n_ > 1024) {
        return serving("n must be at most 1024, got " + std::to_string(n_) + ".");
    }
    out_.n = static_cast<int>(n_);
    if (temperature_ && *temperature_ < 0.0) {
        return serving("temperature must be non-negative, got " + py_float(*temperature_) + ".");
    }
    if (vllm_ && temperature_ && *temperature_ > 2.0) {
        return serving("temperature must be in [0, 2], got " + py_float(*temperature_) + ".");
    }
    if (top_p_ && !(*top_p_ > 0.0 && *top_p_ <= 1.0)) {
        return serving("top_p must be in (0, 1], got " + py_float(*top_p_) + ".");
    }
    if (max_tokens_ && *max_tokens_ < 0) {
        return serving(
            vllm_ ? "max_tokens must be at least 0, got " + std::to_string(*max_tokens_) + "."
                  : "max_new_tokens must be at least 0, got " + std::to_string(*max_tokens_) + ".");
    }
    if (vllm_) {
        // The engine's _validate_logprobs: -1 means the whole vocabulary.
        for (auto [what, count] :
             {std::pair{"sample", out_.logprobs}, {"prompt", out_.prompt_logprobs}}) {
            const std::int64_t n = count == -1 ? kVocabSize : count.value_or(0);
            if (n > kVllmMaxLogprobs) {
                return serving(
                    std::string("Requested ") + what + " logprobs of " + std::to_string(n) +
                    ", which is greater than max allowed: " + std::to_string(kVllmMaxLogprobs));
            }
        }
    }
    return std::nullopt;
}

std::optional<OaiError> OaiParser::resolve_budget() {
    const int limit = options_.max_model_len;
    int longest = 0;
    for (const PromptKey& p : out_.prompts) {
        longest = std::max(longest, p.tokens);
    }
    if (!vllm_) {
        if (longest >= limit) {
            return serving("The input (" + std::to_string(longest) +
                           " tokens) is longer than the model's context length (" +
                           std::to_string(limit) + " tokens).");
        }
        // SGLang's scheduler silently clips the budget to what is left of the context.
        const std::int64_t wanted = max_tokens_ ? *max_tokens_
                                    : chat_     ? kDefaultChatBudget
                                                : kDefaultCompletionBudget;
        out_.max_tokens = static_cast<int>(std::min<std::int64_t>(wanted, limit - longest - 1));
        return std::nullopt;
    }
    if (!max_tokens_ && chat_) {
        if (longest >= limit) {
            return serving("This model's maximum context length is " + std::to_string(limit) +
                           " tokens. However, you requested " + std::to_string(longest) +
                           " tokens in the messages, Please reduce the length of the messages.");
        }
        out_.max_tokens = std::min(kDefaultChatBudget, limit - longest);
        return std::nullopt;
    }
    const std::int64_t budget = max_tokens_ ? *max_tokens_ : kDefaultCompletionBudget;
    if (longest + budget > limit) {
        return serving("This model's maximum context length is " + std::to_string(limit) +
                       " tokens. However, you requested " + std::to_string(longest + budget) +
                       " tokens (" + std::to_string(longest) + " in the messages, " +
                       std::to_string(budget) +
                       " in the completion). Please reduce the length of the messages or "
                       "completion.");
    }
    out_.max_tokens = static_cast<int>(budget);
    if (out_.echo && budget == 0) {
        // vLLM asks the engine for one token and shows only the prompt.
        out_.echo_only = true;
        out_.max_tokens = 1;
    }
    return std::nullopt;
}

std::optional<OaiError> parse_oai_request(const rapidjson::Document& doc, bool doc_ok, bool chat,
                                          OaiFlavor flavor, const Options& options,
                                          OaiRequest& out) {
    if (!doc_ok) {
        return OaiError{400, "JSON decode error", true};
    }
    OaiParser parser(doc, chat, flavor, options, out);
    return parser.run();
}

}  // namespace infergate::emulator
