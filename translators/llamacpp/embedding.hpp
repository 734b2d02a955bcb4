#pragma once

#include "translators/embedding.hpp"
#include "translators/tokenizer.hpp"

namespace infergate::translators::llamacpp {
// POST /embedding, /embeddings: llama-server's native route (examples/server/server.cpp,
// handle_embeddings_impl at c392e509): `input` or `content` -> [{"index", "embedding": [[...]]}].
const EmbedCodec& embed_codec();
// POST /tokenize {"content", "add_special", "with_pieces"} -> {"tokens"}, /detokenize
// {"tokens"} -> {"content"}.
const TokenizerCodec& tokenizer_codec();
}  // namespace infergate::translators::llamacpp
