#include "translators/ollama/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"
#include "translators/codec.hpp"

using namespace infergate;
namespace ollama = infergate::translators::ollama;

namespace {

constexpr std::string_view kDetails =
    R"("details":{"parent_model":"","format":"","family":"","families":null,"parameter_size":"",)"
    R"("quantization_level":""})";

std::string tag(const std::string& name) {
    return R"({"name":")" + name + R"(","model":")" + name +
           R"(","modified_at":"2026-12-03T10:22:10.158607272Z","size":0,"digest":"",)" +
           std::string(kDetails) + "}";
}

std::string running(const std::string& name, const std::string& context) {
    return R"({"name":")" + name + R"(","model":")" + name + R"(","size":0,"digest":"",)" +
           std::string(kDetails) + R"(,"expires_at":"0001-01-01T00:00:00Z","size_vram":0)" +
           context + "}";
}

}  // namespace

TEST_CASE("ollama tags lists every name, as infergate always answered") {
    CHECK(ollama::encode_tags(test::served_catalogue()) ==
          R"({"models":[)" + tag("emu/m-x") + "," + tag("alias1") + "," + tag("a2") + "]}");
    CHECK(ollama::encode_tags(canonical::ModelCatalogue{}) == R"({"models":[]})");
}

TEST_CASE("ollama ps lists every name as loaded for good, with the context length when known") {
    const std::string ctx = R"(,"context_length":4096)";
    CHECK(ollama::encode_ps(test::served_catalogue()) ==
          R"({"models":[)" + running("emu/m-x", ctx) + "," + running("alias1", ctx) + "," +
              running("a2", ctx) + "]}");
    CHECK(ollama::encode_ps(test::undiscovered_catalogue()) ==
          R"({"models":[)" + running("alias1", "") + "]}");
}

TEST_CASE("ollama version is the API level infergate follows") {
    CHECK(ollama::encode_version() == R"({"version":"0.12.0"})");
}

TEST_CASE("ollama root answers as Ollama's server does") {
    CHECK(ollama::kRootBody == "Ollama is running");
    CHECK(ollama::kRootContentType == "text/plain; charset=utf-8");
}

TEST_CASE("ollama show answers for a known name, with or without :latest, old or new key") {
    const std::string expected =
        R"({"modelfile":"","parameters":"","template":"",)" + std::string(kDetails) +
        R"(,"model_info":{"general.context_length":4096},"capabilities":["completion"],)"
        R"("modified_at":"2026-12-03T10:22:10.158607272Z"})";
    for (const char* body : {R"({"model":"alias1"})", R"({"name":"alias1:latest"})",
                             R"({"model":"emu/m-x","verbose":true})"}) {
        CAPTURE(body);
        auto out = ollama::encode_show(test::served_catalogue(), body);
        REQUIRE(out.ok());
        CHECK(out.value() == expected);
    }
    auto bare = ollama::encode_show(test::undiscovered_catalogue(), R"({"model":"alias1"})");
    REQUIRE(bare.ok());
    CHECK(bare.value().find(R"("model_info":{},)") != std::string::npos);
}

TEST_CASE("ollama show refuses a bad body (400) and an unknown model (404)") {
    const auto c = test::served_catalogue();
    auto unknown = ollama::encode_show(c, R"({"model":"nope"})");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().status == 404);
    CHECK(unknown.error().message == "model 'nope' not found");
    for (const char* body : {"{}", R"({"model":3})", R"({"model":""})", "[]"}) {
        CAPTURE(body);
        auto out = ollama::encode_show(c, body);
        REQUIRE_FALSE(out.ok());
        CHECK(out.error().status == 400);
        CHECK(out.error().message == "model is required");
    }
    auto garbled = ollama::encode_show(c, "not json");
    REQUIRE_FALSE(garbled.ok());
    CHECK(garbled.error().status == 400);
    CHECK(garbled.error().message == "malformed JSON in request body at offset 1: Invalid value.");
}

TEST_CASE("ollama tags and ps have Ollama's shapes (api-dialects §6.9)") {
    json::Document doc;
    test::parse_object(ollama::encode_tags(test::served_catalogue()), doc);
    REQUIRE(doc["models"].IsArray());
    for (const auto& m : doc["models"].GetArray()) {
        for (const char* key : {"name", "model", "modified_at", "digest"}) {
            CHECK(m[key].IsString());
        }
        CHECK(m["size"].IsInt64());
        REQUIRE(m["details"].IsObject());
        for (const char* key :
             {"parent_model", "format", "family", "parameter_size", "quantization_level"}) {
            CHECK(m["details"][key].IsString());
        }
    }
    json::Document ps;
    test::parse_object(ollama::encode_ps(test::served_catalogue()), ps);
    for (const auto& m : ps["models"].GetArray()) {
        CHECK(m["expires_at"].IsString());
        CHECK(m["size_vram"].IsInt64());
        CHECK(m["context_length"].IsInt64());
    }
}

TEST_CASE("ollama show's refusals render as infergate always answered them") {
    const auto& codec = translators::codec_for(canonical::Dialect::ollama_chat);
    const auto render = [&codec](std::string_view request) {
        auto out = ollama::encode_show(test::served_catalogue(), request);
        REQUIRE_FALSE(out.ok());
        std::string body;
        codec.encode_error(out.error(), body);
        return body;
    };
    CHECK(render(R"({"model":"nope"})") == R"({"error":"model 'nope' not found"})");
    CHECK(render("{}") == R"({"error":"model is required"})");
    CHECK(render("not json") ==
          R"({"error":"malformed JSON in request body at offset 1: Invalid value."})");
}
