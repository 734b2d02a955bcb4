// What the tei dialect's files share (tei_api.cpp: the embedding routes, /info and the router;
// tei_tokenize.cpp: /tokenize and /decode): TEI's error types and shapes, axum's rejections, the
// Sentence Transformers prompts and the batch checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "emulator/embed.hpp"

namespace infergate::emulator {

inline constexpr int kTeiMaxClientBatchSize = 32;  // --max-client-batch-size

// ErrorType, serialized by its variant names.
enum class TeiError { kNone, kBackend, kOverloaded, kValidation, kTokenizer, kEmpty };
int tei_error_status(TeiError e);

struct TeiFailure {
    TeiError type = TeiError::kNone;
    std::string message;
    explicit operator bool() const { return type != TeiError::kNone; }
};

// TextEmbeddingsError's Display: "Input validation error: ..." for Validation and Empty.
TeiFailure tei_validation(std::string message);
TeiFailure tei_empty_input(std::string message);
// {"error","error_type"}, or the OpenAI route's {"message","code","type"}.
std::string tei_error_body(const TeiFailure& f, bool openai);
const ErrorStyle& tei_errors();

// axum's Json rejection for a body serde cannot read (plain text, as TGI's): 400 for bad JSON,
// 422 for the wrong shape; status 0: none.
struct TeiRejection {
    int status = 0;
    std::string message;
};
TeiRejection tei_shape_error(std::string_view body, std::string_view what);
TeiRejection tei_syntax_error(std::string_view body, const rapidjson::Document& doc);

// prepare_pre_prompt: the text of the Sentence Transformers prompt `prompt_name` names (none for
// a null name).
TeiFailure tei_prompt_text(const Options& options, const std::string* prompt_name,
                           std::string& out);
// The handlers' checks of a batch: not empty (a message without TextEmbeddingsError's prefix),
// at most --max-client-batch-size.
TeiFailure tei_batch_error(bool batch, std::size_t size);

net::awaitable<void> handle_tei_tokenize(Request& req, Conn& conn, const Options& options);
net::awaitable<void> handle_tei_decode(Request& req, Conn& conn);

}  // namespace infergate::emulator
