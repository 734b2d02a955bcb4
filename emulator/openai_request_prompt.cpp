// What a request generates from: /v1/completions prompts (text, token ids, batches of either)
// and /v1/chat/completions messages, with the prompt listings echo and prompt_logprobs need.
#include "emulator/json_util.hpp"
#include "emulator/openai_request_parser.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

}  // namespace

void OaiParser::add_prompt_detail(std::string text, std::vector<PromptToken> tokens) {
    out_.prompt_texts.push_back(std::move(text));
    out_.prompt_tokens.push_back(std::move(tokens));
}

std::optional<OaiError> OaiParser::parse_prompt() {
    const Value* prompt = member(doc_, "prompt");
    static constexpr std::string_view kMissing =
        "Value error, Either prompt or prompt_embeds must be provided and non-empty.";
    if (prompt == nullptr) {
        return vllm_ ? framework("", kMissing) : framework("prompt", "Field required");
    }
    if (prompt->IsString()) {
        if (prompt->GetStringLength() == 0) {
            return framework("", kMissing);
        }
        const std::string_view text(prompt->GetString(), prompt->GetStringLength());
        out_.prompts.push_back(prompt_from_text(text));
        if (want_prompt_tokens_) {
            add_prompt_detail(std::string(text), prompt_tokens_from_text(text));
        }
        return std::nullopt;
    }
    if (!prompt->IsArray() || prompt->Empty()) {
        return framework(prompt->IsArray() ? "" : "prompt",
                         prompt->IsArray() ? kMissing : "Input should be a valid string");
    }
    const Value& first = (*prompt)[0];
    std::vector<std::int64_t> ids;
    if (first.IsInt64()) {  // [int]: one token-id prompt
        for (const Value& id : prompt->GetArray()) {
            if (!id.IsInt64()) {
                return framework("prompt", "Input should be a valid integer");
            }
            ids.push_back(id.GetInt64());
        }
        out_.prompts.push_back(prompt_from_ids(ids));
        if (want_prompt_tokens_) {
            std::vector<PromptToken> tokens = prompt_tokens_from_ids(ids);
            add_prompt_detail(prompt_text(tokens), std::move(tokens));
        }
        return std::nullopt;
    }
    for (const Value& item : prompt->GetArray()) {  // [str] or [[int]]: a batch
        if (item.IsString() && first.IsString()) {
            if (item.GetStringLength() == 0) {
                return serving("The decoder prompt cannot be empty");
            }
            const std::string_view text(item.GetString(), item.GetStringLength());
            out_.prompts.push_back(prompt_from_text(text));
            if (want_prompt_tokens_) {
                add_prompt_detail(std::string(text), prompt_tokens_from_text(text));
            }
        } else if (item.IsArray() && first.IsArray()) {
            ids.clear();
            for (const Value& id : item.GetArray()) {
                if (!id.IsInt64()) {
                    return framework("prompt", "Input should be a valid integer");
                }
                ids.push_back(id.GetInt64());
            }
            if (ids.empty()) {
                return serving("The decoder prompt cannot be empty");
            }
            out_.prompts.push_back(prompt_from_ids(ids));
            if (want_prompt_tokens_) {
                std::vector<PromptToken> tokens = prompt_tokens_from_ids(ids);
                add_prompt_detail(prompt_text(tokens), std::move(tokens));
            }
        } else {
            return framework("prompt", "Input should be a valid string");
        }
    }
    return std::nullopt;
}

std::optional<OaiError> OaiParser::parse_messages() {
    const Value* messages = member(doc_, "messages");
    if (messages == nullptr) {
        return framework("messages", "Field required");
    }
    if (!messages->IsArray()) {
        return framework("messages", "Input should be a valid list");
    }
    ChatPromptBuilder builder;
    ChatPromptTokens tokens;  // only when a prompt listing needs them
    for (const Value& m : messages->GetArray()) {
        const Value* role = member(m, "role");
        if (role == nullptr || !role->IsString()) {
            return framework("messages.role", "Field required");
        }
        builder.add_message({role->GetString(), role->GetStringLength()});
        if (want_prompt_tokens_) {
            tokens.add_message({role->GetString(), role->GetStringLength()});
        }
        const Value* content = member(m, "content");
        if (content == nullptr) {
            continue;
        }
        auto add = [&](const Value& text) {
            builder.add_content({text.GetString(), text.GetStringLength()});
            if (want_prompt_tokens_) {
                tokens.add_content({text.GetString(), text.GetStringLength()});
            }
        };
        if (content->IsString()) {
            add(*content);
        } else if (content->IsArray()) {
            for (const Value& part : content->GetArray()) {
                const Value* text = member(part, "text");
                if (text != nullptr && text->IsString()) {
                    add(*text);
                }
            }
        } else {
            return framework("messages.content", "Input should be a valid string");
        }
    }
    out_.prompts.push_back(builder.finish());
    if (want_prompt_tokens_) {
        std::vector<PromptToken> list = tokens.finish();
        add_prompt_detail(prompt_text(list), std::move(list));
    }
    return std::nullopt;
}

}  // namespace infergate::emulator
