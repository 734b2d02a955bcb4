#include "emulator/tokenizer.hpp"

#include <array>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "emulator/generator.hpp"

namespace infergate::emulator {
namespace {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

struct Special {
    std::string_view text;
    std::int64_t id;
};
// Longest first is not needed: no special string is a prefix of another.
constexpr std::array<Special, 5> kSpecials = {{
    {"<unk>", kUnkId},
    {"<s>", kBosId},
    {"</s>", kEosTokenId},
    {"<|im_start|>", kImStartId},
    {"<|im_end|>", kImEndId},
}};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The special token whose string starts at text[pos], if any.
const Special* special_at(std::string_view text, std::size_t pos) {
    if (text[pos] != '<') {
        return nullptr;
    }
    for (const Special& s : kSpecials) {
        if (text.compare(pos, s.text.size(), s.text) == 0) {
            return &s;
        }
    }
    return nullptr;
}

std::int64_t hashed_id(std::string_view piece) {
    std::uint64_t h = kFnvOffset;
    for (unsigned char c : piece) {
        h = (h ^ c) * kFnvPrime;
    }
    h = splitmix64(h);  // FNV's low bits are weak; the id is a remainder
    return kHashedIdBase +
           static_cast<std::int64_t>(h % static_cast<std::uint64_t>(kHashedIdEnd - kHashedIdBase));
}

// The pieces with fixed ids: the generation words and the template's newline.
const std::unordered_map<std::string_view, std::int64_t>& fixed_pieces() {
    static const auto table = [] {
        static std::vector<std::string> words;  // " word": owns the keys' bytes
        const auto vocab = vocabulary();
        words.reserve(vocab.size());
        std::unordered_map<std::string_view, std::int64_t> out;
        for (std::size_t i = 0; i < vocab.size(); ++i) {
            words.push_back(" " + std::string(vocab[i]));
        }
        for (std::size_t i = 0; i < words.size(); ++i) {
            out.emplace(words[i], kTokenIdBase + static_cast<std::int64_t>(i));
        }
        out.emplace("\n", kNewlineId);
        return out;
    }();
    return table;
}

// The pieces this process gave hashed ids to, oldest forgotten first.
class Remembered {
public:
    void add(std::int64_t id, std::string_view piece) {
        const std::lock_guard<std::mutex> lock(mutex_);
        auto [it, inserted] = pieces_.try_emplace(id, piece);
        if (!inserted) {
            if (it->second != piece) {  // a hash collision: the newer piece wins
                bytes_ = bytes_ - it->second.size() + piece.size();
                it->second.assign(piece);
            }
            return;
        }
        order_.push_back(id);
        bytes_ += piece.size();
        while (pieces_.size() > kRememberedPieces || bytes_ > kRememberedBytes) {
            const auto old = pieces_.find(order_.front());
            if (old != pieces_.end()) {
                bytes_ -= old->second.size();
                pieces_.erase(old);
            }
            order_.pop_front();
        }
    }
    std::optional<std::string> find(std::int64_t id) const {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = pieces_.find(id);
        if (it == pieces_.end()) {
            return std::nullopt;
        }
        return it->second;
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::int64_t, std::string> pieces_;
    std::deque<std::int64_t> order_;
    std::size_t bytes_ = 0;
};

Remembered& remembered() {
    static Remembered table;
    return table;
}

void push_piece(std::vector<Token>& out, std::string_view text, std::size_t start, std::size_t stop,
                bool remember) {
    Token& t = out.emplace_back();
    t.piece.assign(text.substr(start, stop - start));
    t.id = piece_id(t.piece);
    t.start = start;
    t.stop = stop;
    if (remember && t.id >= kHashedIdBase) {
        remembered().add(t.id, t.piece);
    }
}

// Words of text[begin, end): each with the whitespace before it; the last one takes the
// whitespace after it when `keep_tail`; a span without a word is one token when `lone_space`.
void split_words(std::string_view text, std::size_t begin, std::size_t end, bool keep_tail,
                 bool lone_space, std::vector<Token>& out, bool remember) {
    std::size_t start = begin;
    std::size_t i = begin;
    bool any = false;
    while (i < end) {
        while (i < end && is_space(text[i])) {
            ++i;
        }
        if (i == end) {
            break;
        }
        while (i < end && !is_space(text[i])) {
            ++i;
        }
        std::size_t stop = i;
        if (keep_tail) {
            std::size_t j = i;
            while (j < end && is_space(text[j])) {
                ++j;
            }
            if (j == end) {
                stop = end;
                i = end;
            }
        }
        push_piece(out, text, start, stop, remember);
        start = stop;
        any = true;
    }
    if (!any && lone_space && (end > begin || out.empty())) {
        push_piece(out, text, begin, end, remember);
    }
}

}  // namespace

std::int64_t piece_id(std::string_view piece) {
    const auto& fixed = fixed_pieces();
    if (const auto it = fixed.find(piece); it != fixed.end()) {
        return it->second;
    }
    for (const Special& s : kSpecials) {
        if (piece == s.text) {
            return s.id;
        }
    }
    return hashed_id(piece);
}

std::vector<Token> tokenize(std::string_view text, bool remember) {
    std::vector<Token> out;
    // Cut at special tokens; the text between two of them is split into words.
    std::size_t segment = 0;
    bool after_im_start = false;
    auto flush = [&](std::size_t end) {
        std::size_t begin = segment;
        if (after_im_start && begin < end) {
            // The template's header: the role up to the newline, then the newline.
            const std::size_t nl = text.find('\n', begin);
            const std::size_t role_end = nl == std::string_view::npos || nl >= end ? end : nl;
            push_piece(out, text, begin, role_end, remember);
            begin = role_end;
            if (begin < end) {
                push_piece(out, text, begin, begin + 1, remember);
                ++begin;
            }
        }
        split_words(text, begin, end, true, true, out, remember);
    };
    std::size_t i = 0;
    while (i < text.size()) {
        const Special* s = special_at(text, i);
        if (s == nullptr) {
            ++i;
            continue;
        }
        if (i > segment) {
            flush(i);
        }
        Token& t = out.emplace_back();
        t.id = s->id;
        t.piece.assign(s->text);
        t.start = i;
        t.stop = i + s->text.size();
        t.special = true;
        after_im_start = s->id == kImStartId;
        i += s->text.size();
        segment = i;
    }
    if (segment < text.size() || out.empty()) {
        flush(text.size());
    }
    return out;
}

void append_word_tokens(std::string_view text, std::vector<Token>& out, bool remember) {
    split_words(text, 0, text.size(), false, false, out, remember);
}

void ChatTokens::push(std::int64_t id, std::string piece, bool special) {
    Token& t = tokens_.emplace_back();
    t.id = id;
    t.piece = std::move(piece);
    t.special = special;
}

void ChatTokens::close_message() {
    if (open_) {
        push(kImEndId, "<|im_end|>", true);
        open_ = false;
    }
}

void ChatTokens::add_message(std::string_view role) {
    close_message();
    push(kImStartId, "<|im_start|>", true);
    push(piece_id(role), std::string(role), false);  // one token, even when empty
    if (remember_ && tokens_.back().id >= kHashedIdBase) {
        remembered().add(tokens_.back().id, role);
    }
    push(kNewlineId, "\n", false);
    open_ = true;
}

void ChatTokens::add_content(std::string_view text) {
    append_word_tokens(text, tokens_, remember_);
}

std::vector<Token> ChatTokens::finish(bool generation_prompt, bool continue_final) {
    if (!continue_final) {
        close_message();
        if (generation_prompt) {
            push(kImStartId, "<|im_start|>", true);
            push(piece_id("assistant"), "assistant", false);
            if (remember_) {
                remembered().add(tokens_.back().id, "assistant");
            }
        }
    }
    // Offsets into the rendering (the pieces concatenated).
    std::size_t at = 0;
    for (Token& t : tokens_) {
        t.start = at;
        at += t.piece.size();
        t.stop = at;
    }
    return std::move(tokens_);
}

std::optional<std::string> id_piece(std::int64_t id) {
    for (const Special& s : kSpecials) {
        if (id == s.id) {
            return std::string(s.text);
        }
    }
    if (id == kNewlineId) {
        return std::string("\n");
    }
    const auto vocab = vocabulary();
    if (id >= kTokenIdBase && id < kTokenIdBase + static_cast<std::int64_t>(vocab.size())) {
        return " " + std::string(vocab[static_cast<std::size_t>(id - kTokenIdBase)]);
    }
    if (id >= kByteTokenBase && id < kByteTokenBase + 256) {
        return std::string(1, static_cast<char>(id - kByteTokenBase));
    }
    if (id >= kHashedIdBase && id < kHashedIdEnd) {
        return remembered().find(id);
    }
    return std::nullopt;
}

bool is_special_id(std::int64_t id) {
    for (const Special& s : kSpecials) {
        if (id == s.id) {
            return true;
        }
    }
    return false;
}

std::string id_string(std::int64_t id) {
    if (id >= kByteTokenBase && id < kByteTokenBase + 256) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        const auto b = static_cast<unsigned>(id - kByteTokenBase);
        return std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    }
    return id_piece(id).value_or(std::string());
}

std::string detokenize(std::span<const std::int64_t> ids, bool skip_special) {
    std::string out;
    for (std::int64_t id : ids) {
        if (skip_special && is_special_id(id)) {
            continue;
        }
        if (auto piece = id_piece(id)) {
            out += *piece;
        }
    }
    return out;
}

namespace {

// Length of the well-formed UTF-8 sequence at text[i], or 0 (Unicode Table 3-7).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
        return 1;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        len = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        len = 3;
        lo = b0 == 0xe0 ? 0xa0 : 0x80;
        hi = b0 == 0xed ? 0x9f : 0xbf;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        len = 4;
        lo = b0 == 0xf0 ? 0x90 : 0x80;
        hi = b0 == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (i + len > text.size()) {
        return 0;
    }
    for (std::size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(text[i + k]);
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) {
            return 0;
        }
    }
    return len;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t len = utf8_sequence(bytes, i);
        if (len == 0) {
            return false;
        }
        i += len;
    }
    return true;
}

std::string to_valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t len = utf8_sequence(bytes, i);
        if (len > 0) {
            out.append(bytes.substr(i, len));
            i += len;
        } else {
            out += "\xef\xbf\xbd";
            ++i;
        }
    }
    return out;
}

std::vector<Token> prompt_word_tokens(std::string_view text) {
    std::vector<Token> tokens;
    split_words(text, 0, text.size(), true, true, tokens, false);
    return tokens;
}

std::vector<std::int64_t> token_ids(std::string_view text) {
    const std::vector<Token> tokens = prompt_word_tokens(text);
    std::vector<std::int64_t> ids;
    ids.reserve(tokens.size());
    for (const Token& t : tokens) {
        ids.push_back(t.id);
    }
    return ids;
}

}  // namespace infergate::emulator
