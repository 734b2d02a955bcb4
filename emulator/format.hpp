// Structured output: a request that constrains its output gets, instead of generated text, a
// deterministic text that shows exactly which constraint arrived, so a proxy's translation of it
// can be checked (docs/emulator.md, "Structured output"):
//
//   - a JSON schema: the JSON value it describes, built by the tool-call arguments' generator
//     (chat_extras.hpp schema_value: a string is the property name reversed or the first enum
//     value, an integer 7, a number 1.5, a boolean true, an array [], an object {} or, with
//     `properties`, its members), written compactly: {"city":"ytic","days":7}. A top-level
//     schema without properties gives {};
//   - any JSON object (OpenAI json_object, Ollama "json"): {};
//   - a regular expression: "regex: <pattern>";
//   - a grammar (GBNF, EBNF): "grammar: <its length in bytes> bytes".
//
// Each reader below looks where one dialect carries the constraint, and only there, and says
// what the server's own checks refuse. The text is generated output: one token per piece (its
// first character, then pieces of at most 8 bytes: chat_extras.hpp format_pieces) and EOS, so
// it streams in several chunks, usage counts it, and a budget below pieces + 1 cuts it (finish
// length). Chat routes put it into their ChatPlan (tool calls win over it); the other routes
// apply it to every choice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/openai_request.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

// Why a server refuses a constraint.
struct FormatError {
    enum class Kind : std::uint8_t {
        kShape,    // the body does not deserialize (pydantic, serde, a Python TypeError)
        kInvalid,  // the server's own checks refuse it
    };
    Kind kind = Kind::kInvalid;
    std::string where;  // the field, for the framework's message ("" for the server's own)
    std::string message;
};

// What a request's constraint asks: the answer's text (none: unconstrained), or the refusal.
struct FormatAsk {
    std::optional<std::string> text;
    std::optional<FormatError> error;
};

std::string regex_answer(std::string_view pattern);
std::string grammar_answer(std::string_view grammar);

// The OpenAI layers (/v1/completions, /v1/chat/completions), per server:
//   vLLM: response_format {"type": "text" | "json_object" | "json_schema", "json_schema":
//     {"name", "schema", "strict"}} (a json_schema without "schema": {}), which overrides
//     structured_outputs {"json": schema or a JSON text, "regex", "grammar", "json_object"}
//     (one kind only: more is a 400; "choice" and "structural_tag" are left unconstrained);
//   SGLang: response_format (json_schema, json_object), and top-level "regex" and "ebnf" (one of
//     the three only, else 400);
//   TGI (chat only): response_format in TGI's own GrammarType shape, as read_tgi_grammar;
//   llama.cpp: chat response_format (json_object with an optional "schema", json_schema), and on
//     both routes the native "json_schema" and "grammar" the body passes through.
FormatAsk read_oai_format(const rapidjson::Value& doc, OaiFlavor flavor, bool chat);
// SGLang /generate: sampling_params.json_schema (a JSON text), .regex, .ebnf (one only).
FormatAsk read_sglang_format(const rapidjson::Value* sampling_params);
// TGI's GrammarType at `where` (parameters.grammar, the chat's response_format):
// {"type": "json" | "json_object", "value": schema or JSON text}, {"type": "regex", "value":
// pattern}, {"type": "json_schema", "value": {"name", "schema"}}. A schema must have
// "properties" (validation.rs). `position` follows serde's messages (" at line 1 column N").
FormatAsk read_tgi_grammar(const rapidjson::Value* grammar, std::string_view where,
                           std::string_view position);
// Ollama /api/generate and /api/chat: format "json" or a schema object ("" and null: none).
FormatAsk read_ollama_format(const rapidjson::Value& doc);
// llama.cpp /completion: json_schema (an object), grammar (GBNF; wins when present).
FormatAsk read_llamacpp_format(const rapidjson::Value& doc);
// Anthropic /v1/messages: output_config.format, else the beta output_format, {"type":
// "json_schema", "schema": {...}}.
FormatAsk read_anthropic_format(const rapidjson::Value& doc);

// The answer replaces every choice's generated text (routes without a chat plan).
void apply_format(std::string_view text, std::vector<ChoiceState>& choices, int budget);

}  // namespace infergate::emulator
