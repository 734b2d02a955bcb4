#pragma once
#include "translators/codec.hpp"

namespace infergate::translators::llamacpp {
// llama.cpp llama-server native POST /completion (api-dialects §7).
const Codec& codec();
}  // namespace infergate::translators::llamacpp
