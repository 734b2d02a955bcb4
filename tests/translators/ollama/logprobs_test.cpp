// Ollama log probabilities (logprobs / top_logprobs → logprobs[] of each line and of the whole
// answer), both directions. Shapes from ollama's api/types.go (Logprob, TokenLogprob: token,
// logprob, bytes and top_logprobs omitempty) and server/logprob.go (bytes from the token text);
// where the member sits from ChatResponse (after done_reason) and GenerateResponse (last).

#include <doctest/doctest.h>

#include <string>

#include "tests/translators/ollama/test_util.hpp"
#include "translators/canonical/logprobs.hpp"

namespace {

using namespace infergate;
using canonical::Dialect;
using canonical::GenerationRequest;
using canonical::StreamEvent;
using canonical::StreamState;
namespace ollama = translators::ollama;

canonical::TokenLogprob entry(std::string token, double lp,
                              std::vector<std::pair<std::string, double>> top) {
    canonical::TokenLogprob t;
    t.token = std::move(token);
    t.logprob = lp;
    for (auto& [tok, v] : top) {
        canonical::TokenAlternative a;
        a.token = tok;
        a.logprob = v;
        t.top.push_back(a);
    }
    return t;
}

}  // namespace

TEST_CASE("ollama decode_request: logprobs and top_logprobs as Ollama reads them") {
    auto r = ollama::chat_codec().decode_request(
        R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3})");
    REQUIRE(r.ok());
    CHECK(r->return_logprob == true);
    CHECK(r->top_logprobs == 3);
    CHECK(r->extras.empty());  // canonical now, not an extra another backend would refuse
    // "Only applies when Logprobs is true".
    r = ollama::chat_codec().decode_request(
        R"({"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":3})");
    REQUIRE(r.ok());
    CHECK_FALSE(canonical::wants_logprobs(*r));
    r = ollama::chat_codec().decode_request(
        R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().param == "top_logprobs");
}

TEST_CASE("ollama encode_request: logprobs asked under Ollama's names") {
    GenerationRequest req;
    req.dialect = Dialect::openai_chat;
    req.kind = canonical::RequestKind::chat;
    req.messages.push_back(infergate::canonical::text_message("user", "x"));
    req.return_logprob = true;
    req.top_logprobs = 2;
    auto body = ollama::chat_codec().encode_request(req, {});
    REQUIRE(body.ok());
    CHECK(body->find(R"("stream":false,"logprobs":true,"top_logprobs":2)") != std::string::npos);
    req.top_logprobs = 0;
    body = ollama::chat_codec().encode_request(req, {});
    CHECK(body->find(R"("logprobs":true)") != std::string::npos);
    CHECK(body->find("top_logprobs") == std::string::npos);
    req.return_logprob.reset();
    req.logprobs_if_available = true;  // TGI details: not worth a softmax per token
    CHECK(ollama::chat_codec().encode_request(req, {})->find("logprobs") == std::string::npos);
}

TEST_CASE("ollama whole answers: logprobs read, and written where each answer has them") {
    const std::string chat =
        R"({"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi!"},)"
        R"("done":true,"done_reason":"stop","logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],)"
        R"("top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]},{"token":"Hey","logprob":-1.5,"bytes":[72,101,121]}]},)"
        R"({"token":"!","logprob":-0.5,"bytes":[33]}],"total_duration":5,"eval_count":2})";
    GenerationRequest req;
    req.dialect = Dialect::ollama_chat;
    req.kind = canonical::RequestKind::chat;
    req.model = "m";
    req.return_logprob = true;
    req.top_logprobs = 2;
    auto r = ollama::chat_codec().decode_response(chat, req);
    REQUIRE(r.ok());
    REQUIRE(r->choices[0].logprobs.size() == 2);
    CHECK(r->choices[0].logprobs[0].top.size() == 2);
    CHECK(r->choices[0].carried.find("logprobs") == nullptr);

    std::string out;
    ollama::chat_codec().encode_response(*r, req, out);
    CHECK(
        out.find(
            R"("done":true,"done_reason":"stop","logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[)") !=
        std::string::npos);
    CHECK(out.find(R"({"token":"!","logprob":-0.5,"bytes":[33]}])") != std::string::npos);

    GenerationRequest gen = req;
    gen.dialect = Dialect::ollama_generate;
    gen.kind = canonical::RequestKind::completion;
    gen.top_logprobs = 1;
    out.clear();
    ollama::generate_codec().encode_response(*r, gen, out);
    // GenerateResponse: after the metrics, the last member; one alternative as asked.
    CHECK(out.ends_with(
        R"("eval_count":2,"logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]},{"token":"!","logprob":-0.5,"bytes":[33]}]})"));

    gen.return_logprob.reset();
    gen.top_logprobs.reset();
    out.clear();
    ollama::generate_codec().encode_response(*r, gen, out);
    CHECK(out.find("logprobs") == std::string::npos);
}

TEST_CASE("ollama streams: each line's logprobs, both directions") {
    StreamState dec;
    std::vector<StreamEvent> events;
    ollama::chat_codec().decode_stream_event(
        R"({"model":"m","created_at":"t","message":{"role":"assistant","content":"Hi"},"done":false,"logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]})",
        dec, events);
    ollama::chat_codec().decode_stream_event(
        R"({"model":"m","created_at":"t","message":{"role":"assistant","content":""},"done":false,"logprobs":[{"token":"","logprob":-3}]})",
        dec, events);
    ollama::chat_codec().decode_stream_event(
        R"({"model":"m","created_at":"t","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":2})",
        dec, events);
    REQUIRE(events.size() >= 3);
    CHECK(events[0].logprobs.size() == 1);
    CHECK(events[1].logprobs.size() == 1);  // a token without text is still a token
    CHECK(events[1].text.empty());

    ollama::chat_codec().decode_stream_event(
        R"({"message":{"content":"x"},"done":false,"logprobs":{"token":"x"}})", dec, events);
    CHECK(events.back().type == StreamEvent::Type::error);

    StreamState enc;
    enc.model = "m";
    GenerationRequest req;
    req.return_logprob = true;
    canonical::set_logprob_request(enc, req);
    std::string out;
    StreamEvent ev;
    ev.text = "Hi";
    ev.logprobs.push_back(entry("Hi", -0.25, {{"Ho", -2}}));
    ollama::generate_codec().encode_stream_event(ev, enc, out);
    CHECK(
        out.find(
            R"("response":"Hi","done":false,"logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]})") !=
        std::string::npos);  // no alternatives asked: none written (omitempty)
}
