#pragma once
// SGLang's GET /get_model_info and GET /get_server_info (api-dialects §4), from the model
// catalogue, for a backend that is not SGLang (an SGLang backend answers for itself).

#include <string>

#include "translators/canonical/catalogue.hpp"

namespace infergate::translators::sglang {

// model_path, tokenizer_path, is_generation, preferred_sampling_params, weight_version.
std::string encode_model_info(const canonical::ModelCatalogue& catalogue);
// model_path, tokenizer_path, is_generation, served_model_name, version and the backend
// infergate stands in front of (url, ready, dialect, how it was detected).
std::string encode_server_info(const canonical::ModelCatalogue& catalogue);

}  // namespace infergate::translators::sglang
