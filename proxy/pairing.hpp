#pragma once
// Which backend API a request goes to: the pairing of the client's dialect with the backend's.
// One table for every front x back cell (docs/dialects.md shows it); pure, so it is unit-tested.

#include <optional>
#include <string_view>

#include "config/config.hpp"
#include "translators/canonical/types.hpp"
#include "translators/codec.hpp"

namespace infergate {

struct Pairing {
    canonical::Dialect back = canonical::Dialect::openai_completions;
    // The client's bytes go upstream as they are (only the model name may change) and the
    // backend's stream comes back event by event: OpenAI and SGLang in front of themselves.
    // Every other pair, including TGI->TGI or Ollama->Ollama, goes through the canonical model
    // so that the answer is written by the client dialect's own encoder.
    bool fast_path = false;
    // Set when the backend has no API that can serve the request faithfully: a 400 that says
    // why and what would work.
    std::optional<canonical::Error> refusal;
};

// `n`: the choices per prompt the client asked for. The codecs refuse n > 1 towards native APIs
// without it; the table refuses it towards OpenAI-compatible layers that silently ignore it.
Pairing pair_dialects(canonical::Dialect front, canonical::RequestKind kind,
                      config::BackendDialect backend, int n = 1);

// The OpenAI-compatible layer behind the backend as the codecs and the fast path's edits need to
// know it (which names it reads: docs/dialects.md, "Parameters"): what the probe found
// (`probed`: generic, vllm or sglang), told apart further by the backend's dialect (TGI's and
// llama.cpp's OpenAI layers) and host (the OpenAI API itself, on api.openai.com or Azure).
translators::Flavor openai_flavor(config::BackendDialect backend, translators::Flavor probed,
                                  std::string_view host);

}  // namespace infergate
