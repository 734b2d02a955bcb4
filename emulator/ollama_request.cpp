// Ollama's request decoding: Go's encoding/json errors, the options map, the template that wraps
// a non-raw /api/generate prompt, and the context check (server/routes.go).
#include "emulator/ollama_request.hpp"

#include <algorithm>

#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/ollama.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

// Ollama's substitute for text/template on our one template: {{ .System }} and {{ .Prompt }}.
std::string apply_template(std::string_view tmpl, std::string_view system, std::string_view prompt) {
    std::string out(tmpl);
    auto replace_all = [&out](std::string_view from, std::string_view to) {
        for (std::size_t pos = out.find(from); pos != std::string::npos;
             pos = out.find(from, pos + to.size())) {
            out.replace(pos, from.size(), to);
        }
    };
    if (tmpl == kOllamaTemplate) {
        out.clear();
        if (!system.empty()) {
            out.append("<|system|> ").append(system).append(" ");
        }
        out.append("<|user|> ").append(prompt).append(" <|assistant|>");
        return out;
    }
    for (std::string_view p : {"{{ .System }}", "{{.System}}"}) {
        replace_all(p, system);
    }
    for (std::string_view p : {"{{ .Prompt }}", "{{.Prompt}}"}) {
        replace_all(p, prompt);
    }
    return out;
}

std::string_view string_field(const Value& doc, std::string_view name) {
    const Value* v = member(doc, name);
    return v != nullptr && v->IsString() ? std::string_view(v->GetString(), v->GetStringLength())
                                         : std::string_view();
}

// encoding/json's name for a JSON value's type in an UnmarshalTypeError.
std::string go_json_type(const Value& v) {
    if (v.IsString()) {
        return "string";
    }
    if (v.IsBool()) {
        return "bool";
    }
    if (v.IsNumber()) {
        return "number " + py_number(v);
    }
    return v.IsArray() ? "array" : "object";
}

}  // namespace

// Returns {status, message} of the first error, or status 0.
std::pair<int, std::string> parse_ollama(const Value& doc, bool chat, const Options& options,
                                         OllamaRequest& out) {
    out.chat = chat;
    out.model = std::string(string_field(doc, "model"));
    get_bool(doc, "stream", out.stream);
    get_bool(doc, "raw", out.raw);
    // Decoding errors come first (ShouldBindJSON), then the top_logprobs range.
    const std::string_view type = chat ? "ChatRequest" : "GenerateRequest";
    if (get_bool(doc, "logprobs", out.logprobs) == Lookup::kWrongType) {
        return {400, "json: cannot unmarshal " + go_json_type(*member(doc, "logprobs")) +
                         " into Go struct field " + std::string(type) + ".logprobs of type bool"};
    }
    if (const Value* top = member(doc, "top_logprobs")) {
        if (!top->IsInt64()) {
            return {400, "json: cannot unmarshal " + go_json_type(*top) + " into Go struct field " +
                             std::string(type) + ".top_logprobs of type int"};
        }
        if (top->GetInt64() < 0 || top->GetInt64() > 20) {
            return {400, "top_logprobs must be between 0 and 20"};
        }
        out.top_logprobs = static_cast<int>(top->GetInt64());
    }
    if (out.model.empty()) {
        return {400, "model is required"};
    }
    if (!ollama_model_matches(options, out.model)) {
        return {404, "model \"" + out.model + "\" not found, try pulling it first"};
    }
    const Value* opts = member(doc, "options");
    std::int64_t num_predict = -1;
    if (opts != nullptr) {
        if (!opts->IsObject()) {
            return {400, "json: cannot unmarshal options into Go struct field of type map"};
        }
        std::int64_t value = 0;
        double number = 0;
        if (get_int(*opts, "num_predict", num_predict) == Lookup::kWrongType) {
            return {400, "invalid int option \"num_predict\""};
        }
        if (const Lookup got = get_int(*opts, "seed", value); got == Lookup::kWrongType) {
            return {400, "invalid int option \"seed\""};
        } else if (got == Lookup::kOk) {
            out.stop.seed = value;
        }
        for (const char* name : {"temperature", "top_p", "min_p", "typical_p", "repeat_penalty"}) {
            if (get_number(*opts, name, number) == Lookup::kWrongType) {
                return {400, std::string("invalid float option \"") + name + "\""};
            }
        }
        if (const Value* stop = member(*opts, "stop")) {
            if (!stop->IsArray()) {
                return {400, "invalid string array option \"stop\""};
            }
            for (const Value& s : stop->GetArray()) {
                if (!s.IsString()) {
                    return {400, "invalid string array option \"stop\""};
                }
                out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
            }
        }
    }
    if (chat) {
        const Value* messages = member(doc, "messages");
        if (messages != nullptr && !messages->IsArray()) {
            return {400, "json: cannot unmarshal messages into Go struct field of type []api.Message"};
        }
        out.load_only = messages == nullptr || messages->Empty();
        ChatPromptBuilder builder;
        if (messages != nullptr) {
            for (const Value& m : messages->GetArray()) {
                builder.add_message(string_field(m, "role"));
                builder.add_content(string_field(m, "content"));
            }
        }
        out.key = builder.finish();
    } else {
        const std::string_view prompt = string_field(doc, "prompt");
        const std::string_view system = string_field(doc, "system");
        const std::string_view tmpl = string_field(doc, "template");
        if (out.raw && (!tmpl.empty() || !system.empty() || member(doc, "context") != nullptr)) {
            return {400, "raw mode does not support template, system, or context"};
        }
        out.load_only = prompt.empty();
        out.prompt = out.raw ? std::string(prompt)
                             : apply_template(tmpl.empty() ? kOllamaTemplate : tmpl, system, prompt);
        out.key = prompt_from_text(out.prompt);
    }
    const int room = options.max_model_len - out.key.tokens;
    if (room <= 0 && !out.load_only) {
        return {400, "input length exceeds maximum context length"};
    }
    // -1 (unlimited) and -2 (fill the context) stop where the context ends.
    out.budget = num_predict > 0 ? static_cast<int>(std::min<std::int64_t>(num_predict, room)) : room;
    if (!out.load_only) {
        // The runner's Completion reads it, after every check above: its error is a 500.
        FormatAsk format = read_ollama_format(doc);
        if (format.error) {
            return {500, std::move(format.error->message)};
        }
        out.format = std::move(format.text);
    }
    return {0, {}};
}

std::string go_json_error(std::string_view body, const rapidjson::Document& doc) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return "missing request body";
    }
    const std::size_t at = doc.GetErrorOffset();
    if (at >= body.size()) {
        return "unexpected EOF";
    }
    return "invalid character '" + std::string(1, body[at]) + "' looking for beginning of value";
}

}  // namespace infergate::emulator
