#include <doctest/doctest.h>

#include "proxy/router.hpp"

using infergate::match_route;
using infergate::Route;
using infergate::canonical::Dialect;

TEST_CASE("generation routes map to their dialects") {
    CHECK(match_route("POST", "/generate").dialect == Dialect::sglang);
    CHECK(match_route("PUT", "/generate").kind == Route::Kind::generate);
    CHECK(match_route("POST", "/v1/completions").dialect == Dialect::openai_completions);
    CHECK(match_route("POST", "/v1/chat/completions?x=1").dialect == Dialect::openai_chat);
    CHECK(match_route("POST", "/v1/chat/completions/").kind == Route::Kind::generate);
}

TEST_CASE("info routes") {
    CHECK(match_route("GET", "/v1/models").kind == Route::Kind::models);
    const Route m = match_route("GET", "/v1/models/Qwen/Qwen2.5-7B");
    CHECK(m.kind == Route::Kind::model);
    CHECK(m.model_id == "Qwen/Qwen2.5-7B");
    CHECK(match_route("GET", "/health").kind == Route::Kind::health);
    CHECK(match_route("HEAD", "/health").kind == Route::Kind::health);
    CHECK(match_route("GET", "/health_generate").kind == Route::Kind::health_generate);
    CHECK(match_route("GET", "/get_model_info").kind == Route::Kind::model_info);
    CHECK(match_route("GET", "/get_server_info").kind == Route::Kind::server_info);
}

TEST_CASE("wrong method and unknown path") {
    const Route r = match_route("GET", "/generate");
    CHECK(r.kind == Route::Kind::method_not_allowed);
    CHECK(r.allow == "POST, PUT");
    CHECK(match_route("DELETE", "/v1/models/x").kind == Route::Kind::method_not_allowed);
    CHECK(match_route("POST", "/v2/completions").kind == Route::Kind::not_found);
    CHECK(match_route("GET", "/v1/models/").kind == Route::Kind::models);
    const std::string list = infergate::route_list();
    CHECK(list.find("POST /generate") != std::string::npos);
    CHECK(list.find("POST /v1/chat/completions") != std::string::npos);
}

TEST_CASE("model ids are percent-decoded") {
    CHECK(match_route("GET", "/v1/models/org%2Fname").model_id == "org/name");
    CHECK(infergate::percent_decode("a%2fb%") == "a/b%");
    CHECK(infergate::percent_decode("%zz%4") == "%zz%4");
}
