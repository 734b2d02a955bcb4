#include "translators/openai/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace infergate::translators::openai {

using canonical::TokenAlternative;
using canonical::TokenLogprob;

namespace {

void write_number_or_null(json::Writer& w, std::optional<double> v) {
    if (v) {
        w.Double(*v);
    } else {
        w.Null();
    }
}

// One top_logprobs dict: the chosen token first, then its alternatives, keyed by text.
void write_top_dict(json::Writer& w, const TokenLogprob& t, size_t top) {
    std::vector<std::pair<std::string_view, double>> members;
    const auto add = [&members](const TokenAlternative& a) {
        const std::optional<double> lp = canonical::logprob_value(a);
        if (!lp) {
            return;
        }
        for (auto& m : members) {
            if (m.first == a.token) {
                m.second = *lp;  // a Python dict: first place, last value
                return;
            }
        }
        members.emplace_back(a.token, *lp);
    };
    add(t);
    for (size_t i = 0; i < std::min(top, t.top.size()); ++i) {
        add(t.top[i]);
    }
    w.StartObject();
    for (const auto& [token, lp] : members) {
        json::key(w, token);
        w.Double(lp);
    }
    w.EndObject();
}

template <class Fn>
void each_entry(const std::vector<TokenLogprob>* prompt, const std::vector<TokenLogprob>& generated,
                Fn&& fn) {
    if (prompt != nullptr) {
        for (const TokenLogprob& t : *prompt) {
            fn(t);
        }
    }
    for (const TokenLogprob& t : generated) {
        fn(t);
    }
}

}  // namespace

size_t token_text_length(const std::vector<TokenLogprob>& entries) {
    size_t n = 0;
    for (const TokenLogprob& t : entries) {
        n += canonical::code_points(t.token);
    }
    return n;
}

void split_echoed_prompt(std::string& text, std::vector<TokenLogprob>& entries,
                         std::vector<TokenLogprob>& prompt_out, const canonical::Prompt* prompt,
                         std::optional<int64_t> prompt_tokens, int64_t start) {
    size_t count = 0;
    if (prompt != nullptr && prompt->is_tokens) {
        count = prompt->token_ids.size();
    } else if (prompt_tokens) {
        count = static_cast<size_t>(std::max<int64_t>(0, *prompt_tokens));
    } else {
        const size_t length = prompt != nullptr ? canonical::code_points(prompt->text) : 0;
        for (size_t offset = 0; count < entries.size() && offset < length; ++count) {
            offset += canonical::code_points(entries[count].token);
        }
    }
    count = std::min(count, entries.size());
    const auto split = entries.begin() + static_cast<std::ptrdiff_t>(count);
    std::string entry_text;
    for (auto it = entries.begin(); it != split; ++it) {
        entry_text += it->token;
    }
    const size_t from = std::min(static_cast<size_t>(std::max<int64_t>(0, start)), count);
    prompt_out.insert(prompt_out.end(),
                      std::make_move_iterator(entries.begin() + static_cast<std::ptrdiff_t>(from)),
                      std::make_move_iterator(split));
    entries.erase(entries.begin(), split);
    const std::string_view own = prompt != nullptr && !prompt->is_tokens
                                     ? std::string_view(prompt->text)
                                     : std::string_view();
    // The engine writes the prompt's own text; a token-id prompt's is its detokenized text,
    // which the entries' token texts make up.
    if (!own.empty() && std::string_view(text).substr(0, own.size()) == own) {
        text.erase(0, own.size());
    } else if (std::string_view(text).substr(0, entry_text.size()) == entry_text) {
        text.erase(0, entry_text.size());
    }
}

void write_completion_logprobs(json::Writer& w, const std::vector<TokenLogprob>* prompt,
                               const std::vector<TokenLogprob>& generated, size_t& offset,
                               size_t top) {
    w.StartObject();
    json::key(w, "text_offset");
    w.StartArray();
    each_entry(prompt, generated, [&](const TokenLogprob& t) {
        w.Uint64(offset);
        offset += canonical::code_points(t.token);
    });
    w.EndArray();
    json::key(w, "token_logprobs");
    w.StartArray();
    each_entry(prompt, generated, [&](const TokenLogprob& t) {
        write_number_or_null(w, canonical::logprob_value(t));
    });
    w.EndArray();
    json::key(w, "tokens");
    w.StartArray();
    each_entry(prompt, generated, [&](const TokenLogprob& t) { json::string(w, t.token); });
    w.EndArray();
    json::key(w, "top_logprobs");
    w.StartArray();
    each_entry(prompt, generated, [&](const TokenLogprob& t) {
        // vLLM: a position without logprobs (the first prompt token) has a null dict.
        if (canonical::logprob_value(t)) {
            write_top_dict(w, t, top);
        } else {
            w.Null();
        }
    });
    w.EndArray();
    w.EndObject();
}

void write_empty_completion_logprobs(json::Writer& w) {
    size_t offset = 0;
    write_completion_logprobs(w, nullptr, {}, offset, 0);
}

void write_chat_logprobs(json::Writer& w, const std::vector<TokenLogprob>& entries, size_t top) {
    w.StartObject();
    json::key(w, "content");
    json::write_token_entries(w, entries, json::TokenEntryStyle{}, top);
    w.EndObject();
}

namespace {

std::optional<std::string> read_completion_form(const json::Value& lp, std::string_view path,
                                                std::vector<TokenLogprob>& out) {
    const std::string at(path);
    const json::Value* tokens = json::find(lp, "tokens");
    const json::Value* logprobs = json::find(lp, "token_logprobs");
    const json::Value* tops = json::find(lp, "top_logprobs");
    if (tokens == nullptr || !tokens->IsArray()) {
        return at + ".tokens is missing or not an array";
    }
    const rapidjson::SizeType n = tokens->Size();
    if (logprobs == nullptr || !logprobs->IsArray() || logprobs->Size() != n) {
        return at + ".token_logprobs is missing or not an array as long as tokens";
    }
    const bool has_tops = tops != nullptr && tops->IsArray();
    if (tops != nullptr && !tops->IsNull() && (!has_tops || tops->Size() != n)) {
        return at + ".top_logprobs is not an array as long as tokens";
    }
    for (rapidjson::SizeType i = 0; i < n; ++i) {
        const std::string item = "[" + std::to_string(i) + "]";
        TokenLogprob& t = out.emplace_back();
        if (!(*tokens)[i].IsString()) {
            return at + ".tokens" + item + " is not a string";
        }
        t.token = std::string(json::view((*tokens)[i]));
        const json::Value& lp_i = (*logprobs)[i];
        if (lp_i.IsNumber()) {
            t.logprob = lp_i.GetDouble();
        } else if (!lp_i.IsNull()) {
            return at + ".token_logprobs" + item + " is not a number";
        }
        if (!has_tops || (*tops)[i].IsNull()) {
            continue;
        }
        const json::Value& dict = (*tops)[i];
        if (!dict.IsObject()) {
            return at + ".top_logprobs" + item + " is not an object";
        }
        for (const auto& m : dict.GetObject()) {
            if (!m.value.IsNumber()) {
                return at + ".top_logprobs" + item + " holds a value that is not a number";
            }
            TokenAlternative& a = t.top.emplace_back();
            a.token = std::string(json::view(m.name));
            a.logprob = m.value.GetDouble();
        }
        // vLLM writes the chosen token first, then the most likely ones: most likely first, as
        // the canonical alternatives are.
        std::stable_sort(t.top.begin(), t.top.end(),
                         [](const TokenAlternative& a, const TokenAlternative& b) {
                             return *a.logprob > *b.logprob;
                         });
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> read_logprobs(const json::Value* logprobs, std::string_view path,
                                         std::vector<TokenLogprob>& out) {
    if (logprobs == nullptr || logprobs->IsNull()) {
        return std::nullopt;
    }
    if (!logprobs->IsObject()) {
        return std::string(path) + " is " + std::string(json::type_name(*logprobs)) +
               ", not an object";
    }
    if (const json::Value* content = json::find(*logprobs, "content"); content != nullptr) {
        if (content->IsNull()) {
            return std::nullopt;
        }
        return json::read_token_entries(*content, std::string(path) + ".content", out);
    }
    return read_completion_form(*logprobs, path, out);
}

}  // namespace infergate::translators::openai
