// SGLang POST /generate requests from clients: decoding and validating the body the way SGLang's
// GenerateReqInput would (api-dialects §4.3); sampling_params are read in sampling_decode.cpp and
// the upstream direction is in upstream_request.cpp.

#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::bad_request;
using canonical::Extra;
using canonical::Prompt;
using canonical::RequestKind;
using wire::quoted;
using wire::read_sampling_params;
using wire::read_token_ids;
// Keys the SGLang server reads without changing the text it generates (placement, logging,
// scheduling, streaming cadence), or at their default: another family goes without them.
// clang-format off
constexpr canonical::InertRule kInert[] = {
    {"log_metrics", "*"}, {"priority", "*"}, {"routed_dp_rank", "*"},
    {"disagg_prefill_dp_rank", "*"}, {"data_parallel_rank", "*"}, {"bootstrap_host", "*"},
    {"bootstrap_port", "*"}, {"bootstrap_room", "*"}, {"bootstrap_pair_key", "*"},
    {"decode_tp_size", "*"}, {"extra_key", "*"}, {"routing_key", "*"}, {"no_logs", "*"},
    {"custom_labels", "*"}, {"external_trace_header", "*"}, {"received_time", "*"},
    {"conversation_id", "*"}, {"return_hidden_states", "false"},
    {"return_routed_experts", "false"}, {"use_audio_in_video", "false"},
    {"require_reasoning", "false"}, {"return_bytes", "false"}, {"return_entropy", "false"},
    {"return_text_in_logprobs", "false"}, {"logprob_start_len", "-1"},
    {"token_ids_logprob", "[]"}};
// clang-format on

std::optional<Error> read_text(const json::Value& text, GenerationRequest& req) {
    if (text.IsString()) {
        req.prompts.push_back(Prompt{std::string(json::view(text)), {}, false});
        return std::nullopt;
    }
    if (!text.IsArray()) {
        return bad_request("'text' must be a string or a list of strings, got " +
                               std::string(json::type_name(text)),
                           "text");
    }
    if (text.Empty()) {
        return bad_request("'text' must not be an empty list: send at least one prompt", "text");
    }
    req.prompt_is_list = true;
    req.prompts.reserve(text.Size());
    for (rapidjson::SizeType i = 0; i < text.Size(); ++i) {
        if (!text[i].IsString()) {
            const std::string at = "text[" + std::to_string(i) + "]";
            return bad_request(
                quoted(at) + " must be a string, got " + std::string(json::type_name(text[i])), at);
        }
        req.prompts.push_back(Prompt{std::string(json::view(text[i])), {}, false});
    }
    return std::nullopt;
}

std::optional<Error> read_input_ids(const json::Value& ids, GenerationRequest& req) {
    if (!ids.IsArray()) {
        return bad_request("'input_ids' must be a list of token ids or a list of such lists, got " +
                               std::string(json::type_name(ids)),
                           "input_ids");
    }
    if (ids.Empty()) {
        return bad_request("'input_ids' must not be an empty list", "input_ids");
    }
    if (!ids[0].IsArray()) {
        Prompt p;
        p.is_tokens = true;
        if (auto err = read_token_ids(ids, "input_ids", p.token_ids)) {
            return err;
        }
        req.prompts.push_back(std::move(p));
        return std::nullopt;
    }
    req.prompt_is_list = true;
    req.prompts.reserve(ids.Size());
    for (rapidjson::SizeType i = 0; i < ids.Size(); ++i) {
        const std::string at = "input_ids[" + std::to_string(i) + "]";
        if (!ids[i].IsArray()) {
            return bad_request(quoted(at) + " must be a list of token ids, got " +
                                   std::string(json::type_name(ids[i])),
                               at);
        }
        if (ids[i].Empty()) {
            return bad_request(quoted(at) + " must not be an empty list", at);
        }
        Prompt p;
        p.is_tokens = true;
        if (auto err = read_token_ids(ids[i], at, p.token_ids)) {
            return err;
        }
        req.prompts.push_back(std::move(p));
    }
    return std::nullopt;
}

std::optional<Error> read_rid(const json::Value& v, GenerationRequest& req) {
    if (v.IsNull()) {
        return std::nullopt;
    }
    if (v.IsString()) {
        req.request_ids.emplace_back(json::view(v));
        return std::nullopt;
    }
    if (!v.IsArray()) {
        return bad_request(
            "'rid' must be a string or a list of strings, got " + std::string(json::type_name(v)),
            "rid");
    }
    req.request_ids.reserve(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (!v[i].IsString()) {
            const std::string at = "rid[" + std::to_string(i) + "]";
            return bad_request(
                quoted(at) + " must be a string, got " + std::string(json::type_name(v[i])), at);
        }
        req.request_ids.emplace_back(json::view(v[i]));
    }
    return std::nullopt;
}

}  // namespace

Result<GenerationRequest> SglangCodec::decode_request(std::string_view body) const {
    json::Document doc;
    if (auto err = json::parse_request_object(body, doc)) {
        return std::move(*err);
    }
    GenerationRequest req;
    req.dialect = Dialect::sglang;
    req.kind = RequestKind::completion;

    const json::Value* text = nullptr;
    const json::Value* input_ids = nullptr;
    const json::Value* sampling = nullptr;
    bool embeds = false;
    std::optional<int64_t> start;
    std::optional<Error> err;
    for (const auto& m : doc.GetObject()) {
        const std::string_view key = json::view(m.name);
        const json::Value& v = m.value;
        if (key == "text") {
            text = v.IsNull() ? nullptr : &v;
        } else if (key == "input_ids") {
            input_ids = v.IsNull() ? nullptr : &v;
        } else if (key == "input_embeds") {
            embeds = !v.IsNull();
        } else if (key == "sampling_params") {
            sampling = &v;
        } else if (key == "stream") {
            req.stream = json::get_bool(doc, key, key, err).value_or(false);
        } else if (key == "rid") {
            err = read_rid(v, req);
        } else if (key == "return_logprob" && !v.IsArray()) {
            req.return_logprob = json::get_bool(doc, key, key, err);
        } else if (key == "top_logprobs_num" && !v.IsArray()) {
            req.top_logprobs = json::get_int(doc, key, key, err, 0);
        } else if (key == "logprob_start_len" && !v.IsArray() && json::to_string(v) != "-1") {
            // k >= 0: the prompt's entries from index k on. -1 (the default: generated tokens
            // only) stays an inert extra below, as SGLang's bench_serving sends it.
            start = json::get_int(doc, key, key, err, 0);
        } else if (key == "return_text_in_logprobs") {
            req.logprob_text = json::get_bool(doc, key, key, err).value_or(false);
        } else if (key == "model") {
            // Not an SGLang field (the server ignores it), but the proxy may route on it. Kept out
            // of `extras` so that it is never forwarded.
            req.model = json::get_string(doc, key, key, err).value_or(std::string());
        } else {
            // Everything else (lora_path, logprob_start_len, per-item return_logprob lists, ...)
            // survives a same-dialect pass-through untouched.
            std::string value = json::to_string(v);
            const bool inert = canonical::is_inert(key, value, kInert);
            req.extras.push_back(Extra{std::string(key), std::move(value), inert});
        }
        if (err) {
            return std::move(*err);
        }
    }

    if (req.return_logprob.value_or(false)) {
        req.prompt_logprob_start = start;
    } else {
        // SGLang reads top_logprobs_num, logprob_start_len and return_text_in_logprobs only
        // with return_logprob: without it they change nothing, and another backend must not be
        // asked (or refuse) for them. They still reach an SGLang backend as they were sent.
        if (req.top_logprobs) {
            req.extras.push_back(
                Extra{"top_logprobs_num", std::to_string(*req.top_logprobs), true});
            req.top_logprobs.reset();
        }
        if (start) {
            req.extras.push_back(Extra{"logprob_start_len", std::to_string(*start), true});
        }
        if (req.logprob_text) {
            req.extras.push_back(Extra{"return_text_in_logprobs", "true", true});
            req.logprob_text = false;
        }
    }
    if (embeds) {
        return bad_request(
            "'input_embeds' cannot be proxied: infergate translates requests "
            "through text or token ids and cannot carry embeddings; send the "
            "prompt as 'text' or 'input_ids' instead",
            "input_embeds");
    }
    if (text == nullptr && input_ids == nullptr) {
        return bad_request(
            "Either text, input_ids or input_embeds should be provided. Send the "
            "prompt as 'text' (a string or a list of strings) or 'input_ids' (a "
            "list of token ids or a list of such lists).",
            "text");
    }
    if (text != nullptr && input_ids != nullptr) {
        return bad_request("send the prompt as either 'text' or 'input_ids', not both",
                           "input_ids");
    }
    err = text != nullptr ? read_text(*text, req) : read_input_ids(*input_ids, req);
    if (err) {
        return std::move(*err);
    }
    if (sampling != nullptr) {
        if (auto e = read_sampling_params(*sampling, req)) {
            return std::move(*e);
        }
    }
    return req;
}

}  // namespace infergate::translators::sglang
