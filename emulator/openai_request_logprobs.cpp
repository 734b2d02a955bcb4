// The logprob fields of /v1/completions and /v1/chat/completions (logprobs, top_logprobs,
// prompt_logprobs, echo) and the validators vLLM and SGLang run on them.
#include <algorithm>

#include "emulator/json_util.hpp"
#include "emulator/openai_request_parser.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// A key that is present, even with a null value.
bool has_key(const Value& obj, std::string_view name) {
    return obj.IsObject() &&
           obj.FindMember(Value(rapidjson::StringRef(
               name.data(), static_cast<rapidjson::SizeType>(name.size())))) != obj.MemberEnd();
}

}  // namespace

// pydantic's lax int: integers, integral floats and booleans.
std::optional<OaiError> OaiParser::lax_int(std::string_view name, std::optional<int>& out) const {
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
std::optional<OaiError> OaiParser::parse_logprobs() {
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

}  // namespace infergate::emulator
