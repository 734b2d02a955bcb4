// The log-probability shapes of the Python servers: vLLM's (completions columns, prompt_logprobs,
// chat content) and SGLang's (its OpenAI layer's and the native meta_info triples).
#include <vector>

#include "emulator/logprob_wire.hpp"

namespace infergate::emulator {
namespace {

// Python's len(): code points of UTF-8 text.
int code_points(std::string_view text) {
    int n = 0;
    for (unsigned char c : text) {
        n += (c & 0xc0) != 0x80;
    }
    return n;
}

// The entries a vLLM dict holds: the chosen token first, then the top ones it does not repeat
// (a Python dict keeps the first insertion's place).
void chosen_first(std::int64_t chosen, const PositionLogprobs& pos,
                  std::vector<TokenLogprob>& out) {
    out.clear();
    out.push_back({chosen, pos.logprob});
    for (const TokenLogprob& t : pos.top) {
        if (t.id != chosen) {
            out.push_back(t);
        }
    }
}

// One listing's positions, computed once for the several passes a column layout needs.
struct Listing {
    struct Item {
        const LogprobSeq* seq;
        int i;
        bool has;
        PositionLogprobs pos;
    };
    std::vector<Item> items;

    Listing(std::span<const LogprobSpan> spans, bool dict_sized) {
        for (const LogprobSpan& s : spans) {
            for (int i = s.from; i < s.to; ++i) {
                Item& item = items.emplace_back(Item{s.seq, i, s.seq->has_logprob(i), {}});
                if (item.has) {
                    s.seq->position(i, dict_sized ? s.dict_n : 0, item.pos);
                }
            }
        }
    }
};

// The completions object's `token_logprobs` (null where a position has none: the first prompt
// token) and `tokens` lists, alike in vLLM's and SGLang's OpenAI layers.
void write_token_logprobs_and_tokens(JsonWriter& w, const Listing& listing) {
    w.key("token_logprobs");
    w.StartArray();
    for (const Listing::Item& item : listing.items) {
        if (item.has) {
            write_logprob(w, item.pos.logprob);
        } else {
            w.Null();
        }
    }
    w.EndArray();
    w.key("tokens");
    w.StartArray();
    for (const Listing::Item& item : listing.items) {
        w.str(item.seq->text(item.i));
    }
    w.EndArray();
}

}  // namespace

void write_vllm_completion_logprobs(JsonWriter& w, std::span<const LogprobSpan> spans, int n,
                                    int initial_offset) {
    const Listing listing(spans, true);
    w.StartObject();
    w.key("text_offset");
    w.StartArray();
    int offset = initial_offset;
    for (const Listing::Item& item : listing.items) {
        w.Int(offset);
        offset += code_points(item.seq->text(item.i));
    }
    w.EndArray();
    write_token_logprobs_and_tokens(w, listing);
    w.key("top_logprobs");
    w.StartArray();
    std::vector<TokenLogprob> dict;
    for (const Listing::Item& item : listing.items) {
        if (!item.has) {
            w.Null();
            continue;
        }
        chosen_first(item.seq->id(item.i), item.pos, dict);
        w.StartObject();
        // `if num_output_top_logprobs >= i`: at most n + 1 entries.
        for (std::size_t j = 0; j < dict.size() && static_cast<int>(j) <= n; ++j) {
            w.key(item.seq->alt_text(item.i, dict[j].id));
            write_logprob(w, dict[j].logprob);
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void write_vllm_prompt_logprobs(JsonWriter& w, const LogprobSeq& prompt, int n) {
    PositionLogprobs pos;
    std::vector<TokenLogprob> dict;
    w.StartArray();
    for (int i = 0; i < prompt.size(); ++i) {
        if (!prompt.has_logprob(i)) {
            w.Null();
            continue;
        }
        prompt.position(i, n, pos);
        chosen_first(prompt.id(i), pos, dict);
        w.StartObject();
        for (std::size_t j = 0; j < dict.size(); ++j) {
            w.key(std::to_string(dict[j].id));
            w.StartObject();
            w.key("logprob");
            write_logprob(w, dict[j].logprob);
            // The chosen token's vocabulary rank, then the top ranks 1..n.
            int rank = pos.rank + 1;
            if (j > 0) {
                for (std::size_t r = 0; r < pos.top.size(); ++r) {
                    if (pos.top[r].id == dict[j].id) {
                        rank = static_cast<int>(r) + 1;
                    }
                }
            }
            w.kv_int("rank", rank);
            w.kv("decoded_token", prompt.alt_text(i, dict[j].id));
            w.EndObject();
        }
        w.EndObject();
    }
    w.EndArray();
}

void write_vllm_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n) {
    PositionLogprobs pos;
    std::vector<TokenLogprob> dict;
    w.StartObject();
    w.key("content");
    w.StartArray();
    for (int i = from; i < to; ++i) {
        seq.position(i, n, pos);
        chosen_first(seq.id(i), pos, dict);
        w.StartObject();
        w.kv("token", seq.text(i));
        w.key("logprob");
        write_logprob(w, pos.logprob);
        w.key("bytes");
        write_bytes(w, seq.text(i));
        w.key("top_logprobs");
        w.StartArray();
        // `i < top_logprobs`: the first n entries, the chosen token leading.
        for (std::size_t j = 0; j < dict.size() && static_cast<int>(j) < n; ++j) {
            const std::string_view text = seq.alt_text(i, dict[j].id);
            w.StartObject();
            w.kv("token", text);
            w.key("logprob");
            write_logprob(w, dict[j].logprob);
            w.key("bytes");
            write_bytes(w, text);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void write_sglang_completion_logprobs(JsonWriter& w, std::span<const LogprobSpan> spans, int n) {
    const Listing listing(spans, true);
    w.StartObject();
    w.key("text_offset");
    w.StartArray();
    for (std::size_t i = 0; i < listing.items.size(); ++i) {
        w.Int(-1);  // "Not supported yet"
    }
    w.EndArray();
    write_token_logprobs_and_tokens(w, listing);
    w.key("top_logprobs");
    w.StartArray();
    for (const Listing::Item& item : listing.items) {
        if (n <= 0) {
            break;  // no top lists were computed: the list stays empty
        }
        if (!item.has) {
            w.Null();
            continue;
        }
        w.StartObject();
        for (const TokenLogprob& t : item.pos.top) {
            w.key(item.seq->alt_text(item.i, t.id));
            write_logprob(w, t.logprob);
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void write_sglang_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n) {
    PositionLogprobs pos;
    w.StartObject();
    w.key("content");
    w.StartArray();
    for (int i = from; i < to; ++i) {
        seq.position(i, n, pos);
        w.StartObject();
        w.kv("token", seq.text(i));
        w.key("bytes");
        write_bytes(w, seq.text(i));
        w.key("logprob");
        write_logprob(w, pos.logprob);
        w.key("top_logprobs");
        w.StartArray();
        for (const TokenLogprob& t : pos.top) {
            const std::string_view text = seq.alt_text(i, t.id);
            w.StartObject();
            w.kv("token", text);
            w.key("bytes");
            write_bytes(w, text);
            w.key("logprob");
            write_logprob(w, t.logprob);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void write_sglang_meta_logprobs(JsonWriter& w, const LogprobSeq* input, int input_from,
                                const LogprobSeq& output, int upto, int n, bool with_text) {
    PositionLogprobs pos;
    auto triple = [&](const LogprobSeq& seq, int i, std::int64_t id, const float* logprob) {
        w.StartArray();
        if (logprob != nullptr) {
            write_logprob(w, *logprob);
        } else {
            w.Null();
        }
        w.Int64(id);
        if (with_text) {
            w.str(seq.alt_text(i, id));
        } else {
            w.Null();
        }
        w.EndArray();
    };
    // One listing of the chosen tokens, or (top) of each position's top n.
    auto listing = [&](const LogprobSeq* seq, int from, int to, bool top) {
        w.StartArray();
        for (int i = from; seq != nullptr && i < to; ++i) {
            // The first input position has no logprob: SGLang puts None there.
            const bool none = seq == input && i == from;
            if (!none) {
                seq->position(i, top ? n : 0, pos);
            }
            if (!top) {
                triple(*seq, i, seq->id(i), none ? nullptr : &pos.logprob);
                continue;
            }
            if (none || pos.top.empty()) {
                w.Null();
                continue;
            }
            w.StartArray();
            for (const TokenLogprob& t : pos.top) {
                triple(*seq, i, t.id, &t.logprob);
            }
            w.EndArray();
        }
        w.EndArray();
    };
    const int input_to = input != nullptr ? input->size() : 0;
    w.key("input_token_logprobs");
    listing(input, input_from, input_to, false);
    w.key("output_token_logprobs");
    listing(&output, 0, upto, false);
    w.kv_int("output_token_logprobs_length", upto);
    if (n > 0) {
        w.key("input_top_logprobs");
        listing(input, input_from, input_to, true);
        w.key("output_top_logprobs");
        listing(&output, 0, upto, true);
    }
}

}  // namespace infergate::emulator
