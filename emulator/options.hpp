// Command-line options of the emulator and the per-request knobs that headers may override.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "emulator/wire_style.hpp"

namespace infergate::emulator {

enum class Dialect { kOpenai, kSglang, kTgi, kOllama, kLlamacpp, kVllmLegacy, kAnthropic, kTei };

// "openai", "sglang", "tgi", "ollama", "llamacpp", "vllm_legacy", "anthropic", "tei".
std::optional<Dialect> parse_dialect(std::string_view name);

enum class FaultKind {
    kNone,
    kStatus,          // answer with an HTTP error in the dialect's error shape
    kReset,           // RST before answering
    kResetMidstream,  // some events (or half a body), then RST
    kCloseMidstream,  // some events (or half a body), then a clean FIN without a terminator
    kStall,           // read the request, never answer
    kStallMidstream,  // some events (or half a body), then silence
    kGarbage,         // 200 with bytes that are not JSON
    kErrorEvent,      // some events, then the dialect's in-band error event and the terminator
};

struct Fault {
    FaultKind kind = FaultKind::kNone;
    int status = 0;  // for kStatus
};

// X-Emulator-Tool-Calls: parallel calls in one turn, at most.
inline constexpr int kMaxToolCalls = 4;

// Everything a request may tune through X-Emulator-* headers; the CLI gives the defaults.
struct Knobs {
    int ttft_ms = 0;
    int itl_ms = 0;
    int tokens_per_chunk = 1;
    std::optional<int> eos_after;  // none: only the token budget (or a stop rule) ends generation
    Fault fault;
    int fault_after = 2;  // events (stream) written before a mid-stream fault fires
    // vLLM legacy stream record delimiter: '\n' (since Nov 2024) or '\0' (before).
    bool nul_delimiter = false;
    // Byte layout of everything written (JSON, framing, writes, 1xx); default: the dialect's own.
    WireStyle wire;
    // Chat answers (chat_extras.hpp): how many tools one tool-calling turn calls (1..4), and the
    // reasoning text an answer starts with (none: only the request's own switch asks for it).
    int tool_calls = 1;
    std::optional<std::string> reasoning;
};

// The process as one engine replica (replica.hpp): its simulated prefix cache, prefill cost and
// running slots. All off by default.
struct ReplicaOptions {
    int prefix_cache = 0;          // tokens the prefix cache holds; 0 = no cache
    int prefix_block = 16;         // tokens per cache block
    int prefill_us_per_token = 0;  // time to first token grows by this per uncached prompt token
    int max_running = 0;           // generations running at once; 0 = unlimited

    // Generations then log a `gen` line on stderr.
    bool logs_generations() const { return prefix_cache > 0 || max_running > 0; }
};

// --embedding-dim's upper bound (memory: a vector is built per token).
inline constexpr int kMaxEmbeddingDim = 16384;

// How a sequence's token vectors become one vector (embedding.hpp).
enum class Pooling : std::uint8_t { kMean, kCls, kLast, kNone };

// The served model as an embedding model (docs/emulator.md, "Embeddings and tokenizer routes").
struct EmbeddingOptions {
    // --embeddings: the model is an embedding model (vLLM's pooling runner, SGLang's
    // --is-embedding, llama-server's --embeddings, an Ollama embedding model). Off, each server
    // answers its embedding routes as it does for a generative model. TEI always is one.
    bool enabled = false;
    int dim = 384;                     // --embedding-dim
    Pooling pooling = Pooling::kMean;  // --pooling
    // --matryoshka[=D1,D2,...]: `dimensions` is allowed (vLLM and SGLang refuse it otherwise);
    // an empty list allows any, a list only those.
    bool matryoshka = false;
    std::vector<int> matryoshka_dims;
    // --st-prompt NAME=TEXT: the Sentence Transformers prompts TEI's prompt_name picks from.
    std::vector<std::pair<std::string, std::string>> prompts;
};

struct Options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8000;
    Dialect dialect = Dialect::kOpenai;
    std::string model = "emulator-model";
    int max_model_len = 4096;
    int threads = 1;
    bool quiet = false;
    Knobs defaults;
    ReplicaOptions replica;
    EmbeddingOptions embedding;
    // --openai-flavor generic (openai dialect): an OpenAI-compatible server that is not vLLM,
    // the OpenAI API's own shapes on /v1/models and /v1/embeddings (docs/emulator.md).
    bool openai_generic = false;
};

// Parses argv. On --help prints usage and exits 0; on a bad option prints the reason and exits 2.
Options parse_command_line(int argc, char** argv);

// "status:503", "reset", ... Returns nullopt for an unknown mode. "none" (or "") disables.
std::optional<Fault> parse_fault(std::string_view text);

// Applies X-Emulator-* request headers on top of `defaults`. On a malformed header returns false
// and names the header in `error`, so a typo in a test fails loudly instead of being ignored.
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
bool resolve_knobs(const HttpRequest& req, const Knobs& defaults, Knobs& out, std::string& error);

}  // namespace infergate::emulator
