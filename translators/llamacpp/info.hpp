#pragma once
// llama.cpp's GET /props (api-dialects §10), from the model catalogue, for a backend that is not
// llama.cpp (a llama.cpp backend's own /props is relayed as it is: its slots, model file, chat
// template, build and generation defaults are facts only it knows).

#include <string>
#include <string_view>

#include "translators/canonical/catalogue.hpp"

namespace infergate::translators::llamacpp {

// GET /health when the backend is healthy: llama-server's answer (the other engines' clients
// read only the status).
inline constexpr std::string_view kHealthyBody = R"({"status":"ok"})";

// Only what infergate knows: the engine's slot count (it batches as it likes), chat template
// and model file are not visible through its API, so total_slots, chat_template and the like
// are left out rather than made up.
std::string encode_props(const canonical::ModelCatalogue& catalogue);

}  // namespace infergate::translators::llamacpp
