#include "translators/anthropic/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"
#include "translators/codec.hpp"

using namespace infergate;
namespace anthropic = infergate::translators::anthropic;

TEST_CASE("anthropic models is one page of every name, as infergate always answered") {
    CHECK(anthropic::encode_models(test::served_catalogue()) ==
          R"({"data":[)"
          R"({"type":"model","id":"emu/m-x","display_name":"emu/m-x",)"
          R"("created_at":"2026-12-03T10:22:10.158607272Z"},)"
          R"({"type":"model","id":"alias1","display_name":"alias1",)"
          R"("created_at":"2026-12-03T10:22:10.158607272Z"},)"
          R"({"type":"model","id":"a2","display_name":"a2",)"
          R"("created_at":"2026-12-03T10:22:10.158607272Z"}],)"
          R"("has_more":false,"first_id":"emu/m-x","last_id":"a2"})");
    CHECK(anthropic::encode_models(canonical::ModelCatalogue{}) ==
          R"({"data":[],"has_more":false,"first_id":null,"last_id":null})");
}

TEST_CASE("anthropic model by id; an unknown id is a 404") {
    auto one = anthropic::encode_model(test::served_catalogue(), "alias1");
    REQUIRE(one.ok());
    CHECK(one.value() == R"({"type":"model","id":"alias1","display_name":"alias1",)"
                         R"("created_at":"2026-12-03T10:22:10.158607272Z"})");
    auto missing = anthropic::encode_model(test::served_catalogue(), "nope");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().status == 404);
    CHECK(missing.error().type == "not_found_error");
    CHECK(missing.error().message == "model: nope");
}

TEST_CASE("anthropic models has the shape of Anthropic's list (api-dialects §8.1)") {
    json::Document doc;
    test::parse_object(anthropic::encode_models(test::served_catalogue()), doc);
    REQUIRE(doc["data"].IsArray());
    for (const auto& m : doc["data"].GetArray()) {
        CHECK(json::view(m["type"]) == "model");
        CHECK(m["id"].IsString());
        CHECK(m["display_name"].IsString());
        CHECK(m["created_at"].IsString());
    }
    CHECK(doc["has_more"].IsBool());
    CHECK(json::view(doc["first_id"]) == json::view(doc["data"][0]["id"]));
    CHECK(json::view(doc["last_id"]) == json::view(doc["data"][2]["id"]));
}

TEST_CASE("anthropic unknown model renders as infergate always answered it") {
    auto missing = anthropic::encode_model(test::served_catalogue(), "nope");
    REQUIRE_FALSE(missing.ok());
    std::string body;
    translators::codec_for(canonical::Dialect::anthropic).encode_error(missing.error(), body);
    CHECK(body == R"({"type":"error","error":{"type":"not_found_error","message":"model: nope"}})");
}
