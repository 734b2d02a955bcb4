// The llama.cpp wire pieces (codec_impl.hpp) that the response and stream codecs share: finish,
// counts, tokens, probabilities, timings and the error object.

#include <algorithm>
#include <array>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::FinishKind;
using canonical::FinishReason;

// The error types llama.cpp itself uses (server-common.cpp); others are mapped by status.
constexpr std::array<std::string_view, 8> kErrorTypes = {
    "invalid_request_error", "exceed_context_size_error", "authentication_error",
    "permission_error",      "not_found_error",           "server_error",
    "not_supported_error",   "unavailable_error"};

std::string_view error_type(const Error& e) {
    if (std::find(kErrorTypes.begin(), kErrorTypes.end(), e.type) != kErrorTypes.end()) {
        return e.type;
    }
    switch (e.status) {
        case 401:
            return "authentication_error";
        case 403:
            return "permission_error";
        case 404:
            return "not_found_error";
        case 501:
            return "not_supported_error";
        case 503:
            return "unavailable_error";
        default:
            break;
    }
    return e.status >= 500 ? "server_error" : "invalid_request_error";
}

std::optional<std::string> read_int(const json::Value& obj, std::string_view k,
                                    std::optional<int64_t>& out) {
    const json::Value* v = json::find(obj, k);
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsInt64()) {
        return "'" + std::string(k) + "' is " + std::string(json::type_name(*v)) +
               ", not an integer";
    }
    out = v->GetInt64();
    return std::nullopt;
}

}  // namespace

namespace wire {

void write_timings(json::Writer& w, std::optional<int64_t> cached, std::optional<int64_t> prompt,
                   std::optional<int64_t> predicted, const canonical::Timing& t) {
    // llama.cpp splits the prompt into reused (cache_n) and processed (prompt_n) tokens.
    const int64_t prompt_n = prompt ? *prompt - std::min(*prompt, cached.value_or(0)) : 0;
    const int64_t predicted_n = predicted.value_or(0);
    const double prompt_ms = static_cast<double>(t.prompt_eval_ns.value_or(0)) / 1e6;
    const double predicted_ms =
        static_cast<double>(t.eval_ns ? *t.eval_ns
                                      : (t.prompt_eval_ns ? 0 : t.total_ns.value_or(0))) /
        1e6;
    // One phase: its count, its time, and the rates llama-server derives from them.
    auto phase = [&w](std::string_view name, int64_t n, double ms) {
        const std::string prefix(name);
        key(w, prefix + "_n");
        w.Int64(n);
        key(w, prefix + "_ms");
        w.Double(ms);
        key(w, prefix + "_per_token_ms");
        w.Double(n > 0 ? ms / static_cast<double>(n) : 0.0);
        key(w, prefix + "_per_second");
        w.Double(ms > 0 ? 1e3 / ms * static_cast<double>(n) : 0.0);
    };
    key(w, "timings");
    w.StartObject();
    if (cached) {
        key(w, "cache_n");
        w.Int64(*cached);
    }
    phase("prompt", prompt_n, prompt_ms);
    phase("predicted", predicted_n, predicted_ms);
    w.EndObject();
}

StopInfo stop_info(const canonical::FinishReason& finish) {
    switch (finish.kind) {
        case FinishKind::stop:
            if (finish.matched_text && !finish.matched_text->empty()) {
                return {"word", *finish.matched_text};
            }
            return {"eos", ""};
        case FinishKind::length:
            return {"limit", ""};
        // The model ended on its own: the nearest llama.cpp reason is EOS.
        case FinishKind::tool_calls:
        case FinishKind::content_filter:
            return {"eos", ""};
        case FinishKind::abort:
        case FinishKind::none:
            break;
    }
    return {"none", ""};
}

std::optional<std::string> read_finish(const json::Value& obj, std::optional<int64_t> n_predict,
                                       canonical::FinishReason& out) {
    std::string_view type;
    if (const json::Value* t = json::find(obj, "stop_type"); t != nullptr && !t->IsNull()) {
        if (!t->IsString()) {
            return "'stop_type' is " + std::string(json::type_name(*t)) + ", not a string";
        }
        type = json::view(*t);
    } else {
        // Builds before late 2024 reported three booleans instead.
        for (const auto& [flag, name] :
             {std::pair{"stopped_eos", "eos"}, std::pair{"stopped_word", "word"},
              std::pair{"stopped_limit", "limit"}}) {
            const json::Value* v = json::find(obj, flag);
            if (v != nullptr && v->IsBool() && v->GetBool()) {
                type = name;
            }
        }
    }
    std::string word;
    if (const json::Value* sw = json::find(obj, "stopping_word"); sw != nullptr && !sw->IsNull()) {
        if (!sw->IsString()) {
            return "'stopping_word' is " + std::string(json::type_name(*sw)) + ", not a string";
        }
        word = std::string(json::view(*sw));
    }
    std::optional<int64_t> predicted;
    if (auto e = read_int(obj, "tokens_predicted", predicted)) {
        return e;
    }
    out = {};
    if (type == "eos") {
        out.kind = FinishKind::stop;
    } else if (type == "word") {
        out.kind = FinishKind::stop;
        out.matched_text = std::move(word);
    } else if (type == "limit") {
        out.kind = FinishKind::length;
        out.length = n_predict;
    } else if (type.empty() || type == "none") {
        // No reason given: the budget decides (api-dialects §10.3).
        const bool at_budget = n_predict && predicted && *predicted >= *n_predict;
        out.kind = at_budget ? FinishKind::length : FinishKind::stop;
        if (at_budget) {
            out.length = n_predict;
        }
    } else {
        return "unknown stop_type '" + std::string(type) + "'";
    }
    return std::nullopt;
}

std::optional<std::string> read_counts(const json::Value& obj, canonical::Usage& usage) {
    if (auto e = read_int(obj, "tokens_predicted", usage.completion_tokens)) {
        return e;
    }
    if (auto e = read_int(obj, "tokens_evaluated", usage.prompt_tokens)) {
        return e;
    }
    if (const json::Value* t = json::find(obj, "timings"); t != nullptr && t->IsObject()) {
        if (auto e = read_int(*t, "cache_n", usage.cached_tokens)) {
            return "timings." + *e;
        }
        std::optional<int64_t> prompt_n;
        if (auto e = read_int(*t, "prompt_n", prompt_n)) {
            return "timings." + *e;
        }
        // Builds without cache_n: the prompt tokens the slot did not have to evaluate.
        if (!usage.cached_tokens && prompt_n && *prompt_n >= 0 && usage.prompt_tokens &&
            *prompt_n <= *usage.prompt_tokens) {
            usage.cached_tokens = *usage.prompt_tokens - *prompt_n;
        }
    }
    return std::nullopt;
}

std::optional<std::string> read_tokens(const json::Value& obj, std::vector<int64_t>& ids) {
    const json::Value* t = json::find(obj, "tokens");
    if (t == nullptr || t->IsNull()) {
        return std::nullopt;
    }
    if (!t->IsArray()) {
        return "'tokens' is " + std::string(json::type_name(*t)) + ", not a list";
    }
    ids.reserve(t->Size());
    for (const json::Value& id : t->GetArray()) {
        if (!id.IsInt64()) {
            return "'tokens' holds " + std::string(json::type_name(id)) + ", not a token id";
        }
        ids.push_back(id.GetInt64());
    }
    return std::nullopt;
}

void write_tokens(json::Writer& w, const std::vector<int64_t>& ids) {
    key(w, "tokens");
    w.StartArray();
    for (const int64_t id : ids) {
        w.Int64(id);
    }
    w.EndArray();
}

void carry(const json::Value& obj, canonical::Carried& out) {
    out.from = Dialect::llamacpp;
    json::collect_unknown(obj,
                          {"index", "content", "tokens", "stop", "model", "tokens_predicted",
                           "tokens_evaluated", "stop_type", "stopping_word", "stopped_eos",
                           "stopped_word", "stopped_limit", "completion_probabilities"},
                          out.members);
}

std::optional<std::string> read_probs(const json::Value& obj,
                                      std::vector<canonical::TokenLogprob>& out) {
    const json::Value* p = json::find(obj, "completion_probabilities");
    if (p == nullptr || p->IsNull()) {
        return std::nullopt;
    }
    return json::read_token_entries(*p, "completion_probabilities", out);
}

void write_probs(json::Writer& w, const std::vector<canonical::TokenLogprob>& entries,
                 bool post_sampling_probs, size_t top) {
    key(w, "completion_probabilities");
    json::write_token_entries(w, entries, {.id = true, .probs = post_sampling_probs}, top);
}

const canonical::Carried* own(const canonical::Carried& carried) {
    return carried.from == Dialect::llamacpp && !carried.empty() ? &carried : nullptr;
}

void error_object(json::Writer& w, const canonical::Error& error) {
    w.StartObject();
    wire::key(w, "code");
    w.Int(error.status);
    wire::key(w, "message");
    wire::string(w, error.message);
    wire::key(w, "type");
    wire::string(w, error_type(error));
    w.EndObject();
}

std::optional<int64_t> budget(const GenerationRequest& req) {
    if (req.sampling.max_tokens) {
        return req.sampling.max_tokens;
    }
    return canonical::default_max_tokens(req.dialect);
}

canonical::Error upstream_error(std::string message) {
    Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = "malformed response from the llama.cpp backend: " + std::move(message);
    return e;
}

}  // namespace wire

}  // namespace infergate::translators::llamacpp
