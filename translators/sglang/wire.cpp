#include "translators/sglang/wire.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "translators/canonical/logprobs.hpp"

namespace infergate::translators::sglang::wire {

namespace {

using canonical::FinishKind;
using canonical::FinishReason;

bool contains(std::string_view haystack, std::string_view needle) {
    return haystack.find(needle) != std::string_view::npos;
}

// Before SGLang PR #1407 (Sept 2024) finish_reason was the text of an internal class, e.g.
// "FINISH_LENGTH: 32", "FINISH_MATCHED_TOKEN: 2", "FINISH_ABORT", or older still "eos_token".
void read_legacy_finish_reason(std::string_view text, FinishReason& out) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (contains(lower, "length")) {
        out.kind = FinishKind::length;
        const auto colon = text.rfind(':');
        if (colon != std::string_view::npos) {
            std::string_view number = text.substr(colon + 1);
            while (!number.empty() && number.front() == ' ') {
                number.remove_prefix(1);
            }
            int64_t n = 0;
            const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
            if (ec == std::errc() && end == number.data() + number.size()) {
                out.length = n;
            }
        }
    } else if (contains(lower, "abort")) {
        out.kind = FinishKind::abort;
        out.message = std::string(text);
    } else {
        // "stop", "eos", "matched" and any spelling we do not know: a non-null reason means the
        // generation ended, and ending on a stop condition is by far the likeliest cause.
        out.kind = FinishKind::stop;
    }
}

}  // namespace

void finish_reason(Writer& w, const FinishReason* finish,
                   const std::optional<int64_t>& completion_tokens) {
    if (finish == nullptr || finish->kind == FinishKind::none) {
        w.Null();
        return;
    }
    w.StartObject();
    key(w, "type");
    switch (finish->kind) {
        case FinishKind::length:
            string(w, "length");
            key(w, "length");
            optional_int(w, finish->length ? finish->length : completion_tokens);
            break;
        case FinishKind::abort:
            string(w, "abort");
            key(w, "message");
            string(w, finish->message);
            break;
        case FinishKind::stop:
            string(w, "stop");
            key(w, "matched");
            if (finish->matched_text) {
                string(w, *finish->matched_text);
            } else if (finish->matched_token) {
                w.Int64(*finish->matched_token);
            } else {
                w.Null();
            }
            break;
        default:
            // SGLang has no tool-call or content-filter finish; both ended the text normally.
            string(w, "stop");
            key(w, "matched");
            w.Null();
            break;
    }
    w.EndObject();
}

namespace {

// [logprob, token_id, text]: null for what is unknown (the first prompt token's logprob, an id
// the backend did not send) and for the text unless the client asked for it.
void triple(Writer& w, const canonical::TokenAlternative& t, bool text) {
    w.StartArray();
    json::write_logprob(w, t);
    optional_int(w, t.id);
    if (text) {
        string(w, t.token);
    } else {
        w.Null();
    }
    w.EndArray();
}

void token_list(Writer& w, const std::vector<canonical::TokenLogprob>* entries, bool text) {
    w.StartArray();
    if (entries != nullptr) {
        for (const canonical::TokenLogprob& t : *entries) {
            triple(w, t, text);
        }
    }
    w.EndArray();
}

// Per position, the alternatives as triples, or null where there are none (SGLang's
// detokenize_top_logprobs_tokens writes None for an empty position).
void top_list(Writer& w, const std::vector<canonical::TokenLogprob>* entries, size_t top,
              bool text) {
    w.StartArray();
    if (entries != nullptr) {
        for (const canonical::TokenLogprob& t : *entries) {
            const size_t n = std::min(top, t.top.size());
            if (n == 0) {
                w.Null();
                continue;
            }
            w.StartArray();
            for (size_t i = 0; i < n; ++i) {
                triple(w, t.top[i], text);
            }
            w.EndArray();
        }
    }
    w.EndArray();
}

}  // namespace

void meta_info(Writer& w, std::string_view id, const FinishReason* finish,
               const std::optional<int64_t>& prompt_tokens,
               const std::optional<int64_t>& completion_tokens,
               const std::optional<int64_t>& cached_tokens, const LogprobOut* logprobs) {
    w.StartObject();
    key(w, "id");
    string(w, id);
    key(w, "finish_reason");
    finish_reason(w, finish, completion_tokens);
    key(w, "prompt_tokens");
    optional_int(w, prompt_tokens);
    if (logprobs != nullptr && logprobs->on) {
        key(w, "input_token_logprobs");
        token_list(w, logprobs->input, logprobs->text);
        key(w, "output_token_logprobs");
        token_list(w, logprobs->output, logprobs->text);
        key(w, "output_token_logprobs_length");
        w.Uint64(logprobs->output != nullptr ? logprobs->output->size() : 0);
        if (logprobs->top > 0) {
            key(w, "input_top_logprobs");
            top_list(w, logprobs->input, logprobs->top, logprobs->text);
            key(w, "output_top_logprobs");
            top_list(w, logprobs->output, logprobs->top, logprobs->text);
        }
    }
    key(w, "completion_tokens");
    optional_int(w, completion_tokens);
    key(w, "cached_tokens");
    optional_int(w, cached_tokens);
    w.EndObject();
}

bool read_finish_reason(const json::Value& v, FinishReason& out) {
    out = FinishReason{};
    if (v.IsNull()) {
        return true;
    }
    if (v.IsString()) {
        read_legacy_finish_reason(json::view(v), out);
        return true;
    }
    if (!v.IsObject()) {
        return false;
    }
    const json::Value* type = json::find(v, "type");
    if (type == nullptr || !type->IsString()) {
        return false;
    }
    const std::string_view t = json::view(*type);
    if (t == "length") {
        out.kind = FinishKind::length;
        if (const json::Value* n = json::find(v, "length"); n != nullptr && n->IsInt64()) {
            out.length = n->GetInt64();
        }
    } else if (t == "abort") {
        out.kind = FinishKind::abort;
        if (const json::Value* m = json::find(v, "message"); m != nullptr && m->IsString()) {
            out.message = std::string(json::view(*m));
        }
    } else {
        // "stop", and types newer than this code: the generation ended normally.
        out.kind = FinishKind::stop;
        const json::Value* m = json::find(v, "matched");
        if (m != nullptr && m->IsString()) {
            out.matched_text = std::string(json::view(*m));
        } else if (m != nullptr && m->IsInt64()) {
            out.matched_token = m->GetInt64();
        } else if (m != nullptr && m->IsArray() && !m->Empty() && (*m)[0].IsInt64()) {
            // A list of ids (a multi-token EOS set); the canonical model keeps one.
            out.matched_token = (*m)[0].GetInt64();
        }
    }
    return true;
}

std::optional<std::string> read_counts(const json::Value& meta_info, canonical::Usage& usage) {
    std::optional<canonical::Error> err;
    usage.prompt_tokens =
        json::get_int(meta_info, "prompt_tokens", "meta_info.prompt_tokens", err, 0);
    if (!err) {
        usage.completion_tokens =
            json::get_int(meta_info, "completion_tokens", "meta_info.completion_tokens", err, 0);
    }
    if (!err) {
        usage.cached_tokens =
            json::get_int(meta_info, "cached_tokens", "meta_info.cached_tokens", err, 0);
    }
    if (err) {
        return std::move(err->message);
    }
    return std::nullopt;
}

namespace {

std::optional<std::string> read_triple(const json::Value& v, const std::string& path,
                                       canonical::TokenAlternative& out) {
    if (!v.IsArray() || v.Size() < 2) {
        return path + " is " + json::to_string(v) + ", not a [logprob, token_id, text] list";
    }
    if (v[0].IsNumber()) {
        out.logprob = v[0].GetDouble();
    } else if (!v[0].IsNull()) {
        return path + "[0] is not a number";
    }
    if (v[1].IsInt64()) {
        out.id = v[1].GetInt64();
    } else if (!v[1].IsNull()) {
        return path + "[1] is not a token id";
    }
    if (v.Size() > 2 && v[2].IsString()) {
        out.token.assign(v[2].GetString(), v[2].GetStringLength());
    } else if (v.Size() > 2 && !v[2].IsNull()) {
        return path + "[2] is not a string";
    }
    return std::nullopt;
}

// Reads positions [from, total) of one side (input or output) from its token list `tokens`
// (which covers the last tokens->Size() of `total` positions) and its top list `tops`.
std::optional<std::string> read_side(const json::Value* tokens, const json::Value* tops,
                                     std::string_view name, size_t total, size_t from,
                                     std::vector<canonical::TokenLogprob>& out) {
    if (tokens == nullptr || tokens->IsNull()) {
        return std::nullopt;
    }
    const std::string path = std::string("meta_info.") + std::string(name) + "_token_logprobs";
    if (!tokens->IsArray()) {
        return path + " is " + std::string(json::type_name(*tokens)) + ", not a list";
    }
    const size_t size = tokens->Size();
    if (size > total) {
        return path + " has more entries than output_token_logprobs_length";
    }
    const size_t first = total - size;  // the position of the list's first entry
    const std::string top_path = std::string("meta_info.") + std::string(name) + "_top_logprobs";
    if (tops != nullptr && !tops->IsNull() && (!tops->IsArray() || tops->Size() != size)) {
        return top_path + " does not have one entry per token";
    }
    for (size_t pos = std::max(from, first); pos < total; ++pos) {
        const auto i = static_cast<rapidjson::SizeType>(pos - first);
        canonical::TokenLogprob t;
        if (auto e = read_triple((*tokens)[i], path + "[" + std::to_string(i) + "]", t)) {
            return e;
        }
        if (tops != nullptr && tops->IsArray()) {
            const json::Value& alts = (*tops)[i];
            if (!alts.IsNull() && !alts.IsArray()) {
                return top_path + "[" + std::to_string(i) + "] is not a list";
            }
            if (alts.IsArray()) {
                for (rapidjson::SizeType k = 0; k < alts.Size(); ++k) {
                    canonical::TokenAlternative alt;
                    if (auto e = read_triple(
                            alts[k],
                            top_path + "[" + std::to_string(i) + "][" + std::to_string(k) + "]",
                            alt)) {
                        return e;
                    }
                    t.top.push_back(std::move(alt));
                }
            }
        }
        out.push_back(std::move(t));
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> read_logprobs(const json::Value& meta_info,
                                         std::vector<canonical::TokenLogprob>* input,
                                         std::vector<canonical::TokenLogprob>& output,
                                         size_t output_from, size_t& output_total,
                                         bool delta_lists) {
    output_total = output_from;
    const json::Value* out_tokens = json::find(meta_info, "output_token_logprobs");
    if (out_tokens != nullptr && out_tokens->IsArray()) {
        size_t total = out_tokens->Size();
        const json::Value* length = json::find(meta_info, "output_token_logprobs_length");
        if (length != nullptr && length->IsUint64() && length->GetUint64() >= total) {
            total = static_cast<size_t>(length->GetUint64());
        } else if (length == nullptr && delta_lists) {
            total += output_from;
        }
        if (auto e = read_side(out_tokens, json::find(meta_info, "output_top_logprobs"), "output",
                               total, output_from, output)) {
            return e;
        }
        output_total = std::max(total, output_from);
    } else if (out_tokens != nullptr && !out_tokens->IsNull()) {
        return "meta_info.output_token_logprobs is " + std::string(json::type_name(*out_tokens)) +
               ", not a list";
    }
    if (input == nullptr) {
        return std::nullopt;
    }
    const json::Value* in_tokens = json::find(meta_info, "input_token_logprobs");
    const size_t in_total = in_tokens != nullptr && in_tokens->IsArray() ? in_tokens->Size() : 0;
    return read_side(in_tokens, json::find(meta_info, "input_top_logprobs"), "input", in_total, 0,
                     *input);
}

bool is_passthrough_sampling_key(std::string_view key) {
    static constexpr std::array<std::string_view, 9> kKeys = {
        "json_schema",  "regex",
        "ebnf",         "structural_tag",
        "stop_regex",
        "spaces_between_special_tokens", "custom_params",
        "stream_interval", "logit_bias",
    };
    return std::find(kKeys.begin(), kKeys.end(), key) != kKeys.end();
}

canonical::Error upstream_error(std::string message) {
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

}  // namespace infergate::translators::sglang::wire
