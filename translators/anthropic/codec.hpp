#pragma once
#include "translators/codec.hpp"

namespace infergate::translators::anthropic {
// Anthropic Messages API, POST /v1/messages (api-dialects §8).
const Codec& codec();
}  // namespace infergate::translators::anthropic
