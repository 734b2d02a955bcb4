#pragma once
// Streams: canonical events to OpenAI SSE chunks for clients, backend SSE payloads to canonical
// events.

#include <string>
#include <string_view>
#include <vector>

#include "translators/codec.hpp"
#include "translators/openai/common.hpp"

namespace infergate::translators::openai {

void encode_stream_event(const StreamEvent& event, StreamState& state, std::string& out, Api api);

void encode_stream_end(StreamState& state, std::string& out, Api api);

void encode_stream_error(const Error& error, StreamState& state, std::string& out);

void decode_stream_event(std::string_view data, StreamState& state, std::vector<StreamEvent>& out,
                         Api api);

}  // namespace infergate::translators::openai
