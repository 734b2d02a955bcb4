// Whole TGI /generate responses (api-dialects §5.4): {"generated_text": ..., "details"?: {...}},
// wrapped in a JSON array on POST /.

#include <algorithm>

#include "translators/canonical/logprobs.hpp"
#include "translators/tgi/codec.hpp"
#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

namespace {

using canonical::Choice;
using canonical::FinishKind;

void write_one(const GenerationResult& result, const GenerationRequest& req, json::Writer& w) {
    const Choice* c = result.choices.empty() ? nullptr : &result.choices.front();
    w.StartObject();
    wire::key(w, "generated_text");
    if (wants_full_text(req) && !req.prompts.empty()) {
        // return_full_text: canonical text is the generation only, TGI prepends the prompt.
        std::string full = req.prompts.front().text;
        if (c != nullptr) {
            full += c->text;
        }
        wire::string(w, full);
    } else {
        wire::string(w, c != nullptr ? std::string_view(c->text) : std::string_view());
    }
    if (req.include_usage) {  // the client's parameters.details (see decode_request)
        wire::key(w, "details");
        w.StartObject();
        wire::key(w, "finish_reason");
        wire::string(w, c != nullptr ? wire::finish_name(c->finish) : "eos_token");
        // generated_tokens is a required u32 for TGI clients: an unknown count is written as 0
        // rather than guessed.
        std::optional<int64_t> tokens = result.usage.completion_tokens;
        if (c != nullptr && c->usage.completion_tokens) {
            tokens = c->usage.completion_tokens;
        }
        wire::key(w, "generated_tokens");
        w.Int64(tokens.value_or(0));
        wire::key(w, "seed");
        if (req.sampling.seed) {
            w.Int64(*req.sampling.seed);
        } else {
            w.Null();
        }
        // Empty lists where the backend gave no entries (TGI's own shape keeps the keys).
        wire::key(w, "prefill");
        w.StartArray();
        if (c != nullptr && canonical::wants_prompt_logprobs(req)) {
            for (const canonical::TokenLogprob& t : c->prompt_logprobs) {
                wire::token(w, t, true);
            }
        }
        w.EndArray();
        wire::key(w, "tokens");
        w.StartArray();
        if (c != nullptr) {
            for (const canonical::TokenLogprob& t : c->logprobs) {
                wire::token(w, t);
            }
        }
        w.EndArray();
        // One list per generated token, written only when not empty (skip_serializing_if).
        const size_t top = canonical::top_count(req);
        if (c != nullptr && top > 0 && !c->logprobs.empty()) {
            wire::key(w, "top_tokens");
            w.StartArray();
            for (const canonical::TokenLogprob& t : c->logprobs) {
                w.StartArray();
                for (size_t i = 0; i < std::min(top, t.top.size()); ++i) {
                    wire::token(w, t.top[i]);
                }
                w.EndArray();
            }
            w.EndArray();
        }
        w.EndObject();
    }
    w.EndObject();
}

std::optional<std::string> read_list(const json::Value& d, std::string_view name,
                                     const json::Value*& out) {
    out = json::find(d, name);
    if (out != nullptr && !out->IsNull() && !out->IsArray()) {
        return "details." + std::string(name) + " that is " + std::string(json::type_name(*out)) +
               ", not a list";
    }
    if (out != nullptr && out->IsNull()) {
        out = nullptr;
    }
    return std::nullopt;
}

// details.tokens (with details.top_tokens, one list per token) and details.prefill, the prompt's
// tokens from the first (whose logprob is null) on, of which the client wants those from
// prompt_logprob_start.
std::optional<std::string> read_entries(const json::Value& d, const GenerationRequest& req,
                                        Choice& c) {
    const json::Value* tokens = nullptr;
    const json::Value* tops = nullptr;
    const json::Value* prefill = nullptr;
    if (auto e = read_list(d, "tokens", tokens)) {
        return e;
    }
    if (auto e = read_list(d, "top_tokens", tops)) {
        return e;
    }
    if (auto e = read_list(d, "prefill", prefill)) {
        return e;
    }
    if (tokens != nullptr) {
        for (rapidjson::SizeType i = 0; i < tokens->Size(); ++i) {
            const std::string at = "details.tokens[" + std::to_string(i) + "]";
            canonical::TokenLogprob t;
            if (auto e = wire::read_token((*tokens)[i], at, t)) {
                return e;
            }
            if (tops != nullptr && i < tops->Size() && (*tops)[i].IsArray()) {
                const json::Value& alts = (*tops)[i];
                for (rapidjson::SizeType k = 0; k < alts.Size(); ++k) {
                    canonical::TokenAlternative alt;
                    const std::string alt_at =
                        "details.top_tokens[" + std::to_string(i) + "][" + std::to_string(k) + "]";
                    if (auto e = wire::read_token(alts[k], alt_at, alt)) {
                        return e;
                    }
                    t.top.push_back(std::move(alt));
                }
            }
            c.logprobs.push_back(std::move(t));
        }
    }
    if (prefill != nullptr && canonical::wants_prompt_logprobs(req)) {
        const auto from = static_cast<rapidjson::SizeType>(
            std::max<int64_t>(0, req.prompt_logprob_start.value_or(0)));
        for (rapidjson::SizeType i = from; i < prefill->Size(); ++i) {
            canonical::TokenLogprob t;
            if (auto e = wire::read_token((*prefill)[i],
                                          "details.prefill[" + std::to_string(i) + "]", t)) {
                return e;
            }
            c.prompt_logprobs.push_back(std::move(t));
        }
    }
    return std::nullopt;
}

}  // namespace

void TgiCodec::encode_response(const GenerationResult& result, const GenerationRequest& req,
                               std::string& out) const {
    json::StringOut os{&out};
    json::Writer w(os);
    const bool compat = uses_compat_route(req);
    if (compat) {
        w.StartArray();  // POST / answers a list (§5.4)
    }
    write_one(result, req, w);
    if (compat) {
        w.EndArray();
    }
}

Result<GenerationResult> TgiCodec::decode_response(std::string_view body,
                                                   const GenerationRequest& req) const {
    json::Document doc;
    if (auto err = json::parse(body, doc, "the TGI response", canonical::exact_numbers(req))) {
        return wire::upstream_error("the TGI backend sent a malformed response: " + err->message);
    }
    const json::Value* obj = &doc;
    if (doc.IsArray()) {  // POST / wraps the object in a one-element list
        if (doc.Size() != 1) {
            return wire::upstream_error("the TGI backend answered a list of " +
                                        std::to_string(doc.Size()) +
                                        " results where one was expected");
        }
        obj = &doc[0];
    }
    if (!obj->IsObject()) {
        return wire::upstream_error("the TGI backend answered " +
                                    std::string(json::type_name(*obj)) + ", not an object");
    }
    if (const json::Value* e = json::find(*obj, "error"); e != nullptr && e->IsString()) {
        const json::Value* t = json::find(*obj, "error_type");
        Error err = wire::upstream_error("the TGI backend reported an error: " +
                                         std::string(json::view(*e)));
        if (t != nullptr && t->IsString()) {
            err.code = std::string(json::view(*t));
        }
        return err;
    }
    const json::Value* text = json::find(*obj, "generated_text");
    if (text == nullptr || !text->IsString()) {
        return wire::upstream_error(
            "the TGI backend sent a response without a 'generated_text' string");
    }
    Choice choice;
    choice.text.assign(json::view(*text));
    if (const json::Value* d = json::find(*obj, "details"); d != nullptr && !d->IsNull()) {
        if (!d->IsObject()) {
            return wire::upstream_error("the TGI backend sent 'details' that is " +
                                        std::string(json::type_name(*d)) + ", not an object");
        }
        const json::Value* f = json::find(*d, "finish_reason");
        if (f == nullptr || !f->IsString() || !wire::read_finish(json::view(*f), choice.finish)) {
            return wire::upstream_error(
                "the TGI backend sent an unknown details.finish_reason: " +
                (f == nullptr ? std::string("(missing)") : json::to_string(*f)));
        }
        // TGI keeps a matched stop string in the text (§10.6); OpenAI semantics trim it, and
        // the one trimmed is the one that fired (TGI does not say otherwise).
        if (json::view(*f) == "stop_sequence" && !req.sampling.keep_stop_str.value_or(false)) {
            choice.finish.matched_text = wire::trim_stop(choice.text, req.sampling.stop);
        } else if (json::view(*f) == "stop_sequence") {
            std::string copy = choice.text;
            choice.finish.matched_text = wire::trim_stop(copy, req.sampling.stop);
        }
        if (auto e = read_entries(*d, req, choice)) {
            return wire::upstream_error("the TGI backend sent " + *e);
        }
        if (const json::Value* n = json::find(*d, "generated_tokens"); n != nullptr) {
            if (!n->IsInt64() || n->GetInt64() < 0) {
                return wire::upstream_error("the TGI backend sent details.generated_tokens " +
                                            json::to_string(*n) + ", not a count");
            }
            choice.usage.completion_tokens = n->GetInt64();
        }
    }
    // The prompt count is only in the x-prompt-tokens header, which codecs do not see: the
    // exchange fills usage.prompt_tokens from it when it wants to.
    GenerationResult result;
    result.usage = choice.usage;
    result.choices.push_back(std::move(choice));
    return result;
}

}  // namespace infergate::translators::tgi
