#pragma once
// Requests: OpenAI client bodies to canonical, canonical to OpenAI-compatible backend bodies.

#include <optional>
#include <string>
#include <string_view>

#include "translators/codec.hpp"
#include "translators/openai/common.hpp"

namespace infergate::translators::openai {

Result<GenerationRequest> decode_request(std::string_view body, Api api);

Result<std::string> encode_request(const GenerationRequest& req, const UpstreamOptions& options,
                                   Api api);

// The halves of decode_request: request_decode.cpp reads the body, the prompt or the messages,
// and sampling_decode.cpp the settings. A token id is an integer >= 0 (both halves read them).
inline bool is_token_id(const json::Value& v) {
    return v.IsInt64() && v.GetInt64() >= 0;
}

std::optional<canonical::Error> decode_sampling(const json::Value& doc, Api api,
                                                GenerationRequest& req);

// stream_options: {include_usage, continuous_usage_stats}, only with stream: true.
std::optional<canonical::Error> decode_stream_options(const json::Value& doc,
                                                      GenerationRequest& req);

// What request_checks.cpp gives request_encode.cpp (check_upstream_settings, in codec.hpp, is the
// exchange's entry to the same checks).

// The backend's name in messages ("TGI's OpenAI-compatible chat route", ...).
std::string_view backend_name(Flavor flavor);

// A 400 naming a sampling setting the OpenAI-compatible layer of `flavor` cannot honour.
std::optional<canonical::Error> check_settings(const canonical::SamplingParams& s, Flavor flavor,
                                               canonical::Dialect client);

// Ask for logprobs: wanted, or welcome where the backend has them (TGI's details).
bool logprobs_sent(const GenerationRequest& req, Flavor flavor, Api api);

// The 400 for log probabilities the backend's OpenAI layer cannot give; nullopt when it can.
std::optional<canonical::Error> check_logprobs(const GenerationRequest& req, Flavor flavor,
                                               Api api);

}  // namespace infergate::translators::openai
