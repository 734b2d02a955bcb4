// translators/tgi/codec.cpp: the Codec hooks TGI overrides (route preparation, the token-count
// headers it writes and reads, the id prefix).

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/tgi/test_util.hpp"
#include "translators/codec.hpp"

namespace {

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::translators::codec_for;
using infergate::translators::HeaderList;
using infergate::translators::UpstreamOptions;
using infergate::translators::tgi::kFullTextExtra;
using infergate::translators::tgi::uses_compat_route;
using infergate::translators::tgi::wants_full_text;
using tgi_test::tgi;

GenerationRequest prepared(const std::string& body, std::string_view path) {
    auto r = tgi().decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    tgi().prepare_request(r.value(), path);
    return r.value();
}

GenerationResult answer(std::string text) {
    GenerationResult r;
    Choice& c = r.choices.emplace_back();
    c.text = std::move(text);
    return r;
}

// A backend's response whose only header is x-prompt-tokens (absent when empty).
class Headers final : public infergate::translators::ResponseHeaders {
public:
    explicit Headers(std::string prompt_tokens) : prompt_tokens_(std::move(prompt_tokens)) {}
    std::string_view find(std::string_view name) const override {
        return name == "x-prompt-tokens" ? std::string_view(prompt_tokens_) : std::string_view();
    }

private:
    std::string prompt_tokens_;
};

}  // namespace

TEST_CASE("tgi prepare_request: the route decides streaming and the compat array") {
    auto whole = prepared(R"({"inputs":"x","stream":true})", "/generate");
    CHECK_FALSE(whole.stream);  // /generate ignores "stream"
    CHECK_FALSE(uses_compat_route(whole));
    auto streamed = prepared(R"({"inputs":"x"})", "/generate_stream");
    CHECK(streamed.stream);
    auto compat = prepared(R"({"inputs":"x","parameters":{"return_full_text":false}})", "/");
    CHECK(uses_compat_route(compat));
    CHECK_FALSE(wants_full_text(compat));
}

TEST_CASE("tgi prepare_request: return_full_text is served by the encoder, not the backend") {
    // POST / defaults return_full_text to true: the backend is asked for the generation only
    // (no echo), and the TGI encoder puts the prompt in front.
    auto req = prepared(R"({"inputs":"Paris is","parameters":{"max_new_tokens":3}})", "/");
    CHECK_FALSE(req.echo);
    CHECK(wants_full_text(req));
    auto upstream = codec_for(Dialect::openai_completions)
                        .encode_request(req, UpstreamOptions{"m", {}, false, true});
    REQUIRE(upstream.ok());
    CHECK(upstream->find("\"echo\"") == std::string::npos);
    CHECK(upstream->find("infergate.") == std::string::npos);
    // The mark never reaches a TGI backend either.
    auto tgi_upstream = tgi().encode_request(req, UpstreamOptions{"m", {}, false, true});
    REQUIRE(tgi_upstream.ok());
    CHECK(tgi_upstream->find("infergate.") == std::string::npos);
    CHECK(tgi_upstream->find("return_full_text\":true") == std::string::npos);

    std::string out;
    tgi().encode_response(answer(" the capital"), req, out);
    CHECK(out == R"([{"generated_text":"Paris is the capital"}])");

    // Asked for explicitly on a dedicated route: the same.
    auto dedicated =
        prepared(R"({"inputs":"Paris is","parameters":{"return_full_text":true}})", "/generate");
    CHECK_FALSE(dedicated.echo);
    out.clear();
    tgi().encode_response(answer(" the capital"), dedicated, out);
    CHECK(out == R"({"generated_text":"Paris is the capital"})");

    // Not asked for: the generation only, and no mark.
    auto plain = prepared(R"({"inputs":"Paris is"})", "/generate");
    CHECK_FALSE(wants_full_text(plain));
    for (const auto& e : plain.extras) {
        CHECK(e.key != kFullTextExtra);
    }
    out.clear();
    tgi().encode_response(answer(" the capital"), plain, out);
    CHECK(out == R"({"generated_text":" the capital"})");
}

TEST_CASE("tgi response_headers: x-prompt-tokens and x-generated-tokens") {
    GenerationResult r = answer("a");
    HeaderList none;
    tgi().response_headers(r, none);
    CHECK(none.empty());  // no counts known: no headers

    r.usage.prompt_tokens = 7;
    r.usage.completion_tokens = 3;
    HeaderList whole;
    tgi().response_headers(r, whole);
    REQUIRE(whole.size() == 2);
    CHECK(whole[0].first == "x-prompt-tokens");
    CHECK(whole[0].second == "7");
    CHECK(whole[1].first == "x-generated-tokens");
    CHECK(whole[1].second == "3");

    // The one choice's own counts win where it has them.
    r.choices[0].usage.prompt_tokens = 5;
    r.choices[0].usage.completion_tokens = 2;
    HeaderList own;
    tgi().response_headers(r, own);
    REQUIRE(own.size() == 2);
    CHECK(own[0].second == "5");
    CHECK(own[1].second == "2");
}

TEST_CASE("tgi read_response_headers: the prompt's length from x-prompt-tokens") {
    GenerationResult r = answer("a");
    tgi().read_response_headers(Headers("12"), r);
    CHECK(r.usage.prompt_tokens == 12);
    CHECK(r.choices[0].usage.prompt_tokens == 12);

    GenerationResult known = answer("a");
    known.usage.prompt_tokens = 4;
    tgi().read_response_headers(Headers("12"), known);
    CHECK(known.usage.prompt_tokens == 4);  // the body's count stays
    CHECK_FALSE(known.choices[0].usage.prompt_tokens);

    for (const char* bad : {"", "x", "-"}) {
        CAPTURE(bad);
        GenerationResult r2 = answer("a");
        tgi().read_response_headers(Headers(bad), r2);
        CHECK_FALSE(r2.usage.prompt_tokens);
    }
    GenerationResult absent = answer("a");
    tgi().read_response_headers(Headers(""), absent);
    CHECK_FALSE(absent.usage.prompt_tokens);
}

TEST_CASE("tgi id_prefix") {
    CHECK(tgi().id_prefix() == "cmpl-");
}
