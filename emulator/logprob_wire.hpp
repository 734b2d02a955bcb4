// Every wire shape the servers give log probabilities in, one writer per shape, each reading the
// one model (logprobs.hpp). Where a shape comes from in each server's source: docs/emulator.md
// ("Log probabilities").
#pragma once

#include <span>
#include <string_view>

#include "emulator/json_util.hpp"
#include "emulator/logprobs.hpp"

namespace infergate::emulator {

// A logprob as the server prints it: Python / Go / nlohmann print the float32 value widened to a
// double (shortest round trip of the double); TGI's serde prints the f32 itself.
enum class FloatStyle { kDouble, kF32 };
void write_logprob(JsonWriter& w, float value, FloatStyle style = FloatStyle::kDouble);
// A token's UTF-8 bytes as a list of numbers (the `bytes` of OpenAI-style entries).
void write_bytes(JsonWriter& w, std::string_view text);

// Tokens [from, to) of a sequence. `dict_n` is how many alternatives the server computed for
// them (vLLM: a prompt's prompt_logprobs may differ from the listing's logprobs).
struct LogprobSpan {
    const LogprobSeq* seq = nullptr;
    int from = 0;
    int to = 0;
    int dict_n = 0;
};

// vLLM /v1/completions `logprobs`: {"text_offset","token_logprobs","tokens","top_logprobs"};
// every top dict is the chosen token first, then the top `dict_n` (deduplicated), cut to n + 1
// entries; offsets count code points from `initial_offset` (serving_completion.py).
void write_vllm_completion_logprobs(JsonWriter& w, std::span<const LogprobSpan> spans, int n,
                                    int initial_offset);
// vLLM `prompt_logprobs`: [null, {"<id>": {"logprob","rank","decoded_token"}, ...}, ...], the
// prompt token first, ranks 1-based (vllm/logprobs.py).
void write_vllm_prompt_logprobs(JsonWriter& w, const LogprobSeq& prompt, int n);
// vLLM chat `logprobs`: {"content":[{"token","logprob","bytes","top_logprobs":[{"token",
// "logprob","bytes"}]}]}: the first n entries of chosen-then-top (serving_chat.py).
void write_vllm_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n);

// SGLang's OpenAI layer, completions: LogProbs with text_offset -1 and top-n dicts
// (to_openai_style_logprobs). `n` = 0: top_logprobs is an empty list (no top lists asked).
void write_sglang_completion_logprobs(JsonWriter& w, std::span<const LogprobSpan> spans, int n);
// SGLang's OpenAI layer, chat: {"content":[{"token","bytes","logprob","top_logprobs":[{"token",
// "bytes","logprob"}]}]}.
void write_sglang_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n);
// SGLang native meta_info keys: input_token_logprobs, output_token_logprobs,
// output_token_logprobs_length and, with n > 0, input_top_logprobs, output_top_logprobs; triples
// [logprob, id, text|null]. `input` is null when logprob_start_len is -1 (then []); output
// covers its first `upto` tokens (streams are cumulative).
void write_sglang_meta_logprobs(JsonWriter& w, const LogprobSeq* input, int input_from,
                                const LogprobSeq& output, int upto, int n, bool with_text);

// TGI Token {"id","text","logprob","special"} (router/src/lib.rs).
void write_tgi_token(JsonWriter& w, const LogprobSeq& seq, int k);
// TGI top tokens of position k: [Token, ...], the top n.
void write_tgi_top_tokens(JsonWriter& w, const LogprobSeq& seq, int k, int n);
// TGI details.prefill: [{"id","text","logprob"}], the first logprob null.
void write_tgi_prefill(JsonWriter& w, const LogprobSeq& prompt);
// TGI's chat `logprobs`: {"content":[{"token","logprob","top_logprobs":[{"token","logprob"}]}]}.
void write_tgi_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n);

// llama.cpp completion_probabilities (probs_vector_to_json): [{"id","token","bytes","logprob",
// "top_logprobs":[{"id","token","bytes","logprob"}]}], or prob / top_probs with
// `post_sampling`. `sent[k - from]` is what token k sent (its text_to_send).
void write_llamacpp_probs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n,
                          bool post_sampling, std::span<const std::string_view> sent);

// Ollama `logprobs`: [{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}],
// bytes and top_logprobs omitted when empty (api/types.go).
void write_ollama_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n);

}  // namespace infergate::emulator
