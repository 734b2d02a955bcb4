// SGLang's log-probability keys of meta_info, both ways (tokenizer_manager.py
// add_logprob_to_meta_info). In a translation unit of their own: with them beside meta_info,
// which runs for every event of every SGLang client's stream, the compiler stops inlining the
// writer's null and prefix steps there (measured: about 400 instructions more per event, with no
// logprob asked).

#include <algorithm>
#include <string>

#include "translators/canonical/logprobs.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang::wire {

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

void logprob_keys(Writer& w, const LogprobOut& logprobs) {
    key(w, "input_token_logprobs");
    token_list(w, logprobs.input, logprobs.text);
    key(w, "output_token_logprobs");
    token_list(w, logprobs.output, logprobs.text);
    key(w, "output_token_logprobs_length");
    w.Uint64(logprobs.output != nullptr ? logprobs.output->size() : 0);
    if (logprobs.top > 0) {
        key(w, "input_top_logprobs");
        top_list(w, logprobs.input, logprobs.top, logprobs.text);
        key(w, "output_top_logprobs");
        top_list(w, logprobs.output, logprobs.top, logprobs.text);
    }
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

}  // namespace infergate::translators::sglang::wire
