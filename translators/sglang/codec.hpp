#pragma once
#include "translators/codec.hpp"

namespace infergate::translators::sglang {
// SGLang native POST /generate (api-dialects §4).
const Codec& codec();
}  // namespace infergate::translators::sglang
