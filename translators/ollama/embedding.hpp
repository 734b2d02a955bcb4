#pragma once

#include "translators/embedding.hpp"

namespace infergate::translators::ollama {
// POST /api/embed (api/types.go EmbedRequest, server/routes.go EmbedHandler).
const EmbedCodec& embed_codec();
// POST /api/embeddings, the older route: one prompt, the vector as the model made it (not
// normalised), no token count (EmbeddingRequest, EmbeddingsHandler).
const EmbedCodec& legacy_embed_codec();
}  // namespace infergate::translators::ollama
