// The command line: the usage text and argv parsed into Options.
#include "emulator/options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "emulator/option_values.hpp"

namespace infergate::emulator {
namespace {

constexpr std::string_view kUsage =
    R"(usage: infergate-emulator [options]

A deterministic LLM inference backend that speaks one inference server's HTTP dialect byte for
byte. See docs/emulator.md.

options:
  --listen HOST:PORT       address to listen on (default 127.0.0.1:8000; port 0 = ephemeral)
  --dialect NAME           wire dialect (default openai): openai (vLLM) | sglang | tgi |
                           ollama | llamacpp | vllm_legacy | anthropic | tei
  --model NAME             served model name (default emulator-model)
  --max-model-len N        context length reported and enforced (default 4096)
  --ttft-ms N              delay before the first chunk (default 0)
  --itl-ms N               delay between chunks (default 0)
  --tokens-per-chunk N     tokens carried by each stream event (default 1)
  --eos-after N            emit EOS after N tokens unless ignore_eos (default: never)
  --fault MODE             status:NNN | reset | reset_midstream | close_midstream | stall |
                           stall_midstream | garbage | error_event | none
  --fault-after N          events written before a mid-stream fault (default 2)
  --legacy-delimiter D     vllm_legacy stream record delimiter: newline (default) | nul
  --json-style S           compact (default: the dialect's own bytes) | spaced (json.dumps
                           separators) | pretty (indented, keys shuffled; one line in NDJSON)
  --json-escape E          none (default) | ascii (non-ASCII as \uXXXX, '/' as \/)
  --sse-style LIST         comma-separated: crlf | cr | nospace | multiline | comments |
                           fields | bom | noblank-end (default none)
  --ndjson-style LIST      comma-separated: crlf | blank | noeol-end (default none)
  --split-writes[=MAX]     cut every write and chunk into random pieces of 1..MAX bytes
                           (default MAX 7; 0 = off)
  --early-hints            a 103 Early Hints response before every answer
  --interim LIST           1xx responses before every answer: 100 | 103 | 100,103
  --style-seed N           seed of key shuffles, cut points and piece sizes (default 1)
  --threads N              io_contexts, one SO_REUSEPORT listener each (default 1)
  --quiet                  no per-request log lines on stderr

the process as one engine replica (docs/emulator.md, "Prefix cache, prefill and queueing"):
  --prefix-cache TOKENS    simulated prefix cache of TOKENS tokens, LRU (default 0 = off)
  --prefix-block TOKENS    tokens per cache block (default 16)
  --prefill-us-per-token N time to first token grows by N us per uncached prompt token
                           (default 0)
  --max-running N          generations running at once, the rest wait FIFO (default 0 =
                           unlimited)

the model as an embedding model (docs/emulator.md, "Embeddings and tokenizer routes"):
  --embeddings             the model is an embedding model (vLLM pooling runner, SGLang
                           --is-embedding, llama-server --embeddings, an Ollama embedding
                           model); tei always is one
  --embedding-dim N        values per vector (default 384)
  --pooling P              mean (default) | cls | last | none (llamacpp only: a vector per
                           token on /embedding, and /v1/embeddings refused)
  --matryoshka[=D,...]     `dimensions` allowed (vLLM and SGLang refuse it otherwise): any, or
                           only the listed ones
  --st-prompt NAME=TEXT    a Sentence Transformers prompt for TEI's prompt_name (repeatable)
  --openai-flavor F        openai dialect: vllm (default) | generic (the OpenAI API's own
                           /v1/models and /v1/embeddings, no vLLM-only routes)
  --help                   this text

per-request headers (override the options above but the replica's):
  X-Emulator-TTFT-Ms, X-Emulator-ITL-Ms, X-Emulator-Tokens-Per-Chunk, X-Emulator-Eos-After
  (a number, or "none"), X-Emulator-Fault (a MODE), X-Emulator-Fault-After,
  X-Emulator-Legacy-Delimiter (newline | nul), X-Emulator-Json-Style, X-Emulator-Json-Escape,
  X-Emulator-Sse-Style, X-Emulator-Ndjson-Style, X-Emulator-Split-Writes (MAX, 0 = off),
  X-Emulator-Early-Hints (1 | 0), X-Emulator-Interim, X-Emulator-Style-Seed

chat answers (emulator/chat_extras.hpp):
  X-Emulator-Tool-Calls N  a tool-calling turn calls N tools at once (1..4, default 1)
  X-Emulator-Reasoning T   the answer starts with reasoning text T ("" = the default text)
)";

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "infergate-emulator: %s\n(try --help)\n", message.c_str());
    std::exit(2);
}

bool is_number(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void parse_listen(std::string_view text, Options& options) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        fail("--listen wants HOST:PORT, got '" + std::string(text) + "'");
    }
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    int port = 0;
    if (host.empty() || !parse_int(text.substr(colon + 1), 0, port) || port > 65535) {
        fail("--listen wants HOST:PORT, got '" + std::string(text) + "'");
    }
    options.host = std::string(host);
    options.port = static_cast<std::uint16_t>(port);
}

// "64,128,256": the listed dimensions, each >= 1.
bool parse_dims(std::string_view text, std::vector<int>& out) {
    out.clear();
    while (!text.empty()) {
        const auto comma = text.find(',');
        int dim = 0;
        if (!parse_int(text.substr(0, comma), 1, dim)) {
            return false;
        }
        out.push_back(dim);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    }
    return !out.empty();
}

bool is_number_list(std::string_view text) {
    std::vector<int> dims;
    return parse_dims(text, dims);
}

// The embedding options a dialect cannot have.
void check_embedding(Options& options) {
    const Dialect d = options.dialect;
    if (d == Dialect::kTei) {
        options.embedding.enabled = true;
    }
    const bool has_embeddings = d == Dialect::kOpenai || d == Dialect::kSglang ||
                                d == Dialect::kOllama || d == Dialect::kLlamacpp ||
                                d == Dialect::kTei;
    if (options.embedding.enabled && !has_embeddings) {
        fail("--embeddings: this dialect's server has no embedding routes");
    }
    if (options.openai_generic && d != Dialect::kOpenai) {
        fail("--openai-flavor is the openai dialect's");
    }
    if (options.embedding.pooling == Pooling::kNone && d != Dialect::kLlamacpp) {
        fail("--pooling none is llama.cpp's (its per-token /embedding)");
    }
}

}  // namespace

std::optional<Dialect> parse_dialect(std::string_view name) {
    static constexpr std::pair<std::string_view, Dialect> kNames[] = {
        {"openai", Dialect::kOpenai},
        {"sglang", Dialect::kSglang},
        {"tgi", Dialect::kTgi},
        {"ollama", Dialect::kOllama},
        {"llamacpp", Dialect::kLlamacpp},
        {"vllm_legacy", Dialect::kVllmLegacy},
        {"anthropic", Dialect::kAnthropic},
        {"tei", Dialect::kTei},
    };
    for (const auto& [text, dialect] : kNames) {
        if (text == name) {
            return dialect;
        }
    }
    return std::nullopt;
}

Options parse_command_line(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
            std::exit(0);
        }
        if (arg == "--quiet") {
            options.quiet = true;
            continue;
        }
        // Flags whose value is optional.
        if (arg == "--early-hints") {
            options.defaults.wire.interim |= kInterim103;
            continue;
        }
        if (arg == "--embeddings") {
            options.embedding.enabled = true;
            continue;
        }
        if (arg == "--matryoshka") {
            options.embedding.matryoshka = true;
            if (i + 1 < argc && is_number_list(argv[i + 1])) {
                parse_dims(argv[++i], options.embedding.matryoshka_dims);
            }
            continue;
        }
        if (arg == "--split-writes") {
            options.defaults.wire.split_max = kDefaultSplitMax;
            if (i + 1 < argc && is_number(argv[i + 1])) {
                std::string_view next = argv[++i];
                parse_int(next, 0, options.defaults.wire.split_max);
            }
            continue;
        }
        // Every other option takes a value, as "--opt value" or "--opt=value".
        static constexpr std::string_view kValued[] = {
            "--listen",           "--dialect",       "--model",
            "--max-model-len",    "--ttft-ms",       "--itl-ms",
            "--tokens-per-chunk", "--eos-after",     "--fault",
            "--fault-after",      "--threads",       "--legacy-delimiter",
            "--json-style",       "--json-escape",   "--sse-style",
            "--ndjson-style",     "--split-writes",  "--interim",
            "--style-seed",       "--early-hints",   "--prefix-cache",
            "--prefix-block",     "--max-running",   "--prefill-us-per-token",
            "--embedding-dim",    "--pooling",       "--matryoshka",
            "--st-prompt",        "--openai-flavor",
        };
        std::string_view name = arg;
        std::string_view value;
        const auto eq = arg.find('=');
        if (eq != std::string_view::npos) {
            name = arg.substr(0, eq);
        }
        if (std::find(std::begin(kValued), std::end(kValued), name) == std::end(kValued)) {
            fail("unknown option " + std::string(name));
        }
        if (eq != std::string_view::npos) {
            value = arg.substr(eq + 1);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            fail("missing value for " + std::string(arg));
        }
        auto want_int = [&](int min_value, int& out) {
            if (!parse_int(value, min_value, out)) {
                fail("bad value for " + std::string(name) + ": '" + std::string(value) + "'");
            }
        };
        Knobs& k = options.defaults;
        if (name == "--listen") {
            parse_listen(value, options);
        } else if (name == "--dialect") {
            const auto dialect = parse_dialect(value);
            if (!dialect) {
                fail(
                    "--dialect must be one of openai, sglang, tgi, ollama, llamacpp, "
                    "vllm_legacy, anthropic, tei");
            }
            options.dialect = *dialect;
        } else if (name == "--model") {
            if (value.empty()) {
                fail("--model must not be empty");
            }
            options.model = std::string(value);
        } else if (name == "--max-model-len") {
            want_int(1, options.max_model_len);
        } else if (name == "--ttft-ms") {
            want_int(0, k.ttft_ms);
        } else if (name == "--itl-ms") {
            want_int(0, k.itl_ms);
        } else if (name == "--tokens-per-chunk") {
            want_int(1, k.tokens_per_chunk);
        } else if (name == "--eos-after") {
            if (!parse_eos_after(value, k.eos_after)) {
                fail("bad value for --eos-after: '" + std::string(value) + "'");
            }
        } else if (name == "--fault") {
            auto fault = parse_fault(value);
            if (!fault) {
                fail("unknown --fault mode '" + std::string(value) + "'");
            }
            k.fault = *fault;
        } else if (name == "--fault-after") {
            want_int(0, k.fault_after);
        } else if (name == "--legacy-delimiter") {
            if (!parse_delimiter(value, k.nul_delimiter)) {
                fail("--legacy-delimiter must be newline or nul");
            }
        } else if (name == "--threads") {
            want_int(1, options.threads);
        } else if (name == "--prefix-cache") {
            want_int(0, options.replica.prefix_cache);
        } else if (name == "--prefix-block") {
            want_int(1, options.replica.prefix_block);
        } else if (name == "--prefill-us-per-token") {
            want_int(0, options.replica.prefill_us_per_token);
        } else if (name == "--max-running") {
            want_int(0, options.replica.max_running);
        } else if (name == "--embedding-dim") {
            want_int(1, options.embedding.dim);
            if (options.embedding.dim > kMaxEmbeddingDim) {
                fail("--embedding-dim must be at most " + std::to_string(kMaxEmbeddingDim));
            }
        } else if (name == "--pooling") {
            static constexpr std::pair<std::string_view, Pooling> kPoolings[] = {
                {"mean", Pooling::kMean},
                {"cls", Pooling::kCls},
                {"last", Pooling::kLast},
                {"none", Pooling::kNone},
            };
            const auto* it = std::find_if(std::begin(kPoolings), std::end(kPoolings),
                                          [&](const auto& p) { return p.first == value; });
            if (it == std::end(kPoolings)) {
                fail("--pooling must be mean, cls, last or none");
            }
            options.embedding.pooling = it->second;
        } else if (name == "--matryoshka") {
            options.embedding.matryoshka = true;
            if (!value.empty() && !parse_dims(value, options.embedding.matryoshka_dims)) {
                fail("--matryoshka wants a comma-separated list of dimensions, got '" +
                     std::string(value) + "'");
            }
        } else if (name == "--openai-flavor") {
            if (value != "vllm" && value != "generic") {
                fail("--openai-flavor must be vllm or generic");
            }
            options.openai_generic = value == "generic";
        } else if (name == "--st-prompt") {
            const auto eq2 = value.find('=');
            if (eq2 == std::string_view::npos || eq2 == 0) {
                fail("--st-prompt wants NAME=TEXT, got '" + std::string(value) + "'");
            }
            options.embedding.prompts.emplace_back(std::string(value.substr(0, eq2)),
                                                   std::string(value.substr(eq2 + 1)));
        } else {
            bool known = false;
            std::string why;
            const bool ok = apply_style_option(name.substr(2), value, k.wire, known, why);
            if (!known) {
                fail("unknown option " + std::string(name));
            }
            if (!ok) {
                fail("bad value for " + std::string(name) + ": '" + std::string(value) +
                     "': " + why);
            }
        }
    }
    check_embedding(options);
    return options;
}

}  // namespace infergate::emulator
