// llama.cpp's shared wire pieces: the error shape, the timings object and the info bodies.
#include <algorithm>
#include <chrono>

#include "emulator/api.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {

using Clock = std::chrono::steady_clock;

std::string_view llamacpp_error_type(int status) {
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 501: return "not_supported_error";
        case 503: return "unavailable_error";
        default: return "server_error";
    }
}

namespace {

// json_value<int>: numbers (truncated) and booleans convert, anything else is the default.
int llama_int(const rapidjson::Value& doc, std::string_view name, int fallback) {
    const rapidjson::Value* v = member(doc, name);
    if (v == nullptr) {
        return fallback;
    }
    if (v->IsBool()) {
        return v->GetBool() ? 1 : 0;
    }
    if (v->IsNumber()) {
        return static_cast<int>(std::clamp(v->GetDouble(), -2147483648.0, 2147483647.0));
    }
    return fallback;
}

bool llama_bool(const rapidjson::Value& doc, std::string_view name) {
    bool value = false;
    return get_bool(doc, name, value) == Lookup::kOk && value;
}

}  // namespace

std::optional<std::string> llamacpp_probs(const rapidjson::Value& doc, bool chat, LlamaProbs& out) {
    out.n = llama_int(doc, "n_probs", 0);
    if (chat) {
        if (llama_bool(doc, "logprobs")) {
            out.n = llama_int(doc, "top_logprobs", 20);
        } else if (member(doc, "top_logprobs") != nullptr) {
            return std::string("top_logprobs requires logprobs to be set to true");
        }
    }
    // "Use OpenAI API logprobs only if n_probs wasn't provided"
    if (out.n == 0 && member(doc, "logprobs") != nullptr) {
        out.n = llama_int(doc, "logprobs", 0);
    }
    out.post_sampling = llama_bool(doc, "post_sampling_probs");
    return std::nullopt;
}

std::string_view llamacpp_sent_text(const Output& out, int k,
                                    const std::vector<std::string>& stops) {
    const int n = out.completion_tokens();
    const std::size_t before = visible_partial_stop(out, k, k == n, stops);
    const std::size_t after = std::max(visible_partial_stop(out, k + 1, k + 1 == n, stops), before);
    return std::string_view(out.raw_text).substr(before, after - before);
}

int llamacpp_listed_tokens(const Output& out) {
    if (out.finish != Finish::kStopString) {
        return out.completion_tokens();
    }
    const int stop_tokens = static_cast<int>(pseudo_token_ids(out.matched_string).size());
    return std::max(0, out.completion_tokens() - stop_tokens);
}

void render_llamacpp_error(int status, std::string_view message, std::string& body) {
    JsonWriter w(body);
    w.StartObject();
    w.key("error");
    w.StartObject();
    w.kv_int("code", status);
    w.kv("message", message);
    w.kv("type", llamacpp_error_type(status));
    w.EndObject();
    w.EndObject();
}

void write_llamacpp_timings(JsonWriter& w, const LlamaTimes& t, int prompt, int cached,
                            int predicted_n) {
    const int prompt_n = prompt - cached;
    const double prompt_ms =
        std::chrono::duration<double, std::milli>(t.first - t.received).count();
    const double predicted_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - t.first).count();
    auto rate = [](double ms, int n) { return ms > 0 ? 1000.0 * n / ms : 0.0; };
    w.key("timings");
    w.StartObject();
    w.kv_int("cache_n", cached);
    w.kv_int("prompt_n", prompt_n);
    w.key("prompt_ms");
    w.Double(prompt_ms);
    w.key("prompt_per_token_ms");
    w.Double(prompt_n > 0 ? prompt_ms / prompt_n : 0.0);
    w.key("prompt_per_second");
    w.Double(rate(prompt_ms, prompt_n));
    w.kv_int("predicted_n", predicted_n);
    w.key("predicted_ms");
    w.Double(predicted_ms);
    w.key("predicted_per_token_ms");
    w.Double(predicted_n > 0 ? predicted_ms / predicted_n : 0.0);
    w.key("predicted_per_second");
    w.Double(rate(predicted_ms, predicted_n));
    w.EndObject();
}

std::string llamacpp_props_body(const Options& options) {
    std::string body;
    JsonWriter w(body);
    w.StartObject();
    w.key("default_generation_settings");
    w.StartObject();
    w.kv_int("id", 0);
    w.kv_int("id_task", -1);
    w.kv_int("n_ctx", options.max_model_len);
    w.kv_bool("speculative", false);
    w.kv_bool("is_processing", false);
    w.key("params");
    w.StartObject();
    w.kv_int("n_predict", -1);
    w.kv_int("seed", 4294967295);
    w.key("temperature");
    w.Double(0.8);
    w.kv_int("top_k", 40);
    w.key("top_p");
    w.Double(0.95);
    w.EndObject();
    w.kv("prompt", "");
    w.EndObject();
    w.kv_int("total_slots", 1);
    w.kv("model_path", "/models/" + options.model + ".gguf");
    // The stand-in template the emulator counts and /apply-template renders (tokenizer.hpp).
    w.kv("chat_template",
         "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant{% endif %}");
    w.key("modalities");
    w.StartObject();
    w.kv_bool("vision", false);
    w.EndObject();
    w.kv("build_info", kLlamaBuild);
    w.EndObject();
    return body;
}

std::string llamacpp_models_body(const Options& options) {
    return model_list_body(options.model, unix_now(), "llamacpp", [&options](JsonWriter& w) {
        w.key("meta");
        w.StartObject();
        w.kv_int("vocab_type", 2);
        w.kv_int("n_vocab", kTokenIdBase + static_cast<std::int64_t>(vocabulary().size()));
        w.kv_int("n_ctx_train", options.max_model_len);
        w.kv_int("n_embd", options.embedding.dim);
        w.kv_int("n_params", 7'241'732'096);
        w.kv_int("size", 4'683'087'332);
        w.EndObject();
    });
}

}  // namespace infergate::emulator
