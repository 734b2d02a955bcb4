#include "emulator/embedding.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include "emulator/generator.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {
namespace {

constexpr std::uint64_t kVectorSalt = 0x656d62656464696eULL;  // "embeddin"

// Shortest round-trip digits of a value and its decimal exponent: value = d.ddd x 10^exp.
struct Digits {
    char digits[32];
    int count = 0;
    int exp = 0;
    bool negative = false;
};

template <typename T>
Digits shortest(T value) {
    char buf[64];
    const auto [end, ec] =
        std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    Digits d;
    const char* p = buf;
    if (*p == '-') {
        d.negative = true;
        ++p;
    }
    for (; p < end && *p != 'e'; ++p) {
        if (*p != '.') {
            d.digits[d.count++] = *p;
        }
    }
    int exp = 0;
    std::from_chars(p + 1 + (p[1] == '+' ? 1 : 0), end, exp);
    d.exp = exp;
    // "0e+00" is zero: one digit, exponent 0.
    while (d.count > 1 && d.digits[d.count - 1] == '0') {
        --d.count;
    }
    return d;
}

void append_fixed(std::string& out, const Digits& d, bool dot_zero) {
    const int n = d.count;
    if (d.exp >= 0) {
        if (n - 1 <= d.exp) {
            out.append(d.digits, static_cast<std::size_t>(n));
            out.append(static_cast<std::size_t>(d.exp - (n - 1)), '0');
            if (dot_zero) {
                out += ".0";
            }
        } else {
            out.append(d.digits, static_cast<std::size_t>(d.exp + 1));
            out += '.';
            out.append(d.digits + d.exp + 1, static_cast<std::size_t>(n - d.exp - 1));
        }
    } else {
        out += "0.";
        out.append(static_cast<std::size_t>(-d.exp - 1), '0');
        out.append(d.digits, static_cast<std::size_t>(n));
    }
}

// d[.ddd]e<sign><digits>: `plus` writes '+' for positive exponents, `width` pads with zeros.
void append_exponent_form(std::string& out, const Digits& d, bool plus, int width) {
    out += d.digits[0];
    if (d.count > 1) {
        out += '.';
        out.append(d.digits + 1, static_cast<std::size_t>(d.count - 1));
    }
    out += 'e';
    if (d.exp < 0) {
        out += '-';
    } else if (plus) {
        out += '+';
    }
    const std::string e = std::to_string(std::abs(d.exp));
    if (static_cast<int>(e.size()) < width) {
        out.append(static_cast<std::size_t>(width) - e.size(), '0');
    }
    out += e;
}

std::uint16_t to_half(float f) {
    std::uint32_t x = 0;
    std::memcpy(&x, &f, 4);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
    std::uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) {  // inf / nan
        return static_cast<std::uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u : 0));
    }
    if (exp >= 31) {
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (exp <= 0) {
        if (exp < -10) {
            return static_cast<std::uint16_t>(sign);
        }
        mant |= 0x800000u;
        const int shift = 14 - exp;
        std::uint32_t half = mant >> shift;
        const std::uint32_t rest = mant & ((1u << shift) - 1);
        const std::uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u) != 0)) {
            ++half;
        }
        return static_cast<std::uint16_t>(sign | half);
    }
    std::uint32_t half = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) {
        ++half;  // may carry into the exponent, up to infinity: still right
    }
    return static_cast<std::uint16_t>(sign | half);
}

std::uint16_t to_bfloat(float f) {
    std::uint32_t x = 0;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // a quiet nan
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>(x >> 16);
}

}  // namespace

std::string_view pooling_name(Pooling pooling) {
    switch (pooling) {
        case Pooling::kCls:
            return "cls";
        case Pooling::kLast:
            return "last";
        case Pooling::kNone:
            return "none";
        default:
            return "mean";
    }
}

void token_vector(std::int64_t id, int dim, std::vector<float>& out) {
    out.resize(static_cast<std::size_t>(dim));
    const std::uint64_t seed = splitmix64(static_cast<std::uint64_t>(id) ^ kVectorSalt);
    for (int d = 0; d < dim; ++d) {
        const std::uint64_t h = splitmix64(seed + static_cast<std::uint64_t>(d));
        const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
        out[static_cast<std::size_t>(d)] = static_cast<float>(unit * 2.0 - 1.0);
    }
}

std::vector<float> pooled_vector(std::span<const std::int64_t> ids, int dim, Pooling pooling) {
    std::vector<float> out(static_cast<std::size_t>(dim), 0.0f);
    if (ids.empty()) {
        return out;
    }
    std::vector<float> one;
    if (pooling == Pooling::kCls || pooling == Pooling::kLast) {
        token_vector(pooling == Pooling::kCls ? ids.front() : ids.back(), dim, out);
        return out;
    }
    std::vector<double> sum(static_cast<std::size_t>(dim), 0.0);
    for (std::int64_t id : ids) {
        token_vector(id, dim, one);
        for (std::size_t d = 0; d < sum.size(); ++d) {
            sum[d] += one[d];
        }
    }
    const double n = static_cast<double>(ids.size());
    for (std::size_t d = 0; d < sum.size(); ++d) {
        out[d] = static_cast<float>(sum[d] / n);
    }
    return out;
}

void finish_vector(std::vector<float>& v, int dims, bool normalize) {
    if (dims > 0 && static_cast<std::size_t>(dims) < v.size()) {
        v.resize(static_cast<std::size_t>(dims));
    }
    if (!normalize) {
        return;
    }
    double sum = 0;
    for (float x : v) {
        sum += static_cast<double>(x) * static_cast<double>(x);
    }
    const double norm = std::sqrt(sum);
    if (norm > 0) {
        for (float& x : v) {
            x = static_cast<float>(static_cast<double>(x) / norm);
        }
    }
}

void append_number(std::string& out, float value, NumberStyle style) {
    const bool go = style == NumberStyle::kGo32 || style == NumberStyle::kGo64;
    if (value == 0.0f) {
        out += std::signbit(value) ? "-0" : "0";
        if (!go) {
            out += ".0";
        }
        return;
    }
    const bool single = style == NumberStyle::kGo32 || style == NumberStyle::kRustF32;
    const Digits d = single ? shortest(value) : shortest(static_cast<double>(value));
    if (d.negative) {
        out += '-';
    }
    bool fixed = true;
    switch (style) {
        case NumberStyle::kPython:
            fixed = d.exp >= -4 && d.exp < 16;
            break;
        case NumberStyle::kOrjson:
            fixed = d.exp >= -5 && d.exp <= 15;
            break;
        case NumberStyle::kNlohmann:
            fixed = d.exp >= -4 && d.exp <= 14;
            break;
        case NumberStyle::kGo32:
            fixed = !(std::fabs(value) < 1e-6f || std::fabs(value) >= 1e21f);
            break;
        case NumberStyle::kGo64: {
            const double a = std::fabs(static_cast<double>(value));
            fixed = !(a < 1e-6 || a >= 1e21);
            break;
        }
        case NumberStyle::kRustF32:
            fixed = d.exp >= -6 && d.exp <= 12;
            break;
    }
    if (fixed) {
        append_fixed(out, d, !go);
        return;
    }
    switch (style) {
        case NumberStyle::kRustF32:
            append_exponent_form(out, d, false, 1);
            break;
        case NumberStyle::kGo32:
        case NumberStyle::kGo64:
            // strconv's 'e' writes two exponent digits; encoding/json shortens "e-07" to "e-7".
            append_exponent_form(out, d, true, d.exp < 0 ? 1 : 2);
            break;
        default:
            append_exponent_form(out, d, true, 2);
            break;
    }
}

void write_vector(JsonWriter& w, std::span<const float> values, NumberStyle style) {
    w.StartArray();
    std::string number;
    for (float v : values) {
        number.clear();
        append_number(number, v, style);
        w.RawValue(number.data(), number.size(), rapidjson::kNumberType);
    }
    w.EndArray();
}

std::string base64(std::string_view bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16 |
                                static_cast<unsigned char>(bytes[i + 1]) << 8 |
                                static_cast<unsigned char>(bytes[i + 2]);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += kAlphabet[(n >> 6) & 63];
        out += kAlphabet[n & 63];
    }
    if (i < bytes.size()) {
        std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
        if (i + 1 < bytes.size()) {
            n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        }
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string value_bytes(std::span<const float> values, ValueType type, bool big_endian) {
    const std::size_t width = type == ValueType::kFloat32 ? 4 : 2;
    std::string bytes(values.size() * width, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t x = 0;
        if (type == ValueType::kFloat32) {
            std::memcpy(&x, &values[i], 4);
        } else {
            x = type == ValueType::kBfloat16 ? to_bfloat(values[i]) : to_half(values[i]);
        }
        for (std::size_t b = 0; b < width; ++b) {
            const std::size_t shift = 8 * (big_endian ? width - 1 - b : b);
            bytes[i * width + b] = static_cast<char>((x >> shift) & 0xff);
        }
    }
    return bytes;
}

}  // namespace infergate::emulator
