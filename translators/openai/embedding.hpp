#pragma once

#include "translators/embedding.hpp"
#include "translators/tokenizer.hpp"

namespace infergate::translators::openai {
// POST /v1/embeddings: OpenAI's API, and the OpenAI layers of vLLM, SGLang, llama.cpp and TEI.
const EmbedCodec& embeddings_codec();
// vLLM's POST /tokenize and /detokenize (a string prompt; {"prompt"} back).
const TokenizerCodec& vllm_tokenizer_codec();
// SGLang's POST /tokenize, /v1/tokenize (a prompt or a list of them) and /detokenize (its
// {"text"} back).
const TokenizerCodec& sglang_tokenizer_codec();
}  // namespace infergate::translators::openai
