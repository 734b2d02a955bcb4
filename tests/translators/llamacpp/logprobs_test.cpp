// llama.cpp log probabilities (n_probs → completion_probabilities), both directions, against the
// real llama-server c392e509's own answers (tests/fixtures/llamacpp/README.md).

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/llamacpp/test_util.hpp"
#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"

namespace {

using namespace infergate;
using canonical::Dialect;
using canonical::GenerationRequest;
using canonical::StreamEvent;
using canonical::StreamState;
using llamacpp_test::fixture;
using llamacpp_test::llama;

GenerationRequest request(Dialect d) {
    GenerationRequest req;
    req.dialect = d;
    req.prompts.push_back({"Hello world", {}, false});
    req.sampling.max_tokens = 3;
    return req;
}

// The compact serialization of `key` in a JSON document (to compare one member exactly).
std::string member(std::string_view body, std::string_view key) {
    json::Document doc;
    REQUIRE_FALSE(json::parse(body, doc, "body", json::Numbers::exact));
    const json::Value* v = json::find(doc, key);
    REQUIRE_MESSAGE(v != nullptr, key);
    return json::to_string(*v);
}

std::vector<std::string> sse_payloads(std::string_view bytes) {
    framing::SseScanner scanner;
    std::vector<framing::SseEvent> events;
    scanner.feed(bytes, events);
    scanner.finish(events);
    std::vector<std::string> out;
    for (const auto& e : events) {
        out.push_back(e.data);
    }
    return out;
}

}  // namespace

TEST_CASE("llamacpp: n_probs asks for logprobs; every client's request reaches it as n_probs") {
    auto own = llama().decode_request(R"({"prompt":"x","n_probs":2})");
    REQUIRE(own.ok());
    CHECK(own->return_logprob == true);
    CHECK(own->top_logprobs == 2);
    auto off = llama().decode_request(R"({"prompt":"x","n_probs":0})");
    REQUIRE(off.ok());
    CHECK_FALSE(off->return_logprob.has_value());

    GenerationRequest req = request(Dialect::openai_completions);
    req.return_logprob = true;
    req.top_logprobs = 0;  // the chosen token only: n_probs must still be at least 1
    CHECK(member(*llama().encode_request(req, {}), "n_probs") == "1");
    req.top_logprobs = 5;
    CHECK(member(*llama().encode_request(req, {}), "n_probs") == "5");
    req.return_logprob.reset();
    req.top_logprobs.reset();
    req.logprobs_if_available = true;  // TGI details: not worth a vocabulary sort per token
    CHECK(llama().encode_request(req, {})->find("n_probs") == std::string::npos);
}

TEST_CASE("llamacpp decode_response: the real engine's completion_probabilities") {
    GenerationRequest req = request(Dialect::openai_completions);
    req.return_logprob = true;
    req.top_logprobs = 2;
    auto r = llama().decode_response(fixture("completion_logprobs_real_c392e509.json"), req);
    REQUIRE(r.ok());
    const auto& lp = r->choices.at(0).logprobs;
    REQUIRE(lp.size() == 3);
    CHECK(lp[0].id == 5799);
    CHECK(lp[0].token == " immedi");
    CHECK(lp[0].logprob == doctest::Approx(-4.445470809936523));
    REQUIRE(lp[0].top.size() == 2);
    CHECK(lp[0].top[1].id == 4379);
    CHECK(lp[0].top[1].token == "iale");
    std::string text;
    for (const auto& t : lp) {
        text += t.bytes ? *t.bytes : t.token;
    }
    CHECK(text == r->choices[0].text);  // one entry per generated token, in order
    // Not carried raw any more: it is canonical, and written back from there.
    CHECK(r->choices[0].carried.find("completion_probabilities") == nullptr);
}

TEST_CASE("llamacpp encode_response: completion_probabilities byte for byte as the engine") {
    GenerationRequest req = request(Dialect::llamacpp);
    req.return_logprob = true;
    req.top_logprobs = 2;
    const std::string real = fixture("completion_logprobs_real_c392e509.json");
    auto r = llama().decode_response(real, req);
    REQUIRE(r.ok());
    std::string out;
    llama().encode_response(*r, req, out);
    CHECK(member(out, "completion_probabilities") == member(real, "completion_probabilities"));
    CHECK(out.rfind(",\"completion_probabilities\":") != std::string::npos);

    req.top_logprobs = 1;  // fewer alternatives than the backend gave: cut, never invented
    out.clear();
    llama().encode_response(*r, req, out);
    json::Document doc;
    REQUIRE_FALSE(json::parse(out, doc));
    CHECK(doc["completion_probabilities"][0]["top_logprobs"].Size() == 1);

    req.return_logprob.reset();  // not asked: not written
    req.top_logprobs.reset();
    out.clear();
    llama().encode_response(*r, req, out);
    CHECK(out.find("completion_probabilities") == std::string::npos);
}

TEST_CASE("llamacpp: post_sampling_probs round trip keeps prob and top_probs exactly") {
    auto own = llama().decode_request(R"({"prompt":"x","n_probs":2,"post_sampling_probs":true})");
    REQUIRE(own.ok());
    CHECK(own->post_sampling_probs);
    // It reaches a llama.cpp backend (as the client's own key) ...
    CHECK(member(*llama().encode_request(*own, {}), "post_sampling_probs") == "true");
    // ... and nothing else: probabilities after sampling are not logprobs.
    auto refused = translators::codec_for(Dialect::tgi).encode_request(*own, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().param == "post_sampling_probs");

    const std::string real = fixture("completion_post_sampling_real_c392e509.json");
    auto r = llama().decode_response(real, *own);
    REQUIRE(r.ok());
    CHECK(r->choices[0].logprobs.at(0).prob == 1.0);
    std::string out;
    llama().encode_response(*r, *own, out);
    CHECK(member(out, "completion_probabilities") == member(real, "completion_probabilities"));
}

TEST_CASE("llamacpp stream: each event's completion_probabilities, both directions") {
    GenerationRequest req = request(Dialect::llamacpp);
    req.return_logprob = true;
    req.top_logprobs = 2;
    const std::string real = fixture("completion_logprobs_stream_real_c392e509.sse");
    StreamState dec;
    canonical::set_logprob_request(dec, req);
    dec.client = Dialect::llamacpp;
    StreamState enc = dec;
    enc.client.reset();
    std::vector<StreamEvent> events;
    const auto payloads = sse_payloads(real);
    for (const auto& p : payloads) {
        llama().decode_stream_event(p, dec, events);
    }
    size_t entries = 0;
    for (const auto& ev : events) {
        entries += ev.logprobs.size();
        if (!ev.text.empty()) {
            REQUIRE(ev.logprobs.size() == 1);  // one token per event, its entry with it
            CHECK(ev.logprobs[0].token == ev.text);
        }
    }
    CHECK(entries == 3);

    std::string out;
    for (const auto& ev : events) {
        llama().encode_stream_event(ev, enc, out);
    }
    llama().encode_stream_end(enc, out);
    const auto written = sse_payloads(out);
    size_t compared = 0;
    for (size_t i = 0; i < payloads.size() && i < written.size(); ++i) {
        if (payloads[i].find("completion_probabilities") == std::string::npos) {
            continue;
        }
        CHECK(member(written[i], "completion_probabilities") ==
              member(payloads[i], "completion_probabilities"));
        ++compared;
    }
    CHECK(compared == 3);

    // Another client's stream gets no entries it did not ask for.
    StreamState plain;
    out.clear();
    for (const auto& ev : events) {
        llama().encode_stream_event(ev, plain, out);
    }
    CHECK(out.find("completion_probabilities") == std::string::npos);
}
