#pragma once

#include <optional>

#include "translators/codec.hpp"

namespace infergate::translators::openai {
// POST /v1/completions (api-dialects §2.3-2.6, with vLLM's and SGLang's extensions §3.1, §4.8).
const Codec& completions_codec();
// POST /v1/chat/completions.
const Codec& chat_codec();

// A 400 naming a setting of `req` that the OpenAI-compatible layer of `flavor` cannot honour
// (TGI's and llama.cpp's have no min_tokens or stop token ids, vLLM's no typical_p, ...); nullopt
// when every one can be carried. The encoders check it, and the exchange before the
// same-dialect fast path, which forwards the client's own bytes.
std::optional<canonical::Error> check_upstream_settings(const GenerationRequest& req,
                                                        Flavor flavor);

// Sets what the OpenAI codecs need to know of `req` on a stream state, the client encoder's and
// the upstream decoder's alike (the exchange calls it for both when either side is OpenAI):
// logprobs asked and how many alternatives, completions echo and the prompts, and whether the
// backend was asked for the prompt's logprobs (then it echoes the prompt, which comes off).
void init_stream_state(canonical::StreamState& state, const GenerationRequest& req);
}  // namespace infergate::translators::openai
