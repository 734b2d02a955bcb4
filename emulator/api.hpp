// The HTTP APIs: one router per dialect, and the OpenAI-style generation routes that both
// dialects serve (vLLM's own, and SGLang's OpenAI layer), each flavour with its own wire shapes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/chat_extras.hpp"
#include "emulator/openai_request.hpp"
#include "emulator/options.hpp"
#include "emulator/replica.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

net::awaitable<void> route_openai(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_sglang(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_tgi(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_ollama(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_llamacpp(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_vllm_legacy(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_anthropic(Request& req, Conn& conn, const Options& options);
net::awaitable<void> route_tei(Request& req, Conn& conn, const Options& options);

inline constexpr std::string_view kTgiVersion = "3.3.6-dev0";

// TGI's and llama.cpp's own OpenAI layers (compat_openai.cpp).
net::awaitable<void> handle_tgi_openai(Request& req, Conn& conn, const Options& options, bool chat);
net::awaitable<void> handle_llamacpp_openai(Request& req, Conn& conn, const Options& options,
                                            bool chat);

// POST /v1/completions and /v1/chat/completions.
net::awaitable<void> handle_oai_generation(Request& req, Conn& conn, const Options& options,
                                           OaiFlavor flavor, bool chat);

// FastAPI's defaults, the same in both dialects.
net::awaitable<void> send_not_found(Conn& conn);
net::awaitable<void> send_method_not_allowed(Conn& conn);

// Runs the deterministic generator for every (prompt, choice): index = prompt_i * n + j.
std::vector<ChoiceState> generate_choices(const std::vector<PromptKey>& prompts, int n, int budget,
                                          const StopRules& rules);

// What a response needs besides the choices.
struct OaiContext {
    const OaiRequest& req;
    std::string id;
    std::int64_t created = 0;
    int prompt_tokens = 0;      // counted once per prompt, not per choice
    int completion_tokens = 0;  // summed over choices
    // Chat: tool calls, reasoning or a set text (chat_extras.hpp); null or empty for the rest.
    const ChatPlan* plan = nullptr;

    bool extras() const { return plan != nullptr && plan->any(); }
    bool calls() const { return plan != nullptr && !plan->calls.empty(); }
};

// vLLM's OpenAI server wire format (vllm_wire.cpp).
std::unique_ptr<EventEncoder> make_vllm_encoder(const OaiContext& ctx);
void render_vllm_response(const OaiContext& ctx, const std::vector<ChoiceState>& choices,
                          std::string& body);
void render_vllm_error(const OaiError& error, std::string& body);
const ErrorStyle& vllm_errors();

// SGLang's OpenAI layer wire format (sglang_openai_wire.cpp).
std::unique_ptr<EventEncoder> make_sglang_oai_encoder(const OaiContext& ctx);
void render_sglang_oai_response(const OaiContext& ctx, const std::vector<ChoiceState>& choices,
                                std::string& body);
void render_sglang_oai_error(const OaiError& error, std::string& body);
// The same error as a complete in-band SSE event (SGLang chat streams validate inside the stream).
void render_sglang_oai_error_event(const OaiError& error, std::string& event);
const ErrorStyle& sglang_oai_errors();

// Helpers shared by the wire files.
std::int64_t unix_now();
// "length" for the budget, "stop" for EOS, stop strings and stop tokens.
std::string_view finish_reason_name(const Output& out);

}  // namespace infergate::emulator
