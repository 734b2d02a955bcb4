#pragma once
// The tokenizer's routes through the proxy: POST /tokenize (every server's path, told apart by
// the body), /detokenize, TEI's /decode, SGLang's /v1/tokenize and /v1/detokenize, llama.cpp's
// /apply-template. The codec interface each tokenizer API implements, the registry, and the plan
// of one request: the backend's own API when it has one (the client's bytes as they are when it
// is the client's), translated where it has an equivalent, else a 404 naming what exists. Pure:
// tests/translators/tokenizer/. docs/dialects.md, "Tokenizer routes".

#include <optional>
#include <string>
#include <string_view>

#include "translators/backend_kind.hpp"
#include "translators/canonical/embedding.hpp"
#include "translators/codec.hpp"
#include "translators/pairing.hpp"

namespace infergate::translators {

using canonical::DetokenizeRequest;
using canonical::DetokenizeResult;
using canonical::TokenizerDialect;
using canonical::TokenizeRequest;
using canonical::TokenizeResult;

struct TokenizerOptions {
    std::string model;    // the backend's served name
    std::string backend;  // "the backend 'x' (llama.cpp)", for messages
};

// What the client's answer says besides the tokens.
struct TokenizerAnswer {
    std::string_view model;
    std::optional<int64_t> max_model_len;  // the backend's context length, when known
};

class TokenizerCodec {
public:
    virtual ~TokenizerCodec() = default;
    virtual TokenizerDialect dialect() const = 0;

    // ---- client side ---------------------------------------------------------------------
    virtual Result<TokenizeRequest> decode_tokenize(std::string_view body) const = 0;
    virtual void encode_tokenize_answer(const TokenizeResult& result, const TokenizeRequest& req,
                                        const TokenizerAnswer& answer, std::string& out) const = 0;
    // Detokenize (TEI: /decode). Dialects without it are never asked (no route).
    virtual Result<DetokenizeRequest> decode_detokenize(std::string_view body) const;
    virtual void encode_detokenize_answer(const DetokenizeResult& result,
                                          const DetokenizeRequest& req, std::string& out) const;
    virtual void encode_error(const Error& error, std::string& out) const = 0;

    // ---- upstream side -------------------------------------------------------------------
    virtual std::string_view tokenize_path() const { return "/tokenize"; }
    // Errors are 400s naming what this backend cannot take.
    virtual Result<std::string> encode_tokenize(const TokenizeRequest& req,
                                                const TokenizerOptions& options) const = 0;
    virtual Result<TokenizeResult> decode_tokenize_answer(std::string_view body,
                                                          const TokenizeRequest& req) const = 0;
    // Empty: this API has no detokenize route (TGI).
    virtual std::string_view detokenize_path() const { return "/detokenize"; }
    virtual Result<std::string> encode_detokenize(const DetokenizeRequest& req,
                                                  const TokenizerOptions& options) const;
    virtual Result<DetokenizeResult> decode_detokenize_answer(std::string_view body,
                                                              const DetokenizeRequest& req) const;
    virtual Error decode_error(int status, std::string_view body) const;
};

// Never null.
const TokenizerCodec& tokenizer_codec(TokenizerDialect dialect);

// POST /tokenize: the API whose body it is. `content` is llama.cpp's; `prompt` or `messages`
// vLLM's (SGLang's when the prompt is a list); `inputs` TGI's (with `parameters`) or TEI's (a
// list, `add_special_tokens` or `prompt_name`). nullopt when the body could be TGI's or TEI's
// (`inputs` alone): the backend's decides. A 400 naming the accepted shapes for a body of none.
Result<std::optional<TokenizerDialect>> classify_tokenize_body(std::string_view body);

// POST /detokenize: vLLM's, SGLang's and llama.cpp's bodies are all {"tokens": [...]}; a body
// with SGLang's skip_special_tokens or a list of token lists is SGLang's, any other nullopt (the
// backend's API decides, else vLLM's). A 400 for a body that is not a JSON object.
Result<std::optional<TokenizerDialect>> classify_detokenize_body(std::string_view body);

// The fast path's request: the client's own body, with the model name the backend serves where
// the API names one (vLLM's and SGLang's).
std::string tokenizer_passthrough_request(std::string& client_body, TokenizerDialect dialect,
                                          std::string_view client_model,
                                          std::string_view upstream_model);

// The tokenizer API a backend has (the OpenAI dialect: only vLLM's and SGLang's layers, as the
// probe found them); nullopt for none (Ollama, Anthropic, vLLM's demo server, any other
// OpenAI-compatible server).
std::optional<TokenizerDialect> backend_tokenizer(BackendDialect backend, Flavor flavor);

struct TokenizerPlan {
    TokenizerDialect back = TokenizerDialect::vllm;
    bool fast_path = false;  // the client's bytes go as they are, the answer comes back so
    std::optional<Error> refusal;
};

// `detokenize`: the request is a detokenize (or TEI's decode). `backend` names it in messages.
// A backend without the route gets a 404 that names it and the backends that have it.
TokenizerPlan plan_tokenizer(TokenizerDialect front, bool detokenize, const TokenizeRequest* req,
                             const DetokenizeRequest* dreq, const BackendFacts& facts,
                             std::string_view backend);

// ---- llama.cpp's POST /apply-template: a chat rendered with the backend's template ----------

// The model an /apply-template body names ("" for none); a 400 when it is not a JSON object with
// a `messages` list.
Result<std::string> template_model(std::string_view body);

// The backend call that renders a chat for a llama.cpp client (`body`: its request): the
// llama.cpp backend's own /apply-template (the body as it is), TGI's /chat_tokenize; nullopt
// when the backend has none (the exchange answers 404).
struct TemplateCall {
    std::string path;
    std::string body;
    bool fast_path = false;
};
Result<std::optional<TemplateCall>> template_call(std::string_view body, BackendDialect backend,
                                                  std::string_view upstream_model,
                                                  std::string_view backend_name);
// The backend's answer as llama.cpp's {"prompt": ...}.
Result<std::string> template_answer(std::string_view body, BackendDialect backend);

}  // namespace infergate::translators
