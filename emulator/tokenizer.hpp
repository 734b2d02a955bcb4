// The emulator's tokenizer: the one the tokenize, detokenize and embedding routes of every dialect
// answer with, and whose ids the prompt listings (logprobs, TGI prefill, Ollama context) show.
//
// It is reversible: the pieces of tokenize(text) concatenated are `text`, byte for byte, and
// detokenize() of their ids gives it back. It counts as the generation routes count a text
// prompt (generator.hpp): one token per whitespace-separated word, the word carrying the
// whitespace before it (the last word also the whitespace after it), and a text without a word
// is one token (its whole text, even an empty one). Besides, the strings of the special tokens
// (<s>, </s>, <|im_start|>, <|im_end|>) are matched as those tokens, as a real tokenizer matches
// its added tokens; after <|im_start|> the role up to the next newline is one token and that
// newline another, so that the stand-in chat template (ChatTokens) tokenizes back to its own
// tokens.
//
// Ids: specials 0-5, the 64 generation words (" the" = 100 ... " look" = 163, as generated),
// byte tokens <0x00>..<0xFF> = 256..511 (only ever read, from token ids a client sends), and any
// other piece a stable id from a hash of its bytes (>= 1000, < 2^31). The process remembers the
// pieces the tokenizer routes have produced (up to kRememberedPieces), so those ids decode; an id
// it does not know decodes to nothing, as a Hugging Face tokenizer skips an id outside its
// vocabulary.
//
// Thread-safe: the remembered pieces are shared by every io_context behind one mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::emulator {

inline constexpr std::int64_t kUnkId = 0;
inline constexpr std::int64_t kBosId = 1;
// kEosTokenId (2) is in generator.hpp.
inline constexpr std::int64_t kImStartId = 3;
inline constexpr std::int64_t kImEndId = 4;
inline constexpr std::int64_t kNewlineId = 5;  // the template's "\n" (not special)
inline constexpr std::int64_t kByteTokenBase = 256;
inline constexpr std::int64_t kHashedIdBase = 1000;
inline constexpr std::int64_t kHashedIdEnd = 2147483647;  // exclusive: ids fit an int32
// What the process remembers of the pieces it gave hashed ids to (oldest forgotten first).
inline constexpr std::size_t kRememberedPieces = 1u << 20;
inline constexpr std::size_t kRememberedBytes = 64u << 20;

struct Token {
    std::int64_t id = 0;
    std::string piece;  // the bytes the token stands for
    // Byte offsets of the piece in the tokenized text (start == stop for a token of no text).
    std::size_t start = 0;
    std::size_t stop = 0;
    bool special = false;
};

// The id of a piece that is not a special token: a vocabulary word, "\n", or a hashed id.
std::int64_t piece_id(std::string_view piece);

// Text to tokens (see the file comment). `remember` records the hashed pieces so their ids
// decode; the generation routes' listings pass false (they never need to decode them).
std::vector<Token> tokenize(std::string_view text, bool remember = true);

// Words only, for chat content: one token per word (whitespace before it included, whitespace
// after the last word left out), none for a text without a word; as ChatPromptBuilder counts.
void append_word_tokens(std::string_view text, std::vector<Token>& out, bool remember);

// The stand-in chat template ChatPromptBuilder counts: per message <|im_start|>, the role (one
// token, even empty), "\n", the content's words, <|im_end|>; then <|im_start|>, "assistant".
// Its rendering is its pieces concatenated ("<|im_start|>user\nhi<|im_end|><|im_start|>
// assistant"), which tokenize() turns back into the same tokens.
class ChatTokens {
public:
    explicit ChatTokens(bool remember = true) : remember_(remember) {}
    void add_message(std::string_view role);
    // Content may come in several text parts; each adds its words.
    void add_content(std::string_view text);
    // `generation_prompt`: end with <|im_start|>assistant; `continue_final`: leave the last
    // message open (no <|im_end|>, no generation prompt), as vLLM's continue_final_message.
    std::vector<Token> finish(bool generation_prompt = true, bool continue_final = false);

private:
    void push(std::int64_t id, std::string piece, bool special);
    void close_message();

    std::vector<Token> tokens_;
    bool open_ = false;
    bool remember_;
};

// The text of one id: its piece, or nullopt for an id the tokenizer does not know.
std::optional<std::string> id_piece(std::int64_t id);
bool is_special_id(std::int64_t id);
// The vocabulary's string for an id (convert_ids_to_tokens): the piece, "<0x0A>" for a byte
// token, "" for an unknown id.
std::string id_string(std::int64_t id);

// Ids to text: the pieces concatenated, unknown ids skipped, special tokens left out with
// `skip_special`. Raw bytes; see to_valid_utf8 for a JSON string.
std::string detokenize(std::span<const std::int64_t> ids, bool skip_special);

// `bytes` with every ill-formed UTF-8 sequence replaced by U+FFFD (what Python's
// decode(errors="replace") and nlohmann's error_handler_t::replace write).
std::string to_valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

// The generation routes' view of a text prompt: tokenize() without matching special tokens, so
// that the count is always count_words() (at least 1). Nothing is remembered.
std::vector<Token> prompt_word_tokens(std::string_view text);
// Their ids only: the stand-in prompt ids of the generation routes.
std::vector<std::int64_t> token_ids(std::string_view text);

}  // namespace infergate::emulator
