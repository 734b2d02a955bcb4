#pragma once
// Ollama's info routes (api-dialects §6.9), answered from the model catalogue: GET /api/tags,
// GET /api/ps, GET /api/version, POST /api/show. The backend's weights are not visible through
// its API, so sizes, digests and details are present (clients index them) and empty.

#include <string>
#include <string_view>

#include "translators/canonical/catalogue.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::ollama {

// The Ollama API level infergate's Ollama front follows (the ollama/ollama revision read for
// api-dialects.md); clients that gate features on /api/version compare against this.
inline constexpr std::string_view kApiVersion = "0.12.0";

// GET / and HEAD /: Ollama's liveness answer, as text/plain (clients compare the body).
inline constexpr std::string_view kRootBody = "Ollama is running";
inline constexpr std::string_view kRootContentType = "text/plain; charset=utf-8";

// GET /api/tags: the local models.
std::string encode_tags(const canonical::ModelCatalogue& catalogue);
// GET /api/ps: the running models (all of them, loaded for good).
std::string encode_ps(const canonical::ModelCatalogue& catalogue);
// GET /api/version.
std::string encode_version();
// POST /api/show: `request_body` names the model ("model", or the older "name"; "x:latest" is
// "x"). A 400 Error for a bad body, a 404 Error for a model not in the catalogue.
canonical::Result<std::string> encode_show(const canonical::ModelCatalogue& catalogue,
                                           std::string_view request_body);

}  // namespace infergate::translators::ollama
