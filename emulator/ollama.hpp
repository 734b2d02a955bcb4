// Pieces shared by the Ollama routes (ollama_api.cpp) and its generation (ollama_generate.cpp,
// ollama_request.cpp).
#pragma once

#include <string>
#include <string_view>

#include "emulator/options.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

inline constexpr std::string_view kOllamaVersion = "0.12.6";
inline constexpr std::string_view kGoJson = "application/json; charset=utf-8";
// The emulator's stand-in for a model's chat template (see docs/emulator.md): non-raw
// /api/generate prompts are wrapped in it, so a raw prompt counts 2 tokens fewer.
inline constexpr std::string_view kOllamaTemplate =
    "{{ if .System }}<|system|> {{ .System }} {{ end }}<|user|> {{ .Prompt }} <|assistant|>";

// "m" is served as "m:latest"; a request may name it either way.
std::string ollama_model_name(const Options& options);
bool ollama_model_matches(const Options& options, std::string_view name);

// {"error": message} with a status, as gin's c.JSON writes it.
net::awaitable<void> send_ollama_error(Conn& conn, int status, std::string_view message);

net::awaitable<void> handle_ollama_generation(Request& req, Conn& conn, const Options& options,
                                              bool chat);

}  // namespace infergate::emulator
