// JSON writing and reading helpers. Bodies are written with RapidJSON's Writer straight into a
// std::string the caller reuses, compact like orjson / Starlette's JSONResponse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/writer.h>

namespace infergate::emulator {

// Output stream for rapidjson::Writer that appends to an existing string (no copy at the end).
class StringSink {
public:
    using Ch = char;
    explicit StringSink(std::string& out) : out_(&out) {}
    void Put(char c) { out_->push_back(c); }
    void Flush() {}

private:
    std::string* out_;
};

class JsonWriter : public rapidjson::Writer<StringSink> {
public:
    explicit JsonWriter(std::string& out) : rapidjson::Writer<StringSink>(sink_), sink_(out) {
        Reset(sink_);
    }
    void key(std::string_view k) { Key(k.data(), static_cast<rapidjson::SizeType>(k.size())); }
    void str(std::string_view v) { String(v.data(), static_cast<rapidjson::SizeType>(v.size())); }
    void kv(std::string_view k, std::string_view v) {
        key(k);
        str(v);
    }
    void kv_int(std::string_view k, std::int64_t v) {
        key(k);
        Int64(v);
    }
    void kv_null(std::string_view k) {
        key(k);
        Null();
    }
    void kv_bool(std::string_view k, bool v) {
        key(k);
        Bool(v);
    }

private:
    StringSink sink_;
};

// Python's repr() of a float: shortest round-trip digits, always with a '.' or an exponent.
// Used where the real servers format a value into an error message.
std::string py_float(double value);
// The JSON number as Python would print it after json.loads (int stays int, float gets repr).
std::string py_number(const rapidjson::Value& v);

// `text` between `quote`s with \\, the quote, \n, \r, \t and the other control characters
// escaped (\xHH), other bytes as they are: Python's repr() and Go's %q of printable text.
std::string quoted(std::string_view text, char quote);

// Python's repr() of a str: single quotes (double when the text holds a ' and no "), with
// \\, the quote, \n, \r, \t and the other control characters escaped; other text as it is.
std::string py_repr(std::string_view text);

// Appends `text` as a JSON string the way Python's json.dumps writes it by default
// (ensure_ascii: every non-ASCII code point as a lower-case \uXXXX escape, surrogate pairs above
// the BMP).
void py_json_string(std::string_view text, std::string& out);

// Parses a request body. Iterative parsing keeps deep nesting off the stack.
bool parse_json(std::string_view body, rapidjson::Document& doc);
// A value of a request as compact JSON text, written iteratively: however deep the request
// nests it, the stack does not grow (rapidjson's Accept recurses).
std::string compact_json(const rapidjson::Value& v);

// Typed lookups that tell "absent or null" apart from "present with the wrong type".
enum class Lookup { kAbsent, kOk, kWrongType };
const rapidjson::Value* member(const rapidjson::Value& obj, std::string_view name);
Lookup get_int(const rapidjson::Value& obj, std::string_view name, std::int64_t& out);
Lookup get_number(const rapidjson::Value& obj, std::string_view name, double& out);
Lookup get_bool(const rapidjson::Value& obj, std::string_view name, bool& out);

std::string_view reason_phrase(int status);
// "Service Unavailable" -> "ServiceUnavailable": the servers name error types after it.
std::string compact_reason(int status);

}  // namespace infergate::emulator
