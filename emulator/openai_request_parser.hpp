// The parser behind parse_oai_request: one object per request body, its steps split by concern
// (openai_request.cpp: order, types, stop, sampling, budget; openai_request_logprobs.cpp: the
// logprob fields; openai_request_prompt.cpp: prompts and chat messages).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "emulator/openai_request.hpp"

namespace infergate::emulator {

class OaiParser {
public:
    OaiParser(const rapidjson::Value& doc, bool chat, OaiFlavor flavor, const Options& options,
              OaiRequest& out)
        : doc_(doc),
          chat_(chat),
          vllm_(flavor == OaiFlavor::kVllm),
          flavor_(flavor),
          options_(options),
          out_(out) {}

    std::optional<OaiError> run();

private:
    // pydantic's wording, shortened: "1 validation error for X\nfield\n  message".
    OaiError framework(std::string_view loc, std::string_view message) const {
        std::string text = "1 validation error for ";
        text += chat_ ? "ChatCompletionRequest\n" : "CompletionRequest\n";
        if (!loc.empty()) {  // model validators have no field location
            text += loc;
            text += '\n';
        }
        text += "  ";
        text += message;
        return {400, std::move(text), true};
    }
    static OaiError serving(std::string message) { return {400, std::move(message), false}; }

    std::optional<OaiError> parse_types();
    std::optional<OaiError> parse_prompt();
    std::optional<OaiError> parse_messages();
    std::optional<OaiError> parse_stop();
    std::optional<OaiError> parse_format();
    std::optional<OaiError> parse_logprobs();
    std::optional<OaiError> lax_int(std::string_view name, std::optional<int>& out) const;
    void add_prompt_detail(std::string text, std::vector<PromptToken> tokens);
    std::optional<OaiError> validate_sampling();
    std::optional<OaiError> resolve_budget();

    const rapidjson::Value& doc_;
    bool chat_;
    bool vllm_;
    OaiFlavor flavor_;
    const Options& options_;
    OaiRequest& out_;

    std::optional<std::int64_t> max_tokens_;
    std::optional<double> temperature_;
    std::optional<double> top_p_;
    std::int64_t n_ = 1;
    bool want_prompt_tokens_ = false;
    std::optional<std::string> format_invalid_;  // reported after the engine's other checks
};

}  // namespace infergate::emulator
