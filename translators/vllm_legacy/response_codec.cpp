// vLLM legacy whole responses and errors: {"text": [prompt + output, ...]} (api-dialects §3.2),
// plus the codec instance and the shared wire helpers.

#include <string>
#include <string_view>

#include "translators/canonical/json.hpp"
#include "translators/vllm_legacy/codec.hpp"
#include "translators/vllm_legacy/codec_impl.hpp"

namespace infergate::translators::vllm_legacy {

using canonical::Choice;
using canonical::FinishKind;

const Codec& codec() {
    static const VllmLegacyCodec instance;
    return instance;
}

void set_stream_prompt(StreamState& state, std::string_view prompt) {
    state.prompt.assign(prompt.data(), prompt.size());
}

const std::string& stream_prompt(const StreamState& state) { return state.prompt; }

namespace wire {

void joined_string(json::Writer& w, std::string_view prefix, std::string_view rest) {
    std::string joined;
    joined.reserve(prefix.size() + rest.size());
    joined.append(prefix).append(rest);
    string(w, joined);
}

bool is_passthrough_key(std::string_view key) {
    // SamplingParams fields of vLLM 0.2–0.11 with no canonical counterpart. They only matter to
    // a vLLM-legacy backend, and none changes the shape of its answer (text only).
    static constexpr std::string_view kKeys[] = {
        "logprobs", "prompt_logprobs", "use_beam_search", "best_of", "length_penalty",
        "early_stopping", "detokenize", "spaces_between_special_tokens",
        "truncate_prompt_tokens", "bad_words", "logit_bias", "allowed_token_ids",
        "guided_decoding", "structured_outputs", "output_kind", "flat_logprobs",
        "extra_args",
    };
    for (std::string_view k : kKeys) {
        if (k == key) {
            return true;
        }
    }
    return false;
}

canonical::Error upstream_error(std::string message) {
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

}  // namespace wire

void VllmLegacyCodec::encode_response(const GenerationResult& result,
                                      const GenerationRequest& req, std::string& out) const {
    // The real server echoes the prompt in front of every output and says nothing else: no
    // finish reason, no counts, no ids.
    const std::string_view prompt =
        req.prompts.empty() ? std::string_view() : std::string_view(req.prompts[0].text);
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "text");
    w.StartArray();
    for (const Choice& c : result.choices) {
        wire::joined_string(w, prompt, c.text);
    }
    w.EndArray();
    w.EndObject();
}

void VllmLegacyCodec::encode_error(const Error& error, std::string& out) const {
    // The real server answers errors with a plain-text 500 ("Internal Server Error"). We send a
    // small JSON object instead: clients of this demo server do not parse errors at all (they
    // check the status), and {"error": "..."} is the shape every generic client and log reader
    // understands, with the message naming the field. The status travels in the HTTP status.
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "error");
    wire::string(w, error.message);
    w.EndObject();
}

Result<GenerationResult> VllmLegacyCodec::decode_response(std::string_view body,
                                                          const GenerationRequest& req) const {
    json::Document doc;
    if (auto err = json::parse(body, doc, "the vLLM legacy response")) {
        return wire::upstream_error("the vLLM legacy backend sent a malformed response: " +
                                    err->message);
    }
    if (!doc.IsObject()) {
        return wire::upstream_error("the vLLM legacy backend sent " +
                                    std::string(json::type_name(doc)) +
                                    ", not an object with a 'text' list");
    }
    const json::Value* text = json::find(doc, "text");
    if (text == nullptr || !text->IsArray()) {
        return wire::upstream_error(
            "the vLLM legacy backend's response has no 'text' list (is the backend really "
            "vLLM's demo api_server?)");
    }
    if (text->Empty()) {
        return wire::upstream_error("the vLLM legacy backend's response has an empty 'text' list");
    }
    if (text->Size() > static_cast<rapidjson::SizeType>(wire::kMaxChoices)) {
        return wire::upstream_error("the vLLM legacy backend's response has " +
                                    std::to_string(text->Size()) + " outputs, more than " +
                                    std::to_string(wire::kMaxChoices));
    }
    const std::string_view prompt =
        req.prompts.empty() ? std::string_view() : std::string_view(req.prompts[0].text);
    GenerationResult result;
    int index = 0;
    for (const json::Value& t : text->GetArray()) {
        if (!t.IsString()) {
            return wire::upstream_error("the vLLM legacy backend's text[" +
                                        std::to_string(index) + "] is " +
                                        std::string(json::type_name(t)) + ", not a string");
        }
        const std::string_view s = json::view(t);
        if (s.substr(0, prompt.size()) != prompt) {
            return wire::upstream_error("the vLLM legacy backend's text[" +
                                        std::to_string(index) +
                                        "] does not start with the prompt it was sent");
        }
        Choice c;
        c.index = index++;
        c.text = std::string(s.substr(prompt.size()));
        // The dialect reports no finish reason: FinishKind::none is the honest answer, and
        // client encoders must cope (write null / their "unknown").
        c.finish.kind = FinishKind::none;
        result.choices.push_back(std::move(c));
    }
    // No usage: the legacy server reports no counts (api-dialects §10.11), so it stays empty.
    return result;
}

}  // namespace infergate::translators::vllm_legacy
