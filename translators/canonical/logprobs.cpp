#include "translators/canonical/logprobs.hpp"

#include <cmath>

namespace infergate::canonical {

size_t code_points(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len = 1;
        if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
        } else if (c >= 0xE0) {
            len = c <= 0xEF ? 3 : 1;
        } else if (c >= 0xC2) {
            len = 2;
        }
        bool whole = i + len <= s.size();
        for (size_t k = 1; whole && k < len; ++k) {
            whole = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        }
        i += whole ? len : 1;
        ++n;
    }
    return n;
}

double finite_logprob(double logprob) {
    if (std::isnan(logprob)) {
        return -9999.0;
    }
    return std::max(logprob, -9999.0);
}

std::optional<double> logprob_value(const TokenAlternative& t) {
    if (t.logprob) {
        return finite_logprob(*t.logprob);
    }
    if (t.prob) {
        return finite_logprob(std::log(*t.prob));
    }
    return std::nullopt;
}

Error no_logprobs(std::string_view what, std::string_view backend, std::string_view instead) {
    Error e =
        bad_request("'" + std::string(what) + "' cannot be honoured: " + std::string(backend) +
                        " does not report log probabilities" +
                        (instead.empty() ? std::string() : "; " + std::string(instead)),
                    std::string(what));
    return e;
}

std::string prompt_logprob_param(Dialect client) {
    switch (client) {
        case Dialect::sglang:
            return "logprob_start_len";
        case Dialect::tgi:
            return "parameters.decoder_input_details";
        default:
            break;
    }
    return "echo";
}

std::optional<Error> refuse_logprobs(const GenerationRequest& req, std::string_view backend,
                                     LogprobSupport support) {
    if (wants_logprobs(req) && !support.generated) {
        return no_logprobs(client_param(req.dialect, "logprobs"), backend,
                           "leave it out, or use a backend that reports them (vLLM or another "
                           "OpenAI-compatible server, SGLang, TGI, llama.cpp, Ollama)");
    }
    if (wants_prompt_logprobs(req) && !support.prompt) {
        const std::string param = prompt_logprob_param(req.dialect);
        return bad_request("'" + param + "' asks for the prompt's log probabilities, which " +
                               std::string(backend) +
                               " does not report; leave it out, or use a backend that does "
                               "(vLLM or another server with OpenAI's echo, SGLang, TGI)",
                           param);
    }
    if (req.echo && !wants_prompt_logprobs(req)) {
        for (const Prompt& p : req.prompts) {
            if (p.is_tokens) {
                return bad_request("'echo' of a token-id prompt needs its text, which " +
                                       std::string(backend) +
                                       " does not give back; send the prompt as text, or ask "
                                       "for logprobs too from a backend that reports the "
                                       "prompt's (vLLM, SGLang)",
                                   "echo");
            }
        }
    }
    return std::nullopt;
}

}  // namespace infergate::canonical

namespace infergate::json {

namespace {

void write_bytes(Writer& w, const canonical::TokenAlternative& t) {
    const std::string_view raw = t.bytes ? std::string_view(*t.bytes) : std::string_view(t.token);
    w.StartArray();
    for (const char c : raw) {
        w.Int(static_cast<unsigned char>(c));
    }
    w.EndArray();
}

void write_alternative(Writer& w, const canonical::TokenAlternative& t,
                       const TokenEntryStyle& style) {
    // llama.cpp's order is id, token, bytes, number; OpenAI's and Ollama's token, number, bytes.
    if (style.id) {
        key(w, "id");
        w.Int64(t.id.value_or(0));
    }
    key(w, "token");
    string(w, t.token);
    if (style.id) {
        key(w, "bytes");
        write_bytes(w, t);
    }
    if (style.probs) {
        key(w, "prob");
        w.Double(t.prob.value_or(t.logprob ? std::exp(*t.logprob) : 0.0));
    } else {
        key(w, "logprob");
        write_logprob(w, t);
    }
    if (!style.id) {
        const bool empty = t.bytes ? t.bytes->empty() : t.token.empty();
        if (!style.omit_empty || !empty) {
            key(w, "bytes");
            write_bytes(w, t);
        }
    }
}

}  // namespace

void write_token_entry(Writer& w, const canonical::TokenLogprob& t, const TokenEntryStyle& style,
                       size_t max_top) {
    w.StartObject();
    write_alternative(w, t, style);
    const size_t n = std::min(max_top, t.top.size());
    if (style.top && (!style.omit_empty || n > 0)) {
        key(w, style.probs ? "top_probs" : "top_logprobs");
        w.StartArray();
        for (size_t i = 0; i < n; ++i) {
            w.StartObject();
            write_alternative(w, t.top[i], style);
            w.EndObject();
        }
        w.EndArray();
    }
    w.EndObject();
}

void write_token_entries(Writer& w, const std::vector<canonical::TokenLogprob>& entries,
                         const TokenEntryStyle& style, size_t max_top) {
    w.StartArray();
    for (const auto& t : entries) {
        write_token_entry(w, t, style, max_top);
    }
    w.EndArray();
}

namespace {

std::optional<std::string> read_alternative(const Value& v, const std::string& path,
                                            canonical::TokenAlternative& out) {
    if (!v.IsObject()) {
        return path + " is " + std::string(type_name(v)) + ", not an object";
    }
    const Value* token = find(v, "token");
    if (token == nullptr || !token->IsString()) {
        return path + ".token is missing or not a string";
    }
    out.token = std::string(view(*token));
    if (const Value* id = find(v, "id"); id != nullptr && !id->IsNull()) {
        if (!id->IsInt64()) {
            return path + ".id is not an integer";
        }
        out.id = id->GetInt64();
    }
    if (const Value* bytes = find(v, "bytes"); bytes != nullptr && !bytes->IsNull()) {
        if (!bytes->IsArray()) {
            return path + ".bytes is not an array";
        }
        std::string raw;
        for (const Value& b : bytes->GetArray()) {
            if (!b.IsInt() || b.GetInt() < 0 || b.GetInt() > 255) {
                return path + ".bytes holds something that is not a byte";
            }
            raw.push_back(static_cast<char>(b.GetInt()));
        }
        if (raw != out.token) {
            out.bytes = std::move(raw);
        }
    }
    const Value* lp = find(v, "logprob");
    const Value* p = find(v, "prob");
    if (lp != nullptr && lp->IsNumber()) {
        out.logprob = lp->GetDouble();
    } else if (p != nullptr && p->IsNumber()) {
        out.prob = p->GetDouble();
    } else if (lp == nullptr && p == nullptr) {
        return path + " has neither 'logprob' nor 'prob'";
    } else if (!(lp != nullptr && lp->IsNull())) {
        return path + ".logprob is not a number";
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> read_token_entries(const Value& list, std::string_view path,
                                              std::vector<canonical::TokenLogprob>& out) {
    if (!list.IsArray()) {
        return std::string(path) + " is " + std::string(type_name(list)) + ", not an array";
    }
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
        const std::string at = std::string(path) + "[" + std::to_string(i) + "]";
        canonical::TokenLogprob t;
        if (auto e = read_alternative(list[i], at, t)) {
            return e;
        }
        const Value* top = find(list[i], "top_logprobs");
        if (top == nullptr) {
            top = find(list[i], "top_probs");
        }
        if (top != nullptr && !top->IsNull()) {
            if (!top->IsArray()) {
                return at + ".top_logprobs is not an array";
            }
            for (rapidjson::SizeType k = 0; k < top->Size(); ++k) {
                canonical::TokenAlternative alt;
                if (auto e = read_alternative(
                        (*top)[k], at + ".top_logprobs[" + std::to_string(k) + "]", alt)) {
                    return e;
                }
                t.top.push_back(std::move(alt));
            }
        }
        out.push_back(std::move(t));
    }
    return std::nullopt;
}

}  // namespace infergate::json
