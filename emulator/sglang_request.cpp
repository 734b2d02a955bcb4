#include "emulator/sglang_request.hpp"

#include <algorithm>
#include <type_traits>

#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

bool is_one_of(std::string_view key, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), key) != names.end();
}

// SamplingParams(**params) followed by verify(): unknown or mistyped keys are TypeErrors.
Failure parse_sampling(const Value* sp, ItemParams& out, std::string& message) {
    if (sp == nullptr) {
        return Failure::kNone;
    }
    if (!sp->IsObject()) {
        return Failure::kTypeError;
    }
    double temperature = 1.0, top_p = 1.0, min_p = 0.0, freq = 0.0, pres = 0.0, rep = 1.0;
    std::int64_t top_k = -1, min_new = 0;
    std::optional<std::int64_t> max_new;
    const Value* raw[6] = {};  // the JSON values, for Python-like formatting in messages
    for (const auto& m : sp->GetObject()) {
        const std::string_view key(m.name.GetString(), m.name.GetStringLength());
        const Value& v = m.value;
        const bool null = v.IsNull();
        if (is_one_of(key, {"temperature", "top_p", "min_p", "frequency_penalty",
                            "presence_penalty", "repetition_penalty"})) {
            if (null) {
                continue;
            }
            if (!v.IsNumber()) {
                return Failure::kTypeError;
            }
            static constexpr std::string_view kNames[] = {
                "temperature",       "top_p", "min_p", "frequency_penalty", "presence_penalty",
                "repetition_penalty"};
            double* targets[] = {&temperature, &top_p, &min_p, &freq, &pres, &rep};
            const auto i = static_cast<std::size_t>(
                std::find(std::begin(kNames), std::end(kNames), key) - std::begin(kNames));
            *targets[i] = v.GetDouble();
            raw[i] = &v;
        } else if (is_one_of(key,
                             {"max_new_tokens", "top_k", "min_new_tokens", "n", "sampling_seed"})) {
            if (null) {
                continue;
            }
            if (!v.IsInt64()) {
                return Failure::kTypeError;
            }
            const std::int64_t x = v.GetInt64();
            if (key == "max_new_tokens") {
                max_new = x;
            } else if (key == "top_k") {
                top_k = x;
            } else if (key == "min_new_tokens") {
                min_new = x;
            } else if (key == "n") {
                out.n = static_cast<int>(std::clamp<std::int64_t>(x, 0, 1024));
            } else {
                out.stop.seed = x;
            }
        } else if (key == "stop") {
            if (v.IsString()) {
                out.stop.strings.emplace_back(v.GetString(), v.GetStringLength());
            } else if (v.IsArray()) {
                for (const Value& s : v.GetArray()) {
                    if (!s.IsString()) {
                        return Failure::kTypeError;
                    }
                    out.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
                }
            } else if (!null) {
                return Failure::kTypeError;
            }
        } else if (key == "stop_token_ids") {
            if (v.IsArray()) {
                for (const Value& id : v.GetArray()) {
                    if (!id.IsInt64()) {
                        return Failure::kTypeError;
                    }
                    out.stop.token_ids.push_back(id.GetInt64());
                }
            } else if (!null) {
                return Failure::kTypeError;
            }
        } else if (key == "ignore_eos" || key == "no_stop_trim") {
            if (!null && !v.IsBool()) {
                return Failure::kTypeError;
            }
            (key == "ignore_eos" ? out.stop.ignore_eos : out.stop.keep_stop_string) =
                !null && v.GetBool();
        } else if (!is_one_of(key, {"stop_regex", "json_schema", "regex", "ebnf", "structural_tag",
                                    "skip_special_tokens", "spaces_between_special_tokens",
                                    "custom_params", "stream_interval", "logit_bias"})) {
            return Failure::kTypeError;  // __init__() got an unexpected keyword argument
        }
    }
    auto fail = [&](std::string text) {
        message = std::move(text);
        return Failure::kValueError;
    };
    auto shown = [&](int i, double value) { return raw[i] ? py_number(*raw[i]) : py_float(value); };
    if (temperature < 0.0) {
        return fail("temperature must be non-negative, got " + shown(0, temperature) + ".");
    }
    if (!(top_p > 0.0 && top_p <= 1.0)) {
        return fail("top_p must be in (0, 1], got " + shown(1, top_p) + ".");
    }
    if (!(min_p >= 0.0 && min_p <= 1.0)) {
        return fail("min_p must be in [0, 1], got " + shown(2, min_p) + ".");
    }
    if (top_k < -1 || top_k == 0) {
        return fail("top_k must be -1 (disable), or at least 1, got " + std::to_string(top_k) +
                    ".");
    }
    if (!(freq >= -2.0 && freq <= 2.0)) {
        return fail("frequency_penalty must be in [-2, 2], got " + shown(3, freq) + ".");
    }
    if (!(pres >= -2.0 && pres <= 2.0)) {
        return fail("presence_penalty must be in [-2, 2], got " + shown(4, pres) + ".");
    }
    if (!(rep >= 0.0 && rep <= 2.0)) {
        return fail("repetition_penalty must be in [0, 2], got " + shown(5, rep) + ".");
    }
    if (min_new < 0) {
        return fail("min_new_tokens must be in [0, max_new_tokens], got " +
                    std::to_string(min_new) + ".");
    }
    if (max_new) {
        if (*max_new < 0) {
            return fail("max_new_tokens must be at least 0, got " + std::to_string(*max_new) + ".");
        }
        out.max_new_tokens = static_cast<int>(std::min<std::int64_t>(*max_new, 1 << 30));
    }
    // verify()'s last check (one grammar only), then the scheduler's compile of it.
    FormatAsk format = read_sglang_format(sp);
    if (format.error) {
        if (format.error->kind == FormatError::Kind::kShape) {
            return Failure::kTypeError;
        }
        return fail(std::move(format.error->message));
    }
    out.format = std::move(format.text);
    return Failure::kNone;
}

// GenerateReqInput's logprob fields: a scalar for every item, or a list with one per item (not
// with n > 1). Returns false on a value of the wrong type.
template <typename T>
bool logprob_field(const Value& doc, std::string_view name, std::size_t i, T& out) {
    const Value* v = member(doc, name);
    if (v != nullptr && v->IsArray()) {
        v = i < v->Size() ? &(*v)[static_cast<rapidjson::SizeType>(i)] : nullptr;
    }
    if (v == nullptr || v->IsNull()) {
        return true;
    }
    if constexpr (std::is_same_v<T, bool>) {
        if (!v->IsBool()) {
            return false;
        }
        out = v->GetBool();
    } else {
        if (!v->IsInt64()) {
            return false;
        }
        out = static_cast<int>(std::clamp<std::int64_t>(v->GetInt64(), -(1 << 30), 1 << 30));
    }
    return true;
}

Failure parse_logprob_fields(const Value& doc, std::size_t i, ItemParams& p, std::string& message) {
    const std::pair<std::string_view, bool> fields[] = {
        {"return_logprob", logprob_field(doc, "return_logprob", i, p.return_logprob)},
        {"logprob_start_len", logprob_field(doc, "logprob_start_len", i, p.logprob_start_len)},
        {"top_logprobs_num", logprob_field(doc, "top_logprobs_num", i, p.top_logprobs_num)},
        {"return_text_in_logprobs",
         logprob_field(doc, "return_text_in_logprobs", i, p.text_in_logprobs)}};
    for (const auto& [name, ok] : fields) {
        if (!ok) {
            message = std::string(name) + ": Input should be a valid " +
                      (name.starts_with("return") ? "boolean" : "integer");
            return Failure::kValidation;
        }
    }
    return Failure::kNone;
}

}  // namespace

// GenerateReqInput.normalize_batch_and_arguments plus the per-item SamplingParams.
Failure parse_generate(const Value& doc, const Options& options, std::vector<Prompt>& prompts,
                       std::vector<ItemParams>& params, bool& batch, std::string& message) {
    const Value* text = member(doc, "text");
    const Value* ids = member(doc, "input_ids");
    const Value* embeds = member(doc, "input_embeds");
    auto value_error = [&](std::string m) {
        message = std::move(m);
        return Failure::kValueError;
    };
    if (text == nullptr && ids == nullptr && embeds == nullptr) {
        return value_error("Either text, input_ids or input_embeds should be provided.");
    }
    if (text != nullptr && ids != nullptr) {
        return value_error("Either text or input_ids should be provided.");
    }
    std::vector<std::int64_t> scratch;
    auto add_ids = [&](const Value& list) {
        scratch.clear();
        for (const Value& id : list.GetArray()) {
            if (!id.IsInt64()) {
                return false;
            }
            scratch.push_back(id.GetInt64());
        }
        prompts.push_back({prompt_from_ids(scratch), {}, &list, {}});
        return true;
    };
    if (text != nullptr) {
        batch = text->IsArray();
        if (text->IsString()) {
            prompts.push_back(
                {prompt_from_text({text->GetString(), text->GetStringLength()}), {}, text, {}});
        } else if (text->IsArray()) {
            for (const Value& t : text->GetArray()) {
                if (!t.IsString()) {
                    return Failure::kTypeError;
                }
                prompts.push_back(
                    {prompt_from_text({t.GetString(), t.GetStringLength()}), {}, &t, {}});
            }
        } else {
            return Failure::kTypeError;
        }
    } else {
        // input_ids: [int] or [[int]]; input_embeds: [[float]] or [[[float]]] (one row a token).
        const Value& list = ids != nullptr ? *ids : *embeds;
        if (!list.IsArray()) {
            return Failure::kTypeError;
        }
        batch = !list.Empty() && list[0].IsArray() &&
                (ids != nullptr || (!list[0].Empty() && list[0][0].IsArray()));
        if (!batch) {
            if (ids != nullptr && !add_ids(list)) {
                return Failure::kTypeError;
            }
            if (embeds != nullptr) {
                prompts.push_back(
                    {{0x3b3d ^ list.Size(), static_cast<int>(list.Size()), {}}, {}, {}, {}});
            }
        } else {
            for (const Value& item : list.GetArray()) {
                if (!item.IsArray() || (ids != nullptr && !add_ids(item))) {
                    return Failure::kTypeError;
                }
                if (embeds != nullptr) {
                    prompts.push_back(
                        {{0x3b3d ^ item.Size(), static_cast<int>(item.Size()), {}}, {}, {}, {}});
                }
            }
        }
    }
    if (prompts.empty()) {
        return value_error("input_ids should not be empty.");
    }
    if (const Value* rid = member(doc, "rid")) {
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            if (rid->IsString()) {
                prompts[i].rid.assign(rid->GetString(), rid->GetStringLength());
            } else if (rid->IsArray() && i < rid->Size() && (*rid)[i].IsString()) {
                prompts[i].rid.assign((*rid)[i].GetString(), (*rid)[i].GetStringLength());
            }
        }
    }
    const Value* sp = member(doc, "sampling_params");
    const bool per_item = sp != nullptr && sp->IsArray();
    if (per_item && sp->Size() != prompts.size()) {
        return value_error("The length of sampling_params should be equal to the batch size.");
    }
    params.resize(prompts.size());
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const Failure f = parse_sampling(per_item ? &(*sp)[i] : sp, params[i], message);
        if (f != Failure::kNone) {
            return f;
        }
        if (params[i].n != params[0].n) {
            return value_error(
                "The parallel_sample_num should be the same for all samples in "
                "sample params.");
        }
        const int limit = options.max_model_len;
        if (prompts[i].key.tokens >= limit) {
            return value_error("The input (" + std::to_string(prompts[i].key.tokens) +
                               " tokens) is longer than the model's context length (" +
                               std::to_string(limit) + " tokens).");
        }
        // The scheduler clips the budget to the context that is left.
        params[i].max_new_tokens =
            std::min(params[i].max_new_tokens, limit - prompts[i].key.tokens - 1);
    }
    if (params[0].n < 1) {
        return value_error("n must be at least 1.");
    }
    batch = batch || params[0].n > 1;
    for (const char* name : {"return_logprob", "logprob_start_len", "top_logprobs_num"}) {
        const Value* v = member(doc, name);
        if (v != nullptr && v->IsArray() && params[0].n > 1) {
            return value_error("Cannot use list " + std::string(name) +
                               " with parallel_sample_num > 1");
        }
    }
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        ItemParams& p = params[i];
        if (const Failure f = parse_logprob_fields(doc, i, p, message); f != Failure::kNone) {
            return f;
        }
        if (!p.return_logprob) {
            continue;
        }
        // The scheduler aborts a start beyond the prompt (a 400).
        if (p.logprob_start_len > prompts[i].key.tokens) {
            return value_error("req.logprob_start_len=" + std::to_string(p.logprob_start_len) +
                               " is higher than the number of input tokens "
                               "len(req.origin_input_ids)=" +
                               std::to_string(prompts[i].key.tokens) +
                               ". Please use a smaller logprob_start_len.");
        }
        const Value* src = prompts[i].source;
        if (p.logprob_start_len >= 0 && src != nullptr) {
            if (src->IsString()) {
                prompts[i].tokens =
                    prompt_tokens_from_text({src->GetString(), src->GetStringLength()});
            } else {
                std::vector<std::int64_t> list;
                for (const Value& id : src->GetArray()) {
                    list.push_back(id.GetInt64());
                }
                prompts[i].tokens = prompt_tokens_from_ids(list);
            }
        }
    }
    std::int64_t total = 0;
    for (const ItemParams& p : params) {
        total += static_cast<std::int64_t>(p.n) * std::max(p.max_new_tokens, 1);
    }
    if (total > kMaxTotalTokens) {
        return value_error("emulator limit: " + std::to_string(total) +
                           " tokens requested over all items, at most " +
                           std::to_string(kMaxTotalTokens) + " allowed.");
    }
    return Failure::kNone;
}

}  // namespace infergate::emulator
