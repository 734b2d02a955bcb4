#pragma once
// OpenAI's GET /v1/models and GET /v1/models/{id} (api-dialects §5.8), from the model catalogue.
// vLLM and SGLang add `root` and `max_model_len`; infergate writes both.

#include <string>
#include <string_view>

#include "translators/canonical/catalogue.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::openai {

// {"object":"list","data":[model, ...]}
std::string encode_models(const canonical::ModelCatalogue& catalogue);
// One model object; a 404 Error (OpenAI's wording, listing the names served) when `id` is not
// in the catalogue.
canonical::Result<std::string> encode_model(const canonical::ModelCatalogue& catalogue,
                                            std::string_view id);

}  // namespace infergate::translators::openai
