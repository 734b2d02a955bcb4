#include <doctest/doctest.h>

#include <string>
#include <vector>

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

TEST_CASE("embeddings and tokenizer routes map to their APIs") {
    using infergate::canonical::EmbedDialect;
    using infergate::canonical::TokenizerDialect;
    for (const auto& [path, api] : std::vector<std::pair<const char*, EmbedDialect>>{
             {"/v1/embeddings", EmbedDialect::openai},
             {"/api/embed", EmbedDialect::ollama},
             {"/api/embeddings", EmbedDialect::ollama_legacy},
             {"/embed", EmbedDialect::tei},
             {"/embedding", EmbedDialect::llamacpp},
             {"/embeddings", EmbedDialect::llamacpp}}) {
        CAPTURE(path);
        const Route r = match_route("POST", path);
        CHECK(r.kind == Route::Kind::embed);
        CHECK(r.embed_dialect == api);
        CHECK(match_route("GET", path).kind == Route::Kind::method_not_allowed);
    }
    // POST /tokenize and /detokenize are every server's: the body (or the backend) decides.
    CHECK(match_route("POST", "/tokenize").kind == Route::Kind::tokenize);
    CHECK_FALSE(match_route("POST", "/tokenize").tokenizer);
    CHECK(match_route("POST", "/detokenize").kind == Route::Kind::detokenize);
    CHECK_FALSE(match_route("POST", "/detokenize").tokenizer);
    CHECK(match_route("POST", "/v1/tokenize").tokenizer == TokenizerDialect::sglang);
    CHECK(match_route("POST", "/v1/detokenize").tokenizer == TokenizerDialect::sglang);
    const Route decode = match_route("POST", "/decode");
    CHECK(decode.kind == Route::Kind::detokenize);
    CHECK(decode.tokenizer == TokenizerDialect::tei);
    CHECK(match_route("POST", "/apply-template").kind == Route::Kind::apply_template);
    const std::string list = infergate::route_list();
    for (const char* p :
         {"POST /v1/embeddings", "POST /api/embed", "POST /embed", "POST /embedding",
          "POST /tokenize", "POST /decode", "POST /apply-template"}) {
        CHECK_MESSAGE(list.find(p) != std::string::npos, p);
    }
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

TEST_CASE("with an admin listener, the ops routes are served there only") {
    using infergate::ListenerKind;
    using infergate::route_list;
    const auto pub = ListenerKind::public_api;
    const auto admin = ListenerKind::admin;
    // Without one (the default), the public listener serves everything, as before.
    CHECK(match_route("GET", "/metrics").kind == Route::Kind::metrics);
    CHECK(route_list().find("GET /metrics") != std::string::npos);
    CHECK(route_list() == route_list(ListenerKind::combined));

    // The public listener: no ops route, and its 404 list does not advertise them; a wrong
    // method on an ops path is a 404 too (a 405 would say the route exists).
    for (const char* path : {"/metrics", "/get_server_info"}) {
        CAPTURE(std::string(path));
        CHECK(match_route("GET", path, pub).kind == Route::Kind::not_found);
        CHECK(match_route("DELETE", path, pub).kind == Route::Kind::not_found);
        CHECK(match_route("GET", path, admin).kind != Route::Kind::not_found);
        CHECK(route_list(pub).find(std::string(" ") + path + ",") == std::string::npos);
        CHECK(route_list(admin).find(std::string("GET ") + path) != std::string::npos);
    }
    CHECK(route_list(pub).find("metrics") == std::string::npos);
    CHECK(route_list(pub).find("get_server_info") == std::string::npos);
    CHECK(match_route("POST", "/v1/chat/completions", pub).dialect == Dialect::openai_chat);
    CHECK(match_route("GET", "/v1/models/m", pub).kind == Route::Kind::model);
    CHECK(route_list(pub).find("GET /v1/models/{model}") != std::string::npos);

    // Health on both.
    for (const auto kind : {pub, admin}) {
        CHECK(match_route("GET", "/health", kind).kind == Route::Kind::health);
        CHECK(match_route("HEAD", "/health_generate", kind).kind == Route::Kind::health_generate);
        CHECK(route_list(kind).find("GET /health,") != std::string::npos);
    }

    // The admin listener: no generation, no API info route, and its list names only its own.
    for (const char* path : {"/v1/chat/completions", "/generate", "/", "/api/chat"}) {
        CAPTURE(std::string(path));
        CHECK(match_route("POST", path, admin).kind == Route::Kind::not_found);
    }
    CHECK(match_route("GET", "/v1/models", admin).kind == Route::Kind::not_found);
    CHECK(match_route("GET", "/v1/models/m", admin).kind == Route::Kind::not_found);
    CHECK(route_list(admin) ==
          "GET /health, GET /health_generate, GET /get_server_info, "
          "GET /metrics, POST /-/reload");
}

TEST_CASE("POST /-/reload is served on the admin listener only, never on a combined one") {
    using infergate::ListenerKind;
    using infergate::route_list;
    CHECK(match_route("POST", "/-/reload", ListenerKind::admin).kind == Route::Kind::reload);
    const auto get = match_route("GET", "/-/reload", ListenerKind::admin);
    CHECK(get.kind == Route::Kind::method_not_allowed);
    CHECK(get.allow == "POST");
    // Without admin_listen, whoever reaches the public port could make the proxy re-read its
    // files: SIGHUP reloads instead.
    for (const auto kind : {ListenerKind::combined, ListenerKind::public_api}) {
        CHECK(match_route("POST", "/-/reload", kind).kind == Route::Kind::not_found);
        CHECK(match_route("GET", "/-/reload", kind).kind == Route::Kind::not_found);
        CHECK(route_list(kind).find("reload") == std::string::npos);
    }
}

TEST_CASE("methods_served: every method some route of the listener takes, then OPTIONS") {
    using infergate::ListenerKind;
    using infergate::methods_served;
    // Each method once, OPTIONS last; a route added with another method adds it here.
    const std::string all = methods_served();
    CHECK(all.starts_with("POST, PUT, GET, HEAD"));
    CHECK(all.ends_with(", OPTIONS"));
    CHECK(all.find("OPTIONS") == all.size() - 7);
    CHECK(all.find("POST", 1) == std::string::npos);
    CHECK(all.find("HEAD", all.find("HEAD") + 1) == std::string::npos);
    CHECK(methods_served(ListenerKind::admin) == "GET, HEAD, POST, OPTIONS");
    CHECK(all.find("DELETE") != std::string::npos);  // DELETE /v1/responses/{id}
    // OPTIONS on a known path reaches the exchange as a wrong method, with the route's methods.
    const Route r = match_route("OPTIONS", "/v1/chat/completions");
    CHECK(r.kind == Route::Kind::method_not_allowed);
    CHECK(r.allow == "POST");
    CHECK(match_route("OPTIONS", "/nope").kind == Route::Kind::not_found);
    CHECK(match_route("OPTIONS", "*").kind == Route::Kind::not_found);
}

TEST_CASE("the Responses API's routes: create, a stored turn, its input items") {
    using infergate::ListenerKind;
    Route r = match_route("POST", "/v1/responses");
    CHECK(r.kind == Route::Kind::generate);
    CHECK(r.dialect == infergate::canonical::Dialect::openai_responses);
    r = match_route("GET", "/v1/responses/resp_abc%2D1");
    CHECK(r.kind == Route::Kind::stored_response);
    CHECK(r.model_id == "resp_abc-1");
    CHECK(match_route("DELETE", "/v1/responses/resp_1").kind == Route::Kind::stored_response);
    r = match_route("GET", "/v1/responses/resp_1/input_items?limit=5");
    CHECK(r.kind == Route::Kind::stored_input);
    CHECK(r.model_id == "resp_1");
    r = match_route("DELETE", "/v1/responses/resp_1/input_items");
    CHECK(r.kind == Route::Kind::method_not_allowed);
    CHECK(r.allow == "GET, HEAD");
    r = match_route("POST", "/v1/responses/resp_1");
    CHECK(r.kind == Route::Kind::method_not_allowed);
    CHECK(r.allow == "GET, HEAD, DELETE");
    CHECK(match_route("GET", "/v1/responses/a/b").kind == Route::Kind::not_found);
    CHECK(match_route("GET", "/v1/responses/resp_1", ListenerKind::admin).kind ==
          Route::Kind::not_found);
    CHECK(infergate::route_list().find("POST /v1/responses") != std::string::npos);
}
