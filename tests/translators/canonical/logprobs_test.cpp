#include "translators/canonical/logprobs.hpp"

#include <doctest/doctest.h>

using namespace infergate;
using canonical::TokenLogprob;

namespace {

std::string write(const std::vector<TokenLogprob>& entries, json::TokenEntryStyle style,
                  size_t max_top) {
    std::string out;
    json::StringOut os(&out);
    json::Writer w(os);
    json::write_token_entries(w, entries, style, max_top);
    return out;
}

std::vector<TokenLogprob> read(std::string_view text) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(text, doc));
    std::vector<TokenLogprob> out;
    const auto err = json::read_token_entries(doc, "x", out);
    REQUIRE_MESSAGE(!err, *err);
    return out;
}

}  // namespace

TEST_CASE("code points count as Python's len does") {
    CHECK(canonical::code_points("") == 0);
    CHECK(canonical::code_points("abc") == 3);
    CHECK(canonical::code_points("h\xc3\xa9") == 2);         // é
    CHECK(canonical::code_points("\xe2\x82\xac!") == 2);     // €!
    CHECK(canonical::code_points("\xf0\x9f\x98\x80") == 1);  // an emoji
    CHECK(canonical::code_points("\xe2\x82") == 2);          // a cut sequence: one per byte
    CHECK(canonical::code_points("\xff"
                                 "a") == 2);
}

TEST_CASE("a banned token's -inf becomes vLLM's -9999.0") {
    CHECK(canonical::finite_logprob(-1.5) == -1.5);
    CHECK(canonical::finite_logprob(-std::numeric_limits<double>::infinity()) == -9999.0);
    CHECK(canonical::finite_logprob(std::numeric_limits<double>::quiet_NaN()) == -9999.0);
}

TEST_CASE("the shared token entry in each dialect's spelling") {
    TokenLogprob t;
    t.token = "h\xc3\xa9";
    t.id = 7;
    t.logprob = -0.5;
    canonical::TokenAlternative a;
    a.token = "x";
    a.id = 9;
    a.logprob = -1.25;
    t.top = {a, a};

    SUBCASE("OpenAI chat: token, logprob, bytes, top_logprobs (always)") {
        CHECK(write({t}, {}, 1) ==
              R"([{"token":"hé","logprob":-0.5,"bytes":[104,195,169],"top_logprobs":[)"
              R"({"token":"x","logprob":-1.25,"bytes":[120]}]}])");
        t.top.clear();
        CHECK(write({t}, {}, 5) ==
              R"([{"token":"hé","logprob":-0.5,"bytes":[104,195,169],"top_logprobs":[]}])");
    }
    SUBCASE("llama.cpp: id, token, bytes, logprob; prob and top_probs after sampling") {
        json::TokenEntryStyle s;
        s.id = true;
        CHECK(write({t}, s, 1) ==
              R"([{"id":7,"token":"hé","bytes":[104,195,169],"logprob":-0.5,"top_logprobs":[)"
              R"({"id":9,"token":"x","bytes":[120],"logprob":-1.25}]}])");
        s.probs = true;
        t.top.clear();
        t.logprob.reset();
        t.prob = 0.25;
        CHECK(write({t}, s, 1) ==
              R"([{"id":7,"token":"hé","bytes":[104,195,169],"prob":0.25,"top_probs":[]}])");
    }
    SUBCASE("Ollama: bytes and top_logprobs left out when empty") {
        json::TokenEntryStyle s;
        s.omit_empty = true;
        t.top.clear();
        t.token.clear();
        CHECK(write({t}, s, 0) == R"([{"token":"","logprob":-0.5}])");
    }
    SUBCASE("a partial UTF-8 token keeps its raw bytes") {
        t.token = "";
        t.bytes = std::string("\xe2\x82");
        t.top.clear();
        CHECK(write({t}, {}, 0) ==
              R"([{"token":"","logprob":-0.5,"bytes":[226,130],"top_logprobs":[]}])");
    }
}

TEST_CASE("reading token entries in every spelling") {
    auto e = read(
        R"([{"id":7,"token":"a","bytes":[97],"logprob":-0.5,"top_logprobs":[{"id":1,"token":"b","bytes":[98],"logprob":-1}]},
                     {"token":"","logprob":-2,"bytes":[226,130]},
                     {"token":"c","logprob":-3,"bytes":null,"top_logprobs":null},
                     {"id":3,"token":"d","bytes":[100],"prob":0.5,"top_probs":[{"id":4,"token":"e","bytes":[101],"prob":0.25}]}])");
    REQUIRE(e.size() == 4);
    CHECK(e[0].id == 7);
    CHECK(e[0].logprob == -0.5);
    CHECK_FALSE(e[0].bytes);  // the same as the text: not kept twice
    REQUIRE(e[0].top.size() == 1);
    CHECK(e[0].top[0].token == "b");
    CHECK(e[0].top[0].logprob == -1);
    CHECK(e[1].bytes == std::string("\xe2\x82"));
    CHECK(e[2].top.empty());
    CHECK(e[3].prob == 0.5);
    CHECK_FALSE(e[3].logprob);
    CHECK(e[3].top[0].prob == 0.25);

    json::Document doc;
    REQUIRE_FALSE(json::parse(R"([{"logprob":-1}])", doc));
    std::vector<TokenLogprob> out;
    CHECK(json::read_token_entries(doc, "x", out) ==
          std::optional<std::string>("x[0].token is missing or not a string"));
    REQUIRE_FALSE(json::parse(R"([{"token":"a","bytes":[300],"logprob":-1}])", doc));
    CHECK(json::read_token_entries(doc, "x", out).has_value());
    REQUIRE_FALSE(json::parse(R"([{"token":"a"}])", doc));
    CHECK(json::read_token_entries(doc, "x", out).has_value());
}

TEST_CASE("round trip: what is written reads back the same") {
    TokenLogprob t;
    t.token = "a";
    t.id = 1;
    t.logprob = -0.75;
    canonical::TokenAlternative a;
    a.token = "b";
    a.id = 2;
    a.logprob = -1.5;
    t.top = {a};
    json::TokenEntryStyle s;
    s.id = true;
    CHECK(read(write({t}, s, 5)) == std::vector<TokenLogprob>{t});
}
