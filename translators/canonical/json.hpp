#pragma once
// RapidJSON helpers shared by every codec: bounded parsing that reports where the body is wrong,
// typed field readers that name the offending field, and a writer that appends straight into a
// std::string (no intermediate buffer).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include "translators/canonical/types.hpp"

namespace infergate::json {

using Document = rapidjson::Document;
using Value = rapidjson::Value;

// Deeper nesting than this is rejected before parsing (no request needs it; deep input must not
// cost stack or time).
inline constexpr int kMaxDepth = 64;

// Parses `body` (iteratively, depth-bounded). On failure returns a 400 whose message says where:
// "malformed JSON in request body at offset 17: Missing a comma or '}' after an object member."
std::optional<canonical::Error> parse(std::string_view body, Document& doc,
                                      std::string_view what = "request body");

// Output stream adapter for rapidjson::Writer that appends to a std::string.
struct StringOut {
    using Ch = char;
    std::string* s;
    void Put(char c) { s->push_back(c); }
    void Flush() {}
};
using Writer = rapidjson::Writer<StringOut>;

// Compact serialization of a value, appended to `out`.
void append(const Value& v, std::string& out);
std::string to_string(const Value& v);

// Small writer helpers shared by every encoder; templates because some codecs use a writer
// with an in-place stack (rapidjson::Writer<StringOut, ..., StackAllocator>).
template <class W>
void key(W& w, std::string_view k) {
    w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}
template <class W>
void string(W& w, std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
// Writes "k": v only when the optional holds a value (the client said something).
template <class W, class T>
void write_optional(W& w, std::string_view k, const std::optional<T>& v) {
    if (!v) {
        return;
    }
    key(w, k);
    if constexpr (std::is_same_v<T, double>) {
        w.Double(*v);
    } else if constexpr (std::is_same_v<T, bool>) {
        w.Bool(*v);
    } else if constexpr (std::is_same_v<T, std::string>) {
        string(w, *v);
    } else {
        w.Int64(static_cast<int64_t>(*v));
    }
}

// Writes a raw, already-serialized JSON value (used for pass-through extras).
void write_raw(Writer& w, std::string_view json);

std::string_view view(const Value& v);  // a string value's bytes
const Value* find(const Value& obj, std::string_view key);  // null when absent or obj not an object

// Typed readers. Each returns nullopt when the key is absent or null, the value when it has the
// right type, and sets `err` (a 400 naming `path`) when it has the wrong type or range.
std::optional<bool> get_bool(const Value& obj, std::string_view key, std::string_view path,
                             std::optional<canonical::Error>& err);
std::optional<int64_t> get_int(const Value& obj, std::string_view key, std::string_view path,
                               std::optional<canonical::Error>& err, int64_t min = INT64_MIN,
                               int64_t max = INT64_MAX);
std::optional<double> get_number(const Value& obj, std::string_view key, std::string_view path,
                                 std::optional<canonical::Error>& err, double min = -1e300,
                                 double max = 1e300);
std::optional<std::string> get_string(const Value& obj, std::string_view key,
                                      std::string_view path, std::optional<canonical::Error>& err);

// JSON type name for messages ("a string", "an array", ...).
std::string_view type_name(const Value& v);

}  // namespace infergate::json
