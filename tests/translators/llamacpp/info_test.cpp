#include "translators/llamacpp/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"

using namespace infergate;
namespace llamacpp = infergate::translators::llamacpp;

TEST_CASE("llamacpp props shows only what infergate knows, as it always answered") {
    CHECK(
        llamacpp::encode_props(test::served_catalogue()) ==
        R"({"default_generation_settings":{"n_ctx":4096,"params":{"n_predict":-1}},)"
        R"("model_path":"emu/m-x","modalities":{"vision":false},"build_info":"infergate-0.1.0"})");
    CHECK(llamacpp::encode_props(test::undiscovered_catalogue()) ==
          R"({"default_generation_settings":{"params":{"n_predict":-1}},)"
          R"("model_path":"","modalities":{"vision":false},"build_info":"infergate-0.1.0"})");
}

TEST_CASE("llamacpp health answers as llama-server does when it is ready (api-dialects §7.8)") {
    CHECK(llamacpp::kHealthyBody == R"({"status":"ok"})");
}

TEST_CASE("llamacpp props has the fields llama.cpp's clients read (api-dialects §7.8)") {
    json::Document doc;
    test::parse_object(llamacpp::encode_props(test::served_catalogue()), doc);
    REQUIRE(doc["default_generation_settings"].IsObject());
    CHECK(doc["default_generation_settings"]["n_ctx"].IsInt64());
    CHECK(doc["default_generation_settings"]["params"].IsObject());
    CHECK(doc["model_path"].IsString());
    CHECK(doc["modalities"]["vision"].IsBool());
    CHECK(doc["build_info"].IsString());
    // Facts only a llama.cpp server knows are left out rather than made up.
    CHECK_FALSE(doc.HasMember("total_slots"));
    CHECK_FALSE(doc.HasMember("chat_template"));
}
