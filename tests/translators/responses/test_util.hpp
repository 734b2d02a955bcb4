#pragma once
// Helpers shared by the Responses API codec tests.

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "translators/conversation.hpp"
#include "translators/responses/codec.hpp"

namespace responses_test {

using infergate::canonical::GenerationRequest;
using infergate::translators::Codec;
using infergate::translators::ConversationLookup;

inline const Codec& codec() {
    return infergate::translators::responses::codec();
}

inline GenerationRequest decode_ok(std::string_view body,
                                   const ConversationLookup* lookup = nullptr) {
    INFO(body);
    auto r = codec().decode_stateful(body, lookup);
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message << " (param " << r.error().param << ")");
    }
    return std::move(r.value());
}

// The proxy's store, as the decoder sees it: whole conversations by response id and single
// items by item id. Records what was asked for.
class FakeLookup final : public ConversationLookup {
public:
    std::map<std::string, std::vector<std::string>, std::less<>> conversations;
    std::map<std::string, std::string, std::less<>> items;
    mutable std::vector<std::string> asked;

    std::optional<std::vector<std::string>> conversation(std::string_view id) const override {
        asked.emplace_back("conversation:" + std::string(id));
        const auto it = conversations.find(id);
        if (it == conversations.end()) {
            return std::nullopt;
        }
        return it->second;
    }
    std::optional<std::string> item(std::string_view id) const override {
        asked.emplace_back("item:" + std::string(id));
        const auto it = items.find(id);
        if (it == items.end()) {
            return std::nullopt;
        }
        return it->second;
    }
};

// A value of a JSON text, by JSON pointer ("/output/0/id"), written compactly; "<absent>" when
// the pointer names nothing, "<malformed>" when the text is not JSON.
inline std::string at(std::string_view json, const char* pointer) {
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    if (doc.HasParseError()) {
        return "<malformed>";
    }
    const rapidjson::Value* v = rapidjson::Pointer(pointer).Get(doc);
    if (v == nullptr) {
        return "<absent>";
    }
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    v->Accept(w);
    return std::string(buf.GetString(), buf.GetSize());
}

// The keys of a JSON object (at `pointer`), in order.
inline std::vector<std::string> keys(std::string_view json, const char* pointer = "") {
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    std::vector<std::string> out;
    if (doc.HasParseError()) {
        return out;
    }
    const rapidjson::Value* v = rapidjson::Pointer(pointer).Get(doc);
    if (v == nullptr || !v->IsObject()) {
        return out;
    }
    for (const auto& m : v->GetObject()) {
        out.emplace_back(m.name.GetString(), m.name.GetStringLength());
    }
    return out;
}

}  // namespace responses_test
