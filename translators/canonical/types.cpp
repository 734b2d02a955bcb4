#include "translators/canonical/types.hpp"

#include <algorithm>

#include "translators/canonical/json.hpp"
#include "translators/canonical/stream_state.hpp"

namespace infergate::canonical {

std::string_view to_string(Dialect d) {
    switch (d) {
        case Dialect::sglang: return "sglang";
        case Dialect::openai_completions: return "openai_completions";
        case Dialect::openai_chat: return "openai_chat";
        case Dialect::tgi: return "tgi";
        case Dialect::ollama_generate: return "ollama_generate";
        case Dialect::ollama_chat: return "ollama_chat";
        case Dialect::llamacpp: return "llamacpp";
        case Dialect::vllm_legacy: return "vllm_legacy";
        case Dialect::anthropic: return "anthropic";
    }
    return "unknown";
}

std::optional<int64_t> default_max_tokens(Dialect d) {
    switch (d) {
        case Dialect::sglang: return 128;
        case Dialect::openai_completions: return 16;
        case Dialect::vllm_legacy: return 16;
        case Dialect::openai_chat:
        case Dialect::tgi:
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
        case Dialect::llamacpp:
        case Dialect::anthropic: return std::nullopt;
    }
    return std::nullopt;
}

Error bad_request(std::string message, std::string param) {
    Error e;
    e.status = 400;
    e.message = std::move(message);
    e.type = "invalid_request_error";
    e.param = std::move(param);
    return e;
}

std::optional<int64_t> token_id_key(std::string_view key) {
    if (key.empty() || key.size() > 10) {
        return std::nullopt;
    }
    int64_t id = 0;
    for (const char c : key) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        id = id * 10 + (c - '0');
    }
    if (id > 2147483647) {
        return std::nullopt;
    }
    return id;
}

void add_logit_bias(std::vector<LogitBias>& biases, int64_t token, double bias) {
    for (LogitBias& b : biases) {
        if (b.token == token) {
            b.bias = bias;
            return;
        }
    }
    biases.push_back(LogitBias{token, bias});
}

std::optional<std::string> logit_bias_from_object(
    const std::vector<std::pair<std::string, double>>& members, std::vector<LogitBias>& out) {
    std::vector<std::pair<std::string, double>> by_key;
    for (const auto& member : members) {
        auto it = std::find_if(by_key.begin(), by_key.end(),
                               [&](const auto& m) { return m.first == member.first; });
        if (it != by_key.end()) {
            it->second = member.second;
        } else {
            by_key.push_back(member);
        }
    }
    for (const auto& [key, bias] : by_key) {
        const std::optional<int64_t> id = token_id_key(key);
        if (!id) {
            return key;
        }
        add_logit_bias(out, *id, bias);
    }
    return std::nullopt;
}

bool is_inert(std::string_view key, std::string_view json, const InertRule* rules, size_t count) {
    if (json == "null") {
        return true;
    }
    for (size_t i = 0; i < count; ++i) {
        if (rules[i].key != key) {
            continue;
        }
        if (rules[i].values == "*") {
            return true;
        }
        std::string_view values = rules[i].values;
        while (!values.empty()) {
            const size_t bar = values.find('|');
            if (values.substr(0, bar) == json) {
                return true;
            }
            values = bar == std::string_view::npos ? std::string_view() : values.substr(bar + 1);
        }
    }
    return false;
}

bool penalties_active(const SamplingParams& s) {
    return s.repetition_penalty.value_or(1.0) != 1.0 || s.frequency_penalty.value_or(0.0) != 0.0 ||
           s.presence_penalty.value_or(0.0) != 0.0;
}

namespace {

// Where a dialect keeps its sampling settings (GenerationRequest::sampling_extras).
std::string_view sampling_prefix(Dialect d) {
    switch (d) {
        case Dialect::sglang:
            return "sampling_params.";
        case Dialect::tgi:
            return "parameters.";
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
            return "options.";
        default:
            return "";
    }
}

}  // namespace

const Extra* find_extra(const GenerationRequest& req, std::string_view key) {
    for (const Extra& e : req.extras) {
        if (e.key == key) {
            return &e;
        }
    }
    return nullptr;
}

std::optional<Error> refuse_foreign_extras(const GenerationRequest& req, std::string_view backend,
                                           std::string_view carried) {
    std::string path;
    for (const Extra& e : req.extras) {
        // "infergate.*" keys are markers a codec leaves for itself (TGI's POST / route), not a
        // client's setting.
        if (!e.inert && !e.key.starts_with("infergate.") && (carried.empty() || e.key != carried)) {
            path = e.key;
            break;
        }
    }
    if (path.empty()) {
        for (const Extra& e : req.sampling_extras) {
            if (!e.inert) {
                path.assign(sampling_prefix(req.dialect)).append(e.key);
                break;
            }
        }
    }
    if (path.empty()) {
        return std::nullopt;
    }
    return bad_request("'" + path + "' cannot be carried to " + std::string(backend) +
                           ": it has no equivalent there, and infergate passes such a setting "
                           "only to a backend that speaks the client's own API; remove it",
                       path);
}

std::string client_param(Dialect client, std::string_view name) {
    struct Spelling {
        Dialect dialect;
        std::string_view name;
        std::string_view path;
    };
    // Where a dialect's own name differs from the canonical one (api-dialects §10.5).
    static constexpr Spelling kSpellings[] = {
        {Dialect::sglang, "max_tokens", "sampling_params.max_new_tokens"},
        {Dialect::sglang, "min_tokens", "sampling_params.min_new_tokens"},
        {Dialect::sglang, "seed", "sampling_params.sampling_seed"},
        {Dialect::sglang, "include_stop_str_in_output", "sampling_params.no_stop_trim"},
        {Dialect::sglang, "logprobs", "return_logprob"},
        {Dialect::tgi, "max_tokens", "parameters.max_new_tokens"},
        {Dialect::tgi, "include_stop_str_in_output", "parameters.stop"},
        {Dialect::tgi, "logprobs", "parameters.top_n_tokens"},
        {Dialect::tgi, "top_logprobs", "parameters.top_n_tokens"},
        {Dialect::sglang, "top_logprobs", "top_logprobs_num"},
        {Dialect::openai_completions, "top_logprobs", "logprobs"},
        {Dialect::llamacpp, "top_logprobs", "n_probs"},
        {Dialect::ollama_generate, "max_tokens", "options.num_predict"},
        {Dialect::ollama_generate, "repetition_penalty", "options.repeat_penalty"},
        {Dialect::ollama_generate, "logprobs", "logprobs"},
        {Dialect::ollama_chat, "max_tokens", "options.num_predict"},
        {Dialect::ollama_chat, "repetition_penalty", "options.repeat_penalty"},
        {Dialect::ollama_chat, "logprobs", "logprobs"},
        {Dialect::llamacpp, "max_tokens", "n_predict"},
        {Dialect::llamacpp, "repetition_penalty", "repeat_penalty"},
        {Dialect::llamacpp, "logprobs", "n_probs"},
        {Dialect::anthropic, "stop", "stop_sequences"},
    };
    for (const Spelling& s : kSpellings) {
        if (s.dialect == client && s.name == name) {
            return std::string(s.path);
        }
    }
    std::string path(name == "logprobs" || name == "top_logprobs" ? std::string_view()
                                                                  : sampling_prefix(client));
    path.append(name);
    return path;
}

Error unsupported_setting(Dialect client, std::string_view name, std::string_view backend,
                          std::string_view instead) {
    std::string param = client_param(client, name);
    std::string message = "'" + param + "' has no equivalent in " + std::string(backend) + "; " +
                          std::string(instead);
    return bad_request(std::move(message), std::move(param));
}

Usage StreamState::aggregate_usage() const {
    if (usage_final) {
        return usage;
    }
    Usage total;
    const int per_prompt = n > 0 ? n : 1;
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceState& c = choices[i];
        total.completion_tokens = total.completion_tokens.value_or(0) + c.completion_tokens;
        if (i % static_cast<size_t>(per_prompt) == 0) {
            if (c.prompt_tokens) {
                total.prompt_tokens = total.prompt_tokens.value_or(0) + *c.prompt_tokens;
            }
            if (c.cached_tokens) {
                total.cached_tokens = total.cached_tokens.value_or(0) + *c.cached_tokens;
            }
        }
    }
    if (!total.prompt_tokens && usage.prompt_tokens) {
        total.prompt_tokens = usage.prompt_tokens;
    }
    return total;
}

std::optional<Error> check_function_tools(std::string_view json, std::string_view backend) {
    json::Document doc;
    if (json::parse(json, doc) || !doc.IsArray()) {
        return bad_request(
            "'tools' must be a list of {\"type\": \"function\", \"function\": "
            "{...}} objects",
            "tools");
    }
    for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const json::Value* type = doc[i].IsObject() ? json::find(doc[i], "type") : nullptr;
        const json::Value* function = doc[i].IsObject() ? json::find(doc[i], "function") : nullptr;
        if (type == nullptr || !type->IsString() || json::view(*type) != "function" ||
            function == nullptr || !function->IsObject()) {
            return bad_request("'" + at + "' cannot be carried to " + std::string(backend) +
                                   ": only function tools ({\"type\": \"function\", "
                                   "\"function\": {...}}) can",
                               at);
        }
        if (const json::Value* strict = json::find(*function, "strict");
            strict != nullptr && strict->IsBool() && strict->GetBool()) {
            return bad_request("'" + at + ".function.strict' cannot be carried to " +
                                   std::string(backend) +
                                   ", which does not hold a call to its schema that strictly; "
                                   "leave it out",
                               at + ".function.strict");
        }
    }
    return std::nullopt;
}

}  // namespace infergate::canonical
