#pragma once
// The canonical model of the requests that are not generations: embeddings, and the tokenizer's
// routes (tokenize, detokenize, a chat template applied). Each front dialect decodes into these
// and each backend dialect encodes from them (translators/embedding.hpp, tokenizer.hpp), the same
// hub and spoke as generations. Plain value types.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/types.hpp"

namespace infergate::canonical {

// ---------------------------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------------------------

// The embeddings APIs, on either side.
enum class EmbedDialect {
    openai,         // POST /v1/embeddings (OpenAI, vLLM, SGLang, llama.cpp's OpenAI layer)
    ollama,         // Ollama POST /api/embed
    ollama_legacy,  // Ollama POST /api/embeddings (one prompt, not normalised)
    tei,            // text-embeddings-inference POST /embed
    llamacpp,       // llama.cpp POST /embedding, /embeddings (its native shape)
};
std::string_view to_string(EmbedDialect d);

// A setting with a default that differs between servers: the value the client's own server
// uses, and whether the client wrote it (`said`). A backend that cannot honour a value the
// client wrote refuses the request naming it; one the client only inherited from its server's
// default goes to the backend where the backend has the switch (docs/dialects.md, "Embeddings").
struct Setting {
    bool value = false;
    bool said = false;
};

struct EmbeddingRequest {
    EmbedDialect dialect = EmbedDialect::openai;
    std::string model;  // empty: the client named none (TEI, llama.cpp)
    // One entry per input: text, or token ids.
    std::vector<Prompt> inputs;
    bool input_is_list = false;  // the client sent a list: its answer is a list even for one
    // llama.cpp: a prompt that mixes text and token ids ([12, "text", 34]) has no canonical form;
    // the client's `input`/`content` JSON is kept for a llama.cpp backend, the others refuse it.
    bool mixed = false;
    std::string raw_input;   // the client's input JSON (compact), when `mixed`
    std::string input_name;  // the member it came in ("input", "inputs", "content", "prompt")

    std::optional<int64_t> dimensions;  // the vectors cut to this length (and normalised again)
    bool base64 = false;                // OpenAI encoding_format "base64": float32 LE, base64
    std::optional<Setting> normalize;   // unit length (L2); nullopt: the backend's default
    std::optional<Setting> truncate;    // cut an input that is too long instead of failing
    std::optional<std::string> truncation_direction;  // TEI: "left" or "right" (lower case)
    std::optional<std::string> prompt_name;           // TEI: a sentence-transformers prompt

    // Keys the canonical model does not name (raw), as in GenerationRequest: the same-dialect
    // fast path carries them (it forwards the client's bytes); a backend of another dialect goes
    // without the inert ones and refuses the others, naming them.
    std::vector<Extra> extras;
};

struct EmbeddingResult {
    // One vector per input, in the inputs' order, as the backend computed it: values read at
    // double precision (a float32 the backend printed is the same number here), written back
    // in the shortest form that reads as the same double.
    std::vector<std::vector<double>> vectors;
    std::optional<int64_t> prompt_tokens;  // the backend's count of the inputs' tokens
};

// ---------------------------------------------------------------------------------------------
// Tokenizer routes
// ---------------------------------------------------------------------------------------------

// The tokenizer APIs. Their requests overlap on the wire (POST /tokenize is every server's) and
// are told apart by the body (translators/tokenizer.hpp, classify_tokenize_body).
enum class TokenizerDialect {
    vllm,      // POST /tokenize {"prompt"}, /detokenize {"tokens"} -> {"prompt"}
    sglang,    // POST /tokenize {"prompt": str | [str]}, /detokenize -> {"text"}; also /v1/...
    llamacpp,  // POST /tokenize {"content"}, /detokenize -> {"content"}, /apply-template
    tgi,       // POST /tokenize {"inputs", "parameters"} -> [{id, text, start, stop}]
    tei,       // POST /tokenize {"inputs": str | [str]} -> [[{id, text, special, start, stop}]],
               // POST /decode {"ids"} -> [text]
};
std::string_view to_string(TokenizerDialect d);

struct TokenizeRequest {
    TokenizerDialect dialect = TokenizerDialect::vllm;
    std::string model;
    std::vector<std::string> texts;
    bool text_is_list = false;
    // Special tokens (BOS) added: every dialect's decoder sets the value its server would use
    // (llama.cpp: false; the others: true), so that an encoder writes it explicitly.
    Setting add_special;
    // Each token's text: llama.cpp's with_pieces (`said`: the client asked for its pieces), or
    // implied by the client's API (TGI's and TEI's answers carry the text and its offsets).
    Setting pieces;
    bool token_strs = false;          // vLLM return_token_strs: the tokenizer's own token strings
    std::optional<int64_t> truncate;  // TGI parameters.truncate: keep the last N tokens
    std::optional<std::string> prompt_name;  // TEI
    // A vLLM chat tokenize (`messages`) or a llama.cpp content with token ids: kept raw, for a
    // backend of the client's own kind only.
    bool chat = false;
    bool mixed = false;
    std::vector<Extra> extras;
};

// One token as the backends describe it; each dialect fills what it knows.
struct Token {
    int64_t id = 0;
    // Its text: llama.cpp's piece (the token's own bytes: `text_bytes` when they are not valid
    // UTF-8 and came as a list of byte values), TGI's and TEI's `text` (the input's bytes from
    // start to stop; a special token's own text on TEI).
    std::string text;
    bool has_text = false;
    bool text_bytes = false;
    std::optional<int64_t> start;  // byte offsets in the input (TGI, TEI)
    std::optional<int64_t> stop;
    std::optional<bool> special;           // TEI
    std::optional<std::string> token_str;  // vLLM's token string
};

struct TokenizeResult {
    std::vector<std::vector<Token>> items;  // one list of tokens per text
    std::optional<int64_t> max_model_len;   // vLLM and SGLang report it
};

struct DetokenizeRequest {
    TokenizerDialect dialect = TokenizerDialect::vllm;
    std::string model;
    std::vector<std::vector<int64_t>> ids;
    bool ids_is_list = false;  // a list of lists: a batch
    Setting skip_special;      // special tokens left out of the text
    std::vector<Extra> extras;
};

struct DetokenizeResult {
    std::vector<std::string> texts;
};

// ---------------------------------------------------------------------------------------------
// Helpers the codecs share
// ---------------------------------------------------------------------------------------------

// Appends `v` as a JSON number that reads back as the same double, in the shortest form (the
// backends print float32 values as Python floats or as f32 shortest forms: either comes back
// with its digits), always with a '.' or an exponent so that it stays a float to readers that
// tell integers apart (Python's json). False for NaN and infinities, which JSON has no form for.
bool append_number(std::string& out, double v);

// The vector as OpenAI's `encoding_format: "base64"` writes it: each value as a little-endian
// IEEE float32, the bytes in standard base64 with padding.
void append_base64_floats(std::string& out, const std::vector<double>& values);
// The inverse; false when `text` is not base64 of a whole number of float32 values.
bool read_base64_floats(std::string_view text, std::vector<double>& out);

// The number of Unicode characters in UTF-8 text (TEI's x-compute-characters).
size_t count_chars(std::string_view utf8);

// Whether `bytes` is valid UTF-8 (llama.cpp writes a piece that is not as a list of bytes).
bool valid_utf8(std::string_view bytes);

}  // namespace infergate::canonical
