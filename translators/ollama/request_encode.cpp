// Upstream side: the canonical request to an Ollama /api/generate or /api/chat body, with every
// client-dialect default made explicit.

#include <type_traits>
#include <utility>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

using canonical::bad_request;
using canonical::ChatMessage;
using canonical::RequestKind;
using canonical::SamplingParams;

namespace {

bool is_ollama(Dialect d) {
    return d == Dialect::ollama_generate || d == Dialect::ollama_chat;
}

// An Ollama generate client's request still in the shape it decoded to ([system] + user):
// send it back to /api/generate so that its generate-only extras (context, template, suffix,
// images) keep their meaning.
bool generate_shaped(const GenerationRequest& req) {
    if (req.dialect != Dialect::ollama_generate) {
        return false;
    }
    const auto& m = req.messages;
    return (m.size() == 1 && m[0].role == "user") ||
           (m.size() == 2 && m[0].role == "system" && m[1].role == "user");
}

// The tool a tool-result message answers: its own name (Ollama's tool_name, OpenAI's legacy
// name), else the name of the call its tool_call_id refers to in an earlier assistant turn.
std::string_view tool_name(const GenerationRequest& req, const ChatMessage& m) {
    if (!m.name.empty() || m.tool_call_id.empty()) {
        return m.name;
    }
    for (const ChatMessage& earlier : req.messages) {
        for (const canonical::ToolCall& c : earlier.tool_calls) {
            if (c.id == m.tool_call_id) {
                return c.name;
            }
        }
    }
    return {};
}

// Ollama carries a call's arguments as an object: an OpenAI client's arguments string must
// hold one (it is written as it is, byte for byte).
std::optional<canonical::Error> check_tools(const GenerationRequest& req) {
    for (size_t i = 0; i < req.messages.size(); ++i) {
        const auto& calls = req.messages[i].tool_calls;
        for (size_t j = 0; j < calls.size(); ++j) {
            json::Document doc;
            if (json::parse(calls[j].arguments, doc) || !doc.IsObject()) {
                const std::string param = "messages[" + std::to_string(i) + "].tool_calls[" +
                                          std::to_string(j) + "].function.arguments";
                return bad_request(
                    "'" + param +
                        "' must hold a JSON object to be sent to an Ollama "
                        "backend (Ollama carries arguments as an object); got " +
                        (calls[j].arguments.empty() ? std::string("nothing")
                                                    : "'" + calls[j].arguments + "'"),
                    param);
            }
        }
    }
    return std::nullopt;
}

// Where another family's client switches its model's thinking: OpenAI's reasoning_effort,
// Anthropic's thinking ("" for the others).
std::string_view thinking_key(canonical::Dialect client) {
    return client == canonical::Dialect::openai_chat ? "reasoning_effort"
           : client == canonical::Dialect::anthropic ? "thinking"
                                                     : "";
}

// Another family's thinking switch as Ollama's `think` (its JSON; empty: leave the model's
// default), read as Ollama's own compatibility layers read it: reasoning_effort as
// openai/openai.go's thinkFromReasoningEffort (none -> false, minimal -> "low", low / medium /
// high / max as they are, xhigh -> "max"), Anthropic's thinking as anthropic/anthropic.go
// (enabled -> true, disabled -> false, its budget_tokens having no equivalent there either).
Result<std::string> foreign_think(const GenerationRequest& req) {
    const std::string_view key = thinking_key(req.dialect);
    const canonical::Extra* e = key.empty() ? nullptr : canonical::find_extra(req, key);
    if (e == nullptr || e->json == "null") {
        return std::string();
    }
    json::Document doc;
    if (json::parse(e->json, doc)) {
        return bad_request("'" + std::string(key) + "' is not valid JSON", std::string(key));
    }
    if (req.dialect == canonical::Dialect::openai_chat) {
        const std::string_view effort = doc.IsString() ? json::view(doc) : std::string_view();
        if (effort == "none") {
            return std::string("false");
        }
        if (effort == "minimal") {
            return std::string(R"("low")");
        }
        if (effort == "low" || effort == "medium" || effort == "high" || effort == "max") {
            return "\"" + std::string(effort) + "\"";
        }
        if (effort == "xhigh") {
            return std::string(R"("max")");
        }
        return bad_request(
            "'reasoning_effort' must be none, minimal, low, medium, high, xhigh "
            "or max, got " +
                e->json,
            "reasoning_effort");
    }
    const json::Value* type = json::find(doc, "type");
    const std::string_view kind =
        type != nullptr && type->IsString() ? json::view(*type) : std::string_view();
    if (kind == "enabled") {
        return std::string("true");
    }
    if (kind == "disabled") {
        return std::string("false");
    }
    if (kind == "adaptive") {
        return std::string();  // the model decides: Ollama's default
    }
    return bad_request("'thinking.type' must be enabled, disabled or adaptive", "thinking.type");
}

// Another family's function tools: an OpenAI client's go to Ollama as they are (one wire
// shape), an Anthropic client's converted. Ollama has no tool_choice: it decides itself whether
// to call one, which is "auto"; nor a way to ask for one call at a time.
Result<canonical::FunctionTools> foreign_tools(const GenerationRequest& req) {
    auto tools = canonical::function_tools(req, "an Ollama backend");
    if (!tools) {
        return tools;
    }
    const std::string& choice = tools->tool_choice;
    if (!choice.empty() && choice != "\"auto\"") {
        const bool anthropic = req.dialect == canonical::Dialect::anthropic;
        return bad_request(
            "'tool_choice' " +
                (anthropic ? canonical::find_extra(req, "tool_choice")->json : choice) +
                " cannot be carried to an Ollama backend: Ollama has no "
                "tool_choice and decides itself whether to call a tool (\"auto\"); "
                "leave it out or send \"auto\"",
            "tool_choice");
    }
    if (tools->one_call_at_a_time) {
        return bad_request(
            "'tool_choice.disable_parallel_tool_use' cannot be carried to an Ollama backend, "
            "which has no way to limit a turn to one tool call; leave it out",
            "tool_choice.disable_parallel_tool_use");
    }
    return tools;
}

std::optional<canonical::Error> check(const GenerationRequest& req, const SamplingParams& s) {
    if (s.n > 1) {
        const std::string param = canonical::client_param(req.dialect, "n");
        return bad_request("'" + param +
                               "' > 1 cannot be sent to an Ollama backend (n > 1): it generates "
                               "one answer per request; send n = 1 (or one request per answer)",
                           param);
    }
    if (req.kind == RequestKind::completion) {
        if (req.prompts.size() != 1) {
            return bad_request(
                "an Ollama backend takes exactly one prompt per request; send one prompt, "
                "not a batch",
                "prompt");
        }
        if (req.prompts.front().is_tokens) {
            return bad_request(
                "token-id prompts cannot be sent to an Ollama backend: it takes text only; "
                "send the prompt as text",
                "prompt");
        }
    } else if (req.messages.empty()) {
        return bad_request("the request has no messages to send; send at least one message",
                           "messages");
    }
    if (req.untranslated_parts) {
        return bad_request(
            "non-text content other than chat images (audio, files, documents, /api/generate's "
            "images) is not translated to an Ollama backend; send text and chat images",
            "messages");
    }
    for (size_t i = 0; i < req.messages.size(); ++i) {
        for (size_t j = 0; j < req.messages[i].images.size(); ++j) {
            if (!req.messages[i].images[j].url.empty()) {
                const std::string param =
                    "messages[" + std::to_string(i) + "].images[" + std::to_string(j) + "]";
                return bad_request("'" + param +
                                       "' is an image URL: an Ollama backend takes the image's "
                                       "bytes, and infergate does not fetch URLs; send it as "
                                       "base64 (a data URL)",
                                   param);
            }
        }
    }
    static constexpr std::string_view kBackend = "an Ollama backend";
    // Generated tokens only (logprobs, top_logprobs up to 20); no prompt logprobs. An echo
    // without them is the client encoder's own (it has the prompt's text).
    if (auto e = canonical::refuse_logprobs(req, kBackend, {.generated = true, .prompt = false})) {
        return e;
    }
    if (canonical::top_count(req) > 20) {
        return bad_request("'" + canonical::client_param(req.dialect, "top_logprobs") +
                               "': an Ollama backend gives at most 20 alternatives per token; "
                               "ask for 20 or fewer",
                           canonical::client_param(req.dialect, "top_logprobs"));
    }
    const auto unsupported = [&req](std::string_view param, std::string_view instead) {
        return canonical::unsupported_setting(req.dialect, param, kBackend, instead);
    };
    if (s.ignore_eos.value_or(false)) {
        return unsupported("ignore_eos", "leave it out");
    }
    if (!s.stop_token_ids.empty()) {
        return unsupported("stop_token_ids", "use stop strings");
    }
    if (s.min_tokens.value_or(0) > 0) {
        return unsupported("min_tokens", "leave it out");
    }
    if (s.keep_stop_str.value_or(false)) {
        // Ollama's runners always strip the matched stop string (api-dialects §10.6); a TGI
        // client (or include_stop_str_in_output / no_stop_trim) expects it in the text.
        return unsupported("include_stop_str_in_output",
                           "keeping the matched stop string in the output is not possible (Ollama "
                           "always strips it); send the request without stop strings, or without "
                           "include_stop_str_in_output / no_stop_trim");
    }
    if (!s.logit_bias.empty()) {
        return unsupported("logit_bias", "Ollama has no logit bias; leave it out");
    }
    if (!s.skip_special_tokens.value_or(true)) {
        return unsupported("skip_special_tokens",
                           "Ollama never writes special tokens; leave it out");
    }
    if (!is_ollama(req.dialect)) {
        return canonical::refuse_foreign_extras(
            req, kBackend, {"tools", "tool_choice", thinking_key(req.dialect)}, true);
    }
    return std::nullopt;
}

const SamplingParams* shared_sampling(const GenerationRequest& req) {
    if (req.item_sampling.empty()) {
        return &req.sampling;
    }
    for (const SamplingParams& item : req.item_sampling) {
        if (!(item == req.item_sampling.front())) {
            return nullptr;
        }
    }
    return &req.item_sampling.front();
}

void write_options(json::Writer& w, const GenerationRequest& req, const SamplingParams& s) {
    json::key(w, "options");
    w.StartObject();
    // Ollama's default is "until EOS" (-1); a client whose own server stops at 16 or 128
    // tokens must get that budget here.
    std::optional<int64_t> max_tokens = s.max_tokens;
    if (!max_tokens) {
        max_tokens = canonical::default_max_tokens(req.dialect);
    }
    json::write_optional(w, "num_predict", max_tokens);
    json::write_optional(w, "temperature", s.temperature);
    json::write_optional(w, "top_k", s.top_k);
    json::write_optional(w, "top_p", s.top_p);
    json::write_optional(w, "min_p", s.min_p);
    json::write_optional(w, "seed", s.seed);
    json::write_optional(w, "repeat_penalty", s.repetition_penalty);
    json::write_optional(w, "repeat_last_n", s.repeat_last_n);
    json::write_optional(w, "presence_penalty", s.presence_penalty);
    json::write_optional(w, "frequency_penalty", s.frequency_penalty);
    json::write_optional(w, "typical_p", s.typical_p);
    if (!s.stop.empty()) {
        json::key(w, "stop");
        w.StartArray();
        for (const std::string& stop : s.stop) {
            json::string(w, stop);
        }
        w.EndArray();
    }
    if (is_ollama(req.dialect)) {
        for (const canonical::Extra& extra : req.sampling_extras) {
            json::key(w, extra.key);
            json::write_raw(w, extra.json);
        }
    }
    w.EndObject();
}

}  // namespace

bool sends_generate(const GenerationRequest& req) {
    return req.kind == RequestKind::completion || generate_shaped(req);
}

Result<std::string> encode_request(const GenerationRequest& req, const UpstreamOptions& options) {
    const SamplingParams* sampling = shared_sampling(req);
    if (sampling == nullptr) {
        return bad_request(
            "per-item sampling_params differ; an Ollama backend takes one set per request — "
            "send one sampling_params object",
            "sampling_params");
    }
    if (auto err = check(req, *sampling)) {
        return std::move(*err);
    }
    if (auto err = check_tools(req)) {
        return std::move(*err);
    }
    canonical::FunctionTools tools;
    canonical::OutputFormat format;
    std::string think;
    if (!is_ollama(req.dialect)) {
        auto got = foreign_tools(req);
        if (!got) {
            return got.error();
        }
        tools = std::move(got.value());
        auto switched = foreign_think(req);
        if (!switched) {
            return switched.error();
        }
        think = std::move(switched.value());
        auto fmt = canonical::output_format_for(
            req, "an Ollama backend", {canonical::OutputFormat::Kind::regex},
            "Ollama's format takes \"json\" or a JSON schema, no regular expression");
        if (!fmt) {
            return fmt.error();
        }
        format = std::move(fmt.value());
    }
    std::string body;
    body.reserve(256 + (req.prompts.empty() ? 0 : req.prompts.front().text.size()) +
                 (req.messages.empty() ? 0 : req.messages.back().content.size()));
    json::StringOut os{&body};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "model");
    json::string(w, options.model.empty() ? req.model : options.model);
    if (req.kind == RequestKind::completion) {
        json::key(w, "prompt");
        json::string(w, req.prompts.front().text);
        // Without raw Ollama would wrap the prompt in the model's chat template.
        json::key(w, "raw");
        w.Bool(true);
    } else if (generate_shaped(req)) {
        if (req.messages.size() == 2) {
            json::key(w, "system");
            json::string(w, req.messages.front().content);
        }
        json::key(w, "prompt");
        json::string(w, req.messages.back().content);
    } else {
        json::key(w, "messages");
        w.StartArray();
        for (const ChatMessage& m : req.messages) {
            w.StartObject();
            json::key(w, "role");
            // Ollama knows system/user/assistant/tool; OpenAI's developer role is its system.
            json::string(w, m.role == "developer" ? std::string_view("system") : m.role);
            json::key(w, "content");
            json::string(w, m.content);
            if (!m.reasoning.empty()) {
                json::key(w, "thinking");
                json::string(w, m.reasoning);
            }
            if (!m.images.empty()) {
                json::key(w, "images");  // base64 (URLs refused above)
                w.StartArray();
                for (const canonical::Image& image : m.images) {
                    json::string(w, image.data);
                }
                w.EndArray();
            }
            if (!m.tool_calls.empty()) {
                write_tool_calls(w, m.tool_calls,
                                 std::nullopt);  // arguments checked by check_tools
            }
            if (m.role == "tool") {
                if (std::string_view tool = tool_name(req, m); !tool.empty()) {
                    json::key(w, "tool_name");
                    json::string(w, tool);
                }
            }
            w.EndObject();
        }
        w.EndArray();
    }
    if (format.kind == canonical::OutputFormat::Kind::json_object) {
        json::key(w, "format");
        json::string(w, "json");
    } else if (format.kind == canonical::OutputFormat::Kind::json_schema) {
        json::key(w, "format");
        json::write_raw(w, format.schema);
    }
    if (!think.empty()) {
        json::key(w, "think");
        json::write_raw(w, think);
    }
    // Always explicit: Ollama streams when "stream" is absent.
    json::key(w, "stream");
    w.Bool(options.stream);
    // TGI's details only welcome logprobs: not asked here (Ollama's runner computes them with
    // a softmax over the whole vocabulary per token); its TGI clients get null logprobs.
    if (canonical::wants_logprobs(req)) {
        json::key(w, "logprobs");
        w.Bool(true);
        if (canonical::top_count(req) > 0) {
            json::key(w, "top_logprobs");
            w.Int64(static_cast<int64_t>(canonical::top_count(req)));
        }
    }
    write_options(w, req, *sampling);
    if (is_ollama(req.dialect)) {
        for (const canonical::Extra& extra : req.extras) {
            json::key(w, extra.key);
            json::write_raw(w, extra.json);
        }
    } else if (!tools.tools.empty()) {
        json::key(w, "tools");  // checked by foreign_tools
        json::write_raw(w, tools.tools);
    }
    w.EndObject();
    return body;
}

}  // namespace infergate::translators::ollama
