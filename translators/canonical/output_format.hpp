#pragma once
// Structured output across dialects: a client's request that the text follow a JSON schema, be
// any JSON object, or match a regular expression, read from where its dialect writes it and
// written where the backend's engine reads it (docs/dialects.md, "Structured output").
//
//   client / backend   where                               any JSON object    schema   regex
//   OpenAI chat, cmpl  response_format                     json_object        yes      TGI shape
//   Ollama             format                              "json"             yes      -
//   TGI /generate      parameters.grammar                  -                  yes      yes
//   SGLang /generate   sampling_params.json_schema, regex  {"type":"object"}  yes      yes
//   llama.cpp          json_schema                         {"type":"object"}  yes      -
//   Anthropic          output_config.format, output_format -                  yes      -
//
// Grammars (llama.cpp GBNF `grammar`, SGLang `ebnf`, vLLM `structured_outputs.grammar`) are
// languages of their own engine and go only to a backend of the client's family, as before.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "translators/canonical/types.hpp"

namespace infergate::canonical {

struct OutputFormat {
    enum class Kind { none, json_object, json_schema, regex };
    Kind kind = Kind::none;
    std::string schema;          // json_schema: the schema, compact JSON
    std::string name;            // the schema's name where the client gave one (OpenAI, TGI)
    std::string description;     // OpenAI json_schema.description
    std::optional<bool> strict;  // OpenAI json_schema.strict
    std::string regex;           // regex: the pattern
    std::string param;           // where the client wrote it ("response_format"), for messages

    bool operator==(const OutputFormat&) const = default;
};

// Whether `key` (of GenerationRequest::extras, or of sampling_extras when `sampling`) is where a
// client of `client` asks for structured output: output_format reads it, and
// refuse_foreign_extras leaves it to an encoder that carries the format.
bool is_output_format_key(Dialect client, std::string_view key, bool sampling);

// Whether `req`'s client wrote anything where its dialect asks for structured output (the
// encoders' cheap test before output_format: most requests ask for none).
bool asks_output_format(const GenerationRequest& req);

// The structured output `req`'s client asked for (Kind::none when none). A 400 names what is
// malformed, or what cannot be translated (another member of Anthropic's output_config).
Result<OutputFormat> output_format(const GenerationRequest& req);

// A 400 for a format `backend` cannot carry, naming where the client wrote it and what to send
// instead.
Error unsupported_format(const OutputFormat& f, std::string_view backend, std::string_view instead);

// output_format for an encoder of `backend`, refused with unsupported_format(.., instead) when
// its kind is one of `cannot`.
Result<OutputFormat> output_format_for(const GenerationRequest& req, std::string_view backend,
                                       std::initializer_list<OutputFormat::Kind> cannot,
                                       std::string_view instead);

// The schema a backend without an "any JSON object" switch gets for Kind::json_object (SGLang's
// own OpenAI layer sends this), compact.
inline constexpr std::string_view kAnyObjectSchema = R"({"type":"object"})";

// OpenAI's response_format for a format (json_object, or json_schema with the client's name or
// "response"), compact JSON. Not for Kind::none or regex.
std::string openai_response_format(const OutputFormat& f);

// TGI's GrammarType ({"type":"json","value":<schema>} or {"type":"regex","value":"..."}), for
// its /generate `parameters.grammar` and its chat route's response_format. Not for Kind::none
// or json_object (TGI needs a schema with properties).
std::string tgi_grammar(const OutputFormat& f);

}  // namespace infergate::canonical
