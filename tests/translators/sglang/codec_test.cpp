// translators/sglang/codec.cpp: identity, routing and SGLang's error envelopes.

#include <doctest/doctest.h>

#include "translators/sglang/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
namespace tr = infergate::translators;

}  // namespace

TEST_CASE("sglang codec: identity and registry") {
    const tr::Codec& c = tr::sglang::codec();
    CHECK(c.dialect() == Dialect::sglang);
    CHECK(c.framing() == tr::Framing::sse);
    CHECK(&tr::codec_for(Dialect::sglang) == &c);
    CHECK(c.upstream_path(GenerationRequest{}) == "/generate");
}

TEST_CASE("sglang codec: upstream error envelopes (api-dialects §4.7, §10.14)") {
    const tr::Codec& c = tr::sglang::codec();
    auto e = c.decode_error(400, R"({"error": {"message": "Either text, input_ids or )"
                                 R"(input_embeds should be provided."}})");
    CHECK(e.status == 400);
    CHECK(e.message == "Either text, input_ids or input_embeds should be provided.");
    e = c.decode_error(400, R"({"object": "error", "message": "field required", )"
                            R"("type": "Bad Request", "param": null, "code": 400})");
    CHECK(e.message == "field required");
    e = c.decode_error(401, R"({"error": "Unauthorized"})");
    CHECK(e.status == 401);
    CHECK(e.message == "Unauthorized");
    e = c.decode_error(404, R"({"detail":"Not Found"})");
    CHECK(e.message == "Not Found");
    e = c.decode_error(500, "Internal Server Error\n");
    CHECK(e.message == "Internal Server Error");
}

TEST_CASE("sglang choice_ids_wanted: one meta_info.id per prompt and sample, unless named") {
    using infergate::canonical::GenerationRequest;
    using infergate::canonical::Prompt;
    const auto& c = infergate::translators::codec_for(infergate::canonical::Dialect::sglang);
    GenerationRequest req;
    CHECK(c.choice_ids_wanted(req) == 1);  // one prompt (or none yet), one sample
    req.prompts = {Prompt{"a", {}, false}, Prompt{"b", {}, false}};
    req.sampling.n = 3;
    CHECK(c.choice_ids_wanted(req) == 6);
    req.request_ids = {"x", "y", "z", "u", "v", "w"};
    CHECK(c.choice_ids_wanted(req) == 0);  // the client's own rid
}
