#include "translators/sglang/wire.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

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
        logprob_keys(w, *logprobs);
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
    if (!err) {
        usage.reasoning_tokens =
            json::get_int(meta_info, "reasoning_tokens", "meta_info.reasoning_tokens", err, 0);
    }
    if (err) {
        return std::move(err->message);
    }
    return std::nullopt;
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
