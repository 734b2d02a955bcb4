// Requests: an Anthropic client's POST /v1/messages body to the canonical request (client side),
// and a canonical chat request to an Anthropic backend's body (upstream side).

#include <algorithm>
#include <utility>

#include "translators/anthropic/codec_impl.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"

namespace infergate::translators::anthropic {

using canonical::bad_request;
using canonical::ChatMessage;
using canonical::RequestKind;

namespace {

// Anthropic requires max_tokens and has no default (api-dialects §8.2). When the client's own
// dialect has none either (OpenAI chat, Ollama, TGI v3: "until the end of the context"), the
// backend must still get a number; 4096 is a budget every current Claude model accepts and that
// rarely truncates an answer a client without a limit expects to be whole.
constexpr int64_t kFallbackMaxTokens = 4096;

// Top-level keys decode_request reads; every other key (metadata, tools, tool_choice, thinking,
// service_tier, ...) is kept raw in `extras` and only goes back to an Anthropic backend.
constexpr std::string_view kKnownKeys[] = {"model",  "max_tokens",     "messages",
                                           "system", "stop_sequences", "temperature",
                                           "top_p",  "top_k",          "stream"};

// Extras the Messages API reads without changing the text (who asks, which capacity serves it),
// or at the value that means "none": another family goes without them. The API refuses keys it
// does not know, so every other extra means something.
constexpr canonical::InertRule kInert[] = {
    {"metadata", "*"},
    {"service_tier", "*"},
    {"tools", "[]"},
    {"tool_choice", "{\"type\":\"auto\"}|{\"type\":\"none\"}"},
    {"thinking", "{\"type\":\"disabled\"}"}};

// An OpenAI client's reasoning_effort as Anthropic's thinking switch (the budgets LiteLLM maps
// the efforts to; Anthropic's smallest budget is 1024): none -> disabled, minimal and low ->
// 1024, medium -> 2048, high -> 4096, xhigh and max -> 8192. The budget counts in max_tokens,
// which must exceed it. `thinking` is empty when the client sent none.
Result<std::string> thinking_from_effort(const canonical::GenerationRequest& req,
                                         int64_t max_tokens) {
    const canonical::Extra* e = req.dialect == Dialect::openai_chat
                                    ? canonical::find_extra(req, "reasoning_effort")
                                    : nullptr;
    if (e == nullptr || e->json == "null") {
        return std::string();
    }
    json::Document doc;
    const std::string_view effort =
        !json::parse(e->json, doc) && doc.IsString() ? json::view(doc) : std::string_view();
    int64_t budget = 0;
    if (effort == "none") {
        return std::string(R"({"type":"disabled"})");
    } else if (effort == "minimal" || effort == "low") {
        budget = 1024;
    } else if (effort == "medium") {
        budget = 2048;
    } else if (effort == "high") {
        budget = 4096;
    } else if (effort == "xhigh" || effort == "max") {
        budget = 8192;
    } else {
        return bad_request(
            "'reasoning_effort' must be none, minimal, low, medium, high, xhigh "
            "or max, got " +
                e->json,
            "reasoning_effort");
    }
    if (max_tokens <= budget) {
        return bad_request("'reasoning_effort' " + e->json + " is a thinking budget of " +
                               std::to_string(budget) +
                               " tokens on an Anthropic backend, which counts it in the "
                               "answer's max_tokens (" +
                               std::to_string(max_tokens) +
                               "): raise the output budget (max_tokens, or the Responses "
                               "API's max_output_tokens) above " +
                               std::to_string(budget) + " or lower the effort",
                           "reasoning_effort");
    }
    return R"({"type":"enabled","budget_tokens":)" + std::to_string(budget) + "}";
}

bool is_known_key(std::string_view key) {
    return std::find(std::begin(kKnownKeys), std::end(kKnownKeys), key) != std::end(kKnownKeys);
}

// Reads `content` (a string, or content blocks) into `text`. Non-text blocks (image, document,
// tool_use, tool_result, thinking, ...) set `non_text`; their data is not representable.
std::optional<canonical::Error> read_content(const json::Value& content, const std::string& path,
                                             std::string& text, bool& non_text,
                                             bool* untranslated = nullptr) {
    if (content.IsString()) {
        text.assign(json::view(content));
        return std::nullopt;
    }
    if (!content.IsArray()) {
        return bad_request("'" + path + "' must be a string or a list of content blocks, got " +
                               std::string(json::type_name(content)),
                           path);
    }
    for (rapidjson::SizeType i = 0; i < content.Size(); ++i) {
        const json::Value& block = content[i];
        const std::string at = path + "[" + std::to_string(i) + "]";
        const json::Value* type = json::find(block, "type");
        if (type == nullptr || !type->IsString()) {
            return bad_request("'" + at +
                                   ".type' must be a string: content blocks are objects like "
                                   "{\"type\": \"text\", \"text\": \"...\"}",
                               at + ".type");
        }
        if (json::view(*type) != "text") {
            non_text = true;
            if (untranslated != nullptr) {
                *untranslated = true;
            }
            continue;
        }
        const json::Value* t = json::find(block, "text");
        if (t == nullptr || !t->IsString()) {
            return bad_request("'" + at + ".text' must be a string", at + ".text");
        }
        text.append(json::view(*t));
    }
    return std::nullopt;
}

// An image block ({"type": "image", "source": {"type": "base64", "media_type", "data"} or
// {"type": "url", "url"}}).
std::optional<canonical::Error> read_image(const json::Value& block, const std::string& path,
                                           ChatMessage& m) {
    const json::Value* source = json::find(block, "source");
    const json::Value* type =
        source != nullptr && source->IsObject() ? json::find(*source, "type") : nullptr;
    canonical::Image image;
    image.at = m.content.size();
    if (type != nullptr && type->IsString() && json::view(*type) == "base64") {
        const json::Value* media = json::find(*source, "media_type");
        const json::Value* data = json::find(*source, "data");
        if (media == nullptr || !media->IsString() || data == nullptr || !data->IsString()) {
            return bad_request(
                "'" + path + ".source' must have a 'media_type' and base64 'data' strings",
                path + ".source");
        }
        image.media_type.assign(json::view(*media));
        image.data.assign(json::view(*data));
    } else if (type != nullptr && type->IsString() && json::view(*type) == "url") {
        const json::Value* url = json::find(*source, "url");
        if (url == nullptr || !url->IsString()) {
            return bad_request("'" + path + ".source.url' must be a string", path + ".source.url");
        }
        image.url.assign(json::view(*url));
    } else {
        return bad_request("'" + path +
                               ".source' must be {\"type\": \"base64\", \"media_type\", "
                               "\"data\"} or {\"type\": \"url\", \"url\"} (a file id "
                               "lives at Anthropic only)",
                           path + ".source");
    }
    m.images.push_back(std::move(image));
    return std::nullopt;
}

// One message's content blocks, as canonical messages: an assistant turn's text, thinking and
// tool_use blocks make one message (its calls' arguments the input object, compact); a user
// turn's tool_result blocks make one `tool` message each, before a user message with the rest.
// Other blocks (images, documents, redacted thinking, ...) set `non_text`.
std::optional<canonical::Error> read_turn(const json::Value& content, const std::string& path,
                                          const std::string& role, std::vector<ChatMessage>& out,
                                          bool& non_text, bool& untranslated) {
    ChatMessage m;
    m.role = role;
    if (!content.IsArray()) {
        if (auto e = read_content(content, path, m.content, non_text, &untranslated)) {
            return e;
        }
        out.push_back(std::move(m));
        return std::nullopt;
    }
    size_t results = 0;  // tool_result blocks, each a message of its own
    for (rapidjson::SizeType i = 0; i < content.Size(); ++i) {
        const json::Value& block = content[i];
        const std::string at = path + "[" + std::to_string(i) + "]";
        const json::Value* type = block.IsObject() ? json::find(block, "type") : nullptr;
        if (type == nullptr || !type->IsString()) {
            return bad_request("'" + at +
                                   ".type' must be a string: content blocks are objects like "
                                   "{\"type\": \"text\", \"text\": \"...\"}",
                               at + ".type");
        }
        const std::string_view kind = json::view(*type);
        if (kind == "text") {
            const json::Value* t = json::find(block, "text");
            if (t == nullptr || !t->IsString()) {
                return bad_request("'" + at + ".text' must be a string", at + ".text");
            }
            m.content.append(json::view(*t));
        } else if (kind == "tool_use" && role == "assistant") {
            const json::Value* id = json::find(block, "id");
            const json::Value* name = json::find(block, "name");
            const json::Value* input = json::find(block, "input");
            if (id == nullptr || !id->IsString() || name == nullptr || !name->IsString() ||
                input == nullptr || !input->IsObject()) {
                return bad_request("'" + at +
                                       "' must be {\"type\": \"tool_use\", \"id\", \"name\", "
                                       "\"input\": {...}}",
                                   at);
            }
            canonical::ToolCall& call = m.tool_calls.emplace_back();
            call.id.assign(json::view(*id));
            call.name.assign(json::view(*name));
            call.arguments = json::to_string(*input);
        } else if (kind == "thinking" && role == "assistant") {
            // The text goes on as the turn's reasoning; the signature, Anthropic's check that
            // it wrote that text, means nothing to another backend.
            const json::Value* t = json::find(block, "thinking");
            if (t == nullptr || !t->IsString()) {
                return bad_request("'" + at + ".thinking' must be a string", at + ".thinking");
            }
            m.reasoning.append(json::view(*t));
        } else if (kind == "image") {
            if (auto e = read_image(block, at, m)) {
                return e;
            }
            non_text = true;
        } else if (kind == "tool_result" && role == "user") {
            const json::Value* id = json::find(block, "tool_use_id");
            if (id == nullptr || !id->IsString()) {
                return bad_request("'" + at + ".tool_use_id' must name the tool_use it answers",
                                   at + ".tool_use_id");
            }
            ChatMessage result;
            result.role = "tool";
            result.tool_call_id.assign(json::view(*id));
            if (const json::Value* c = json::find(block, "content"); c != nullptr && !c->IsNull()) {
                if (auto e = read_content(*c, at + ".content", result.content, non_text,
                                          &untranslated)) {
                    return e;
                }
            }
            if (const json::Value* err = json::find(block, "is_error");
                err != nullptr && err->IsBool()) {
                result.tool_error = err->GetBool();
            }
            out.push_back(std::move(result));
            ++results;
        } else {
            non_text = true;
            untranslated = true;
        }
    }
    if (!m.content.empty() || !m.tool_calls.empty() || !m.reasoning.empty() || results == 0) {
        out.push_back(std::move(m));
    }
    return std::nullopt;
}

constexpr std::string_view kBackend = "the Anthropic Messages API";

// An OpenAI or Ollama client's function tools as Anthropic's ({name, description,
// input_schema}), and its tool_choice ("auto" → auto, "required" → any, "none" → none, a named
// function → tool; parallel_tool_calls false → disable_parallel_tool_use).
std::optional<canonical::Error> anthropic_tools(const GenerationRequest& req, std::string& tools,
                                                std::string& choice) {
    auto got = canonical::function_tools(req, kBackend);
    if (!got) {
        return got.error();
    }
    if (got->tools.empty()) {
        return std::nullopt;
    }
    json::Document doc;
    if (json::parse(got->tools, doc) || !doc.IsArray()) {
        return bad_request("'tools' must be a list", "tools");
    }
    {
        json::StringOut os{&tools};
        json::Writer w(os);
        w.StartArray();
        for (const json::Value& t : doc.GetArray()) {
            const json::Value& f = *json::find(t, "function");  // checked: function tools
            const json::Value* name = json::find(f, "name");
            if (name == nullptr || !name->IsString()) {
                return bad_request("every tool's 'function.name' must be a string", "tools");
            }
            w.StartObject();
            wire::key(w, "name");
            wire::string(w, json::view(*name));
            if (const json::Value* d = json::find(f, "description");
                d != nullptr && d->IsString()) {
                wire::key(w, "description");
                wire::string(w, json::view(*d));
            }
            wire::key(w, "input_schema");
            const json::Value* p = json::find(f, "parameters");
            if (p != nullptr && p->IsObject()) {
                json::write_raw(w, json::to_string(*p));
            } else {
                json::write_raw(w, R"({"type":"object","properties":{}})");
            }
            w.EndObject();
        }
        w.EndArray();
    }
    const canonical::Extra* parallel = canonical::find_extra(req, "parallel_tool_calls");
    const bool one_at_a_time = parallel != nullptr && parallel->json == "false";
    std::string type = "auto";
    std::string name;
    if (!got->tool_choice.empty()) {
        json::Document c;
        if (json::parse(got->tool_choice, c)) {
            return bad_request("'tool_choice' is not valid JSON", "tool_choice");
        }
        if (c.IsString() && (json::view(c) == "auto" || json::view(c) == "none")) {
            type = json::view(c);
        } else if (c.IsString() && json::view(c) == "required") {
            type = "any";
        } else if (const json::Value* f = c.IsObject() ? json::find(c, "function") : nullptr;
                   f != nullptr && json::find(*f, "name") != nullptr &&
                   json::find(*f, "name")->IsString()) {
            type = "tool";
            name = json::view(*json::find(*f, "name"));
        } else {
            return bad_request("'tool_choice' " + got->tool_choice +
                                   " has no equivalent in the Anthropic Messages API; send "
                                   "\"auto\", \"none\", \"required\" or a named function",
                               "tool_choice");
        }
    }
    if (got->tool_choice.empty() && !one_at_a_time) {
        return std::nullopt;
    }
    json::StringOut os{&choice};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "type");
    wire::string(w, type);
    if (!name.empty()) {
        wire::key(w, "name");
        wire::string(w, name);
    }
    if (one_at_a_time && type != "none") {
        wire::key(w, "disable_parallel_tool_use");
        w.Bool(true);
    }
    w.EndObject();
    return std::nullopt;
}

// The id of call `j` of message `i`: its own, else one made up from its place (Ollama clients
// may send calls without ids).
std::string call_id(const GenerationRequest& req, size_t i, size_t j) {
    const std::string& id = req.messages[i].tool_calls[j].id;
    return id.empty() ? "toolu_" + std::to_string(i) + "_" + std::to_string(j) : id;
}

// The tool_use id a tool result answers: its tool_call_id, else the call of the same name in the
// last assistant turn before it that made one (Ollama's tool_name).
std::string result_id(const GenerationRequest& req, const ChatMessage& m) {
    if (!m.tool_call_id.empty()) {
        return m.tool_call_id;
    }
    const size_t at = static_cast<size_t>(&m - req.messages.data());
    for (size_t i = at; i-- > 0;) {
        const auto& calls = req.messages[i].tool_calls;
        for (size_t j = 0; j < calls.size(); ++j) {
            if (calls[j].name == m.name) {
                return call_id(req, i, j);
            }
        }
    }
    return {};
}

// One canonical message as content blocks: a text block (when it has text), an assistant's
// calls as tool_use blocks, a tool result as a tool_result block.
void write_blocks(json::Writer& w, const GenerationRequest& req, const ChatMessage& m) {
    if (m.role == "tool") {
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, "tool_result");
        wire::key(w, "tool_use_id");
        wire::string(w, result_id(req, m));
        wire::key(w, "content");
        wire::string(w, m.content);
        if (m.tool_error) {
            wire::key(w, "is_error");
            w.Bool(true);
        }
        w.EndObject();
        return;
    }
    // Text blocks, and each image where it came in the text.
    canonical::for_each_part(
        m,
        [&](std::string_view text) {
            w.StartObject();
            wire::key(w, "type");
            wire::string(w, "text");
            wire::key(w, "text");
            wire::string(w, text);
            w.EndObject();
        },
        [&](const canonical::Image& image) {
            w.StartObject();
            wire::key(w, "type");
            wire::string(w, "image");
            wire::key(w, "source");
            w.StartObject();
            if (!image.url.empty()) {
                wire::key(w, "type");
                wire::string(w, "url");
                wire::key(w, "url");
                wire::string(w, image.url);
            } else {
                wire::key(w, "type");
                wire::string(w, "base64");
                wire::key(w, "media_type");
                wire::string(w, image.media_type);
                wire::key(w, "data");
                wire::string(w, image.data);
            }
            w.EndObject();
            w.EndObject();
        });
    const size_t i = static_cast<size_t>(&m - req.messages.data());
    for (size_t j = 0; j < m.tool_calls.size(); ++j) {
        const canonical::ToolCall& c = m.tool_calls[j];
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, "tool_use");
        wire::key(w, "id");
        wire::string(w, call_id(req, i, j));
        wire::key(w, "name");
        wire::string(w, c.name);
        wire::key(w, "input");
        json::write_raw(w, c.arguments.empty() ? std::string_view("{}") : c.arguments);
        w.EndObject();
    }
}

}  // namespace

Result<GenerationRequest> AnthropicCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse_request_object(body, doc)) {
        return std::move(*err);
    }
    GenerationRequest req;
    req.dialect = Dialect::anthropic;
    req.kind = RequestKind::chat;
    std::optional<Error> err;

    auto model = json::get_string(doc, "model", "model", err);
    if (err) {
        return std::move(*err);
    }
    if (!model) {
        return bad_request("'model' is required", "model");
    }
    req.model = std::move(*model);
    req.sampling.max_tokens = json::get_int(doc, "max_tokens", "max_tokens", err, 1);
    if (err) {
        return std::move(*err);
    }
    if (!req.sampling.max_tokens) {
        return bad_request("'max_tokens' is required (the Messages API has no default)",
                           "max_tokens");
    }
    req.sampling.temperature = json::get_number(doc, "temperature", "temperature", err, 0, 1);
    if (!err) {
        req.sampling.top_p = json::get_number(doc, "top_p", "top_p", err, 0, 1);
    }
    if (!err) {
        req.sampling.top_k = json::get_int(doc, "top_k", "top_k", err, 0);
    }
    if (!err) {
        req.stream = json::get_bool(doc, "stream", "stream", err).value_or(false);
    }
    if (err) {
        return std::move(*err);
    }

    if (const json::Value* stops = json::find(doc, "stop_sequences");
        stops != nullptr && !stops->IsNull()) {
        if (!stops->IsArray()) {
            return bad_request("'stop_sequences' must be a list of strings", "stop_sequences");
        }
        for (rapidjson::SizeType i = 0; i < stops->Size(); ++i) {
            if (!(*stops)[i].IsString()) {
                const std::string at = "stop_sequences[" + std::to_string(i) + "]";
                return bad_request("'" + at + "' must be a string", at);
            }
            req.sampling.stop.emplace_back(json::view((*stops)[i]));
        }
    }

    // `system` is not a role in this API; canonically it is the first message.
    if (const json::Value* system = json::find(doc, "system");
        system != nullptr && !system->IsNull()) {
        ChatMessage m;
        m.role = "system";
        if (auto e = read_content(*system, "system", m.content, req.non_text_content,
                                  &req.untranslated_parts)) {
            return std::move(*e);
        }
        req.messages.push_back(std::move(m));
    }

    const json::Value* messages = json::find(doc, "messages");
    if (messages == nullptr || messages->IsNull()) {
        return bad_request("'messages' is required", "messages");
    }
    if (!messages->IsArray() || messages->Empty()) {
        return bad_request("'messages' must be a non-empty list of {role, content} objects",
                           "messages");
    }
    for (rapidjson::SizeType i = 0; i < messages->Size(); ++i) {
        const json::Value& msg = (*messages)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!msg.IsObject()) {
            return bad_request("'" + at + "' must be an object with 'role' and 'content'", at);
        }
        const json::Value* role = json::find(msg, "role");
        if (role == nullptr || !role->IsString() ||
            (json::view(*role) != "user" && json::view(*role) != "assistant")) {
            return bad_request("'" + at +
                                   ".role' must be \"user\" or \"assistant\" (the system "
                                   "prompt goes in the top-level 'system')",
                               at + ".role");
        }
        const json::Value* content = json::find(msg, "content");
        if (content == nullptr) {
            return bad_request("'" + at + ".content' is required", at + ".content");
        }
        if (auto e = read_turn(*content, at + ".content", std::string(json::view(*role)),
                               req.messages, req.non_text_content, req.untranslated_parts)) {
            return std::move(*e);
        }
    }

    for (const auto& member : doc.GetObject()) {
        const std::string_view key = json::view(member.name);
        if (!is_known_key(key)) {
            std::string value = json::to_string(member.value);
            const bool inert = canonical::is_inert(key, value, kInert);
            req.extras.push_back({std::string(key), std::move(value), inert});
        }
    }
    return req;
}

Result<std::string> AnthropicCodec::encode_request(const GenerationRequest& req,
                                                   const UpstreamOptions& options) const {
    if (req.kind != RequestKind::chat) {
        return bad_request(
            "a raw prompt cannot be sent faithfully to the Anthropic Messages API: it has no "
            "raw-completion mode and would wrap the prompt in a user turn; send a chat request "
            "(messages) or route raw prompts to a completion backend",
            "prompt");
    }
    const canonical::SamplingParams& s = req.sampling;
    if (s.n > 1) {
        return canonical::unsupported_setting(req.dialect, "n", "the Anthropic Messages API",
                                              "it returns one answer per request; send n = 1");
    }
    if (req.untranslated_parts && req.dialect != Dialect::anthropic) {
        return bad_request(
            "messages with non-text content parts other than images (audio, files) cannot be "
            "translated to the Anthropic Messages API; send text and images",
            "messages");
    }
    if (req.non_text_content && req.dialect == Dialect::anthropic) {
        // (A same-dialect pair is passed through; on a translated route the canonical model
        // does not keep every block.)
        return bad_request(
            "non-text content blocks (images, documents) cannot be re-encoded for an Anthropic "
            "backend on a translated route; send them to POST /v1/messages, which passes them "
            "as they are",
            "messages");
    }
    for (size_t i = 0; i < req.messages.size(); ++i) {
        for (size_t j = 0; j < req.messages[i].images.size(); ++j) {
            const canonical::Image& image = req.messages[i].images[j];
            if (image.url.empty() && image.media_type != "image/png" &&
                image.media_type != "image/jpeg" && image.media_type != "image/gif" &&
                image.media_type != "image/webp") {
                const std::string param =
                    "messages[" + std::to_string(i) + "].images[" + std::to_string(j) + "]";
                return bad_request("'" + param + "' (" +
                                       (image.media_type.empty() ? std::string("of unknown type")
                                                                 : image.media_type) +
                                       ") is not a PNG, JPEG, GIF or WebP image, the kinds the "
                                       "Anthropic Messages API takes",
                                   param);
            }
        }
    }
    if (s.temperature && (*s.temperature < 0 || *s.temperature > 1)) {
        const std::string param = canonical::client_param(req.dialect, "temperature");
        return bad_request("'" + param +
                               "' must be between 0 and 1 for an Anthropic backend, got " +
                               std::to_string(*s.temperature),
                           param);
    }
    // Settings Anthropic has no equivalent for change what is generated; refuse rather than drop.
    struct Unsupported {
        bool set;
        std::string_view param;
    };
    const Unsupported unsupported[] = {
        {s.frequency_penalty.value_or(0) != 0, "frequency_penalty"},
        {s.presence_penalty.value_or(0) != 0, "presence_penalty"},
        {s.repetition_penalty.value_or(1) != 1, "repetition_penalty"},
        {s.min_p.value_or(0) != 0, "min_p"},
        {s.min_tokens.value_or(0) != 0, "min_tokens"},
        {s.ignore_eos.value_or(false), "ignore_eos"},
        {s.keep_stop_str.value_or(false), "include_stop_str_in_output"},
        {!s.stop_token_ids.empty(), "stop_token_ids"},
        {!s.logit_bias.empty(), "logit_bias"},
        {s.typical_p.value_or(1) != 1, "typical_p"},
        {s.repeat_last_n && canonical::penalties_active(s), "repeat_last_n"},
        {!s.skip_special_tokens.value_or(true), "skip_special_tokens"},
    };
    for (const Unsupported& u : unsupported) {
        if (u.set) {
            return canonical::unsupported_setting(req.dialect, u.param,
                                                  "the Anthropic Messages API", "remove it");
        }
    }
    if (auto err = canonical::refuse_logprobs(req, "the Anthropic Messages API", {})) {
        return std::move(*err);
    }
    std::string tools;
    std::string tool_choice;
    canonical::OutputFormat format;
    if (req.dialect != Dialect::anthropic) {
        const bool function_client =
            req.dialect == Dialect::openai_chat || req.dialect == Dialect::ollama_chat;
        const auto refused =
            function_client ? canonical::refuse_foreign_extras(
                                  req, kBackend, {"tools", "tool_choice", "reasoning_effort"}, true)
                            : canonical::refuse_foreign_extras(req, kBackend, {}, true);
        if (refused) {
            return std::move(*refused);
        }
        auto fmt = canonical::output_format_for(
            req, kBackend,
            {canonical::OutputFormat::Kind::json_object, canonical::OutputFormat::Kind::regex},
            "Anthropic's output_config.format takes only a JSON schema; send a schema");
        if (!fmt) {
            return fmt.error();
        }
        format = std::move(fmt.value());
        if (function_client) {
            if (auto err = anthropic_tools(req, tools, tool_choice)) {
                return std::move(*err);
            }
        }
    }

    for (size_t i = 0; i < req.messages.size(); ++i) {
        const ChatMessage& m = req.messages[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (req.dialect == Dialect::anthropic && (!m.tool_calls.empty() || m.role == "tool")) {
            // (A same-dialect pair is passed through; this is a translated one.)
            return bad_request("'" + at +
                                   "': tool use in the history cannot be re-encoded for an "
                                   "Anthropic backend on a translated route; send it to "
                                   "POST /v1/messages, which passes it as it is",
                               at);
        }
        for (size_t j = 0; j < m.tool_calls.size(); ++j) {
            json::Document args;
            const std::string& a = m.tool_calls[j].arguments;
            if (!a.empty() && (json::parse(a, args) || !args.IsObject())) {
                const std::string param =
                    at + ".tool_calls[" + std::to_string(j) + "].function.arguments";
                return bad_request("'" + param +
                                       "' must hold a JSON object to be sent to the Anthropic "
                                       "Messages API (its tool_use input is an object); got '" +
                                       a + "'",
                                   param);
            }
        }
        if (!m.reasoning.empty()) {
            const std::string param =
                at + (req.dialect == Dialect::ollama_chat ? ".thinking" : ".reasoning_content");
            return bad_request("'" + param +
                                   "': an assistant turn's reasoning cannot be sent to the "
                                   "Anthropic Messages API (its thinking blocks must carry "
                                   "Anthropic's own signature); send the history without it",
                               param);
        }
    }
    // Strict user/assistant alternation: consecutive same-role messages are merged (joined by a
    // blank line), which is what Anthropic itself does with consecutive user turns; a tool
    // result is a tool_result block of a user turn. System and developer messages, wherever they
    // are, go to the top-level `system`.
    std::string system;
    struct Turn {
        std::string_view role;
        std::vector<const ChatMessage*> parts;
        bool blocks = false;  // tool use or results: content blocks instead of a string
    };
    std::vector<Turn> turns;
    for (const ChatMessage& m : req.messages) {
        if (m.role == "system" || m.role == "developer") {
            if (!system.empty()) {
                system.append("\n\n");
            }
            system.append(m.content);
            continue;
        }
        if (m.role != "user" && m.role != "assistant" && m.role != "tool") {
            return bad_request("a '" + m.role +
                                   "' message cannot be translated to the Anthropic Messages API "
                                   "(only user, assistant, tool and system)",
                               "messages");
        }
        const std::string_view role = m.role == "assistant" ? "assistant" : "user";
        if (turns.empty() || turns.back().role != role) {
            turns.push_back({role, {}, false});
        }
        turns.back().parts.push_back(&m);
        turns.back().blocks =
            turns.back().blocks || m.role == "tool" || !m.tool_calls.empty() || !m.images.empty();
    }
    if (turns.empty()) {
        return bad_request("the Anthropic Messages API needs at least one user message",
                           "messages");
    }

    std::string body;
    json::StringOut os{&body};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "model");
    wire::string(w, options.model.empty() ? req.model : options.model);
    const int64_t max_tokens = s.max_tokens.value_or(
        canonical::default_max_tokens(req.dialect).value_or(kFallbackMaxTokens));
    auto thinking = thinking_from_effort(req, max_tokens);
    if (!thinking) {
        return thinking.error();
    }
    wire::key(w, "max_tokens");
    w.Int64(max_tokens);
    if (!thinking.value().empty()) {
        wire::key(w, "thinking");
        json::write_raw(w, thinking.value());
    }
    if (!system.empty()) {
        wire::key(w, "system");
        wire::string(w, system);
    }
    wire::key(w, "messages");
    w.StartArray();
    for (const Turn& t : turns) {
        w.StartObject();
        wire::key(w, "role");
        wire::string(w, t.role);
        wire::key(w, "content");
        if (!t.blocks) {
            std::string text;
            for (const ChatMessage* m : t.parts) {
                if (!text.empty() || m != t.parts.front()) {
                    text.append("\n\n");
                }
                text.append(m->content);
            }
            wire::string(w, text);
        } else {
            w.StartArray();
            for (const ChatMessage* m : t.parts) {
                write_blocks(w, req, *m);
            }
            w.EndArray();
        }
        w.EndObject();
    }
    w.EndArray();
    if (!tools.empty()) {
        wire::key(w, "tools");
        json::write_raw(w, tools);
        if (!tool_choice.empty()) {
            wire::key(w, "tool_choice");
            json::write_raw(w, tool_choice);
        }
    }
    if (format.kind == canonical::OutputFormat::Kind::json_schema) {
        wire::key(w, "output_config");
        w.StartObject();
        wire::key(w, "format");
        w.StartObject();
        wire::key(w, "type");
        wire::string(w, "json_schema");
        wire::key(w, "schema");
        json::write_raw(w, format.schema);
        w.EndObject();
        w.EndObject();
    }
    if (!s.stop.empty()) {
        wire::key(w, "stop_sequences");
        w.StartArray();
        for (const std::string& stop : s.stop) {
            wire::string(w, stop);
        }
        w.EndArray();
    }
    if (s.temperature) {
        wire::key(w, "temperature");
        w.Double(*s.temperature);
    }
    if (s.top_p) {
        wire::key(w, "top_p");
        w.Double(*s.top_p);
    }
    if (s.top_k && *s.top_k > 0) {  // OpenAI-family -1/0 mean "off"; Anthropic wants none
        wire::key(w, "top_k");
        w.Int64(*s.top_k);
    }
    // Unknown keys (metadata, tools, thinking, ...) only survive to the family they came from.
    if (req.dialect == Dialect::anthropic) {
        for (const canonical::Extra& extra : req.extras) {
            wire::key(w, extra.key);
            json::write_raw(w, extra.json);
        }
    }
    wire::key(w, "stream");
    w.Bool(options.stream);
    w.EndObject();
    return body;
}

}  // namespace infergate::translators::anthropic
