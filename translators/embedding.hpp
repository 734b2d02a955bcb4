#pragma once
// Embeddings through the proxy: the codec interface each embeddings API implements (client side:
// decode the request, encode the answer and errors; upstream side: encode the request, decode
// the answer), the registry, and the plan of one request (which API of the backend serves it,
// and whether the client's bytes can go as they are). Pure: tests/translators/embedding/.
// docs/dialects.md, "Embeddings", has the table and the choices.

#include <optional>
#include <string>
#include <string_view>

#include "translators/backend_kind.hpp"
#include "translators/canonical/embedding.hpp"
#include "translators/codec.hpp"
#include "translators/pairing.hpp"

namespace infergate::translators {

using canonical::EmbedDialect;
using canonical::EmbeddingRequest;
using canonical::EmbeddingResult;

// How the exchange wants the backend's request written.
struct EmbedOptions {
    std::string model;                // the backend's served name
    Flavor flavor = Flavor::generic;  // of an OpenAI layer (vLLM reads normalize, ...)
    std::string backend;              // "the backend 'x' (vLLM)", for messages
};

// What the client's answer says besides the vectors.
struct EmbedAnswer {
    std::string_view model;  // the name the client used
    canonical::Timing timing;
};

class EmbedCodec {
public:
    virtual ~EmbedCodec() = default;
    virtual EmbedDialect dialect() const = 0;

    // ---- client side ---------------------------------------------------------------------
    // Errors are 400s in this API's words, naming the field.
    virtual Result<EmbeddingRequest> decode_request(std::string_view body) const = 0;
    // The answer to `req`.
    virtual void encode_response(const EmbeddingResult& result, const EmbeddingRequest& req,
                                 const EmbedAnswer& answer, std::string& out) const = 0;
    // The headers this API writes beside its answer, on either path (TEI: the counts, which
    // it writes in headers only). Default: none.
    virtual void answer_headers(const EmbeddingRequest& req, std::optional<int64_t> prompt_tokens,
                                HeaderList& out) const;
    // An error body in this API's shape.
    virtual void encode_error(const Error& error, std::string& out) const = 0;

    // ---- upstream side -------------------------------------------------------------------
    virtual std::string_view upstream_path() const = 0;
    // Errors are 400s saying what this backend cannot take and what would work.
    virtual Result<std::string> encode_request(const EmbeddingRequest& req,
                                               const EmbedOptions& options) const = 0;
    // A whole answer (and the headers that carry its counts: TEI's x-compute-tokens). Errors are
    // 502s saying what was wrong.
    virtual Result<EmbeddingResult> decode_response(std::string_view body,
                                                    const ResponseHeaders& headers) const = 0;
    // The same-dialect fast path: the answer goes to the client as it came. Checks that it is
    // what this API answers (a validating scan, not a parse of every number) and returns the
    // token count when it has one.
    virtual Result<std::optional<int64_t>> check_response(std::string_view body,
                                                          const ResponseHeaders& headers) const = 0;
    // Any error envelope the servers use.
    virtual Error decode_error(int status, std::string_view body) const;
};

// Never null.
const EmbedCodec& embed_codec(EmbedDialect dialect);

// Whether a backend of this dialect has an embeddings route.
bool has_embeddings(BackendDialect backend);

// "TGI", "llama.cpp", "TEI", ...: how messages name a backend of this dialect.
std::string_view engine_name(BackendDialect backend, Flavor flavor = Flavor::generic);
// "the backend 'gpu' (TGI)": `name` ("the backend 'gpu'", or "the backend") and its engine.
std::string backend_label(std::string_view name, BackendDialect backend, Flavor flavor);

// The 4xx a request gets from a backend that has no route for it: "the backend 'x' (TGI) has
// no embeddings endpoint; point embeddings at a TEI, vLLM, SGLang, Ollama or llama.cpp backend".
// `what`: "embeddings", "generation", "tokenize", ...; `where`: the backends that have it.
// A 400 naming `model` (the client chose the model, and so the backend), or `status`.
Error no_endpoint(std::string_view backend, std::string_view what, std::string_view where,
                  int status = 400);

struct EmbedPlan {
    EmbedDialect back = EmbedDialect::openai;
    // The client's bytes go as they are (only the model name may change) and the backend's
    // answer comes back as it is: a client in front of a server of its own API.
    bool fast_path = false;
    // The backend has no embeddings route (a 400 naming it), or cannot take what the client's
    // bytes hold on the fast path (a key of another server).
    std::optional<Error> refusal;
};

// `backend` names it in messages ("the backend 'gpu' (TGI)").
EmbedPlan plan_embeddings(EmbedDialect front, const EmbeddingRequest& req,
                          const BackendFacts& facts, std::string_view backend);

// The fast path's request: the client's own body with the model name the backend serves
// (OpenAI and Ollama name it; TEI and llama.cpp do not).
std::string embed_passthrough_request(std::string& client_body, EmbedDialect dialect,
                                      std::string_view client_model,
                                      std::string_view upstream_model);
// The fast path's answer with the name the client used, where the API writes one. False: left
// as it is.
bool embed_passthrough_rename(std::string_view response, EmbedDialect dialect,
                              std::string_view client_model, std::string& out);
// OpenAI's fast path: the client asked for base64 and the backend answered with floats (SGLang
// has no base64): the answer is translated instead of relayed.
bool floats_where_base64_asked(std::string_view response, const EmbeddingRequest& req);

}  // namespace infergate::translators
