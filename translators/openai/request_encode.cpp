// Upstream side: the canonical request to a body for an OpenAI-compatible backend (OpenAI,
// vLLM, SGLang's OpenAI layer, ...), with every client-dialect default made explicit.

#include <algorithm>
#include <type_traits>
#include <utility>

#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/output_format.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/request_codec.hpp"

namespace infergate::translators::openai {

using canonical::bad_request;
using canonical::ChatMessage;
using canonical::Prompt;
using canonical::RequestKind;
using canonical::SamplingParams;

namespace {

void write_token_ids(json::Writer& w, const std::vector<int64_t>& ids) {
    w.StartArray();
    for (const int64_t id : ids) {
        w.Int64(id);
    }
    w.EndArray();
}

std::optional<canonical::Error> write_prompt(json::Writer& w, const GenerationRequest& req) {
    if (req.prompts.empty()) {
        return bad_request("the request has no prompt to send; send a prompt", "prompt");
    }
    const bool tokens = req.prompts.front().is_tokens;
    for (const Prompt& p : req.prompts) {
        if (p.is_tokens != tokens) {
            return bad_request(
                "a batch that mixes text and token-id prompts cannot be sent to an "
                "OpenAI completions backend; send all text or all token ids",
                "prompt");
        }
    }
    json::key(w, "prompt");
    const bool list = req.prompt_is_list || req.prompts.size() > 1;
    if (!list) {
        if (tokens) {
            write_token_ids(w, req.prompts.front().token_ids);
        } else {
            json::string(w, req.prompts.front().text);
        }
        return std::nullopt;
    }
    w.StartArray();
    for (const Prompt& p : req.prompts) {
        if (tokens) {
            write_token_ids(w, p.token_ids);
        } else {
            json::string(w, p.text);
        }
    }
    w.EndArray();
    return std::nullopt;
}

// A message's text and images as content parts, each image where it came in the text: text
// parts between them, image_url parts with the URL or a data URL.
void write_parts(json::Writer& w, const ChatMessage& m) {
    w.StartArray();
    canonical::for_each_part(
        m,
        [&](std::string_view text) {
            w.StartObject();
            json::key(w, "type");
            json::string(w, "text");
            json::key(w, "text");
            json::string(w, text);
            w.EndObject();
        },
        [&](const canonical::Image& image) {
            w.StartObject();
            json::key(w, "type");
            json::string(w, "image_url");
            json::key(w, "image_url");
            w.StartObject();
            json::key(w, "url");
            if (!image.url.empty()) {
                json::string(w, image.url);
            } else {
                json::string(w, "data:" + image.media_type + ";base64," + image.data);
            }
            w.EndObject();
            w.EndObject();
        });
    w.EndArray();
}

// Another family's structured output as the member this flavor's engine reads: OpenAI's
// response_format, TGI's GrammarType in response_format, llama.cpp's json_schema (its chat
// route reads it on every version; the pinned c392e509 loses a response_format json_schema to
// a shadowed variable), vLLM's structured_outputs.regex, SGLang's regex. `key` empty: none.
struct FormatMember {
    std::string_view key;
    std::string json;
};

Result<FormatMember> format_member(const canonical::OutputFormat& f, Flavor flavor) {
    using Kind = canonical::OutputFormat::Kind;
    const std::string_view backend = backend_name(flavor);
    switch (f.kind) {
        case Kind::none:
            return FormatMember{};
        case Kind::json_object:
            if (flavor == Flavor::tgi) {
                return canonical::unsupported_format(
                    f, backend,
                    "TGI's grammar takes only a JSON schema with properties; send a schema");
            }
            if (flavor == Flavor::llamacpp) {
                return FormatMember{"json_schema", std::string(canonical::kAnyObjectSchema)};
            }
            return FormatMember{"response_format", canonical::openai_response_format(f)};
        case Kind::json_schema:
            if (flavor == Flavor::tgi) {
                return FormatMember{"response_format", canonical::tgi_grammar(f)};
            }
            if (flavor == Flavor::llamacpp) {
                return FormatMember{"json_schema", f.schema};
            }
            return FormatMember{"response_format", canonical::openai_response_format(f)};
        case Kind::regex:
            break;
    }
    if (flavor == Flavor::tgi) {
        return FormatMember{"response_format", canonical::tgi_grammar(f)};
    }
    if (flavor != Flavor::vllm && flavor != Flavor::sglang) {
        return canonical::unsupported_format(
            f, backend,
            "its OpenAI-compatible API has no regular-expression constraint (vLLM, SGLang and "
            "TGI have one); send a JSON schema, or use such a backend");
    }
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    if (flavor == Flavor::vllm) {
        w.StartObject();
        json::key(w, "regex");
        json::string(w, f.regex);
        w.EndObject();
        return FormatMember{"structured_outputs", std::move(out)};
    }
    json::string(w, f.regex);
    return FormatMember{"regex", std::move(out)};
}

void write_messages(json::Writer& w, const GenerationRequest& req) {
    json::key(w, "messages");
    w.StartArray();
    for (const ChatMessage& m : req.messages) {
        w.StartObject();
        json::key(w, "role");
        json::string(w, m.role);
        json::key(w, "content");
        if (!m.parts_json.empty()) {
            json::write_raw(w, m.parts_json);  // an OpenAI client's parts, images included
        } else if (!m.images.empty()) {
            write_parts(w, m);  // another dialect's images, where they came among the text
        } else if (m.content.empty() && !m.tool_calls.empty()) {
            w.Null();  // an assistant turn that only calls tools, as OpenAI writes it
        } else {
            json::string(w, m.content);
        }
        if (!m.name.empty()) {
            json::key(w, "name");
            json::string(w, m.name);
        }
        if (!m.tool_calls.empty()) {
            write_tool_calls(w, m.tool_calls, {});
        }
        if (!m.tool_call_id.empty()) {
            json::key(w, "tool_call_id");
            json::string(w, m.tool_call_id);
        }
        if (!m.reasoning.empty()) {
            // vLLM's and SGLang's name for it (their chat templates read it where the model's
            // does); refused for OpenAI's own API by check_reasoning.
            json::key(w, "reasoning_content");
            json::string(w, m.reasoning);
        }
        if (req.dialect == canonical::Dialect::openai_chat) {
            for (const canonical::Extra& extra : m.extras) {  // the client's own, as it sent them
                json::key(w, extra.key);
                json::write_raw(w, extra.json);
            }
        }
        w.EndObject();
    }
    w.EndArray();
}

void write_logit_bias(json::Writer& w, const std::vector<canonical::LogitBias>& biases,
                      Flavor flavor) {
    if (biases.empty()) {
        return;
    }
    json::key(w, "logit_bias");
    if (flavor == Flavor::llamacpp) {
        // llama-server reads only its own [[id, bias], ...] form (server.cpp params_from_json,
        // up to 2026); OpenAI's object would be ignored.
        w.StartArray();
        for (const canonical::LogitBias& b : biases) {
            w.StartArray();
            w.Int64(b.token);
            w.Double(b.bias);
            w.EndArray();
        }
        w.EndArray();
        return;
    }
    w.StartObject();
    for (const canonical::LogitBias& b : biases) {
        const std::string id = std::to_string(b.token);
        json::key(w, id);
        w.Double(b.bias);
    }
    w.EndObject();
}

void write_sampling(json::Writer& w, const SamplingParams& s, const GenerationRequest& req,
                    const UpstreamOptions& options, Api api) {
    const Flavor flavor = options.flavor;
    // Always explicit: a backend's own default differs from what the client's dialect promised
    // (an OpenAI completions client that omits max_tokens expects 16 tokens, not "until EOS").
    // Chat: `max_tokens` is the name every OpenAI-compatible server reads (vLLM and SGLang read
    // both, TGI takes max_completion_tokens only as an alias in recent releases and refuses the
    // two together, llama-server before 2026 reads max_tokens only); the OpenAI API itself
    // wants max_completion_tokens (its reasoning models refuse max_tokens).
    const std::optional<int64_t> max_tokens = effective_max_tokens(s, req.dialect);
    if (max_tokens) {
        const bool new_name = api == Api::chat && flavor == Flavor::openai;
        json::key(w, new_name ? "max_completion_tokens" : "max_tokens");
        w.Int64(*max_tokens);
    } else if (api == Api::completions) {
        // The client's dialect means "until EOS or the end of the context" (Ollama, llama.cpp,
        // TGI): null says so to vLLM; left out, /v1/completions would stop after 16 tokens.
        json::key(w, "max_tokens");
        w.Null();
    }
    json::write_optional(w, "temperature", s.temperature);
    if (flavor != Flavor::tgi || s.top_p.value_or(0) < 1) {
        json::write_optional(w, "top_p", s.top_p);  // TGI refuses 1, which means off
    }
    if (s.n != 1) {
        json::key(w, "n");
        w.Int(s.n);
    }
    if (!s.stop.empty()) {
        json::key(w, "stop");
        w.StartArray();
        for (const std::string& stop : s.stop) {
            json::string(w, stop);
        }
        w.EndArray();
    }
    json::write_optional(w, "seed", s.seed);
    if (flavor == Flavor::tgi) {
        // TGI's repetition penalty, spelled the only way its chat route reads one (see
        // check_settings); 1 is no penalty, TGI's default.
        if (s.repetition_penalty.value_or(1.0) != 1.0) {
            json::key(w, "presence_penalty");
            w.Double(*s.repetition_penalty - 2.0);
        }
    } else {
        json::write_optional(w, "presence_penalty", s.presence_penalty);
    }
    json::write_optional(w, "frequency_penalty", s.frequency_penalty);
    write_logit_bias(w, s.logit_bias, flavor);
    // The prompt is never asked back for its text (the client's encoder echoes it from the
    // request): only as the way to get its logprobs, `echo` with `logprobs` (vLLM sets
    // prompt_logprobs = logprobs then; SGLang's OpenAI layer logprob_start_len = 0). The decoder
    // strips it again.
    if (api == Api::completions && canonical::wants_prompt_logprobs(req)) {
        json::key(w, "echo");
        w.Bool(true);
    }
    if (logprobs_sent(req, flavor, api)) {
        // llama.cpp reads either number as n_probs, and reports nothing at all with 0: ask for
        // one alternative, which the client's encoder leaves out again.
        const size_t top = flavor == Flavor::llamacpp
                               ? std::max<size_t>(1, canonical::top_count(req))
                               : canonical::top_count(req);
        json::key(w, "logprobs");
        if (api == Api::completions) {
            w.Uint64(top);
        } else {
            w.Bool(true);
            if (top > 0) {
                json::key(w, "top_logprobs");
                w.Uint64(top);
            }
        }
    }
    if (flavor == Flavor::tgi) {
        return;  // check_settings refused everything else TGI's chat route would ignore
    }
    if (flavor == Flavor::llamacpp) {
        // llama.cpp's own names, which its chat route reads as /completion does.
        json::write_optional(w, "top_k", s.top_k);
        json::write_optional(w, "min_p", s.min_p);
        json::write_optional(w, "repeat_penalty", s.repetition_penalty);
        json::write_optional(w, "typical_p", s.typical_p);
        json::write_optional(w, "repeat_last_n", s.repeat_last_n);
        json::write_optional(w, "ignore_eos", s.ignore_eos);
        return;
    }
    json::write_optional(w, "top_k", s.top_k);
    json::write_optional(w, "min_p", s.min_p);
    json::write_optional(w, "repetition_penalty", s.repetition_penalty);
    json::write_optional(w, "ignore_eos", s.ignore_eos);
    json::write_optional(w, "min_tokens", s.min_tokens);
    if (!s.stop_token_ids.empty()) {
        json::key(w, "stop_token_ids");
        write_token_ids(w, s.stop_token_ids);
    }
    json::write_optional(w, "skip_special_tokens", s.skip_special_tokens);
    // SGLang's OpenAI layer spells vLLM's include_stop_str_in_output `no_stop_trim`.
    json::write_optional(w,
                         flavor == Flavor::sglang ? "no_stop_trim" : "include_stop_str_in_output",
                         s.keep_stop_str);
}

}  // namespace

Result<std::string> encode_request(const GenerationRequest& req, const UpstreamOptions& options,
                                   Api api) {
    if (api == Api::completions && req.kind == RequestKind::chat) {
        return bad_request(
            "a chat request cannot be sent to a completions backend route "
            "(/v1/completions): the chat template would not be applied; route chat "
            "requests to a chat backend (/v1/chat/completions)",
            "messages");
    }
    if (api == Api::chat && req.kind == RequestKind::completion) {
        return bad_request(
            "a raw prompt cannot be sent to a chat route faithfully: the backend "
            "(/v1/chat/completions) would wrap it in a user turn and apply the "
            "chat template; route raw-prompt requests to a completions backend",
            "prompt");
    }
    if (api == Api::chat && req.dialect != canonical::Dialect::openai_chat) {
        if (req.untranslated_parts) {
            return bad_request(
                "messages with non-text content parts other than images (audio, files, "
                "documents) cannot be translated to another dialect; send text and images",
                "messages");
        }
        for (size_t i = 0; i < req.messages.size(); ++i) {
            for (size_t j = 0; j < req.messages[i].images.size(); ++j) {
                const canonical::Image& image = req.messages[i].images[j];
                if (image.url.empty() && image.media_type.empty()) {
                    const std::string param =
                        "messages[" + std::to_string(i) + "].images[" + std::to_string(j) + "]";
                    return bad_request("'" + param +
                                           "' is not a PNG, JPEG, GIF or WebP image, the kinds "
                                           "an OpenAI-compatible vision model takes",
                                       param);
                }
            }
        }
    }
    const SamplingParams* sampling = shared_sampling(req);
    if (sampling == nullptr) {
        return bad_request(
            "per-item sampling_params differ; an OpenAI backend takes one set per "
            "request — send one sampling_params object",
            "sampling_params");
    }
    if (auto err = check_settings(*sampling, options.flavor, req.dialect)) {
        return std::move(*err);
    }
    if (auto err = check_logprobs(req, options.flavor, api)) {
        return std::move(*err);
    }
    if (options.flavor == Flavor::openai) {
        for (size_t i = 0; i < req.messages.size(); ++i) {
            if (!req.messages[i].reasoning.empty()) {
                const std::string param =
                    "messages[" + std::to_string(i) + "]." +
                    (req.dialect == canonical::Dialect::ollama_chat ? "thinking"
                                                                    : "reasoning_content");
                return bad_request("'" + param +
                                       "' (an assistant turn's reasoning) has no place in "
                                       "OpenAI's API, which takes no reasoning back; send the "
                                       "history without it",
                                   param);
            }
        }
    }
    const bool openai_client = req.dialect == canonical::Dialect::openai_completions ||
                               req.dialect == canonical::Dialect::openai_chat;
    // Another family's function tools: an Ollama client's are OpenAI's own shape, an Anthropic
    // client's are converted (and its tool_choice).
    canonical::FunctionTools tools;
    FormatMember format;
    if (!openai_client) {
        const bool ollama_client = req.dialect == canonical::Dialect::ollama_chat;
        const bool anthropic_client = req.dialect == canonical::Dialect::anthropic;
        std::optional<canonical::Error> refused;
        if (ollama_client) {
            refused = canonical::refuse_foreign_extras(req, backend_name(options.flavor), {"tools"},
                                                       true);
        } else if (anthropic_client) {
            refused = canonical::refuse_foreign_extras(req, backend_name(options.flavor),
                                                       {"tools", "tool_choice"}, true);
        } else {
            refused = canonical::refuse_foreign_extras(req, backend_name(options.flavor), {}, true);
        }
        if (refused) {
            return std::move(*refused);
        }
        if (ollama_client || anthropic_client) {
            auto got = canonical::function_tools(req, backend_name(options.flavor));
            if (!got) {
                return got.error();
            }
            tools = std::move(got.value());
        }
    }

    // Another family's structured output, and an OpenAI client's for TGI's chat route, which
    // reads response_format only as its GrammarType ({"type": "json" | "regex", "value"}): an
    // OpenAI client's json_schema is TGI's 422 as it is, and so is {"type": "text"}, which
    // means none.
    // llama.cpp's chat route ignores a response_format json_schema (a shadowed variable in
    // oaicompat_completion_params_parse at c392e509): its own json_schema goes beside it, as the
    // fast path adds it, unless the client wrote that member itself.
    const bool llamacpp_schema =
        openai_client && options.flavor == Flavor::llamacpp &&
        std::none_of(req.extras.begin(), req.extras.end(),
                     [](const canonical::Extra& e) { return e.key == "json_schema"; });
    if ((!openai_client || options.flavor == Flavor::tgi || llamacpp_schema) &&
        canonical::asks_output_format(req)) {
        auto fmt = canonical::output_format(req);
        if (!fmt) {
            return fmt.error();
        }
        // llama.cpp: a JSON schema or object only; anything else goes as the client wrote it,
        // as on the fast path.
        const bool json_kind = fmt->kind == canonical::OutputFormat::Kind::json_schema ||
                               fmt->kind == canonical::OutputFormat::Kind::json_object;
        if (!(openai_client && options.flavor == Flavor::llamacpp && !json_kind)) {
            auto member = format_member(*fmt, options.flavor);
            if (!member) {
                return member.error();
            }
            format = std::move(member.value());
        }
    }
    std::string body;
    body.reserve(256 + (req.prompts.empty() ? 0 : req.prompts.front().text.size()) +
                 (req.messages.empty() ? 0 : req.messages.back().content.size()));
    json::StringOut os{&body};
    json::Writer w(os);
    w.StartObject();
    const std::string& model = options.model.empty() ? req.model : options.model;
    if (!model.empty()) {
        json::key(w, "model");
        json::string(w, model);
    }
    if (api == Api::completions) {
        if (auto err = write_prompt(w, req)) {
            return std::move(*err);
        }
    } else {
        write_messages(w, req);
    }
    // reasoning_effort to TGI, which has no reasoning at all: it would ignore the field, so a 400
    // instead, unless it asks for none.
    const canonical::Extra* effort =
        openai_client ? canonical::find_extra(req, "reasoning_effort") : nullptr;
    if (effort != nullptr && (effort->json == "null" || effort->json == "\"none\"") &&
        options.flavor == Flavor::tgi) {
        effort = nullptr;
    }
    if (effort != nullptr && options.flavor == Flavor::tgi) {
        return canonical::bad_request(
            "'reasoning_effort' cannot be carried to a TGI backend: TGI has no thinking switch "
            "(its chat API ignores the field); remove it, or send \"none\"",
            "reasoning_effort");
    }
    write_sampling(w, *sampling, req, options, api);
    // Unknown keys only survive to a backend of the family they were written for.
    if (openai_client) {
        for (const canonical::Extra& extra : req.extras) {
            if (options.flavor == Flavor::tgi &&
                (extra.key == "response_format" || extra.key == "reasoning_effort")) {
                continue;  // in TGI's own shape: below; or "none", which TGI always is
            }
            json::key(w, extra.key);
            json::write_raw(w, extra.json);
        }
    } else if (!tools.tools.empty()) {
        json::key(w, "tools");  // checked above
        json::write_raw(w, tools.tools);
        if (!tools.tool_choice.empty()) {
            json::key(w, "tool_choice");
            json::write_raw(w, tools.tool_choice);
        }
        if (tools.one_call_at_a_time) {
            json::key(w, "parallel_tool_calls");
            w.Bool(false);
        }
    }
    if (!format.key.empty()) {
        json::key(w, format.key);
        json::write_raw(w, format.json);
    }
    if (options.stream) {
        // Ask for usage where the backend accepts it: metrics need the backend's own counts, and
        // the client-side encoder drops the usage chunk again when the client did not ask for
        // it. Never send stream_options without streaming: vLLM answers 400.
        json::key(w, "stream");
        w.Bool(true);
        if (options.stream_usage) {
            json::key(w, "stream_options");
            w.StartObject();
            json::key(w, "include_usage");
            w.Bool(true);
            if (has_running_usage(options.flavor)) {
                json::key(w, "continuous_usage_stats");
                w.Bool(true);
            }
            w.EndObject();
        }
    }
    w.EndObject();
    return body;
}

}  // namespace infergate::translators::openai
