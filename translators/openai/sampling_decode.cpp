// Client side: an OpenAI client's sampling settings and stream options to the canonical
// request, with 400s that name the field and say what to send.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "translators/openai/request_codec.hpp"

namespace infergate::translators::openai {

using canonical::bad_request;
using canonical::Prompt;
using canonical::SamplingParams;

namespace {

// Typed reads of one object's fields that keep the first error (json::get_* overwrite it).
class FieldReader {
public:
    explicit FieldReader(const json::Value& obj) : obj_(obj) {}

    std::optional<bool> boolean(std::string_view key, std::string_view path) {
        return err_ ? std::nullopt : json::get_bool(obj_, key, path, err_);
    }
    std::optional<int64_t> integer(std::string_view key, std::string_view path,
                                   int64_t min = INT64_MIN, int64_t max = INT64_MAX) {
        return err_ ? std::nullopt : json::get_int(obj_, key, path, err_, min, max);
    }
    std::optional<double> number(std::string_view key, std::string_view path, double min,
                                 double max) {
        return err_ ? std::nullopt : json::get_number(obj_, key, path, err_, min, max);
    }
    std::optional<std::string> string(std::string_view key, std::string_view path) {
        return err_ ? std::nullopt : json::get_string(obj_, key, path, err_);
    }
    void fail(canonical::Error e) {
        if (!err_) {
            err_ = std::move(e);
        }
    }
    std::optional<canonical::Error>& error() { return err_; }

private:
    const json::Value& obj_;
    std::optional<canonical::Error> err_;
};

// stop: a string or a list of strings.
std::optional<canonical::Error> decode_stop(const json::Value* stop, SamplingParams& s) {
    if (stop == nullptr || stop->IsNull()) {
        return std::nullopt;
    }
    if (stop->IsString()) {
        s.stop.emplace_back(stop->GetString(), stop->GetStringLength());
        return std::nullopt;
    }
    if (stop->IsArray()) {
        s.stop.reserve(stop->Size());
        for (const json::Value& item : stop->GetArray()) {
            if (!item.IsString()) {
                s.stop.clear();
                break;
            }
            s.stop.emplace_back(item.GetString(), item.GetStringLength());
        }
        if (s.stop.size() == stop->Size()) {
            return std::nullopt;
        }
    }
    return bad_request(
        "'stop' must be a string or a list of strings, got " + json::to_string(*stop), "stop");
}

// logit_bias: {"<token id>": bias} with biases from -100 to 100, as OpenAI defines it (vLLM and
// SGLang read the same object).
std::optional<canonical::Error> decode_logit_bias(const json::Value* v, SamplingParams& s) {
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsObject()) {
        return bad_request(
            "'logit_bias' must be an object that maps token ids to biases, like "
            "{\"50256\": -100}, got " +
                std::string(json::type_name(*v)),
            "logit_bias");
    }
    std::vector<std::pair<std::string, double>> members;
    members.reserve(v->MemberCount());
    for (const auto& m : v->GetObject()) {
        std::string key(json::view(m.name));
        if (!m.value.IsNumber() || !(m.value.GetDouble() >= -100 && m.value.GetDouble() <= 100)) {
            return bad_request("'logit_bias' values must be numbers between -100 and 100, got " +
                                   json::to_string(m.value) + " for \"" + key + "\"",
                               "logit_bias");
        }
        members.emplace_back(std::move(key), m.value.GetDouble());
    }
    if (auto bad = canonical::logit_bias_from_object(members, s.logit_bias)) {
        return bad_request(
            "'logit_bias' keys must be token ids (decimal integers such as \"50256\"), got \"" +
                *bad + "\"",
            "logit_bias");
    }
    return std::nullopt;
}

std::optional<canonical::Error> decode_stop_token_ids(const json::Value* ids, SamplingParams& s) {
    if (ids == nullptr || ids->IsNull()) {
        return std::nullopt;
    }
    if (ids->IsArray()) {
        s.stop_token_ids.reserve(ids->Size());
        for (const json::Value& id : ids->GetArray()) {
            if (!is_token_id(id)) {
                break;
            }
            s.stop_token_ids.push_back(id.GetInt64());
        }
        if (s.stop_token_ids.size() == ids->Size()) {
            return std::nullopt;
        }
    }
    return bad_request("'stop_token_ids' must be a list of token ids (integers >= 0), got " +
                           json::to_string(*ids),
                       "stop_token_ids");
}

}  // namespace

// stream_options: {include_usage, continuous_usage_stats}, only with stream: true.
std::optional<canonical::Error> decode_stream_options(const json::Value& doc,
                                                      GenerationRequest& req) {
    const json::Value* opts = json::find(doc, "stream_options");
    if (opts == nullptr || opts->IsNull()) {
        return std::nullopt;
    }
    if (!opts->IsObject()) {
        return bad_request(
            "'stream_options' must be an object like {\"include_usage\": true}, "
            "got " +
                std::string(json::type_name(*opts)),
            "stream_options");
    }
    // vLLM rejects only a non-empty object without streaming (an empty one is falsy in Python);
    // do the same so that nothing vLLM accepts is refused here.
    if (!req.stream && !opts->ObjectEmpty()) {
        return bad_request(
            "stream_options can only be set when stream is true; remove "
            "'stream_options' or send \"stream\": true",
            "stream_options");
    }
    FieldReader r(*opts);
    req.include_usage = r.boolean("include_usage", "stream_options.include_usage").value_or(false);
    req.continuous_usage =
        r.boolean("continuous_usage_stats", "stream_options.continuous_usage_stats")
            .value_or(false);
    return std::move(r.error());
}

std::optional<canonical::Error> decode_sampling(const json::Value& doc, Api api,
                                                GenerationRequest& req) {
    FieldReader r(doc);
    SamplingParams& s = req.sampling;
    if (api == Api::chat) {
        // max_completion_tokens is the current name; max_tokens is its deprecated alias.
        const auto max_completion = r.integer("max_completion_tokens", "max_completion_tokens", 0);
        const auto max_tokens = r.integer("max_tokens", "max_tokens", 0);
        s.max_tokens = max_completion ? max_completion : max_tokens;
    } else {
        s.max_tokens = r.integer("max_tokens", "max_tokens", 0);
    }
    s.temperature = r.number("temperature", "temperature", 0.0, 2.0);
    s.top_p = r.number("top_p", "top_p", 0.0, 1.0);
    s.n = static_cast<int>(r.integer("n", "n", 1, 128).value_or(1));
    s.seed = r.integer("seed", "seed");
    s.presence_penalty = r.number("presence_penalty", "presence_penalty", -2.0, 2.0);
    s.frequency_penalty = r.number("frequency_penalty", "frequency_penalty", -2.0, 2.0);
    // Extensions of vLLM and SGLang (api-dialects §3.1, §4.8). top_k: -1 and 0 both mean off.
    s.top_k = r.integer("top_k", "top_k", -1);
    s.min_p = r.number("min_p", "min_p", 0.0, 1.0);
    s.repetition_penalty = r.number("repetition_penalty", "repetition_penalty", 0.0, 2.0);
    if (s.repetition_penalty && *s.repetition_penalty <= 0.0) {
        r.fail(bad_request("'repetition_penalty' must be > 0 and <= 2 (1 means no penalty), got " +
                               json::to_string(json::Value(*s.repetition_penalty)),
                           "repetition_penalty"));
    }
    s.ignore_eos = r.boolean("ignore_eos", "ignore_eos");
    s.min_tokens = r.integer("min_tokens", "min_tokens", 0);
    s.skip_special_tokens = r.boolean("skip_special_tokens", "skip_special_tokens");
    s.keep_stop_str = r.boolean("include_stop_str_in_output", "include_stop_str_in_output");

    if (api == Api::chat) {
        req.return_logprob = r.boolean("logprobs", "logprobs");
        req.top_logprobs = r.integer("top_logprobs", "top_logprobs", 0, 20);
        if (req.top_logprobs.value_or(0) > 0 && !req.return_logprob.value_or(false)) {
            r.fail(bad_request("'top_logprobs' needs \"logprobs\": true; send both or neither",
                               "top_logprobs"));
        }
    } else {
        // Completions' logprobs is an int: the number of top alternatives per token (0: the
        // chosen token's only).
        req.top_logprobs = r.integer("logprobs", "logprobs", 0, 5);
        if (req.top_logprobs) {
            req.return_logprob = true;
        }
        req.echo = r.boolean("echo", "echo").value_or(false);
        // An echo with logprobs scores the prompt too (vLLM: prompt_logprobs = logprobs), from
        // its first token: what lm-evaluation-harness's loglikelihood reads. A token-id prompt
        // has no text to echo without the model's tokenizer: its entries' token texts are it,
        // so they are asked for too (a backend that has none answers 400 naming echo).
        const bool token_prompt = std::any_of(req.prompts.begin(), req.prompts.end(),
                                              [](const Prompt& p) { return p.is_tokens; });
        if (req.echo && (req.return_logprob || token_prompt)) {
            req.prompt_logprob_start = 0;
        }
    }
    req.stream = r.boolean("stream", "stream").value_or(false);
    if (r.error()) {
        return std::move(r.error());
    }
    if (auto err = decode_stop(json::find(doc, "stop"), s)) {
        return err;
    }
    if (auto err = decode_logit_bias(json::find(doc, "logit_bias"), s)) {
        return err;
    }
    return decode_stop_token_ids(json::find(doc, "stop_token_ids"), s);
}

}  // namespace infergate::translators::openai
