#include "emulator/openai_request.hpp"

#include <algorithm>

#include "emulator/json_util.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

constexpr int kDefaultChatBudget = 256;  // stand-in for vLLM's "rest of the context"
constexpr int kDefaultCompletionBudget = 16;
// vLLM's --max-logprobs default, and the vocabulary size -1 ("all") stands for.
constexpr std::int64_t kVllmMaxLogprobs = 20;
constexpr std::int64_t kVocabSize = 164;

// A key that is present, even with a null value.
bool has_key(const Value& obj, std::string_view name) {
    return obj.IsObject() &&
           obj.FindMember(Value(rapidjson::StringRef(
               name.data(), static_cast<rapidjson::SizeType>(name.size())))) != obj.MemberEnd();
}

class Parser {
public:
    Parser(const Value& doc, bool chat, OaiFlavor flavor, const Options& options, OaiRequest& out)
        : doc_(doc),
          chat_(chat),
          vllm_(flavor == OaiFlavor::kVllm),
          flavor_(flavor),
          options_(options),
          out_(out) {}

    std::optional<OaiError> run();

private:
    // pydantic's wording, shortened: "1 validation error for X\nfield\n  message".
    OaiError framework(std::string_view loc, std::string_view message) const {
        std::string text = "1 validation error for ";
        text += chat_ ? "ChatCompletionRequest\n" : "CompletionRequest\n";
        if (!loc.empty()) {  // model validators have no field location
            text += loc;
            text += '\n';
        }
        text += "  ";
        text += message;
        return {400, std::move(text), true};
    }
    static OaiError serving(std::string message) { return {400, std::move(message), false}; }

    std::optional<OaiError> parse_types();
    std::optional<OaiError> parse_prompt();
    std::optional<OaiError> parse_messages();
    std::optional<OaiError> parse_stop();
    std::optional<OaiError> parse_logprobs();
    std::optional<OaiError> lax_int(std::string_view name, std::optional<int>& out) const;
    void add_prompt_detail(std::string text, std::vector<PromptToken> tokens);
    std::optional<OaiError> validate_sampling();
    std::optional<OaiError> resolve_budget();

    const Value& doc_;
    bool chat_;
    bool vllm_;
    OaiFlavor flavor_;
    const Options& options_;
    OaiRequest& out_;

    std::optional<std::int64_t> max_tokens_;
    std::optional<double> temperature_;
    std::optional<double> top_p_;
    std::int64_t n_ = 1;
    bool want_prompt_tokens_ = false;
};

std::optional<OaiError> Parser::run() {
    if (!doc_.IsObject()) {
        return framework("body",
                         "Input should be a valid dictionary or object to extract fields "
                         "from");
    }
    out_.chat = chat_;
    if (auto e = parse_types()) {
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
    return std::nullopt;
}

std::optional<OaiError> Parser::parse_types() {
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

std::optional<OaiError> Parser::parse_stop() {
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

// pydantic's lax int: integers, integral floats and booleans.
std::optional<OaiError> Parser::lax_int(std::string_view name, std::optional<int>& out) const {
    const Value* v = member(doc_, name);
    if (v == nullptr) {
        return std::nullopt;
    }
    std::int64_t value = 0;
    if (v->IsBool()) {
        value = v->GetBool() ? 1 : 0;
    } else if (get_int(doc_, name, value) != Lookup::kOk) {
        return framework(name, "Input should be a valid integer");
    }
    out = static_cast<int>(std::clamp<std::int64_t>(value, -(1 << 30), 1 << 30));
    return std::nullopt;
}

// The logprob fields of CompletionRequest / ChatCompletionRequest and their model validators.
// llama.cpp reads them its own way (compat_openai.cpp); TGI's completions do not know them.
std::optional<OaiError> Parser::parse_logprobs() {
    if (flavor_ == OaiFlavor::kLlamacpp || (flavor_ == OaiFlavor::kTgi && !chat_)) {
        return std::nullopt;
    }
    std::optional<int> prompt_logprobs;
    if (vllm_) {
        if (auto e = lax_int("prompt_logprobs", prompt_logprobs)) {
            return e;
        }
        if (prompt_logprobs && out_.stream && (*prompt_logprobs > 0 || *prompt_logprobs == -1)) {
            return framework("",
                             "Value error, `prompt_logprobs` are not available when "
                             "`stream=True`.");
        }
        if (prompt_logprobs && *prompt_logprobs < -1) {
            return framework("", "Value error, `prompt_logprobs` must be a positive value or -1.");
        }
    }
    if (!chat_) {
        if (get_bool(doc_, "echo", out_.echo) == Lookup::kWrongType) {
            return framework("echo", "Input should be a valid boolean");
        }
        if (auto e = lax_int("logprobs", out_.logprobs)) {
            return e;
        }
        if (vllm_ && out_.logprobs && *out_.logprobs < 0) {
            return framework("", "Value error, `logprobs` must be a positive value.");
        }
        // vLLM: echo computes the prompt's logprobs with the listing's count.
        out_.prompt_logprobs = prompt_logprobs ? prompt_logprobs
                               : out_.echo     ? out_.logprobs
                                               : std::nullopt;
        want_prompt_tokens_ = out_.echo || (vllm_ && out_.prompt_logprobs);
        return std::nullopt;
    }
    bool logprobs = false;
    if (get_bool(doc_, "logprobs", logprobs) == Lookup::kWrongType ||
        (!vllm_ && flavor_ != OaiFlavor::kTgi && has_key(doc_, "logprobs") &&
         member(doc_, "logprobs") == nullptr)) {
        return framework("logprobs", "Input should be a valid boolean");  // SGLang: bool, not None
    }
    std::optional<int> top;
    if (auto e = lax_int("top_logprobs", top)) {
        return e;
    }
    out_.top_logprobs = top;
    if (vllm_) {
        // top_logprobs defaults to 0; an explicit null turns the listing off.
        if (!has_key(doc_, "top_logprobs")) {
            top = 0;
        }
        if (top && *top < -1) {
            return framework("", "Value error, `top_logprobs` must be a positive value or -1.");
        }
        if (top && (*top == -1 || *top > 0) && !logprobs) {
            return framework("",
                             "Value error, when using `top_logprobs`, `logprobs` must be set "
                             "to true.");
        }
        out_.prompt_logprobs = prompt_logprobs;
        want_prompt_tokens_ = prompt_logprobs.has_value();
        if (logprobs && top) {
            out_.logprobs = top;
        }
        return std::nullopt;
    }
    if (logprobs) {
        out_.logprobs = std::max(top.value_or(0), 0);
    }
    return std::nullopt;
}

void Parser::add_prompt_detail(std::string text, std::vector<PromptToken> tokens) {
    out_.prompt_texts.push_back(std::move(text));
    out_.prompt_tokens.push_back(std::move(tokens));
}

std::optional<OaiError> Parser::parse_prompt() {
    const Value* prompt = member(doc_, "prompt");
    static constexpr std::string_view kMissing =
        "Value error, Either prompt or prompt_embeds must be provided and non-empty.";
    if (prompt == nullptr) {
        return vllm_ ? framework("", kMissing) : framework("prompt", "Field required");
    }
    if (prompt->IsString()) {
        if (prompt->GetStringLength() == 0) {
            return framework("", kMissing);
        }
        const std::string_view text(prompt->GetString(), prompt->GetStringLength());
        out_.prompts.push_back(prompt_from_text(text));
        if (want_prompt_tokens_) {
            add_prompt_detail(std::string(text), prompt_tokens_from_text(text));
        }
        return std::nullopt;
    }
    if (!prompt->IsArray() || prompt->Empty()) {
        return framework(prompt->IsArray() ? "" : "prompt",
                         prompt->IsArray() ? kMissing : "Input should be a valid string");
    }
    const Value& first = (*prompt)[0];
    std::vector<std::int64_t> ids;
    if (first.IsInt64()) {  // [int]: one token-id prompt
        for (const Value& id : prompt->GetArray()) {
            if (!id.IsInt64()) {
                return framework("prompt", "Input should be a valid integer");
            }
            ids.push_back(id.GetInt64());
        }
        out_.prompts.push_back(prompt_from_ids(ids));
        if (want_prompt_tokens_) {
            std::vector<PromptToken> tokens = prompt_tokens_from_ids(ids);
            add_prompt_detail(prompt_text(tokens), std::move(tokens));
        }
        return std::nullopt;
    }
    for (const Value& item : prompt->GetArray()) {  // [str] or [[int]]: a batch
        if (item.IsString() && first.IsString()) {
            if (item.GetStringLength() == 0) {
                return serving("The decoder prompt cannot be empty");
            }
            const std::string_view text(item.GetString(), item.GetStringLength());
            out_.prompts.push_back(prompt_from_text(text));
            if (want_prompt_tokens_) {
                add_prompt_detail(std::string(text), prompt_tokens_from_text(text));
            }
        } else if (item.IsArray() && first.IsArray()) {
            ids.clear();
            for (const Value& id : item.GetArray()) {
                if (!id.IsInt64()) {
                    return framework("prompt", "Input should be a valid integer");
                }
                ids.push_back(id.GetInt64());
            }
            if (ids.empty()) {
                return serving("The decoder prompt cannot be empty");
            }
            out_.prompts.push_back(prompt_from_ids(ids));
            if (want_prompt_tokens_) {
                std::vector<PromptToken> tokens = prompt_tokens_from_ids(ids);
                add_prompt_detail(prompt_text(tokens), std::move(tokens));
            }
        } else {
            return framework("prompt", "Input should be a valid string");
        }
    }
    return std::nullopt;
}

std::optional<OaiError> Parser::parse_messages() {
    const Value* messages = member(doc_, "messages");
    if (messages == nullptr) {
        return framework("messages", "Field required");
    }
    if (!messages->IsArray()) {
        return framework("messages", "Input should be a valid list");
    }
    ChatPromptBuilder builder;
    ChatPromptTokens tokens;  // only when a prompt listing needs them
    for (const Value& m : messages->GetArray()) {
        const Value* role = member(m, "role");
        if (role == nullptr || !role->IsString()) {
            return framework("messages.role", "Field required");
        }
        builder.add_message({role->GetString(), role->GetStringLength()});
        if (want_prompt_tokens_) {
            tokens.add_message({role->GetString(), role->GetStringLength()});
        }
        const Value* content = member(m, "content");
        if (content == nullptr) {
            continue;
        }
        auto add = [&](const Value& text) {
            builder.add_content({text.GetString(), text.GetStringLength()});
            if (want_prompt_tokens_) {
                tokens.add_content({text.GetString(), text.GetStringLength()});
            }
        };
        if (content->IsString()) {
            add(*content);
        } else if (content->IsArray()) {
            for (const Value& part : content->GetArray()) {
                const Value* text = member(part, "text");
                if (text != nullptr && text->IsString()) {
                    add(*text);
                }
            }
        } else {
            return framework("messages.content", "Input should be a valid string");
        }
    }
    out_.prompts.push_back(builder.finish());
    if (want_prompt_tokens_) {
        std::vector<PromptToken> list = tokens.finish();
        add_prompt_detail(prompt_text(list), std::move(list));
    }
    return std::nullopt;
}

std::optional<OaiError> Parser::validate_sampling() {
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

std::optional<OaiError> Parser::resolve_budget() {
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

}  // namespace

std::optional<OaiError> parse_oai_request(const rapidjson::Document& doc, bool doc_ok, bool chat,
                                          OaiFlavor flavor, const Options& options,
                                          OaiRequest& out) {
    if (!doc_ok) {
        return OaiError{400, "JSON decode error", true};
    }
    Parser parser(doc, chat, flavor, options, out);
    return parser.run();
}

}  // namespace infergate::emulator
