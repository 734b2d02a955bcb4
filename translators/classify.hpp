#pragma once
// POST /generate is three unrelated APIs (api-dialects §9): SGLang (`text`/`input_ids`/
// `input_embeds` + nested `sampling_params`), TGI (`inputs` + nested `parameters`) and vLLM's
// legacy demo server (`prompt` + top-level sampling keys). The body's top-level keys tell them
// apart; a body that mixes the markers, or has none, is refused rather than guessed.

#include <string_view>

#include "translators/canonical/types.hpp"

namespace infergate::translators {

// Looks only at the top-level keys (a SAX pass, no document is built). Errors are 400s that
// name the three accepted shapes; a body that is not a JSON object is left to the codec of the
// dialect the keys would pick, so the client gets that codec's own parse error.
canonical::Result<canonical::Dialect> classify_generate_body(std::string_view body);

}  // namespace infergate::translators
