// Reads each server's answers on its info routes and decides the backend's dialect and model.
#include "proxy/backend_probe.hpp"

#include <optional>
#include <vector>

#include "proxy/backend_probe_http.hpp"
#include "translators/canonical/json.hpp"

namespace infergate {

namespace {

using D = config::BackendDialect;
using probe::fetch;
using probe::Route;

bool answered_200(const Route& r) {
    return !r.reply.ec && r.reply.status == 200;
}

std::string string_member(const json::Value& v, const char* key) {
    if (!v.IsObject()) {
        return {};
    }
    const auto* m = json::find(v, key);
    return m != nullptr && m->IsString() ? std::string(json::view(*m)) : std::string();
}

std::optional<int64_t> int_member(const json::Value& v, const char* key) {
    if (!v.IsObject()) {
        return std::nullopt;
    }
    const auto* m = json::find(v, key);
    return m != nullptr && m->IsInt64() ? std::optional<int64_t>(m->GetInt64()) : std::nullopt;
}

translators::Flavor flavor_of(D d) {
    return d == D::sglang ? translators::Flavor::sglang : translators::Flavor::generic;
}

std::string_view engine_name(D d) {
    switch (d) {
        case D::openai:
            return "vLLM";
        case D::sglang:
            return "SGLang";
        case D::tgi:
            return "TGI";
        case D::ollama:
            return "Ollama";
        case D::llamacpp:
            return "llama.cpp";
        case D::vllm_legacy:
            return "vLLM's demo server";
        case D::anthropic:
            return "Anthropic";
        case D::tei:
            return "TEI";
        case D::auto_detect:
            break;
    }
    return "?";
}

// One engine's own fingerprint, seen on one route.
struct Finding {
    D dialect;
    std::string why;  // "GET http://h:8000/v1/models owned_by \"vllm\""
};

constexpr std::string_view kSetDialect =
    "set --upstream-dialect (backends[].dialect in a config file) to one of openai, sglang, tgi, "
    "ollama, llamacpp, vllm_legacy, anthropic or tei";

}  // namespace

// Every engine's own fingerprint is looked for on every probe round (api-dialects §1, §9; the
// routes and bodies are the servers' own, see docs/dialects.md "Backend detection"), so that two
// engines' fingerprints at once are seen as the conflict they are instead of the first one
// winning. Routes other servers serve too (Ollama's /api/tags on llama.cpp and SGLang,
// /v1/models everywhere) are not fingerprints; neither is /health, which every server has.
Task<ProbeResult> probe_backend(const config::Backend& backend, net::ssl::context* tls,
                                std::optional<net::ip::address> ip) {
    auto executor = co_await net::this_coro::executor;
    Deadlines deadlines;  // outlives the pool and its connections
    deadlines.start(executor, Deadlines::tick_for(std::chrono::seconds(5)));
    UpstreamPool pool(executor, deadlines, backend, backend.url.tls ? tls : nullptr, ip);
    ProbeResult result;
    BackendInfo& info = result.info;
    const std::string base = backend.url.text();
    auto url = [&](const Route& r) { return "GET " + base + r.path; };

    Route models;
    co_await fetch(pool, models, "/v1/models");
    if (models.reply.ec) {
        info.detail = "no answer from " + url(models) + ": " + models.reply.ec.message();
        co_return result;
    }
    result.reachable = true;
    Route version;
    Route sgl_info;
    Route tgi_info;
    Route root;
    Route ollama_version;
    Route props;
    co_await fetch(pool, version, "/version");
    co_await fetch(pool, sgl_info, "/get_model_info");
    co_await fetch(pool, tgi_info, "/info");
    co_await fetch(pool, root, "/");
    co_await fetch(pool, ollama_version, "/api/version");
    co_await fetch(pool, props, "/props");
    std::vector<Finding> findings;

    // GET /v1/models: OpenAI's list (`owned_by` names vLLM, SGLang and llama.cpp; TGI puts the
    // model id there, Ollama the model's namespace) or Anthropic's (`type: "model"`,
    // `display_name`, no `object`).
    std::string listed_model;
    std::string owned_by;
    bool model_list = false;
    std::vector<std::string> listed;  // every id the list holds, in its order
    if (models.doc.IsObject()) {
        const json::Value* data = json::find(models.doc, "data");
        if (data != nullptr && data->IsArray()) {
            for (const auto& m : data->GetArray()) {
                if (std::string id = m.IsObject() ? string_member(m, "id") : std::string();
                    !id.empty()) {
                    listed.push_back(std::move(id));
                }
            }
        }
        const json::Value* first =
            data != nullptr && data->IsArray() && !data->Empty() && (*data)[0].IsObject()
                ? &(*data)[0]
                : nullptr;
        if (first != nullptr && string_member(*first, "type") == "model" &&
            json::find(*first, "display_name") != nullptr &&
            json::find(*first, "object") == nullptr) {
            findings.push_back({D::anthropic, url(models) + " in Anthropic's shape"});
            models.verdict = "Anthropic's model list";
            listed_model = string_member(*first, "id");
        } else if (data != nullptr && (data->IsArray() || data->IsNull())) {
            // Ollama writes "data": null when it has no model (a nil Go slice).
            model_list = true;
            if (first != nullptr) {
                listed_model = string_member(*first, "id");
                owned_by = string_member(*first, "owned_by");
                info.max_model_len = int_member(*first, "max_model_len");
            }
            models.verdict = "an OpenAI model list";
            if (listed_model.empty()) {
                models.verdict += " with no model in it";
            } else if (!owned_by.empty()) {
                models.verdict += " owned_by \"" + owned_by + "\"";
            }
        }
    }
    if (models.verdict.empty()) {
        models.verdict = "200 but neither an OpenAI nor an Anthropic model list";
    }
    if (owned_by == "vllm") {
        findings.push_back({D::openai, url(models) + " owned_by \"vllm\""});
    } else if (owned_by == "sglang") {
        findings.push_back({D::sglang, url(models) + " owned_by \"sglang\""});
    } else if (owned_by == "llamacpp") {
        findings.push_back({D::llamacpp, url(models) + " owned_by \"llamacpp\""});
    }

    // vLLM's GET /version: {"version": "0.11.0"}. No other engine has the route, but it only
    // confirms /v1/models' owned_by "vllm": alone it tells nothing about the flavour.
    const std::string vllm_version = string_member(version.doc, "version");
    if (answered_200(version)) {
        version.verdict = vllm_version.empty() ? "200 but not vLLM's {\"version\": ...}"
                                               : "vLLM's {\"version\": \"" + vllm_version + "\"}";
    }

    // SGLang's GET /get_model_info: {"model_path": ..., "tokenizer_path": ..., ...}.
    const std::string sgl_model = string_member(sgl_info.doc, "model_path");
    if (sgl_info.doc.IsObject() && json::find(sgl_info.doc, "model_path") != nullptr) {
        findings.push_back({D::sglang, url(sgl_info) + " has model_path"});
        sgl_info.verdict = "SGLang's model info";
    } else if (answered_200(sgl_info)) {
        sgl_info.verdict = "200 but not SGLang's (no model_path)";
    }

    // TGI's GET /info: the router crate's name, "text-generation-router". text-embeddings-
    // inference's (router/src/lib.rs Info): no router, but `model_type` (an object naming the
    // kind: {"embedding": {"pooling": "cls"}}) and `max_client_batch_size`.
    const bool tei = tgi_info.doc.IsObject() && json::find(tgi_info.doc, "router") == nullptr &&
                     json::find(tgi_info.doc, "model_type") != nullptr &&
                     json::find(tgi_info.doc, "model_type")->IsObject() &&
                     json::find(tgi_info.doc, "max_client_batch_size") != nullptr;
    if (string_member(tgi_info.doc, "router").starts_with("text-generation-router")) {
        findings.push_back({D::tgi, url(tgi_info) + " router \"text-generation-router\""});
        tgi_info.verdict = "TGI's info";
    } else if (tei) {
        findings.push_back({D::tei, url(tgi_info) + " has model_type and max_client_batch_size"});
        tgi_info.verdict = "text-embeddings-inference's info";
    } else if (answered_200(tgi_info)) {
        tgi_info.verdict =
            "200 but not TGI's (no router \"text-generation-router\") and not "
            "text-embeddings-inference's (no model_type)";
    }

    // Ollama's GET /: the plain text "Ollama is running" (SGLang's Ollama layer, when mounted on
    // "/", answers it as a JSON string, quotes included: that is not Ollama).
    if (answered_200(root)) {
        if (root.reply.body == "Ollama is running") {
            findings.push_back({D::ollama, url(root) + " \"Ollama is running\""});
            root.verdict = "Ollama's \"Ollama is running\"";
        } else {
            root.verdict = "200 but not Ollama's \"Ollama is running\"";
        }
    }
    if (answered_200(ollama_version)) {
        ollama_version.verdict = string_member(ollama_version.doc, "version").empty()
                                     ? "200 but not Ollama's {\"version\": ...}"
                                     : "Ollama's {\"version\": ...}";
    }

    // llama.cpp: `Server: llama.cpp` on every answer, and GET /props.
    for (const Route* r :
         {&models, &version, &sgl_info, &tgi_info, &root, &ollama_version, &props}) {
        if (!r->reply.ec && r->reply.server.find("llama.cpp") != std::string::npos) {
            findings.push_back({D::llamacpp, url(*r) + " with the header Server: llama.cpp"});
            break;
        }
    }
    std::optional<int64_t> n_ctx;
    if (const auto* s =
            props.doc.IsObject() ? json::find(props.doc, "default_generation_settings") : nullptr;
        s != nullptr && s->IsObject()) {
        findings.push_back({D::llamacpp, url(props) + " has default_generation_settings"});
        props.verdict = "llama.cpp's props";
        n_ctx = int_member(*s, "n_ctx");
    } else if (answered_200(props)) {
        props.verdict = "200 but not llama.cpp's (no default_generation_settings)";
    }

    // The decision: one engine's fingerprints, or a model list and nothing else (a generic
    // OpenAI-compatible server). Several engines' fingerprints or only weak ones: no dialect.
    std::optional<D> found;
    std::string how;
    for (const Finding& f : findings) {
        if (found && *found != f.dialect) {
            found.reset();
            how.clear();
            break;
        }
        found = f.dialect;
        how += (how.empty() ? "" : "; ") + f.why;
    }
    const bool conflict = !found && !findings.empty();
    if (found == D::openai) {
        info.flavor = translators::Flavor::vllm;
        if (!vllm_version.empty()) {
            how += "; " + url(version) + " answered like vLLM";
        }
    } else if (!found && !conflict && model_list &&
               (!listed_model.empty() || !backend.model.empty())) {
        found = D::openai;
        how = url(models) + " answered " + models.verdict +
              " and no engine's own fingerprint was seen: a generic OpenAI-compatible server";
        if (!vllm_version.empty()) {
            // vLLM's own list says owned_by "vllm": a vLLM-only stream option could be refused.
            how += " (" + url(version) +
                   " answered like vLLM's, but its model list is not "
                   "vLLM's, so only standard OpenAI fields are sent)";
        }
    }
    if (found && found != D::openai) {
        info.flavor = flavor_of(*found);
    }

    if (backend.dialect != D::auto_detect) {
        if (!found) {
            how = "configured";
        } else if (backend.dialect != *found) {
            how += "; overridden by the configured dialect";
        }
        if (!found || backend.dialect != *found) {
            info.flavor = flavor_of(backend.dialect);
        }
        found = backend.dialect;
    }

    // The served model: configured, else listed, else the engine's own info route.
    info.served_model = backend.model;
    if (info.served_model.empty()) {
        info.served_model = listed_model;
    }
    if (found == D::sglang && info.served_model.empty()) {
        info.served_model = sgl_model;
    }
    if (found == D::tgi) {
        if (info.served_model.empty()) {
            info.served_model = string_member(tgi_info.doc, "model_id");
        }
        if (auto total = int_member(tgi_info.doc, "max_total_tokens")) {
            info.max_model_len = total;
        }
    }
    if (found == D::tei) {
        // served_model_name (newer releases; what its /v1/embeddings answers), else model_id.
        if (info.served_model.empty()) {
            info.served_model = string_member(tgi_info.doc, "served_model_name");
        }
        if (info.served_model.empty()) {
            info.served_model = string_member(tgi_info.doc, "model_id");
        }
        if (auto n = int_member(tgi_info.doc, "max_input_length")) {
            info.max_model_len = n;
        }
    }
    if (found == D::ollama && info.served_model.empty()) {
        // Ollama builds before its OpenAI layer have no /v1/models; /api/tags lists the models.
        Route tags;
        co_await fetch(pool, tags, "/api/tags");
        if (const auto* list = tags.doc.IsObject() ? json::find(tags.doc, "models") : nullptr;
            list != nullptr && list->IsArray() && !list->Empty()) {
            info.served_model = string_member((*list)[0], "name");
            for (const auto& m : list->GetArray()) {
                if (std::string name = m.IsObject() ? string_member(m, "name") : std::string();
                    !name.empty()) {
                    listed.push_back(std::move(name));
                }
            }
        }
    }
    if (found == D::llamacpp && n_ctx && *n_ctx > 0) {
        info.max_model_len = n_ctx;
    }
    if (info.served_model.empty() && found == D::vllm_legacy) {
        // The demo server has no model name at all; clients see the backend's configured name.
        info.served_model = backend.name;
    }
    // Every model it serves: configured, else what it lists (a server that loads models on
    // demand, Ollama or a hosted API, lists many), else the one found.
    info.models = backend.models;
    if (info.models.empty()) {
        info.models = listed;
    }
    if (info.models.empty() && !info.served_model.empty()) {
        info.models.push_back(info.served_model);
    }

    if (!found) {
        Route health;
        co_await fetch(pool, health, "/health");
        if (answered_200(health)) {
            health.verdict = "200";
        }
        std::string answers;
        for (const Route* r :
             {&models, &version, &sgl_info, &tgi_info, &root, &ollama_version, &props, &health}) {
            answers += (answers.empty() ? "" : "; ") + url(*r) + ": " + r->verdict;
        }
        if (conflict) {
            std::string seen;
            for (const Finding& f : findings) {
                seen += (seen.empty() ? "" : "; ") + f.why + " (" +
                        std::string(engine_name(f.dialect)) + ")";
            }
            info.detail =
                "the fingerprints of more than one engine answer at " + base + ": " + seen +
                "; no dialect is picked from conflicting evidence: " + std::string(kSetDialect);
            co_return result;
        }
        info.detail = "could not tell what serves " + base + " (" + answers + "): ";
        const bool only_health = answered_200(health) && !answered_200(models) &&
                                 !answered_200(version) && !answered_200(sgl_info) &&
                                 !answered_200(tgi_info) && !answered_200(root) &&
                                 !answered_200(ollama_version) && !answered_200(props);
        if (only_health) {
            // vLLM's demo server answers nothing else, but neither does any server with a health
            // route and an unprobed API: that is no evidence for a dialect.
            info.detail +=
                "only GET /health answered, and every server has that route: vLLM's demo server "
                "(python -m vllm.entrypoints.api_server) answers nothing else but is not assumed; "
                "for it set --upstream-dialect vllm_legacy and --model NAME, for any other server ";
        } else if (model_list) {
            info.detail +=
                "its model list names no model, so there is no model to serve: set "
                "--model NAME (backends[].model), or ";
        } else {
            info.detail +=
                "none answered like SGLang, vLLM, TGI, TEI, Ollama, llama.cpp, Anthropic or "
                "an OpenAI model list; ";
        }
        info.detail += kSetDialect;
        co_return result;
    }
    info.dialect = *found;
    info.ready = true;
    info.detail = std::string(config::to_string(info.dialect)) + " via " + how;
    co_return result;
}

}  // namespace infergate
