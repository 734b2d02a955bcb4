#include "translators/health.hpp"

#include <doctest/doctest.h>

#include <string>

using infergate::translators::answers_info_route;
using infergate::translators::Flavor;
using infergate::translators::health_call;
using B = infergate::translators::BackendDialect;

TEST_CASE("a liveness check is a GET of each engine's health route") {
    for (const auto [backend, path] : {std::pair{B::openai, "/health"},
                                       {B::sglang, "/health"},
                                       {B::tgi, "/health"},
                                       {B::llamacpp, "/health"},
                                       {B::vllm_legacy, "/health"},
                                       {B::ollama, "/"},
                                       {B::anthropic, "/v1/models"}}) {
        auto call = health_call(backend, false, "m", Flavor::generic);
        REQUIRE(call);
        CHECK_FALSE(call.value().post);
        CHECK(call.value().path == path);
    }
}

TEST_CASE("a deep check generates one token in the backend's own API") {
    // SGLang has its own.
    auto call = health_call(B::sglang, true, "m", Flavor::sglang);
    REQUIRE(call);
    CHECK_FALSE(call.value().post);
    CHECK(call.value().path == "/health_generate");
    // The others: a one-token completion on the raw route, or chat where there is none, for
    // the served model where the API names one (TGI and vLLM's demo server serve one model).
    struct Row {
        B backend;
        std::string path;
        bool names_model;
    };
    const Row rows[] = {{B::openai, "/v1/completions", true}, {B::tgi, "/generate", false},
                        {B::ollama, "/api/generate", true},   {B::llamacpp, "/completion", true},
                        {B::vllm_legacy, "/generate", false}, {B::anthropic, "/v1/messages", true}};
    for (const auto& row : rows) {
        CAPTURE(row.path);
        call = health_call(row.backend, true, "served", Flavor::generic);
        REQUIRE(call);
        CHECK(call.value().post);
        CHECK(call.value().path == row.path);
        CHECK((call.value().body.find("\"served\"") != std::string::npos) == row.names_model);
        CHECK(call.value().body.find("ping") != std::string::npos);
    }
}

TEST_CASE("the info routes a backend answers for itself") {
    CHECK(answers_info_route(B::sglang, "/get_model_info"));
    CHECK(answers_info_route(B::sglang, "/get_server_info"));
    CHECK_FALSE(answers_info_route(B::sglang, "/props"));
    CHECK(answers_info_route(B::llamacpp, "/props"));
    CHECK_FALSE(answers_info_route(B::llamacpp, "/get_model_info"));
    CHECK_FALSE(answers_info_route(B::openai, "/get_model_info"));
    CHECK_FALSE(answers_info_route(B::tgi, "/props"));
}
