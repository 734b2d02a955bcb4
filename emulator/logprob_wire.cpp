// The log-probability shapes of TGI, llama.cpp and Ollama, and the number and byte-list
// writers every shape uses (vLLM's and SGLang's shapes: logprob_wire_python.cpp).
#include "emulator/logprob_wire.hpp"

#include <charconv>
#include <cmath>
#include <vector>

namespace infergate::emulator {
namespace {

// Length of the longest prefix that is whole UTF-8 (llama.cpp's validate_utf8).
std::size_t valid_utf8_prefix(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (i + len > text.size()) {
            break;
        }
        i += len;
    }
    return i;
}

}  // namespace

void write_bytes(JsonWriter& w, std::string_view text) {
    w.StartArray();
    for (unsigned char c : text) {
        w.Int(c);
    }
    w.EndArray();
}

void write_logprob(JsonWriter& w, float value, FloatStyle style) {
    char buf[64];
    const auto [end, ec] =
        style == FloatStyle::kF32
            ? std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed)
            : std::to_chars(buf, buf + sizeof(buf), static_cast<double>(value),
                            std::chars_format::fixed);
    std::string text(buf, end);
    if (text.find('.') == std::string::npos) {
        text += ".0";  // Python, serde and nlohmann keep a float a float
    }
    w.RawValue(text.data(), text.size(), rapidjson::kNumberType);
}

void write_tgi_token(JsonWriter& w, const LogprobSeq& seq, int k) {
    PositionLogprobs pos;
    seq.position(k, 0, pos);
    w.StartObject();
    w.kv_int("id", seq.id(k));
    w.kv("text", seq.text(k));
    w.key("logprob");
    write_logprob(w, pos.logprob, FloatStyle::kF32);
    w.kv_bool("special", seq.id(k) == kEosTokenId);
    w.EndObject();
}

void write_tgi_top_tokens(JsonWriter& w, const LogprobSeq& seq, int k, int n) {
    PositionLogprobs pos;
    seq.position(k, n, pos);
    w.StartArray();
    for (const TokenLogprob& t : pos.top) {
        w.StartObject();
        w.kv_int("id", t.id);
        w.kv("text", seq.alt_text(k, t.id));
        w.key("logprob");
        write_logprob(w, t.logprob, FloatStyle::kF32);
        w.kv_bool("special", t.id == kEosTokenId);
        w.EndObject();
    }
    w.EndArray();
}

void write_tgi_prefill(JsonWriter& w, const LogprobSeq& prompt) {
    PositionLogprobs pos;
    w.StartArray();
    for (int i = 0; i < prompt.size(); ++i) {
        w.StartObject();
        w.kv_int("id", prompt.id(i));
        w.kv("text", prompt.text(i));
        w.key("logprob");
        if (prompt.has_logprob(i)) {
            prompt.position(i, 0, pos);
            write_logprob(w, pos.logprob, FloatStyle::kF32);
        } else {
            w.Null();  // NaN on the first prompt token, which serde writes as null
        }
        w.EndObject();
    }
    w.EndArray();
}

void write_tgi_chat_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n) {
    PositionLogprobs pos;
    w.StartObject();
    w.key("content");
    w.StartArray();
    for (int i = from; i < to; ++i) {
        seq.position(i, n, pos);
        w.StartObject();
        w.kv("token", seq.text(i));
        w.key("logprob");
        write_logprob(w, pos.logprob, FloatStyle::kF32);
        w.key("top_logprobs");
        w.StartArray();
        for (const TokenLogprob& t : pos.top) {
            w.StartObject();
            w.kv("token", seq.alt_text(i, t.id));
            w.key("logprob");
            write_logprob(w, t.logprob, FloatStyle::kF32);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
}

void write_llamacpp_probs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n,
                          bool post_sampling, std::span<const std::string_view> sent) {
    PositionLogprobs pos;
    const std::string_view value_key = post_sampling ? "prob" : "logprob";
    auto value = [&](float logprob) {
        write_logprob(w, post_sampling ? std::exp(logprob) : logprob);
    };
    auto entry_head = [&](std::int64_t id, std::string_view text) {
        w.kv_int("id", id);
        w.kv("token", text.substr(0, valid_utf8_prefix(text)));
        w.key("bytes");
        write_bytes(w, text);
        w.key(value_key);
    };
    w.StartArray();
    for (int i = from; i < to; ++i) {
        seq.position(i, n, pos);
        w.StartObject();
        entry_head(seq.id(i), sent[static_cast<std::size_t>(i - from)]);
        value(pos.logprob);
        w.key(post_sampling ? "top_probs" : "top_logprobs");
        w.StartArray();
        for (const TokenLogprob& t : pos.top) {
            w.StartObject();
            entry_head(t.id, seq.alt_text(i, t.id));
            value(t.logprob);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
}

void write_ollama_logprobs(JsonWriter& w, const LogprobSeq& seq, int from, int to, int n) {
    PositionLogprobs pos;
    auto token = [&](std::string_view text, float logprob) {
        w.kv("token", text);
        w.key("logprob");
        write_logprob(w, logprob);
        if (!text.empty()) {  // `bytes,omitempty`
            w.key("bytes");
            write_bytes(w, text);
        }
    };
    w.StartArray();
    for (int i = from; i < to; ++i) {
        seq.position(i, n, pos);
        w.StartObject();
        token(seq.text(i), pos.logprob);
        if (!pos.top.empty()) {
            w.key("top_logprobs");
            w.StartArray();
            for (const TokenLogprob& t : pos.top) {
                w.StartObject();
                token(seq.alt_text(i, t.id), t.logprob);
                w.EndObject();
            }
            w.EndArray();
        }
        w.EndObject();
    }
    w.EndArray();
}

}  // namespace infergate::emulator