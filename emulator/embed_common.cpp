// What every embedding route shares: the vector of an input, OpenAI's `input` shapes, and the
// answer's timing and faults.
#include "emulator/embed.hpp"

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
