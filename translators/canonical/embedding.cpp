#include "translators/canonical/embedding.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

namespace infergate::canonical {

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    if (c == '/') {
        return 63;
    }
    return -1;
}

// The float32's bytes in little-endian order, whatever the host's.
void float_bytes(float f, unsigned char (&out)[4]) {
    uint32_t bits = std::bit_cast<uint32_t>(f);
    for (unsigned char& b : out) {
        b = static_cast<unsigned char>(bits & 0xff);
        bits >>= 8;
    }
}

}  // namespace

std::string_view to_string(EmbedDialect d) {
    switch (d) {
        case EmbedDialect::openai:
            return "openai_embeddings";
        case EmbedDialect::ollama:
            return "ollama_embed";
        case EmbedDialect::ollama_legacy:
            return "ollama_embeddings";
        case EmbedDialect::tei:
            return "tei_embed";
        case EmbedDialect::llamacpp:
            return "llamacpp_embedding";
    }
    return "?";
}

std::string_view to_string(TokenizerDialect d) {
    switch (d) {
        case TokenizerDialect::vllm:
            return "vllm_tokenizer";
        case TokenizerDialect::sglang:
            return "sglang_tokenizer";
        case TokenizerDialect::llamacpp:
            return "llamacpp_tokenizer";
        case TokenizerDialect::tgi:
            return "tgi_tokenizer";
        case TokenizerDialect::tei:
            return "tei_tokenizer";
    }
    return "?";
}

bool append_number(std::string& out, double v) {
    if (!std::isfinite(v)) {
        return false;
    }
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (ec != std::errc()) {
        return false;  // not reached: 32 bytes hold any double's shortest form
    }
    out.append(buf, end);
    if (std::memchr(buf, '.', static_cast<size_t>(end - buf)) == nullptr &&
        std::memchr(buf, 'e', static_cast<size_t>(end - buf)) == nullptr) {
        out += ".0";  // "1" would read as an integer in Python; "-0" as 0
    }
    return true;
}

void append_base64_floats(std::string& out, const std::vector<double>& values) {
    out.reserve(out.size() + (values.size() * 4 + 2) / 3 * 4);
    uint32_t group = 0;
    int held = 0;  // bytes in `group`
    auto flush = [&](int bytes) {
        // `bytes` (1-3) of `group` (most significant first) as 4 characters, padded.
        const uint32_t g = group << (8 * (3 - bytes));
        out += kBase64[(g >> 18) & 63];
        out += kBase64[(g >> 12) & 63];
        out += bytes > 1 ? kBase64[(g >> 6) & 63] : '=';
        out += bytes > 2 ? kBase64[g & 63] : '=';
    };
    for (double v : values) {
        unsigned char bytes[4];
        float_bytes(static_cast<float>(v), bytes);
        for (unsigned char b : bytes) {
            group = (group << 8) | b;
            if (++held == 3) {
                flush(3);
                group = 0;
                held = 0;
            }
        }
    }
    if (held > 0) {
        flush(held);
    }
}

bool read_base64_floats(std::string_view text, std::vector<double>& out) {
    if (text.size() % 4 != 0) {
        return false;
    }
    std::vector<unsigned char> bytes;
    bytes.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = text[i + static_cast<size_t>(k)];
            if (c == '=' && i + 4 == text.size() && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad > 0) {
                return false;  // a character after padding
            }
            v[k] = base64_value(c);
            if (v[k] < 0) {
                return false;
            }
        }
        const uint32_t g = (static_cast<uint32_t>(v[0]) << 18) |
                           (static_cast<uint32_t>(v[1]) << 12) |
                           (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
        bytes.push_back(static_cast<unsigned char>(g >> 16));
        if (pad < 2) {
            bytes.push_back(static_cast<unsigned char>((g >> 8) & 0xff));
        }
        if (pad < 1) {
            bytes.push_back(static_cast<unsigned char>(g & 0xff));
        }
    }
    if (bytes.size() % 4 != 0) {
        return false;
    }
    out.clear();
    out.reserve(bytes.size() / 4);
    for (size_t i = 0; i < bytes.size(); i += 4) {
        const uint32_t bits = static_cast<uint32_t>(bytes[i]) |
                              (static_cast<uint32_t>(bytes[i + 1]) << 8) |
                              (static_cast<uint32_t>(bytes[i + 2]) << 16) |
                              (static_cast<uint32_t>(bytes[i + 3]) << 24);
        out.push_back(static_cast<double>(std::bit_cast<float>(bits)));
    }
    return true;
}

size_t count_chars(std::string_view utf8) {
    size_t n = 0;
    for (const char c : utf8) {
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    }
    return n;
}

bool valid_utf8(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        size_t len = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > bytes.size()) {
            return false;
        }
        for (size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(bytes[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
            return false;
        }
        i += len;
    }
    return true;
}

}  // namespace infergate::canonical
