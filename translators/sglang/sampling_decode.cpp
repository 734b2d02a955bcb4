// SGLang sampling_params from clients: one object or one per prompt, read and validated the way
// SGLang's SamplingParams would (api-dialects §4.4), SGLang-only keys kept as sampling extras.

#include <climits>

#include "translators/codec.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::bad_request;
using canonical::Extra;
using canonical::SamplingParams;
using wire::quoted;
using wire::read_token_ids;

// Keys that other dialects spell differently. SGLang itself answers them with a 500 (its
// SamplingParams(**dict) raises a TypeError that /generate does not catch), so say what to send.
std::string_view hint_for(std::string_view key) {
    if (key == "seed") {
        return "use 'sampling_seed' instead";
    }
    if (key == "max_tokens" || key == "max_completion_tokens") {
        return "use 'max_new_tokens' instead";
    }
    if (key == "min_tokens") {
        return "use 'min_new_tokens' instead";
    }
    if (key == "stop_sequences") {
        return "use 'stop' instead";
    }
    if (key == "logprobs" || key == "top_logprobs") {
        return "request logprobs with the top-level 'return_logprob' and 'top_logprobs_num'";
    }
    if (key == "stream") {
        return "'stream' is a top-level field, not a sampling parameter";
    }
    return {};
}

Error unknown_sampling_key(std::string_view path, std::string_view key) {
    std::string message = "unknown sampling parameter " + quoted(path) +
                          ": SGLang's SamplingParams does not accept it (a real SGLang server "
                          "fails the request with HTTP 500); ";
    const std::string_view hint = hint_for(key);
    if (!hint.empty()) {
        message.append(hint);
    } else {
        message.append(
            "the accepted keys are max_new_tokens, min_new_tokens, temperature, top_p, top_k, "
            "min_p, frequency_penalty, presence_penalty, repetition_penalty, stop, "
            "stop_token_ids, stop_regex, sampling_seed, n, ignore_eos, skip_special_tokens, "
            "no_stop_trim, spaces_between_special_tokens, json_schema, regex, ebnf, "
            "structural_tag, custom_params, stream_interval and logit_bias");
    }
    return bad_request(std::move(message), std::string(path));
}

// Sampling keys the SGLang server reads without changing the text it generates, or at their
// default: another family goes without them.
constexpr canonical::InertRule kInertSampling[] = {
    {"stream_interval", "*"}, {"spaces_between_special_tokens", "true"}, {"stop_regex", "[]"}};

// sampling_params.logit_bias: {"<token id>": bias} (SGLang checks only that the ids are in the
// vocabulary).
std::optional<Error> read_logit_bias(const json::Value& v, const std::string& path,
                                     SamplingParams& sp) {
    if (v.IsNull()) {
        return std::nullopt;
    }
    if (!v.IsObject()) {
        return bad_request(quoted(path) + " must be an object that maps token ids to biases, got " +
                               std::string(json::type_name(v)),
                           path);
    }
    std::vector<std::pair<std::string, double>> members;
    for (const auto& m : v.GetObject()) {
        if (!m.value.IsNumber()) {
            return bad_request(
                quoted(path) + " values must be numbers, got " + json::to_string(m.value), path);
        }
        members.emplace_back(std::string(json::view(m.name)), m.value.GetDouble());
    }
    if (auto bad = canonical::logit_bias_from_object(members, sp.logit_bias)) {
        return bad_request(
            quoted(path) + " keys must be token ids (decimal integers), got \"" + *bad + "\"",
            path);
    }
    return std::nullopt;
}

Error range_error(std::string_view path, std::string_view range, const json::Value& got) {
    return bad_request(
        quoted(path) + " must be " + std::string(range) + ", got " + json::to_string(got),
        std::string(path));
}

// A number in (0, max]: json::get_number only knows closed ranges.
std::optional<double> get_positive(const json::Value& obj, std::string_view key,
                                   std::string_view path, double max, std::string_view range,
                                   std::optional<Error>& err) {
    std::optional<double> v = json::get_number(obj, key, path, err, 0.0, max);
    const json::Value* raw = json::find(obj, key);
    if ((err && raw->IsNumber()) || (v && *v <= 0.0)) {
        // The closed-range message from get_number would wrongly suggest 0 is allowed.
        err = range_error(path, range, *raw);
        return std::nullopt;
    }
    return v;
}

std::optional<Error> read_stop(const json::Value& v, std::string_view path,
                               std::vector<std::string>& out) {
    if (v.IsNull()) {
        return std::nullopt;
    }
    if (v.IsString()) {
        out.emplace_back(json::view(v));
        return std::nullopt;
    }
    if (!v.IsArray()) {
        return bad_request(quoted(path) + " must be a string or a list of strings, got " +
                               std::string(json::type_name(v)),
                           std::string(path));
    }
    out.reserve(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (!v[i].IsString()) {
            const std::string at = std::string(path) + "[" + std::to_string(i) + "]";
            return bad_request(
                quoted(at) + " must be a string, got " + std::string(json::type_name(v[i])), at);
        }
        out.emplace_back(json::view(v[i]));
    }
    return std::nullopt;
}

// Reads one sampling_params object with SGLang's own validation ranges (sampling_params.py).
// `prefix` is the object's JSON path, for messages.
std::optional<Error> read_sampling(const json::Value& obj, std::string_view prefix,
                                   SamplingParams& sp, std::vector<Extra>& extras) {
    std::optional<Error> err;
    std::string path;
    for (const auto& m : obj.GetObject()) {
        const std::string_view key = json::view(m.name);
        const json::Value& v = m.value;
        path.assign(prefix).append(".").append(key);
        if (key == "max_new_tokens") {
            sp.max_tokens = json::get_int(obj, key, path, err, 0);
        } else if (key == "min_new_tokens") {
            sp.min_tokens = json::get_int(obj, key, path, err, 0);
        } else if (key == "temperature") {
            sp.temperature = json::get_number(obj, key, path, err, 0.0);
        } else if (key == "top_p") {
            sp.top_p = get_positive(obj, key, path, 1.0, "in (0, 1]", err);
        } else if (key == "top_k") {
            sp.top_k = json::get_int(obj, key, path, err);
            if (sp.top_k && *sp.top_k != -1 && *sp.top_k < 1) {
                err = range_error(path, "-1 (the whole vocabulary) or >= 1", v);
            }
        } else if (key == "min_p") {
            sp.min_p = json::get_number(obj, key, path, err, 0.0, 1.0);
        } else if (key == "frequency_penalty") {
            sp.frequency_penalty = json::get_number(obj, key, path, err, -2.0, 2.0);
        } else if (key == "presence_penalty") {
            sp.presence_penalty = json::get_number(obj, key, path, err, -2.0, 2.0);
        } else if (key == "repetition_penalty") {
            sp.repetition_penalty = get_positive(obj, key, path, 2.0, "in (0, 2]", err);
        } else if (key == "n") {
            sp.n = static_cast<int>(json::get_int(obj, key, path, err, 1, INT_MAX).value_or(1));
        } else if (key == "sampling_seed") {
            sp.seed = json::get_int(obj, key, path, err);
        } else if (key == "ignore_eos") {
            sp.ignore_eos = json::get_bool(obj, key, path, err);
        } else if (key == "skip_special_tokens") {
            sp.skip_special_tokens = json::get_bool(obj, key, path, err);
        } else if (key == "no_stop_trim") {
            sp.keep_stop_str = json::get_bool(obj, key, path, err);
        } else if (key == "stop") {
            err = read_stop(v, path, sp.stop);
        } else if (key == "stop_token_ids") {
            if (!v.IsNull() && !v.IsArray()) {
                err = bad_request(quoted(path) + " must be a list of token ids, got " +
                                      std::string(json::type_name(v)),
                                  path);
            } else if (v.IsArray()) {
                err = read_token_ids(v, path, sp.stop_token_ids);
            }
        } else if (key == "logit_bias") {
            err = read_logit_bias(v, path, sp);
        } else if (wire::is_passthrough_sampling_key(key)) {
            if (!v.IsNull()) {  // null means SGLang's default: nothing to forward
                std::string value = json::to_string(v);
                const bool inert = canonical::is_inert(key, value, kInertSampling);
                extras.push_back(Extra{std::string(key), std::move(value), inert});
            }
        } else {
            return unknown_sampling_key(path, key);
        }
        if (err) {
            return err;
        }
    }
    if (sp.min_tokens && sp.max_tokens && *sp.min_tokens > *sp.max_tokens) {
        path.assign(prefix).append(".min_new_tokens");
        return bad_request(quoted(path) + " (" + std::to_string(*sp.min_tokens) +
                               ") must not exceed max_new_tokens (" +
                               std::to_string(*sp.max_tokens) + ")",
                           path);
    }
    return std::nullopt;
}

bool same_extras(const std::vector<Extra>& a, const std::vector<Extra>& b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (const Extra& x : a) {
        bool found = false;
        for (const Extra& y : b) {
            if (x.key == y.key) {
                found = x.json == y.json;
                break;
            }
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

}  // namespace

namespace wire {

using canonical::bad_request;
using canonical::Extra;
using canonical::SamplingParams;

std::optional<Error> read_token_ids(const json::Value& list, std::string_view path,
                                    std::vector<int64_t>& out) {
    out.reserve(list.Size());
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
        const json::Value& id = list[i];
        if (!id.IsInt64() || id.GetInt64() < 0) {
            const std::string at = std::string(path) + "[" + std::to_string(i) + "]";
            return bad_request(
                quoted(at) + " must be a token id (an integer >= 0), got " +
                    (id.IsNumber() ? json::to_string(id) : std::string(json::type_name(id))),
                at);
        }
        out.push_back(id.GetInt64());
    }
    return std::nullopt;
}

std::optional<Error> read_sampling_params(const json::Value& v, GenerationRequest& req) {
    if (v.IsNull()) {
        return std::nullopt;
    }
    if (v.IsObject()) {
        return read_sampling(v, "sampling_params", req.sampling, req.sampling_extras);
    }
    if (!v.IsArray()) {
        return bad_request(
            "'sampling_params' must be an object or a list of objects (one per "
            "prompt), got " +
                std::string(json::type_name(v)),
            "sampling_params");
    }
    const size_t batch = req.prompts.size();
    if (v.Size() != batch) {
        return bad_request("'sampling_params' has " + std::to_string(v.Size()) +
                               " objects but the request has " + std::to_string(batch) +
                               (batch == 1 ? " prompt" : " prompts") +
                               "; send one object per prompt, or a single object for all",
                           "sampling_params");
    }
    std::vector<SamplingParams> items(batch);
    std::vector<std::vector<Extra>> item_extras(batch);
    bool all_equal = true;
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        const std::string at = "sampling_params[" + std::to_string(i) + "]";
        if (!v[i].IsObject()) {
            return bad_request(
                quoted(at) + " must be an object, got " + std::string(json::type_name(v[i])), at);
        }
        if (auto err = read_sampling(v[i], at, items[i], item_extras[i])) {
            return err;
        }
        if (i == 0) {
            continue;
        }
        if (items[i].n != items[0].n) {
            return bad_request(quoted(at + ".n") +
                                   " differs from sampling_params[0].n: SGLang requires every "
                                   "item of a batch to use the same n",
                               at + ".n");
        }
        if (!same_extras(item_extras[i], item_extras[0])) {
            // The canonical model keeps one set of SGLang-only sampling keys per request; dropping
            // the others silently would change what the backend generates.
            return bad_request(quoted(at) +
                                   ": per-prompt values of SGLang-only sampling keys (json_schema, "
                                   "regex, stop_regex, ...) must be the same for every prompt; "
                                   "send separate requests instead",
                               at);
        }
        all_equal = all_equal && items[i] == items[0];
    }
    req.sampling = items[0];
    req.sampling_extras = std::move(item_extras[0]);
    if (!all_equal) {
        req.item_sampling = std::move(items);
    }
    return std::nullopt;
}

}  // namespace wire

}  // namespace infergate::translators::sglang
