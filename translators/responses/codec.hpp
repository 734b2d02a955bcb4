#pragma once
#include "translators/codec.hpp"

namespace infergate::translators::responses {
// OpenAI Responses API, POST /v1/responses: a client dialect, bridged onto the backend's chat
// API (docs/dialects.md, "Responses API").
const Codec& codec();
}  // namespace infergate::translators::responses
