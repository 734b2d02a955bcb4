#pragma once
// Hugging Face text-embeddings-inference (TEI): embeddings and the tokenizer only, no generation
// (router/src/http/server.rs and types.rs).

#include "translators/embedding.hpp"
#include "translators/tokenizer.hpp"

namespace infergate::translators::tei {
// POST /embed: {"inputs", "normalize", "truncate", "truncation_direction", "prompt_name",
// "dimensions"} -> [[f32, ...], ...], the token count in the x-compute-tokens header.
const EmbedCodec& embed_codec();
// POST /tokenize and POST /decode.
const TokenizerCodec& tokenizer_codec();
// TEI's error body: {"error": "...", "error_type": "Validation" | "Tokenizer" | "Empty" |
// "Overloaded" | "Backend" | "Unhealthy"} (lib.rs ErrorResponse, ErrorType).
void encode_error(const Error& error, std::string& out);
}  // namespace infergate::translators::tei
