// The embeddings codecs (translators/embedding.hpp, each API's embedding.cpp): every front's
// request decoded in every JSON style, every backend's answer decoded in every style (numbers as
// the servers print them: 1e-3, -0.0, integers, 17 digits), the exact bytes each side writes,
// base64, the plan of every front x backend pair and each refusal.
#include "translators/embedding.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <string>

#include "tests/support/fixtures.hpp"
#include "tests/translators/embedding/test_util.hpp"
#include "translators/canonical/json.hpp"

using infergate::canonical::EmbedDialect;
using infergate::canonical::EmbeddingRequest;
using infergate::canonical::EmbeddingResult;
using infergate::translators::BackendDialect;
using infergate::translators::BackendFacts;
using infergate::translators::embed_codec;
using infergate::translators::EmbedOptions;
using infergate::translators::Flavor;
using infergate::translators::plan_embeddings;
namespace canonical = infergate::canonical;
namespace testing = infergate::testing;
using embed_test::Headers;
using embed_test::no_headers;
using embed_test::styles;

namespace {

EmbeddingRequest decoded(EmbedDialect d, std::string_view body) {
    auto r = embed_codec(d).decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message) << " for " << body);
    return r.value();
}

canonical::Error refused(EmbedDialect d, std::string_view body) {
    auto r = embed_codec(d).decode_request(body);
    REQUIRE_MESSAGE(!r.ok(), "decoded: " << body);
    return r.error();
}

std::string encoded(EmbedDialect back, const EmbeddingRequest& req,
                    Flavor flavor = Flavor::generic) {
    auto r = embed_codec(back).encode_request(req, EmbedOptions{"served", flavor, "the backend"});
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    return r.value();
}

canonical::Error not_encoded(EmbedDialect back, const EmbeddingRequest& req,
                             Flavor flavor = Flavor::generic) {
    auto r = embed_codec(back).encode_request(req, EmbedOptions{"served", flavor, "the backend"});
    REQUIRE_MESSAGE(!r.ok(), "encoded: " << (r.ok() ? r.value() : std::string()));
    return r.error();
}

std::string answer(EmbedDialect front, const EmbeddingResult& result, const EmbeddingRequest& req) {
    std::string out;
    canonical::Timing t;
    t.total_ns = 1500;
    embed_codec(front).encode_response(result, req, infergate::translators::EmbedAnswer{"alias", t},
                                       out);
    return out;
}

double f32(double v) {
    return static_cast<double>(static_cast<float>(v));
}

EmbeddingResult two_vectors() {
    EmbeddingResult r;
    r.vectors = {{0.5, -0.25, 1.0}, {f32(0.1), -0.0, 3e-5}};
    r.prompt_tokens = 7;
    return r;
}

}  // namespace

TEST_CASE("numbers are written in their shortest exact form, always as floats") {
    std::string s;
    CHECK(canonical::append_number(s, 0.5));
    CHECK(s == "0.5");
    for (const auto& [v, text] :
         std::vector<std::pair<double, std::string>>{{1.0, "1.0"},
                                                     {-0.0, "-0.0"},
                                                     {0.0, "0.0"},
                                                     {0.1, "0.1"},
                                                     {f32(0.1), "0.10000000149011612"},
                                                     {-0.16822810471057892, "-0.16822810471057892"},
                                                     {1e-5, "1e-05"},
                                                     {1e300, "1e+300"},
                                                     {3.0, "3.0"}}) {
        s.clear();
        CHECK(canonical::append_number(s, v));
        CHECK(s == text);
        // Reads back as the same double.
        CHECK(std::bit_cast<uint64_t>(std::stod(s)) == std::bit_cast<uint64_t>(v));
    }
    s.clear();
    CHECK_FALSE(canonical::append_number(s, std::nan("")));
    CHECK_FALSE(canonical::append_number(s, INFINITY));
    CHECK(s.empty());
}

TEST_CASE("base64 is little-endian float32, standard alphabet, padded") {
    std::string s;
    canonical::append_base64_floats(s, {1.0, -2.5});
    CHECK(s == "AACAPwAAIMA=");  // Python: base64.b64encode(struct.pack('<2f', 1.0, -2.5))
    s.clear();
    canonical::append_base64_floats(s, {0.1, -0.0, 3.4028234663852886e38});
    CHECK(s == "zczMPQAAAID//39/");
    std::vector<double> back;
    REQUIRE(canonical::read_base64_floats(s, back));
    CHECK(back == std::vector<double>{f32(0.1), -0.0, 3.4028234663852886e38});
    CHECK(std::signbit(back[1]));
    s.clear();
    canonical::append_base64_floats(s, {});
    CHECK(s.empty());
    for (std::string_view bad : {"AACAPwAAIMA", "AACAPw=AIMA=", "AACA", "AACAPwAAIM!=", "AA=A"}) {
        CHECK_FALSE(canonical::read_base64_floats(bad, back));
    }
}

TEST_CASE("the real llama-server's base64 and float answers hold the same vectors") {
    const std::string floats = testing::read_fixture("llamacpp/v1_embeddings_real_c392e509.json");
    const std::string b64 =
        testing::read_fixture("llamacpp/v1_embeddings_base64_real_c392e509.json");
    const auto& codec = embed_codec(EmbedDialect::openai);
    auto a = codec.decode_response(floats, no_headers());
    auto b = codec.decode_response(b64, no_headers());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->vectors.size() == 2);
    CHECK(a->vectors[0].size() == 128);
    CHECK(a->vectors == b->vectors);
    CHECK(a->prompt_tokens == 4);
    // And the same bytes again when written as base64.
    EmbeddingRequest req;
    req.base64 = true;
    req.inputs.resize(2);
    const std::string out = answer(EmbedDialect::openai, a.value(), req);
    infergate::json::Document doc;
    REQUIRE_FALSE(infergate::json::parse(b64, doc, "x"));
    CHECK(out.find(std::string(infergate::json::view(doc["data"][0]["embedding"]))) !=
          std::string::npos);
}

TEST_CASE("OpenAI /v1/embeddings requests: every input shape, in every JSON style") {
    struct Case {
        std::string body;
        size_t inputs;
        bool list;
        bool tokens;
    };
    const std::vector<Case> cases = {
        {R"({"model":"m","input":"hello world"})", 1, false, false},
        {R"({"model":"m","input":["a","b\u00e9\n"],"encoding_format":"float"})", 2, true, false},
        {R"({"model":"m","input":[1,2,3]})", 1, false, true},
        {R"({"model":"m","input":[[1,2],[3]],"encoding_format":"base64","dimensions":64})", 2, true,
         true},
    };
    for (const Case& c : cases) {
        for (const auto& [style, body] : styles(c.body)) {
            CAPTURE(style);
            const EmbeddingRequest r = decoded(EmbedDialect::openai, body);
            CHECK(r.model == "m");
            CHECK(r.inputs.size() == c.inputs);
            CHECK(r.input_is_list == c.list);
            CHECK(r.inputs[0].is_tokens == c.tokens);
            CHECK(r.truncate.has_value());
            CHECK_FALSE(r.truncate->value);
        }
    }
    const EmbeddingRequest r =
        decoded(EmbedDialect::openai,
                R"({"model":"m","input":["a","b\u00e9\n"],"encoding_format":"base64",
                    "dimensions":64,"user":"u1","truncate_prompt_tokens":8})");
    CHECK(r.inputs[1].text == "b\xc3\xa9\n");
    CHECK(r.base64);
    CHECK(r.dimensions == 64);
    REQUIRE(r.extras.size() == 2);
    CHECK(r.extras[0].key == "user");
    CHECK(r.extras[0].inert);
    CHECK(r.extras[1].key == "truncate_prompt_tokens");
    CHECK_FALSE(r.extras[1].inert);
    const EmbeddingRequest t = decoded(EmbedDialect::openai, R"({"input":[[1,2],[3]]})");
    CHECK(t.inputs[1].token_ids == std::vector<int64_t>{3});
}

TEST_CASE("OpenAI /v1/embeddings requests: each error names its field") {
    for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
             {R"({"model":"m"})", "input"},
             {R"({"input":[]})", "input"},
             {R"({"input":{"a":1}})", "input"},
             {R"({"input":["a",1]})", "input"},
             {R"({"input":[[1],"a"]})", "input"},
             {R"({"input":[-1]})", "input"},
             {R"({"input":"a","encoding_format":"bytes"})", "encoding_format"},
             {R"({"input":"a","dimensions":0})", "dimensions"},
             {R"({"input":"a","dimensions":"8"})", "dimensions"},
             {R"({"input":"a","model":7})", "model"}}) {
        CAPTURE(body);
        const canonical::Error e = refused(EmbedDialect::openai, body);
        CHECK(e.status == 400);
        CHECK(e.param == param);
    }
    CHECK(refused(EmbedDialect::openai, "[1]").status == 400);
    CHECK(refused(EmbedDialect::openai, R"({"input":)").status == 400);
}

TEST_CASE("Ollama /api/embed and /api/embeddings requests") {
    for (const auto& [style, body] :
         styles(R"({"model":"all-minilm","input":["why","sky"],"truncate":false,
                    "dimensions":32,"keep_alive":"5m","options":{"num_ctx":512}})")) {
        CAPTURE(style);
        const EmbeddingRequest r = decoded(EmbedDialect::ollama, body);
        CHECK(r.model == "all-minilm");
        CHECK(r.inputs.size() == 2);
        REQUIRE(r.truncate);
        CHECK_FALSE(r.truncate->value);
        CHECK(r.truncate->said);
        CHECK(r.dimensions == 32);
        CHECK(r.extras.size() == 2);
        for (const auto& e : r.extras) {
            CHECK(e.inert);
        }
    }
    // Ollama truncates unless told not to; an empty string or list embeds nothing.
    EmbeddingRequest r = decoded(EmbedDialect::ollama, R"({"model":"m","input":"x"})");
    CHECK(r.truncate->value);
    CHECK_FALSE(r.truncate->said);
    CHECK(decoded(EmbedDialect::ollama, R"({"model":"m","input":""})").inputs.empty());
    CHECK(decoded(EmbedDialect::ollama, R"({"model":"m","input":[]})").inputs.empty());
    CHECK(decoded(EmbedDialect::ollama, R"({"model":"m"})").inputs.empty());
    CHECK(decoded(EmbedDialect::ollama, R"({"model":"m","input":"x","dimensions":0})").dimensions ==
          std::nullopt);
    CHECK(refused(EmbedDialect::ollama, R"({"model":"m","input":[1,2]})").param == "input");
    CHECK(refused(EmbedDialect::ollama, R"({"model":"m","input":5})").param == "input");
    CHECK(refused(EmbedDialect::ollama, R"({"model":"m","input":"x","truncate":"no"})").param ==
          "truncate");

    for (const auto& [style, body] : styles(R"({"model":"m","prompt":"hi there"})")) {
        CAPTURE(style);
        const EmbeddingRequest l = decoded(EmbedDialect::ollama_legacy, body);
        REQUIRE(l.inputs.size() == 1);
        CHECK(l.inputs[0].text == "hi there");
        // The vector as the model made it: not normalised.
        REQUIRE(l.normalize);
        CHECK_FALSE(l.normalize->value);
        CHECK_FALSE(l.normalize->said);
    }
    CHECK(decoded(EmbedDialect::ollama_legacy, R"({"model":"m","prompt":""})").inputs.empty());
    CHECK(refused(EmbedDialect::ollama_legacy, R"({"model":"m","prompt":["a"]})").param ==
          "prompt");
}

TEST_CASE("TEI /embed requests") {
    for (const auto& [style, body] :
         styles(R"({"inputs":["a",[101,7592,102]],"normalize":false,"truncate":true,
                    "truncation_direction":"Left","prompt_name":"query","dimensions":128})")) {
        CAPTURE(style);
        const EmbeddingRequest r = decoded(EmbedDialect::tei, body);
        REQUIRE(r.inputs.size() == 2);
        CHECK_FALSE(r.inputs[0].is_tokens);
        CHECK(r.inputs[1].token_ids == std::vector<int64_t>{101, 7592, 102});
        CHECK(r.normalize->said);
        CHECK_FALSE(r.normalize->value);
        CHECK(r.truncate->value);
        CHECK(r.truncation_direction == "left");
        CHECK(r.prompt_name == "query");
        CHECK(r.dimensions == 128);
    }
    const EmbeddingRequest one = decoded(EmbedDialect::tei, R"({"inputs":[5,6]})");
    CHECK_FALSE(one.input_is_list);
    CHECK(one.inputs[0].is_tokens);
    CHECK_FALSE(one.normalize.has_value());  // TEI's default, which every backend shares
    CHECK(refused(EmbedDialect::tei, R"({"inputs":"a","truncation_direction":"up"})").param ==
          "truncation_direction");
    CHECK(refused(EmbedDialect::tei, R"({"input":"a"})").param == "inputs");
}

TEST_CASE("llama.cpp /embedding requests: input or content, every shape llama-server reads") {
    for (const auto& [style, body] :
         styles(R"({"content":["a",[1,2]],"encoding_format":"float"})")) {
        CAPTURE(style);
        const EmbeddingRequest r = decoded(EmbedDialect::llamacpp, body);
        CHECK(r.input_name == "content");
        REQUIRE(r.inputs.size() == 2);
        CHECK(r.inputs[1].is_tokens);
    }
    EmbeddingRequest r = decoded(EmbedDialect::llamacpp, R"({"input":"x","content":"y"})");
    CHECK(r.inputs[0].text == "x");  // input first, as llama-server
    r = decoded(EmbedDialect::llamacpp, R"({"content":[12,"text",34]})");
    CHECK(r.mixed);
    CHECK(r.raw_input == R"([12,"text",34])");
    r = decoded(EmbedDialect::llamacpp, R"({"content":[[12,"t"],[3]]})");
    CHECK(r.mixed);
    r = decoded(EmbedDialect::llamacpp, R"({"content":"x","embd_normalize":-1})");
    CHECK_FALSE(r.normalize->value);
    r = decoded(EmbedDialect::llamacpp, R"({"content":"x","embd_normalize":1})");
    REQUIRE(r.extras.size() == 1);
    CHECK_FALSE(r.extras[0].inert);
    CHECK(refused(EmbedDialect::llamacpp, R"({"text":"x"})").message ==
          R"("input" or "content" must be provided)");
    CHECK(refused(EmbedDialect::llamacpp, R"({"content":[]})").message ==
          "Input content cannot be empty");
    CHECK(refused(EmbedDialect::llamacpp, R"({"content":"x","encoding_format":"f16"})").param ==
          "encoding_format");
}

TEST_CASE("backend answers decode in every JSON style, with every number form") {
    struct Case {
        EmbedDialect back;
        std::string fixture;
        size_t vectors;
        std::optional<int64_t> tokens;
    };
    Headers tei_headers;
    tei_headers.values["x-compute-tokens"] = "11";
    for (const Case& c : std::vector<Case>{
             {EmbedDialect::openai, "openai/embeddings_vllm.json", 2, 9},
             {EmbedDialect::openai, "openai/embeddings_openai_base64.json", 1, 2},
             {EmbedDialect::openai, "llamacpp/v1_embeddings_real_c392e509.json", 2, 4},
             {EmbedDialect::ollama, "ollama/embed_response.json", 2, 8},
             {EmbedDialect::ollama_legacy, "ollama/embeddings_response.json", 1, std::nullopt},
             {EmbedDialect::tei, "tei/embed_response.json", 2, 11},
             {EmbedDialect::llamacpp, "llamacpp/embedding_real_c392e509.json", 2, std::nullopt}}) {
        CAPTURE(c.fixture);
        const std::string text = testing::read_fixture(c.fixture);
        REQUIRE_FALSE(text.empty());
        const auto& codec = embed_codec(c.back);
        std::optional<EmbeddingResult> first;
        for (const auto& [style, body] : styles(text)) {
            CAPTURE(style);
            auto r = codec.decode_response(body, tei_headers);
            REQUIRE_MESSAGE(r.ok(), r.error().message);
            CHECK(r->vectors.size() == c.vectors);
            CHECK(r->prompt_tokens == c.tokens);
            if (!first) {
                first = r.value();
            }
            // Bit for bit, whatever the layout (-0.0 keeps its sign).
            for (size_t i = 0; i < r->vectors.size(); ++i) {
                REQUIRE(r->vectors[i].size() == first->vectors[i].size());
                for (size_t k = 0; k < r->vectors[i].size(); ++k) {
                    CHECK(std::bit_cast<uint64_t>(r->vectors[i][k]) ==
                          std::bit_cast<uint64_t>(first->vectors[i][k]));
                }
            }
            auto checked = codec.check_response(body, tei_headers);
            REQUIRE(checked.ok());
            CHECK(checked.value() == c.tokens);
        }
    }
    // vLLM's sample: 1e-3, -0.0, integers where floats are expected, 2.5E-2.
    auto v =
        embed_codec(EmbedDialect::openai)
            .decode_response(testing::read_fixture("openai/embeddings_vllm.json"), no_headers());
    REQUIRE(v.ok());
    CHECK(v->vectors[0] == std::vector<double>{0.0123, -0.0456, 0.001, -0.0, 0.0, 1.0, 0.025});
    CHECK(std::signbit(v->vectors[0][3]));
    CHECK(v->vectors[1][5] == 1e-6);
}

TEST_CASE("OpenAI answers are placed by index, out of order or not") {
    auto r = embed_codec(EmbedDialect::openai)
                 .decode_response(R"({"data":[{"index":1,"embedding":[2]},
                                              {"embedding":[1],"index":0}]})",
                                  no_headers());
    REQUIRE(r.ok());
    CHECK(r->vectors == std::vector<std::vector<double>>{{1.0}, {2.0}});
    CHECK_FALSE(r->prompt_tokens);
    for (std::string_view bad :
         {R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]})",
          R"({"data":[{"index":5,"embedding":[1]}]})", R"({"data":[{"embedding":"!!"}]})",
          R"({"data":[{"embedding":["a"]}]})", R"({"object":"list"})", R"([1])", R"({"data":[)"}) {
        CAPTURE(bad);
        auto e = embed_codec(EmbedDialect::openai).decode_response(bad, no_headers());
        REQUIRE_FALSE(e.ok());
        CHECK(e.error().status == 502);
    }
    CHECK_FALSE(embed_codec(EmbedDialect::tei).check_response("[[1,2]", no_headers()).ok());
    CHECK_FALSE(embed_codec(EmbedDialect::tei).check_response("{}", no_headers()).ok());
    CHECK_FALSE(embed_codec(EmbedDialect::openai).check_response("[]", no_headers()).ok());
    CHECK_FALSE(embed_codec(EmbedDialect::openai)
                    .check_response(R"({"object":"error","message":"x"})", no_headers())
                    .ok());
    CHECK_FALSE(embed_codec(EmbedDialect::ollama)
                    .check_response(R"({"embeddings":{}})", no_headers())
                    .ok());
    CHECK_FALSE(embed_codec(EmbedDialect::ollama_legacy)
                    .check_response(R"({"error":"x"})", no_headers())
                    .ok());
    CHECK(embed_codec(EmbedDialect::llamacpp)
              .decode_response(R"({"embedding":[0.5,0.25]})", no_headers())
              ->vectors[0] == std::vector<double>{0.5, 0.25});  // before 2025
    auto per_token =
        embed_codec(EmbedDialect::llamacpp)
            .decode_response(R"([{"index":0,"embedding":[[1,2],[3,4]]}])", no_headers());
    REQUIRE_FALSE(per_token.ok());
    CHECK(per_token.error().message.find("pooling") != std::string::npos);
}

TEST_CASE("each front writes its server's answer") {
    EmbeddingRequest req;
    req.inputs.resize(2);
    const EmbeddingResult r = two_vectors();
    CHECK(
        answer(EmbedDialect::openai, r, req) ==
        R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25,1.0]},)"
        R"({"object":"embedding","index":1,"embedding":[0.10000000149011612,-0.0,3e-05]}],)"
        R"("model":"alias","usage":{"prompt_tokens":7,"total_tokens":7}})");
    req.base64 = true;
    CHECK(answer(EmbedDialect::openai, r, req).find(R"("embedding":"AAAAPwAAgL4AAIA/")") !=
          std::string::npos);
    CHECK(answer(EmbedDialect::ollama, r, req) ==
          R"({"model":"alias","embeddings":[[0.5,-0.25,1.0],[0.10000000149011612,-0.0,3e-05]],)"
          R"("total_duration":1500,"prompt_eval_count":7})");
    CHECK(answer(EmbedDialect::ollama_legacy, r, req) == R"({"embedding":[0.5,-0.25,1.0]})");
    CHECK(answer(EmbedDialect::tei, r, req) ==
          R"([[0.5,-0.25,1.0],[0.10000000149011612,-0.0,3e-05]])");
    CHECK(answer(EmbedDialect::llamacpp, r, req) ==
          R"([{"index":0,"embedding":[[0.5,-0.25,1.0]]},)"
          R"({"index":1,"embedding":[[0.10000000149011612,-0.0,3e-05]]}])");
    // Without a count: no usage (OpenAI), no prompt_eval_count (Ollama omits zeros).
    EmbeddingResult no_count = r;
    no_count.prompt_tokens.reset();
    CHECK(answer(EmbedDialect::openai, no_count, req).find("usage") == std::string::npos);
    CHECK(answer(EmbedDialect::ollama, no_count, req).find("prompt_eval_count") ==
          std::string::npos);
    // TEI writes its counts in headers.
    infergate::translators::HeaderList headers;
    req.inputs = {canonical::Prompt{"h\xc3\xa9llo", {}, false},
                  canonical::Prompt{"", {1, 2}, true}};
    embed_codec(EmbedDialect::tei).answer_headers(req, 7, headers);
    REQUIRE(headers.size() == 2);
    CHECK(headers[0].second == "7");  // 5 characters + 2 ids
    CHECK(headers[1].first == "x-compute-tokens");
    CHECK(headers[1].second == "7");
}

TEST_CASE("requests to each backend API, from another client's request") {
    const EmbeddingRequest tei =
        decoded(EmbedDialect::tei,
                R"({"inputs":["a","b"],"normalize":true,"dimensions":8,"truncate":false})");
    CHECK(encoded(EmbedDialect::openai, tei) ==
          R"({"model":"served","input":["a","b"],"encoding_format":"float","dimensions":8})");
    CHECK(encoded(EmbedDialect::ollama, tei) ==
          R"({"model":"served","input":["a","b"],"truncate":false,"dimensions":8})");
    CHECK(encoded(EmbedDialect::tei, tei) ==
          R"({"inputs":["a","b"],"normalize":true,"truncate":false,"dimensions":8})");

    const EmbeddingRequest openai = decoded(
        EmbedDialect::openai, R"({"model":"m","input":[[1,2]],"encoding_format":"base64"})");
    CHECK(encoded(EmbedDialect::openai, openai, Flavor::llamacpp) ==
          R"({"model":"served","input":[[1,2]],"encoding_format":"base64"})");
    CHECK(encoded(EmbedDialect::tei, openai) == R"({"inputs":[[1,2]],"truncate":false})");
    CHECK(not_encoded(EmbedDialect::ollama, openai).param == "input");  // Ollama: text only

    const EmbeddingRequest ollama = decoded(EmbedDialect::ollama, R"({"model":"m","input":"x"})");
    // Ollama's default (truncate) is written where the backend has the switch.
    CHECK(encoded(EmbedDialect::tei, ollama) == R"({"inputs":"x","truncate":true})");
    CHECK(encoded(EmbedDialect::openai, ollama) ==
          R"({"model":"served","input":"x","encoding_format":"float"})");

    const EmbeddingRequest legacy =
        decoded(EmbedDialect::ollama_legacy, R"({"model":"m","prompt":"x"})");
    // Not normalised: TEI and vLLM have the switch.
    CHECK(encoded(EmbedDialect::tei, legacy) ==
          R"({"inputs":"x","normalize":false,"truncate":false})");
    CHECK(encoded(EmbedDialect::openai, legacy, Flavor::vllm) ==
          R"({"model":"served","input":"x","encoding_format":"float","normalize":false})");
    CHECK(encoded(EmbedDialect::ollama_legacy, legacy) == R"({"model":"served","prompt":"x"})");

    const EmbeddingRequest llama = decoded(EmbedDialect::llamacpp, R"({"content":[12,"text",34]})");
    CHECK(encoded(EmbedDialect::llamacpp, llama) == R"({"content":[12,"text",34]})");
    CHECK(not_encoded(EmbedDialect::openai, llama).param == "content");
    CHECK(not_encoded(EmbedDialect::tei, llama).param == "content");
    CHECK(not_encoded(EmbedDialect::ollama, llama).param == "content");
}

TEST_CASE("a setting a backend cannot honour is refused, naming it") {
    auto tei = [](std::string_view body) { return decoded(EmbedDialect::tei, body); };
    CHECK(
        not_encoded(EmbedDialect::openai, tei(R"({"inputs":"a","dimensions":8})"), Flavor::llamacpp)
            .param == "dimensions");
    CHECK(not_encoded(EmbedDialect::openai, tei(R"({"inputs":"a","normalize":false})")).param ==
          "normalize");
    CHECK(encoded(EmbedDialect::openai, tei(R"({"inputs":"a","normalize":false})"), Flavor::vllm)
              .find(R"("normalize":false)") != std::string::npos);
    CHECK(not_encoded(EmbedDialect::ollama, tei(R"({"inputs":"a","normalize":false})")).param ==
          "normalize");
    CHECK(not_encoded(EmbedDialect::openai, tei(R"({"inputs":"a","truncate":true})")).param ==
          "truncate");
    // vLLM truncates from the left: a client that asks for that gets it.
    CHECK(not_encoded(EmbedDialect::openai, tei(R"({"inputs":"a","truncate":true})"), Flavor::vllm)
              .param == "truncate");
    CHECK(encoded(EmbedDialect::openai,
                  tei(R"({"inputs":"a","truncate":true,"truncation_direction":"left"})"),
                  Flavor::vllm)
              .find(R"("truncate_prompt_tokens":-1)") != std::string::npos);
    CHECK(not_encoded(EmbedDialect::ollama,
                      tei(R"({"inputs":"a","truncate":true,"truncation_direction":"left"})"))
              .param == "truncation_direction");
    CHECK(not_encoded(EmbedDialect::openai, tei(R"({"inputs":"a","prompt_name":"q"})")).param ==
          "prompt_name");
    CHECK(not_encoded(EmbedDialect::ollama, tei(R"({"inputs":"a","prompt_name":"q"})")).param ==
          "prompt_name");
    CHECK(not_encoded(EmbedDialect::openai, tei(R"({"inputs":["a",[1]]})")).param == "inputs");
    // An OpenAI client's vLLM-only key goes nowhere else.
    const EmbeddingRequest vllm_key =
        decoded(EmbedDialect::openai, R"({"model":"m","input":"a","truncate_prompt_tokens":8})");
    const canonical::Error e = not_encoded(EmbedDialect::tei, vllm_key);
    CHECK(e.param == "truncate_prompt_tokens");
    CHECK(e.status == 400);
    CHECK(e.message.find("the backend") != std::string::npos);
    // Inert keys go without a word.
    CHECK(encoded(EmbedDialect::tei,
                  decoded(EmbedDialect::openai, R"({"model":"m","input":"a","user":"u"})")) ==
          R"({"inputs":"a","truncate":false})");
}

TEST_CASE("the plan of every front x backend pair") {
    const std::vector<EmbedDialect> fronts = {EmbedDialect::openai, EmbedDialect::ollama,
                                              EmbedDialect::ollama_legacy, EmbedDialect::tei,
                                              EmbedDialect::llamacpp};
    EmbeddingRequest req;
    req.inputs.resize(1);
    for (const EmbedDialect front : fronts) {
        CAPTURE(canonical::to_string(front));
        auto plan = [&](BackendDialect b, Flavor f = Flavor::generic) {
            return plan_embeddings(front, req, BackendFacts{b, f, "h"}, "the backend 'x' (y)");
        };
        auto p = plan(BackendDialect::openai, Flavor::vllm);
        CHECK(p.back == EmbedDialect::openai);
        CHECK(p.fast_path == (front == EmbedDialect::openai));
        p = plan(BackendDialect::sglang, Flavor::sglang);
        CHECK(p.back == EmbedDialect::openai);
        p = plan(BackendDialect::llamacpp, Flavor::generic);
        CHECK(p.back ==
              (front == EmbedDialect::llamacpp ? EmbedDialect::llamacpp : EmbedDialect::openai));
        CHECK(p.fast_path == (front == EmbedDialect::llamacpp));
        p = plan(BackendDialect::ollama);
        CHECK(p.back == (front == EmbedDialect::ollama_legacy ? EmbedDialect::ollama_legacy
                                                              : EmbedDialect::ollama));
        CHECK(p.fast_path ==
              (front == EmbedDialect::ollama || front == EmbedDialect::ollama_legacy));
        p = plan(BackendDialect::tei);
        CHECK(p.back == EmbedDialect::tei);
        CHECK(p.fast_path == (front == EmbedDialect::tei));
        for (const BackendDialect none :
             {BackendDialect::tgi, BackendDialect::vllm_legacy, BackendDialect::anthropic}) {
            p = plan(none);
            REQUIRE(p.refusal);
            CHECK(p.refusal->status == 400);
            CHECK(p.refusal->param == "model");
            CHECK(p.refusal->message.starts_with(
                "the backend 'x' (y) has no embeddings endpoint; point embeddings requests at a "
                "TEI, vLLM, SGLang, Ollama or llama.cpp backend"));
        }
    }
}

TEST_CASE("the fast path keeps one OpenAI server's keys from the other") {
    const EmbeddingRequest vllm_keys =
        decoded(EmbedDialect::openai,
                R"({"model":"m","input":"a","normalize":false,"embed_dtype":"float16"})");
    auto p = plan_embeddings(EmbedDialect::openai, vllm_keys,
                             BackendFacts{BackendDialect::sglang, Flavor::sglang, "h"},
                             "the backend (SGLang)");
    REQUIRE(p.refusal);
    CHECK(p.refusal->param == "normalize");
    p = plan_embeddings(EmbedDialect::openai, vllm_keys,
                        BackendFacts{BackendDialect::openai, Flavor::vllm, "h"}, "b");
    CHECK_FALSE(p.refusal);
    const EmbeddingRequest sglang_keys =
        decoded(EmbedDialect::openai, R"({"model":"m","input":"a","lora_path":"x"})");
    p = plan_embeddings(EmbedDialect::openai, sglang_keys,
                        BackendFacts{BackendDialect::openai, Flavor::vllm, "h"}, "b");
    REQUIRE(p.refusal);
    CHECK(p.refusal->param == "lora_path");
    p = plan_embeddings(EmbedDialect::openai, sglang_keys,
                        BackendFacts{BackendDialect::openai, Flavor::generic, "h"}, "b");
    CHECK_FALSE(p.refusal);  // an unknown server judges for itself
}

TEST_CASE("fast path edits: the model name in, the client's name out") {
    std::string body = R"({ "input" : "a", "model" : "alias" })";
    CHECK(infergate::translators::embed_passthrough_request(body, EmbedDialect::openai, "alias",
                                                            "served") ==
          R"({ "input" : "a", "model" : "served" })");
    body = R"({"input":"a"})";
    const std::string added =
        infergate::translators::embed_passthrough_request(body, EmbedDialect::openai, "", "served");
    CHECK(added.find(R"("model":"served")") != std::string::npos);
    body = R"({"inputs":"a"})";
    CHECK(infergate::translators::embed_passthrough_request(body, EmbedDialect::tei, "",
                                                            "served") == R"({"inputs":"a"})");
    std::string out;
    CHECK(infergate::translators::embed_passthrough_rename(
        R"({"model":"served","embeddings":[[1]]})", EmbedDialect::ollama, "alias", out));
    CHECK(out == R"({"model":"alias","embeddings":[[1]]})");
    out.clear();
    CHECK_FALSE(
        infergate::translators::embed_passthrough_rename("[[1]]", EmbedDialect::tei, "a", out));
}

TEST_CASE("base64 asked, floats answered (SGLang has no base64): found, in any layout") {
    EmbeddingRequest req;
    req.base64 = true;
    using infergate::translators::floats_where_base64_asked;
    for (const auto& [style, body] :
         styles(R"({"data":[{"object":"embedding","embedding":[0.5],"index":0}],"model":"m"})")) {
        CAPTURE(style);
        CHECK(floats_where_base64_asked(body, req));
    }
    CHECK_FALSE(floats_where_base64_asked(
        testing::read_fixture("llamacpp/v1_embeddings_base64_real_c392e509.json"), req));
    req.base64 = false;
    CHECK_FALSE(floats_where_base64_asked(R"({"data":[{"embedding":[0.5]}]})", req));
}
