// llama.cpp /completion requests (api-dialects §7.3): decoding a client's body into the
// canonical request.

#include <algorithm>
#include <array>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/llamacpp/codec.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::Prompt;
using OptErr = std::optional<Error>;

// Keys this decoder reads; everything else is kept in `extras` for a llama.cpp backend.
// clang-format off
constexpr std::array<std::string_view, 21> kKnownKeys = {
    "prompt",           "n_predict",         "max_tokens",   "temperature", "top_k",
    "top_p",            "min_p",             "stop",         "seed",        "repeat_penalty",
    "presence_penalty", "frequency_penalty", "n_probs",      "logprobs",    "stream",
    "ignore_eos",       "model",             "n_cmpl",       "n",           "typical_p",
    "repeat_last_n"};
// clang-format on

bool is_known(std::string_view k) {
    return std::find(kKnownKeys.begin(), kKnownKeys.end(), k) != kKnownKeys.end();
}

// The other settings llama-server reads (server.cpp params_from_json); it ignores every key not
// listed, so those are inert. Of these, the ones that do not change the text (prompt caching,
// slot choice, speculative decoding, what a context shift keeps) or only matter beside another
// one (mirostat_tau without mirostat) are inert too, and so is each at the value meaning "off".
// clang-format off
constexpr std::string_view kOwnKeys[] = {
    "n_indent", "n_keep", "n_discard", "t_max_predict_ms", "response_fields", "xtc_probability",
    "xtc_threshold", "dynatemp_range", "dynatemp_exponent", "dry_multiplier", "dry_base",
    "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "mirostat",
    "mirostat_tau", "mirostat_eta", "min_keep", "post_sampling_probs", "lora", "json_schema",
    "grammar", "grammar_lazy", "grammar_triggers", "preserved_tokens", "chat_format",
    "samplers", "logit_bias", "timings_per_token", "return_tokens", "cache_prompt", "id_slot",
    "speculative.n_min", "speculative.n_max", "speculative.p_min", "image_data",
    "multimodal_data"};
constexpr canonical::InertRule kInert[] = {
    {"n_keep", "*"}, {"n_discard", "*"}, {"cache_prompt", "*"}, {"id_slot", "*"},
    {"speculative.n_min", "*"}, {"speculative.n_max", "*"}, {"speculative.p_min", "*"},
    {"xtc_threshold", "*"}, {"dynatemp_exponent", "*"}, {"dry_base", "*"},
    {"dry_allowed_length", "*"}, {"dry_penalty_last_n", "*"}, {"dry_sequence_breakers", "*"},
    {"mirostat_tau", "*"}, {"mirostat_eta", "*"}, {"n_indent", "0"},
    {"t_max_predict_ms", "0|-1"}, {"response_fields", "[]"}, {"xtc_probability", "0|0.0"},
    {"dynatemp_range", "0|0.0"}, {"dry_multiplier", "0|0.0"}, {"mirostat", "0"},
    {"min_keep", "0"}, {"post_sampling_probs", "false"},
    {"grammar", "\"\""}, {"grammar_lazy", "false"}, {"grammar_triggers", "[]"},
    {"preserved_tokens", "[]"}, {"logit_bias", "[]|{}"}, {"timings_per_token", "false"},
    {"return_tokens", "false"}, {"image_data", "[]"}, {"multimodal_data", "[]"}};
// clang-format on

bool is_inert_extra(std::string_view key, std::string_view json) {
    if (std::find(std::begin(kOwnKeys), std::end(kOwnKeys), key) == std::end(kOwnKeys)) {
        return true;
    }
    return canonical::is_inert(key, json, kInert);
}

// logit_bias in llama.cpp's forms: [[id, bias], ...] (bias a number, or false to ban the token)
// or, in later releases, {"<id>": bias}. True when every entry names a token by its id and has
// a number: that much is canonical; token text (["Hello", -1]) or a ban (false) stays llama.cpp's
// own, passed on as it is to a llama.cpp backend only.
bool read_logit_bias(const json::Value& v, canonical::SamplingParams& s) {
    std::vector<canonical::LogitBias> biases;
    if (v.IsArray()) {
        for (const json::Value& e : v.GetArray()) {
            if (!e.IsArray() || e.Size() != 2 || !e[0].IsInt64() || e[0].GetInt64() < 0 ||
                !e[1].IsNumber()) {
                return false;
            }
            // llama.cpp applies every pair; two for one token add up.
            bool merged = false;
            for (canonical::LogitBias& b : biases) {
                if (b.token == e[0].GetInt64()) {
                    b.bias += e[1].GetDouble();
                    merged = true;
                }
            }
            if (!merged) {
                biases.push_back({e[0].GetInt64(), e[1].GetDouble()});
            }
        }
    } else if (v.IsObject()) {
        std::vector<std::pair<std::string, double>> members;
        for (const auto& m : v.GetObject()) {
            if (!m.value.IsNumber()) {
                return false;
            }
            members.emplace_back(std::string(json::view(m.name)), m.value.GetDouble());
        }
        if (canonical::logit_bias_from_object(members, biases)) {
            return false;
        }
    } else {
        return false;
    }
    s.logit_bias = std::move(biases);
    return true;
}

// A token array: every element an integer. Mixed arrays ([12, "text", 56]) are one prompt in
// llama.cpp but cannot be expressed canonically (a prompt is text or ids, never both).
OptErr read_one_prompt(const json::Value& v, const std::string& path, Prompt& out) {
    if (v.IsString()) {
        out.text.assign(v.GetString(), v.GetStringLength());
        return std::nullopt;
    }
    if (v.IsArray()) {
        out.is_tokens = true;
        for (const json::Value& t : v.GetArray()) {
            if (!t.IsInt64()) {
                return canonical::bad_request(
                    "'" + path + "' mixes token ids with " + std::string(json::type_name(t)) +
                        "; infergate accepts a prompt of text or of token ids, not both",
                    path);
            }
            out.token_ids.push_back(t.GetInt64());
        }
        return std::nullopt;
    }
    if (v.IsObject()) {
        return canonical::bad_request("'" + path +
                                          "' is a multimodal prompt object, which infergate "
                                          "does not support; send a string or token ids",
                                      path);
    }
    return canonical::bad_request("'" + path + "' must be a string or an array of token ids, got " +
                                      std::string(json::type_name(v)),
                                  path);
}

bool all_numbers_or_strings_mixed(const json::Value& arr) {
    bool num = false;
    bool str = false;
    for (const json::Value& e : arr.GetArray()) {
        num = num || e.IsNumber();
        str = str || e.IsString();
    }
    return num && str;
}

// llama.cpp's reading of `prompt`: a string, a token array, a mixed array (one prompt each), or
// a list of any of those (a batch).
OptErr read_prompt(const json::Value& doc, GenerationRequest& req) {
    const json::Value* p = json::find(doc, "prompt");
    if (p == nullptr || p->IsNull()) {
        return canonical::bad_request("'prompt' is required", "prompt");
    }
    if (!p->IsArray() || p->Empty() ||
        std::all_of(p->Begin(), p->End(), [](const json::Value& e) { return e.IsNumber(); }) ||
        all_numbers_or_strings_mixed(*p)) {
        if (p->IsArray() && p->Empty()) {
            return canonical::bad_request("'prompt' must not be an empty list", "prompt");
        }
        Prompt one;
        if (OptErr e = read_one_prompt(*p, "prompt", one)) {
            return e;
        }
        req.prompts.push_back(std::move(one));
        return std::nullopt;
    }
    req.prompt_is_list = true;
    for (rapidjson::SizeType i = 0; i < p->Size(); ++i) {
        Prompt one;
        if (OptErr e = read_one_prompt((*p)[i], "prompt[" + std::to_string(i) + "]", one)) {
            return e;
        }
        req.prompts.push_back(std::move(one));
    }
    return std::nullopt;
}

// `stop` is a list on the native route. The real server silently ignores a plain string; we
// accept it as a list of one instead, because a client that sends one clearly means it.
// Empty strings are dropped as llama.cpp does.
OptErr read_stop(const json::Value& doc, canonical::SamplingParams& s) {
    const json::Value* v = json::find(doc, "stop");
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (v->IsString()) {
        if (v->GetStringLength() > 0) {
            s.stop.emplace_back(v->GetString(), v->GetStringLength());
        }
        return std::nullopt;
    }
    if (!v->IsArray()) {
        return canonical::bad_request(
            "'stop' must be an array of strings, got " + std::string(json::type_name(*v)), "stop");
    }
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
        const json::Value& e = (*v)[i];
        if (!e.IsString()) {
            const std::string path = "stop[" + std::to_string(i) + "]";
            return canonical::bad_request(
                "'" + path + "' must be a string, got " + std::string(json::type_name(e)), path);
        }
        if (e.GetStringLength() > 0) {
            s.stop.emplace_back(e.GetString(), e.GetStringLength());
        }
    }
    return std::nullopt;
}

OptErr read_sampling(const json::Value& doc, GenerationRequest& req) {
    OptErr err;
    canonical::SamplingParams& s = req.sampling;
    // n_predict wins over its alias max_tokens; -1 (the default) means "until EOS or context".
    std::optional<int64_t> n_predict = json::get_int(doc, "n_predict", "n_predict", err, -1);
    if (!err && !n_predict) {
        n_predict = json::get_int(doc, "max_tokens", "max_tokens", err, -1);
    }
    if (n_predict && *n_predict >= 0) {
        s.max_tokens = n_predict;
    }
    s.temperature = json::get_number(doc, "temperature", "temperature", err);
    s.top_k = json::get_int(doc, "top_k", "top_k", err);
    s.top_p = json::get_number(doc, "top_p", "top_p", err, 0.0, 1.0);
    s.min_p = json::get_number(doc, "min_p", "min_p", err, 0.0, 1.0);
    const std::optional<int64_t> seed = json::get_int(doc, "seed", "seed", err);
    if (seed && *seed != -1) {  // -1 is llama.cpp's "random"
        s.seed = seed;
    }
    s.repetition_penalty = json::get_number(doc, "repeat_penalty", "repeat_penalty", err);
    s.typical_p = json::get_number(doc, "typical_p", "typical_p", err);
    s.repeat_last_n = json::get_int(doc, "repeat_last_n", "repeat_last_n", err, -1);
    s.presence_penalty = json::get_number(doc, "presence_penalty", "presence_penalty", err);
    s.frequency_penalty = json::get_number(doc, "frequency_penalty", "frequency_penalty", err);
    s.ignore_eos = json::get_bool(doc, "ignore_eos", "ignore_eos", err);
    std::optional<int64_t> n_probs = json::get_int(doc, "n_probs", "n_probs", err, 0);
    if (!err && !n_probs) {
        n_probs = json::get_int(doc, "logprobs", "logprobs", err, 0);
    }
    if (n_probs && *n_probs > 0) {
        // llama.cpp reports the chosen token and the n_probs most likely ones at each step.
        req.return_logprob = true;
        req.top_logprobs = n_probs;
    }
    // Probabilities after the sampler chain instead of logprobs: a llama.cpp backend is sent
    // the key itself (an extra), any other refuses it (it is not inert unless false).
    req.post_sampling_probs =
        json::get_bool(doc, "post_sampling_probs", "post_sampling_probs", err).value_or(false);
    std::optional<int64_t> n = json::get_int(doc, "n_cmpl", "n_cmpl", err, 1, 1024);
    if (!err && !n) {
        n = json::get_int(doc, "n", "n", err, 1, 1024);
    }
    if (n) {
        s.n = static_cast<int>(*n);
    }
    if (err) {
        return err;
    }
    return read_stop(doc, s);
}

}  // namespace

const Codec& codec() {
    static const LlamacppCodec instance;
    return instance;
}

Result<GenerationRequest> LlamacppCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse_request_object(body, doc)) {
        return std::move(*err);
    }
    GenerationRequest req;
    req.dialect = Dialect::llamacpp;
    req.kind = canonical::RequestKind::completion;
    if (OptErr e = read_prompt(doc, req)) {
        return *e;
    }
    if (OptErr e = read_sampling(doc, req)) {
        return *e;
    }
    OptErr err;
    req.stream = json::get_bool(doc, "stream", "stream", err).value_or(false);
    req.model = json::get_string(doc, "model", "model", err).value_or("");
    if (err) {
        return *err;
    }
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view k(it->name.GetString(), it->name.GetStringLength());
        if (k == "logit_bias" && read_logit_bias(it->value, req.sampling)) {
            continue;
        }
        if (!is_known(k)) {
            std::string value = json::to_string(it->value);
            const bool inert = is_inert_extra(k, value);
            req.extras.push_back({std::string(k), std::move(value), inert});
        }
    }
    return req;
}

}  // namespace infergate::translators::llamacpp
