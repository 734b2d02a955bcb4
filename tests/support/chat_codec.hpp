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

// What the backend's encoder makes of `req`: its body or its refusal.
inline canonical::Result<std::string> send(canonical::Dialect backend,
                                           const canonical::GenerationRequest& req,
                                           translators::Flavor flavor) {
    translators::UpstreamOptions options;
    options.flavor = flavor;
    return translators::codec_for(backend).encode_request(req, options);
}

inline std::string encode(canonical::Dialect backend, const canonical::GenerationRequest& req,
                          translators::Flavor flavor = translators::Flavor::vllm) {
    auto r = send(backend, req, flavor);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r.value());
}

inline canonical::Error refusal(canonical::Dialect backend, const canonical::GenerationRequest& req,
                                translators::Flavor flavor = translators::Flavor::vllm) {
    auto r = send(backend, req, flavor);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

}  // namespace infergate::testing
