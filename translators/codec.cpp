#include "translators/codec.hpp"

#include "translators/anthropic/codec.hpp"
#include "translators/canonical/json.hpp"
#include "translators/llamacpp/codec.hpp"
#include "translators/ollama/codec.hpp"
#include "translators/openai/codec.hpp"
#include "translators/responses/codec.hpp"
#include "translators/sglang/codec.hpp"
#include "translators/tgi/codec.hpp"
#include "translators/vllm_legacy/codec.hpp"

namespace infergate::translators {

namespace {

std::string error_type_for(int status) {
    if (status == 400 || status == 422) {
        return "invalid_request_error";
    }
    if (status == 401) {
        return "authentication_error";
    }
    if (status == 403) {
        return "permission_error";
    }
    if (status == 404) {
        return "not_found_error";
    }
    if (status == 429) {
        return "rate_limit_error";
    }
    return "upstream_error";
}

}  // namespace

void Codec::prepare_request(GenerationRequest&, std::string_view) const {}

Result<GenerationRequest> Codec::decode_stateful(std::string_view body,
                                                 const ConversationLookup*) const {
    return decode_request(body);
}

std::optional<StoredTurn> Codec::stored_turn(const GenerationRequest&,
                                             const GenerationResult&) const {
    return std::nullopt;
}

std::string_view Codec::id_prefix() const {
    return "cmpl-";
}

size_t Codec::choice_ids_wanted(const GenerationRequest&) const {
    return 0;
}

void Codec::init_client_stream(StreamState&, const GenerationRequest&) const {}

void Codec::response_headers(const GenerationResult&, HeaderList&) const {}

void Codec::init_upstream_stream(StreamState&, const GenerationRequest&) const {}

void Codec::decode_stream_end(StreamState&, std::vector<StreamEvent>&) const {}

void Codec::read_response_headers(const ResponseHeaders&, GenerationResult&) const {}

Result<canonical::ResponseFacts> Codec::check_response(std::string_view body,
                                                       const GenerationRequest& req) const {
    auto decoded = decode_response(body, req);
    if (!decoded) {
        return std::move(decoded.error());
    }
    return canonical::ResponseFacts{decoded->usage, canonical::answer_finish(*decoded)};
}

Error Codec::decode_error(int status, std::string_view body) const {
    // Every envelope the servers use (api-dialects §10.14): {"error": {"message": ...}},
    // {"object": "error", "message": ...}, {"error": "text"}, FastAPI {"detail": ...}, TGI
    // {"error": "...", "error_type": ...}, or plain text.
    Error e;
    e.status = status;
    e.type = error_type_for(status);
    json::Document doc;
    if (!json::parse(body, doc, "upstream error") && doc.IsObject()) {
        const json::Value* err = json::find(doc, "error");
        const json::Value* message = nullptr;
        if (err != nullptr && err->IsObject()) {
            message = json::find(*err, "message");
            if (const json::Value* t = json::find(*err, "type"); t != nullptr && t->IsString()) {
                e.type = std::string(json::view(*t));
            }
        } else if (err != nullptr && err->IsString()) {
            message = err;
        }
        if (message == nullptr) {
            message = json::find(doc, "message");
        }
        if (message == nullptr) {
            message = json::find(doc, "detail");
        }
        if (message != nullptr) {
            e.message = message->IsString() ? std::string(json::view(*message))
                                            : json::to_string(*message);
        }
    }
    if (e.message.empty()) {
        std::string_view text = body.substr(0, 2000);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
            text.remove_suffix(1);
        }
        e.message = text.empty() ? "the backend answered HTTP " + std::to_string(status) +
                                       " with an empty body"
                                 : std::string(text);
    }
    return e;
}

const Codec& codec_for(Dialect dialect) {
    switch (dialect) {
        case Dialect::sglang: return sglang::codec();
        case Dialect::openai_completions: return openai::completions_codec();
        case Dialect::openai_chat: return openai::chat_codec();
        case Dialect::ollama_generate: return ollama::generate_codec();
        case Dialect::ollama_chat: return ollama::chat_codec();
        case Dialect::llamacpp: return llamacpp::codec();
        case Dialect::anthropic: return anthropic::codec();
        case Dialect::tgi: return tgi::codec();
        case Dialect::vllm_legacy: return vllm_legacy::codec();
        case Dialect::openai_responses:
            return responses::codec();
    }
    return openai::completions_codec();
}

}  // namespace infergate::translators
