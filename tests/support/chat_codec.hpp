#pragma once
// Request helpers shared by the round-trip tests of the chat dialects: a client's body decoded
// (the test fails, showing why, when it is refused), a request encoded for a backend, and a
// backend's refusal.

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>

#include "translators/codec.hpp"

namespace infergate::testing {

inline canonical::GenerationRequest decode(canonical::Dialect client, std::string_view body) {
    INFO(body);
    auto r = translators::codec_for(client).decode_request(body);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r.value());
}

inline std::string encode(canonical::Dialect backend, const canonical::GenerationRequest& req,
                          translators::Flavor flavor = translators::Flavor::vllm) {
    translators::UpstreamOptions options;
    options.flavor = flavor;
    auto r = translators::codec_for(backend).encode_request(req, options);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r.value());
}

inline canonical::Error refusal(canonical::Dialect backend, const canonical::GenerationRequest& req,
                                translators::Flavor flavor = translators::Flavor::vllm) {
    translators::UpstreamOptions options;
    options.flavor = flavor;
    auto r = translators::codec_for(backend).encode_request(req, options);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

}  // namespace infergate::testing
