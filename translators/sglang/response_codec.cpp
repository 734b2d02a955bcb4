// SGLang non-streaming /generate responses: one object, or an array of them for a batch or
// n > 1 (api-dialects §4.5).

#include <vector>

#include "translators/canonical/logprobs.hpp"
#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

namespace {

using canonical::Choice;
using canonical::Usage;

// SGLang echoes the client's rid as meta_info.id; otherwise the choice's own id, then the
// response's.
std::string_view choice_id(const Choice& c, const GenerationResult& result,
                           const GenerationRequest& req) {
    if (c.index >= 0 && static_cast<size_t>(c.index) < req.request_ids.size()) {
        return req.request_ids[static_cast<size_t>(c.index)];
    }
    return c.id.empty() ? std::string_view(result.id) : std::string_view(c.id);
}

// SGLang repeats the prompt's entries in each of its n samples; a backend that reports them
// once per prompt (on its first sample, as vLLM's prompt_logprobs) lends them to the others.
const std::vector<canonical::TokenLogprob>& prompt_entries(const Choice& c,
                                                           const GenerationResult& result,
                                                           const GenerationRequest& req) {
    const int n = req.sampling.n > 0 ? req.sampling.n : 1;
    if (!c.prompt_logprobs.empty() || n == 1 || c.index % n == 0) {
        return c.prompt_logprobs;
    }
    const int first = c.index - c.index % n;
    for (const Choice& other : result.choices) {
        if (other.index == first) {
            return other.prompt_logprobs;
        }
    }
    return c.prompt_logprobs;
}

void write_output(wire::Writer& w, const Choice& c, const GenerationResult& result,
                  const GenerationRequest& req) {
    // A dialect without per-choice counts (OpenAI) reports only the aggregate, which is the
    // choice's own when there is just one choice.
    const Usage* fallback = result.choices.size() <= 1 ? &result.usage : nullptr;
    const auto count = [&](std::optional<int64_t> Usage::*member) {
        const std::optional<int64_t>& own = c.usage.*member;
        return own || fallback == nullptr ? own : fallback->*member;
    };
    w.StartObject();
    wire::key(w, "text");
    wire::string(w, c.text);
    wire::key(w, "meta_info");
    const wire::LogprobOut logprobs{req.return_logprob.value_or(false), canonical::top_count(req),
                                    req.logprob_text, &prompt_entries(c, result, req), &c.logprobs};
    wire::meta_info(w, choice_id(c, result, req), &c.finish, count(&Usage::prompt_tokens),
                    count(&Usage::completion_tokens), count(&Usage::cached_tokens), &logprobs);
    w.EndObject();
}

std::string where(size_t index, bool array) {
    return array ? " (item " + std::to_string(index) + ")" : std::string();
}

std::optional<Error> read_output(const json::Value& o, size_t index, bool array, Choice& c) {
    const json::Value* text = json::find(o, "text");
    if (text == nullptr || !text->IsString()) {
        if (const json::Value* error = json::find(o, "error"); error != nullptr) {
            const json::Value* message = error->IsObject() ? json::find(*error, "message") : error;
            return wire::upstream_error(
                "the SGLang backend answered with an error" + where(index, array) + ": " +
                (message != nullptr && message->IsString() ? std::string(json::view(*message))
                                                           : json::to_string(*error)));
        }
        if (text == nullptr && json::find(o, "output_ids") != nullptr) {
            return wire::upstream_error(
                "the SGLang backend's response has output_ids but no text" + where(index, array) +
                "; is it running with --skip-tokenizer-init? infergate needs the text");
        }
        return wire::upstream_error(
            "the SGLang backend's response has no 'text' string" + where(index, array) +
            (text == nullptr ? std::string() : ", got " + std::string(json::type_name(*text))));
    }
    c.index = static_cast<int>(index);
    c.text.assign(text->GetString(), text->GetStringLength());

    const json::Value* meta = json::find(o, "meta_info");
    if (meta == nullptr || !meta->IsObject()) {
        return wire::upstream_error("the SGLang backend's response has no 'meta_info' object" +
                                    where(index, array));
    }
    if (const json::Value* id = json::find(*meta, "id"); id != nullptr && id->IsString()) {
        c.id.assign(id->GetString(), id->GetStringLength());
    }
    if (const json::Value* finish = json::find(*meta, "finish_reason"); finish != nullptr) {
        if (!wire::read_finish_reason(*finish, c.finish)) {
            return wire::upstream_error(
                "the SGLang backend's meta_info.finish_reason is neither an object with a "
                "'type' nor a string" +
                where(index, array) + ": " + json::to_string(*finish));
        }
    }
    if (auto message = wire::read_counts(*meta, c.usage)) {
        return wire::upstream_error("invalid SGLang response" + where(index, array) + ": " +
                                    *message);
    }
    size_t total = 0;
    if (auto message = wire::read_logprobs(*meta, &c.prompt_logprobs, c.logprobs, 0, total)) {
        return wire::upstream_error("invalid SGLang response" + where(index, array) + ": " +
                                    *message);
    }
    return std::nullopt;
}

void add(std::optional<int64_t>& total, const std::optional<int64_t>& v) {
    if (v) {
        total = total.value_or(0) + *v;
    }
}

}  // namespace

void SglangCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                                  std::string& out) const {
    const bool single = !req.prompt_is_list && req.prompts.size() <= 1 && req.sampling.n == 1 &&
                        result.choices.size() <= 1;
    size_t bytes = 0;
    for (const Choice& c : result.choices) {
        bytes +=
            c.text.size() + c.id.size() + 160 +
            (c.logprobs.size() + c.prompt_logprobs.size()) * (40 + 40 * canonical::top_count(req));
    }
    wire::ensure_room(out, bytes + 160);
    wire::OutWriter w(out);
    if (single) {
        static const Choice kNoChoice;
        write_output(*w, result.choices.empty() ? kNoChoice : result.choices.front(), result,
                     req);
        return;
    }
    w->StartArray();
    for (const Choice& c : result.choices) {
        write_output(*w, c, result, req);
    }
    w->EndArray();
}

Result<GenerationResult> SglangCodec::decode_response(std::string_view body,
                                                      const GenerationRequest& req) const {
    json::Document doc;
    if (auto err = json::parse(body, doc, "the SGLang backend's response",
                               canonical::exact_numbers(req))) {
        return wire::upstream_error(std::move(err->message));
    }
    GenerationResult result;
    if (doc.IsObject()) {
        result.choices.resize(1);
        if (auto err = read_output(doc, 0, false, result.choices.front())) {
            return std::move(*err);
        }
    } else if (doc.IsArray()) {
        if (doc.Empty()) {
            return wire::upstream_error("the SGLang backend answered with an empty list");
        }
        result.choices.resize(doc.Size());
        for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
            if (!doc[i].IsObject()) {
                return wire::upstream_error("the SGLang backend's response item " +
                                            std::to_string(i) + " is " +
                                            std::string(json::type_name(doc[i])) +
                                            ", not an object");
            }
            if (auto err = read_output(doc[i], i, true, result.choices[i])) {
                return std::move(*err);
            }
        }
    } else {
        return wire::upstream_error(
            "the SGLang backend's response is " + std::string(json::type_name(doc)) +
            ", not an object or an array of objects");
    }

    // Choices i*n .. i*n+n-1 were sampled from the same prompt: its tokens count once.
    const size_t n = req.sampling.n > 0 ? static_cast<size_t>(req.sampling.n) : 1;
    for (size_t i = 0; i < result.choices.size(); ++i) {
        const Usage& u = result.choices[i].usage;
        add(result.usage.completion_tokens, u.completion_tokens);
        add(result.usage.reasoning_tokens, u.reasoning_tokens);
        if (i % n == 0) {
            add(result.usage.prompt_tokens, u.prompt_tokens);
            add(result.usage.cached_tokens, u.cached_tokens);
        }
    }
    result.id = result.choices.front().id;
    return result;
}

}  // namespace infergate::translators::sglang
