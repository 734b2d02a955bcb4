#pragma once
// What the proxy asks a backend on its clients' behalf outside generations: the call a health
// check makes, and which info routes the backend answers for itself. Pure (tests/translators/
// pairing/health_test.cpp).

#include <string>
#include <string_view>

#include "translators/backend_kind.hpp"
#include "translators/canonical/types.hpp"
#include "translators/codec.hpp"

namespace infergate::translators {

struct HealthCall {
    bool post = false;  // GET otherwise
    std::string path;   // below the backend URL's base path
    std::string body;   // of a POST
};

// The backend call of a health check. `deep` (/health_generate): one token of real generation,
// in whatever API the backend speaks (SGLang's own /health_generate where it has one; one
// embedding on TEI, which does not generate); otherwise
// the engine's liveness route (api-dialects §1, health table). `model`: the served one.
canonical::Result<HealthCall> health_call(BackendDialect backend, bool deep,
                                          const std::string& model, Flavor flavor);

// Whether a backend answers an info route (`path`: /get_model_info, /get_server_info, /props)
// for itself: facts only it knows (SGLang's model and server info; llama.cpp's slots, model
// file, chat template, build and generation defaults). Otherwise infergate answers from its
// model catalogue.
bool answers_info_route(BackendDialect backend, std::string_view path);

}  // namespace infergate::translators
