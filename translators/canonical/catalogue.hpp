#pragma once
// The model catalogue: everything the info routes (/v1/models, Ollama's /api/tags and
// /api/show, TGI's /info, llama.cpp's /props, SGLang's /get_model_info, ...) show about the
// models served here and the backend behind them. The proxy builds it in one place from its
// configuration and what the probe found; each dialect's info encoder (translators/<dialect>/
// info.hpp) renders it in that server's own shape, so every route lists the same models.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::canonical {

// One name a client may use, and the backend model it stands for.
struct CatalogueModel {
    std::string name;
    std::string target;
};

struct ModelCatalogue {
    // The served model first (when known), then every alias, in configuration order.
    std::vector<CatalogueModel> models;
    std::string served_model;  // the name the backend answers to; empty until discovered
    std::optional<int64_t> max_model_len;
    int64_t started_unix_ns = 0;  // when infergate started: the models' creation time
    std::string version;          // infergate's own version ("0.1.0")
    int threads = 1;              // infergate's worker threads
    // The backend, as SGLang's /get_server_info shows it.
    std::string backend_url;
    bool backend_ready = false;   // its dialect and model are known
    std::string backend_dialect;  // "sglang", "ollama", ...; meaningful only when ready
    std::string backend_detail;   // how it was found, or why it is not known yet

    // The entry named `name`; nullptr when there is none.
    const CatalogueModel* find(std::string_view name) const;
    // The creation time in whole seconds (OpenAI's `created`).
    int64_t started_unix_s() const { return started_unix_ns / 1'000'000'000; }
};

// RFC 3339 UTC with up to nine fractional digits, trailing zeros trimmed as Go's
// time.RFC3339Nano does ("2023-08-04T19:22:45.499127Z"): Ollama's and Anthropic's timestamps.
std::string format_rfc3339(int64_t unix_ns);

}  // namespace infergate::canonical
