// Deterministic "model": prompt token counting and token generation from a fixed vocabulary.
//
// The output of a request is a pure function of (prompt, choice index, seed, budget, stop rules),
// so tests can predict it and two runs of a benchmark see identical bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::emulator {

inline constexpr std::int64_t kEosTokenId = 2;
// Token id of vocabulary word w is its index + kTokenIdBase (so 0..99 stay free for specials).
inline constexpr std::int64_t kTokenIdBase = 100;

std::span<const std::string_view> vocabulary();

// Identity of one prompt: a hash that seeds generation, its token count for usage, and one key
// per token (`tokens` of them, a word's key the same wherever it occurs) that the simulated prefix
// cache (prefix_cache.hpp) reads the prompt's token sequence from. Embeddings (SGLang
// input_embeds) have no keys: the cache never serves them.
struct PromptKey {
    std::uint64_t hash = 0;
    int tokens = 0;
    std::vector<std::uint64_t> token_keys;
};

int count_words(std::string_view text);

// Text prompt: whitespace-separated words, at least 1.
PromptKey prompt_from_text(std::string_view text);
// Token-id prompt: one token per id.
PromptKey prompt_from_ids(std::span<const std::int64_t> ids);

// Chat prompt: sum over messages of (words in content + 4) + 2, mimicking a chat template's
// per-message framing and the generation prompt. Its token keys are the template's tokens in
// order (ChatPromptTokens' in logprobs.hpp): per message <|im_start|>, the role, "\n", the
// content's words, <|im_end|>; then <|im_start|>, "assistant". Two chats that open with the same
// messages so share a token prefix.
class ChatPromptBuilder {
public:
    void add_message(std::string_view role);
    // Content may arrive in several text parts; each adds its words.
    void add_content(std::string_view text);
    PromptKey finish();

private:
    void close_message();

    std::uint64_t hash_ = 1469598103934665603ULL;
    int tokens_ = 2;
    std::vector<std::uint64_t> keys_;
    bool open_ = false;
};

struct StopRules {
    std::vector<std::string> strings;
    std::vector<std::int64_t> token_ids;
    bool ignore_eos = false;
    bool keep_stop_string = false;  // SGLang no_stop_trim / vLLM include_stop_str_in_output
    std::optional<int> eos_after;
    std::optional<std::int64_t> seed;
};

// kAbort: stopped by SGLang's /abort_request (replica.hpp).
enum class Finish { kLength, kEos, kStopString, kStopToken, kAbort };

// One generated sequence. raw_text holds every decoded token; the final text is its prefix of
// final_len bytes (a matched stop string is cut off there).
struct Output {
    std::string raw_text;
    std::vector<std::uint32_t> text_end;  // raw_text size after token k
    std::vector<std::int64_t> token_ids;  // every generated id, EOS and stop tokens included
    std::size_t final_len = 0;
    Finish finish = Finish::kLength;
    std::string matched_string;
    std::int64_t matched_token = 0;
    int budget = 0;
    // Seeds the log-probability model's draws for this sequence (logprobs.hpp).
    std::uint64_t logprob_key = 0;

    int completion_tokens() const { return static_cast<int>(token_ids.size()); }
    std::string_view final_text() const { return {raw_text.data(), final_len}; }
};

Output generate(std::uint64_t prompt_hash, int choice, int budget, const StopRules& rules);

// The generator's mixing function (SplitMix64's finaliser), shared with the logprob model.
std::uint64_t splitmix64(std::uint64_t x);

// A 32-hex-digit request id (uuid4().hex style), from a per-thread generator.
std::string random_hex_id();

}  // namespace infergate::emulator
