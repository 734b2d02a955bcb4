#pragma once
// Test support: the oracle for translators/openai/passthrough, shared by its unit test and its
// fuzz target. The same edits made on the document as Python's json reads it (the last
// duplicate key wins), returned as canonical text (tests/support/json_variants.hpp).

#include <string>
#include <string_view>

#include "tests/support/json_variants.hpp"
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
    return canonical(doc);
}

}  // namespace infergate::testing
