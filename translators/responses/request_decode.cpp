// Responses API requests, client side (POST /v1/responses): the body is checked member by member
// and rewritten as the OpenAI chat request it is equivalent to, which the chat decoder then
// reads; so a Responses request reaches every backend the way a chat client's does, through the
// backend's chat API (docs/dialects.md, "Responses API"). Conversation state (previous_response_id,
// item_reference) is read from the proxy's store through ConversationLookup.
//
// Mapping (Responses -> chat):
//   instructions                  a leading system message (not carried to later turns)
//   input: string                 one user message
//   input: message items          messages; input_text/output_text parts as text, input_image as
//                                 image_url parts
//   reasoning, message (assistant), function_call items
//                                 one assistant message: reasoning_content, content, tool_calls
//   function_call_output          a tool message
//   item_reference                the stored item it names
//   max_output_tokens             max_completion_tokens
//   tools (function)              tools [{"type": "function", "function": {...}}]
//   tool_choice                   tool_choice in chat's shape
//   text.format                   response_format; text.verbosity -> verbosity
//   reasoning.effort              reasoning_effort (Ollama backends: think)
//   temperature, top_p, user, parallel_tool_calls, stream
//                                 as they are (a stream asks for usage: response.completed has it)

#include <algorithm>

#include "translators/openai/request_codec.hpp"
#include "translators/responses/codec_impl.hpp"

namespace infergate::translators::responses {

namespace {

using canonical::bad_request;
using canonical::Error;
using json::Value;

// Every top-level member a Responses request may have. The ones the bridge cannot honour are
// refused by name below; anything else is the 400 OpenAI gives for an unknown parameter.
constexpr std::string_view kKnown[] = {"model",
                                       "input",
                                       "instructions",
                                       "max_output_tokens",
                                       "temperature",
                                       "top_p",
                                       "tools",
                                       "tool_choice",
                                       "parallel_tool_calls",
                                       "text",
                                       "reasoning",
                                       "metadata",
                                       "user",
                                       "store",
                                       "previous_response_id",
                                       "stream",
                                       "stream_options",
                                       "include",
                                       "truncation",
                                       "background",
                                       "service_tier",
                                       "top_logprobs",
                                       "max_tool_calls",
                                       "prompt",
                                       "prompt_cache_key",
                                       "safety_identifier",
                                       "conversation",
                                       "prompt_cache_retention"};

Error refused(std::string_view param, std::string why) {
    return bad_request("'" + std::string(param) + "' " + why, std::string(param));
}

// One assistant turn being assembled from consecutive reasoning, message and function_call
// items (the Responses API keeps them apart; chat has one message for them).
struct Assistant {
    std::string text;
    std::string reasoning;
    std::string calls;  // the tool_calls array's members, JSON
    bool open = false;
};

class ChatWriter {
public:
    explicit ChatWriter(const ConversationLookup* lookup) : lookup_(lookup), os_{&body_}, w_(os_) {}

    json::Writer& w() { return w_; }
    std::string& body() { return body_; }

    // One Responses item (its JSON value) at `path` ("input[3]").
    std::optional<Error> item(const Value& v, const std::string& path, int depth = 0) {
        if (v.IsString() && depth == 0 && path == "input") {
            flush();
            message("user", v, path);
            return std::nullopt;
        }
        if (!v.IsObject()) {
            return bad_request("'" + path + "' must be an object (an input item), got " +
                                   std::string(json::type_name(v)),
                               path);
        }
        const Value* type = json::find(v, "type");
        std::string_view t = type != nullptr && type->IsString() ? json::view(*type) : "";
        if (type != nullptr && !type->IsString()) {
            return bad_request("'" + path + ".type' must be a string", path + ".type");
        }
        if (t.empty() && json::find(v, "role") != nullptr) {
            t = "message";  // an EasyInputMessage: {"role", "content"} without a type
        }
        if (t == "message") {
            return message_item(v, path);
        }
        if (t == "function_call") {
            return function_call(v, path);
        }
        if (t == "function_call_output") {
            return function_output(v, path);
        }
        if (t == "reasoning") {
            return reasoning(v, path);
        }
        if (t == "item_reference") {
            return reference(v, path, depth);
        }
        if (t.empty()) {
            return bad_request("'" + path +
                                   "' has no 'type' (message, function_call, "
                                   "function_call_output, reasoning or item_reference)",
                               path + ".type");
        }
        return bad_request(
            "'" + path + ".type' is '" + std::string(t) +
                "', an item of a tool OpenAI runs itself; infergate bridges /v1/responses onto "
                "the backend's chat API, which takes message, function_call, "
                "function_call_output, reasoning and item_reference items",
            path + ".type");
    }

    // Ends the assistant turn being assembled.
    void flush() {
        if (!asst_.open) {
            return;
        }
        w_.StartObject();
        json::key(w_, "role");
        json::string(w_, "assistant");
        json::key(w_, "content");
        if (asst_.text.empty() && !asst_.calls.empty()) {
            w_.Null();
        } else {
            json::string(w_, asst_.text);
        }
        if (!asst_.reasoning.empty()) {
            json::key(w_, "reasoning_content");
            json::string(w_, asst_.reasoning);
        }
        if (!asst_.calls.empty()) {
            json::key(w_, "tool_calls");
            w_.StartArray();
            json::write_raw(w_, asst_.calls);  // the members, comma-separated: see add_call
            w_.EndArray();
        }
        w_.EndObject();
        asst_ = Assistant{};
    }

    // The items this request adds to the conversation (compact JSON, references resolved).
    std::vector<std::string>& input_items() { return input_items_; }
    bool recording = false;

private:
    // Keeps an input item as the API lists it (GET .../input_items, a continued turn): a message
    // in the short form ({"role", "content": "text"}, or parts without "type") as a message item
    // {"type": "message", "role", "content": [{"type": "input_text" | "output_text", "text"}]}.
    void record(const Value& v) {
        if (!recording) {
            return;
        }
        const Value* type = json::find(v, "type");
        const Value* role = json::find(v, "role");
        const Value* content = json::find(v, "content");
        const bool message =
            type == nullptr || (type->IsString() && json::view(*type) == "message");
        if (!v.IsObject() || !message || role == nullptr || !role->IsString() ||
            content == nullptr || (type != nullptr && !content->IsString())) {
            input_items_.push_back(json::to_string(v));
            return;
        }
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "type");
        json::string(w, "message");
        for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
            const std::string_view k(it->name.GetString(), it->name.GetStringLength());
            if (k == "type") {
                continue;
            }
            json::key(w, k);
            if (k == "content" && it->value.IsString()) {
                w.StartArray();
                w.StartObject();
                json::key(w, "type");
                json::string(w, json::view(*role) == "assistant" ? "output_text" : "input_text");
                json::key(w, "text");
                json::string(w, json::view(it->value));
                w.EndObject();
                w.EndArray();
            } else {
                it->value.Accept(w);
            }
        }
        w.EndObject();
        input_items_.push_back(std::move(out));
    }

    // A message's content as chat content: a string as it is; parts as chat parts.
    std::optional<Error> content(const Value& c, const std::string& path, bool assistant) {
        if (c.IsString()) {
            json::string(w_, json::view(c));
            return std::nullopt;
        }
        if (!c.IsArray()) {
            return bad_request("'" + path + "' must be a string or a list of content parts", path);
        }
        if (assistant) {
            // An assistant turn's parts (output_text, refusal) as its text.
            std::string text;
            if (auto e = assistant_text(c, path, text)) {
                return e;
            }
            json::string(w_, text);
            return std::nullopt;
        }
        w_.StartArray();
        for (rapidjson::SizeType i = 0; i < c.Size(); ++i) {
            const std::string at = path + "[" + std::to_string(i) + "]";
            const Value& part = c[i];
            const Value* type = json::find(part, "type");
            const std::string_view t = type != nullptr && type->IsString() ? json::view(*type) : "";
            if (t == "input_text" || t == "output_text" || t == "text") {
                const Value* text = json::find(part, "text");
                if (text == nullptr || !text->IsString()) {
                    return bad_request("'" + at + ".text' must be a string", at + ".text");
                }
                w_.StartObject();
                json::key(w_, "type");
                json::string(w_, "text");
                json::key(w_, "text");
                json::string(w_, json::view(*text));
                w_.EndObject();
            } else if (t == "input_image") {
                const Value* url = json::find(part, "image_url");
                if (url == nullptr || !url->IsString()) {
                    return bad_request(
                        "'" + at +
                            ".image_url' must be a URL or a data URL (a file_id names a file "
                            "stored at OpenAI, which a self-hosted backend cannot read)",
                        at + ".image_url");
                }
                const std::string_view u = json::view(*url);
                if (const size_t comma = u.find(',');
                    u.starts_with("data:") &&
                    (comma == std::string_view::npos || !u.substr(0, comma).ends_with(";base64"))) {
                    // (Checked here, so that the 400 names the client's field and not the
                    // chat request's.)
                    return bad_request("'" + at +
                                           ".image_url' is a data URL without base64 data; send "
                                           "data:<media type>;base64,<bytes>",
                                       at + ".image_url");
                }
                w_.StartObject();
                json::key(w_, "type");
                json::string(w_, "image_url");
                json::key(w_, "image_url");
                w_.StartObject();
                json::key(w_, "url");
                json::string(w_, json::view(*url));
                if (const Value* detail = json::find(part, "detail");
                    detail != nullptr && detail->IsString()) {
                    json::key(w_, "detail");
                    json::string(w_, json::view(*detail));
                }
                w_.EndObject();
                w_.EndObject();
            } else {
                return bad_request(
                    "'" + at + ".type' is '" + std::string(t) +
                        "'; the parts a chat backend takes are input_text and input_image "
                        "(files and audio are not translated)",
                    at + ".type");
            }
        }
        w_.EndArray();
        return std::nullopt;
    }

    static std::optional<Error> assistant_text(const Value& c, const std::string& path,
                                               std::string& text) {
        if (c.IsString()) {
            text.append(json::view(c));
            return std::nullopt;
        }
        if (!c.IsArray()) {
            return bad_request("'" + path + "' must be a string or a list of content parts", path);
        }
        for (rapidjson::SizeType i = 0; i < c.Size(); ++i) {
            const std::string at = path + "[" + std::to_string(i) + "]";
            const Value* type = json::find(c[i], "type");
            const Value* t = json::find(c[i], "text");
            const std::string_view kind =
                type != nullptr && type->IsString() ? json::view(*type) : "";
            if ((kind == "output_text" || kind == "input_text" || kind == "text") && t != nullptr &&
                t->IsString()) {
                if (i > 0) {
                    text += '\n';  // as vLLM joins a message's text parts, whatever its role
                }
                text.append(json::view(*t));
                continue;
            }
            return bad_request("'" + at +
                                   "' must be an output_text part {\"type\": \"output_text\", "
                                   "\"text\"} (an assistant turn's refusal has no place in a "
                                   "chat history)",
                               at);
        }
        return std::nullopt;
    }

    void message(std::string_view role, const Value& c, const std::string& path) {
        w_.StartObject();
        json::key(w_, "role");
        json::string(w_, role);
        json::key(w_, "content");
        (void)content(c, path, false);  // a string: cannot fail
        w_.EndObject();
    }

    std::optional<Error> message_item(const Value& v, const std::string& path) {
        const Value* role = json::find(v, "role");
        if (role == nullptr || !role->IsString()) {
            return bad_request("'" + path + ".role' must be user, system, developer or assistant",
                               path + ".role");
        }
        const std::string_view r = json::view(*role);
        const Value* c = json::find(v, "content");
        if (c == nullptr) {
            return bad_request("'" + path + ".content' is required", path + ".content");
        }
        if (r == "assistant") {
            if (asst_.open && (!asst_.text.empty() || !asst_.calls.empty())) {
                flush();
            }
            asst_.open = true;
            return assistant_text(*c, path + ".content", asst_.text);
        }
        if (r != "user" && r != "system" && r != "developer") {
            return bad_request("'" + path + ".role' is '" + std::string(r) +
                                   "'; a message's role is user, system, developer or assistant",
                               path + ".role");
        }
        flush();
        w_.StartObject();
        json::key(w_, "role");
        json::string(w_, r);
        json::key(w_, "content");
        if (auto e = content(*c, path + ".content", false)) {
            return e;
        }
        w_.EndObject();
        return std::nullopt;
    }

    std::optional<Error> function_call(const Value& v, const std::string& path) {
        const Value* call_id = json::find(v, "call_id");
        const Value* name = json::find(v, "name");
        const Value* arguments = json::find(v, "arguments");
        for (const auto& [member, value] :
             {std::pair{"call_id", call_id}, {"name", name}, {"arguments", arguments}}) {
            if (value == nullptr || !value->IsString()) {
                return bad_request("'" + path + "." + member + "' must be a string",
                                   path + "." + member);
            }
        }
        if (name->GetStringLength() == 0) {
            return bad_request("'" + path + ".name' must not be empty: the function called",
                               path + ".name");
        }
        asst_.open = true;  // the same turn as the reasoning, text and calls before it
        std::string call;
        json::StringOut os{&call};
        json::Writer w(os);
        w.StartObject();
        json::key(w, "id");
        json::string(w, json::view(*call_id));
        json::key(w, "type");
        json::string(w, "function");
        json::key(w, "function");
        w.StartObject();
        json::key(w, "name");
        json::string(w, json::view(*name));
        json::key(w, "arguments");
        json::string(w, json::view(*arguments));
        w.EndObject();
        w.EndObject();
        if (!asst_.calls.empty()) {
            asst_.calls += ',';
        }
        asst_.calls += call;
        return std::nullopt;
    }

    std::optional<Error> function_output(const Value& v, const std::string& path) {
        const Value* call_id = json::find(v, "call_id");
        if (call_id == nullptr || !call_id->IsString()) {
            return bad_request("'" + path + ".call_id' must be a string", path + ".call_id");
        }
        const Value* output = json::find(v, "output");
        std::string text;
        if (output == nullptr) {
            return bad_request("'" + path + ".output' is required", path + ".output");
        }
        if (output->IsString()) {
            text.assign(json::view(*output));
        } else if (auto e = assistant_text(*output, path + ".output", text)) {
            return bad_request("'" + path +
                                   ".output' must be a string or a list of input_text parts "
                                   "(a chat tool message carries text)",
                               path + ".output");
        }
        flush();
        w_.StartObject();
        json::key(w_, "role");
        json::string(w_, "tool");
        json::key(w_, "tool_call_id");
        json::string(w_, json::view(*call_id));
        json::key(w_, "content");
        json::string(w_, text);
        w_.EndObject();
        return std::nullopt;
    }

    std::optional<Error> reasoning(const Value& v, const std::string& path) {
        // reasoning_text content (vLLM, SGLang, gpt-oss) or, without it, the summary's text.
        std::string text;
        for (const char* member : {"content", "summary"}) {
            const Value* list = json::find(v, member);
            if (list == nullptr || list->IsNull()) {
                continue;
            }
            if (!list->IsArray()) {
                return bad_request("'" + path + "." + member + "' must be a list",
                                   path + "." + member);
            }
            for (const Value& part : list->GetArray()) {
                const Value* t = json::find(part, "text");
                if (t != nullptr && t->IsString()) {
                    if (!text.empty()) {
                        text += "\n";
                    }
                    text.append(json::view(*t));
                }
            }
            if (!text.empty()) {
                break;
            }
        }
        if (asst_.open && (!asst_.text.empty() || !asst_.calls.empty())) {
            flush();  // reasoning starts a new turn
        }
        asst_.open = true;
        asst_.reasoning += text;
        return std::nullopt;
    }

    std::optional<Error> reference(const Value& v, const std::string& path, int depth) {
        const Value* id = json::find(v, "id");
        if (id == nullptr || !id->IsString()) {
            return bad_request("'" + path + ".id' must be a string (the id of a stored item)",
                               path + ".id");
        }
        if (depth > 0) {
            return bad_request("'" + path + "' is a stored item_reference", path);
        }
        std::optional<std::string> stored =
            lookup_ != nullptr ? lookup_->item(json::view(*id)) : std::nullopt;
        if (!stored) {
            Error e = bad_request(
                "Item with id '" + std::string(json::view(*id)) + "' not found" +
                    (lookup_ == nullptr ? " (this infergate keeps no responses: "
                                          "responses.store.max_entries is 0); send the item "
                                          "itself"
                                        : "; it was never stored, was deleted, or has expired "
                                          "(docs/dialects.md, \"Responses API\"); send the "
                                          "item itself"),
                path + ".id");
            e.code = "item_not_found";
            return e;
        }
        json::Document doc;
        if (json::parse(*stored, doc)) {
            return bad_request("stored item '" + std::string(json::view(*id)) + "' is unreadable",
                               path);
        }
        const bool was = recording;
        if (recording) {
            input_items_.push_back(*stored);
            recording = false;
        }
        auto e = item(doc, path, depth + 1);
        recording = was;
        return e;
    }

public:
    std::optional<Error> recorded_item(const Value& v, const std::string& path) {
        const Value* type = json::find(v, "type");
        if (recording &&
            !(type != nullptr && type->IsString() && json::view(*type) == "item_reference")) {
            record(v);
        }
        return item(v, path);
    }

private:
    const ConversationLookup* lookup_;
    std::string body_;
    json::StringOut os_;
    json::Writer w_;
    Assistant asst_;
    std::vector<std::string> input_items_;
};

// tools: function tools in chat's shape. `strict` goes on only where the client wrote it: the
// Responses API's default (true) is OpenAI's own enforcement, which a chat backend may not have.
std::optional<Error> write_tools(const Value& tools, json::Writer& w) {
    if (!tools.IsArray()) {
        return bad_request("'tools' must be a list", "tools");
    }
    if (tools.Empty()) {
        return std::nullopt;
    }
    json::key(w, "tools");
    w.StartArray();
    for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const Value& t = tools[i];
        const Value* type = json::find(t, "type");
        const std::string_view kind = type != nullptr && type->IsString() ? json::view(*type) : "";
        if (kind != "function") {
            return bad_request(
                "'" + at + ".type' is '" + std::string(kind) +
                    "': infergate bridges /v1/responses onto the backend's chat API, which runs "
                    "function tools only (web search, file search, code interpreter, MCP and "
                    "the other hosted tools run at OpenAI)",
                at + ".type");
        }
        const Value* name = json::find(t, "name");
        if (name == nullptr || !name->IsString()) {
            return bad_request("'" + at + ".name' must be a string", at + ".name");
        }
        w.StartObject();
        json::key(w, "type");
        json::string(w, "function");
        json::key(w, "function");
        w.StartObject();
        json::key(w, "name");
        json::string(w, json::view(*name));
        for (const char* member : {"description", "parameters", "strict"}) {
            const Value* m = json::find(t, member);
            if (m != nullptr && !m->IsNull()) {
                json::key(w, member);
                m->Accept(w);
            }
        }
        w.EndObject();
        w.EndObject();
        for (auto it = t.MemberBegin(); it != t.MemberEnd(); ++it) {
            const std::string_view k(it->name.GetString(), it->name.GetStringLength());
            if (k != "type" && k != "name" && k != "description" && k != "parameters" &&
                k != "strict") {
                return bad_request(
                    "'" + at + "." + std::string(k) + "' is not a member of a function tool",
                    at + "." + std::string(k));
            }
        }
    }
    w.EndArray();
    return std::nullopt;
}

std::optional<Error> write_tool_choice(const Value& choice, json::Writer& w) {
    json::key(w, "tool_choice");
    if (choice.IsString()) {
        const std::string_view c = json::view(choice);
        if (c != "none" && c != "auto" && c != "required") {
            return bad_request("'tool_choice' must be none, auto, required or a function",
                               "tool_choice");
        }
        json::string(w, c);
        return std::nullopt;
    }
    const Value* type = json::find(choice, "type");
    const Value* name = json::find(choice, "name");
    if (type == nullptr || !type->IsString() || json::view(*type) != "function" ||
        name == nullptr || !name->IsString()) {
        return bad_request(
            "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\"}; "
            "allowed_tools and hosted tools are not bridged onto the chat API",
            "tool_choice");
    }
    w.StartObject();
    json::key(w, "type");
    json::string(w, "function");
    json::key(w, "function");
    w.StartObject();
    json::key(w, "name");
    json::string(w, json::view(*name));
    w.EndObject();
    w.EndObject();
    return std::nullopt;
}

// text: {"format": {"type": "text" | "json_object" | "json_schema", ...}, "verbosity"}.
std::optional<Error> write_text(const Value& text, json::Writer& w) {
    if (!text.IsObject()) {
        return bad_request("'text' must be an object {\"format\", \"verbosity\"}", "text");
    }
    for (auto it = text.MemberBegin(); it != text.MemberEnd(); ++it) {
        const std::string_view k(it->name.GetString(), it->name.GetStringLength());
        if (k != "format" && k != "verbosity") {
            return bad_request("'text." + std::string(k) + "' is not a member of 'text'",
                               "text." + std::string(k));
        }
    }
    if (const Value* verbosity = json::find(text, "verbosity");
        verbosity != nullptr && !verbosity->IsNull()) {
        json::key(w, "verbosity");
        verbosity->Accept(w);
    }
    const Value* format = json::find(text, "format");
    if (format == nullptr || format->IsNull()) {
        return std::nullopt;
    }
    const Value* type = json::find(*format, "type");
    const std::string_view kind = type != nullptr && type->IsString() ? json::view(*type) : "";
    if (kind == "text") {
        return std::nullopt;
    }
    json::key(w, "response_format");
    if (kind == "json_object") {
        w.StartObject();
        json::key(w, "type");
        json::string(w, "json_object");
        w.EndObject();
        return std::nullopt;
    }
    if (kind != "json_schema") {
        return bad_request("'text.format.type' must be text, json_object or json_schema",
                           "text.format.type");
    }
    const Value* name = json::find(*format, "name");
    const Value* schema = json::find(*format, "schema");
    if (name == nullptr || !name->IsString()) {
        return bad_request("'text.format.name' must be a string", "text.format.name");
    }
    if (schema == nullptr || !schema->IsObject()) {
        return bad_request("'text.format.schema' must be a JSON schema object",
                           "text.format.schema");
    }
    w.StartObject();
    json::key(w, "type");
    json::string(w, "json_schema");
    json::key(w, "json_schema");
    w.StartObject();
    for (const char* member : {"name", "description", "schema", "strict"}) {
        const Value* m = json::find(*format, member);
        if (m != nullptr && !m->IsNull()) {
            json::key(w, member);
            m->Accept(w);
        }
    }
    w.EndObject();
    w.EndObject();
    return std::nullopt;
}

// The members the response object repeats, as the client set them (null where it did not and
// the effective value is the backend's own default, which the proxy does not know).
void write_echo(const Value& doc, std::vector<canonical::Extra>& out) {
    const auto member = [&](std::string_view k, std::string_view fallback) {
        const Value* v = json::find(doc, k);
        canonical::Extra& e = out.emplace_back();
        e.key.assign(k);
        if (v != nullptr && !v->IsNull()) {
            e.json = json::to_string(*v);
        } else {
            e.json.assign(fallback);
        }
    };
    member("instructions", "null");
    member("max_output_tokens", "null");
    member("max_tool_calls", "null");
    member("metadata", "{}");
    member("parallel_tool_calls", "true");
    member("reasoning", R"({"effort":null,"summary":null})");
    member("service_tier", R"("auto")");
    member("temperature", "null");
    member("text", R"({"format":{"type":"text"}})");
    member("tool_choice", R"("auto")");
    member("tools", "[]");
    member("top_p", "null");
    member("truncation", R"("disabled")");
    member("user", "null");
    for (std::string_view k : {"prompt_cache_key", "safety_identifier"}) {
        if (json::find(doc, k) != nullptr) {
            member(k, "null");
        }
    }
}

std::optional<Error> check_refused(const Value& doc) {
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view k(it->name.GetString(), it->name.GetStringLength());
        if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown)) {
            Error e = bad_request("Unknown parameter: '" + std::string(k) + "'.", std::string(k));
            e.code = "unknown_parameter";
            return e;
        }
    }
    const auto set = [&](std::string_view k) {
        const Value* v = json::find(doc, k);
        return v != nullptr && !v->IsNull() ? v : nullptr;
    };
    if (const Value* v = set("background"); v != nullptr && !(v->IsBool() && !v->GetBool())) {
        return refused("background",
                       "(run in the background, poll later) is not supported: infergate "
                       "answers while the backend generates; send background: false or omit it");
    }
    if (const Value* v = set("truncation");
        v != nullptr && !(v->IsString() && json::view(*v) == "disabled")) {
        return refused("truncation",
                       "must be 'disabled': infergate does not cut a conversation to the "
                       "model's context (the backend answers 400 when it is too long)");
    }
    if (set("max_tool_calls") != nullptr) {
        return refused("max_tool_calls",
                       "cannot be held by a chat backend, which has no limit on the calls of "
                       "one answer; omit it");
    }
    if (const Value* v = set("top_logprobs"); v != nullptr && !(v->IsInt() && v->GetInt() == 0)) {
        return refused("top_logprobs",
                       "is not bridged onto the chat API yet; use POST /v1/chat/completions "
                       "with logprobs and top_logprobs");
    }
    if (set("prompt") != nullptr) {
        return refused("prompt",
                       "(a prompt template stored at OpenAI) cannot be read by a self-hosted "
                       "backend; send the input and instructions themselves");
    }
    if (set("conversation") != nullptr) {
        return refused("conversation",
                       "(OpenAI's Conversations API) is not kept by infergate; continue a "
                       "conversation with previous_response_id");
    }
    if (const Value* v = set("include"); v != nullptr) {
        if (!v->IsArray()) {
            return refused("include", "must be a list of strings");
        }
        for (const Value& s : v->GetArray()) {
            // Encrypted reasoning is OpenAI's own; the bridge's reasoning items carry their
            // text, which comes back as it is.
            if (!s.IsString() || json::view(s) != "reasoning.encrypted_content") {
                return refused("include",
                               "may only name reasoning.encrypted_content here: " +
                                   (s.IsString() ? "'" + std::string(json::view(s)) + "'"
                                                 : std::string("a non-string")) +
                                   " is output OpenAI's hosted tools or logprobs make, which "
                                   "the chat bridge has no source for");
            }
        }
    }
    if (const Value* v = set("metadata"); v != nullptr) {
        if (!v->IsObject() || v->MemberCount() > 16) {
            return refused("metadata", "must be an object of at most 16 string values");
        }
        for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
            if (!it->value.IsString() || it->name.GetStringLength() > 64 ||
                it->value.GetStringLength() > 512) {
                return refused("metadata",
                               "must map keys of at most 64 characters to strings of at most "
                               "512");
            }
        }
    }
    if (const Value* v = set("stream_options"); v != nullptr) {
        if (!v->IsObject()) {
            return refused("stream_options", "must be an object {\"include_obfuscation\"}");
        }
        for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
            if (std::string_view(it->name.GetString()) != "include_obfuscation") {
                return refused("stream_options",
                               "may only have include_obfuscation (infergate never pads "
                               "events)");
            }
        }
    }
    return std::nullopt;
}

}  // namespace

Result<GenerationRequest> ResponsesCodec::decode_request(std::string_view body) const {
    return decode_stateful(body, nullptr);
}

Result<GenerationRequest> ResponsesCodec::decode_stateful(std::string_view body,
                                                          const ConversationLookup* lookup) const {
    json::Document doc;
    if (auto e = json::parse_request_object(body, doc)) {
        return std::move(*e);
    }
    if (auto e = check_refused(doc)) {
        return std::move(*e);
    }
    std::optional<Error> err;
    const std::optional<std::string> previous =
        json::get_string(doc, "previous_response_id", "previous_response_id", err);
    const std::optional<bool> store = json::get_bool(doc, "store", "store", err);
    const std::optional<bool> stream = json::get_bool(doc, "stream", "stream", err);
    if (err) {
        return std::move(*err);
    }
    const Value* model = json::find(doc, "model");
    if (model == nullptr || !model->IsString()) {
        return bad_request("'model' is required: the name of the model to answer", "model");
    }
    const Value* input = json::find(doc, "input");
    if (input == nullptr || !(input->IsString() || input->IsArray())) {
        return bad_request("'input' is required: a string or a list of input items", "input");
    }

    ChatWriter chat(lookup);
    json::Writer& w = chat.w();
    w.StartObject();
    json::key(w, "model");
    json::string(w, json::view(*model));
    json::key(w, "messages");
    w.StartArray();
    if (const Value* instructions = json::find(doc, "instructions");
        instructions != nullptr && !instructions->IsNull()) {
        if (!instructions->IsString()) {
            return bad_request("'instructions' must be a string", "instructions");
        }
        w.StartObject();
        json::key(w, "role");
        json::string(w, "system");
        json::key(w, "content");
        json::string(w, json::view(*instructions));
        w.EndObject();
    }
    if (previous && !previous->empty()) {
        std::optional<std::vector<std::string>> earlier =
            lookup != nullptr ? lookup->conversation(*previous) : std::nullopt;
        if (!earlier) {
            Error e = bad_request(
                "Previous response with id '" + *previous + "' not found." +
                    (lookup == nullptr
                         ? " This infergate keeps no responses (responses.store.max_entries is "
                           "0): send the whole conversation as input."
                         : " It was never stored (store: false), was deleted, or has expired "
                           "(responses.store limits); send the whole conversation as input."),
                "previous_response_id");
            e.code = "previous_response_not_found";
            return e;
        }
        for (size_t i = 0; i < earlier->size(); ++i) {
            json::Document item;
            if (json::parse((*earlier)[i], item)) {
                return bad_request("a stored item of '" + *previous + "' is unreadable",
                                   "previous_response_id");
            }
            if (auto e = chat.item(item, "previous_response_id")) {
                return std::move(*e);
            }
        }
    }
    chat.recording = true;
    if (input->IsString()) {
        if (auto e = chat.item(*input, "input")) {
            return std::move(*e);
        }
        // As OpenAI lists it: a user message of one input_text part.
        std::string item;
        json::StringOut os{&item};
        json::Writer iw(os);
        iw.StartObject();
        json::key(iw, "type");
        json::string(iw, "message");
        json::key(iw, "role");
        json::string(iw, "user");
        json::key(iw, "content");
        iw.StartArray();
        iw.StartObject();
        json::key(iw, "type");
        json::string(iw, "input_text");
        json::key(iw, "text");
        json::string(iw, json::view(*input));
        iw.EndObject();
        iw.EndArray();
        iw.EndObject();
        chat.input_items().push_back(std::move(item));
    } else {
        for (rapidjson::SizeType i = 0; i < input->Size(); ++i) {
            if (auto e = chat.recorded_item((*input)[i], "input[" + std::to_string(i) + "]")) {
                return std::move(*e);
            }
        }
    }
    chat.flush();
    w.EndArray();

    if (const Value* v = json::find(doc, "max_output_tokens"); v != nullptr && !v->IsNull()) {
        if (!v->IsInt64() || v->GetInt64() < 1) {
            return bad_request("'max_output_tokens' must be an integer of at least 1",
                               "max_output_tokens");
        }
        json::key(w, "max_completion_tokens");
        w.Int64(v->GetInt64());
    }
    for (const char* member : {"temperature", "top_p", "parallel_tool_calls", "user"}) {
        if (const Value* v = json::find(doc, member); v != nullptr && !v->IsNull()) {
            json::key(w, member);
            v->Accept(w);
        }
    }
    if (const Value* tools = json::find(doc, "tools"); tools != nullptr && !tools->IsNull()) {
        if (auto e = write_tools(*tools, w)) {
            return std::move(*e);
        }
    }
    if (const Value* choice = json::find(doc, "tool_choice");
        choice != nullptr && !choice->IsNull()) {
        if (auto e = write_tool_choice(*choice, w)) {
            return std::move(*e);
        }
    }
    if (const Value* text = json::find(doc, "text"); text != nullptr && !text->IsNull()) {
        if (auto e = write_text(*text, w)) {
            return std::move(*e);
        }
    }
    if (const Value* reasoning = json::find(doc, "reasoning");
        reasoning != nullptr && !reasoning->IsNull()) {
        if (!reasoning->IsObject()) {
            return bad_request("'reasoning' must be an object {\"effort\", \"summary\"}",
                               "reasoning");
        }
        if (const Value* effort = json::find(*reasoning, "effort");
            effort != nullptr && !effort->IsNull()) {
            if (!effort->IsString()) {
                return bad_request("'reasoning.effort' must be a string", "reasoning.effort");
            }
            json::key(w, "reasoning_effort");
            json::string(w, json::view(*effort));
        }
    }
    if (stream.value_or(false)) {
        json::key(w, "stream");
        w.Bool(true);
        json::key(w, "stream_options");
        w.StartObject();
        json::key(w, "include_usage");
        w.Bool(true);
        w.EndObject();
    }
    w.EndObject();

    auto decoded = openai::decode_request(chat.body(), openai::Api::chat);
    if (!decoded) {
        if (decoded.error().param == "messages") {
            // No message at all: the client sent no `messages`, it sent an empty input.
            return bad_request(
                "'input' is empty: send at least one input item (or instructions, or a "
                "previous_response_id)",
                "input");
        }
        return decoded;
    }
    GenerationRequest& req = decoded.value();
    req.responses.previous_response_id = previous.value_or(std::string());
    req.responses.store = store.value_or(true);
    req.responses.input_items = std::move(chat.input_items());
    write_echo(doc, req.responses.echo);
    return decoded;
}

}  // namespace infergate::translators::responses
