#pragma once
// Shared by the embeddings and tokenizer codec tests: bodies in every JSON style real peers
// write, and headers a test sets.

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "tests/support/json_variants.hpp"
#include "translators/codec.hpp"

namespace embed_test {

// `json` written in every style of tests/support/json_variants.hpp (compact, spaced, pretty with
// LF and CRLF, keys reordered, every string escaped, random whitespace), plus as it is.
inline std::vector<std::pair<std::string, std::string>> styles(std::string_view json) {
    rapidjson::Document doc;
    // Full precision: every number is written again as the same double.
    doc.Parse<rapidjson::kParseFullPrecisionFlag>(json.data(), json.size());
    REQUIRE_MESSAGE(!doc.HasParseError(), "test input is not JSON: " << json);
    std::vector<std::pair<std::string, std::string>> out;
    out.emplace_back("as written", std::string(json));
    for (const auto s : infergate::testing::kAllStyles) {
        for (uint32_t seed = 1; seed <= (s == infergate::testing::Style::random_ws ? 4U : 1U);
             ++seed) {
            out.emplace_back(infergate::testing::style_name(s),
                             infergate::testing::write_variant(doc, s, seed));
        }
    }
    return out;
}

class Headers final : public infergate::translators::ResponseHeaders {
public:
    std::map<std::string, std::string, std::less<>> values;
    std::string_view find(std::string_view name) const override {
        auto it = values.find(name);
        return it == values.end() ? std::string_view() : std::string_view(it->second);
    }
};

inline const Headers& no_headers() {
    static const Headers h;
    return h;
}

}  // namespace embed_test
