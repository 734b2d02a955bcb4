// Requests: an Anthropic client's POST /v1/messages body to the canonical request (client side),
// and a canonical chat request to an Anthropic backend's body (upstream side).

#include <algorithm>
#include <utility>

#include "translators/anthropic/codec_impl.hpp"
#include "translators/canonical/logprobs.hpp"

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

bool is_known_key(std::string_view key) {
    return std::find(std::begin(kKnownKeys), std::end(kKnownKeys), key) != std::end(kKnownKeys);
}

// Reads `content` (a string, or content blocks) into `text`. Non-text blocks (image, document,
// tool_use, tool_result, thinking, ...) set `non_text`; their data is not representable.
std::optional<canonical::Error> read_content(const json::Value& content, const std::string& path,
                                             std::string& text, bool& non_text) {
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
        if (auto e = read_content(*system, "system", m.content, req.non_text_content)) {
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
        ChatMessage m;
        const json::Value* role = json::find(msg, "role");
        if (role == nullptr || !role->IsString() ||
            (json::view(*role) != "user" && json::view(*role) != "assistant")) {
            return bad_request("'" + at +
                                   ".role' must be \"user\" or \"assistant\" (the system "
                                   "prompt goes in the top-level 'system')",
                               at + ".role");
        }
        m.role.assign(json::view(*role));
        const json::Value* content = json::find(msg, "content");
        if (content == nullptr) {
            return bad_request("'" + at + ".content' is required", at + ".content");
        }
        if (auto e = read_content(*content, at + ".content", m.content, req.non_text_content)) {
            return std::move(*e);
        }
        req.messages.push_back(std::move(m));
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
    if (req.non_text_content && req.dialect != Dialect::anthropic) {
        return bad_request(
            "messages with non-text content parts (images, audio, files) cannot be translated "
            "to the Anthropic Messages API; send text-only content",
            "messages");
    }
    if (req.non_text_content) {
        // Even from an Anthropic client: the canonical model kept only the text blocks.
        return bad_request(
            "non-text content blocks (images, documents, tool use) cannot be forwarded through "
            "the gateway yet; send text-only content",
            "messages");
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
    if (req.dialect != Dialect::anthropic) {
        if (auto err = canonical::refuse_foreign_extras(req, "the Anthropic Messages API")) {
            return std::move(*err);
        }
    }

    for (size_t i = 0; i < req.messages.size(); ++i) {
        const ChatMessage& m = req.messages[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.tool_calls.empty()) {
            return bad_request("'" + at +
                                   ".tool_calls': an assistant turn's tool calls are not "
                                   "translated to the Anthropic Messages API yet (its tool_use "
                                   "blocks); send the conversation to a backend of the client's "
                                   "own family",
                               at + ".tool_calls");
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
    // blank line), which is what Anthropic itself does with consecutive user turns. System and
    // developer messages, wherever they are, go to the top-level `system`.
    std::string system;
    std::vector<ChatMessage> turns;
    for (const ChatMessage& m : req.messages) {
        if (m.role == "system" || m.role == "developer") {
            if (!system.empty()) {
                system.append("\n\n");
            }
            system.append(m.content);
            continue;
        }
        if (m.role != "user" && m.role != "assistant") {
            return bad_request("a '" + m.role +
                                   "' message cannot be translated to the Anthropic Messages API "
                                   "(only user, assistant and system); send text turns",
                               "messages");
        }
        if (!turns.empty() && turns.back().role == m.role) {
            turns.back().content.append("\n\n").append(m.content);
        } else {
            turns.push_back(m);
        }
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
    wire::key(w, "max_tokens");
    w.Int64(s.max_tokens.value_or(
        canonical::default_max_tokens(req.dialect).value_or(kFallbackMaxTokens)));
    if (!system.empty()) {
        wire::key(w, "system");
        wire::string(w, system);
    }
    wire::key(w, "messages");
    w.StartArray();
    for (const ChatMessage& m : turns) {
        w.StartObject();
        wire::key(w, "role");
        wire::string(w, m.role);
        wire::key(w, "content");
        wire::string(w, m.content);
        w.EndObject();
    }
    w.EndArray();
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
