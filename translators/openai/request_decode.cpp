// Client side: an OpenAI client's request body to the canonical request (the prompt or the
// messages here, the settings in sampling_decode.cpp), with 400s that name the field and say
// what to send.

#include <algorithm>
#include <utility>

#include "translators/openai/request_codec.hpp"

namespace infergate::translators::openai {

using canonical::bad_request;
using canonical::ChatMessage;
using canonical::Prompt;
using canonical::RequestKind;

namespace {

// Keys this codec reads; every other top-level key is kept raw in `extras` so that a
// same-family backend still gets it (response_format, tools, logit_bias, user, ...).
// clang-format off
constexpr std::string_view kCommonKeys[] = {
    "model", "max_tokens", "temperature", "top_p", "n", "stop", "seed", "presence_penalty",
    "frequency_penalty", "stream", "stream_options", "logprobs", "top_k", "min_p",
    "repetition_penalty", "ignore_eos", "min_tokens", "stop_token_ids", "skip_special_tokens",
    "include_stop_str_in_output", "logit_bias"};
// Extras OpenAI-compatible servers read without changing the text they generate (who asks, for
// their logs and billing), or at the value that means "off": another family goes without them.
constexpr canonical::InertRule kInert[] = {
    {"user", "*"}, {"metadata", "*"}, {"store", "*"}, {"service_tier", "*"},
    {"safety_identifier", "*"}, {"prompt_cache_key", "*"}, {"parallel_tool_calls", "*"},
    {"best_of", "1"}, {"suffix", "\"\""}, {"echo", "false"}, {"tools", "[]"},
    {"functions", "[]"}, {"tool_choice", "\"none\"|\"auto\""},
    {"function_call", "\"none\"|\"auto\""}, {"response_format", "{\"type\":\"text\"}"},
    {"modalities", "[\"text\"]"}};
// clang-format on
constexpr std::string_view kCompletionsKeys[] = {"prompt", "echo"};
constexpr std::string_view kChatKeys[] = {"messages", "max_completion_tokens", "top_logprobs"};

bool is_known_key(std::string_view key, Api api) {
    const auto has = [key](const auto& keys) {
        return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
    };
    return has(kCommonKeys) || (api == Api::completions ? has(kCompletionsKeys) : has(kChatKeys));
}

canonical::Error prompt_type_error(std::string_view got) {
    return bad_request(
        "'prompt' must be a string, a list of strings, a list of token ids or a "
        "list of token-id lists, got " +
            std::string(got),
        "prompt");
}

canonical::Error prompt_mixed_error(size_t i, const json::Value& element,
                                    std::string_view expected) {
    return bad_request("'prompt' mixes element types: prompt[" + std::to_string(i) + "] is " +
                           std::string(json::type_name(element)) + " where " +
                           std::string(expected) +
                           " was expected; send a list of strings, a list of token ids or a "
                           "list of token-id lists",
                       "prompt");
}

std::optional<canonical::Error> read_token_ids(const json::Value& list, std::string_view path,
                                               std::vector<int64_t>& out) {
    out.reserve(list.Size());
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
        if (!is_token_id(list[i])) {
            return bad_request("'" + std::string(path) + "[" + std::to_string(i) +
                                   "]' must be a token id (an integer >= 0), got " +
                                   json::to_string(list[i]),
                               "prompt");
        }
        out.push_back(list[i].GetInt64());
    }
    return std::nullopt;
}

// prompt: string | [string] | [int] | [[int]] (api-dialects §2.3). A single [int] is ONE
// tokenized prompt, not a batch; the list forms are batches even with one element.
std::optional<canonical::Error> decode_prompt(const json::Value& v, GenerationRequest& req) {
    if (v.IsString()) {
        Prompt& p = req.prompts.emplace_back();
        p.text.assign(v.GetString(), v.GetStringLength());
        return std::nullopt;
    }
    if (!v.IsArray()) {
        return prompt_type_error(json::type_name(v));
    }
    if (v.Empty()) {
        return bad_request(
            "'prompt' must not be an empty list; send a string or at least one prompt", "prompt");
    }
    const json::Value& first = v[0];
    if (first.IsString()) {
        req.prompt_is_list = true;
        req.prompts.reserve(v.Size());
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
            if (!v[i].IsString()) {
                return prompt_mixed_error(i, v[i], "a string");
            }
            req.prompts.emplace_back().text.assign(v[i].GetString(), v[i].GetStringLength());
        }
        return std::nullopt;
    }
    if (first.IsNumber()) {
        Prompt& p = req.prompts.emplace_back();
        p.is_tokens = true;
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
            if (!v[i].IsNumber()) {
                return prompt_mixed_error(i, v[i], "a token id");
            }
        }
        return read_token_ids(v, "prompt", p.token_ids);
    }
    if (first.IsArray()) {
        req.prompt_is_list = true;
        req.prompts.reserve(v.Size());
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
            if (!v[i].IsArray()) {
                return prompt_mixed_error(i, v[i], "a list of token ids");
            }
            const std::string path = "prompt[" + std::to_string(i) + "]";
            if (v[i].Empty()) {
                return bad_request("'" + path +
                                       "' is an empty token list; send at least one "
                                       "token id per prompt",
                                   "prompt");
            }
            Prompt& p = req.prompts.emplace_back();
            p.is_tokens = true;
            if (auto err = read_token_ids(v[i], path, p.token_ids)) {
                return err;
            }
        }
        return std::nullopt;
    }
    return prompt_type_error("a list whose first element is " +
                             std::string(json::type_name(first)));
}

constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
// The message members the canonical model reads.
constexpr std::string_view kMessageKeys[] = {
    "role", "content", "name", "tool_call_id", "reasoning_content", "reasoning", "tool_calls"};
// An answer's members echoed back that say nothing: no refusal, no annotations, no audio.
constexpr canonical::InertRule kInertMessageKeys[] = {{"annotations", "[]"}};

// One message's content: a string, null, or an array of parts whose text parts are joined with
// "\n" (as vLLM joins them before applying the chat template). Non-text parts are only flagged:
// a same-dialect pass-through forwards them untouched; a translation refuses the request.
// An image_url part ({"type": "image_url", "image_url": {"url", "detail"}}): a data URL's
// base64 bytes and media type, or the URL. `detail` is a resolution hint vLLM and SGLang do not
// read either; it stays behind.
std::optional<canonical::Error> read_image(const json::Value& part, const std::string& path,
                                           ChatMessage& msg) {
    const json::Value* image = json::find(part, "image_url");
    const json::Value* url =
        image != nullptr && image->IsObject() ? json::find(*image, "url") : image;
    if (url == nullptr || !url->IsString()) {
        return bad_request("'" + path + ".image_url.url' must be a string (a URL or a data URL)",
                           path + ".image_url.url");
    }
    const std::string_view u = json::view(*url);
    canonical::Image& out = msg.images.emplace_back();
    out.at = msg.content.size();
    if (!u.starts_with("data:")) {
        out.url.assign(u);
        return std::nullopt;
    }
    const size_t comma = u.find(',');
    const std::string_view head = u.substr(5, comma == std::string_view::npos ? 0 : comma - 5);
    if (comma == std::string_view::npos || !head.ends_with(";base64")) {
        return bad_request("'" + path +
                               ".image_url.url' is a data URL without base64 data; send "
                               "data:<media type>;base64,<bytes>",
                           path + ".image_url.url");
    }
    out.media_type.assign(head.substr(0, head.find(';')));
    out.data.assign(u.substr(comma + 1));
    return std::nullopt;
}

std::optional<canonical::Error> decode_content(const json::Value& content, const std::string& path,
                                               ChatMessage& msg, GenerationRequest& req) {
    if (content.IsNull()) {
        return std::nullopt;
    }
    if (content.IsString()) {
        msg.content.assign(content.GetString(), content.GetStringLength());
        return std::nullopt;
    }
    if (!content.IsArray()) {
        return bad_request("'" + path +
                               "' must be a string, an array of content parts or null, "
                               "got " +
                               std::string(json::type_name(content)),
                           path);
    }
    bool first_text = true;
    for (rapidjson::SizeType j = 0; j < content.Size(); ++j) {
        const json::Value& part = content[j];
        const std::string part_path = path + "[" + std::to_string(j) + "]";
        const json::Value* type = json::find(part, "type");
        if (type == nullptr || !type->IsString()) {
            return bad_request("'" + part_path +
                                   ".type' is required: send content parts as "
                                   "objects like {\"type\": \"text\", \"text\": \"...\"}",
                               part_path + ".type");
        }
        if (json::view(*type) != "text") {
            // Kept whole for a backend of the OpenAI family; images are translated for the
            // others (ChatMessage::images), other parts refuse the request there.
            req.non_text_content = true;
            if (msg.parts_json.empty()) {
                msg.parts_json = json::to_string(content);
            }
            if (json::view(*type) == "image_url") {
                if (auto e = read_image(part, part_path, msg)) {
                    return e;
                }
            } else {
                req.untranslated_parts = true;
            }
            continue;
        }
        const json::Value* text = json::find(part, "text");
        if (text == nullptr || !text->IsString()) {
            return bad_request("'" + part_path + ".text' must be a string in a text part",
                               part_path + ".text");
        }
        if (!first_text) {
            msg.content.push_back('\n');
        }
        first_text = false;
        msg.content.append(text->GetString(), text->GetStringLength());
    }
    return std::nullopt;
}

// An assistant message's `tool_calls`: [{"id", "type": "function", "function": {"name",
// "arguments"}}], arguments a string holding JSON (kept as it is, byte for byte).
std::optional<canonical::Error> decode_tool_calls(const json::Value& calls, const std::string& path,
                                                  std::vector<canonical::ToolCall>& out) {
    if (!calls.IsArray()) {
        return bad_request("'" + path +
                               "' must be an array of {\"id\", \"type\": \"function\", "
                               "\"function\": {\"name\", \"arguments\"}} objects, got " +
                               std::string(json::type_name(calls)),
                           path);
    }
    for (rapidjson::SizeType i = 0; i < calls.Size(); ++i) {
        const json::Value& c = calls[i];
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!c.IsObject()) {
            return bad_request(
                "'" + at + "' must be an object, got " + std::string(json::type_name(c)), at);
        }
        std::optional<canonical::Error> err;
        canonical::ToolCall& call = out.emplace_back();
        if (auto id = json::get_string(c, "id", at + ".id", err)) {
            call.id = std::move(*id);
        }
        if (auto type = json::get_string(c, "type", at + ".type", err);
            type && *type != "function") {
            return bad_request("'" + at + ".type' must be \"function\", got \"" + *type + "\"",
                               at + ".type");
        }
        if (err) {
            return err;
        }
        const json::Value* function = json::find(c, "function");
        if (function == nullptr || !function->IsObject()) {
            return bad_request("'" + at +
                                   ".function' is required: an object with 'name' and "
                                   "'arguments' (a string holding JSON)",
                               at + ".function");
        }
        const std::string fpath = at + ".function";
        auto name = json::get_string(*function, "name", fpath + ".name", err);
        auto arguments = json::get_string(*function, "arguments", fpath + ".arguments", err);
        if (err) {
            return err;
        }
        if (!name || name->empty()) {
            return bad_request("'" + fpath + ".name' is required: the name of the tool called",
                               fpath + ".name");
        }
        call.name = std::move(*name);
        call.arguments = arguments.value_or("");
    }
    return std::nullopt;
}

std::optional<canonical::Error> decode_messages(const json::Value* messages,
                                                GenerationRequest& req) {
    if (messages == nullptr || messages->IsNull()) {
        return bad_request(
            "'messages' is required: send a non-empty array of "
            "{\"role\", \"content\"} objects",
            "messages");
    }
    if (!messages->IsArray() || messages->Empty()) {
        return bad_request(
            "'messages' must be a non-empty array of {\"role\", \"content\"} "
            "objects, got " +
                std::string(messages->IsArray() ? "an empty array" : json::type_name(*messages)),
            "messages");
    }
    req.messages.reserve(messages->Size());
    for (rapidjson::SizeType i = 0; i < messages->Size(); ++i) {
        const json::Value& m = (*messages)[i];
        const std::string path = "messages[" + std::to_string(i) + "]";
        if (!m.IsObject()) {
            return bad_request("'" + path + "' must be an object with 'role' and 'content', got " +
                                   std::string(json::type_name(m)),
                               path);
        }
        ChatMessage& msg = req.messages.emplace_back();
        const json::Value* role = json::find(m, "role");
        if (role == nullptr || !role->IsString() ||
            std::find(std::begin(kRoles), std::end(kRoles), json::view(*role)) ==
                std::end(kRoles)) {
            return bad_request(
                "'" + path +
                    ".role' must be one of system, developer, user, "
                    "assistant, tool, got " +
                    (role == nullptr ? std::string("nothing") : json::to_string(*role)),
                path + ".role");
        }
        msg.role.assign(role->GetString(), role->GetStringLength());
        if (const json::Value* content = json::find(m, "content"); content != nullptr) {
            if (auto err = decode_content(*content, path + ".content", msg, req)) {
                return err;
            }
        }
        std::optional<canonical::Error> err;
        if (auto name = json::get_string(m, "name", path + ".name", err)) {
            msg.name = std::move(*name);
        }
        if (auto id = json::get_string(m, "tool_call_id", path + ".tool_call_id", err)) {
            msg.tool_call_id = std::move(*id);
        }
        // An assistant turn's reasoning sent back (vLLM, SGLang and DeepSeek write it so; vLLM's
        // newer answers call it `reasoning`).
        if (auto reasoning =
                json::get_string(m, "reasoning_content", path + ".reasoning_content", err)) {
            msg.reasoning = std::move(*reasoning);
        } else if (auto newer = json::get_string(m, "reasoning", path + ".reasoning", err)) {
            msg.reasoning = std::move(*newer);
        }
        if (err) {
            return err;
        }
        if (const json::Value* calls = json::find(m, "tool_calls");
            calls != nullptr && !calls->IsNull()) {
            if (auto e = decode_tool_calls(*calls, path + ".tool_calls", msg.tool_calls)) {
                return e;
            }
        }
        // Everything else a message carries (an answer echoed back: `refusal`, `annotations`,
        // `audio`, `function_call`; a server's own keys) goes on to the OpenAI family and is
        // refused elsewhere unless it says nothing.
        for (const auto& member : m.GetObject()) {
            const std::string_view key = json::view(member.name);
            bool known = false;  // (a loop, not std::find: is_known_key's stays inlined)
            for (const std::string_view k : kMessageKeys) {
                known = known || k == key;
            }
            if (!known) {
                std::string value = json::to_string(member.value);
                const bool inert = canonical::is_inert(key, value, kInertMessageKeys);
                msg.extras.push_back({std::string(key), std::move(value), inert});
            }
        }
    }
    return std::nullopt;
}

}  // namespace

Result<GenerationRequest> decode_request(std::string_view body, Api api) {
    json::Document doc;
    if (auto err = json::parse_request_object(body, doc)) {
        return std::move(*err);
    }
    GenerationRequest req;
    req.dialect = dialect_of(api);
    req.kind = api == Api::chat ? RequestKind::chat : RequestKind::completion;

    std::optional<canonical::Error> err;
    if (auto model = json::get_string(doc, "model", "model", err)) {
        req.model = std::move(*model);
    }
    if (err) {
        return std::move(*err);
    }
    if (api == Api::completions) {
        const json::Value* prompt = json::find(doc, "prompt");
        if (prompt == nullptr || prompt->IsNull()) {
            return bad_request(
                "'prompt' is required: send a string, a list of strings, a list "
                "of token ids or a list of token-id lists",
                "prompt");
        }
        if (auto e = decode_prompt(*prompt, req)) {
            return std::move(*e);
        }
    } else if (auto e = decode_messages(json::find(doc, "messages"), req)) {
        return std::move(*e);
    }
    if (auto e = decode_sampling(doc, api, req)) {
        return std::move(*e);
    }
    if (auto e = decode_stream_options(doc, req)) {
        return std::move(*e);
    }
    for (const auto& member : doc.GetObject()) {
        const std::string_view key = json::view(member.name);
        if (!is_known_key(key, api)) {
            std::string value = json::to_string(member.value);
            const bool inert = canonical::is_inert(key, value, kInert);
            req.extras.push_back({std::string(key), std::move(value), inert});
        }
    }
    return req;
}

}  // namespace infergate::translators::openai
