#pragma once
// Requests: OpenAI client bodies to canonical, canonical to OpenAI-compatible backend bodies.

#include <string>
#include <string_view>

#include "translators/codec.hpp"
#include "translators/openai/common.hpp"

namespace infergate::translators::openai {

Result<GenerationRequest> decode_request(std::string_view body, Api api);

Result<std::string> encode_request(const GenerationRequest& req, const UpstreamOptions& options,
                                   Api api);

}  // namespace infergate::translators::openai
