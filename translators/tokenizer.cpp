#include "translators/tokenizer.hpp"

#include "translators/canonical/json.hpp"
#include "translators/embedding.hpp"
#include "translators/llamacpp/embedding.hpp"
#include "translators/openai/embedding.hpp"
#include "translators/openai/passthrough.hpp"
#include "translators/tei/embedding.hpp"
#include "translators/tgi/tokenizer.hpp"

namespace infergate::translators {

namespace {

Error no_route(std::string_view what) {
    Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = "this API has no " + std::string(what) + " route";
    return e;
}

}  // namespace

Result<DetokenizeRequest> TokenizerCodec::decode_detokenize(std::string_view /*body*/) const {
    return no_route("detokenize");
}

void TokenizerCodec::encode_detokenize_answer(const DetokenizeResult& /*result*/,
                                              const DetokenizeRequest& /*req*/,
                                              std::string& /*out*/) const {}

Result<std::string> TokenizerCodec::encode_detokenize(const DetokenizeRequest& /*req*/,
                                                      const TokenizerOptions& /*options*/) const {
    return no_route("detokenize");
}

Result<DetokenizeResult> TokenizerCodec::decode_detokenize_answer(
    std::string_view /*body*/, const DetokenizeRequest& /*req*/) const {
    return no_route("detokenize");
}

Error TokenizerCodec::decode_error(int status, std::string_view body) const {
    return codec_for(canonical::Dialect::tgi).decode_error(status, body);
}

const TokenizerCodec& tokenizer_codec(TokenizerDialect dialect) {
    switch (dialect) {
        case TokenizerDialect::vllm:
            return openai::vllm_tokenizer_codec();
        case TokenizerDialect::sglang:
            return openai::sglang_tokenizer_codec();
        case TokenizerDialect::llamacpp:
            return llamacpp::tokenizer_codec();
        case TokenizerDialect::tgi:
            return tgi::tokenizer_codec();
        case TokenizerDialect::tei:
            return tei::tokenizer_codec();
    }
    return openai::vllm_tokenizer_codec();
}

Result<std::optional<TokenizerDialect>> classify_tokenize_body(std::string_view body) {
    json::Document doc;
    if (auto e = json::parse_request_object(body, doc)) {
        return *e;
    }
    const auto has = [&](std::string_view key) { return json::find(doc, key) != nullptr; };
    if (has("content")) {
        return std::optional(TokenizerDialect::llamacpp);
    }
    if (const json::Value* p = json::find(doc, "prompt"); p != nullptr) {
        return std::optional(p->IsArray() ? TokenizerDialect::sglang : TokenizerDialect::vllm);
    }
    if (has("messages")) {
        return std::optional(TokenizerDialect::vllm);
    }
    if (const json::Value* in = json::find(doc, "inputs"); in != nullptr) {
        if (has("parameters")) {
            return std::optional(TokenizerDialect::tgi);
        }
        if (in->IsArray() || has("prompt_name")) {
            return std::optional(TokenizerDialect::tei);
        }
        return std::optional<TokenizerDialect>();  // TGI's or TEI's: the backend's decides
    }
    return canonical::bad_request(
        "POST /tokenize takes one of these bodies: {\"prompt\": ...} or {\"messages\": [...]} "
        "(vLLM, SGLang), {\"content\": ...} (llama.cpp), {\"inputs\": ...} (TGI, "
        "text-embeddings-inference)",
        "prompt");
}

Result<std::optional<TokenizerDialect>> classify_detokenize_body(std::string_view body) {
    json::Document doc;
    if (auto e = json::parse_request_object(body, doc)) {
        return *e;
    }
    const json::Value* tokens = json::find(doc, "tokens");
    if (json::find(doc, "skip_special_tokens") != nullptr ||
        (tokens != nullptr && tokens->IsArray() && !tokens->Empty() && (*tokens)[0].IsArray())) {
        return std::optional(TokenizerDialect::sglang);
    }
    return std::optional<TokenizerDialect>();
}

std::string tokenizer_passthrough_request(std::string& client_body, TokenizerDialect dialect,
                                          std::string_view client_model,
                                          std::string_view upstream_model) {
    const bool names_model =
        dialect == TokenizerDialect::vllm || dialect == TokenizerDialect::sglang;
    if (!names_model || upstream_model.empty() || upstream_model == client_model) {
        return std::move(client_body);
    }
    openai::RequestEdits edits;
    edits.model = upstream_model;
    std::string body;
    if (!openai::edit_request(client_body, edits, body)) {
        return std::move(client_body);  // it was decoded, so it is one JSON object: not reached
    }
    return body;
}

std::optional<TokenizerDialect> backend_tokenizer(BackendDialect backend, Flavor flavor) {
    switch (backend) {
        case BackendDialect::openai:
            if (flavor == Flavor::vllm) {
                return TokenizerDialect::vllm;
            }
            if (flavor == Flavor::sglang) {
                return TokenizerDialect::sglang;
            }
            return std::nullopt;  // OpenAI's API and other compatible servers have none
        case BackendDialect::sglang:
            return TokenizerDialect::sglang;
        case BackendDialect::llamacpp:
            return TokenizerDialect::llamacpp;
        case BackendDialect::tgi:
            return TokenizerDialect::tgi;
        case BackendDialect::tei:
            return TokenizerDialect::tei;
        case BackendDialect::auto_detect:
        case BackendDialect::ollama:
        case BackendDialect::vllm_legacy:
        case BackendDialect::anthropic:
            break;
    }
    return std::nullopt;
}

TokenizerPlan plan_tokenizer(TokenizerDialect front, bool detokenize, const TokenizeRequest* req,
                             const DetokenizeRequest* /*dreq*/, const BackendFacts& facts,
                             std::string_view backend) {
    TokenizerPlan p;
    const Flavor flavor = openai_flavor(facts.dialect, facts.probed, facts.host);
    const auto back = backend_tokenizer(facts.dialect, flavor);
    const std::string named(backend);
    if (!back) {
        p.refusal = no_endpoint(named, detokenize ? "detokenize" : "tokenize",
                                detokenize ? "a vLLM, SGLang, llama.cpp or TEI backend"
                                           : "a vLLM, SGLang, llama.cpp, TGI or TEI backend",
                                404);
        return p;
    }
    p.back = *back;
    if (detokenize && tokenizer_codec(p.back).detokenize_path().empty()) {
        p.refusal =
            no_endpoint(named, "detokenize", "a vLLM, SGLang, llama.cpp or TEI backend", 404);
        return p;
    }
    p.fast_path = front == p.back;
    if (!p.fast_path && req != nullptr && (req->chat || req->mixed)) {
        const std::string what = req->chat ? "messages" : "content";
        p.refusal = canonical::bad_request(
            "'" + what + "' cannot be carried to " + named + ": " +
                (req->chat ? "a chat tokenized with the model's template is vLLM's; send the "
                             "prompt as text"
                           : "a content that mixes text and token ids is llama.cpp's; send text"),
            what);
    }
    return p;
}

}  // namespace infergate::translators

namespace infergate::translators {

Result<std::string> template_model(std::string_view body) {
    json::Document doc;
    if (auto e = json::parse_request_object(body, doc)) {
        return *e;
    }
    const json::Value* messages = json::find(doc, "messages");
    if (messages == nullptr || !messages->IsArray()) {
        return canonical::bad_request("'messages' is required: the chat to render", "messages");
    }
    std::optional<canonical::Error> err;
    std::string model = json::get_string(doc, "model", "model", err).value_or("");
    if (err) {
        return *err;
    }
    return model;
}

Result<std::optional<TemplateCall>> template_call(std::string_view body, BackendDialect backend,
                                                  std::string_view upstream_model,
                                                  std::string_view backend_name) {
    json::Document doc;
    if (auto e = json::parse_request_object(body, doc)) {
        return *e;
    }
    const json::Value* messages = json::find(doc, "messages");
    if (messages == nullptr || !messages->IsArray()) {
        return canonical::bad_request("'messages' is required: the chat to render", "messages");
    }
    if (backend == BackendDialect::llamacpp) {
        return std::optional(TemplateCall{"/apply-template", std::string(body), true});
    }
    if (backend != BackendDialect::tgi) {
        return std::optional<TemplateCall>();
    }
    // TGI renders the messages alone; a setting that would change the rendering in llama.cpp
    // (tools, a template's arguments) is not carried.
    for (const auto& m : doc.GetObject()) {
        const std::string_view key = json::view(m.name);
        if (key != "messages" && key != "model" && !m.value.IsNull()) {
            return canonical::bad_request(
                "'" + std::string(key) + "' cannot be carried to " + std::string(backend_name) +
                    " (TGI): its /chat_tokenize renders the messages with the model's template "
                    "and nothing else; remove it",
                std::string(key));
        }
    }
    auto request = tgi::encode_chat_tokenize(json::to_string(*messages), upstream_model);
    if (!request) {
        return request.error();
    }
    return std::optional(TemplateCall{"/chat_tokenize", std::move(request.value()), false});
}

Result<std::string> template_answer(std::string_view body, BackendDialect backend) {
    if (backend != BackendDialect::tgi) {
        return std::string(body);
    }
    auto text = tgi::decode_templated_text(body);
    if (!text) {
        return text.error();
    }
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "prompt");
    json::string(w, text.value());
    w.EndObject();
    return out;
}

}  // namespace infergate::translators
