#pragma once

#include "translators/tokenizer.hpp"

namespace infergate::translators::tgi {
// TGI's POST /tokenize (router/src/server.rs tokenize, encoding_to_tokens): a GenerateRequest
// -> [{"id", "text", "start", "stop"}] (byte offsets in the input). TGI has no detokenize.
const TokenizerCodec& tokenizer_codec();
// TGI's POST /chat_tokenize: the request of a chat rendered with the model's template, and its
// answer's `templated_text` (ChatTokenizeResponse), for llama.cpp's /apply-template clients.
Result<std::string> encode_chat_tokenize(std::string_view messages_json, std::string_view model);
Result<std::string> decode_templated_text(std::string_view body);
}  // namespace infergate::translators::tgi
