// The tei dialect's shared pieces (tei.hpp): error types and bodies, axum's rejections, the
// Sentence Transformers prompts, the batch checks.
#include <algorithm>

#include "emulator/json_util.hpp"
#include "emulator/tei.hpp"
#include "emulator/tgi_request.hpp"

namespace infergate::emulator {
namespace {

std::string_view error_type_name(TeiError e) {
    switch (e) {
        case TeiError::kBackend:
            return "Backend";
        case TeiError::kOverloaded:
            return "Overloaded";
        case TeiError::kTokenizer:
            return "Tokenizer";
        case TeiError::kEmpty:
            return "Empty";
        default:
            return "Validation";
    }
}

class TeiErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        const TeiError type = status == 424   ? TeiError::kBackend
                              : status == 429 ? TeiError::kOverloaded
                              : status == 400 ? TeiError::kEmpty
                                              : TeiError::kValidation;
        body = tei_error_body({type, std::string(message)}, false);
        return kJson;
    }
    void render_event(std::string_view, std::string& event) const override { event.clear(); }
};
const TeiErrors kErrors;

}  // namespace

int tei_error_status(TeiError e) {
    switch (e) {
        case TeiError::kBackend:
            return 424;
        case TeiError::kOverloaded:
            return 429;
        case TeiError::kEmpty:
            return 400;
        default:
            return 422;  // Validation, Tokenizer
    }
}

TeiFailure tei_validation(std::string message) {
    return {TeiError::kValidation, "Input validation error: " + std::move(message)};
}
TeiFailure tei_empty_input(std::string message) {
    return {TeiError::kEmpty, "Input validation error: " + std::move(message)};
}

std::string tei_error_body(const TeiFailure& f, bool openai) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    if (openai) {
        w.kv("message", f.message);
        w.kv_int("code", tei_error_status(f.type));
        w.kv("type", error_type_name(f.type));
    } else {
        w.kv("error", f.message);
        w.kv("error_type", error_type_name(f.type));
    }
    w.EndObject();
    return body;
}

const ErrorStyle& tei_errors() {
    return kErrors;
}

TeiRejection tei_shape_error(std::string_view body, std::string_view what) {
    return {422, "Failed to deserialize the JSON body into the target type: " + std::string(what) +
                     serde_position(body)};
}

TeiRejection tei_syntax_error(std::string_view body, const rapidjson::Document& doc) {
    const std::size_t at = std::min<std::size_t>(doc.GetErrorOffset(), body.size());
    return {400,
            "Failed to parse the request body as JSON: " +
                std::string(at >= body.size() ? "EOF while parsing a value" : "expected value") +
                serde_position(body.substr(0, at + (at < body.size() ? 1 : 0)))};
}

TeiFailure tei_prompt_text(const Options& options, const std::string* prompt_name,
                           std::string& out) {
    if (prompt_name == nullptr) {
        return {};
    }
    const auto& prompts = options.embedding.prompts;
    if (prompts.empty()) {
        return tei_validation("`default-prompt-name` is set to `" + *prompt_name +
                              "` but no prompts were found in the Sentence Transformers "
                              "configuration");
    }
    const auto it = std::find_if(prompts.begin(), prompts.end(),
                                 [&](const auto& p) { return p.first == *prompt_name; });
    if (it == prompts.end()) {
        std::string keys = "[";
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            keys += (i > 0 ? ", \"" : "\"") + prompts[i].first + "\"";
        }
        return tei_validation("`default-prompt-name` is set to `" + *prompt_name +
                              "` but it was not found in the Sentence Transformers prompts. "
                              "Available prompts: " +
                              keys + "]");
    }
    out = it->second;
    return {};
}

TeiFailure tei_batch_error(bool batch, std::size_t size) {
    if (batch && size == 0) {
        return {TeiError::kEmpty, "`inputs` cannot be empty"};
    }
    if (batch && size > static_cast<std::size_t>(kTeiMaxClientBatchSize)) {
        return {TeiError::kValidation, "batch size " + std::to_string(size) +
                                           " > maximum allowed batch size " +
                                           std::to_string(kTeiMaxClientBatchSize)};
    }
    return {};
}

}  // namespace infergate::emulator
