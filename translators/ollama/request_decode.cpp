// Client side: an Ollama /api/generate or /api/chat body to the canonical request.

#include <algorithm>
#include <iterator>
#include <utility>

#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

using canonical::bad_request;
using canonical::ChatMessage;
using canonical::RequestKind;

namespace {

using OptErr = std::optional<canonical::Error>;

// Top-level keys read into canonical fields; every other key is kept as an Extra so that it
// survives a pass-through to an Ollama backend (format, keep_alive, think, tools, ...).
bool is_known_key(std::string_view key, Api api) {
    if (key == "model" || key == "stream" || key == "options" || key == "logprobs" ||
        key == "top_logprobs") {
        return true;
    }
    if (api == Api::generate) {
        return key == "prompt" || key == "system" || key == "raw";
    }
    return key == "messages";
}

// Top-level keys Ollama reads that change the text it generates (api/types.go, GenerateRequest
// and ChatRequest); any other key it ignores. keep_alive (how long the model stays loaded),
// truncate and shift (what happens when the context overflows) change nothing in the text;
// images are refused through non_text_content, logprobs and top_logprobs are canonical.
// clang-format off
constexpr std::string_view kMeaningful[] = {"suffix", "template", "context", "format", "think",
                                            "tools", "_debug_render_only"};
constexpr canonical::InertRule kInert[] = {
    {"suffix", "\"\""}, {"template", "\"\""}, {"context", "[]"}, {"format", "\"\""},
    {"tools", "[]"}, {"_debug_render_only", "false"}};
// clang-format on

bool is_inert_extra(std::string_view key, std::string_view json) {
    if (std::find(std::begin(kMeaningful), std::end(kMeaningful), key) == std::end(kMeaningful)) {
        return true;
    }
    return canonical::is_inert(key, json, kInert);
}

OptErr read_stop(const json::Value& options, canonical::SamplingParams& s) {
    const json::Value* stop = json::find(options, "stop");
    if (stop == nullptr || stop->IsNull()) {
        return std::nullopt;
    }
    if (stop->IsString()) {  // Ollama's Go type is []string; a lone string is harmless to take
        s.stop.emplace_back(json::view(*stop));
        return std::nullopt;
    }
    if (!stop->IsArray()) {
        return bad_request("'options.stop' must be an array of strings, got " +
                               std::string(json::type_name(*stop)),
                           "options.stop");
    }
    for (rapidjson::SizeType i = 0; i < stop->Size(); ++i) {
        if (!(*stop)[i].IsString()) {
            const std::string path = "options.stop[" + std::to_string(i) + "]";
            return bad_request(
                "'" + path + "' must be a string, got " + std::string(json::type_name((*stop)[i])),
                path);
        }
        s.stop.emplace_back(json::view((*stop)[i]));
    }
    return std::nullopt;
}

OptErr read_options(const json::Value& doc, GenerationRequest& req) {
    const json::Value* options = json::find(doc, "options");
    if (options == nullptr || options->IsNull()) {
        return std::nullopt;
    }
    if (!options->IsObject()) {
        return bad_request(
            "'options' must be an object, got " + std::string(json::type_name(*options)),
            "options");
    }
    canonical::SamplingParams& s = req.sampling;
    OptErr err;
    // -1 is unlimited and -2 "fill the context": both mean no budget of our own.
    if (auto n = json::get_int(*options, "num_predict", "options.num_predict", err, -2)) {
        if (*n >= 0) {
            s.max_tokens = *n;
        }
    }
    s.temperature = json::get_number(*options, "temperature", "options.temperature", err, 0.0);
    s.top_p = json::get_number(*options, "top_p", "options.top_p", err, 0.0, 1.0);
    s.top_k = json::get_int(*options, "top_k", "options.top_k", err);
    s.min_p = json::get_number(*options, "min_p", "options.min_p", err, 0.0, 1.0);
    // A negative seed is Ollama's "random" (its default is -1): no seed of our own.
    s.seed = json::get_int(*options, "seed", "options.seed", err);
    if (s.seed && *s.seed < 0) {
        s.seed.reset();
    }
    s.typical_p = json::get_number(*options, "typical_p", "options.typical_p", err);
    s.repeat_last_n = json::get_int(*options, "repeat_last_n", "options.repeat_last_n", err, -1);
    s.repetition_penalty =
        json::get_number(*options, "repeat_penalty", "options.repeat_penalty", err);
    s.presence_penalty =
        json::get_number(*options, "presence_penalty", "options.presence_penalty", err);
    s.frequency_penalty =
        json::get_number(*options, "frequency_penalty", "options.frequency_penalty", err);
    if (err) {
        return err;
    }
    if (auto e = read_stop(*options, s)) {
        return e;
    }
    for (auto it = options->MemberBegin(); it != options->MemberEnd(); ++it) {
        const std::string_view key = json::view(it->name);
        if (key == "num_predict" || key == "temperature" || key == "top_p" || key == "top_k" ||
            key == "min_p" || key == "seed" || key == "repeat_penalty" ||
            key == "presence_penalty" || key == "frequency_penalty" || key == "stop" ||
            key == "typical_p" || key == "repeat_last_n") {
            continue;
        }
        // What is left: the runner's settings (num_ctx, num_batch, num_gpu, main_gpu, use_mmap,
        // num_thread, draft_num_predict: how the model is loaded, not how it samples) and
        // num_keep (what a context shift keeps), which other engines fix at start-up; and keys
        // Ollama ignores ("invalid option provided": mirostat, tfs_z, penalize_newline, ... are
        // gone from its Options). Only an Ollama backend gets them; all are inert.
        req.sampling_extras.push_back({std::string(key), json::to_string(it->value), true});
    }
    return std::nullopt;
}

canonical::Error load_request_error(std::string_view field) {
    return bad_request(
        "an empty " + std::string(field) +
            " asks Ollama to load or unload a model; infergate does not load models, it "
            "only forwards generations — send a non-empty " +
            std::string(field),
        std::string(field));
}

OptErr read_generate(const json::Value& doc, GenerationRequest& req) {
    OptErr err;
    const std::optional<std::string> prompt = json::get_string(doc, "prompt", "prompt", err);
    const std::optional<std::string> system = json::get_string(doc, "system", "system", err);
    const bool raw = json::get_bool(doc, "raw", "raw", err).value_or(false);
    if (err) {
        return err;
    }
    if (!prompt || prompt->empty()) {
        return load_request_error("prompt");
    }
    if (raw) {
        // Ollama's own rule: a raw prompt has no template to put a system prompt into.
        for (std::string_view key : {"template", "system", "context"}) {
            if (json::find(doc, key) != nullptr) {
                return bad_request("'" + std::string(key) + "' cannot be combined with raw: true",
                                   std::string(key));
            }
        }
        req.kind = RequestKind::completion;
        req.prompts.push_back({*prompt, {}, false});
        return std::nullopt;
    }
    // Without raw Ollama applies the model's chat template to system + prompt: that is a
    // one-turn chat, and other backends must get it as one (api-dialects §10.8).
    req.kind = RequestKind::chat;
    if (system && !system->empty()) {
        req.messages.push_back(canonical::text_message("system", *system));
    }
    req.messages.push_back(canonical::text_message("user", *prompt));
    return std::nullopt;
}

// An assistant message's tool_calls: [{"function": {"name", "arguments": {...}}}] (an `id`
// where the client sent one). The arguments object is kept as its compact JSON text.
OptErr read_tool_calls(const json::Value& calls, const std::string& path,
                       std::vector<canonical::ToolCall>& out) {
    if (!calls.IsArray()) {
        return bad_request("'" + path +
                               "' must be an array of {\"function\": {\"name\", "
                               "\"arguments\"}} objects, got " +
                               std::string(json::type_name(calls)),
                           path);
    }
    for (rapidjson::SizeType i = 0; i < calls.Size(); ++i) {
        const std::string at = path + "[" + std::to_string(i) + "]";
        const json::Value* function =
            calls[i].IsObject() ? json::find(calls[i], "function") : nullptr;
        if (function == nullptr || !function->IsObject()) {
            return bad_request("'" + at +
                                   ".function' is required: an object with 'name' and "
                                   "'arguments' (an object)",
                               at + ".function");
        }
        OptErr err;
        canonical::ToolCall& call = out.emplace_back();
        std::optional<std::string> id = json::get_string(calls[i], "id", at + ".id", err);
        std::optional<std::string> name =
            json::get_string(*function, "name", at + ".function.name", err);
        if (err) {
            return err;
        }
        if (!name || name->empty()) {
            return bad_request("'" + at +
                                   ".function.name' is required: the name of the tool "
                                   "called",
                               at + ".function.name");
        }
        call.id = id.value_or("");
        call.name = std::move(*name);
        const json::Value* arguments = json::find(*function, "arguments");
        if (arguments == nullptr || arguments->IsNull()) {
            call.arguments = "{}";
        } else if (arguments->IsObject()) {
            call.arguments = json::to_string(*arguments);
        } else {
            return bad_request("'" + at + ".function.arguments' must be an object, got " +
                                   std::string(json::type_name(*arguments)),
                               at + ".function.arguments");
        }
    }
    return std::nullopt;
}

OptErr read_messages(const json::Value& doc, GenerationRequest& req) {
    req.kind = RequestKind::chat;
    const json::Value* messages = json::find(doc, "messages");
    if (messages == nullptr || messages->IsNull() || (messages->IsArray() && messages->Empty())) {
        return load_request_error("messages");
    }
    if (!messages->IsArray()) {
        return bad_request(
            "'messages' must be an array, got " + std::string(json::type_name(*messages)),
            "messages");
    }
    for (rapidjson::SizeType i = 0; i < messages->Size(); ++i) {
        const json::Value& m = (*messages)[i];
        const std::string path = "messages[" + std::to_string(i) + "]";
        if (!m.IsObject()) {
            return bad_request(
                "'" + path + "' must be an object, got " + std::string(json::type_name(m)), path);
        }
        OptErr err;
        std::optional<std::string> role = json::get_string(m, "role", path + ".role", err);
        std::optional<std::string> content = json::get_string(m, "content", path + ".content", err);
        if (err) {
            return err;
        }
        if (!role || role->empty()) {
            return bad_request("'" + path + ".role' is required", path + ".role");
        }
        ChatMessage& msg = req.messages.emplace_back();
        if (const json::Value* images = json::find(m, "images");
            images != nullptr && images->IsArray() && !images->Empty()) {
            // Base64 strings (the clients encode files and bytes so); their type from their
            // first bytes, as the model runner finds it.
            req.non_text_content = true;
            for (rapidjson::SizeType j = 0; j < images->Size(); ++j) {
                const json::Value& image = (*images)[j];
                if (!image.IsString()) {
                    const std::string at = path + ".images[" + std::to_string(j) + "]";
                    return bad_request("'" + at + "' must be a base64 string", at);
                }
                canonical::Image& out = msg.images.emplace_back();
                out.data.assign(json::view(image));
                out.media_type.assign(canonical::sniff_image_type(out.data));
            }
        }
        msg.role = std::move(*role);
        msg.content = content.value_or("");
        // A tool result names the tool it answers (Ollama's tool_name).
        std::optional<std::string> tool_name =
            json::get_string(m, "tool_name", path + ".tool_name", err);
        std::optional<std::string> thinking =
            json::get_string(m, "thinking", path + ".thinking", err);
        if (err) {
            return err;
        }
        msg.name = tool_name.value_or("");
        msg.reasoning = thinking.value_or("");
        if (const json::Value* calls = json::find(m, "tool_calls");
            calls != nullptr && !calls->IsNull()) {
            if (auto e = read_tool_calls(*calls, path + ".tool_calls", msg.tool_calls)) {
                return e;
            }
        }
    }
    return std::nullopt;
}

}  // namespace

Result<GenerationRequest> decode_request(std::string_view body, Api api) {
    json::Document doc;
    if (auto err = json::parse_request_object(body, doc)) {
        return std::move(*err);
    }
    GenerationRequest req;
    req.dialect = api == Api::chat ? Dialect::ollama_chat : Dialect::ollama_generate;
    OptErr err;
    std::optional<std::string> model = json::get_string(doc, "model", "model", err);
    // Ollama streams unless told otherwise (a pointer field: absent = true).
    req.stream = json::get_bool(doc, "stream", "stream", err).value_or(true);
    if (err) {
        return std::move(*err);
    }
    if (!model || model->empty()) {
        return bad_request("model is required", "model");
    }
    req.model = std::move(*model);
    if (auto e = api == Api::chat ? read_messages(doc, req) : read_generate(doc, req)) {
        return std::move(*e);
    }
    if (const json::Value* images = json::find(doc, "images");
        images != nullptr && images->IsArray() && !images->Empty()) {
        req.non_text_content = true;  // /api/generate's: not translated
        req.untranslated_parts = true;
    }
    if (auto e = read_options(doc, req)) {
        return std::move(*e);
    }
    // top_logprobs "only applies when logprobs is true" (api/types.go): alone it asks nothing.
    const std::optional<bool> logprobs = json::get_bool(doc, "logprobs", "logprobs", err);
    const std::optional<int64_t> top =
        json::get_int(doc, "top_logprobs", "top_logprobs", err, 0, 20);
    if (err) {
        return std::move(*err);
    }
    if (logprobs.value_or(false)) {
        req.return_logprob = true;
        req.top_logprobs = top;
    }
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view key = json::view(it->name);
        if (!is_known_key(key, api)) {
            std::string value = json::to_string(it->value);
            const bool inert = is_inert_extra(key, value);
            req.extras.push_back({std::string(key), std::move(value), inert});
        }
    }
    return req;
}

}  // namespace infergate::translators::ollama
