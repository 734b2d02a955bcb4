// The embedding and tokenizer routes of every dialect that has them (docs/emulator.md,
// "Embeddings and tokenizer routes"), on the one tokenizer (tokenizer.hpp) and the one vector
// model (embedding.hpp). Where each route's shape and errors come from in its server's source is
// said beside each handler.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/api.hpp"
#include "emulator/embedding.hpp"
#include "emulator/tokenizer.hpp"

namespace infergate::emulator {

// vLLM's POST /v1/embeddings.
net::awaitable<void> handle_vllm_embeddings(Request& req, Conn& conn, const Options& options);
// SGLang's POST /v1/embeddings.
net::awaitable<void> handle_sglang_embeddings(Request& req, Conn& conn, const Options& options);
// The OpenAI API's POST /v1/embeddings (the openai dialect's generic flavour).
net::awaitable<void> handle_generic_embeddings(Request& req, Conn& conn, const Options& options);
// The OpenAI API's error body {"error":{"message","type","param","code"}}.
std::string openai_api_error(std::string_view message, std::string_view type,
                             std::string_view code = {});
// SGLang's native POST /encode.
net::awaitable<void> handle_sglang_encode(Request& req, Conn& conn, const Options& options);
// Ollama's POST /api/embed, or the older POST /api/embeddings (`legacy`).
net::awaitable<void> handle_ollama_embed(Request& req, Conn& conn, const Options& options,
                                         bool legacy);
// llama.cpp's POST /embedding and /embeddings, or its POST /v1/embeddings (`oai`).
net::awaitable<void> handle_llamacpp_embeddings(Request& req, Conn& conn, const Options& options,
                                                bool oai);

// vLLM's POST /tokenize and /detokenize.
net::awaitable<void> handle_vllm_tokenize(Request& req, Conn& conn, const Options& options,
                                          bool detokenize);
// SGLang's POST /tokenize, /v1/tokenize, /detokenize, /v1/detokenize.
net::awaitable<void> handle_sglang_tokenize(Request& req, Conn& conn, const Options& options,
                                            bool detokenize);
enum class LlamaTokenRoute { kTokenize, kDetokenize, kApplyTemplate };
// llama.cpp's POST /tokenize, /detokenize, /apply-template.
net::awaitable<void> handle_llamacpp_tokens(Request& req, Conn& conn, LlamaTokenRoute route);
// TGI's POST /tokenize.
net::awaitable<void> handle_tgi_tokenize(Request& req, Conn& conn, const Options& options);

// --- shared by the handlers ---------------------------------------------------------------------

// The vector of one input's tokens: pooled as --pooling says (mean for kNone), its first `dims`
// values (0: all), L2-normalised when `normalize`.
std::vector<float> embed_tokens(const Options& options, std::span<const std::int64_t> ids, int dims,
                                bool normalize);
std::vector<std::int64_t> ids_of(std::span<const Token> tokens);
// Python's str() of a list of ints: "[64, 128]" (the servers' messages print lists so).
std::string python_list(const std::vector<int>& values);

// An OpenAI-style `input`: a string, a list of strings, a list of token ids, a list of lists.
struct OaiInput {
    enum class Shape { kText, kTexts, kIds, kIdLists } shape = Shape::kText;
    std::vector<std::string_view> texts;
    std::vector<std::vector<std::int64_t>> ids;
    std::size_t size() const {
        return shape == Shape::kText || shape == Shape::kTexts ? texts.size() : ids.size();
    }
};
// False when `v` is none of the shapes (a number, an object, a mixed list). An empty list reads
// as kTexts with no text: size() 0.
bool read_oai_input(const rapidjson::Value& v, OaiInput& out);

// The early faults (status, reset, stall, garbage) of a non-stream request, if the request has
// one: true when it answered. (A co_await of its own: GCC 12 mishandles one inside `&&`.)
net::awaitable<bool> early_fault(Conn& conn, const Request& req, const ErrorStyle& errors);
// A chat's template tokens from OpenAI-style messages (text parts only, as the generation routes
// count them). False when `messages` is not a list of objects with a string role.
bool chat_from_messages(const rapidjson::Value& messages, ChatTokens& chat);
// A JSON list of token ids a tokenizer's decode() takes: nullopt for another shape; `overflow`
// set when an id does not fit a u32.
std::optional<std::vector<std::int64_t>> id_list(const rapidjson::Value& v, bool& overflow);

// The model's time, then `render`'s body, with the whole-body faults of the generation routes
// (stream.hpp's send_generated: half a body and a reset, ...). Early faults are the caller's.
net::awaitable<void> send_computed(Conn& conn, const Request& req, const BodyRenderer& render,
                                   const ErrorStyle& errors, std::string_view content_type);

// The error shapes of the routes' servers (each defined beside its generation routes).
const ErrorStyle& sglang_native_errors();
const ErrorStyle& ollama_errors();

}  // namespace infergate::emulator
