// The emulator's log-probability model: at every position of a generated sequence, and of a
// prompt, a full distribution over the emulator's tokens (the 64 words and EOS). Every dialect's
// logprob answer is read from this one model, so the numbers agree between dialects and between
// a stream and the whole answer, and a test can check them for consistency.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/generator.hpp"
#include "emulator/tokenizer.hpp"

namespace infergate::emulator {

// One entry of a distribution: a token and its log-probability.
struct TokenLogprob {
    std::int64_t id = 0;
    float logprob = 0;
};

// What a writer needs of one position.
struct PositionLogprobs {
    float logprob = 0;              // of the token that is at the position
    int rank = 0;                   // its 0-based rank in the distribution (0 = the most likely)
    std::vector<TokenLogprob> top;  // the n most likely tokens, most likely first
};

// One prompt token: its id, its text (with the whitespace before it, as a BPE piece) and a key
// of the tokens before it, so a position's distribution depends on its prefix only.
struct PromptToken {
    std::int64_t id = 0;
    std::string text;
    std::uint64_t prefix = 0;
};

// A text prompt's tokens: one per whitespace-separated word, as the tokenizer cuts it without
// matching special tokens (tokenizer.hpp; the count is prompt_from_text's).
std::vector<PromptToken> prompt_tokens_from_text(std::string_view text);
// A token-id prompt's tokens; an id decodes as token_piece() says.
std::vector<PromptToken> prompt_tokens_from_ids(std::span<const std::int64_t> ids);
// The tokens' texts concatenated: what a server's decode() of the prompt gives.
std::string prompt_text(std::span<const PromptToken> tokens);

// The tokens of the chat template ChatPromptBuilder counts: per message "<|im_start|>", the
// role, "\n", the content's words, "<|im_end|>"; then "<|im_start|>", "assistant".
// (tokenizer.hpp's ChatTokens, as a listing's tokens).
class ChatPromptTokens {
public:
    void add_message(std::string_view role) { chat_.add_message(role); }
    void add_content(std::string_view text) { chat_.add_content(text); }
    std::vector<PromptToken> finish();

private:
    ChatTokens chat_{false};
};

// " word" for a vocabulary id, `eos_text` for EOS, a piece the tokenizer gave out for its id,
// " [id]" for any other id.
std::string token_piece(std::int64_t id, std::string_view eos_text);

// How many tokens the model's distribution covers (the words and EOS): top-n lists are at most
// this long.
int logprob_vocab_size();

// The tokens whose distributions a listing reads: the generated tokens of an Output, or a
// prompt's tokens. `eos_text` is how the dialect decodes EOS.
class LogprobSeq {
public:
    LogprobSeq(const Output& out, std::string_view eos_text);
    LogprobSeq(std::span<const PromptToken> prompt, std::string_view eos_text);

    int size() const { return size_; }
    std::int64_t id(int i) const;
    // The token's text as the dialect decodes it.
    std::string_view text(int i) const;
    // A prompt's first token has no logprob (nothing comes before it).
    bool has_logprob(int i) const { return out_ != nullptr || i > 0; }
    // Position i's distribution: the token's logprob and rank, and the `top_n` most likely.
    void position(int i, int top_n, PositionLogprobs& pos) const;
    // The text of `alt`, an entry of position i's distribution.
    std::string_view alt_text(int i, std::int64_t alt) const;

private:
    const Output* out_ = nullptr;
    std::span<const PromptToken> prompt_;
    std::string_view eos_text_;
    int size_ = 0;
};

}  // namespace infergate::emulator
