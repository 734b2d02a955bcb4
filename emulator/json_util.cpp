#include "emulator/json_util.hpp"

#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include <rapidjson/error/en.h>

namespace infergate::emulator {

std::string py_float(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    if (std::isinf(value)) {
        return value > 0 ? "inf" : "-inf";
    }
    char buf[64];
    // Python switches to exponent notation outside [1e-4, 1e16).
    const double mag = std::fabs(value);
    const bool sci = mag != 0.0 && (mag < 1e-4 || mag >= 1e16);
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value,
                                   sci ? std::chars_format::scientific : std::chars_format::fixed);
    std::string out(buf, end);
    if (sci) {
        return out;  // "1e-05" / "1e+16": C++ and Python agree on the exponent form
    }
    if (out.find('.') == std::string::npos) {
        out += ".0";
    }
    return out;
}

std::string py_number(const rapidjson::Value& v) {
    if (v.IsInt64()) {
        return std::to_string(v.GetInt64());
    }
    if (v.IsUint64()) {
        return std::to_string(v.GetUint64());
    }
    if (v.IsNumber()) {
        return py_float(v.GetDouble());
    }
    return "?";
}

std::string quoted(std::string_view text, char quote) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(1, quote);
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (ch == '\\' || ch == quote) {
            out += '\\';
            out += ch;
        } else if (ch == '\n') {
            out += "\\n";
        } else if (ch == '\r') {
            out += "\\r";
        } else if (ch == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += ch;
        }
    }
    out += quote;
    return out;
}

std::string py_repr(std::string_view text) {
    // Python's repr: single quotes, unless the text has one and no double quote.
    return quoted(
        text, text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos
                  ? '"'
                  : '\'');
}

void py_json_string(std::string_view text, std::string& out) {
    static constexpr char kHex[] = "0123456789abcdef";
    auto escape = [&](std::uint32_t cp) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) {
            out.push_back(kHex[(cp >> shift) & 0xf]);
        }
    };
    out.push_back('"');
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20) {
                        escape(c);
                    } else {
                        out.push_back(static_cast<char>(c));
                    }
            }
            ++i;
            continue;
        }
        // Decode one UTF-8 sequence (the body was valid JSON, so the text is valid UTF-8).
        const int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        std::uint32_t cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0f : 0x1f);
        for (int k = 1; k < len && i + static_cast<std::size_t>(k) < text.size(); ++k) {
            cp = (cp << 6) | (static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]) & 0x3f);
        }
        i += static_cast<std::size_t>(len);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            escape(0xd800 + (cp >> 10));
            escape(0xdc00 + (cp & 0x3ff));
        } else {
            escape(cp);
        }
    }
    out.push_back('"');
}

bool parse_json(std::string_view body, rapidjson::Document& doc) {
    doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
    return !doc.HasParseError();
}

std::string compact_json(const rapidjson::Value& v) {
    std::string out;
    JsonWriter w(out);
    struct Frame {
        const rapidjson::Value* value;
        rapidjson::SizeType next;
    };
    std::vector<Frame> open;
    auto write = [&](const rapidjson::Value& x) {
        if (x.IsObject()) {
            w.StartObject();
            open.push_back({&x, 0});
        } else if (x.IsArray()) {
            w.StartArray();
            open.push_back({&x, 0});
        } else {
            x.Accept(w);  // a scalar: no recursion
        }
    };
    write(v);
    while (!open.empty()) {
        const rapidjson::Value& x = *open.back().value;
        const rapidjson::SizeType i = open.back().next++;
        if (x.IsObject()) {
            if (i == x.MemberCount()) {
                w.EndObject();
                open.pop_back();
                continue;
            }
            const auto& m = *(x.MemberBegin() + i);
            w.Key(m.name.GetString(), m.name.GetStringLength());
            write(m.value);
        } else if (i == x.Size()) {
            w.EndArray();
            open.pop_back();
        } else {
            write(x[i]);
        }
    }
    return out;
}

const rapidjson::Value* member(const rapidjson::Value& obj, std::string_view name) {
    if (!obj.IsObject()) {
        return nullptr;
    }
    auto it = obj.FindMember(rapidjson::Value(
        rapidjson::StringRef(name.data(), static_cast<rapidjson::SizeType>(name.size()))));
    if (it == obj.MemberEnd() || it->value.IsNull()) {
        return nullptr;
    }
    return &it->value;
}

Lookup get_int(const rapidjson::Value& obj, std::string_view name, std::int64_t& out) {
    const rapidjson::Value* v = member(obj, name);
    if (v == nullptr) {
        return Lookup::kAbsent;
    }
    if (v->IsInt64()) {
        out = v->GetInt64();
        return Lookup::kOk;
    }
    // pydantic's lax mode accepts 16.0 for an int field, but not 16.5.
    if (v->IsDouble() && std::trunc(v->GetDouble()) == v->GetDouble() &&
        std::fabs(v->GetDouble()) < 9e15) {
        out = static_cast<std::int64_t>(v->GetDouble());
        return Lookup::kOk;
    }
    return Lookup::kWrongType;
}

Lookup get_number(const rapidjson::Value& obj, std::string_view name, double& out) {
    const rapidjson::Value* v = member(obj, name);
    if (v == nullptr) {
        return Lookup::kAbsent;
    }
    if (!v->IsNumber()) {
        return Lookup::kWrongType;
    }
    out = v->GetDouble();
    return Lookup::kOk;
}

Lookup get_bool(const rapidjson::Value& obj, std::string_view name, bool& out) {
    const rapidjson::Value* v = member(obj, name);
    if (v == nullptr) {
        return Lookup::kAbsent;
    }
    if (!v->IsBool()) {
        return Lookup::kWrongType;
    }
    out = v->GetBool();
    return Lookup::kOk;
}

std::string_view reason_phrase(int status) {
    static constexpr std::pair<int, std::string_view> kPhrases[] = {
        {100, "Continue"},
        {200, "OK"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {413, "Request Entity Too Large"},
        {422, "Unprocessable Entity"},
        {424, "Failed Dependency"},
        {429, "Too Many Requests"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {529, "Site Overloaded"},
    };
    for (const auto& [code, phrase] : kPhrases) {
        if (code == status) {
            return phrase;
        }
    }
    if (status < 200) {
        return "Informational";
    }
    if (status < 300) {
        return "Success";
    }
    if (status < 400) {
        return "Redirection";
    }
    return status < 500 ? "Client Error" : "Server Error";
}

std::string compact_reason(int status) {
    std::string out;
    for (char c : reason_phrase(status)) {
        if (c != ' ') {
            out.push_back(c);
        }
    }
    return out;
}

}  // namespace infergate::emulator
