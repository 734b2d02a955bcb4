#pragma once
// TGI's GET /info (api-dialects §7.8), from the model catalogue: what huggingface_hub and the
// TGI clients read to learn the model and its limits.

#include <string>

#include "translators/canonical/catalogue.hpp"

namespace infergate::translators::tgi {

std::string encode_info(const canonical::ModelCatalogue& catalogue);

}  // namespace infergate::translators::tgi
