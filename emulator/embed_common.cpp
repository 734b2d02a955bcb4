// What the embedding and tokenizer routes share: the vector of an input, OpenAI's `input` shapes,
// chat messages as template tokens, token-id lists, and an answer's timing and faults.
#include "emulator/embed.hpp"

#include <limits>

#include "emulator/json_util.hpp"

namespace infergate::emulator {

std::vector<float> embed_tokens(const Options& options, std::span<const std::int64_t> ids, int dims,
                                bool normalize) {
    const Pooling pooling =
        options.embedding.pooling == Pooling::kNone ? Pooling::kMean : options.embedding.pooling;
    std::vector<float> v = pooled_vector(ids, options.embedding.dim, pooling);
    finish_vector(v, dims, normalize);
    return v;
}

std::vector<std::int64_t> ids_of(std::span<const Token> tokens) {
    std::vector<std::int64_t> ids;
    ids.reserve(tokens.size());
    for (const Token& t : tokens) {
        ids.push_back(t.id);
    }
    return ids;
}

std::string python_list(const std::vector<int>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        out += (i > 0 ? ", " : "") + std::to_string(values[i]);
    }
    return out + "]";
}

bool read_oai_input(const rapidjson::Value& v, OaiInput& out) {
    out = OaiInput{};
    if (v.IsString()) {
        out.shape = OaiInput::Shape::kText;
        out.texts.emplace_back(v.GetString(), v.GetStringLength());
        return true;
    }
    if (!v.IsArray()) {
        return false;
    }
    if (v.Empty()) {
        out.shape = OaiInput::Shape::kTexts;
        return true;
    }
    const rapidjson::Value& first = v[0];
    if (first.IsString()) {
        out.shape = OaiInput::Shape::kTexts;
        for (const rapidjson::Value& item : v.GetArray()) {
            if (!item.IsString()) {
                return false;
            }
            out.texts.emplace_back(item.GetString(), item.GetStringLength());
        }
        return true;
    }
    if (first.IsInt64()) {
        out.shape = OaiInput::Shape::kIds;
        std::vector<std::int64_t>& ids = out.ids.emplace_back();
        for (const rapidjson::Value& item : v.GetArray()) {
            if (!item.IsInt64()) {
                return false;
            }
            ids.push_back(item.GetInt64());
        }
        return true;
    }
    if (first.IsArray()) {
        out.shape = OaiInput::Shape::kIdLists;
        for (const rapidjson::Value& list : v.GetArray()) {
            if (!list.IsArray()) {
                return false;
            }
            std::vector<std::int64_t>& ids = out.ids.emplace_back();
            for (const rapidjson::Value& item : list.GetArray()) {
                if (!item.IsInt64()) {
                    return false;
                }
                ids.push_back(item.GetInt64());
            }
        }
        return true;
    }
    return false;
}

bool chat_from_messages(const rapidjson::Value& messages, ChatTokens& chat) {
    if (!messages.IsArray()) {
        return false;
    }
    for (const rapidjson::Value& m : messages.GetArray()) {
        const rapidjson::Value* role = m.IsObject() ? member(m, "role") : nullptr;
        if (role == nullptr || !role->IsString()) {
            return false;
        }
        chat.add_message({role->GetString(), role->GetStringLength()});
        const rapidjson::Value* content = member(m, "content");
        if (content == nullptr) {
            continue;
        }
        if (content->IsString()) {
            chat.add_content({content->GetString(), content->GetStringLength()});
        } else if (content->IsArray()) {
            for (const rapidjson::Value& part : content->GetArray()) {
                const rapidjson::Value* text = part.IsObject() ? member(part, "text") : nullptr;
                if (text != nullptr && text->IsString()) {
                    chat.add_content({text->GetString(), text->GetStringLength()});
                }
            }
        } else if (!content->IsNull()) {
            return false;
        }
    }
    return true;
}

std::optional<std::vector<std::int64_t>> id_list(const rapidjson::Value& v, bool& overflow) {
    if (!v.IsArray()) {
        return std::nullopt;
    }
    std::vector<std::int64_t> ids;
    for (const rapidjson::Value& id : v.GetArray()) {
        if (!id.IsInt64()) {
            return std::nullopt;
        }
        const std::int64_t x = id.GetInt64();
        overflow = overflow || x < 0 || x > std::numeric_limits<std::uint32_t>::max();
        ids.push_back(x);
    }
    return ids;
}

net::awaitable<bool> early_fault(Conn& conn, const Request& req, const ErrorStyle& errors) {
    if (req.knobs.fault.kind == FaultKind::kNone) {
        co_return false;
    }
    const bool answered = co_await apply_early_fault(conn, req.knobs, false, errors);
    co_return answered;
}

net::awaitable<void> send_computed(Conn& conn, const Request& req, const BodyRenderer& render,
                                   const ErrorStyle& errors, std::string_view content_type) {
    Framing framing;
    framing.body_type = content_type;
    std::vector<ChoiceState> none;
    co_await send_generated(conn, req, none, render, errors, framing);
}

}  // namespace infergate::emulator
