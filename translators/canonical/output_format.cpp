#include "translators/canonical/output_format.hpp"

#include <algorithm>

#include "translators/canonical/json.hpp"

namespace infergate::canonical {

namespace {

using Kind = OutputFormat::Kind;

const Extra* find_in(const std::vector<Extra>& list, std::string_view key) {
    for (const Extra& e : list) {
        if (e.key == key) {
            return &e;
        }
    }
    return nullptr;
}

// `value` (a JSON schema object, or a string holding one as TGI's and SGLang's clients may
// write it) into out.schema.
std::optional<Error> read_schema(const json::Value& value, const std::string& path,
                                 OutputFormat& out) {
    if (value.IsString()) {
        json::Document doc;
        if (json::parse(json::view(value), doc) || !doc.IsObject()) {
            return bad_request("'" + path +
                                   "' must be a JSON schema: an object, or a string "
                                   "holding one",
                               path);
        }
        out.schema = json::to_string(doc);
    } else if (value.IsObject()) {
        out.schema = json::to_string(value);
    } else {
        return bad_request("'" + path + "' must be a JSON schema object, got " +
                               std::string(json::type_name(value)),
                           path);
    }
    out.kind = Kind::json_schema;
    return std::nullopt;
}

std::optional<Error> read_regex(const json::Value& value, const std::string& path,
                                OutputFormat& out) {
    if (!value.IsString()) {
        return bad_request("'" + path + "' must be a regular expression (a string), got " +
                               std::string(json::type_name(value)),
                           path);
    }
    out.kind = Kind::regex;
    out.regex = json::view(value);
    return std::nullopt;
}

// OpenAI's json_schema object {name, description, schema, strict} (or TGI's {name, schema}).
std::optional<Error> read_named_schema(const json::Value& obj, const std::string& path,
                                       OutputFormat& out) {
    if (!obj.IsObject()) {
        return bad_request("'" + path + "' must be an object holding 'schema'", path);
    }
    std::optional<Error> err;
    if (auto name = json::get_string(obj, "name", path + ".name", err)) {
        out.name = std::move(*name);
    }
    if (auto d = json::get_string(obj, "description", path + ".description", err)) {
        out.description = std::move(*d);
    }
    out.strict = json::get_bool(obj, "strict", path + ".strict", err);
    if (err) {
        return err;
    }
    const json::Value* schema = json::find(obj, "schema");
    if (schema == nullptr || schema->IsNull()) {
        // vLLM and SGLang build no constraint from a json_schema without a schema; an empty
        // schema is "any JSON value", which is what the engines that take it make of it.
        out.kind = Kind::json_schema;
        out.schema = "{}";
        return std::nullopt;
    }
    return read_schema(*schema, path + ".schema", out);
}

// TGI's GrammarType {"type": "json" | "json_object" | "json_schema" | "regex", "value": ...}.
std::optional<Error> read_tgi_grammar(const json::Value& g, std::string_view type,
                                      const std::string& path, OutputFormat& out) {
    const json::Value* value = json::find(g, "value");
    if (value == nullptr) {
        return bad_request("'" + path + ".value' is missing: TGI's grammar is {\"type\": \"" +
                               std::string(type) + "\", \"value\": ...}",
                           path + ".value");
    }
    if (type == "json" || type == "json_object") {
        return read_schema(*value, path + ".value", out);
    }
    if (type == "json_schema") {
        return read_named_schema(*value, path + ".value", out);
    }
    return read_regex(*value, path + ".value", out);
}

std::optional<Error> read_openai(const json::Value& rf, OutputFormat& out) {
    const std::string path = "response_format";
    if (!rf.IsObject()) {
        return bad_request(
            "'response_format' must be an object such as {\"type\": \"json_object\"}", path);
    }
    std::optional<Error> err;
    const std::string type = json::get_string(rf, "type", path + ".type", err).value_or("");
    if (err) {
        return err;
    }
    if (type == "text") {
        return std::nullopt;
    }
    const bool tgi_shape = json::find(rf, "value") != nullptr;
    if (tgi_shape &&
        (type == "json" || type == "json_object" || type == "json_schema" || type == "regex")) {
        // TGI's chat route takes its GrammarType here; its clients write it.
        return read_tgi_grammar(rf, type, path, out);
    }
    if (type == "json_object") {
        if (const json::Value* schema = json::find(rf, "schema");
            schema != nullptr && !schema->IsNull()) {
            return read_schema(*schema, path + ".schema", out);  // llama.cpp's extension
        }
        out.kind = Kind::json_object;
        return std::nullopt;
    }
    if (type == "json_schema") {
        const json::Value* named = json::find(rf, "json_schema");
        if (named == nullptr || named->IsNull()) {
            return bad_request(
                "'response_format.json_schema' is missing: send "
                "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., "
                "\"schema\": {...}}}",
                path + ".json_schema");
        }
        return read_named_schema(*named, path + ".json_schema", out);
    }
    return bad_request(
        "'response_format.type' must be text, json_object or json_schema, got '" + type + "'",
        path + ".type");
}

std::optional<Error> read_ollama(const json::Value& format, OutputFormat& out) {
    if (format.IsString()) {
        const std::string_view s = json::view(format);
        if (s.empty()) {
            return std::nullopt;
        }
        if (s == "json") {
            out.kind = Kind::json_object;
            return std::nullopt;
        }
        return bad_request(
            "'format' must be \"json\" or a JSON schema object, got '" + std::string(s) + "'",
            "format");
    }
    return read_schema(format, "format", out);
}

std::optional<Error> read_anthropic_format(const json::Value& f, const std::string& path,
                                           OutputFormat& out) {
    std::optional<Error> err;
    const std::string type = json::get_string(f, "type", path + ".type", err).value_or("");
    if (err) {
        return err;
    }
    if (type != "json_schema") {
        return bad_request("'" + path + ".type' must be json_schema, got '" + type + "'",
                           path + ".type");
    }
    const json::Value* schema = json::find(f, "schema");
    if (schema == nullptr || schema->IsNull()) {
        return bad_request("'" + path + ".schema' is missing", path + ".schema");
    }
    return read_schema(*schema, path + ".schema", out);
}

std::optional<Error> read_anthropic(const Extra* config, const Extra* beta, OutputFormat& out) {
    json::Document doc;
    if (config != nullptr && config->json != "null") {
        if (json::parse(config->json, doc) || !doc.IsObject()) {
            return bad_request("'output_config' must be an object", "output_config");
        }
        for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
            const std::string_view key = json::view(it->name);
            if (key == "format") {
                if (!it->value.IsNull()) {
                    out.param = "output_config.format";
                    if (auto e = read_anthropic_format(it->value, out.param, out)) {
                        return e;
                    }
                }
            } else if (!it->value.IsNull()) {
                const std::string path = "output_config." + std::string(key);
                return bad_request("'" + path +
                                       "' cannot be carried to a backend of another API: "
                                       "only output_config.format (a JSON schema) is "
                                       "translated; remove it",
                                   path);
            }
        }
    }
    if (out.kind == Kind::none && beta != nullptr && beta->json != "null") {
        if (json::parse(beta->json, doc) || !doc.IsObject()) {
            return bad_request("'output_format' must be an object", "output_format");
        }
        out.param = "output_format";
        return read_anthropic_format(doc, out.param, out);
    }
    return std::nullopt;
}

// One extra's value parsed, or a 400 naming `path`.
std::optional<Error> parse_extra(const Extra& e, const std::string& path, json::Document& doc) {
    if (json::parse(e.json, doc)) {
        return bad_request("'" + path + "' is not valid JSON", path);
    }
    return std::nullopt;
}

}  // namespace

bool is_output_format_key(Dialect client, std::string_view key, bool sampling) {
    switch (client) {
        case Dialect::openai_chat:
        case Dialect::openai_completions:
            return !sampling && key == "response_format";
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
            return !sampling && key == "format";
        case Dialect::tgi:
            return sampling && key == "grammar";
        case Dialect::sglang:
            return sampling && (key == "json_schema" || key == "regex");
        case Dialect::llamacpp:
            return !sampling && key == "json_schema";
        case Dialect::anthropic:
            return !sampling && (key == "output_config" || key == "output_format");
        case Dialect::vllm_legacy:
        case Dialect::openai_responses:  // decoded as openai_chat
            break;
    }
    return false;
}

bool asks_output_format(const GenerationRequest& req) {
    for (const Extra& e : req.extras) {
        if (is_output_format_key(req.dialect, e.key, false)) {
            return true;
        }
    }
    for (const Extra& e : req.sampling_extras) {
        if (is_output_format_key(req.dialect, e.key, true)) {
            return true;
        }
    }
    return false;
}

Result<OutputFormat> output_format(const GenerationRequest& req) {
    OutputFormat out;
    std::optional<Error> err;
    json::Document doc;
    switch (req.dialect) {
        case Dialect::openai_chat:
        case Dialect::openai_completions:
            if (const Extra* e = find_in(req.extras, "response_format");
                e != nullptr && e->json != "null") {
                out.param = "response_format";
                err = parse_extra(*e, out.param, doc);
                if (!err) {
                    err = read_openai(doc, out);
                }
            }
            break;
        case Dialect::ollama_generate:
        case Dialect::ollama_chat:
            if (const Extra* e = find_in(req.extras, "format"); e != nullptr && e->json != "null") {
                out.param = "format";
                err = parse_extra(*e, out.param, doc);
                if (!err) {
                    err = read_ollama(doc, out);
                }
            }
            break;
        case Dialect::tgi:
            if (const Extra* e = find_in(req.sampling_extras, "grammar");
                e != nullptr && e->json != "null") {
                out.param = "parameters.grammar";
                err = parse_extra(*e, out.param, doc);
                if (!err && !doc.IsObject()) {
                    err = bad_request(
                        "'parameters.grammar' must be an object such as "
                        "{\"type\": \"json\", \"value\": {...}}",
                        out.param);
                }
                if (!err) {
                    const std::string type =
                        json::get_string(doc, "type", out.param + ".type", err).value_or("");
                    if (!err && type != "json" && type != "json_object" && type != "json_schema" &&
                        type != "regex") {
                        err = bad_request(
                            "'parameters.grammar.type' must be json, json_schema "
                            "or regex, got '" +
                                type + "'",
                            out.param + ".type");
                    }
                    if (!err) {
                        err = read_tgi_grammar(doc, type, out.param, out);
                    }
                }
            }
            break;
        case Dialect::sglang: {
            const Extra* schema = find_in(req.sampling_extras, "json_schema");
            const Extra* regex = find_in(req.sampling_extras, "regex");
            if (schema != nullptr && schema->json == "null") {
                schema = nullptr;
            }
            if (regex != nullptr && regex->json == "null") {
                regex = nullptr;
            }
            if (schema != nullptr && regex != nullptr) {
                // SGLang: "Only one of regex, json_schema, or ebnf can be set".
                return bad_request(
                    "'sampling_params.json_schema' and 'sampling_params.regex' "
                    "cannot both be set; send one",
                    "sampling_params.regex");
            }
            if (schema != nullptr) {
                out.param = "sampling_params.json_schema";
                err = parse_extra(*schema, out.param, doc);
                if (!err && !doc.IsString()) {
                    err = bad_request(
                        "'sampling_params.json_schema' must be a string holding "
                        "the JSON schema",
                        out.param);
                }
                if (!err && json::view(doc) == "$$ANY$$") {
                    out.kind = Kind::json_object;  // xgrammar's "any JSON" switch
                } else if (!err) {
                    err = read_schema(doc, out.param, out);
                }
            } else if (regex != nullptr) {
                out.param = "sampling_params.regex";
                err = parse_extra(*regex, out.param, doc);
                if (!err) {
                    err = read_regex(doc, out.param, out);
                }
            }
            break;
        }
        case Dialect::llamacpp:
            if (const Extra* e = find_in(req.extras, "json_schema");
                e != nullptr && e->json != "null") {
                out.param = "json_schema";
                err = parse_extra(*e, out.param, doc);
                if (!err) {
                    err = read_schema(doc, out.param, out);
                }
            }
            break;
        case Dialect::anthropic:
            err = read_anthropic(find_in(req.extras, "output_config"),
                                 find_in(req.extras, "output_format"), out);
            break;
        case Dialect::vllm_legacy:
        case Dialect::openai_responses:  // decoded as openai_chat
            break;
    }
    if (err) {
        return std::move(*err);
    }
    if (out.kind == Kind::none) {
        out.param.clear();
    }
    return out;
}

Error unsupported_format(const OutputFormat& f, std::string_view backend,
                         std::string_view instead) {
    std::string what;
    switch (f.kind) {
        case Kind::json_object:
            what = "JSON mode without a schema";
            break;
        case Kind::json_schema:
            what = "a JSON schema";
            break;
        case Kind::regex:
            what = "a regular expression";
            break;
        case Kind::none:
            break;
    }
    return bad_request("'" + f.param + "' (" + what + ") cannot be carried to " +
                           std::string(backend) + ": " + std::string(instead),
                       f.param);
}

Result<OutputFormat> output_format_for(const GenerationRequest& req, std::string_view backend,
                                       std::initializer_list<OutputFormat::Kind> cannot,
                                       std::string_view instead) {
    if (!asks_output_format(req)) {
        return OutputFormat{};
    }
    auto f = output_format(req);
    if (f && std::find(cannot.begin(), cannot.end(), f->kind) != cannot.end()) {
        return unsupported_format(*f, backend, instead);
    }
    return f;
}

std::string openai_response_format(const OutputFormat& f) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "type");
    if (f.kind == Kind::json_object) {
        json::string(w, "json_object");
        w.EndObject();
        return out;
    }
    json::string(w, "json_schema");
    json::key(w, "json_schema");
    w.StartObject();
    json::key(w, "name");  // required by OpenAI, vLLM and SGLang
    json::string(w, f.name.empty() ? std::string_view("response") : std::string_view(f.name));
    if (!f.description.empty()) {
        json::key(w, "description");
        json::string(w, f.description);
    }
    json::key(w, "schema");
    json::write_raw(w, f.schema);
    json::write_optional(w, "strict", f.strict);
    w.EndObject();
    w.EndObject();
    return out;
}

std::string tgi_grammar(const OutputFormat& f) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "type");
    if (f.kind == Kind::regex) {
        json::string(w, "regex");
        json::key(w, "value");
        json::string(w, f.regex);
    } else {
        // "json" is in every TGI with grammars; "json_schema" only in recent ones.
        json::string(w, "json");
        json::key(w, "value");
        json::write_raw(w, f.schema);
    }
    w.EndObject();
    return out;
}

}  // namespace infergate::canonical
