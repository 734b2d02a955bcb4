// llama.cpp /completion whole responses (api-dialects §7.4) and errors (§7.7).

#include <algorithm>

#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/llamacpp/codec_impl.hpp"

namespace infergate::translators::llamacpp {

namespace {

using canonical::Choice;
using canonical::Usage;

// One whole llama.cpp result object for `c`, with the counts `u`. A llama.cpp backend's own
// members (id_slot, generation_settings, truncated, tokens_cached, its timings, ...) are carried
// through; other backends' answers have no such values, and llama.cpp clients need none of them,
// so they are left out rather than made up.
void write_result(json::Writer& w, const Choice& c, const Usage& u, std::string_view model,
                  const canonical::Timing& timing, const GenerationRequest& req) {
    const canonical::Carried* carried = wire::own(c.carried);
    w.StartObject();
    wire::key(w, "index");
    w.Int(c.index);
    wire::key(w, "content");
    wire::string(w, c.text);
    wire::write_tokens(w, c.token_ids);
    wire::key(w, "stop");
    w.Bool(true);
    wire::key(w, "model");
    wire::string(w, model);
    // Counts we do not know are left out rather than guessed.
    if (u.completion_tokens) {
        wire::key(w, "tokens_predicted");
        w.Int64(*u.completion_tokens);
    }
    if (u.prompt_tokens) {
        wire::key(w, "tokens_evaluated");
        w.Int64(*u.prompt_tokens);
    }
    const wire::StopInfo stop = wire::stop_info(c.finish);
    wire::key(w, "stop_type");
    wire::string(w, stop.stop_type);
    wire::key(w, "stopping_word");
    wire::string(w, stop.stopping_word);
    if (carried != nullptr) {
        json::write_carried(w, carried->members);
    }
    if (carried == nullptr || carried->find("timings") == nullptr) {
        wire::write_timings(w, u.cached_tokens, u.prompt_tokens, u.completion_tokens, timing);
    }
    // Last, and only when there are entries (llama-server leaves the key out otherwise).
    if (canonical::wants_logprobs(req) && !c.logprobs.empty()) {
        wire::write_probs(w, c.logprobs, req.post_sampling_probs, canonical::top_count(req));
    }
    w.EndObject();
}

// One result object of a llama.cpp response into `c`.
std::optional<std::string> read_result(const json::Value& obj, const GenerationRequest& req,
                                       Choice& c) {
    if (!obj.IsObject()) {
        return "a result is " + std::string(json::type_name(obj)) + ", not an object";
    }
    if (json::find(obj, "error") != nullptr) {
        return "the backend reported an error: " + json::to_string(*json::find(obj, "error"));
    }
    const json::Value* content = json::find(obj, "content");
    if (content == nullptr || !content->IsString()) {
        return "'content' is missing or not a string";
    }
    c.text = std::string(json::view(*content));
    if (auto e = wire::read_counts(obj, c.usage)) {
        return e;
    }
    if (auto e = wire::read_tokens(obj, c.token_ids)) {
        return e;
    }
    if (auto e = wire::read_probs(obj, c.logprobs)) {
        return e;
    }
    if (req.dialect == Dialect::llamacpp) {
        wire::carry(obj, c.carried);
    }
    return wire::read_finish(obj, wire::budget(req), c.finish);
}

}  // namespace

void LlamacppCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                                    std::string& out) const {
    json::StringOut os{&out};
    json::Writer w(os);
    // Several prompts (or a list) come back as an array; one prompt as one object (§7.4).
    const bool as_list = req.prompt_is_list || result.choices.size() > 1;
    if (as_list) {
        w.StartArray();
    }
    for (const Choice& c : result.choices) {
        // Per-choice counts where the upstream gave them; the aggregate only stands for a
        // lone choice (it cannot be split between several).
        Usage u = c.usage;
        if (result.choices.size() == 1) {
            u.prompt_tokens = u.prompt_tokens ? u.prompt_tokens : result.usage.prompt_tokens;
            u.completion_tokens =
                u.completion_tokens ? u.completion_tokens : result.usage.completion_tokens;
            u.cached_tokens = u.cached_tokens ? u.cached_tokens : result.usage.cached_tokens;
        }
        write_result(w, c, u, result.model, result.timing, req);
        if (!as_list) {
            break;
        }
    }
    if (result.choices.empty()) {
        write_result(w, Choice{}, result.usage, result.model, result.timing, req);
    }
    if (as_list) {
        w.EndArray();
    }
}

void LlamacppCodec::encode_error(const Error& error, std::string& out) const {
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "error");
    wire::error_object(w, error);
    w.EndObject();
}

Result<GenerationResult> LlamacppCodec::decode_response(std::string_view body,
                                                        const GenerationRequest& req) const {
    json::Document doc;
    if (auto e = json::parse(body, doc, "llama.cpp response", canonical::exact_numbers(req))) {
        return wire::upstream_error(e->message);
    }
    GenerationResult result;
    if (const json::Value* m = json::find(doc, "model"); m != nullptr && m->IsString()) {
        result.model = std::string(json::view(*m));
    }
    auto read_one = [&](const json::Value& obj, int position) -> std::optional<std::string> {
        Choice c;
        c.index = position;
        if (const json::Value* i = json::find(obj, "index"); i != nullptr && i->IsInt()) {
            c.index = i->GetInt();
        }
        if (auto e = read_result(obj, req, c)) {
            return e;
        }
        result.choices.push_back(std::move(c));
        return std::nullopt;
    };
    if (doc.IsArray()) {
        if (doc.Empty()) {
            return wire::upstream_error("an empty result list");
        }
        for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
            if (auto e = read_one(doc[i], static_cast<int>(i))) {
                return wire::upstream_error("result " + std::to_string(i) + ": " + *e);
            }
        }
        if (const json::Value* m = json::find(doc[0], "model"); m != nullptr && m->IsString()) {
            result.model = std::string(json::view(*m));
        }
    } else if (doc.IsObject()) {
        if (auto e = read_one(doc, 0)) {
            return wire::upstream_error(*e);
        }
    } else {
        return wire::upstream_error("the body is " + std::string(json::type_name(doc)) +
                                    ", not an object or a list");
    }
    std::sort(result.choices.begin(), result.choices.end(),
              [](const Choice& a, const Choice& b) { return a.index < b.index; });
    for (const Choice& c : result.choices) {
        Usage& t = result.usage;
        for (auto [sum, part] : {std::pair{&t.prompt_tokens, &c.usage.prompt_tokens},
                                 std::pair{&t.completion_tokens, &c.usage.completion_tokens},
                                 std::pair{&t.cached_tokens, &c.usage.cached_tokens}}) {
            if (*part) {
                *sum = sum->value_or(0) + **part;
            }
        }
    }
    return result;
}

}  // namespace infergate::translators::llamacpp
