#include "emulator/logprobs.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

constexpr std::uint64_t kSalt = 0x6c6f6770726f6273ULL;                 // "logprobs"
constexpr std::uint64_t kPromptSeed = 1469598103934665603ULL ^ 0x1d5;  // as prompt_from_ids

// The distribution's candidates: the 64 words and EOS (plus a prompt token that is neither).
constexpr int kCandidates = 65;

// A generated token is the model's own choice: usually the most likely one, sometimes not (it
// samples), so that listings also show a chosen token below the top.
constexpr std::array<int, 8> kOutputRank = {0, 0, 0, 0, 0, 0, 1, 2};
// A prompt token that is not one of the candidates gets one of these ranks.
constexpr std::array<int, 8> kForeignRank = {0, 0, 1, 1, 2, 3, 5, 9};

std::int64_t candidate(int i) {  // i in [0, kCandidates)
    return i < kCandidates - 1 ? kTokenIdBase + i : kEosTokenId;
}

bool is_candidate(std::int64_t id) {
    return id == kEosTokenId ||
           (id >= kTokenIdBase && id < kTokenIdBase + static_cast<std::int64_t>(kCandidates - 1));
}

// " word" for every vocabulary word, built once.
const std::vector<std::string>& pieces() {
    static const std::vector<std::string> table = [] {
        std::vector<std::string> t;
        for (std::string_view word : vocabulary()) {
            t.push_back(" " + std::string(word));
        }
        return t;
    }();
    return table;
}

// Where a candidate sits in a position's order: ascending keys, then ids.
std::uint64_t order_key(std::uint64_t h, std::int64_t id) {
    return splitmix64(h ^ (static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ULL));
}

// Rank r's log-probability in a distribution of m tokens: Zipf-like scores
// s_0 = 0, s_r = -(gap + slope * ln(1 + r)), normalised over all m.
class Shape {
public:
    Shape(std::uint64_t h, int m) {
        slope_ = 0.8 + static_cast<double>((h >> 8) & 0xff) / 255.0 * 2.0;
        gap_ = static_cast<double>((h >> 16) & 0xff) / 255.0 * 2.5;
        double sum = 1.0;
        for (int r = 1; r < m; ++r) {
            sum += std::exp(score(r));
        }
        log_z_ = std::log(sum);
    }
    float logprob(int rank) const { return static_cast<float>(score(rank) - log_z_); }

private:
    double score(int r) const { return r == 0 ? 0.0 : -(gap_ + slope_ * std::log1p(r)); }
    double slope_ = 1, gap_ = 0, log_z_ = 0;
};

// Fills pos for a position with key h whose token is `chosen`. `output`: a generated token (its
// rank is drawn); otherwise a prompt token, ranked where the position's order puts it.
void fill_position(std::uint64_t h, std::int64_t chosen, bool output, int top_n,
                   PositionLogprobs& pos) {
    const bool known = is_candidate(chosen);
    const int m = kCandidates + (known ? 0 : 1);
    // The other candidates in the position's order (only computed when needed).
    std::array<std::pair<std::uint64_t, std::int64_t>, kCandidates> others;
    int n_others = 0;
    const bool need_order = top_n > 0 || (!output && known);
    if (need_order) {
        for (int i = 0; i < kCandidates; ++i) {
            const std::int64_t id = candidate(i);
            if (id != chosen) {
                others[static_cast<std::size_t>(n_others++)] = {order_key(h, id), id};
            }
        }
    }
    int rank = 0;
    if (output) {
        rank = kOutputRank[h >> 61];
    } else if (!known) {
        rank = kForeignRank[splitmix64(h ^ static_cast<std::uint64_t>(chosen)) >> 61];
    } else {
        const std::uint64_t mine = order_key(h, chosen);
        rank = static_cast<int>(std::count_if(others.begin(), others.begin() + n_others,
                                              [mine](const auto& o) { return o.first < mine; }));
    }
    const Shape shape(h, m);
    pos.rank = rank;
    pos.logprob = shape.logprob(rank);
    pos.top.clear();
    const int n = std::min(top_n, m);
    if (n <= 0) {
        return;
    }
    const int from_others = std::min(n - (rank < n ? 1 : 0), n_others);
    std::partial_sort(others.begin(), others.begin() + from_others, others.begin() + n_others);
    int next = 0;
    for (int r = 0; r < n; ++r) {
        const std::int64_t id =
            r == rank ? chosen : others[static_cast<std::size_t>(next++)].second;
        pos.top.push_back({id, shape.logprob(r)});
    }
}

void set_prefixes(std::vector<PromptToken>& tokens) {
    std::uint64_t h = kPromptSeed;
    for (PromptToken& t : tokens) {
        t.prefix = h;
        h = splitmix64(h ^ static_cast<std::uint64_t>(t.id));
    }
}

}  // namespace

std::vector<PromptToken> prompt_tokens_from_text(std::string_view text) {
    std::vector<Token> words = prompt_word_tokens(text);
    std::vector<PromptToken> tokens;
    tokens.reserve(words.size());
    for (Token& t : words) {
        tokens.push_back({t.id, std::move(t.piece), 0});
    }
    set_prefixes(tokens);
    return tokens;
}

std::vector<PromptToken> prompt_tokens_from_ids(std::span<const std::int64_t> ids) {
    std::vector<PromptToken> tokens;
    tokens.reserve(ids.size());
    for (std::int64_t id : ids) {
        tokens.push_back({id, token_piece(id, "</s>"), 0});
    }
    set_prefixes(tokens);
    return tokens;
}

std::string prompt_text(std::span<const PromptToken> tokens) {
    std::string text;
    for (const PromptToken& t : tokens) {
        text += t.text;
    }
    return text;
}

std::vector<PromptToken> ChatPromptTokens::finish() {
    std::vector<Token> chat = chat_.finish();
    std::vector<PromptToken> tokens;
    tokens.reserve(chat.size());
    for (Token& t : chat) {
        tokens.push_back({t.id, std::move(t.piece), 0});
    }
    set_prefixes(tokens);
    return tokens;
}

std::string token_piece(std::int64_t id, std::string_view eos_text) {
    if (id == kEosTokenId) {
        return std::string(eos_text);
    }
    const std::int64_t w = id - kTokenIdBase;
    if (w >= 0 && w < static_cast<std::int64_t>(pieces().size())) {
        return pieces()[static_cast<std::size_t>(w)];
    }
    if (id >= kHashedIdBase) {
        // A piece the tokenizer routes gave out (tokenizer.hpp).
        if (auto piece = id_piece(id)) {
            return *piece;
        }
    }
    return " [" + std::to_string(id) + "]";
}

int logprob_vocab_size() {
    return kCandidates;
}

LogprobSeq::LogprobSeq(const Output& out, std::string_view eos_text)
    : out_(&out), eos_text_(eos_text), size_(out.completion_tokens()) {}

LogprobSeq::LogprobSeq(std::span<const PromptToken> prompt, std::string_view eos_text)
    : prompt_(prompt), eos_text_(eos_text), size_(static_cast<int>(prompt.size())) {}

std::int64_t LogprobSeq::id(int i) const {
    const auto k = static_cast<std::size_t>(i);
    return out_ != nullptr ? out_->token_ids[k] : prompt_[k].id;
}

std::string_view LogprobSeq::text(int i) const {
    if (out_ == nullptr) {
        return prompt_[static_cast<std::size_t>(i)].text;
    }
    return alt_text(i, id(i));
}

std::string_view LogprobSeq::alt_text(int i, std::int64_t alt) const {
    if (out_ == nullptr && alt == id(i)) {
        return prompt_[static_cast<std::size_t>(i)].text;
    }
    if (alt == kEosTokenId) {
        return eos_text_;
    }
    if (out_ != nullptr && !is_candidate(alt)) {
        // A scripted text's token (chat_extras.hpp): its own piece of the text.
        const auto k = static_cast<std::size_t>(i);
        const std::size_t begin = k == 0 ? 0 : out_->text_end[k - 1];
        return std::string_view(out_->raw_text).substr(begin, out_->text_end[k] - begin);
    }
    return pieces()[static_cast<std::size_t>(alt - kTokenIdBase)];  // every other candidate
}

void LogprobSeq::position(int i, int top_n, PositionLogprobs& pos) const {
    if (out_ != nullptr) {
        const std::uint64_t h =
            splitmix64(out_->logprob_key ^ (static_cast<std::uint64_t>(i) * kSalt));
        fill_position(h, id(i), true, top_n, pos);
    } else {
        const PromptToken& t = prompt_[static_cast<std::size_t>(i)];
        fill_position(splitmix64(t.prefix ^ kSalt), t.id, false, top_n, pos);
    }
}

}  // namespace infergate::emulator
