// translators/tgi/request_decode.cpp and request_encode.cpp: TGI GenerateRequest bodies from clients and to backends.

#include <doctest/doctest.h>

#include "tests/translators/tgi/test_util.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::Prompt;
using infergate::canonical::RequestKind;
using infergate::translators::UpstreamOptions;
using tgi_test::tgi;

GenerationRequest decode_ok(const std::string& body) {
    auto r = tgi().decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return r.value();
}

void check_rejected(const std::string& body, int status, const std::string& param) {
    CAPTURE(body);
    auto r = tgi().decode_request(body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == status);
    CHECK(r.error().param == param);
    CHECK_FALSE(r.error().message.empty());
}

GenerationRequest openai_request(std::string prompt) {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    req.prompts.push_back(Prompt{std::move(prompt), {}, false});
    return req;
}

std::string encode_ok(const GenerationRequest& req, bool stream = false) {
    UpstreamOptions opt;
    opt.stream = stream;
    auto r = tgi().encode_request(req, opt);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return r.value();
}

}  // namespace

TEST_CASE("tgi decode: the quicktour request (§11.8)") {
    const auto req = decode_ok(R"({"inputs":"What is Deep Learning?","parameters":{"max_new_tokens":20}})");
    CHECK(req.dialect == Dialect::tgi);
    CHECK(req.kind == RequestKind::completion);
    REQUIRE(req.prompts.size() == 1);
    CHECK(req.prompts[0].text == "What is Deep Learning?");
    CHECK_FALSE(req.prompt_is_list);
    CHECK(req.sampling.max_tokens == 20);
    // parameters present, no do_sample and no warper: TGI decodes greedily
    CHECK(req.sampling.temperature == 0.0);
    CHECK_FALSE(req.stream);
    CHECK_FALSE(req.include_usage);
}

TEST_CASE("tgi decode: every named parameter, extras kept") {
    const auto req = decode_ok(R"({"inputs":"x","stream":true,"custom":1,"parameters":{
        "max_new_tokens":5,"temperature":0.7,"top_p":0.9,"top_k":40,"repetition_penalty":1.1,
        "frequency_penalty":0.5,"stop":["\n","END"],"seed":7,"do_sample":true,"details":true,
        "best_of":2,"truncate":100,"typical_p":0.5,"watermark":true,"top_n_tokens":3,
        "grammar":{"type":"regex","value":"a+"},"decoder_input_details":false,"foo":"bar"}})");
    const auto& sp = req.sampling;
    CHECK(req.stream);
    CHECK(req.include_usage);  // details: true
    CHECK(sp.max_tokens == 5);
    CHECK(sp.temperature == 0.7);
    CHECK(sp.top_p == 0.9);
    CHECK(sp.top_k == 40);
    CHECK(sp.repetition_penalty == 1.1);
    CHECK(sp.frequency_penalty == 0.5);
    CHECK(sp.stop == std::vector<std::string>{"\n", "END"});
    CHECK(sp.keep_stop_str == true);  // TGI keeps the stop string in its output
    CHECK(sp.seed == 7);
    CHECK(sp.typical_p == 0.5);
    std::vector<std::string> keys;
    std::vector<std::string> meaningful;  // TGI's own settings away from their defaults
    for (const auto& e : req.sampling_extras) {
        keys.push_back(e.key);
        if (!e.inert) {
            meaningful.push_back(e.key);
        }
    }
    // top_n_tokens and decoder_input_details are canonical (log probabilities), not extras.
    CHECK(req.top_logprobs == 3);
    CHECK_FALSE(req.prompt_logprob_start);
    CHECK(keys == std::vector<std::string>{"best_of", "truncate", "watermark", "grammar", "foo"});
    CHECK(meaningful == std::vector<std::string>{"best_of", "truncate", "watermark", "grammar"});
    CHECK(req.sampling_extras[3].json == R"({"type":"regex","value":"a+"})");
    // "custom", and the marker that return_full_text was not given (POST / defaults it on).
    REQUIRE(req.extras.size() == 2);
    CHECK(req.extras[0].key == infergate::translators::tgi::kFullTextUnsetExtra);
    CHECK(req.extras[1].key == "custom");
    auto streamed = req;  // "stream": true: POST / streams keep the generation only
    infergate::translators::tgi::mark_route(streamed, "/");
    CHECK_FALSE(streamed.echo);
    CHECK(streamed.extras.size() == 2);  // "custom" and the compat-route mark
    CHECK(infergate::translators::tgi::uses_compat_route(streamed));
    auto whole = decode_ok(R"({"inputs":"x","parameters":{"max_new_tokens":3}})");
    infergate::translators::tgi::mark_route(whole, "/");
    CHECK(whole.echo);  // POST / defaults return_full_text to true
    auto dedicated = decode_ok(R"({"inputs":"x"})");
    infergate::translators::tgi::mark_route(dedicated, "/generate");
    CHECK_FALSE(dedicated.echo);
    CHECK(dedicated.extras.empty());
}

TEST_CASE("tgi decode: sampling defaults") {
    // No parameters at all: TGI samples, canonical says nothing.
    CHECK_FALSE(decode_ok(R"({"inputs":"x"})").sampling.temperature.has_value());
    CHECK_FALSE(decode_ok(R"({"inputs":"x","parameters":{"do_sample":true}})")
                    .sampling.temperature.has_value());
    CHECK(decode_ok(R"({"inputs":"x","parameters":{"do_sample":false}})").sampling.temperature ==
          0.0);
    // a warper implies sampling
    CHECK_FALSE(decode_ok(R"({"inputs":"x","parameters":{"top_k":5}})")
                    .sampling.temperature.has_value());
    CHECK_FALSE(decode_ok(R"({"inputs":"x","parameters":{"typical_p":0.5}})")
                    .sampling.temperature.has_value());
    CHECK(decode_ok(R"({"inputs":"x","parameters":{"typical_p":null}})").sampling.temperature ==
          0.0);
    CHECK(decode_ok(R"({"inputs":"x","parameters":{"return_full_text":true}})").echo);
}

TEST_CASE("tgi decode: TGI's validation answers 422 naming the field") {
    check_rejected(R"({"inputs":""})", 422, "inputs");
    check_rejected(R"({"parameters":{}})", 422, "inputs");
    check_rejected(R"({"inputs":[1,2]})", 422, "inputs");
    check_rejected(R"({"inputs":"x","parameters":[]})", 422, "parameters");
    check_rejected(R"({"inputs":"x","parameters":{"temperature":0}})", 422,
                   "parameters.temperature");
    check_rejected(R"({"inputs":"x","parameters":{"temperature":"hot"}})", 422,
                   "parameters.temperature");
    check_rejected(R"({"inputs":"x","parameters":{"top_p":1.0}})", 422, "parameters.top_p");
    check_rejected(R"({"inputs":"x","parameters":{"top_p":0}})", 422, "parameters.top_p");
    check_rejected(R"({"inputs":"x","parameters":{"top_k":0}})", 422, "parameters.top_k");
    check_rejected(R"({"inputs":"x","parameters":{"max_new_tokens":0}})", 422,
                   "parameters.max_new_tokens");
    check_rejected(R"({"inputs":"x","parameters":{"max_new_tokens":1.5}})", 422,
                   "parameters.max_new_tokens");
    check_rejected(R"({"inputs":"x","parameters":{"repetition_penalty":0}})", 422,
                   "parameters.repetition_penalty");
    check_rejected(R"({"inputs":"x","parameters":{"frequency_penalty":3}})", 422,
                   "parameters.frequency_penalty");
    check_rejected(R"({"inputs":"x","parameters":{"stop":"\n"}})", 422, "parameters.stop");
    check_rejected(R"({"inputs":"x","parameters":{"stop":["a",1]}})", 422, "parameters.stop[1]");
    check_rejected(R"({"inputs":"x","parameters":{"seed":-1}})", 422, "parameters.seed");
    check_rejected(R"({"inputs":"x","parameters":{"details":"yes"}})", 422, "parameters.details");
    check_rejected(R"({"inputs":"x","stream":"yes"})", 422, "stream");
    check_rejected(R"({"inputs":"x","stream":true,"parameters":{"return_full_text":true}})", 422,
                   "parameters.return_full_text");
    check_rejected(R"([1])", 422, "");
    auto broken = tgi().decode_request(R"({"inputs":)");
    REQUIRE_FALSE(broken.ok());
    CHECK(broken.error().status == 400);  // axum rejects broken JSON with 400
}

TEST_CASE("tgi route convention") {
    using infergate::translators::tgi::mark_route;
    using infergate::translators::tgi::uses_compat_route;
    auto req = decode_ok(R"({"inputs":"x","stream":true})");
    mark_route(req, "/generate");
    CHECK_FALSE(req.stream);  // /generate ignores "stream"
    mark_route(req, "/generate_stream");
    CHECK(req.stream);
    CHECK_FALSE(uses_compat_route(req));
    mark_route(req, "/");
    mark_route(req, "/");
    CHECK(uses_compat_route(req));
    CHECK(req.extras.size() == 1);
    // the marker never goes upstream
    CHECK(encode_ok(req).find("infergate") == std::string::npos);
}

TEST_CASE("tgi encode: exact bytes for an OpenAI completions request") {
    auto req = openai_request("Hello");
    // nothing said: OpenAI samples at 1.0 and gives 16 tokens
    CHECK(encode_ok(req) ==
          R"({"inputs":"Hello","parameters":{"details":true,"max_new_tokens":16,"do_sample":true,"temperature":1.0},"stream":false})");
    CHECK(tgi().upstream_path(req) == "/generate");
    req.stream = true;
    CHECK(tgi().upstream_path(req) == "/generate_stream");

    req.sampling.temperature = 0.0;
    req.sampling.top_p = 0.5;
    req.sampling.max_tokens = 8;
    req.sampling.stop = {"\n"};
    req.sampling.seed = 3;
    CHECK(encode_ok(req, true) ==
          R"({"inputs":"Hello","parameters":{"details":true,"max_new_tokens":8,"do_sample":false,"seed":3,"stop":["\n"]},"stream":true})");

    req.sampling.temperature = 0.8;
    req.sampling.top_p = 1.0;  // "off": TGI would reject it
    req.sampling.top_k = 0;    // "off" in vLLM terms
    req.sampling.repetition_penalty = 1.2;
    req.sampling.frequency_penalty = 0.5;
    CHECK(encode_ok(req) ==
          R"({"inputs":"Hello","parameters":{"details":true,"max_new_tokens":8,"do_sample":true,"temperature":0.8,"repetition_penalty":1.2,"frequency_penalty":0.5,"seed":3,"stop":["\n"]},"stream":false})");
}

TEST_CASE("tgi encode: chat-default clients and TGI pass-through") {
    auto req = openai_request("Hi");
    req.dialect = Dialect::openai_chat;  // no default max tokens
    req.sampling.top_p = 0.9;
    CHECK(encode_ok(req) ==
          R"({"inputs":"Hi","parameters":{"details":true,"do_sample":true,"top_p":0.9},"stream":false})");

    auto tgi_req = decode_ok(
        R"({"inputs":"Hi","parameters":{"details":false,"max_new_tokens":3,"truncate":10,"decoder_input_details":true}})");
    CHECK(
        encode_ok(tgi_req) ==
        R"({"inputs":"Hi","parameters":{"details":true,"max_new_tokens":3,"do_sample":false,"decoder_input_details":true,"truncate":10},"stream":false})");
    // TGI refuses decoder_input_details on streams (PrefillDetailsStream): so does the encoder,
    // rather than drop what the client asked for.
    UpstreamOptions streamed;
    streamed.stream = true;
    auto refused = tgi().encode_request(tgi_req, streamed);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().param == "parameters.decoder_input_details");
}

TEST_CASE("tgi encode: what TGI cannot do is a 400 naming the field") {
    auto check = [](GenerationRequest req, const std::string& param) {
        CAPTURE(param);
        auto r = tgi().encode_request(req, UpstreamOptions{});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().status == 400);
        CHECK(r.error().param == param);
    };
    auto chat = openai_request("x");
    chat.kind = RequestKind::chat;
    check(chat, "messages");
    auto tokens = openai_request("");
    tokens.prompts[0].is_tokens = true;
    tokens.prompts[0].token_ids = {1, 2};
    check(tokens, "prompt");
    auto batch = openai_request("a");
    batch.prompts.push_back(Prompt{"b", {}, false});
    check(batch, "prompt");
    check(openai_request(""), "prompt");
    auto n = openai_request("x");
    n.sampling.n = 2;
    check(n, "n");
    auto eos = openai_request("x");
    eos.sampling.ignore_eos = true;
    check(eos, "ignore_eos");
    auto ids = openai_request("x");
    ids.sampling.stop_token_ids = {2};
    check(ids, "stop_token_ids");
    auto min_tokens = openai_request("x");
    min_tokens.sampling.min_tokens = 3;
    check(min_tokens, "min_tokens");
    auto min_p = openai_request("x");
    min_p.sampling.min_p = 0.1;
    check(min_p, "min_p");
    auto presence = openai_request("x");
    presence.sampling.presence_penalty = 0.5;
    check(presence, "presence_penalty");
    auto top_p = openai_request("x");
    top_p.sampling.top_p = 0.0;
    check(top_p, "top_p");
    auto seed = openai_request("x");
    seed.sampling.seed = -5;
    check(seed, "seed");
}

TEST_CASE("tgi errors: bodies both ways") {
    infergate::canonical::Error e;
    e.status = 422;
    e.message = "`temperature` must be strictly positive";
    std::string out;
    tgi().encode_error(e, out);
    CHECK(out == R"({"error":"`temperature` must be strictly positive","error_type":"validation"})");

    const auto back = tgi().decode_error(429, R"({"error":"Model is overloaded","error_type":"overloaded"})");
    CHECK(back.status == 429);
    CHECK(back.message == "Model is overloaded");
    CHECK(back.code == "overloaded");
    out.clear();
    tgi().encode_error(back, out);
    CHECK(out == R"({"error":"Model is overloaded","error_type":"overloaded"})");

    const auto gen = tgi().decode_error(424, R"({"error":"CUDA out of memory","error_type":"generation"})");
    CHECK(gen.status == 500);
    CHECK(gen.type == "upstream_error");
    const auto plain = tgi().decode_error(422, "Failed to deserialize the JSON body");
    CHECK(plain.message == "Failed to deserialize the JSON body");
    CHECK(plain.type == "invalid_request_error");
    infergate::canonical::Error bad_gateway;
    bad_gateway.status = 502;
    bad_gateway.message = "m";
    out.clear();
    tgi().encode_error(bad_gateway, out);
    CHECK(out == R"({"error":"m","error_type":"generation"})");
}
