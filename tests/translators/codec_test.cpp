// translators/codec.cpp: the hooks' defaults (a dialect that needs none changes nothing) and
// the id prefix every dialect's clients expect.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "translators/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::Prompt;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::translators::codec_for;
using infergate::translators::HeaderList;

constexpr Dialect kAll[] = {Dialect::sglang,   Dialect::openai_completions, Dialect::openai_chat,
                            Dialect::tgi,      Dialect::ollama_generate,    Dialect::ollama_chat,
                            Dialect::llamacpp, Dialect::vllm_legacy,        Dialect::anthropic};

class AllHeaders final : public infergate::translators::ResponseHeaders {
public:
    std::string_view find(std::string_view) const override { return "9"; }
};

GenerationRequest request(Dialect d) {
    GenerationRequest req;
    req.dialect = d;
    req.prompts.push_back(Prompt{"p", {}, false});
    req.sampling.max_tokens = 3;
    req.echo = true;
    req.stream = true;
    return req;
}

}  // namespace

TEST_CASE("codec id_prefix per client dialect") {
    for (Dialect d : kAll) {
        CAPTURE(infergate::canonical::to_string(d));
        const std::string_view expected = d == Dialect::openai_chat ? "chatcmpl-"
                                          : d == Dialect::anthropic ? "msg_"
                                                                    : "cmpl-";
        CHECK(codec_for(d).id_prefix() == expected);
    }
}

TEST_CASE("codec hooks: the defaults change nothing") {
    for (Dialect d : kAll) {
        if (d == Dialect::tgi || d == Dialect::vllm_legacy) {
            continue;  // tests/translators/<dialect>/hooks_test.cpp
        }
        CAPTURE(infergate::canonical::to_string(d));
        const auto& c = codec_for(d);
        GenerationRequest req = request(d);
        c.prepare_request(req, "/");
        CHECK(req.echo);
        CHECK(req.stream);
        CHECK(req.extras.empty());

        StreamState enc;
        c.init_client_stream(enc, req);
        CHECK(enc.prompt.empty());
        CHECK_FALSE(enc.max_tokens);
        StreamState dec;
        c.init_upstream_stream(dec, req);
        CHECK(dec.prompt.empty());
        CHECK_FALSE(dec.max_tokens);
        if (d != Dialect::sglang) {  // tests/translators/sglang/codec_test.cpp
            CHECK(c.choice_ids_wanted(req) == 0);
        }
        std::vector<StreamEvent> events;
        c.decode_stream_end(dec, events);
        CHECK(events.empty());  // no terminator seen: the proxy reports a truncation

        GenerationResult r;
        r.usage.prompt_tokens = 1;
        r.usage.completion_tokens = 2;
        HeaderList headers;
        c.response_headers(r, headers);
        CHECK(headers.empty());
        GenerationResult bare;
        c.read_response_headers(AllHeaders(), bare);
        CHECK_FALSE(bare.usage.prompt_tokens);
    }
}
