#pragma once
// Anthropic's GET /v1/models and GET /v1/models/{model_id} (api-dialects §8), from the model
// catalogue: what the Anthropic SDK's models.list() and models.retrieve() read.

#include <string>
#include <string_view>

#include "translators/canonical/catalogue.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::anthropic {

// {"data":[model, ...],"has_more":false,"first_id":...,"last_id":...}: one page holds all.
std::string encode_models(const canonical::ModelCatalogue& catalogue);
// One model object; a 404 Error when `id` is not in the catalogue.
canonical::Result<std::string> encode_model(const canonical::ModelCatalogue& catalogue,
                                            std::string_view id);

}  // namespace infergate::translators::anthropic
