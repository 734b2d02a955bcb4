// Structured output across dialects (canonical/output_format.hpp): each client dialect's way of
// asking for a JSON schema, any JSON object or a regular expression is read, and reaches every
// backend that has the constraint in the shape its engine reads, or is refused with a 400 that
// names it. The round trip is checked over generated schemas and wire variations: the backend's
// body, read back as a client of the backend's own dialect would write it, asks for the same.

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/support/chat_codec.hpp"
#include "translators/canonical/json.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/codec.hpp"

namespace {

namespace canonical = infergate::canonical;
namespace json = infergate::json;
using canonical::Dialect;
using canonical::GenerationRequest;
using canonical::OutputFormat;
using Kind = canonical::OutputFormat::Kind;
using infergate::translators::codec_for;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;

using infergate::testing::decode;

OutputFormat format_of(Dialect client, std::string_view body) {
    const GenerationRequest req = decode(client, body);
    auto f = canonical::output_format(req);
    REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
    return f.value();
}

canonical::Error format_error(Dialect client, std::string_view body) {
    const GenerationRequest req = decode(client, body);
    auto f = canonical::output_format(req);
    REQUIRE_FALSE(f.ok());
    return f.error();
}

std::string compact(std::string_view text) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(text, doc));
    return json::to_string(doc);
}

constexpr std::string_view kSchema = R"({"type":"object","properties":{"a":{"type":"string"}}})";

}  // namespace

TEST_CASE("output_format: OpenAI response_format, and TGI's and llama.cpp's shapes of it") {
    const auto chat = [](std::string_view rf) {
        return R"({"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":)" +
               std::string(rf) + "}";
    };
    OutputFormat f = format_of(Dialect::openai_chat, chat(R"({"type":"json_object"})"));
    CHECK(f.kind == Kind::json_object);
    CHECK(f.param == "response_format");

    f = format_of(Dialect::openai_chat, chat(R"({"type": "json_schema", "json_schema": {
        "name": "person", "description": "a person", "strict": true,
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}})"));
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == kSchema);  // compact, in the client's key order
    CHECK(f.name == "person");
    CHECK(f.description == "a person");
    CHECK(f.strict == true);

    f = format_of(Dialect::openai_chat, chat(R"({"type":"text"})"));
    CHECK(f.kind == Kind::none);
    CHECK(f.param.empty());

    // TGI's chat route takes its GrammarType in response_format; its clients write it.
    f = format_of(Dialect::openai_chat,
                  chat(R"({"type":"json","value":)" + std::string(kSchema) + "}"));
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == kSchema);
    f = format_of(Dialect::openai_chat, chat(R"({"type":"regex","value":"[0-9]+"})"));
    CHECK(f.kind == Kind::regex);
    CHECK(f.regex == "[0-9]+");
    f = format_of(Dialect::openai_chat,
                  chat(R"({"type":"json_schema","value":{"name":"p","schema":)" +
                       std::string(kSchema) + "}}"));
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.name == "p");
    // llama.cpp's json_object with a schema.
    f = format_of(Dialect::openai_completions,
                  R"({"model":"m","prompt":"p","response_format":{"type":"json_object","schema":)" +
                      std::string(kSchema) + "}}");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == kSchema);

    // Malformed: a 400 naming the member.
    CHECK(format_error(Dialect::openai_chat, chat(R"({"type":"xml"})")).param ==
          "response_format.type");
    CHECK(format_error(Dialect::openai_chat, chat(R"({"type":"json_schema"})")).param ==
          "response_format.json_schema");
    CHECK(format_error(Dialect::openai_chat,
                       chat(R"({"type":"json_schema","json_schema":{"name":"n","schema":7}})"))
              .param == "response_format.json_schema.schema");
    CHECK(format_error(Dialect::openai_chat, chat(R"("json")")).param == "response_format");
}

TEST_CASE("output_format: Ollama format, TGI grammar, SGLang, llama.cpp and Anthropic") {
    OutputFormat f =
        format_of(Dialect::ollama_chat,
                  R"({"model":"m","messages":[{"role":"user","content":"hi"}],"format":"json"})");
    CHECK(f.kind == Kind::json_object);
    f = format_of(Dialect::ollama_generate,
                  R"({"model":"m","prompt":"p","raw":true,"format":)" + std::string(kSchema) + "}");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == kSchema);
    CHECK(format_of(Dialect::ollama_chat,
                    R"({"model":"m","messages":[{"role":"user","content":"hi"}],"format":""})")
              .kind == Kind::none);
    CHECK(
        format_error(Dialect::ollama_chat,
                     R"({"model":"m","messages":[{"role":"user","content":"hi"}],"format":"yaml"})")
            .param == "format");

    // TGI: a schema as an object or as a string holding one; a regex.
    f = format_of(Dialect::tgi, R"({"inputs":"p","parameters":{"grammar":{"type":"json","value":)" +
                                    std::string(kSchema) + "}}}");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.param == "parameters.grammar");
    f = format_of(
        Dialect::tgi,
        R"({"inputs":"p","parameters":{"grammar":{"type":"json","value":"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"}}})");
    CHECK(f.schema == kSchema);
    f = format_of(Dialect::tgi,
                  R"({"inputs":"p","parameters":{"grammar":{"type":"regex","value":"a|b"}}})");
    CHECK(f.kind == Kind::regex);
    CHECK(f.regex == "a|b");
    CHECK(format_error(Dialect::tgi,
                       R"({"inputs":"p","parameters":{"grammar":{"type":"json","value":"{x"}}})")
              .param == "parameters.grammar.value");
    CHECK(format_error(Dialect::tgi, R"({"inputs":"p","parameters":{"grammar":{"type":"json"}}})")
              .param == "parameters.grammar.value");

    // SGLang: json_schema is a string holding the schema; "$$ANY$$" is xgrammar's any JSON.
    f = format_of(
        Dialect::sglang,
        R"({"text":"p","sampling_params":{"json_schema":"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}}"}})");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == kSchema);
    CHECK(f.param == "sampling_params.json_schema");
    CHECK(format_of(Dialect::sglang, R"({"text":"p","sampling_params":{"json_schema":"$$ANY$$"}})")
              .kind == Kind::json_object);
    f = format_of(Dialect::sglang, R"({"text":"p","sampling_params":{"regex":"\\d+"}})");
    CHECK(f.kind == Kind::regex);
    CHECK(f.regex == "\\d+");
    CHECK(format_error(Dialect::sglang,
                       R"({"text":"p","sampling_params":{"json_schema":"{}","regex":"a"}})")
              .param == "sampling_params.regex");
    CHECK(format_error(Dialect::sglang, R"({"text":"p","sampling_params":{"json_schema":{}}})")
              .param == "sampling_params.json_schema");

    // llama.cpp: json_schema, {} included (llama-server turns it into an any-JSON grammar).
    f = format_of(Dialect::llamacpp, R"({"prompt":"p","json_schema":{}})");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.schema == "{}");

    // Anthropic: output_config.format, and the beta's output_format.
    const std::string anthropic =
        R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],)";
    f = format_of(Dialect::anthropic,
                  anthropic + R"("output_config":{"format":{"type":"json_schema","schema":)" +
                      std::string(kSchema) + "}}}");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.param == "output_config.format");
    f = format_of(Dialect::anthropic, anthropic +
                                          R"("output_format":{"type":"json_schema","schema":)" +
                                          std::string(kSchema) + "}}");
    CHECK(f.kind == Kind::json_schema);
    CHECK(f.param == "output_format");
    CHECK(format_error(Dialect::anthropic, anthropic + R"("output_config":{"effort":"low"}})")
              .param == "output_config.effort");
    CHECK(format_error(Dialect::anthropic,
                       anthropic + R"("output_config":{"format":{"type":"json_object"}}})")
              .param == "output_config.format.type");
}

namespace {

// A client body asking for `f` in `client`'s dialect, with `ws` between tokens (the wire
// variations a client may write: none, spaces, newlines).
std::string client_body(Dialect client, const OutputFormat& f, std::string_view ws) {
    const std::string sp(ws);
    auto q = [](std::string_view s) {  // a JSON string literal
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        json::string(w, s);
        return out;
    };
    std::string member;
    switch (client) {
        case Dialect::openai_completions:
        case Dialect::openai_chat:
            member = "\"response_format\":" + sp +
                     (f.kind == Kind::json_object ? R"({"type":"json_object"})"
                      : f.kind == Kind::regex
                          ? R"({"type":"regex","value":)" + q(f.regex) + "}"
                          : R"({"type":"json_schema",)" + sp +
                                R"("json_schema":{"name":"x","schema":)" + sp + f.schema + "}}");
            break;
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
            member = "\"format\":" + sp + (f.kind == Kind::json_object ? "\"json\"" : f.schema);
            break;
        case Dialect::tgi:
            member = R"("parameters":{"grammar":)" + sp +
                     (f.kind == Kind::regex ? R"({"type":"regex","value":)" + q(f.regex) + "}"
                                            : R"({"type":"json","value":)" + f.schema + "}") +
                     "}";
            break;
        case Dialect::sglang:
            member = R"("sampling_params":{)" +
                     (f.kind == Kind::regex         ? "\"regex\":" + sp + q(f.regex)
                      : f.kind == Kind::json_object ? std::string(R"("json_schema":"$$ANY$$")")
                                                    : "\"json_schema\":" + sp + q(f.schema)) +
                     "}";
            break;
        case Dialect::llamacpp:
            member = "\"json_schema\":" + sp + f.schema;
            break;
        case Dialect::anthropic:
            member = R"("output_config":{"format":{"type":"json_schema","schema":)" + sp +
                     f.schema + "}}";
            break;
        case Dialect::vllm_legacy:
            break;
    }
    switch (client) {
        case Dialect::openai_chat:
        case Dialect::ollama_chat:
            return R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + sp + member +
                   "}";
        case Dialect::anthropic:
            return R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],)" +
                   sp + member + "}";
        case Dialect::tgi:
            return R"({"inputs":"hi",)" + sp + member + "}";
        case Dialect::sglang:
            return R"({"text":"hi",)" + sp + member + "}";
        case Dialect::ollama_generate:
            return R"({"model":"m","prompt":"hi","raw":true,)" + sp + member + "}";
        default:
            return R"({"model":"m","prompt":"hi",)" + sp + member + "}";
    }
}

bool expressible(Dialect client, Kind kind) {
    switch (kind) {
        case Kind::json_object:
            return client != Dialect::tgi && client != Dialect::llamacpp &&
                   client != Dialect::anthropic;
        case Kind::regex:
            return client == Dialect::openai_chat || client == Dialect::openai_completions ||
                   client == Dialect::tgi || client == Dialect::sglang;
        default:
            return true;
    }
}

struct Backend {
    Dialect dialect;
    Flavor flavor;
    const char* name;
};

// Whether `b` can carry `kind` (docs/dialects.md, "Structured output").
bool carries(const Backend& b, Kind kind) {
    const bool tgi = b.dialect == Dialect::tgi ||
                     (b.flavor == Flavor::tgi && (b.dialect == Dialect::openai_chat ||
                                                  b.dialect == Dialect::openai_completions));
    switch (kind) {
        case Kind::json_object:
            return !tgi && b.dialect != Dialect::anthropic;
        case Kind::regex:
            return tgi || b.dialect == Dialect::sglang ||
                   ((b.dialect == Dialect::openai_chat ||
                     b.dialect == Dialect::openai_completions) &&
                    (b.flavor == Flavor::vllm || b.flavor == Flavor::sglang));
        default:
            return true;
    }
}

// What `body`, sent to backend `b`, asks for: read as a client of the backend's own dialect
// writes it, but for the members only one OpenAI-compatible engine reads (llama.cpp's
// json_schema, vLLM's structured_outputs, SGLang's regex), read here directly.
OutputFormat backend_format(const Backend& b, const std::string& body) {
    const bool openai =
        b.dialect == Dialect::openai_chat || b.dialect == Dialect::openai_completions;
    if (openai) {
        json::Document doc;
        REQUIRE_FALSE(json::parse(body, doc));
        OutputFormat f;
        if (const json::Value* s = json::find(doc, "json_schema")) {
            REQUIRE(b.flavor == Flavor::llamacpp);
            f.kind = Kind::json_schema;
            f.schema = json::to_string(*s);
            return f;
        }
        if (const json::Value* so = json::find(doc, "structured_outputs")) {
            REQUIRE(b.flavor == Flavor::vllm);
            f.kind = Kind::regex;
            f.regex = json::view(*json::find(*so, "regex"));
            return f;
        }
        if (const json::Value* r = json::find(doc, "regex")) {
            REQUIRE(b.flavor == Flavor::sglang);
            f.kind = Kind::regex;
            f.regex = json::view(*r);
            return f;
        }
    }
    return format_of(b.dialect, body);
}

// Generated schemas: nested objects, arrays, enums, escapes and non-ASCII names.
std::vector<std::string> generated_schemas() {
    std::vector<std::string> out = {"{}", R"({"type":"object"})", std::string(kSchema)};
    const char* names[] = {"a", "city name", "caf\u00e9", "q\\\"uote", "\\u00e9t\\u00e9", "x/y"};
    const char* types[] = {R"({"type":"string"})", R"({"type":"integer","minimum":0})",
                           R"({"type":"array","items":{"type":"number"}})",
                           R"({"enum":["\u2603","b\n"]})", R"({"type":["string","null"]})"};
    unsigned seed = 7;
    for (int n = 0; n < 12; ++n) {
        std::string s = R"({"type":"object","properties":{)";
        const int members = 1 + n % 4;
        for (int m = 0; m < members; ++m) {
            seed = seed * 1103515245u + 12345u;
            if (m > 0) {
                s += ",";
            }
            s += "\"" + std::string(names[(seed >> 8) % 6]) + std::to_string(m) + "\":";
            if ((seed >> 16) % 5 == 0) {  // a nested object
                s += R"({"type":"object","properties":{"inner":)" +
                     std::string(types[(seed >> 4) % 5]) + "},\"required\":[\"inner\"]}";
            } else {
                s += types[(seed >> 12) % 5];
            }
        }
        s += "},\"additionalProperties\":false}";
        out.push_back(compact(s));
    }
    return out;
}

}  // namespace

TEST_CASE(
    "output_format round trip: every client's format through every backend, generated cases") {
    const Dialect clients[] = {
        Dialect::openai_completions, Dialect::openai_chat, Dialect::ollama_generate,
        Dialect::ollama_chat,        Dialect::tgi,         Dialect::sglang,
        Dialect::llamacpp,           Dialect::anthropic};
    const std::string_view spaces[] = {"", " ", "\n  "};
    int carried = 0;
    int refused = 0;
    for (const Dialect client : clients) {
        const bool chat = client == Dialect::openai_chat || client == Dialect::ollama_chat ||
                          client == Dialect::anthropic;
        std::vector<Backend> backends;
        const Dialect openai = chat ? Dialect::openai_chat : Dialect::openai_completions;
        for (const auto& [flavor, name] : std::initializer_list<std::pair<Flavor, const char*>>{
                 {Flavor::vllm, "vLLM"},
                 {Flavor::sglang, "SGLang OpenAI"},
                 {Flavor::tgi, "TGI OpenAI"},
                 {Flavor::llamacpp, "llama.cpp OpenAI"},
                 {Flavor::openai, "OpenAI API"},
                 {Flavor::generic, "generic"}}) {
            backends.push_back({openai, flavor, name});
        }
        if (chat) {
            backends.push_back({Dialect::ollama_chat, Flavor::generic, "Ollama chat"});
            backends.push_back({Dialect::anthropic, Flavor::generic, "Anthropic"});
        } else {
            backends.push_back({Dialect::ollama_generate, Flavor::generic, "Ollama generate"});
            backends.push_back({Dialect::sglang, Flavor::generic, "SGLang"});
            backends.push_back({Dialect::tgi, Flavor::generic, "TGI"});
            backends.push_back({Dialect::llamacpp, Flavor::generic, "llama.cpp"});
        }
        std::vector<OutputFormat> formats;
        for (const std::string& schema : generated_schemas()) {
            OutputFormat f;
            f.kind = Kind::json_schema;
            f.schema = schema;
            formats.push_back(f);
        }
        OutputFormat any;
        any.kind = Kind::json_object;
        formats.push_back(any);
        for (const char* regex : {"[0-9]{3}-[a-z]+", "\"quoted\"|\\d+", "caf\u00e9\\s*"}) {
            OutputFormat r;
            r.kind = Kind::regex;
            r.regex = regex;
            formats.push_back(r);
        }
        for (size_t i = 0; i < formats.size(); ++i) {
            const OutputFormat& want = formats[i];
            if (!expressible(client, want.kind)) {
                continue;
            }
            const std::string body = client_body(client, want, spaces[i % 3]);
            const GenerationRequest req = decode(client, body);
            const auto read = canonical::output_format(req);
            REQUIRE_MESSAGE(read.ok(), body);
            CHECK_MESSAGE(read->kind == want.kind, body);
            for (const Backend& b : backends) {
                INFO(std::string(canonical::to_string(client))
                     << " -> " << std::string(b.name) << ": " << body);
                // (TGI's OpenAI layer reads TGI's own shape: an OpenAI client's is translated.)
                const bool same_family =
                    (client == Dialect::openai_chat || client == Dialect::openai_completions)
                        ? b.dialect == openai && b.flavor != Flavor::tgi
                        : client == b.dialect;
                UpstreamOptions options;
                options.flavor = b.flavor;
                options.model = "m";
                auto sent = codec_for(b.dialect).encode_request(req, options);
                if (!same_family && !carries(b, want.kind)) {
                    REQUIRE_FALSE(sent.ok());
                    CHECK(sent.error().status == 400);
                    CHECK(sent.error().param == read->param);
                    ++refused;
                    continue;
                }
                REQUIRE_MESSAGE(sent.ok(), sent.error().message);
                if (same_family) {
                    continue;  // the client's own member goes as it is (params_test)
                }
                const OutputFormat got = backend_format(b, *sent);
                INFO("backend body: " << *sent);
                // An engine without an "any JSON object" switch gets {"type":"object"}.
                const bool as_schema =
                    want.kind == Kind::json_object && got.kind == Kind::json_schema;
                CHECK(got.kind == (as_schema ? Kind::json_schema : want.kind));
                if (as_schema) {
                    CHECK(got.schema == canonical::kAnyObjectSchema);
                } else if (want.kind == Kind::json_schema) {
                    CHECK(compact(got.schema) == compact(want.schema));
                }
                CHECK(got.regex == want.regex);
                ++carried;
            }
        }
    }
    CHECK(carried > 500);
    CHECK(refused > 20);
}

TEST_CASE("output_format writers: OpenAI's response_format and TGI's grammar") {
    OutputFormat f;
    f.kind = Kind::json_object;
    CHECK(canonical::openai_response_format(f) == R"({"type":"json_object"})");
    f.kind = Kind::json_schema;
    f.schema = kSchema;
    CHECK(canonical::openai_response_format(f) ==
          R"({"type":"json_schema","json_schema":{"name":"response","schema":)" +
              std::string(kSchema) + "}}");
    f.name = "person";
    f.description = "d";
    f.strict = false;
    CHECK(canonical::openai_response_format(f) ==
          R"({"type":"json_schema","json_schema":{"name":"person","description":"d","schema":)" +
              std::string(kSchema) + R"(,"strict":false}})");
    CHECK(canonical::tgi_grammar(f) == R"({"type":"json","value":)" + std::string(kSchema) + "}");
    f.kind = Kind::regex;
    f.regex = "\"a\"\\d";
    CHECK(canonical::tgi_grammar(f) == R"({"type":"regex","value":"\"a\"\\d"})");
}

TEST_CASE("output_format: refusals name the client's member and say what works") {
    GenerationRequest req =
        decode(Dialect::ollama_chat,
               R"({"model":"m","messages":[{"role":"user","content":"hi"}],"format":"json"})");
    UpstreamOptions options;
    auto r = codec_for(Dialect::anthropic).encode_request(req, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "format");
    CHECK(r.error().message.find("JSON mode without a schema") != std::string::npos);
    CHECK(r.error().message.find("only a JSON schema") != std::string::npos);

    req = decode(Dialect::sglang, R"({"text":"hi","sampling_params":{"regex":"a+"}})");
    options.flavor = Flavor::openai;
    r = codec_for(Dialect::openai_completions).encode_request(req, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "sampling_params.regex");
    CHECK(r.error().message.find("regular expression") != std::string::npos);

    // vLLM's demo server carries none: the usual refusal of another family's key.
    r = codec_for(Dialect::vllm_legacy).encode_request(req, options);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "sampling_params.regex");
}
