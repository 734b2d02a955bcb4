#include "translators/tgi/codec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "translators/canonical/logprobs.hpp"

#include "translators/tgi/codec_impl.hpp"

namespace infergate::translators::tgi {

const Codec& codec() {
    static const TgiCodec instance;
    return instance;
}

void mark_route(GenerationRequest& req, std::string_view path) {
    const auto unset = std::find_if(req.extras.begin(), req.extras.end(), [](const auto& e) {
        return e.key == kFullTextUnsetExtra;
    });
    if (unset != req.extras.end()) {
        // POST / answers a text-generation model with the prompt in front (non-streaming; the
        // stream encoder has no prompt to prepend, so streams keep the generation only).
        if (path == "/" && !req.stream) {
            req.echo = true;
        }
        req.extras.erase(unset);
    }
    if (path == "/generate") {
        req.stream = false;  // TGI ignores a stray "stream" key on this route
    } else if (path == "/generate_stream") {
        req.stream = true;
    } else if (path == "/" && !uses_compat_route(req)) {
        req.extras.push_back(canonical::Extra{std::string(kCompatRouteExtra), "true"});
    }
}

bool uses_compat_route(const GenerationRequest& req) {
    for (const canonical::Extra& e : req.extras) {
        if (e.key == kCompatRouteExtra) {
            return e.json == "true";
        }
    }
    return false;
}

bool wants_full_text(const GenerationRequest& req) {
    if (req.echo) {
        return true;
    }
    return std::any_of(req.extras.begin(), req.extras.end(),
                       [](const canonical::Extra& e) { return e.key == kFullTextExtra; });
}

void TgiCodec::prepare_request(GenerationRequest& req, std::string_view path) const {
    mark_route(req, path);
    if (req.echo) {
        req.echo = false;
        req.extras.push_back(canonical::Extra{std::string(kFullTextExtra), "true", true});
    }
}

void TgiCodec::response_headers(const GenerationResult& result, HeaderList& out) const {
    // TGI's /generate reports the counts in headers too (the prompt's only there).
    const canonical::Usage& u = result.choices.size() == 1 && result.choices[0].usage.prompt_tokens
                                    ? result.choices[0].usage
                                    : result.usage;
    if (u.prompt_tokens) {
        out.emplace_back("x-prompt-tokens", std::to_string(*u.prompt_tokens));
    }
    if (u.completion_tokens) {
        out.emplace_back("x-generated-tokens", std::to_string(*u.completion_tokens));
    }
}

void TgiCodec::read_response_headers(const ResponseHeaders& headers,
                                     GenerationResult& result) const {
    if (result.usage.prompt_tokens) {
        return;
    }
    // TGI's /generate tells the prompt's length only in a header.
    const std::string_view h = headers.find("x-prompt-tokens");
    int64_t v = 0;
    if (h.empty() || std::from_chars(h.data(), h.data() + h.size(), v).ec != std::errc()) {
        return;
    }
    result.usage.prompt_tokens = v;
    if (result.choices.size() == 1 && !result.choices[0].usage.prompt_tokens) {
        result.choices[0].usage.prompt_tokens = v;
    }
}

std::string_view TgiCodec::upstream_path(const GenerationRequest& req) const {
    // The interface gives only the request here, so req.stream decides (UpstreamOptions::stream
    // is not visible); the body also carries "stream", which TGI's /generate ignores.
    return req.stream ? "/generate_stream" : "/generate";
}

void TgiCodec::encode_error(const Error& error, std::string& out) const {
    // TGI's native error body (api-dialects §5.6): {"error": "...", "error_type": "..."}.
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    wire::key(w, "error");
    wire::string(w, error.message);
    wire::key(w, "error_type");
    wire::string(w, wire::error_type(error));
    w.EndObject();
}

Error TgiCodec::decode_error(int status, std::string_view body) const {
    Error e = Codec::decode_error(status, body);
    json::Document doc;
    if (!json::parse(body, doc, "upstream error") && doc.IsObject()) {
        if (const json::Value* t = json::find(doc, "error_type"); t != nullptr && t->IsString()) {
            e.code = std::string(json::view(*t));  // kept so a TGI client sees the same kind
        }
    }
    // TGI answers a failed generation with 424, which no client dialect knows (api-dialects
    // §10.14), and 401 with an empty body.
    if (status == 424) {
        e.status = 500;
        e.type = "upstream_error";
    }
    return e;
}

namespace wire {

void token(json::Writer& w, const canonical::TokenAlternative& t, bool prefill) {
    w.StartObject();
    key(w, "id");
    w.Int64(t.id.value_or(0));
    key(w, "text");
    string(w, t.token);
    key(w, "logprob");
    json::write_logprob(w, t);
    if (!prefill) {
        key(w, "special");
        w.Bool(t.special.value_or(false));
    }
    w.EndObject();
}

std::optional<std::string> read_token(const json::Value& v, const std::string& path,
                                      canonical::TokenAlternative& out) {
    if (!v.IsObject()) {
        return path + " is " + std::string(json::type_name(v)) + ", not an object";
    }
    const json::Value* text = json::find(v, "text");
    if (text == nullptr || !text->IsString()) {
        return path + ".text is missing or not a string";
    }
    out.token.assign(text->GetString(), text->GetStringLength());
    if (const json::Value* id = json::find(v, "id"); id != nullptr && id->IsInt64()) {
        out.id = id->GetInt64();
    }
    if (const json::Value* lp = json::find(v, "logprob"); lp != nullptr && lp->IsNumber()) {
        out.logprob = lp->GetDouble();
    } else if (lp != nullptr && !lp->IsNull()) {
        return path + ".logprob is not a number";
    }
    if (const json::Value* sp = json::find(v, "special"); sp != nullptr && sp->IsBool()) {
        out.special = sp->GetBool();
    }
    return std::nullopt;
}

std::string_view finish_name(const canonical::FinishReason& f) {
    switch (f.kind) {
        case canonical::FinishKind::length: return "length";
        case canonical::FinishKind::stop:
            return f.matched_text ? "stop_sequence" : "eos_token";
        default:
            // TGI has no tool-call, filter or abort reasons; its clients only know these three,
            // and the generation did end on the model's side.
            return "eos_token";
    }
}

bool read_finish(std::string_view name, canonical::FinishReason& out) {
    out = {};
    if (name == "length") {
        out.kind = canonical::FinishKind::length;
    } else if (name == "eos_token" || name == "stop_sequence") {
        out.kind = canonical::FinishKind::stop;
    } else {
        return false;
    }
    return true;
}

std::string_view error_type(const Error& e) {
    if (!e.code.empty()) {
        return e.code;
    }
    if (e.status == 400 || e.status == 422) {
        return "validation";
    }
    if (e.status == 429 || e.status == 503) {
        return "overloaded";
    }
    if (e.status == 424 || e.status >= 500) {
        return "generation";
    }
    return e.type;
}

Error error_from(int status, std::string message, std::string_view type) {
    Error e;
    e.status = status;
    e.message = std::move(message);
    e.code = std::string(type);
    if (status == 429) {
        e.type = "rate_limit_error";
    } else if (status >= 400 && status < 500) {
        e.type = "invalid_request_error";
    } else {
        e.type = "upstream_error";
    }
    return e;
}

Error upstream_error(std::string message) {
    Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = std::move(message);
    return e;
}

std::optional<std::string> trim_stop(std::string& text, const std::vector<std::string>& stops) {
    const std::string* best = nullptr;
    for (const std::string& s : stops) {
        if (!s.empty() && s.size() <= text.size() &&
            text.compare(text.size() - s.size(), s.size(), s) == 0 &&
            (best == nullptr || s.size() > best->size())) {
            best = &s;
        }
    }
    if (best == nullptr) {
        return std::nullopt;
    }
    text.resize(text.size() - best->size());
    return *best;
}

}  // namespace wire

}  // namespace infergate::translators::tgi
