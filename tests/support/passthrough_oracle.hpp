#pragma once
// Test support: the oracle for translators/openai/passthrough, shared by its unit test and its
// fuzz target. The same edits made on the document as Python's json reads it (the last
// duplicate key wins), returned as canonical text (tests/support/json_variants.hpp).

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/json_variants.hpp"
#include "translators/canonical/types.hpp"
#include "translators/openai/passthrough.hpp"

namespace infergate::testing {

// The edits as a document editor would make them: on the document as Python reads it (last
// duplicate wins), then canonical text.
inline std::string dom_edit_response(std::string_view text,
                                     const translators::openai::ResponseEdits& e) {
    rapidjson::Document doc;
    if (!testing::parse_last_wins(text, doc) || !doc.IsObject()) {
        return "<not an object>";
    }
    auto& a = doc.GetAllocator();
    if (e.strip_usage) {
        doc.RemoveMember("usage");
    }
    auto set_string = [&](const char* key, std::string_view v) {
        auto it = doc.FindMember(key);
        if (!v.empty() && it != doc.MemberEnd() && it->value.IsString()) {
            it->value.SetString(v.data(), static_cast<rapidjson::SizeType>(v.size()), a);
        }
    };
    set_string("model", e.model);
    set_string("id", e.id);
    return canonical(doc);
}

// logit_bias as llama.cpp's [[id, bias], ...] when it is an object of token-id keys and number
// values, as the Python servers read it (json.loads, then int() of each key: a later spelling of
// an id, "007" after "7", keeps the first one's place and gives its value).
inline void logit_bias_as_pairs(rapidjson::Document& doc, rapidjson::Document::AllocatorType& a) {
    auto it = doc.FindMember("logit_bias");
    if (it == doc.MemberEnd() || !it->value.IsObject()) {
        return;
    }
    std::vector<std::pair<int64_t, const rapidjson::Value*>> pairs;
    for (const auto& m : it->value.GetObject()) {
        const auto id =
            canonical::token_id_key(std::string_view(m.name.GetString(), m.name.GetStringLength()));
        if (!id || !m.value.IsNumber()) {
            return;
        }
        auto same =
            std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == *id; });
        if (same != pairs.end()) {
            same->second = &m.value;
        } else {
            pairs.emplace_back(*id, &m.value);
        }
    }
    rapidjson::Value array(rapidjson::kArrayType);
    for (const auto& [id, value] : pairs) {
        rapidjson::Value pair(rapidjson::kArrayType);
        pair.PushBack(rapidjson::Value(static_cast<int64_t>(id)), a);
        pair.PushBack(rapidjson::Value(*value, a), a);
        array.PushBack(pair, a);
    }
    it->value = array;
}

inline std::string dom_edit_request(std::string_view text,
                                    const translators::openai::RequestEdits& e) {
    rapidjson::Document doc;
    if (!testing::parse_last_wins(text, doc) || !doc.IsObject()) {
        return "<not an object>";
    }
    auto& a = doc.GetAllocator();
    if (!e.model.empty()) {
        rapidjson::Value m(e.model.data(), static_cast<rapidjson::SizeType>(e.model.size()), a);
        auto it = doc.FindMember("model");
        if (it != doc.MemberEnd()) {
            it->value = m;
        } else {
            doc.AddMember("model", m, a);
        }
    }
    if (e.include_usage || e.continuous_usage) {
        auto it = doc.FindMember("stream_options");
        if (it == doc.MemberEnd()) {
            doc.AddMember("stream_options", rapidjson::Value(rapidjson::kObjectType), a);
            it = doc.FindMember("stream_options");
        } else if (!it->value.IsObject()) {
            it->value.SetObject();
        }
        for (const char* key : {e.include_usage ? "include_usage" : nullptr,
                                e.continuous_usage ? "continuous_usage_stats" : nullptr}) {
            if (key == nullptr) {
                continue;
            }
            auto k = it->value.FindMember(key);
            if (k != it->value.MemberEnd()) {
                k->value.SetBool(true);
            } else {
                it->value.AddMember(rapidjson::StringRef(key), true, a);
            }
        }
    }
    for (size_t r = 0; r < e.rename_count; ++r) {
        const std::string from(e.renames[r].from);
        const std::string to(e.renames[r].to);
        auto it = doc.FindMember(from.c_str());
        if (it == doc.MemberEnd() || it->value.IsNull()) {
            continue;
        }
        rapidjson::Value value(it->value, a);
        doc.RemoveMember(from.c_str());
        doc.RemoveMember(to.c_str());
        doc.AddMember(rapidjson::Value(to.c_str(), a), value, a);
    }
    if (e.logit_bias_pairs) {
        logit_bias_as_pairs(doc, a);
    }
    if (e.schema_from_response_format && !doc.HasMember("json_schema")) {
        const auto rf = doc.FindMember("response_format");
        if (rf != doc.MemberEnd() && rf->value.IsObject()) {
            const auto type = rf->value.FindMember("type");
            const auto named = rf->value.FindMember("json_schema");
            if (type != rf->value.MemberEnd() && type->value.IsString() &&
                std::string_view(type->value.GetString(), type->value.GetStringLength()) ==
                    "json_schema" &&
                named != rf->value.MemberEnd() && named->value.IsObject()) {
                const auto schema = named->value.FindMember("schema");
                if (schema != named->value.MemberEnd() && !schema->value.IsNull()) {
                    rapidjson::Value copy(schema->value, a);
                    doc.AddMember("json_schema", copy, a);
                }
            }
        }
    }
    return canonical(doc);
}

}  // namespace infergate::testing
