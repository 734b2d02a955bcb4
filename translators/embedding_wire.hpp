#pragma once
// Internal to the embeddings and tokenizer codecs: the JSON pieces their APIs share (vectors of
// numbers, inputs as text or token ids, the refusals of what a backend cannot carry).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/embedding.hpp"
#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace infergate::translators::embed_wire {

// A JSON array of numbers (integers count: 0 is 0.0) into `out`. False for anything else.
bool read_vector(const json::Value& v, std::vector<double>& out);

// Writes `values` as a JSON array of numbers (canonical::append_number), or as OpenAI's base64
// string when `base64`. NaN and infinities, which JSON cannot hold, are written as null.
void write_vector(json::Writer& w, const std::vector<double>& values, bool base64 = false);

// A list of token ids: a non-empty array of integers in [0, 2^32). False otherwise.
bool read_ids(const json::Value& v, std::vector<int64_t>& out);
void write_ids(json::Writer& w, const std::vector<int64_t>& ids);
// `texts` as a JSON list of strings when `as_list`, else its first ("" when there is none).
void write_texts(json::Writer& w, const std::vector<std::string>& texts, bool as_list);
// `ids` as a list of token lists when `as_list`, else its first ([] when there is none).
void write_id_lists(json::Writer& w, const std::vector<std::vector<int64_t>>& ids, bool as_list);

// How an API's input member may be shaped.
struct InputRules {
    bool tokens = false;      // [int] is one prompt of token ids, [[int], ...] several
    bool mixed_list = false;  // a list may mix texts and token lists (TEI)
    bool empty_text = true;   // "" is a valid input
};

// The input member `name` of `body` into `req` (inputs, input_is_list): a string, or a list of
// strings, or (by `rules`) token ids. A 400 naming `name` when it is shaped otherwise.
std::optional<canonical::Error> read_inputs(const json::Value& v, std::string_view name,
                                            const InputRules& rules,
                                            canonical::EmbeddingRequest& req);

// Writes the inputs under key `name` as a string, a list of strings, [int] or [[int], ...]
// (`as_list`: the shape of the request: a list even for one input).
void write_inputs(json::Writer& w, std::string_view name, const canonical::EmbeddingRequest& req,
                  bool as_list);

// Whether the inputs mix texts and token ids (only TEI takes that in one request).
bool mixes_kinds(const canonical::EmbeddingRequest& req);
// Whether some input is token ids.
bool has_tokens(const canonical::EmbeddingRequest& req);

// The client's first key that `backend` cannot carry (an extra that is not inert), as the 400
// that names it (canonical::refuse_foreign_extras' words); nullopt when there is none.
std::optional<canonical::Error> refuse_extras(const std::vector<canonical::Extra>& extras,
                                              std::string_view backend);

// A 400 for a setting the client wrote that the backend cannot honour: "'dimensions' cannot be
// carried to the backend 'x' (llama.cpp): <why>; <what works>".
canonical::Error cannot_carry(std::string_view param, std::string_view backend,
                              std::string_view why);

// A 502 for a backend answer that is not what its API answers.
canonical::Error malformed(std::string_view api, std::string_view what);

// Keeps every top-level member of `obj` not in `known` as an extra (`inert` when `inert_all`,
// else by the rules: null is always inert).
void collect_extras(const json::Value& obj, std::initializer_list<std::string_view> known,
                    const canonical::InertRule* rules, size_t rule_count, bool inert_all,
                    std::vector<canonical::Extra>& out);

// An unsigned count in a response header (TEI's x-compute-tokens); nullopt when absent or not a
// number.
std::optional<int64_t> header_count(const ResponseHeaders& headers, std::string_view name);

// The fast path's check of a whole answer: `body` is one valid JSON value whose top level is an
// array (`array`) or an object holding the list `list_key` ("data", "embeddings"); for an
// object, the integer at the member path `count` (up to two keys: {"usage", "prompt_tokens"}) is
// returned when there. A 502 naming `api` otherwise.
Result<std::optional<int64_t>> scan_answer(std::string_view body, std::string_view api, bool array,
                                           std::string_view list_key = {},
                                           std::string_view count_key = {},
                                           std::string_view count_subkey = {});

// Tokens whose text is known but not their place in `input` (llama.cpp's pieces, TEI's special
// tokens): each gets the byte offsets of its text in the input, in order, after the tokens placed
// already. A piece that starts with a space the input does not have there (SentencePiece's
// leading space) covers the text after it; a piece that is not in the input at all (a special
// token: BOS) is zero-width, and `special` unless the backend said otherwise.
void align_pieces(std::string_view input, std::vector<canonical::Token>& tokens);

// `bytes` with every sequence that is not UTF-8 replaced by U+FFFD, as Rust's
// String::from_utf8_lossy (TGI's and TEI's token texts).
std::string lossy_utf8(std::string_view bytes);

}  // namespace infergate::translators::embed_wire
