#include "translators/tgi/info.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"

using namespace infergate;
namespace tgi = infergate::translators::tgi;

TEST_CASE("tgi info shows the served model and its limits, as infergate always answered") {
    CHECK(tgi::encode_info(test::served_catalogue()) ==
          R"({"model_id":"emu/m-x","model_sha":null,"model_pipeline_tag":"text-generation",)"
          R"("max_concurrent_requests":128,"max_best_of":1,"max_stop_sequences":4,)"
          R"("max_input_tokens":4095,"max_total_tokens":4096,"validation_workers":2,)"
          R"("max_client_batch_size":1,"router":"text-generation-router","version":"0.1.0",)"
          R"("sha":null,"docker_label":null})");
    CHECK(tgi::encode_info(test::undiscovered_catalogue()) ==
          R"({"model_id":"","model_sha":null,"model_pipeline_tag":"text-generation",)"
          R"("max_concurrent_requests":128,"max_best_of":1,"max_stop_sequences":4,)"
          R"("max_input_tokens":null,"max_total_tokens":null,"validation_workers":1,)"
          R"("max_client_batch_size":1,"router":"text-generation-router","version":"0.1.0",)"
          R"("sha":null,"docker_label":null})");
}

TEST_CASE("tgi info leaves at least one input token in a one-token context") {
    auto c = test::served_catalogue();
    c.max_model_len = 1;
    json::Document doc;
    test::parse_object(tgi::encode_info(c), doc);
    CHECK(doc["max_input_tokens"].GetInt64() == 1);
    CHECK(doc["max_total_tokens"].GetInt64() == 1);
}

TEST_CASE("tgi info has every field of TGI's Info (api-dialects §5.8)") {
    json::Document doc;
    test::parse_object(tgi::encode_info(test::served_catalogue()), doc);
    for (const char* key :
         {"model_id", "model_sha", "model_pipeline_tag", "max_concurrent_requests", "max_best_of",
          "max_stop_sequences", "max_input_tokens", "max_total_tokens", "validation_workers",
          "max_client_batch_size", "router", "version", "sha", "docker_label"}) {
        CHECK_MESSAGE(doc.HasMember(key), key);
    }
    // What infergate's own probe and huggingface_hub read to recognise TGI.
    CHECK(json::view(doc["router"]) == "text-generation-router");
    CHECK(doc["max_total_tokens"].IsInt64());
}
