// The tokenizer codecs (translators/tokenizer.hpp): which API a POST /tokenize body is, each
// front's request in every JSON style, each backend's answer (the real llama-server's among
// them), the answers each front writes, offsets derived from llama.cpp's pieces, the plans and
// the 404 of a backend without the route.
#include "translators/tokenizer.hpp"

#include <doctest/doctest.h>

#include <string>

#include "tests/support/fixtures.hpp"
#include "tests/translators/embedding/test_util.hpp"

using infergate::canonical::DetokenizeRequest;
using infergate::canonical::DetokenizeResult;
using infergate::canonical::TokenizerDialect;
using infergate::canonical::TokenizeRequest;
using infergate::canonical::TokenizeResult;
using infergate::translators::BackendDialect;
using infergate::translators::BackendFacts;
using infergate::translators::Flavor;
using infergate::translators::tokenizer_codec;
using infergate::translators::TokenizerOptions;
namespace canonical = infergate::canonical;
namespace testing = infergate::testing;
using embed_test::styles;

namespace {

TokenizeRequest decoded(TokenizerDialect d, std::string_view body) {
    auto r = tokenizer_codec(d).decode_tokenize(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message) << " for " << body);
    return r.value();
}

DetokenizeRequest decoded_detok(TokenizerDialect d, std::string_view body) {
    auto r = tokenizer_codec(d).decode_detokenize(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message) << " for " << body);
    return r.value();
}

std::string encoded(TokenizerDialect back, const TokenizeRequest& req) {
    auto r = tokenizer_codec(back).encode_tokenize(req, TokenizerOptions{"served", "the backend"});
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    return r.value();
}

canonical::Error not_encoded(TokenizerDialect back, const TokenizeRequest& req) {
    auto r = tokenizer_codec(back).encode_tokenize(req, TokenizerOptions{"served", "the backend"});
    REQUIRE(!r.ok());
    return r.error();
}

TokenizeResult answer_of(TokenizerDialect back, std::string_view body, const TokenizeRequest& req) {
    auto r = tokenizer_codec(back).decode_tokenize_answer(body, req);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    return r.value();
}

std::string written(TokenizerDialect front, const TokenizeResult& r, const TokenizeRequest& req,
                    std::optional<int64_t> max_len = 4096) {
    std::string out;
    tokenizer_codec(front).encode_tokenize_answer(
        r, req, infergate::translators::TokenizerAnswer{"m", max_len}, out);
    return out;
}

std::optional<TokenizerDialect> classified(std::string_view body) {
    auto r = infergate::translators::classify_tokenize_body(body);
    REQUIRE(r.ok());
    return r.value();
}

}  // namespace

TEST_CASE("POST /tokenize: which server's body it is") {
    CHECK(classified(R"({"content":"x"})") == TokenizerDialect::llamacpp);
    CHECK(classified(R"({"prompt":"x","model":"m"})") == TokenizerDialect::vllm);
    CHECK(classified(R"({"prompt":["x","y"]})") == TokenizerDialect::sglang);
    CHECK(classified(R"({"messages":[{"role":"user","content":"x"}]})") == TokenizerDialect::vllm);
    CHECK(classified(R"({"inputs":"x","parameters":{}})") == TokenizerDialect::tgi);
    CHECK(classified(R"({"inputs":["x"]})") == TokenizerDialect::tei);
    CHECK(classified(R"({"inputs":"x","prompt_name":"q"})") == TokenizerDialect::tei);
    CHECK(classified(R"({"inputs":"x"})") == std::nullopt);  // TGI's or TEI's: the backend's
    auto bad = infergate::translators::classify_tokenize_body(R"({"text":"x"})");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("{\"content\": ...} (llama.cpp)") != std::string::npos);
    CHECK_FALSE(infergate::translators::classify_tokenize_body("[1]").ok());
    auto d = infergate::translators::classify_detokenize_body(R"({"tokens":[1,2]})");
    CHECK(d.value() == std::nullopt);
    d = infergate::translators::classify_detokenize_body(R"({"tokens":[[1],[2]]})");
    CHECK(d.value() == TokenizerDialect::sglang);
    d = infergate::translators::classify_detokenize_body(
        R"({"tokens":[1],"skip_special_tokens":false})");
    CHECK(d.value() == TokenizerDialect::sglang);
}

TEST_CASE("tokenize requests of every API, in every JSON style, with each server's defaults") {
    for (const auto& [style, body] :
         styles(R"({"model":"m","prompt":"Hello\u00e9","return_token_strs":true})")) {
        CAPTURE(style);
        const TokenizeRequest r = decoded(TokenizerDialect::vllm, body);
        CHECK(r.texts == std::vector<std::string>{"Hello\xc3\xa9"});
        CHECK(r.add_special.value);  // vLLM adds BOS by default
        CHECK(r.token_strs);
    }
    for (const auto& [style, body] : styles(R"({"prompt":["a","b"],"add_special_tokens":false})")) {
        CAPTURE(style);
        const TokenizeRequest r = decoded(TokenizerDialect::sglang, body);
        CHECK(r.text_is_list);
        CHECK(r.texts.size() == 2);
        CHECK_FALSE(r.add_special.value);
        CHECK(r.add_special.said);
    }
    for (const auto& [style, body] : styles(R"({"content":"Hello world","with_pieces":true})")) {
        CAPTURE(style);
        const TokenizeRequest r = decoded(TokenizerDialect::llamacpp, body);
        CHECK_FALSE(r.add_special.value);  // llama.cpp adds none by default
        CHECK(r.pieces.value);
        CHECK(r.pieces.said);
    }
    for (const auto& [style, body] :
         styles(R"({"inputs":"Hello","parameters":{"max_new_tokens":5,"truncate":3}})")) {
        CAPTURE(style);
        const TokenizeRequest r = decoded(TokenizerDialect::tgi, body);
        CHECK(r.truncate == 3);
        CHECK(r.add_special.value);
        CHECK(r.pieces.value);
        CHECK_FALSE(r.pieces.said);
    }
    for (const auto& [style, body] :
         styles(R"({"inputs":["a","b"],"add_special_tokens":true,"prompt_name":"q"})")) {
        CAPTURE(style);
        const TokenizeRequest r = decoded(TokenizerDialect::tei, body);
        CHECK(r.texts.size() == 2);
        CHECK(r.prompt_name == "q");
    }
    const TokenizeRequest chat =
        decoded(TokenizerDialect::vllm, R"({"messages":[{"role":"user","content":"hi"}]})");
    CHECK(chat.chat);
    CHECK_FALSE(chat.add_special.value);  // a rendered chat: the template writes them
    CHECK(decoded(TokenizerDialect::llamacpp, R"({"content":[1,"x"]})").mixed);
    CHECK(decoded(TokenizerDialect::llamacpp, "{}").texts.empty());
    CHECK(tokenizer_codec(TokenizerDialect::vllm)
              .decode_tokenize(R"({"prompt":["a"]})")
              .error()
              .param == "prompt");
    CHECK(
        tokenizer_codec(TokenizerDialect::tgi).decode_tokenize(R"({"inputs":1})").error().status ==
        422);
    CHECK(tokenizer_codec(TokenizerDialect::tei).decode_tokenize(R"({"inputs":[]})").error().code ==
          "Empty");
}

TEST_CASE("detokenize requests and their answers in each API") {
    for (const auto& [style, body] : styles(R"({"tokens":[1,15043,3186],"model":"m"})")) {
        CAPTURE(style);
        CHECK(decoded_detok(TokenizerDialect::vllm, body).ids.front().size() == 3);
        CHECK(decoded_detok(TokenizerDialect::llamacpp, body).ids.front().size() == 3);
    }
    const DetokenizeRequest s =
        decoded_detok(TokenizerDialect::sglang, R"({"tokens":[[1],[2,3]]})");
    CHECK(s.ids_is_list);
    CHECK(s.skip_special.value);  // SGLang skips special tokens by default
    const DetokenizeRequest t =
        decoded_detok(TokenizerDialect::tei, R"({"ids":[1,2],"skip_special_tokens":false})");
    CHECK_FALSE(t.skip_special.value);
    CHECK(t.skip_special.said);
    DetokenizeResult r;
    r.texts = {"<s> Hello world"};
    auto write = [&](TokenizerDialect d, const DetokenizeRequest& req) {
        std::string out;
        tokenizer_codec(d).encode_detokenize_answer(r, req, out);
        return out;
    };
    CHECK(write(TokenizerDialect::vllm, t) == R"({"prompt":"<s> Hello world"})");
    CHECK(write(TokenizerDialect::sglang, t) == R"({"text":"<s> Hello world"})");
    CHECK(write(TokenizerDialect::llamacpp, t) == R"({"content":"<s> Hello world"})");
    CHECK(write(TokenizerDialect::tei, t) == R"(["<s> Hello world"])");
    // The real llama-server's answer.
    auto real = tokenizer_codec(TokenizerDialect::llamacpp)
                    .decode_detokenize_answer(
                        testing::read_fixture("llamacpp/detokenize_real_c392e509.json"), t);
    REQUIRE(real.ok());
    CHECK(real->texts == std::vector<std::string>{"<s> Hello world"});
    // Requests to each backend.
    auto enc = [&](TokenizerDialect d, const DetokenizeRequest& req) {
        return tokenizer_codec(d).encode_detokenize(req, TokenizerOptions{"served", "b"});
    };
    CHECK(enc(TokenizerDialect::tei, s).value() ==
          R"({"ids":[[1],[2,3]],"skip_special_tokens":true})");
    CHECK(enc(TokenizerDialect::sglang, s).value() ==
          R"({"model":"served","tokens":[[1],[2,3]],"skip_special_tokens":true})");
    CHECK(enc(TokenizerDialect::llamacpp, s).error().param == "tokens");  // one list per call
    const DetokenizeRequest skip =
        decoded_detok(TokenizerDialect::sglang, R"({"tokens":[1],"skip_special_tokens":true})");
    CHECK(enc(TokenizerDialect::llamacpp, skip).error().param == "skip_special_tokens");
    CHECK(enc(TokenizerDialect::vllm, skip).error().param == "skip_special_tokens");
    // SGLang's implicit default goes as the backend does it (docs/dialects.md).
    const DetokenizeRequest implicit =
        decoded_detok(TokenizerDialect::sglang, R"({"tokens":[1,2]})");
    CHECK(enc(TokenizerDialect::llamacpp, implicit).value() == R"({"tokens":[1,2]})");
    CHECK_FALSE(tokenizer_codec(TokenizerDialect::tgi).decode_detokenize("{}").ok());
}

TEST_CASE("requests to each tokenizer backend, and what each cannot take") {
    const TokenizeRequest v = decoded(TokenizerDialect::vllm, R"({"prompt":"Hi","model":"m"})");
    CHECK(encoded(TokenizerDialect::llamacpp, v) == R"({"content":"Hi","add_special":true})");
    CHECK(encoded(TokenizerDialect::tgi, v) == R"({"inputs":"Hi","add_special_tokens":true})");
    CHECK(encoded(TokenizerDialect::tei, v) == R"({"inputs":"Hi","add_special_tokens":true})");
    CHECK(encoded(TokenizerDialect::sglang, v) ==
          R"({"model":"served","prompt":"Hi","add_special_tokens":true})");
    const TokenizeRequest l = decoded(TokenizerDialect::llamacpp, R"({"content":"Hi"})");
    // llama.cpp's default (no BOS) is written for a backend whose default differs.
    CHECK(encoded(TokenizerDialect::vllm, l) ==
          R"({"model":"served","prompt":"Hi","add_special_tokens":false})");
    const TokenizeRequest tgi =
        decoded(TokenizerDialect::tgi, R"({"inputs":"Hi","parameters":{"truncate":2}})");
    // TGI and TEI answers carry each token's text: llama.cpp is asked for its pieces.
    CHECK(
        encoded(TokenizerDialect::llamacpp, decoded(TokenizerDialect::tgi, R"({"inputs":"Hi"})")) ==
        R"({"content":"Hi","add_special":true,"with_pieces":true})");
    CHECK(encoded(TokenizerDialect::tgi, tgi) ==
          R"({"inputs":"Hi","add_special_tokens":true,"parameters":{"truncate":2}})");
    CHECK(not_encoded(TokenizerDialect::llamacpp, tgi).param == "parameters.truncate");
    CHECK(not_encoded(TokenizerDialect::tei, tgi).param == "parameters.truncate");
    const TokenizeRequest pieces =
        decoded(TokenizerDialect::llamacpp, R"({"content":"Hi","with_pieces":true})");
    CHECK(not_encoded(TokenizerDialect::vllm, pieces).param == "with_pieces");
    CHECK(not_encoded(TokenizerDialect::tgi, pieces).param == "with_pieces");
    CHECK(not_encoded(TokenizerDialect::tei, pieces).param == "with_pieces");
    const TokenizeRequest strs =
        decoded(TokenizerDialect::vllm, R"({"prompt":"Hi","return_token_strs":true})");
    CHECK(not_encoded(TokenizerDialect::llamacpp, strs).param == "return_token_strs");
    CHECK(not_encoded(TokenizerDialect::sglang, strs).param == "return_token_strs");
    const TokenizeRequest batch = decoded(TokenizerDialect::tei, R"({"inputs":["a","b"]})");
    CHECK(not_encoded(TokenizerDialect::llamacpp, batch).param == "inputs");
    CHECK(not_encoded(TokenizerDialect::vllm, batch).param == "inputs");
    CHECK(encoded(TokenizerDialect::sglang, batch).find(R"("prompt":["a","b"])") !=
          std::string::npos);
    CHECK(not_encoded(TokenizerDialect::llamacpp,
                      decoded(TokenizerDialect::tei, R"({"inputs":"a","prompt_name":"q"})"))
              .param == "prompt_name");
}

TEST_CASE("the real llama-server's tokenize answers, and what each front writes from them") {
    const TokenizeRequest tgi =
        decoded(TokenizerDialect::tgi, R"({"inputs":"Hello world <|im_start|>"})");
    const TokenizeResult pieces =
        answer_of(TokenizerDialect::llamacpp,
                  testing::read_fixture("llamacpp/tokenize_pieces_real_c392e509.json"), tgi);
    REQUIRE(pieces.items.size() == 1);
    REQUIRE(pieces.items[0].size() == 4);
    CHECK(pieces.items[0][0].text == " Hello");
    // TGI: the input's bytes and their offsets. " Hello"'s space is SentencePiece's (not in the
    // input); " world" starts at the space; "<|im_start|>" is in the input text as written.
    CHECK(written(TokenizerDialect::tgi, pieces, tgi) ==
          R"([{"id":15043,"text":"Hello","start":0,"stop":5},)"
          R"({"id":3186,"text":" world","start":5,"stop":11},)"
          R"({"id":29871,"text":" ","start":11,"stop":12},)"
          R"({"id":32001,"text":"<|im_start|>","start":12,"stop":24}])");
    const TokenizeRequest tei = decoded(TokenizerDialect::tei, R"({"inputs":"Hello world"})");
    const TokenizeResult bos =
        answer_of(TokenizerDialect::llamacpp,
                  R"({"tokens":[{"id":1,"piece":"<s>"},{"id":15043,"piece":" Hello"},)"
                  R"({"id":3186,"piece":" world"}]})",
                  tei);
    CHECK(written(TokenizerDialect::tei, bos, tei) ==
          R"([[{"id":1,"text":"<s>","special":true,"start":null,"stop":null},)"
          R"({"id":15043,"text":"Hello","special":false,"start":0,"stop":5},)"
          R"({"id":3186,"text":" world","special":false,"start":5,"stop":11}]])");
    // Byte pieces (a character split over byte tokens), written back as llama.cpp writes them.
    const TokenizeRequest emoji = decoded(TokenizerDialect::llamacpp,
                                          R"({"content":"\u00e9\ud83d\ude00","with_pieces":true})");
    const TokenizeResult bytes = answer_of(
        TokenizerDialect::llamacpp,
        R"({"tokens":[{"id":904,"piece":" é"},{"id":243,"piece":[240]},{"id":162,"piece":[159]},)"
        R"({"id":155,"piece":[152]},{"id":131,"piece":[128]}]})",
        emoji);
    CHECK(bytes.items[0][1].text_bytes);
    CHECK(written(TokenizerDialect::llamacpp, bytes, emoji) ==
          R"({"tokens":[{"id":904,"piece":" é"},{"id":243,"piece":[240]},{"id":162,"piece":[159]},)"
          R"({"id":155,"piece":[152]},{"id":131,"piece":[128]}]})");
    const TokenizeRequest tgi_emoji =
        decoded(TokenizerDialect::tgi, R"({"inputs":"\u00e9\ud83d\ude00"})");
    // Byte offsets, one byte per byte token; each byte's text as Rust's from_utf8_lossy makes
    // it (U+FFFD), as TGI writes it.
    CHECK(written(TokenizerDialect::tgi, bytes, tgi_emoji) ==
          "[{\"id\":904,\"text\":\"\xc3\xa9\",\"start\":0,\"stop\":2},"
          "{\"id\":243,\"text\":\"\xef\xbf\xbd\",\"start\":2,\"stop\":3},"
          "{\"id\":162,\"text\":\"\xef\xbf\xbd\",\"start\":3,\"stop\":4},"
          "{\"id\":155,\"text\":\"\xef\xbf\xbd\",\"start\":4,\"stop\":5},"
          "{\"id\":131,\"text\":\"\xef\xbf\xbd\",\"start\":5,\"stop\":6}]");
    // Ids only.
    const TokenizeRequest v = decoded(TokenizerDialect::vllm, R"({"prompt":"Hello world"})");
    const TokenizeResult ids =
        answer_of(TokenizerDialect::llamacpp,
                  testing::read_fixture("llamacpp/tokenize_real_c392e509.json"), v);
    CHECK(written(TokenizerDialect::vllm, ids, v) ==
          R"({"count":3,"max_model_len":4096,"tokens":[1,15043,3186],"token_strs":null})");
    CHECK(written(TokenizerDialect::vllm, ids, v, std::nullopt) ==
          R"({"count":3,"tokens":[1,15043,3186],"token_strs":null})");
    CHECK(written(TokenizerDialect::sglang, ids, v) ==
          R"({"tokens":[1,15043,3186],"count":3,"max_model_len":4096})");
    CHECK(written(TokenizerDialect::llamacpp, ids, decoded(TokenizerDialect::llamacpp, "{}")) ==
          R"({"tokens":[1,15043,3186]})");
    // A backend that answers ids only: TGI's own fallback shape (no text, no offsets).
    CHECK(written(TokenizerDialect::tgi, ids, tgi) ==
          R"([{"id":1,"text":"","start":0,"stop":0},{"id":15043,"text":"","start":0,"stop":0},)"
          R"({"id":3186,"text":"","start":0,"stop":0}])");
}

TEST_CASE("a TEI answer's special tokens (no offsets) are placed for a TGI client") {
    const TokenizeRequest tgi =
        decoded(TokenizerDialect::tgi, R"({"inputs":"hi <|im_start|>user"})");
    const TokenizeResult r =
        answer_of(TokenizerDialect::tei,
                  R"([[{"id":1,"text":"<s>","special":true,"start":null,"stop":null},)"
                  R"({"id":7,"text":"hi ","special":false,"start":0,"stop":3},)"
                  R"({"id":3,"text":"<|im_start|>","special":true,"start":null,"stop":null},)"
                  R"({"id":9,"text":"user","special":false,"start":15,"stop":19}]])",
                  tgi);
    CHECK(written(TokenizerDialect::tgi, r, tgi) ==
          R"([{"id":1,"text":"","start":0,"stop":0},{"id":7,"text":"hi ","start":0,"stop":3},)"
          R"({"id":3,"text":"<|im_start|>","start":3,"stop":15},)"
          R"({"id":9,"text":"user","start":15,"stop":19}])");
    // And kept special for a TEI client.
    const TokenizeRequest tei =
        decoded(TokenizerDialect::tei, R"({"inputs":"hi <|im_start|>user"})");
    CHECK(written(TokenizerDialect::tei, r, tei)
              .find(R"({"id":3,"text":"<|im_start|>","special":true,"start":null,"stop":null})") !=
          std::string::npos);
}

TEST_CASE("TGI's, TEI's, vLLM's and SGLang's answers decode in every JSON style") {
    const TokenizeRequest req = decoded(TokenizerDialect::tei, R"({"inputs":"hello world"})");
    for (const auto& [style, body] : styles(testing::read_fixture("tei/tokenize_response.json"))) {
        CAPTURE(style);
        const TokenizeResult r = answer_of(TokenizerDialect::tei, body, req);
        REQUIRE(r.items.size() == 1);
        CHECK(r.items[0].size() == 4);
        CHECK(r.items[0][0].special == true);
        CHECK(r.items[0][2].start == 5);
        const std::string fixture = testing::read_fixture("tei/tokenize_response.json");
        CHECK(written(TokenizerDialect::tei, r, req) + "\n" == fixture);
    }
    const TokenizeRequest tgi = decoded(TokenizerDialect::tgi, R"({"inputs":"Hello world"})");
    for (const auto& [style, body] : styles(testing::read_fixture("tgi/tokenize_response.json"))) {
        CAPTURE(style);
        const TokenizeResult r = answer_of(TokenizerDialect::tgi, body, tgi);
        CHECK(r.items[0].size() == 3);
        CHECK(written(TokenizerDialect::tgi, r, tgi) + "\n" ==
              testing::read_fixture("tgi/tokenize_response.json"));
    }
    const TokenizeRequest v = decoded(TokenizerDialect::vllm, R"({"prompt":"x"})");
    for (
        const auto& [style, body] : styles(
            R"({"count":2,"max_model_len":8192,"tokens":[9906,1917],"token_strs":["Hello","Ġworld"]})")) {
        CAPTURE(style);
        const TokenizeResult r = answer_of(TokenizerDialect::vllm, body, v);
        CHECK(r.max_model_len == 8192);
        CHECK(r.items[0][1].token_str == "\xc4\xa0world");
    }
    const TokenizeRequest s = decoded(TokenizerDialect::sglang, R"({"prompt":["a","b"]})");
    const TokenizeResult sr =
        answer_of(TokenizerDialect::sglang,
                  R"({"tokens":[[1,2],[3]],"count":[2,1],"max_model_len":4096})", s);
    CHECK(sr.items.size() == 2);
    CHECK(written(TokenizerDialect::sglang, sr, s) ==
          R"({"tokens":[[1,2],[3]],"count":[2,1],"max_model_len":4096})");
    for (std::string_view bad : {R"({"tokens":"x"})", R"([1])", R"({"tokens":[[1],"x"]})"}) {
        CAPTURE(bad);
        auto r = tokenizer_codec(TokenizerDialect::sglang).decode_tokenize_answer(bad, s);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 502);
    }
}

TEST_CASE("the plan: the backend's own tokenizer, translated, or a 404 naming what has one") {
    using infergate::translators::plan_tokenizer;
    const TokenizeRequest v = decoded(TokenizerDialect::vllm, R"({"prompt":"x"})");
    auto plan = [&](TokenizerDialect front, BackendDialect b, Flavor f, bool detok = false) {
        return plan_tokenizer(front, detok, &v, nullptr, BackendFacts{b, f, "h"},
                              "the backend 'x' (E)");
    };
    auto p = plan(TokenizerDialect::vllm, BackendDialect::openai, Flavor::vllm);
    CHECK(p.fast_path);
    CHECK(p.back == TokenizerDialect::vllm);
    p = plan(TokenizerDialect::vllm, BackendDialect::llamacpp, Flavor::generic);
    CHECK_FALSE(p.fast_path);
    CHECK(p.back == TokenizerDialect::llamacpp);
    p = plan(TokenizerDialect::tgi, BackendDialect::sglang, Flavor::sglang);
    CHECK(p.back == TokenizerDialect::sglang);
    p = plan(TokenizerDialect::tei, BackendDialect::tei, Flavor::generic, true);
    CHECK(p.fast_path);
    for (const auto& [b, f] : std::vector<std::pair<BackendDialect, Flavor>>{
             {BackendDialect::ollama, Flavor::generic},
             {BackendDialect::anthropic, Flavor::generic},
             {BackendDialect::vllm_legacy, Flavor::generic},
             {BackendDialect::openai, Flavor::generic},
             {BackendDialect::openai, Flavor::openai}}) {
        p = plan(TokenizerDialect::vllm, b, f);
        REQUIRE(p.refusal);
        CHECK(p.refusal->status == 404);
        CHECK(p.refusal->message ==
              "the backend 'x' (E) has no tokenize endpoint; point tokenize requests at a vLLM, "
              "SGLang, llama.cpp, TGI or TEI backend");
    }
    p = plan(TokenizerDialect::vllm, BackendDialect::tgi, Flavor::generic, true);
    REQUIRE(p.refusal);
    CHECK(p.refusal->message.find("has no detokenize endpoint") != std::string::npos);
    const TokenizeRequest chat =
        decoded(TokenizerDialect::vllm, R"({"messages":[{"role":"user","content":"x"}]})");
    p = plan_tokenizer(TokenizerDialect::vllm, false, &chat, nullptr,
                       BackendFacts{BackendDialect::llamacpp, Flavor::generic, "h"}, "b");
    REQUIRE(p.refusal);
    CHECK(p.refusal->param == "messages");
}

TEST_CASE("apply-template: llama.cpp's own, TGI's /chat_tokenize, or none") {
    using infergate::translators::template_answer;
    using infergate::translators::template_call;
    const std::string body = R"({"messages":[{"role":"user","content":"Hi"}]})";
    auto c = template_call(body, BackendDialect::llamacpp, "m", "b");
    REQUIRE(c.ok());
    REQUIRE(c.value());
    CHECK(c.value()->fast_path);
    CHECK(c.value()->path == "/apply-template");
    CHECK(c.value()->body == body);
    c = template_call(body, BackendDialect::tgi, "served", "b");
    REQUIRE(c.value());
    CHECK(c.value()->path == "/chat_tokenize");
    CHECK(c.value()->body == R"({"model":"served","messages":[{"role":"user","content":"Hi"}]})");
    CHECK_FALSE(template_call(body, BackendDialect::ollama, "m", "b").value());
    auto tools = template_call(R"({"messages":[],"tools":[{"type":"function"}]})",
                               BackendDialect::tgi, "m", "the backend");
    REQUIRE_FALSE(tools.ok());
    CHECK(tools.error().param == "tools");
    CHECK(template_call(R"({"prompt":"x"})", BackendDialect::llamacpp, "m", "b").error().param ==
          "messages");
    auto a = template_answer(
        R"({"tokenize_response":[{"id":1,"text":"","start":0,"stop":0}],)"
        R"("templated_text":"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"})",
        BackendDialect::tgi);
    REQUIRE(a.ok());
    CHECK(a.value() == R"({"prompt":"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"})");
    CHECK_FALSE(template_answer("{}", BackendDialect::tgi).ok());
    CHECK(infergate::translators::template_model(R"({"messages":[],"model":"x"})").value() == "x");
}
