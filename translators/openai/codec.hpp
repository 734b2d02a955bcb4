#pragma once
#include "translators/codec.hpp"

namespace infergate::translators::openai {
// POST /v1/completions (api-dialects §2.3-2.6, with vLLM's and SGLang's extensions §3.1, §4.8).
const Codec& completions_codec();
// POST /v1/chat/completions.
const Codec& chat_codec();
}  // namespace infergate::translators::openai
