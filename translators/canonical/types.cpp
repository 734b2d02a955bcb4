#include "translators/canonical/types.hpp"

#include <algorithm>

#include "translators/canonical/json.hpp"
#include "translators/canonical/output_format.hpp"
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
        case Dialect::openai_responses:
            return "openai_responses";
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
        case Dialect::anthropic:
        case Dialect::openai_responses:
            return std::nullopt;
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
                                           std::initializer_list<std::string_view> carried,
                                           bool carries_output_format) {
    std::string path;
    for (const Extra& e : req.extras) {
        // "infergate.*" keys are markers a codec leaves for itself (TGI's POST / route), not a
        // client's setting.
        if (!e.inert && !e.key.starts_with("infergate.") &&
            std::find(carried.begin(), carried.end(), e.key) == carried.end() &&
            !(carries_output_format && is_output_format_key(req.dialect, e.key, false))) {
            path = e.key;
            break;
        }
    }
    for (size_t i = 0; path.empty() && i < req.messages.size(); ++i) {
        for (const Extra& e : req.messages[i].extras) {
            if (!e.inert) {
                path = "messages[" + std::to_string(i) + "]." + e.key;
                break;
            }
        }
    }
    if (path.empty()) {
        for (const Extra& e : req.sampling_extras) {
            if (!e.inert &&
                !(carries_output_format && is_output_format_key(req.dialect, e.key, true))) {
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

FinishKind answer_finish(const GenerationResult& result) {
    FinishKind first = FinishKind::none;
    for (const Choice& c : result.choices) {
        if (c.finish.kind == FinishKind::tool_calls) {
            return FinishKind::tool_calls;
        }
        if (first == FinishKind::none) {
            first = c.finish.kind;
        }
    }
    return first;
}

std::string_view sniff_image_type(std::string_view base64) {
    // The first 12 bytes (16 base64 characters) tell every format taken.
    unsigned char head[12] = {};
    size_t n = 0;
    uint32_t bits = 0;
    int have = 0;
    for (size_t i = 0; i < base64.size() && i < 16; ++i) {
        const char c = base64[i];
        int v = -1;
        if (c >= 'A' && c <= 'Z') {
            v = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            v = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            v = c - '0' + 52;
        } else if (c == '+' || c == '-') {
            v = 62;
        } else if (c == '/' || c == '_') {
            v = 63;
        } else {
            break;
        }
        bits = (bits << 6) | static_cast<uint32_t>(v);
        have += 6;
        if (have >= 8) {
            have -= 8;
            head[n++] = static_cast<unsigned char>(bits >> have);
        }
    }
    const std::string_view b(reinterpret_cast<const char*>(head), n);
    if (b.starts_with("\x89PNG\r\n\x1a\n")) {
        return "image/png";
    }
    if (b.starts_with("\xff\xd8\xff")) {
        return "image/jpeg";
    }
    if (b.starts_with("GIF87a") || b.starts_with("GIF89a")) {
        return "image/gif";
    }
    if (n >= 12 && b.starts_with("RIFF") && b.substr(8, 4) == "WEBP") {
        return "image/webp";
    }
    return {};
}

namespace {

// An Anthropic client's tools ([{name, description, input_schema, cache_control, type}]) as
// function tools. Server tools (a `type` other than "custom": web search, bash, the text
// editor, ...) run at Anthropic and have no equivalent.
std::optional<Error> anthropic_tools(const json::Value& tools, std::string_view backend,
                                     std::string& out) {
    if (!tools.IsArray()) {
        return bad_request("'tools' must be a list of {\"name\", \"input_schema\"} objects",
                           "tools");
    }
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartArray();
    for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const json::Value& t = tools[i];
        if (!t.IsObject()) {
            return bad_request("'" + at + "' must be an object", at);
        }
        if (const json::Value* type = json::find(t, "type");
            type != nullptr && !type->IsNull() &&
            (!type->IsString() || json::view(*type) != "custom")) {
            return bad_request("'" + at + "' (type " + json::to_string(*type) +
                                   ") is a server tool that runs at Anthropic; it cannot be "
                                   "carried to " +
                                   std::string(backend) +
                                   ", which takes function tools only ({\"name\", "
                                   "\"description\", \"input_schema\"})",
                               at + ".type");
        }
        const json::Value* name = json::find(t, "name");
        if (name == nullptr || !name->IsString()) {
            return bad_request("'" + at + ".name' must be a string", at + ".name");
        }
        const json::Value* schema = json::find(t, "input_schema");
        if (schema == nullptr || !schema->IsObject()) {
            return bad_request("'" + at + ".input_schema' must be a JSON schema object",
                               at + ".input_schema");
        }
        w.StartObject();
        json::key(w, "type");
        json::string(w, "function");
        json::key(w, "function");
        w.StartObject();
        json::key(w, "name");
        json::string(w, json::view(*name));
        if (const json::Value* d = json::find(t, "description"); d != nullptr && d->IsString()) {
            json::key(w, "description");
            json::string(w, json::view(*d));
        }
        json::key(w, "parameters");
        json::write_raw(w, json::to_string(*schema));
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
    return std::nullopt;
}

// An Anthropic client's tool_choice ({"type": "auto" | "any" | "tool" | "none", "name",
// "disable_parallel_tool_use"}) in OpenAI's shape.
std::optional<Error> anthropic_tool_choice(const json::Value& choice, FunctionTools& out) {
    const json::Value* type = choice.IsObject() ? json::find(choice, "type") : nullptr;
    if (type == nullptr || !type->IsString()) {
        return bad_request(
            "'tool_choice' must be an object like {\"type\": \"auto\"} (auto, any, tool or "
            "none)",
            "tool_choice");
    }
    const std::string_view kind = json::view(*type);
    if (kind == "auto") {
        out.tool_choice = "\"auto\"";
    } else if (kind == "any") {
        out.tool_choice = "\"required\"";
    } else if (kind == "none") {
        out.tool_choice = "\"none\"";
    } else if (kind == "tool") {
        const json::Value* name = json::find(choice, "name");
        if (name == nullptr || !name->IsString()) {
            return bad_request("'tool_choice.name' must name the tool to call", "tool_choice.name");
        }
        json::StringOut os{&out.tool_choice};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "type");
        json::string(w, "function");
        json::key(w, "function");
        w.StartObject();
        json::key(w, "name");
        json::string(w, json::view(*name));
        w.EndObject();
        w.EndObject();
    } else {
        return bad_request(
            "'tool_choice.type' must be auto, any, tool or none, got '" + std::string(kind) + "'",
            "tool_choice.type");
    }
    if (const json::Value* one = json::find(choice, "disable_parallel_tool_use");
        one != nullptr && one->IsBool()) {
        out.one_call_at_a_time = one->GetBool();
    }
    return std::nullopt;
}

}  // namespace

Result<FunctionTools> function_tools(const GenerationRequest& req, std::string_view backend) {
    FunctionTools out;
    const Extra* tools = find_extra(req, "tools");
    const Extra* choice = find_extra(req, "tool_choice");
    if (req.dialect != Dialect::anthropic) {
        if (tools != nullptr && !tools->inert) {
            if (auto e = check_function_tools(tools->json, backend)) {
                return std::move(*e);
            }
            out.tools = tools->json;
        }
        if (choice != nullptr && choice->json != "null") {
            out.tool_choice = choice->json;
        }
        return out;
    }
    if (tools != nullptr && tools->json != "null") {
        json::Document doc;
        if (json::parse(tools->json, doc)) {
            return bad_request("'tools' must be a list", "tools");
        }
        if (!doc.IsArray() || !doc.Empty()) {
            if (auto e = anthropic_tools(doc, backend, out.tools)) {
                return std::move(*e);
            }
        }
    }
    if (choice != nullptr && choice->json != "null") {
        json::Document doc;
        if (json::parse(choice->json, doc)) {
            return bad_request("'tool_choice' must be an object", "tool_choice");
        }
        if (auto e = anthropic_tool_choice(doc, out)) {
            return std::move(*e);
        }
    }
    return out;
}

}  // namespace infergate::canonical
