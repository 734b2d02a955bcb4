#pragma once
// Which backend API a request goes to, and what the exchange does on the way: the pairing of the
// client's dialect with the backend's, and the plan of one generation over it. One table for every
// front x back cell (docs/dialects.md shows it); pure, so it is unit-tested
// (tests/translators/pairing/).

#include <optional>
#include <string_view>

#include "translators/backend_kind.hpp"
#include "translators/canonical/types.hpp"
#include "translators/codec.hpp"

namespace infergate::translators {

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
Pairing pair_dialects(canonical::Dialect front, canonical::RequestKind kind, BackendDialect backend,
                      int n = 1);

// The OpenAI-compatible layer behind the backend as the codecs and the fast path's edits need to
// know it (which names it reads: docs/dialects.md, "Parameters"): what the probe found
// (`probed`: generic, vllm or sglang), told apart further by the backend's dialect (TGI's and
// llama.cpp's OpenAI layers) and host (the OpenAI API itself, on api.openai.com or Azure).
Flavor openai_flavor(BackendDialect backend, Flavor probed, std::string_view host);

// What the exchange knows of its backend.
struct BackendFacts {
    BackendDialect dialect = BackendDialect::openai;  // probed or configured
    Flavor probed = Flavor::generic;                  // what the probe found of its OpenAI layer
    std::string_view host;                            // of the backend's URL
    std::string_view name = {};  // how messages name it ("the backend 'gpu'"); empty: "the backend"
};

// Whether the backend is known to accept stream_options in a streamed OpenAI-dialect request:
// vLLM and SGLang (with continuous_usage_stats), the OpenAI layers of TGI and llama.cpp (llama.cpp
// builds that predate it ignore unknown fields), and OpenAI's own API. Other OpenAI-compatible
// servers may validate strictly and refuse a field they do not know: they are not sent it, and
// the tokens are counted from what they report.
bool accepts_stream_options(const BackendFacts& backend);

// One generation, decided once from the pair, the request and the backend. The relays read these
// flags; none of them branches on a dialect.
struct Plan : Pairing {
    Flavor flavor = Flavor::generic;  // openai_flavor()
    bool stream_options = false;      // accepts_stream_options()

    // The fast path. `edit_body`: the client's JSON may be edited on its way (the model name, the
    // names the backend's layer reads; OpenAI fronts), and its settings are checked against that
    // layer first; SGLang's /generate body goes as it is.
    bool edit_body = false;
    // Streamed: stream_options.include_usage is asked for on the client's behalf (the tokens are
    // counted from the usage chunk) and that chunk is taken out again.
    bool ask_usage = false;
    // Streamed: running usage on every chunk (vLLM and SGLang: exact counts under speculative
    // decoding), stripped again from each chunk.
    bool ask_running = false;
    // Streamed, n > 1: every chunk gets the stream's one id (SGLang's OpenAI layer gives each
    // choice its own; OpenAI clients expect one).
    bool rewrite_ids = false;

    // Translated. `gather`: a whole answer is streamed upstream and gathered into one, because
    // the client reads per-item token counts that the backend reports only per streamed chunk
    // (an SGLang batch or n > 1 over OpenAI completions).
    bool gather = false;
    // The backend leaves a matched stop string in the text (TGI's OpenAI layer; its native codec
    // handles that itself): the request's stop strings are trimmed from what it sends.
    bool trim_stops = false;
};

Plan plan_generation(canonical::Dialect front, const canonical::GenerationRequest& req,
                     const BackendFacts& backend);

}  // namespace infergate::translators
