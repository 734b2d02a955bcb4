#pragma once
// Test support, shared by the unit tests and the fuzz targets: one JSON document written in the
// styles real peers use (compact, Python's spaced default, pretty over several lines with LF or
// CRLF, keys in another order, every string escaped, random whitespace between tokens), and a
// canonical form to compare documents by meaning, read the way Python's json and JavaScript's
// JSON.parse read them: the last of duplicate keys wins, key order does not matter.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace infergate::testing {

enum class Style { compact, spaced, pretty, pretty_crlf, reordered, escaped, random_ws };
inline constexpr Style kAllStyles[] = {Style::compact,     Style::spaced,    Style::pretty,
                                       Style::pretty_crlf, Style::reordered, Style::escaped,
                                       Style::random_ws};

inline const char* style_name(Style s) {
    switch (s) {
        case Style::compact:
            return "compact";
        case Style::spaced:
            return "spaced";
        case Style::pretty:
            return "pretty";
        case Style::pretty_crlf:
            return "pretty_crlf";
        case Style::reordered:
            return "reordered";
        case Style::escaped:
            return "escaped";
        case Style::random_ws:
            return "random_ws";
    }
    return "?";
}

class VariantWriter {
public:
    VariantWriter(Style style, uint32_t seed) : style_(style), rng_(seed) {}

    std::string write(const rapidjson::Value& v) {
        out_.clear();
        gap();
        value(v, 0);
        gap();
        return out_;
    }

private:
    void gap() {
        if (style_ != Style::random_ws) {
            return;
        }
        static const char* const kGaps[] = {"", "", " ", "\t", "\n", "\r\n", "  \n "};
        out_ += kGaps[rng_() % 7];
    }
    void newline(int depth) {
        if (style_ == Style::pretty || style_ == Style::pretty_crlf) {
            out_ += style_ == Style::pretty_crlf ? "\r\n" : "\n";
            out_.append(static_cast<size_t>(depth) * 2, ' ');
        }
    }
    const char* comma() const {
        return style_ == Style::spaced || style_ == Style::reordered || style_ == Style::escaped
                   ? ", "
                   : ",";
    }
    const char* colon() const {
        return style_ == Style::compact || style_ == Style::random_ws ? ":" : ": ";
    }

    void string(std::string_view s) {
        if (style_ != Style::escaped) {
            rapidjson::StringBuffer buf;
            rapidjson::Writer<rapidjson::StringBuffer> w(buf);
            w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
            out_.append(buf.GetString(), buf.GetSize());
            return;
        }
        // Every code point as a \u escape (surrogate pairs above the BMP), '/' as "\/".
        out_ += '"';
        for (size_t i = 0; i < s.size();) {
            const auto c = static_cast<unsigned char>(s[i]);
            unsigned code = c;
            size_t len = 1;
            if (c >= 0xF0 && i + 3 < s.size()) {
                code = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) |
                       ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
                len = 4;
            } else if (c >= 0xE0 && i + 2 < s.size()) {
                code = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
                len = 3;
            } else if (c >= 0xC0 && i + 1 < s.size()) {
                code = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
                len = 2;
            }
            i += len;
            if (code == '/') {
                out_ += "\\/";
            } else if (code >= 0x10000) {
                code -= 0x10000;
                u_escape(0xD800 + (code >> 10));
                u_escape(0xDC00 + (code & 0x3FF));
            } else {
                u_escape(code);
            }
        }
        out_ += '"';
    }
    void u_escape(unsigned code) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", code);
        out_ += buf;
    }

    void value(const rapidjson::Value& v, int depth) {
        if (v.IsObject()) {
            out_ += '{';
            std::vector<const rapidjson::Value::Member*> members;
            for (const auto& m : v.GetObject()) {
                members.push_back(&m);
            }
            if (style_ == Style::reordered) {
                // Keys in descending order; duplicates keep their relative order (which one
                // is last is what the document means).
                std::stable_sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
                    return std::string_view(a->name.GetString(), a->name.GetStringLength()) >
                           std::string_view(b->name.GetString(), b->name.GetStringLength());
                });
            }
            bool first = true;
            for (const auto* m : members) {
                if (!first) {
                    out_ += comma();
                }
                first = false;
                newline(depth + 1);
                gap();
                string(std::string_view(m->name.GetString(), m->name.GetStringLength()));
                gap();
                out_ += colon();
                gap();
                value(m->value, depth + 1);
                gap();
            }
            if (!members.empty()) {
                newline(depth);
            }
            out_ += '}';
        } else if (v.IsArray()) {
            out_ += '[';
            bool first = true;
            for (const auto& e : v.GetArray()) {
                if (!first) {
                    out_ += comma();
                }
                first = false;
                newline(depth + 1);
                gap();
                value(e, depth + 1);
                gap();
            }
            if (!v.Empty()) {
                newline(depth);
            }
            out_ += ']';
        } else if (v.IsString()) {
            string(std::string_view(v.GetString(), v.GetStringLength()));
        } else {
            rapidjson::StringBuffer buf;
            rapidjson::Writer<rapidjson::StringBuffer> w(buf);
            v.Accept(w);
            out_.append(buf.GetString(), buf.GetSize());
        }
    }

    Style style_;
    std::mt19937 rng_;
    std::string out_;
};

inline std::string write_variant(const rapidjson::Value& v, Style style, uint32_t seed = 1) {
    return VariantWriter(style, seed).write(v);
}

// A document as Python and JavaScript read it: duplicate keys collapsed to the last one (kept at
// the place of the first, as both do), recursively.
inline void last_wins(rapidjson::Value& v, rapidjson::Document::AllocatorType& alloc) {
    if (v.IsArray()) {
        for (auto& e : v.GetArray()) {
            last_wins(e, alloc);
        }
        return;
    }
    if (!v.IsObject()) {
        return;
    }
    rapidjson::Value out(rapidjson::kObjectType);
    for (auto& m : v.GetObject()) {
        auto it = out.FindMember(m.name);
        if (it != out.MemberEnd()) {
            it->value = m.value;  // moves
        } else {
            rapidjson::Value name(m.name, alloc);
            out.AddMember(name, m.value, alloc);
        }
    }
    v = out;
    for (auto& m : v.GetObject()) {
        last_wins(m.value, alloc);
    }
}

// Canonical text of a (last-wins) value: keys sorted, compact.
inline void canonical_text(const rapidjson::Value& v, std::string& out) {
    if (v.IsObject()) {
        std::map<std::string, const rapidjson::Value*> sorted;
        for (const auto& m : v.GetObject()) {
            sorted[std::string(m.name.GetString(), m.name.GetStringLength())] = &m.value;
        }
        out += '{';
        bool first = true;
        for (const auto& [k, val] : sorted) {
            if (!first) {
                out += ',';
            }
            first = false;
            rapidjson::Value key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
            canonical_text(key, out);
            out += ':';
            canonical_text(*val, out);
        }
        out += '}';
        return;
    }
    if (v.IsArray()) {
        out += '[';
        bool first = true;
        for (const auto& e : v.GetArray()) {
            if (!first) {
                out += ',';
            }
            first = false;
            canonical_text(e, out);
        }
        out += ']';
        return;
    }
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    v.Accept(w);
    out.append(buf.GetString(), buf.GetSize());
}

// Parses `text` (full precision, so numbers compare exactly) into `doc`, last-wins; false when
// RapidJSON rejects it.
inline bool parse_last_wins(std::string_view text, rapidjson::Document& doc) {
    doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.data(), text.size());
    if (doc.HasParseError()) {
        return false;
    }
    last_wins(doc, doc.GetAllocator());
    return true;
}

inline std::string canonical(std::string_view text) {
    rapidjson::Document doc;
    if (!parse_last_wins(text, doc)) {
        return "<invalid JSON>";
    }
    std::string out;
    canonical_text(doc, out);
    return out;
}

inline std::string canonical(const rapidjson::Value& v) {
    std::string out;
    canonical_text(v, out);
    return out;
}

}  // namespace infergate::testing
