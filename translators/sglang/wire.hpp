#pragma once
// Internal to translators/sglang: the pieces of SGLang's wire format that the request, response
// and stream codecs share (meta_info, the finish_reason object, the sampling-key whitelist, the
// request decoders' shared readers).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/allocators.h>
#include <rapidjson/writer.h>

#include "translators/canonical/json.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::sglang::wire {

using PoolAllocator = rapidjson::MemoryPoolAllocator<rapidjson::CrtAllocator>;
using Writer =
    rapidjson::Writer<json::StringOut, rapidjson::UTF8<>, rapidjson::UTF8<>, PoolAllocator>;

// A JSON writer appending straight to `out`. RapidJSON's default writer heap-allocates its
// nesting stack (and an allocator object) on first use; this one keeps the stack in an inline
// buffer, so writing one stream event allocates nothing beyond the growth of `out`.
class OutWriter {
public:
    explicit OutWriter(std::string& out)
        : os_{&out}, pool_(buffer_, sizeof(buffer_)), writer_(os_, &pool_, kDepth) {}
    OutWriter(const OutWriter&) = delete;
    OutWriter& operator=(const OutWriter&) = delete;

    Writer& operator*() { return writer_; }
    Writer* operator->() { return &writer_; }

private:
    static constexpr size_t kDepth = 8;  // SGLang output nests 4 deep at most
    // Room for the pool's chunk header plus kDepth writer levels (16 bytes each).
    alignas(16) char buffer_[64 + kDepth * 16];
    json::StringOut os_;
    PoolAllocator pool_;
    Writer writer_;
};

using json::key;     // shared writer helpers (translators/canonical/json.hpp)
using json::string;

inline void optional_int(Writer& w, const std::optional<int64_t>& v) {
    if (v) {
        w.Int64(*v);
    } else {
        w.Null();
    }
}

// Grows `out` geometrically before appending about `extra` bytes (a bare reserve() may allocate
// exactly, which turns many small appends into quadratic copying on some standard libraries).
inline void ensure_room(std::string& out, size_t extra) {
    const size_t need = out.size() + extra;
    if (need > out.capacity()) {
        out.reserve(need > 2 * out.capacity() ? need : 2 * out.capacity());
    }
}

// SGLang's finish_reason object (api-dialects §4.5): {"type":"stop","matched":...},
// {"type":"length","length":N}, {"type":"abort","message":...}, or null. `completion_tokens`
// stands in for the length when the canonical reason does not carry the budget.
void finish_reason(Writer& w, const canonical::FinishReason* finish,
                   const std::optional<int64_t>& completion_tokens);

// What an SGLang client asked of log probabilities, and the entries to answer with. With
// `on` (return_logprob), meta_info carries SGLang's logprob keys (tokenizer_manager.py
// add_logprob_to_meta_info): input_token_logprobs, output_token_logprobs,
// output_token_logprobs_length and, with `top` > 0 (top_logprobs_num), input_top_logprobs and
// output_top_logprobs. Each entry is a [logprob, token_id, text] triple; the text is null
// unless `text` (return_text_in_logprobs), as SGLang writes it.
struct LogprobOut {
    bool on = false;
    size_t top = 0;
    bool text = false;
    const std::vector<canonical::TokenLogprob>* input = nullptr;
    const std::vector<canonical::TokenLogprob>* output = nullptr;
};

// Writes the logprob keys of meta_info for `logprobs` (logprob_wire.cpp).
void logprob_keys(Writer& w, const LogprobOut& logprobs);

// The stable meta_info keys, in SGLang's order: id, finish_reason, prompt_tokens, the logprob
// keys when asked for, completion_tokens, cached_tokens. Unknown counts are written as null,
// never guessed.
void meta_info(Writer& w, std::string_view id, const canonical::FinishReason* finish,
               const std::optional<int64_t>& prompt_tokens,
               const std::optional<int64_t>& completion_tokens,
               const std::optional<int64_t>& cached_tokens, const LogprobOut* logprobs = nullptr);

// Reads SGLang's logprob keys from meta_info: output_token_logprobs (with output_top_logprobs)
// into `output`, input_token_logprobs (with input_top_logprobs) into `input`. `output_from`
// skips output positions already read (a stream: SGLang re-sends every entry so far, unless it
// runs with --incremental-streaming-output, when the list holds only the new ones and
// output_token_logprobs_length counts them all); returns the number of output positions known
// after this event in `output_total`. `delta_lists`: the stream is known to be incremental, for
// servers older than output_token_logprobs_length. `input` null: skip the prompt's entries (a
// stream re-sends them on every event). An error message names what is wrong.
std::optional<std::string> read_logprobs(const json::Value& meta_info,
                                         std::vector<canonical::TokenLogprob>* input,
                                         std::vector<canonical::TokenLogprob>& output,
                                         size_t output_from, size_t& output_total,
                                         bool delta_lists = false);

// Reads meta_info.finish_reason: the object form (SGLang >= 0.3.1) or the older string form.
// Returns false when the value is neither (the caller reports the upstream as broken).
bool read_finish_reason(const json::Value& v, canonical::FinishReason& out);

// Reads meta_info's prompt/completion/cached token counts into `usage`. Returns a message when a
// count has the wrong type.
std::optional<std::string> read_counts(const json::Value& meta_info, canonical::Usage& usage);

// Keys of SGLang's SamplingParams that the canonical model does not name but that a real server
// accepts; they travel as raw JSON in GenerationRequest::sampling_extras.
bool is_passthrough_sampling_key(std::string_view key);

// A 502 saying what was wrong with the SGLang backend's output.
canonical::Error upstream_error(std::string message);

// Client request decoding (request_decode.cpp, sampling_decode.cpp).

// `path` in single quotes, as the error messages name a field.
inline std::string quoted(std::string_view path) {
    std::string s;
    s.reserve(path.size() + 2);
    s.append("'").append(path).append("'");
    return s;
}

// Reads a list of token ids (integers >= 0) at `path` into `out`.
std::optional<canonical::Error> read_token_ids(const json::Value& list, std::string_view path,
                                               std::vector<int64_t>& out);

// Reads the top-level sampling_params (null, one object, or one object per prompt, which must
// come after the prompts) into req.sampling, req.sampling_extras and req.item_sampling.
std::optional<canonical::Error> read_sampling_params(const json::Value& v,
                                                     canonical::GenerationRequest& req);

}  // namespace infergate::translators::sglang::wire
