#pragma once
// The same-dialect fast path's edits of OpenAI JSON: a client's request forwarded with its model
// name and stream_options changed, a backend's answer (a whole response or one stream chunk)
// forwarded with its model name, id or usage changed. Each edit is computed from member spans
// found by a validating scan of the bytes (json::scan_object), so it is right for any valid JSON
// (whitespace anywhere, any key order, escapes in keys and values), and everything it does not
// touch keeps its bytes. Where a key repeats, the result reads as the edited document would to a
// parser that keeps the last duplicate (Python's json, JavaScript's JSON.parse): every
// occurrence of an edited key is edited.

#include <string>
#include <string_view>

#include "translators/codec.hpp"

namespace infergate::translators::openai {

struct ResponseEdits {
    std::string_view model;    // non-empty: every top-level "model" string becomes this
    std::string_view id;       // non-empty: every top-level "id" string becomes this
    bool strip_usage = false;  // every top-level "usage" member goes
    // The result on one line: raw CR and LF (whitespace between tokens, the only place valid
    // JSON has them) become spaces, so that an SSE `data:` payload that came over several lines
    // goes out as one.
    bool one_line = false;
    // `data` is known to be one valid JSON object (the caller parsed it): when none of the keys
    // to edit can be in it (its bytes hold neither the key nor any escape), it is copied as it
    // is, without the scan. The fast path edits every chunk of a stream; most have nothing to
    // take out.
    bool trusted = false;
};

// Appends `data` with `edits` made to `out`. False, with nothing appended, when `data` is not
// one valid JSON object (the `[DONE]` sentinel, say).
bool edit_response(std::string_view data, const ResponseEdits& edits, std::string& out);

// A top-level member to be sent under another name: the name the backend reads for it.
struct Rename {
    std::string_view from;
    std::string_view to;
};

struct RequestEdits {
    std::string_view model;         // non-empty: the top-level "model" (added when absent)
    bool include_usage = false;     // stream_options.include_usage = true
    bool continuous_usage = false;  // stream_options.continuous_usage_stats = true (vLLM, SGLang)
    // Each rename applies when the (last) `from` member is there and not null (null means "not
    // set" to OpenAI): every `from` member is renamed `to` and the `to` members already there
    // go, since the client's `from` is what counts (OpenAI's max_completion_tokens over
    // max_tokens). For backends that read another name (llama.cpp's max_tokens). No key may be
    // in two renames, nor be "logit_bias" when logit_bias_pairs is set.
    const Rename* renames = nullptr;
    size_t rename_count = 0;
    // The (last) top-level "logit_bias", when it is an object whose keys are all token ids
    // (canonical::token_id_key) and whose values are all numbers, becomes llama.cpp's array of
    // [id, bias] pairs, one per token as Python reads the object (a repeated key keeps its first
    // place and its last value; so do two spellings of one id, "7" and "007"). Anything else is
    // left as it is.
    bool logit_bias_pairs = false;
    // When the (last) top-level "response_format" is {"type": "json_schema", "json_schema":
    // {"schema": S}} with S not null (the last of each key) and there is no top-level
    // "json_schema", a member "json_schema": S is added (S's bytes as they are): llama-server
    // reads a schema on its chat route there on every version, and c392e509 loses the one in
    // response_format to a shadowed variable.
    bool schema_from_response_format = false;
};

// Appends the request `body` with `edits` made to `out`. False, with nothing appended, when the
// body is not one valid JSON object.
bool edit_request(std::string_view body, const RequestEdits& edits, std::string& out);

// Sets in `edits` what an OpenAI client's request needs to mean the same to a backend of
// `flavor` whose names differ from OpenAI's (docs/dialects.md, "Parameters"): llama-server reads
// the budget only as max_tokens (releases before 2026), the repetition penalty as repeat_penalty
// and logit_bias only as [[id, bias], ...], and takes a response_format schema as a top-level
// json_schema; SGLang's OpenAI layer reads vLLM's
// include_stop_str_in_output as no_stop_trim (`keep_stop_str_sent`: the client sent it). False
// when the backend reads the client's names as they are.
bool name_edits(Flavor flavor, bool keep_stop_str_sent, RequestEdits& edits);

}  // namespace infergate::translators::openai
