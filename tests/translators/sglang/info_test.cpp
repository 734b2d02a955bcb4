#include "translators/sglang/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"

using namespace infergate;
namespace sglang = infergate::translators::sglang;

TEST_CASE("sglang model info, as infergate always answered") {
    CHECK(sglang::encode_model_info(test::served_catalogue()) ==
          R"({"model_path":"emu/m-x","tokenizer_path":"emu/m-x","is_generation":true,)"
          R"("preferred_sampling_params":null,"weight_version":"default"})");
}

TEST_CASE("sglang server info names the backend infergate stands in front of") {
    CHECK(sglang::encode_server_info(test::served_catalogue()) ==
          R"({"model_path":"emu/m-x","tokenizer_path":"emu/m-x","is_generation":true,)"
          R"("served_model_name":"emu/m-x","version":"infergate-0.1.0","backend":{)"
          R"("url":"http://127.0.0.1:45739","ready":true,"dialect":"openai","detected":)"
          R"("openai via GET http://127.0.0.1:45739/v1/models owned_by \"vllm\"; GET )"
          R"(http://127.0.0.1:45739/version answered like vLLM"}})");
    // Not identified yet: the dialect is "unknown", whatever the catalogue's default says.
    CHECK(sglang::encode_server_info(test::undiscovered_catalogue()) ==
          R"({"model_path":"","tokenizer_path":"","is_generation":true,)"
          R"("served_model_name":"","version":"infergate-0.1.0","backend":{)"
          R"("url":"http://127.0.0.1:1","ready":false,"dialect":"unknown","detected":)"
          R"("no answer from GET http://127.0.0.1:1/v1/models: Connection refused"}})");
}

TEST_CASE("sglang model info has the keys SGLang's /get_model_info has (api-dialects §4)") {
    json::Document doc;
    test::parse_object(sglang::encode_model_info(test::served_catalogue()), doc);
    for (const char* key : {"model_path", "tokenizer_path", "is_generation",
                            "preferred_sampling_params", "weight_version"}) {
        CHECK_MESSAGE(doc.HasMember(key), key);
    }
    CHECK(doc["is_generation"].IsBool());
    // What infergate's own probe reads to recognise SGLang.
    json::Document server;
    test::parse_object(sglang::encode_server_info(test::served_catalogue()), server);
    CHECK(server["version"].IsString());
}
