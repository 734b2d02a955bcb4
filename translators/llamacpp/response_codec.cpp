// llama.cpp /completion whole responses (api-dialects §7.4), errors (§7.7), and the wire pieces
// the stream codec shares.

#include <algorithm>
#include <array>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::Choice;
using canonical::FinishKind;
using canonical::FinishReason;
using canonical::Usage;

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
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 501: return "not_supported_error";
        case 503: return "unavailable_error";
        default: break;
    }
    return e.status >= 500 ? "server_error" : "invalid_request_error";
}

// One whole llama.cpp result object for `c`, with the counts `u`. A llama.cpp backend's own
// members (id_slot, generation_settings, truncated, tokens_cached, its timings, ...) are carried
// through; other backends' answers have no such values, and llama.cpp clients need none of them,
// so they are left out rather than made up.
void write_result(json::Writer& w, const Choice& c, const Usage& u, std::string_view model,
                  const canonical::Timing& timing, const GenerationRequest& req) {
    const canonical::Carried* carried = wire::own(c.carried);
    w.StartObject();
    wire::key(w, "index");
    w.Int(c.index);
    wire::key(w, "content");
    wire::string(w, c.text);
    wire::write_tokens(w, c.token_ids);
    wire::key(w, "stop");
    w.Bool(true);
    wire::key(w, "model");
    wire::string(w, model);
    // Counts we do not know are left out rather than guessed.
    if (u.completion_tokens) {
        wire::key(w, "tokens_predicted");
        w.Int64(*u.completion_tokens);
    }
    if (u.prompt_tokens) {
        wire::key(w, "tokens_evaluated");
        w.Int64(*u.prompt_tokens);
    }
    const wire::StopInfo stop = wire::stop_info(c.finish);
    wire::key(w, "stop_type");
    wire::string(w, stop.stop_type);
    wire::key(w, "stopping_word");
    wire::string(w, stop.stopping_word);
    if (carried != nullptr) {
        json::write_carried(w, carried->members);
    }
    if (carried == nullptr || carried->find("timings") == nullptr) {
        wire::write_timings(w, u.cached_tokens, u.prompt_tokens, u.completion_tokens, timing);
    }
    // Last, and only when there are entries (llama-server leaves the key out otherwise).
    if (canonical::wants_logprobs(req) && !c.logprobs.empty()) {
        wire::write_probs(w, c.logprobs, req.post_sampling_probs, canonical::top_count(req));
    }
    w.EndObject();
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

// One result object of a llama.cpp response into `c`.
std::optional<std::string> read_result(const json::Value& obj, const GenerationRequest& req,
                                       Choice& c) {
    if (!obj.IsObject()) {
        return "a result is " + std::string(json::type_name(obj)) + ", not an object";
    }
    if (json::find(obj, "error") != nullptr) {
        return "the backend reported an error: " + json::to_string(*json::find(obj, "error"));
    }
    const json::Value* content = json::find(obj, "content");
    if (content == nullptr || !content->IsString()) {
        return "'content' is missing or not a string";
    }
    c.text = std::string(json::view(*content));
    if (auto e = wire::read_counts(obj, c.usage)) {
        return e;
    }
    if (auto e = wire::read_tokens(obj, c.token_ids)) {
        return e;
    }
    if (auto e = wire::read_probs(obj, c.logprobs)) {
        return e;
    }
    if (req.dialect == Dialect::llamacpp) {
        wire::carry(obj, c.carried);
    }
    return wire::read_finish(obj, wire::budget(req), c.finish);
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
        case FinishKind::length: return {"limit", ""};
        // The model ended on its own: the nearest llama.cpp reason is EOS.
        case FinishKind::tool_calls:
        case FinishKind::content_filter: return {"eos", ""};
        case FinishKind::abort:
        case FinishKind::none: break;
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
        for (const auto& [flag, name] : {std::pair{"stopped_eos", "eos"},
                                         std::pair{"stopped_word", "word"},
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

void LlamacppCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                                    std::string& out) const {
    json::StringOut os{&out};
    json::Writer w(os);
    // Several prompts (or a list) come back as an array; one prompt as one object (§7.4).
    const bool as_list = req.prompt_is_list || result.choices.size() > 1;
    if (as_list) {
        w.StartArray();
    }
    for (const Choice& c : result.choices) {
        // Per-choice counts where the upstream gave them; the aggregate only stands for a
        // lone choice (it cannot be split between several).
        Usage u = c.usage;
        if (result.choices.size() == 1) {
            u.prompt_tokens = u.prompt_tokens ? u.prompt_tokens : result.usage.prompt_tokens;
            u.completion_tokens =
                u.completion_tokens ? u.completion_tokens : result.usage.completion_tokens;
            u.cached_tokens = u.cached_tokens ? u.cached_tokens : result.usage.cached_tokens;
        }
        write_result(w, c, u, result.model, result.timing, req);
        if (!as_list) {
            break;
        }
    }
    if (result.choices.empty()) {
        write_result(w, Choice{}, result.usage, result.model, result.timing, req);
    }
    if (as_list) {
        w.EndArray();
    }
}

void LlamacppCodec::encode_error(const Error& error, std::string& out) const {
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "error");
    wire::error_object(w, error);
    w.EndObject();
}

Result<GenerationResult> LlamacppCodec::decode_response(std::string_view body,
                                                        const GenerationRequest& req) const {
    json::Document doc;
    if (auto e = json::parse(body, doc, "llama.cpp response", canonical::exact_numbers(req))) {
        return wire::upstream_error(e->message);
    }
    GenerationResult result;
    if (const json::Value* m = json::find(doc, "model"); m != nullptr && m->IsString()) {
        result.model = std::string(json::view(*m));
    }
    auto read_one = [&](const json::Value& obj, int position) -> std::optional<std::string> {
        Choice c;
        c.index = position;
        if (const json::Value* i = json::find(obj, "index"); i != nullptr && i->IsInt()) {
            c.index = i->GetInt();
        }
        if (auto e = read_result(obj, req, c)) {
            return e;
        }
        result.choices.push_back(std::move(c));
        return std::nullopt;
    };
    if (doc.IsArray()) {
        if (doc.Empty()) {
            return wire::upstream_error("an empty result list");
        }
        for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
            if (auto e = read_one(doc[i], static_cast<int>(i))) {
                return wire::upstream_error("result " + std::to_string(i) + ": " + *e);
            }
        }
        if (const json::Value* m = json::find(doc[0], "model"); m != nullptr && m->IsString()) {
            result.model = std::string(json::view(*m));
        }
    } else if (doc.IsObject()) {
        if (auto e = read_one(doc, 0)) {
            return wire::upstream_error(*e);
        }
    } else {
        return wire::upstream_error("the body is " + std::string(json::type_name(doc)) +
                                    ", not an object or a list");
    }
    std::sort(result.choices.begin(), result.choices.end(),
              [](const Choice& a, const Choice& b) { return a.index < b.index; });
    for (const Choice& c : result.choices) {
        Usage& t = result.usage;
        for (auto [sum, part] : {std::pair{&t.prompt_tokens, &c.usage.prompt_tokens},
                                 std::pair{&t.completion_tokens, &c.usage.completion_tokens},
                                 std::pair{&t.cached_tokens, &c.usage.cached_tokens}}) {
            if (*part) {
                *sum = sum->value_or(0) + **part;
            }
        }
    }
    return result;
}

}  // namespace infergate::translators::llamacpp
