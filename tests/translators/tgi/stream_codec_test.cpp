// translators/tgi/stream_decode.cpp and stream_encode.cpp: per-token TGI streams to canonical deltas and back.

#include <doctest/doctest.h>

#include "tests/translators/llamacpp/test_util.hpp"
#include "tests/translators/tgi/test_util.hpp"

namespace {

using infergate::canonical::Error;
using infergate::canonical::FinishKind;
using infergate::canonical::FinishReason;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using tgi_test::sse_payloads;
using tgi_test::tgi;

std::vector<StreamEvent> decode_all(const std::vector<std::string>& payloads, StreamState& s) {
    std::vector<StreamEvent> out;
    for (const std::string& p : payloads) {
        tgi().decode_stream_event(p, s, out);
    }
    return out;
}

std::string joined_text(const std::vector<StreamEvent>& evs) {
    std::string t;
    for (const auto& e : evs) {
        if (e.type == StreamEvent::Type::chunk) {
            t += e.text;
        }
    }
    return t;
}

StreamEvent chunk(std::string text, std::optional<int64_t> tokens = std::nullopt) {
    StreamEvent ev;
    ev.text = std::move(text);
    ev.usage.completion_tokens = tokens;
    return ev;
}

StreamEvent finishing(StreamEvent ev, FinishKind kind, std::optional<std::string> matched = {}) {
    FinishReason f;
    f.kind = kind;
    f.matched_text = std::move(matched);
    ev.finish = f;
    return ev;
}

void check_malformed(const std::string& data) {
    CAPTURE(data);
    StreamState s;
    std::vector<StreamEvent> out;
    tgi().decode_stream_event(data, s, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].type == StreamEvent::Type::error);
    CHECK(out[0].error.status == 502);
    CHECK(out[0].error.type == "upstream_error");
}

}  // namespace

TEST_CASE("tgi decode stream: the §11.8 final event alone") {
    StreamState s;
    const auto evs = decode_all(sse_payloads("generate_stream_final.sse"), s);
    REQUIRE(evs.size() == 2);
    CHECK(evs[0].type == StreamEvent::Type::chunk);
    CHECK(evs[0].text == "This is a picture of an anthropomorphic rabbit in a space suit.");
    REQUIRE(evs[0].finish.has_value());
    CHECK(evs[0].finish->kind == FinishKind::stop);  // details null: assumed a natural end
    CHECK(evs[1].type == StreamEvent::Type::done);
}

TEST_CASE("tgi decode stream: EOS is special and skipped; counts from details") {
    StreamState s;
    const auto evs = decode_all(sse_payloads("generate_stream_eos.sse"), s);
    REQUIRE(evs.size() == 3);
    CHECK(evs[0].text == "Hello");
    CHECK(evs[0].usage.completion_tokens == 1);
    CHECK_FALSE(evs[0].finish.has_value());
    CHECK(evs[1].text.empty());  // "</s>" is not text
    CHECK(evs[1].finish->kind == FinishKind::stop);
    CHECK_FALSE(evs[1].finish->matched_text.has_value());
    CHECK(evs[1].usage.completion_tokens == 2);
    CHECK(evs[1].usage.prompt_tokens == 4);
    CHECK(evs[2].type == StreamEvent::Type::done);
    // nothing after the final event counts
    std::vector<StreamEvent> more;
    tgi().decode_stream_event(R"({"index":3,"token":{"id":1,"text":"x","special":false}})", s,
                              more);
    CHECK(more.empty());
}

TEST_CASE("tgi decode stream: a stop string spanning tokens is held back and trimmed") {
    StreamState s;
    s.stop = {"Par"};
    const auto payloads = sse_payloads("generate_stream_stop.sse");
    std::vector<StreamEvent> evs;
    tgi().decode_stream_event(payloads[0], s, evs);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].text == " is");
    tgi().decode_stream_event(payloads[1], s, evs);
    REQUIRE(evs.size() == 2);
    CHECK(evs[1].text == " ");  // "Pa" may be the start of "Par": held back
    tgi().decode_stream_event(payloads[2], s, evs);
    REQUIRE(evs.size() == 4);
    CHECK(evs[2].text.empty());
    CHECK(evs[2].finish->kind == FinishKind::stop);
    CHECK(evs[2].finish->matched_text == "Par");
    CHECK(evs[2].usage.completion_tokens == 3);
    CHECK(evs[2].usage.prompt_tokens == 6);
    CHECK(joined_text(evs) == " is ");

    // without stop strings to trim (a client that keeps them) the text is TGI's
    StreamState keep;
    CHECK(joined_text(decode_all(payloads, keep)) == " is Par");
}

TEST_CASE("tgi decode stream: held text that was not a stop goes out") {
    StreamState s;
    s.stop = {"Par"};
    std::vector<StreamEvent> evs;
    tgi().decode_stream_event(R"({"index":1,"token":{"id":1,"text":"Pa","special":false}})", s,
                              evs);
    // The token is passed on (its id), its text held back.
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].text.empty());
    CHECK(evs[0].token_ids == std::vector<int64_t>{1});
    evs.clear();
    tgi().decode_stream_event(
        R"({"index":2,"token":{"id":2,"text":"nda","special":false},"generated_text":"Panda","details":{"finish_reason":"length","generated_tokens":2}})",
        s, evs);
    REQUIRE(evs.size() == 2);
    CHECK(evs[0].text == "Panda");
    CHECK(evs[0].token_ids == std::vector<int64_t>{2});
    CHECK(evs[0].finish->kind == FinishKind::length);
}

TEST_CASE("tgi decode stream: in-band errors and malformed data") {
    StreamState s;
    std::vector<StreamEvent> evs;
    tgi().decode_stream_event(
        R"({"error":"Input validation error: `inputs` must have less than 4096 tokens","error_type":"validation"})",
        s, evs);
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].type == StreamEvent::Type::error);
    CHECK(evs[0].error.status == 422);
    CHECK(evs[0].error.type == "invalid_request_error");
    CHECK(evs[0].error.code == "validation");
    CHECK(evs[0].error.message.find("Input validation error") == 0);
    evs.clear();
    tgi().decode_stream_event(R"({"error":"Model is overloaded","error_type":"overloaded"})", s,
                              evs);
    CHECK(evs[0].error.status == 429);
    evs.clear();
    tgi().decode_stream_event(
        R"({"error":"Incomplete generation stream","error_type":"incomplete_generation_stream"})",
        s, evs);
    CHECK(evs[0].error.status == 500);
    CHECK(evs[0].error.type == "upstream_error");

    check_malformed("{nope");
    check_malformed("[1]");
    check_malformed(R"({"index":1})");
    check_malformed(R"({"index":1,"token":{"id":1}})");
    check_malformed(R"({"index":1,"token":"x"})");
    check_malformed(R"({"index":1,"token":{"text":"a"},"generated_text":5})");
    check_malformed(R"({"token":{"text":"a"},"generated_text":"a","details":{"finish_reason":"x"}})");
    check_malformed(R"({"token":{"text":"a"},"generated_text":"a","details":7})");
    check_malformed(
        R"({"token":{"text":"a"},"generated_text":"a","details":{"finish_reason":"length","generated_tokens":"2"}})");
    std::vector<StreamEvent> none;
    tgi().decode_stream_event("  \r\n", s, none);
    CHECK(none.empty());
}

TEST_CASE("tgi encode stream: exact bytes of token and final events") {
    StreamState s;
    std::string out;
    tgi().encode_stream_event(chunk("Hello", 1), s, out);
    CHECK(out ==
          "data:{\"index\":1,\"token\":{\"id\":0,\"text\":\"Hello\",\"logprob\":null,"
          "\"special\":false},\"generated_text\":null,\"details\":null}\n\n");
    out.clear();
    // a chunk of three tokens is one event carrying the whole delta
    tgi().encode_stream_event(finishing(chunk(" world!", 4), FinishKind::length), s, out);
    CHECK(out ==
          "data:{\"index\":4,\"token\":{\"id\":0,\"text\":\" world!\",\"logprob\":null,"
          "\"special\":false},\"generated_text\":\"Hello world!\","
          "\"details\":null}\n\n");
    out.clear();
    tgi().encode_stream_event(chunk("late"), s, out);  // after the finish: nothing
    tgi().encode_stream_end(s, out);
    tgi().encode_stream_end(s, out);
    CHECK(out.empty());  // no terminator
    CHECK(s.ended);
}

TEST_CASE("tgi encode stream: details held until the usage report") {
    StreamState s;
    s.include_usage = true;  // the client's parameters.details
    std::string out;
    tgi().encode_stream_event(chunk("Hi"), s, out);
    out.clear();
    // an OpenAI upstream: finish chunk without counts, then the usage chunk
    tgi().encode_stream_event(finishing(chunk(""), FinishKind::stop, "END"), s, out);
    CHECK(out.empty());
    StreamEvent usage;
    usage.type = StreamEvent::Type::usage;
    usage.usage.prompt_tokens = 5;
    usage.usage.completion_tokens = 2;
    tgi().encode_stream_event(usage, s, out);
    // The exact count (2) includes the last token: indexes run 1, 2 like generated_tokens.
    CHECK(out ==
          "data:{\"index\":2,\"token\":{\"id\":0,\"text\":\"\",\"logprob\":null,"
          "\"special\":true},\"generated_text\":\"Hi\",\"details\":{"
          "\"finish_reason\":\"stop_sequence\",\"generated_tokens\":2,\"seed\":null,"
          "\"input_length\":5}}\n\n");
    out.clear();
    StreamEvent done;
    done.type = StreamEvent::Type::done;
    tgi().encode_stream_event(done, s, out);
    tgi().encode_stream_end(s, out);
    CHECK(out.empty());

    // without a usage report the held final event goes out at the end, once
    StreamState t;
    t.include_usage = true;
    tgi().encode_stream_event(finishing(chunk("abc"), FinishKind::length), t, out);
    CHECK(out.empty());
    tgi().encode_stream_end(t, out);
    CHECK(out ==
          "data:{\"index\":1,\"token\":{\"id\":0,\"text\":\"abc\",\"logprob\":null,"
          "\"special\":false},\"generated_text\":\"abc\",\"details\":{"
          "\"finish_reason\":\"length\",\"generated_tokens\":1,\"seed\":null}}\n\n");
    const size_t size = out.size();
    tgi().encode_stream_end(t, out);
    CHECK(out.size() == size);
}

TEST_CASE("tgi encode stream: in-band errors") {
    StreamState s;
    std::string out;
    Error e;
    e.status = 500;
    e.message = "the backend went away";
    e.type = "upstream_error";
    tgi().encode_stream_error(e, s, out);
    CHECK(out == "data:{\"error\":\"the backend went away\",\"error_type\":\"generation\"}\n\n");
    tgi().encode_stream_error(e, s, out);
    tgi().encode_stream_end(s, out);
    CHECK(out == "data:{\"error\":\"the backend went away\",\"error_type\":\"generation\"}\n\n");

    StreamState a;
    out.clear();
    FinishReason abort;
    abort.kind = FinishKind::abort;
    abort.message = "aborted by the scheduler";
    StreamEvent ev = chunk("x", 1);
    ev.finish = abort;
    tgi().encode_stream_event(ev, a, out);
    CHECK(out.find("\"text\":\"x\"") != std::string::npos);
    CHECK(out.find("data:{\"error\":\"aborted by the scheduler\",\"error_type\":\"generation\"}") !=
          std::string::npos);
    CHECK(a.ended);
}

TEST_CASE("tgi round trip: canonical -> TGI stream -> canonical") {
    for (const auto kind : {FinishKind::length, FinishKind::stop}) {
        StreamState enc;
        enc.include_usage = true;
        std::string wire;
        tgi().encode_stream_event(chunk("Deep", 1), enc, wire);
        tgi().encode_stream_event(chunk(" learn\xC3\xA9", 3), enc, wire);
        tgi().encode_stream_event(finishing(chunk("ing", 4), kind), enc, wire);
        tgi().encode_stream_end(enc, wire);
        // split the wire bytes back into data payloads
        std::vector<std::string> payloads;
        size_t at = 0;
        while (at < wire.size()) {
            const size_t end = wire.find("\n\n", at);
            REQUIRE(end != std::string::npos);
            REQUIRE(wire.compare(at, 5, "data:") == 0);
            payloads.push_back(wire.substr(at + 5, end - at - 5));
            at = end + 2;
        }
        CHECK(payloads.size() == 3);
        StreamState dec;
        const auto evs = decode_all(payloads, dec);
        CHECK(joined_text(evs) == "Deep learn\xC3\xA9ing");
        REQUIRE(evs.size() == 4);
        CHECK(evs[2].finish->kind == kind);
        CHECK(evs[2].usage.completion_tokens == 4);
        CHECK(evs[3].type == StreamEvent::Type::done);
    }
}

namespace {

struct TgiEvent {
    int64_t index;
    int64_t id;
    std::string text;
    bool special;
    bool final;
};

// The TGI events a client gets for `events` (decoded from some backend).
std::vector<TgiEvent> tgi_events(const std::vector<StreamEvent>& events, StreamState enc) {
    std::string out;
    for (const StreamEvent& ev : events) {
        tgi().encode_stream_event(ev, enc, out);
    }
    tgi().encode_stream_end(enc, out);
    infergate::framing::SseScanner scanner;
    std::vector<infergate::framing::SseEvent> sse;
    scanner.feed(out, sse);
    std::vector<TgiEvent> got;
    for (const auto& e : sse) {
        infergate::json::Document d;
        REQUIRE(!infergate::json::parse(e.data, d, "event"));
        const auto& token = d["token"];
        got.push_back({d["index"].GetInt64(), token["id"].GetInt64(),
                       std::string(infergate::json::view(token["text"])),
                       token["special"].GetBool(), !d["generated_text"].IsNull()});
    }
    return got;
}

}  // namespace

// Issue 16 item 4: one event per generated token, the engine's token ids, the last token's event
// carrying generated_text (TGI router's generate_stream_internal), whatever the backend.
TEST_CASE("tgi encode stream: TGI backend, one event per token with its id") {
    StreamState dec;
    const auto events = decode_all(sse_payloads("generate_stream_eos.sse"), dec);
    StreamState enc;
    enc.include_usage = true;
    const auto got = tgi_events(events, enc);
    REQUIRE(got.size() == 2);
    CHECK(got[0].index == 1);
    CHECK(got[0].id == 15043);
    CHECK(got[0].text == "Hello");
    CHECK_FALSE(got[0].final);
    CHECK(got[1].index == 2);
    CHECK(got[1].id == 2);  // the EOS token, special, ends it
    CHECK(got[1].special);
    CHECK(got[1].final);
}

TEST_CASE("tgi encode stream: llama.cpp backend, exactly n_predict events") {
    StreamState dec;
    dec.max_tokens = 4;
    std::vector<StreamEvent> events;
    for (const std::string& p :
         llamacpp_test::sse_payloads("completion_stream_real_c392e509.sse")) {
        infergate::translators::llamacpp::codec().decode_stream_event(p, dec, events);
    }
    StreamState enc;
    enc.include_usage = true;
    enc.max_tokens = 4;
    const auto got = tgi_events(events, enc);
    REQUIRE(got.size() == 4);
    const int64_t ids[] = {14747, 6135, 29922, 26428};
    for (size_t i = 0; i < 4; ++i) {
        CHECK(got[i].index == static_cast<int64_t>(i) + 1);
        CHECK(got[i].id == ids[i]);
        CHECK_FALSE(got[i].special);
        CHECK(got[i].final == (i == 3));
    }
    CHECK(got[3].text == " Diplom");
}

TEST_CASE("tgi encode stream: llama.cpp EOS, the EOS token's event is the last") {
    StreamState dec;
    std::vector<StreamEvent> events;
    for (
        const char* p :
        {R"({"index":0,"content":"Hi","tokens":[5],"stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":2})",
         R"({"index":0,"content":"","tokens":[32000],"stop":false,"id_slot":-1,"tokens_predicted":2,"tokens_evaluated":2})",
         R"({"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":2,"tokens_evaluated":2,"stop_type":"eos","stopping_word":"","timings":{"prompt_n":2}})"}) {
        infergate::translators::llamacpp::codec().decode_stream_event(p, dec, events);
    }
    StreamState enc;
    enc.include_usage = true;
    const auto got = tgi_events(events, enc);
    REQUIRE(got.size() == 2);
    CHECK(got[0].id == 5);
    CHECK_FALSE(got[0].final);
    CHECK(got[1].id == 32000);
    CHECK(got[1].index == 2);
    CHECK(got[1].special);
    CHECK(got[1].final);
}
