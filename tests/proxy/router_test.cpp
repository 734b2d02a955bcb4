#include <doctest/doctest.h>

#include "proxy/router.hpp"

using infergate::match_route;
using infergate::Route;
using infergate::canonical::Dialect;

TEST_CASE("generation routes map to their dialects") {
    // /generate is shared by three servers: the body decides (classify_generate_body).
    CHECK(match_route("POST", "/generate").kind == Route::Kind::generate_by_body);
    CHECK(match_route("PUT", "/generate").kind == Route::Kind::generate_by_body);
    const Route stream = match_route("POST", "/generate_stream");
    CHECK(stream.dialect == Dialect::tgi);
    CHECK(stream.path == "/generate_stream");
    CHECK(match_route("POST", "/").kind == Route::Kind::root);
    CHECK(match_route("HEAD", "/").kind == Route::Kind::root);
    CHECK(match_route("POST", "/v1/messages").dialect == Dialect::anthropic);
    CHECK(match_route("POST", "/api/generate").dialect == Dialect::ollama_generate);
    CHECK(match_route("POST", "/api/chat").dialect == Dialect::ollama_chat);
    CHECK(match_route("POST", "/completion").dialect == Dialect::llamacpp);
    CHECK(match_route("POST", "/completions").dialect == Dialect::llamacpp);
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
    CHECK(match_route("GET", "/info").kind == Route::Kind::tgi_info);
    CHECK(match_route("GET", "/api/tags").kind == Route::Kind::ollama_tags);
    CHECK(match_route("GET", "/api/version").kind == Route::Kind::ollama_version);
    CHECK(match_route("POST", "/api/show").kind == Route::Kind::ollama_show);
    CHECK(match_route("GET", "/api/ps").kind == Route::Kind::ollama_ps);
    CHECK(match_route("GET", "/props").kind == Route::Kind::llamacpp_props);
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
    CHECK(list.find("POST /v1/messages") != std::string::npos);
    CHECK(list.find("POST /api/chat") != std::string::npos);
    CHECK(match_route("GET", "/api/generate").allow == "POST");
    CHECK(match_route("DELETE", "/").allow == "POST, GET, HEAD");
}

TEST_CASE("model ids are percent-decoded") {
    CHECK(match_route("GET", "/v1/models/org%2Fname").model_id == "org/name");
    CHECK(infergate::percent_decode("a%2fb%") == "a/b%");
    CHECK(infergate::percent_decode("%zz%4") == "%zz%4");
}

TEST_CASE("every GET route takes HEAD, and a 405 there lists it") {
    // RFC 9110 §9.1: a general-purpose server supports GET and HEAD; HEAD answers as GET would.
    for (const char* path : {"/", "/v1/models", "/v1/models/org/name", "/health",
                             "/health_generate", "/get_model_info", "/get_server_info", "/info",
                             "/props", "/api/tags", "/api/version", "/api/ps", "/metrics"}) {
        CAPTURE(std::string(path));
        const Route get = match_route("GET", path);
        const Route head = match_route("HEAD", path);
        CHECK(head.kind == get.kind);
        CHECK(head.model_id == get.model_id);
        const Route wrong = match_route("DELETE", path);
        REQUIRE(wrong.kind == Route::Kind::method_not_allowed);
        CHECK(wrong.allow.find("GET") != std::string_view::npos);
        CHECK(wrong.allow.find("HEAD") != std::string_view::npos);
    }
    // No HEAD where there is no GET: a generation route answers 405 with its own methods.
    const Route gen = match_route("HEAD", "/v1/completions");
    CHECK(gen.kind == Route::Kind::method_not_allowed);
    CHECK(gen.allow == "POST");
}
