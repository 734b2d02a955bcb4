#include "emulator/generator.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

namespace infergate::emulator {
namespace {

// 64 entries so a token is 6 bits of a hash. Short, lower-case and distinct, so stop strings in
// tests are easy to pick and never collide with JSON escaping.
constexpr std::array<std::string_view, 64> kVocabulary = {
    "the",  "a",     "of",    "and",   "to",   "in",    "is",   "it",   "that",  "was",   "for",
    "on",   "are",   "with",  "as",    "at",   "be",    "this", "from", "or",    "one",   "had",
    "by",   "word",  "but",   "not",   "what", "all",   "were", "we",   "when",  "your",  "can",
    "said", "there", "use",   "an",    "each", "which", "she",  "do",   "how",   "their", "if",
    "will", "up",    "other", "about", "out",  "many",  "then", "them", "these", "so",    "some",
    "her",  "would", "make",  "like",  "him",  "into",  "time", "has",  "look",
};

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
    for (unsigned char c : bytes) {
        h = (h ^ c) * kFnvPrime;
    }
    return h;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Token keys of what is not a word: the chat template's framing, token ids, an empty prompt.
constexpr std::uint64_t kImStartKey = 0x696d5f7374617274ULL;  // "im_start"
constexpr std::uint64_t kImEndKey = 0x696d5f656e64ULL;        // "im_end"
constexpr std::uint64_t kNewlineKey = 0x0aULL;
constexpr std::uint64_t kEmptyPromptKey = 0x656d707479ULL;   // "empty"
constexpr std::uint64_t kIdKeySalt = 0x746f6b656e5f6964ULL;  // "token_id"

// Appends one key per whitespace-separated word of `text` (the word's bytes hashed).
void append_word_keys(std::string_view text, std::vector<std::uint64_t>& keys) {
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i])) {
            ++i;
        }
        const std::size_t start = i;
        while (i < text.size() && !is_space(text[i])) {
            ++i;
        }
        if (i > start) {
            keys.push_back(fnv1a(kFnvOffset, text.substr(start, i - start)));
        }
    }
}

int word_index(std::uint64_t prompt_hash, int choice, int k, std::uint64_t seed_mix) {
    std::uint64_t h = splitmix64(prompt_hash ^ seed_mix);
    h = splitmix64(h ^ (static_cast<std::uint64_t>(choice) << 32 | static_cast<std::uint32_t>(k)));
    return static_cast<int>(h >> 58);  // top 6 bits: 0..63
}

// Earliest stop-string occurrence that ends inside the text appended since `before`.
// Returns npos if none; ties go to the first string in the list, like the real servers' loops.
std::size_t find_stop(const std::string& text, std::size_t before,
                      const std::vector<std::string>& stops, std::size_t& which) {
    std::size_t best = std::string::npos;
    for (std::size_t i = 0; i < stops.size(); ++i) {
        const std::string& s = stops[i];
        if (s.empty()) {
            continue;
        }
        const std::size_t from = before >= s.size() - 1 ? before - (s.size() - 1) : 0;
        const std::size_t pos = text.find(s, from);
        if (pos != std::string::npos && pos < best) {
            best = pos;
            which = i;
        }
    }
    return best;
}

}  // namespace

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

std::span<const std::string_view> vocabulary() { return kVocabulary; }

int count_words(std::string_view text) {
    int words = 0;
    bool in_word = false;
    for (char c : text) {
        if (is_space(c)) {
            in_word = false;
        } else if (!in_word) {
            in_word = true;
            ++words;
        }
    }
    return words;
}

PromptKey prompt_from_text(std::string_view text) {
    PromptKey key{fnv1a(kFnvOffset, text), 0, {}};
    append_word_keys(text, key.token_keys);
    if (key.token_keys.empty()) {
        key.token_keys.push_back(kEmptyPromptKey);  // counted as one token
    }
    key.tokens = static_cast<int>(key.token_keys.size());
    return key;
}

PromptKey prompt_from_ids(std::span<const std::int64_t> ids) {
    PromptKey key;
    std::uint64_t h = kFnvOffset ^ 0x1d5;  // never equal to a text prompt's hash by construction
    key.token_keys.reserve(ids.size());
    for (std::int64_t id : ids) {
        h = splitmix64(h ^ static_cast<std::uint64_t>(id));
        key.token_keys.push_back(splitmix64(static_cast<std::uint64_t>(id) ^ kIdKeySalt));
    }
    key.hash = h;
    key.tokens = static_cast<int>(ids.size());
    return key;
}

void ChatPromptBuilder::close_message() {
    if (open_) {
        keys_.push_back(kImEndKey);
        open_ = false;
    }
}

void ChatPromptBuilder::add_message(std::string_view role) {
    hash_ = fnv1a(hash_, role);
    hash_ = (hash_ ^ 0xff) * kFnvPrime;  // separator: role "ab"+"c" differs from "a"+"bc"
    tokens_ += 4;
    close_message();
    keys_.push_back(kImStartKey);
    keys_.push_back(fnv1a(kFnvOffset, role));  // one token, even when empty
    keys_.push_back(kNewlineKey);
    open_ = true;
}

void ChatPromptBuilder::add_content(std::string_view text) {
    hash_ = fnv1a(hash_, text);
    hash_ = (hash_ ^ 0xfe) * kFnvPrime;
    tokens_ += count_words(text);
    append_word_keys(text, keys_);
}

PromptKey ChatPromptBuilder::finish() {
    close_message();
    keys_.push_back(kImStartKey);
    keys_.push_back(fnv1a(kFnvOffset, "assistant"));
    return {hash_, tokens_, std::move(keys_)};
}

Output generate(std::uint64_t prompt_hash, int choice, int budget, const StopRules& rules) {
    Output out;
    out.budget = budget;
    const std::size_t reserve = static_cast<std::size_t>(std::min(budget, 4096));
    out.text_end.reserve(reserve);
    out.token_ids.reserve(reserve);
    out.raw_text.reserve(reserve * 6);
    const std::uint64_t seed_mix =
        rules.seed ? splitmix64(static_cast<std::uint64_t>(*rules.seed) ^ 0x5eed) : 0;
    out.logprob_key = splitmix64(splitmix64(prompt_hash ^ seed_mix) ^
                                 (static_cast<std::uint64_t>(choice) << 32) ^ 0x6c6f6770726f62ULL);

    for (int k = 0; k < budget; ++k) {
        if (rules.eos_after && !rules.ignore_eos && k == *rules.eos_after) {
            out.token_ids.push_back(kEosTokenId);
            out.text_end.push_back(static_cast<std::uint32_t>(out.raw_text.size()));
            out.final_len = out.raw_text.size();
            out.finish = Finish::kEos;
            out.matched_token = kEosTokenId;
            return out;
        }
        const int w = word_index(prompt_hash, choice, k, seed_mix);
        const std::int64_t id = w + kTokenIdBase;
        out.token_ids.push_back(id);
        if (std::find(rules.token_ids.begin(), rules.token_ids.end(), id) !=
            rules.token_ids.end()) {
            // Both servers count the stop token but leave its text out of the output.
            out.text_end.push_back(static_cast<std::uint32_t>(out.raw_text.size()));
            out.final_len = out.raw_text.size();
            out.finish = Finish::kStopToken;
            out.matched_token = id;
            return out;
        }
        const std::size_t before = out.raw_text.size();
        out.raw_text.push_back(' ');
        out.raw_text.append(kVocabulary[static_cast<std::size_t>(w)]);
        out.text_end.push_back(static_cast<std::uint32_t>(out.raw_text.size()));
        if (!rules.strings.empty()) {
            std::size_t which = 0;
            const std::size_t pos = find_stop(out.raw_text, before, rules.strings, which);
            if (pos != std::string::npos) {
                const std::string& s = rules.strings[which];
                out.final_len = rules.keep_stop_string ? pos + s.size() : pos;
                out.finish = Finish::kStopString;
                out.matched_string = s;
                return out;
            }
        }
    }
    out.final_len = out.raw_text.size();
    out.finish = Finish::kLength;
    return out;
}

std::string random_hex_id() {
    thread_local std::uint64_t state =
        static_cast<std::uint64_t>(
            std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
        std::hash<std::thread::id>{}(std::this_thread::get_id());
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(32, '0');
    for (std::size_t half = 0; half < 2; ++half) {
        state += 0x9E3779B97F4A7C15ULL;
        std::uint64_t bits = splitmix64(state);
        for (std::size_t i = 0; i < 16; ++i) {
            id[half * 16 + i] = kHex[bits & 0xf];
            bits >>= 4;
        }
    }
    return id;
}

}  // namespace infergate::emulator
