// Structured output: where each dialect carries a constraint on its output, the checks its
// server makes, and the text the emulator answers with (format.hpp).
#include "emulator/format.hpp"

#include <algorithm>

#include "emulator/chat_extras.hpp"
#include "emulator/json_util.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;
using Kind = FormatError::Kind;

// vLLM's StructuredOutputsParams.__post_init__ (which also lists the fields it was given).
constexpr std::string_view kOneKindOnly =
    "You can only use one kind of structured outputs constraint but multiple are specified";
// SGLang's SamplingParams.verify().
constexpr std::string_view kOneGrammarOnly = "Only one of regex, json_schema, or ebnf can be set.";

std::string_view str(const Value& v) {
    return {v.GetString(), v.GetStringLength()};
}

// A member that is a string, or null.
const Value* string_member(const Value* obj, std::string_view name) {
    const Value* v = obj != nullptr ? member(*obj, name) : nullptr;
    return v != nullptr && v->IsString() ? v : nullptr;
}

std::string_view type_of(const Value* obj) {
    const Value* t = string_member(obj, "type");
    return t != nullptr ? str(*t) : std::string_view();
}

FormatAsk answer(std::string text) {
    FormatAsk ask;
    ask.text = std::move(text);
    return ask;
}

FormatAsk refuse(Kind kind, std::string_view where, std::string message) {
    FormatAsk ask;
    ask.error = FormatError{kind, std::string(where), std::move(message)};
    return ask;
}

// Go's %q of a byte string: Go escapes, printable text as it is.
std::string go_quote(std::string_view s) {
    return quoted(s, '"');
}

// A schema sent as a JSON text (SGLang's json_schema, vLLM's structured_outputs.json), or
// nothing when the text is not JSON.
std::optional<std::string> schema_from_text(std::string_view text) {
    rapidjson::Document doc;
    if (!parse_json(text, doc)) {
        return std::nullopt;
    }
    return schema_value(&doc);
}

// vLLM: structured_outputs, overridden by response_format (structured_outputs_from_response_format
// replaces the one field, so another kind set beside it is refused).
FormatAsk read_vllm(const Value& doc) {
    static constexpr std::string_view kKinds[] = {"json",    "regex",       "choice",
                                                  "grammar", "json_object", "structural_tag"};
    const Value* so = member(doc, "structured_outputs");
    std::string_view kind;
    const Value* value = nullptr;
    if (so != nullptr) {
        if (!so->IsObject()) {
            return refuse(Kind::kShape, "structured_outputs",
                          "Input should be a dictionary or an instance of StructuredOutputsParams");
        }
        int kinds = 0;
        for (std::string_view k : kKinds) {
            if (const Value* v = member(*so, k)) {
                ++kinds;
                kind = k;
                value = v;
            }
        }
        if (kinds > 1) {
            return refuse(Kind::kShape, "structured_outputs",
                          "Value error, " + std::string(kOneKindOnly));
        }
    }
    const Value* rf = member(doc, "response_format");
    const std::string_view type = type_of(rf);
    if (type == "json_object" || type == "json_schema") {
        const std::string_view wanted = type == "json_object" ? "json_object" : "json";
        if (!kind.empty() && kind != wanted) {
            return refuse(Kind::kInvalid, "", std::string(kOneKindOnly));
        }
        kind = wanted;
        if (type == "json_schema") {
            const Value* js = member(*rf, "json_schema");
            value = js != nullptr ? member(*js, "schema") : nullptr;  // none: any object
        } else {
            value = nullptr;
        }
    }
    if (kind == "json") {
        if (value != nullptr && value->IsString()) {
            std::optional<std::string> text = schema_from_text(str(*value));
            return text ? answer(std::move(*text))
                        : refuse(Kind::kInvalid, "", "Invalid JSON grammar specification.");
        }
        return answer(schema_value(value));
    }
    if (kind == "json_object") {
        // From response_format, or structured_outputs' json_object: true (false constrains
        // nothing).
        return value == nullptr || (value->IsBool() && value->GetBool()) ? answer("{}")
                                                                         : FormatAsk{};
    }
    if ((kind == "regex" || kind == "grammar") && value->IsString()) {
        return answer(kind == "regex" ? regex_answer(str(*value)) : grammar_answer(str(*value)));
    }
    return {};  // choice, structural_tag: not shown
}

// SGLang's OpenAI layer: response_format becomes sampling_params.json_schema (json_object:
// '{"type": "object"}'), beside the request's own regex and ebnf.
FormatAsk read_sglang_oai(const Value& doc) {
    std::optional<std::string> json;
    const Value* rf = member(doc, "response_format");
    const std::string_view type = type_of(rf);
    if (type == "json_schema") {
        const Value* js = member(*rf, "json_schema");
        json = schema_value(js != nullptr ? member(*js, "schema") : nullptr);
    } else if (type == "json_object") {
        json = "{}";
    }
    const Value* regex = member(doc, "regex");
    const Value* ebnf = member(doc, "ebnf");
    for (auto [name, v] : {std::pair{"regex", regex}, {"ebnf", ebnf}}) {
        if (v != nullptr && !v->IsString()) {
            return refuse(Kind::kShape, name, "Input should be a valid string");
        }
    }
    if (int{json.has_value()} + int{regex != nullptr} + int{ebnf != nullptr} > 1) {
        return refuse(Kind::kInvalid, "", std::string(kOneGrammarOnly));
    }
    if (json) {
        return answer(std::move(*json));
    }
    if (regex != nullptr) {
        return answer(regex_answer(str(*regex)));
    }
    return ebnf != nullptr ? answer(grammar_answer(str(*ebnf))) : FormatAsk{};
}

// llama.cpp: the native keys (params_from_json_cmpl: a "grammar" key wins over "json_schema"),
// and on the chat route response_format, which sets json_schema (oaicompat_chat_params_parse).
FormatAsk read_llamacpp(const Value& doc, bool chat) {
    const Value* schema = member(doc, "json_schema");
    bool has_schema = schema != nullptr;
    if (const Value* rf = chat ? member(doc, "response_format") : nullptr) {
        const std::string_view type = type_of(rf);
        if (type == "json_object") {
            schema = member(*rf, "schema");
            has_schema = true;
        } else if (type == "json_schema") {
            const Value* js = member(*rf, "json_schema");
            schema = js != nullptr ? member(*js, "schema") : nullptr;
            has_schema = true;
        } else if (!type.empty() && type != "text") {
            return refuse(Kind::kInvalid, "",
                          "response_format type must be one of \"text\" or \"json_object\", but "
                          "got: " +
                              std::string(type));
        }
    }
    if (const Value* grammar = member(doc, "grammar")) {
        return grammar->IsString() && grammar->GetStringLength() > 0
                   ? answer(grammar_answer(str(*grammar)))
                   : FormatAsk{};
    }
    return has_schema ? answer(schema_value(schema)) : FormatAsk{};
}

}  // namespace

std::string regex_answer(std::string_view pattern) {
    return "regex: " + std::string(pattern);
}

std::string grammar_answer(std::string_view grammar) {
    return "grammar: " + std::to_string(grammar.size()) + " bytes";
}

FormatAsk read_oai_format(const Value& doc, OaiFlavor flavor, bool chat) {
    if (!doc.IsObject()) {
        return {};
    }
    switch (flavor) {
        case OaiFlavor::kVllm:
            return read_vllm(doc);
        case OaiFlavor::kSglang:
            return read_sglang_oai(doc);
        case OaiFlavor::kTgi:
            // TGI's completions request has no grammar.
            return chat ? read_tgi_grammar(member(doc, "response_format"), "response_format", "")
                        : FormatAsk{};
        case OaiFlavor::kLlamacpp:
            return read_llamacpp(doc, chat);
    }
    return {};
}

FormatAsk read_sglang_format(const Value* sp) {
    if (sp == nullptr || !sp->IsObject()) {
        return {};
    }
    const Value* json = member(*sp, "json_schema");
    const Value* regex = member(*sp, "regex");
    const Value* ebnf = member(*sp, "ebnf");
    for (auto [name, v] : {std::pair{"json_schema", json}, {"regex", regex}, {"ebnf", ebnf}}) {
        if (v != nullptr && !v->IsString()) {
            return refuse(Kind::kShape, name, "not a string");  // the grammar backend's TypeError
        }
    }
    if (int{json != nullptr} + int{regex != nullptr} + int{ebnf != nullptr} > 1) {
        return refuse(Kind::kInvalid, "", std::string(kOneGrammarOnly));
    }
    if (json != nullptr) {
        // The scheduler aborts a schema the grammar backend cannot compile (a 400).
        std::optional<std::string> text = schema_from_text(str(*json));
        return text ? answer(std::move(*text))
                    : refuse(Kind::kInvalid, "",
                             "Invalid grammar request: req.grammar_key=('json', " +
                                 py_repr(str(*json)) + ")");
    }
    if (regex != nullptr) {
        return answer(regex_answer(str(*regex)));
    }
    return ebnf != nullptr ? answer(grammar_answer(str(*ebnf))) : FormatAsk{};
}

FormatAsk read_tgi_grammar(const Value* grammar, std::string_view where,
                           std::string_view position) {
    if (grammar == nullptr) {
        return {};
    }
    auto shape = [&](std::string message) {
        return refuse(Kind::kShape, where, std::move(message) + std::string(position));
    };
    if (!grammar->IsObject()) {
        return shape("invalid type: " + serde_type(*grammar) +
                     ", expected adjacently tagged enum GrammarType");
    }
    const Value* tag = member(*grammar, "type");
    if (tag == nullptr) {
        return shape("missing field `type`");
    }
    if (!tag->IsString()) {
        return shape("invalid type: " + serde_type(*tag) + ", expected variant identifier");
    }
    const std::string_view type = str(*tag);
    if (type != "json" && type != "json_object" && type != "regex" && type != "json_schema") {
        return shape("unknown variant `" + std::string(type) +
                     "`, expected one of `json`, `json_object`, `regex`, `json_schema`");
    }
    const Value* value = member(*grammar, "value");
    if (value == nullptr) {
        return shape("missing field `value`");
    }
    if (type == "regex") {
        if (!value->IsString()) {
            return shape("invalid type: " + serde_type(*value) + ", expected a string");
        }
        return answer(regex_answer(str(*value)));
    }
    // validation.rs: a JSON text is parsed again; the schema must have "properties".
    auto invalid = [](std::string message) {
        return refuse(Kind::kInvalid, "", "grammar is not valid: " + std::move(message));
    };
    const Value* schema = value;
    rapidjson::Document parsed;
    if (type == "json_schema") {
        if (!value->IsObject()) {
            return shape("invalid type: " + serde_type(*value) +
                         ", expected struct JsonSchemaConfig");
        }
        schema = member(*value, "schema");
        if (schema == nullptr) {
            return shape("missing field `schema`");
        }
    } else if (value->IsString()) {
        const std::string_view text = str(*value);
        if (!parse_json(text, parsed)) {
            const std::size_t at = std::min<std::size_t>(parsed.GetErrorOffset(), text.size());
            return invalid(
                std::string(at >= text.size() ? "EOF while parsing a value" : "expected value") +
                serde_position(text.substr(0, at + (at < text.size() ? 1 : 0))));
        }
        schema = &parsed;
    } else if (!value->IsObject()) {
        return refuse(Kind::kInvalid, "", "grammar is not supported");
    }
    if (member(*schema, "properties") == nullptr) {
        return invalid("Grammar must have a 'properties' field");
    }
    return answer(schema_value(schema));
}

FormatAsk read_ollama_format(const Value& doc) {
    const Value* format = member(doc, "format");
    if (format == nullptr || (format->IsString() && format->GetStringLength() == 0)) {
        return {};  // `null` and `""`: set, but "missing" a value
    }
    if (format->IsString() && str(*format) == "json") {
        return answer("{}");
    }
    if (format->IsObject()) {
        return answer(schema_value(format));
    }
    // llm/server.go Completion: the raw JSON, %q-quoted.
    return refuse(Kind::kInvalid, "",
                  "invalid format: " + go_quote(compact_json(*format)) +
                      "; expected \"json\" or a valid JSON Schema object");
}

FormatAsk read_llamacpp_format(const Value& doc) {
    return doc.IsObject() ? read_llamacpp(doc, false) : FormatAsk{};
}

FormatAsk read_anthropic_format(const Value& doc) {
    const Value* config = member(doc, "output_config");
    const Value* format = config != nullptr ? member(*config, "format") : nullptr;
    if (format == nullptr) {
        format = member(doc, "output_format");  // the beta parameter it replaced
    }
    if (type_of(format) != "json_schema") {
        return {};
    }
    return answer(schema_value(member(*format, "schema")));
}

void apply_format(std::string_view text, std::vector<ChoiceState>& choices, int budget) {
    for (ChoiceState& c : choices) {
        c.out = format_output(text, budget);
    }
}

}  // namespace infergate::emulator
