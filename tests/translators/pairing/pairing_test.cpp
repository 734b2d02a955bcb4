#include <doctest/doctest.h>

#include "translators/pairing.hpp"

using infergate::canonical::Dialect;
using infergate::canonical::RequestKind;
using infergate::translators::pair_dialects;
using B = infergate::translators::BackendDialect;

TEST_CASE("chat goes to each backend's chat route") {
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::openai).back ==
          Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::anthropic, RequestKind::chat, B::sglang).back ==
          Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::ollama_chat, RequestKind::chat, B::tgi).back ==
          Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::llamacpp).back ==
          Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::ollama).back ==
          Dialect::ollama_chat);
    CHECK(pair_dialects(Dialect::ollama_generate, RequestKind::chat, B::anthropic).back ==
          Dialect::anthropic);
}

TEST_CASE("raw completions go to each backend's raw route") {
    CHECK(pair_dialects(Dialect::sglang, RequestKind::completion, B::openai).back ==
          Dialect::openai_completions);
    CHECK(pair_dialects(Dialect::openai_completions, RequestKind::completion, B::sglang).back ==
          Dialect::sglang);
    CHECK(pair_dialects(Dialect::openai_completions, RequestKind::completion, B::tgi).back ==
          Dialect::tgi);
    CHECK(pair_dialects(Dialect::tgi, RequestKind::completion, B::ollama).back ==
          Dialect::ollama_generate);
    CHECK(pair_dialects(Dialect::tgi, RequestKind::completion, B::llamacpp).back ==
          Dialect::llamacpp);
    CHECK(pair_dialects(Dialect::llamacpp, RequestKind::completion, B::vllm_legacy).back ==
          Dialect::vllm_legacy);
}

TEST_CASE("only OpenAI and SGLang in front of themselves take the byte fast path") {
    CHECK(pair_dialects(Dialect::openai_completions, RequestKind::completion, B::openai).fast_path);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::openai).fast_path);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::sglang).fast_path);
    CHECK(pair_dialects(Dialect::sglang, RequestKind::completion, B::sglang).fast_path);
    CHECK_FALSE(pair_dialects(Dialect::tgi, RequestKind::completion, B::tgi).fast_path);
    CHECK_FALSE(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::tgi).fast_path);
    CHECK_FALSE(pair_dialects(Dialect::ollama_chat, RequestKind::chat, B::ollama).fast_path);
    CHECK_FALSE(pair_dialects(Dialect::anthropic, RequestKind::chat, B::anthropic).fast_path);
    CHECK_FALSE(
        pair_dialects(Dialect::openai_completions, RequestKind::completion, B::sglang).fast_path);
}

TEST_CASE("pairs with no faithful translation are refused with the way out") {
    auto chat = pair_dialects(Dialect::openai_chat, RequestKind::chat, B::vllm_legacy);
    REQUIRE(chat.refusal);
    CHECK(chat.refusal->status == 400);
    CHECK(chat.refusal->message.find("no chat route") != std::string::npos);
    CHECK(chat.refusal->message.find("/v1/completions") != std::string::npos);
    auto raw = pair_dialects(Dialect::sglang, RequestKind::completion, B::anthropic);
    REQUIRE(raw.refusal);
    CHECK(raw.refusal->message.find("send a chat request") != std::string::npos);
    CHECK_FALSE(pair_dialects(Dialect::anthropic, RequestKind::chat, B::anthropic).refusal);
    auto n2 = pair_dialects(Dialect::openai_chat, RequestKind::chat, B::tgi, 2);
    REQUIRE(n2.refusal);
    CHECK(n2.refusal->param == "n");
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::llamacpp, 2).refusal);
    CHECK_FALSE(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::openai, 2).refusal);
}

TEST_CASE("the OpenAI layer behind a backend, as the names it reads depend on it") {
    using infergate::translators::Flavor;
    using infergate::translators::openai_flavor;
    // The backend's dialect tells TGI's, llama.cpp's and SGLang's layers apart ...
    CHECK(openai_flavor(B::tgi, Flavor::generic, "h") == Flavor::tgi);
    CHECK(openai_flavor(B::llamacpp, Flavor::generic, "h") == Flavor::llamacpp);
    CHECK(openai_flavor(B::sglang, Flavor::sglang, "h") == Flavor::sglang);
    // ... the probe vLLM from any other, and the host the OpenAI API itself.
    CHECK(openai_flavor(B::openai, Flavor::vllm, "h") == Flavor::vllm);
    CHECK(openai_flavor(B::openai, Flavor::generic, "h") == Flavor::generic);
    CHECK(openai_flavor(B::openai, Flavor::generic, "api.openai.com") == Flavor::openai);
    CHECK(openai_flavor(B::openai, Flavor::generic, "x.openai.azure.com") == Flavor::openai);
    CHECK(openai_flavor(B::openai, Flavor::generic, "openai.azure.com.evil") == Flavor::generic);
}

namespace {

infergate::canonical::GenerationRequest request(RequestKind kind, bool stream, int n = 1) {
    infergate::canonical::GenerationRequest req;
    req.kind = kind;
    req.stream = stream;
    req.sampling.n = n;
    return req;
}

}  // namespace

TEST_CASE("the plan of a fast-path stream: usage asked for on the client's behalf where accepted") {
    using infergate::translators::BackendFacts;
    using infergate::translators::Flavor;
    using infergate::translators::plan_generation;
    auto req = request(RequestKind::chat, true);
    // vLLM: usage and running usage asked for and stripped again.
    auto p = plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::vllm, "h"});
    CHECK(p.fast_path);
    CHECK(p.edit_body);
    CHECK(p.ask_usage);
    CHECK(p.ask_running);
    CHECK_FALSE(p.rewrite_ids);
    CHECK_FALSE(p.gather);
    // A client that asked for them gets them, so nothing is stripped.
    req.include_usage = true;
    req.continuous_usage = true;
    p = plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::vllm, "h"});
    CHECK_FALSE(p.ask_usage);
    CHECK_FALSE(p.ask_running);
    // An unknown OpenAI-compatible server is sent no stream_options; the hosted API is.
    req.include_usage = false;
    p = plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::generic, "h"});
    CHECK_FALSE(p.stream_options);
    CHECK_FALSE(p.ask_usage);
    p = plan_generation(Dialect::openai_chat, req,
                        BackendFacts{B::openai, Flavor::generic, "api.openai.com"});
    CHECK(p.ask_usage);
    CHECK(p.flavor == Flavor::openai);
    // n > 1 on SGLang's OpenAI layer: one id on every chunk.
    p = plan_generation(Dialect::openai_chat, request(RequestKind::chat, true, 2),
                        BackendFacts{B::sglang, Flavor::sglang, "h"});
    CHECK(p.fast_path);
    CHECK(p.rewrite_ids);
    // SGLang's own /generate goes as it is: nothing edited or asked.
    p = plan_generation(Dialect::sglang, request(RequestKind::completion, true, 2),
                        BackendFacts{B::sglang, Flavor::sglang, "h"});
    CHECK(p.fast_path);
    CHECK_FALSE(p.edit_body);
    CHECK_FALSE(p.ask_usage);
    CHECK_FALSE(p.rewrite_ids);
}

TEST_CASE("the plan of a translated generation: gather and stop trimming") {
    using infergate::translators::BackendFacts;
    using infergate::translators::Flavor;
    using infergate::translators::plan_generation;
    // An SGLang batch over OpenAI completions is streamed upstream and gathered (per-item
    // token counts); one prompt with n = 1, or a streamed one, is not.
    auto req = request(RequestKind::completion, false);
    req.prompt_is_list = true;
    auto p = plan_generation(Dialect::sglang, req, BackendFacts{B::openai, Flavor::vllm, "h"});
    CHECK_FALSE(p.fast_path);
    CHECK(p.gather);
    CHECK(plan_generation(Dialect::sglang, request(RequestKind::completion, false, 2),
                          BackendFacts{B::openai, Flavor::vllm, "h"})
              .gather);
    CHECK_FALSE(plan_generation(Dialect::sglang, request(RequestKind::completion, false),
                                BackendFacts{B::openai, Flavor::vllm, "h"})
                    .gather);
    req.stream = true;
    CHECK_FALSE(
        plan_generation(Dialect::sglang, req, BackendFacts{B::openai, Flavor::vllm, "h"}).gather);
    // TGI's OpenAI layer leaves the stop string in the text: trimmed, unless the client keeps it.
    auto chat = request(RequestKind::chat, false);
    chat.sampling.stop = {"END"};
    p = plan_generation(Dialect::anthropic, chat, BackendFacts{B::tgi, Flavor::generic, "h"});
    CHECK(p.back == Dialect::openai_chat);
    CHECK(p.trim_stops);
    CHECK(p.flavor == Flavor::tgi);
    chat.sampling.keep_stop_str = true;
    CHECK_FALSE(
        plan_generation(Dialect::anthropic, chat, BackendFacts{B::tgi, Flavor::generic, "h"})
            .trim_stops);
    // TGI's native route handles it itself, and other backends do not leave it.
    auto raw = request(RequestKind::completion, false);
    raw.sampling.stop = {"END"};
    CHECK_FALSE(plan_generation(Dialect::openai_completions, raw,
                                BackendFacts{B::tgi, Flavor::generic, "h"})
                    .trim_stops);
    chat.sampling.keep_stop_str.reset();
    CHECK_FALSE(
        plan_generation(Dialect::anthropic, chat, BackendFacts{B::openai, Flavor::vllm, "h"})
            .trim_stops);
}

TEST_CASE("a refused pair plans nothing else") {
    using infergate::translators::BackendFacts;
    using infergate::translators::Flavor;
    auto p = infergate::translators::plan_generation(
        Dialect::openai_chat, request(RequestKind::chat, true),
        BackendFacts{B::vllm_legacy, Flavor::generic, "h"});
    REQUIRE(p.refusal);
    CHECK(p.refusal->status == 400);
    CHECK_FALSE(p.ask_usage);
}
