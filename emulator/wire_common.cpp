#include "emulator/wire_common.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "emulator/tokenizer.hpp"

namespace infergate::emulator {

std::size_t raw_len_after(const Output& out, int tokens) {
    return tokens > 0 ? out.text_end[static_cast<std::size_t>(tokens - 1)] : 0;
}

std::size_t visible_holdback(const Output& out, int tokens, bool last, std::size_t holdback) {
    if (last) {
        return out.final_len;
    }
    const std::size_t raw = raw_len_after(out, tokens);
    return std::min(raw > holdback ? raw - holdback : 0, out.final_len);
}

std::size_t stop_holdback(const StopRules& rules) {
    std::size_t holdback = 0;
    if (!rules.keep_stop_string) {
        for (const std::string& s : rules.strings) {
            holdback = std::max(holdback, s.empty() ? 0 : s.size() - 1);
        }
    }
    return holdback;
}

std::size_t visible_partial_stop(const Output& out, int tokens, bool last,
                                 const std::vector<std::string>& stops) {
    if (last) {
        return out.final_len;
    }
    const std::size_t raw = std::min(raw_len_after(out, tokens), out.final_len);
    const std::string_view text(out.raw_text.data(), raw);
    std::size_t held = 0;
    for (const std::string& s : stops) {
        // Longest proper prefix of s that the text ends with.
        for (std::size_t k = std::min(s.size() - (s.empty() ? 0 : 1), text.size()); k > held;
             --k) {
            if (text.substr(text.size() - k) == std::string_view(s).substr(0, k)) {
                held = k;
                break;
            }
        }
    }
    return raw - held;
}

std::string_view take_delta(ChoiceState& c, std::size_t visible) {
    visible = std::max(visible, c.text_sent);
    const std::string_view delta =
        std::string_view(c.out.raw_text).substr(c.text_sent, visible - c.text_sent);
    c.text_sent = visible;
    return delta;
}

std::string rfc3339_now() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now);
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now - secs).count();
    const std::time_t t = secs.count();
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::size_t len = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    if (nanos != 0) {
        char frac[16];
        std::snprintf(frac, sizeof(frac), ".%09lld", static_cast<long long>(nanos));
        std::size_t flen = 10;
        while (frac[flen - 1] == '0') {
            --flen;
        }
        std::copy(frac, frac + flen, buf + len);
        len += flen;
    }
    buf[len++] = 'Z';
    return {buf, len};
}

std::int64_t nanos_between(std::chrono::steady_clock::time_point from,
                           std::chrono::steady_clock::time_point to) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

std::vector<std::int64_t> pseudo_token_ids(std::string_view text) {
    return token_ids(text);
}

void write_cached_details(JsonWriter& w, int cached) {
    w.key("prompt_tokens_details");
    w.StartObject();
    w.kv_int("cached_tokens", cached);
    w.EndObject();
}

void write_cached_details_if_any(JsonWriter& w, int cached, bool null_when_none) {
    if (cached > 0) {
        write_cached_details(w, cached);
    } else if (null_when_none) {
        w.kv_null("prompt_tokens_details");
    }
}

std::string random_alnum(std::size_t n) {
    static constexpr char kChars[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string hex;
    std::string out;
    out.reserve(n);
    while (out.size() < n) {
        hex = random_hex_id();
        for (std::size_t i = 0; i + 1 < hex.size() && out.size() < n; i += 2) {
            const int v = std::stoi(hex.substr(i, 2), nullptr, 16);
            out.push_back(kChars[v % 62]);
        }
    }
    return out;
}

std::string model_list_body(std::string_view id, std::int64_t created, std::string_view owned_by,
                            const std::function<void(JsonWriter&)>& extra) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.kv("object", "list");
    w.key("data");
    w.StartArray();
    w.StartObject();
    w.kv("id", id);
    w.kv("object", "model");
    w.kv_int("created", created);
    w.kv("owned_by", owned_by);
    if (extra) {
        extra(w);
    }
    w.EndObject();
    w.EndArray();
    w.EndObject();
    return body;
}

}  // namespace infergate::emulator
