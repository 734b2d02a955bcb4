#pragma once
// Model catalogues for the info-route tests: the ones infergate built on 2026-12-03, in front
// of the emulator (openai dialect, model "emu/m-x", max_model_len 4096, two aliases, two
// threads) and in front of nothing (one alias, nothing discovered); the expected bodies in
// tests/translators/<dialect>/info_test.cpp are what infergate answered then.

#include <string>

#include <doctest/doctest.h>

#include "translators/canonical/catalogue.hpp"
#include "translators/canonical/json.hpp"

namespace infergate::test {

inline constexpr int64_t kStartedNs = 1796293330158607272;  // 2026-12-03T10:22:10.158607272Z

inline canonical::ModelCatalogue served_catalogue() {
    canonical::ModelCatalogue c;
    c.models = {{"emu/m-x", "emu/m-x"}, {"alias1", "emu/m-x"}, {"a2", "other"}};
    c.served_model = "emu/m-x";
    c.max_model_len = 4096;
    c.started_unix_ns = kStartedNs;
    c.version = "0.1.0";
    c.threads = 2;
    c.backend_url = "http://127.0.0.1:45739";
    c.backend_ready = true;
    c.backend_dialect = "openai";
    c.backend_detail =
        "openai via GET http://127.0.0.1:45739/v1/models owned_by \"vllm\"; GET "
        "http://127.0.0.1:45739/version answered like vLLM";
    return c;
}

inline canonical::ModelCatalogue undiscovered_catalogue() {
    canonical::ModelCatalogue c;
    c.models = {{"alias1", "zz"}};
    c.started_unix_ns = kStartedNs;
    c.version = "0.1.0";
    c.backend_url = "http://127.0.0.1:1";
    c.backend_dialect = "openai";  // the default before the probe: not shown while not ready
    c.backend_detail = "no answer from GET http://127.0.0.1:1/v1/models: Connection refused";
    return c;
}

// Parses `body` as a JSON object (the shape tests index it).
inline void parse_object(const std::string& body, json::Document& doc) {
    REQUIRE_FALSE(json::parse(body, doc).has_value());
    REQUIRE(doc.IsObject());
}

}  // namespace infergate::test
