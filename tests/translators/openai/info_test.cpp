#include "translators/openai/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"
#include "translators/codec.hpp"

using namespace infergate;
namespace openai = infergate::translators::openai;

TEST_CASE("openai models lists the served model then the aliases, as infergate always has") {
    CHECK(openai::encode_models(test::served_catalogue()) ==
          R"({"object":"list","data":[)"
          R"({"id":"emu/m-x","object":"model","created":1796293330,"owned_by":"infergate",)"
          R"("root":"emu/m-x","max_model_len":4096},)"
          R"({"id":"alias1","object":"model","created":1796293330,"owned_by":"infergate",)"
          R"("root":"emu/m-x","max_model_len":4096},)"
          R"({"id":"a2","object":"model","created":1796293330,"owned_by":"infergate",)"
          R"("root":"other","max_model_len":4096}]})");
    // Nothing discovered: the aliases only, no max_model_len.
    auto c = test::undiscovered_catalogue();
    c.started_unix_ns = 1796293339000000000;
    CHECK(openai::encode_models(c) ==
          R"({"object":"list","data":[{"id":"alias1","object":"model","created":1796293339,)"
          R"("owned_by":"infergate","root":"zz"}]})");
    CHECK(openai::encode_models(canonical::ModelCatalogue{}) == R"({"object":"list","data":[]})");
}

TEST_CASE(
    "openai model by id is the list's entry; an unknown id is a 404 naming the served models") {
    auto one = openai::encode_model(test::served_catalogue(), "alias1");
    REQUIRE(one.ok());
    CHECK(one.value() ==
          R"({"id":"alias1","object":"model","created":1796293330,"owned_by":"infergate",)"
          R"("root":"emu/m-x","max_model_len":4096})");

    auto missing = openai::encode_model(test::served_catalogue(), "nope");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().status == 404);
    CHECK(missing.error().type == "not_found_error");
    CHECK(missing.error().param == "model");
    CHECK(missing.error().message ==
          "The model `nope` does not exist. Models served here: emu/m-x, alias1, a2");

    auto none = openai::encode_model(canonical::ModelCatalogue{}, "m");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().message ==
          "The model `m` does not exist. Models served here: (none discovered yet)");
}

TEST_CASE("openai models has the shape of OpenAI's and vLLM's list (api-dialects §2, §3)") {
    json::Document doc;
    test::parse_object(openai::encode_models(test::served_catalogue()), doc);
    CHECK(json::view(doc["object"]) == "list");
    REQUIRE(doc["data"].IsArray());
    REQUIRE(doc["data"].Size() == 3);
    for (const auto& m : doc["data"].GetArray()) {
        CHECK(m["id"].IsString());
        CHECK(json::view(m["object"]) == "model");
        CHECK(m["created"].IsInt64());
        CHECK(m["owned_by"].IsString());
        CHECK(m["root"].IsString());          // vLLM's
        CHECK(m["max_model_len"].IsInt64());  // vLLM's
    }
}

TEST_CASE("openai unknown model renders as infergate always answered it") {
    auto missing = openai::encode_model(test::served_catalogue(), "nope");
    REQUIRE_FALSE(missing.ok());
    std::string body;
    translators::codec_for(canonical::Dialect::openai_chat).encode_error(missing.error(), body);
    CHECK(body == R"({"error":{"message":"The model `nope` does not exist. Models served here: )"
                  R"(emu/m-x, alias1, a2","type":"not_found_error","param":"model","code":null}})");
}
