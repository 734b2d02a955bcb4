#include "translators/embedding.hpp"

#include <algorithm>

#include "translators/canonical/json_scan.hpp"
#include "translators/llamacpp/embedding.hpp"
#include "translators/ollama/embedding.hpp"
#include "translators/openai/embedding.hpp"
#include "translators/openai/passthrough.hpp"
#include "translators/tei/embedding.hpp"

namespace infergate::translators {

namespace {

// Keys of one OpenAI-compatible server's embeddings request that the other ignores without a
// word (both read the request with pydantic, which drops unknown keys): on the fast path, where
// the client's bytes go as they are, a key of the other server is refused instead.
constexpr std::string_view kVllmOnly[] = {"truncate_prompt_tokens",
                                          "add_special_tokens",
                                          "request_id",
                                          "embed_dtype",
                                          "endianness",
                                          "messages",
                                          "add_generation_prompt",
                                          "continue_final_message",
                                          "chat_template",
                                          "chat_template_kwargs",
                                          "mm_processor_kwargs"};
constexpr std::string_view kSglangOnly[] = {"rid", "lora_path", "embed_override_token_id",
                                            "embed_overrides"};

std::optional<Error> refuse_other_servers_keys(const EmbeddingRequest& req, Flavor flavor,
                                               std::string_view backend) {
    const bool sglang = flavor == Flavor::sglang;
    if (!sglang && flavor != Flavor::vllm) {
        return std::nullopt;  // the hosted API refuses what it does not know; others: unknown
    }
    auto listed = [&](std::string_view key) {
        return sglang ? std::find(std::begin(kVllmOnly), std::end(kVllmOnly), key) !=
                            std::end(kVllmOnly)
                      : std::find(std::begin(kSglangOnly), std::end(kSglangOnly), key) !=
                            std::end(kSglangOnly);
    };
    std::string key;
    if (sglang && req.normalize && req.normalize->said) {
        key = "normalize";
    }
    for (const canonical::Extra& e : req.extras) {
        if (key.empty() && e.json != "null" && listed(e.key)) {
            key = e.key;
        }
    }
    if (key.empty()) {
        return std::nullopt;
    }
    return canonical::bad_request(
        "'" + key + "' is " + (sglang ? "vLLM's" : "SGLang's") + " and " + std::string(backend) +
            " would ignore it without a word; remove it, or send the request to a " +
            (sglang ? "vLLM" : "SGLang") + " backend",
        key);
}

}  // namespace

void EmbedCodec::answer_headers(const EmbeddingRequest& /*req*/,
                                std::optional<int64_t> /*prompt_tokens*/,
                                HeaderList& /*out*/) const {}

Error EmbedCodec::decode_error(int status, std::string_view body) const {
    return codec_for(canonical::Dialect::openai_chat).decode_error(status, body);
}

const EmbedCodec& embed_codec(EmbedDialect dialect) {
    switch (dialect) {
        case EmbedDialect::openai:
            return openai::embeddings_codec();
        case EmbedDialect::ollama:
            return ollama::embed_codec();
        case EmbedDialect::ollama_legacy:
            return ollama::legacy_embed_codec();
        case EmbedDialect::tei:
            return tei::embed_codec();
        case EmbedDialect::llamacpp:
            return llamacpp::embed_codec();
    }
    return openai::embeddings_codec();
}

bool has_embeddings(BackendDialect backend) {
    switch (backend) {
        case BackendDialect::openai:
        case BackendDialect::sglang:
        case BackendDialect::ollama:
        case BackendDialect::llamacpp:
        case BackendDialect::tei:
            return true;
        case BackendDialect::auto_detect:
        case BackendDialect::tgi:
        case BackendDialect::vllm_legacy:
        case BackendDialect::anthropic:
            break;
    }
    return false;
}

std::string_view engine_name(BackendDialect backend, Flavor flavor) {
    switch (backend) {
        case BackendDialect::openai:
            return flavor == Flavor::vllm     ? "vLLM"
                   : flavor == Flavor::sglang ? "SGLang"
                   : flavor == Flavor::openai ? "OpenAI"
                                              : "OpenAI-compatible";
        case BackendDialect::sglang:
            return "SGLang";
        case BackendDialect::tgi:
            return "TGI";
        case BackendDialect::ollama:
            return "Ollama";
        case BackendDialect::llamacpp:
            return "llama.cpp";
        case BackendDialect::vllm_legacy:
            return "vLLM's demo server";
        case BackendDialect::anthropic:
            return "Anthropic";
        case BackendDialect::tei:
            return "TEI";
        case BackendDialect::auto_detect:
            break;
    }
    return "not identified";
}

std::string backend_label(std::string_view name, BackendDialect backend, Flavor flavor) {
    return std::string(name.empty() ? "the backend" : name) + " (" +
           std::string(engine_name(backend, flavor)) + ")";
}

Error no_endpoint(std::string_view backend, std::string_view what, std::string_view where,
                  int status) {
    Error e = canonical::bad_request(std::string(backend) + " has no " + std::string(what) +
                                         " endpoint; point " + std::string(what) + " requests at " +
                                         std::string(where),
                                     "model");
    e.status = status;
    if (status == 404) {
        e.type = "not_found_error";
    }
    return e;
}

EmbedPlan plan_embeddings(EmbedDialect front, const EmbeddingRequest& req,
                          const BackendFacts& facts, std::string_view backend) {
    EmbedPlan p;
    const Flavor flavor = openai_flavor(facts.dialect, facts.probed, facts.host);
    switch (facts.dialect) {
        case BackendDialect::openai:
        case BackendDialect::sglang:
            p.back = EmbedDialect::openai;
            p.fast_path = front == EmbedDialect::openai;
            if (p.fast_path) {
                p.refusal = refuse_other_servers_keys(req, flavor, backend);
            }
            return p;
        case BackendDialect::llamacpp:
            // Its native route for a llama.cpp client (its per-token vectors, its mixed
            // prompts); its OpenAI layer for the others, which reports the token count.
            p.back =
                front == EmbedDialect::llamacpp ? EmbedDialect::llamacpp : EmbedDialect::openai;
            p.fast_path = front == EmbedDialect::llamacpp;
            return p;
        case BackendDialect::ollama:
            p.back = front == EmbedDialect::ollama_legacy ? EmbedDialect::ollama_legacy
                                                          : EmbedDialect::ollama;
            p.fast_path = front == EmbedDialect::ollama || front == EmbedDialect::ollama_legacy;
            return p;
        case BackendDialect::tei:
            p.back = EmbedDialect::tei;
            p.fast_path = front == EmbedDialect::tei;
            return p;
        case BackendDialect::auto_detect:
        case BackendDialect::tgi:
        case BackendDialect::vllm_legacy:
        case BackendDialect::anthropic:
            break;
    }
    p.refusal = no_endpoint(backend, "embeddings",
                            "a TEI, vLLM, SGLang, Ollama or llama.cpp backend (name a model "
                            "one of them serves)");
    return p;
}

std::string embed_passthrough_request(std::string& client_body, EmbedDialect dialect,
                                      std::string_view client_model,
                                      std::string_view upstream_model) {
    const bool names_model = dialect == EmbedDialect::openai || dialect == EmbedDialect::ollama ||
                             dialect == EmbedDialect::ollama_legacy;
    if (!names_model || upstream_model.empty() || upstream_model == client_model) {
        return std::move(client_body);
    }
    openai::RequestEdits edits;
    edits.model = upstream_model;
    std::string body;
    body.reserve(client_body.size() + upstream_model.size() + 16);
    if (!openai::edit_request(client_body, edits, body)) {
        return std::move(client_body);  // it was decoded, so it is one JSON object: not reached
    }
    return body;
}

bool embed_passthrough_rename(std::string_view response, EmbedDialect dialect,
                              std::string_view client_model, std::string& out) {
    if (dialect != EmbedDialect::openai && dialect != EmbedDialect::ollama) {
        return false;
    }
    openai::ResponseEdits edits;
    edits.model = client_model;
    out.reserve(response.size() + client_model.size());
    return openai::edit_response(response, edits, out);
}

bool floats_where_base64_asked(std::string_view response, const EmbeddingRequest& req) {
    if (!req.base64) {
        return false;
    }
    json::ObjectSpans top;
    if (!json::scan_object(response, top)) {
        return false;
    }
    for (const json::MemberSpan& m : top.members) {
        if (!json::key_is(response, m, "data") || response[m.value_begin] != '[') {
            continue;
        }
        json::Cursor cur(response.substr(m.value_begin + 1));
        cur.ws();
        if (cur.at_end() || cur.peek() != '{') {
            return false;
        }
        json::ObjectSpans item;
        if (!json::scan_object_at(response, m.value_begin + 1 + cur.offset(), item)) {
            return false;
        }
        for (const json::MemberSpan& f : item.members) {
            if (json::key_is(response, f, "embedding")) {
                return response[f.value_begin] == '[';
            }
        }
    }
    return false;
}

}  // namespace infergate::translators
