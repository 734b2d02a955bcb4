#pragma once
// Whole (non-streaming) responses and error bodies.

#include <string>
#include <string_view>

#include "translators/codec.hpp"
#include "translators/openai/common.hpp"

namespace infergate::translators::openai {

void encode_response(const GenerationResult& result, const GenerationRequest& req, std::string& out,
                     Api api);

void encode_error(const Error& error, std::string& out);

Result<GenerationResult> decode_response(std::string_view body, const GenerationRequest& req,
                                         Api api);

// The fast path's check (Codec::check_response): one validating pass that reads the usage and
// the finish and checks the shape (scan_response_usage); anything else is left to
// decode_response, so that the error is the same.
Result<canonical::ResponseFacts> check_response(std::string_view body, const GenerationRequest& req,
                                                Api api);

}  // namespace infergate::translators::openai
