// Log probabilities through the TGI codec, both directions (docs/dialects.md, "Log
// probabilities"). Shapes from TGI's router/src/lib.rs (Details: finish_reason, generated_tokens,
// seed, prefill [PrefillToken {id, text, logprob}], tokens [Token {id, text, logprob, special}],
// top_tokens [[Token]] omitted when empty; StreamResponse: index, token, top_tokens omitted when
// empty, generated_text, details), server.rs (decoder_input_details turns details on; refused on
// streams) and validation.rs (PrefillDetailsStream, NegativeMaxNewTokens, TopNTokens with
// --max-top-n-tokens 5 by default).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/translators/logprob_util.hpp"
#include "tests/translators/tgi/test_util.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stream_state.hpp"

namespace {

using logprob_test::alt;
using logprob_test::entry;

using infergate::canonical::Choice;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::TokenAlternative;
using infergate::canonical::TokenLogprob;
using infergate::translators::UpstreamOptions;
using tgi_test::fixture;
using tgi_test::sse_payloads;
using tgi_test::tgi;

GenerationRequest decode_ok(std::string_view body) {
    auto r = tgi().decode_request(body);
    INFO(std::string(body));
    if (!r.ok()) {
        FAIL("unexpected error: " << r.error().message);
    }
    return std::move(r.value());
}

infergate::canonical::Result<std::string> encode(const GenerationRequest& req, bool stream) {
    UpstreamOptions opt;
    opt.stream = stream;
    return tgi().encode_request(req, opt);
}

GenerationRequest openai_request(std::string prompt) {
    GenerationRequest req;
    req.dialect = Dialect::openai_completions;
    req.prompts.push_back(Prompt{std::move(prompt), {}, false});
    req.sampling.max_tokens = 1;
    return req;
}

}  // namespace

TEST_CASE("tgi logprobs: details, top_n_tokens and decoder_input_details decode") {
    GenerationRequest req = decode_ok(R"({"inputs":"x","parameters":{"details":true}})");
    CHECK(req.logprobs_if_available);
    CHECK_FALSE(req.top_logprobs);
    CHECK_FALSE(req.prompt_logprob_start);

    req =
        decode_ok(R"({"inputs":"x","parameters":{"top_n_tokens":3,"decoder_input_details":true}})");
    CHECK(req.top_logprobs == 3);
    CHECK(req.prompt_logprob_start == 0);
    CHECK(req.logprobs_if_available);  // decoder_input_details turns details on (server.rs)
    CHECK(req.include_usage);
    CHECK(req.sampling_extras.empty());

    // TGI refuses decoder_input_details on a stream, with its own message.
    auto r = tgi().decode_request(
        R"({"inputs":"x","stream":true,"parameters":{"decoder_input_details":true}})");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 422);
    CHECK(r.error().param == "parameters.decoder_input_details");
    CHECK(r.error().message ==
          "`decoder_input_details` == true is not supported when streaming tokens");
    // On /generate_stream (the route, not the body, says stream): a TGI backend is refused
    // with TGI's 422, and any other backend's stream becomes TGI's in-band error.
    GenerationRequest routed =
        decode_ok(R"({"inputs":"x","parameters":{"decoder_input_details":true}})");
    infergate::translators::tgi::mark_route(routed, "/generate_stream");
    auto upstream = encode(routed, true);
    REQUIRE_FALSE(upstream.ok());
    CHECK(upstream.error().status == 422);
    StreamState enc;
    infergate::canonical::set_logprob_request(enc, routed);
    StreamEvent first;
    first.text = "a";
    std::string out;
    tgi().encode_stream_event(first, enc, out);
    CHECK(out ==
          "data:{\"error\":\"`decoder_input_details` == true is not supported when "
          "streaming tokens\",\"error_type\":\"validation\"}\n\n");
    out.clear();
    tgi().encode_stream_end(enc, out);
    CHECK(out.empty());

    r = tgi().decode_request(R"({"inputs":"x","parameters":{"top_n_tokens":-1}})");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 422);
}

TEST_CASE("tgi logprobs: what a TGI backend is asked, and what it cannot give") {
    // lm-eval's loglikelihood request (logprobs 1, echo, max_tokens 1) as the OpenAI decoder
    // reads it: one alternative, the prompt's entries.
    GenerationRequest req = openai_request("The sky is");
    req.return_logprob = true;
    req.top_logprobs = 1;
    req.echo = true;
    req.prompt_logprob_start = 0;
    req.sampling.temperature = 0.0;
    auto r = encode(req, false);
    REQUIRE(r.ok());
    CHECK(*r == R"({"inputs":"The sky is","parameters":{"details":true,"max_new_tokens":1,)"
                R"("do_sample":false,"top_n_tokens":1,"decoder_input_details":true},)"
                R"("stream":false})");

    // Streamed, TGI cannot give the prompt's entries: a 400 naming the client's parameter.
    r = encode(req, true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 400);
    CHECK(r.error().param == "echo");
    // Without them a stream is fine, and asks for the alternatives.
    req.prompt_logprob_start.reset();
    r = encode(req, true);
    REQUIRE(r.ok());
    CHECK(r->find(R"("top_n_tokens":1})") != std::string::npos);
    CHECK(r->find("decoder_input_details") == std::string::npos);

    // More alternatives than TGI's default cap: a 400 naming the client's parameter.
    GenerationRequest chat = openai_request("x");
    chat.dialect = Dialect::openai_chat;  // (the route check comes later: the codec sees text)
    chat.return_logprob = true;
    chat.top_logprobs = 6;
    r = encode(chat, false);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "top_logprobs");
    CHECK(r.error().message.find("at most 5") != std::string::npos);

    // Pure scoring (max_tokens 0): TGI generates at least one token.
    GenerationRequest scoring = openai_request("x");
    scoring.sampling.max_tokens = 0;
    r = encode(scoring, false);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "max_tokens");
}

TEST_CASE("tgi logprobs: decode_response reads tokens, prefill and top_tokens") {
    // TGI integration-tests/models/__snapshots__/test_bloom_560m/test_bloom_560m.json, cut to
    // three prefill and two generated tokens, with top_tokens as lib.rs Details writes them.
    const std::string body =
        R"({"details":{"finish_reason":"length","generated_tokens":2,"seed":0,"prefill":[)"
        R"({"id":17934,"logprob":null,"text":"Pour"},)"
        R"({"id":49833,"logprob":-10.5703125,"text":" d\u00e9g"},)"
        R"({"id":21543,"logprob":-0.14746094,"text":"uster"}],"tokens":[)"
        R"({"id":578,"logprob":-1.7822266,"special":false,"text":" le"},)"
        R"({"id":5608,"logprob":-2.4882812,"special":false,"text":" faire"}],)"
        R"("top_tokens":[[{"id":578,"logprob":-1.7822266,"special":false,"text":" le"}],)"
        R"([{"id":5608,"logprob":-2.4882812,"special":false,"text":" faire"},)"
        R"({"id":1,"logprob":-3.0,"special":false,"text":" la"}]]},)"
        R"("generated_text":" le faire"})";
    GenerationRequest req = openai_request("Pour déguster");
    req.prompt_logprob_start = 0;
    auto r = tgi().decode_response(body, req);
    REQUIRE(r.ok());
    const Choice& c = r->choices[0];
    REQUIRE(c.prompt_logprobs.size() == 3);
    CHECK_FALSE(c.prompt_logprobs[0].logprob);
    CHECK(c.prompt_logprobs[0].id == 17934);
    CHECK(c.prompt_logprobs[1].token == " dég");
    REQUIRE(c.logprobs.size() == 2);
    CHECK(c.logprobs[1].token == " faire");
    CHECK(c.logprobs[1].logprob == -2.4882812);
    CHECK(c.logprobs[1].special == false);
    REQUIRE(c.logprobs[1].top.size() == 2);
    CHECK(c.logprobs[1].top[1].token == " la");

    // From index 2 (an SGLang client's logprob_start_len): the first two prompt entries go.
    req.prompt_logprob_start = 2;
    r = tgi().decode_response(body, req);
    REQUIRE(r.ok());
    REQUIRE(r->choices[0].prompt_logprobs.size() == 1);
    CHECK(r->choices[0].prompt_logprobs[0].token == "uster");
    // Prompt entries not asked for are not kept.
    req.prompt_logprob_start.reset();
    CHECK(tgi().decode_response(body, req)->choices[0].prompt_logprobs.empty());

    // The §11.8 details capture: ten tokens with their logprobs; "top_tokens": null is none.
    r = tgi().decode_response(fixture("generate_response_details.json"), req);
    REQUIRE(r.ok());
    REQUIRE(r->choices[0].logprobs.size() == 10);
    CHECK(r->choices[0].logprobs[0].id == 363);
    CHECK(r->choices[0].logprobs[0].logprob == doctest::Approx(-1.5351562));
    CHECK(r->choices[0].logprobs[0].top.empty());

    auto bad = tgi().decode_response(
        R"({"generated_text":"x","details":{"finish_reason":"length","tokens":[{"id":1}]}})", req);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().status == 502);
}

TEST_CASE("tgi logprobs: encode_response writes TGI's Details with real entries") {
    GenerationRequest req = decode_ok(
        R"({"inputs":"Hi","parameters":{"details":true,"top_n_tokens":1,"decoder_input_details":true}})");
    GenerationResult result;
    Choice c;
    c.text = " ok";
    c.finish.kind = FinishKind::length;
    c.usage.completion_tokens = 1;
    c.prompt_logprobs = {entry("Hi", 10, std::nullopt)};
    c.logprobs = {entry(" ok", 12, -0.25, {alt(" ok", 12, -0.25), alt(" no", 13, -1.5)})};
    result.choices.push_back(c);
    std::string out;
    tgi().encode_response(result, req, out);
    CHECK(out == R"({"generated_text":" ok","details":{"finish_reason":"length",)"
                 R"("generated_tokens":1,"seed":null,)"
                 R"("prefill":[{"id":10,"text":"Hi","logprob":null}],)"
                 R"("tokens":[{"id":12,"text":" ok","logprob":-0.25,"special":false}],)"
                 R"("top_tokens":[[{"id":12,"text":" ok","logprob":-0.25,"special":false}]]}})");

    // details alone: no prefill, no top_tokens; a backend without logprobs leaves tokens empty.
    req = decode_ok(R"({"inputs":"Hi","parameters":{"details":true}})");
    out.clear();
    tgi().encode_response(result, req, out);
    CHECK(out.find(R"("prefill":[],"tokens":[{"id":12,)") != std::string::npos);
    CHECK(out.find("top_tokens") == std::string::npos);
    result.choices[0].logprobs.clear();
    out.clear();
    tgi().encode_response(result, req, out);
    CHECK(out.find(R"("prefill":[],"tokens":[]})") != std::string::npos);
}

TEST_CASE("tgi logprobs: stream events carry token.logprob and top_tokens, both ways") {
    // Decode: each token event is one entry (the special EOS too).
    StreamState dec;
    std::vector<StreamEvent> events;
    for (const std::string& p : sse_payloads("generate_stream_eos.sse")) {
        tgi().decode_stream_event(p, dec, events);
    }
    REQUIRE(events.size() >= 2);
    REQUIRE(events[0].logprobs.size() == 1);
    CHECK(events[0].logprobs[0].token == "Hello");
    CHECK(events[0].logprobs[0].logprob == -0.25);
    REQUIRE(events[1].logprobs.size() == 1);
    CHECK(events[1].logprobs[0].special == true);
    CHECK(events[1].logprobs[0].logprob == -0.01);

    events.clear();
    StreamState dec2;
    tgi().decode_stream_event(
        R"({"index":1,"token":{"id":5,"text":"a","logprob":-0.5,"special":false},)"
        R"("top_tokens":[{"id":5,"text":"a","logprob":-0.5,"special":false},)"
        R"({"id":6,"text":"b","logprob":-1.5,"special":false}],"generated_text":null,)"
        R"("details":null})",
        dec2, events);
    REQUIRE(events.size() == 1);
    REQUIRE(events[0].logprobs.size() == 1);
    REQUIRE(events[0].logprobs[0].top.size() == 2);
    CHECK(events[0].logprobs[0].top[1].token == "b");

    // Encode: the real logprob in token, top_tokens at most top_n_tokens, omitted when none.
    StreamState enc;
    infergate::canonical::set_logprob_request(
        enc, decode_ok(R"({"inputs":"x","parameters":{"top_n_tokens":1}})"));
    StreamEvent ev;
    ev.text = "a";
    ev.token_ids = {5};
    ev.usage.completion_tokens = 1;
    ev.logprobs = events[0].logprobs;
    std::string out;
    tgi().encode_stream_event(ev, enc, out);
    CHECK(out ==
          "data:{\"index\":1,\"token\":{\"id\":5,\"text\":\"a\",\"logprob\":-0.5,"
          "\"special\":false},\"top_tokens\":[{\"id\":5,\"text\":\"a\",\"logprob\":-0.5,"
          "\"special\":false}],\"generated_text\":null,\"details\":null}\n\n");
    StreamState plain;
    out.clear();
    tgi().encode_stream_event(ev, plain, out);
    CHECK(out ==
          "data:{\"index\":1,\"token\":{\"id\":5,\"text\":\"a\",\"logprob\":-0.5,"
          "\"special\":false},\"generated_text\":null,\"details\":null}\n\n");
}

TEST_CASE("tgi logprobs: a chunk of several tokens goes out as one event per token") {
    StreamState enc;
    infergate::canonical::set_logprob_request(
        enc, decode_ok(R"({"inputs":"x","parameters":{"details":true}})"));
    StreamEvent ev;
    ev.text = "ab";
    ev.token_ids = {5, 6};
    ev.usage.completion_tokens = 2;
    for (const auto& [text, lp] : {std::pair{"a", -0.5}, std::pair{"b", -1.5}}) {
        infergate::canonical::TokenLogprob t;
        t.token = text;
        t.logprob = lp;
        ev.logprobs.push_back(t);
    }
    std::string out;
    tgi().encode_stream_event(ev, enc, out);
    CHECK(out ==
          "data:{\"index\":1,\"token\":{\"id\":5,\"text\":\"a\",\"logprob\":-0.5,"
          "\"special\":false},\"generated_text\":null,\"details\":null}\n\n"
          "data:{\"index\":2,\"token\":{\"id\":6,\"text\":\"b\",\"logprob\":-1.5,"
          "\"special\":false},\"generated_text\":null,\"details\":null}\n\n");

    // Entries that do not spell the text: one event, as before (the text cannot be cut).
    StreamState enc2 = StreamState{};
    infergate::canonical::set_logprob_request(
        enc2, decode_ok(R"({"inputs":"x","parameters":{"details":true}})"));
    ev.text = "xy";
    out.clear();
    tgi().encode_stream_event(ev, enc2, out);
    CHECK(out ==
          "data:{\"index\":2,\"token\":{\"id\":6,\"text\":\"xy\",\"logprob\":-1.5,"
          "\"special\":false},\"generated_text\":null,\"details\":null}\n\n");
}
