#include <doctest/doctest.h>

#include "proxy/pairing.hpp"

using infergate::pair_dialects;
using infergate::canonical::Dialect;
using infergate::canonical::RequestKind;
using B = infergate::config::BackendDialect;

TEST_CASE("chat goes to each backend's chat route") {
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::openai).back == Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::anthropic, RequestKind::chat, B::sglang).back == Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::ollama_chat, RequestKind::chat, B::tgi).back == Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::llamacpp).back == Dialect::openai_chat);
    CHECK(pair_dialects(Dialect::openai_chat, RequestKind::chat, B::ollama).back == Dialect::ollama_chat);
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
    CHECK(pair_dialects(Dialect::tgi, RequestKind::completion, B::llamacpp).back == Dialect::llamacpp);
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
    CHECK_FALSE(pair_dialects(Dialect::openai_completions, RequestKind::completion, B::sglang).fast_path);
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
    using infergate::openai_flavor;
    using infergate::translators::Flavor;
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
