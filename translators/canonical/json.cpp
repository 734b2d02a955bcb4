#include "translators/canonical/json.hpp"

#include <algorithm>

#include <cmath>
#include <cstring>

#include <rapidjson/error/en.h>

namespace infergate::json {

namespace {

// Depth of the deepest nesting in `body`, stopping early once past `limit`. Strings are skipped
// so brackets inside them do not count.
int nesting_depth(std::string_view body, int limit) {
    int depth = 0;
    int deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > deepest) {
                deepest = depth;
                if (deepest > limit) {
                    return deepest;
                }
            }
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return deepest;
}

canonical::Error type_error(std::string_view path, std::string_view expected, const Value& got) {
    return canonical::bad_request("'" + std::string(path) + "' must be " + std::string(expected) +
                                      ", got " + std::string(type_name(got)),
                                  std::string(path));
}

}  // namespace

char* Document::copy_text(std::string_view text) {
    return detail::nul_terminated_copy(text, text_buffer, text_spill);
}

bool depth_within_limit(std::string_view body) {
    // Nesting cannot be deeper than the number of brackets: count them first (memchr skips
    // the long bracket-free stretches) and walk the structure only when that bound is too high.
    if (body.empty()) {
        return true;  // and memchr must not get the null data() of an empty view
    }
    size_t brackets = 0;
    for (const char open : {'{', '['}) {
        const char* p = body.data();
        const char* end = body.data() + body.size();
        while (brackets <= static_cast<size_t>(kMaxDepth) &&
               (p = static_cast<const char*>(std::memchr(p, open, static_cast<size_t>(end - p)))) !=
                   nullptr) {
            ++brackets;
            ++p;
        }
    }
    return brackets <= static_cast<size_t>(kMaxDepth) ||
           nesting_depth(body, kMaxDepth) <= kMaxDepth;
}

std::optional<canonical::Error> parse(std::string_view body, Document& doc, std::string_view what,
                                      Numbers numbers) {
    if (!depth_within_limit(body)) {
        return canonical::bad_request("malformed JSON in " + std::string(what) +
                                      ": nested deeper than " + std::to_string(kMaxDepth) +
                                      " levels");
    }
    // Recursive parsing (faster than the iterative parser) is safe: the depth is bounded above.
    // In situ, on the document's own copy: strings are unescaped in place, not copied.
    rapidjson::InsituStringStream in(doc.copy_text(body));
    constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseStopWhenDoneFlag;
    if (numbers == Numbers::exact) {
        doc.ParseStream<kFlags | rapidjson::kParseFullPrecisionFlag>(in);
    } else {
        doc.ParseStream<kFlags>(in);
    }
    if (doc.HasParseError()) {
        if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
            return canonical::bad_request("malformed JSON in " + std::string(what) +
                                          ": the body is empty; send a JSON object");
        }
        return canonical::bad_request(
            "malformed JSON in " + std::string(what) + " at offset " +
            std::to_string(doc.GetErrorOffset()) + ": " +
            rapidjson::GetParseError_En(doc.GetParseError()));
    }
    // kParseStopWhenDoneFlag stops after the value; only whitespace may follow it. The stream's
    // read position is an offset into the original bytes (in-situ unescaping writes behind it),
    // so a second value, or a NUL and anything after it, is seen here.
    const size_t end = in.Tell();
    if (end < body.size() && body.find_first_not_of(" \t\r\n", end) != std::string_view::npos) {
        return canonical::bad_request("malformed JSON in " + std::string(what) + " at offset " +
                                      std::to_string(end) +
                                      ": unexpected data after the end of the JSON value");
    }
    return std::nullopt;
}

std::optional<canonical::Error> parse_request_object(std::string_view body, Document& doc) {
    if (auto err = parse(body, doc)) {
        return err;
    }
    if (!doc.IsObject()) {
        return canonical::bad_request("the request body must be a JSON object, got " +
                                      std::string(type_name(doc)));
    }
    return std::nullopt;
}

void append(const Value& v, std::string& out) {
    StringOut os{&out};
    Writer w(os);
    v.Accept(w);
}

std::string to_string(const Value& v) {
    std::string out;
    append(v, out);
    return out;
}

void write_raw(Writer& w, std::string_view json) {
    w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
}

void collect_unknown(const Value& obj, std::initializer_list<std::string_view> known,
                     std::vector<canonical::Extra>& out, std::string_view prefix) {
    if (!obj.IsObject()) {
        return;
    }
    for (const auto& m : obj.GetObject()) {
        const std::string_view k = view(m.name);
        if (std::find(known.begin(), known.end(), k) != known.end()) {
            continue;
        }
        canonical::Extra& e = out.emplace_back();
        e.key.reserve(prefix.size() + k.size());
        e.key.append(prefix).append(k);
        append(m.value, e.json);
    }
}

bool read_function_call(const Value& call, canonical::ToolCall& out) {
    const Value* function = call.IsObject() ? find(call, "function") : nullptr;
    const Value* name = function != nullptr ? find(*function, "name") : nullptr;
    if (name == nullptr || !name->IsString()) {
        return false;
    }
    out.name.assign(view(*name));
    if (const Value* id = find(call, "id"); id != nullptr && id->IsString()) {
        out.id.assign(view(*id));
    }
    const Value* arguments = find(*function, "arguments");
    if (arguments != nullptr && arguments->IsString()) {
        out.arguments.assign(view(*arguments));
    } else if (arguments != nullptr && !arguments->IsNull()) {
        out.arguments = to_string(*arguments);
    }
    if (out.arguments.empty()) {
        out.arguments = "{}";
    }
    return true;
}

void write_carried(Writer& w, const std::vector<canonical::Extra>& carried, std::string_view prefix,
                   std::initializer_list<std::string_view> skip) {
    for (const canonical::Extra& e : carried) {
        const std::string_view k(e.key);
        if (!k.starts_with(prefix)) {
            continue;
        }
        const std::string_view name = k.substr(prefix.size());
        if (name.find('.') != std::string_view::npos ||
            std::find(skip.begin(), skip.end(), name) != skip.end()) {
            continue;  // a member of a nested object, or one the encoder writes itself
        }
        key(w, name);
        write_raw(w, e.json);
    }
}

std::string_view view(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

const Value* find(const Value& obj, std::string_view key) {
    if (!obj.IsObject()) {
        return nullptr;
    }
    // A plain length-then-bytes scan: FindMember builds a Value for the key and compares
    // through the generic string equality, about twice the work per member.
    const auto size = static_cast<rapidjson::SizeType>(key.size());
    for (auto m = obj.MemberBegin(); m != obj.MemberEnd(); ++m) {
        if (m->name.GetStringLength() == size &&
            std::memcmp(m->name.GetString(), key.data(), key.size()) == 0) {
            return &m->value;
        }
    }
    return nullptr;
}

std::string_view type_name(const Value& v) {
    switch (v.GetType()) {
        case rapidjson::kNullType: return "null";
        case rapidjson::kFalseType:
        case rapidjson::kTrueType: return "a boolean";
        case rapidjson::kObjectType: return "an object";
        case rapidjson::kArrayType: return "an array";
        case rapidjson::kStringType: return "a string";
        case rapidjson::kNumberType: return v.IsInt64() || v.IsUint64() ? "an integer" : "a number";
    }
    return "a value";
}

std::optional<bool> get_bool(const Value& obj, std::string_view key, std::string_view path,
                             std::optional<canonical::Error>& err) {
    const Value* v = find(obj, key);
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsBool()) {
        err = type_error(path, "a boolean", *v);
        return std::nullopt;
    }
    return v->GetBool();
}

std::optional<int64_t> get_int(const Value& obj, std::string_view key, std::string_view path,
                               std::optional<canonical::Error>& err, int64_t min, int64_t max) {
    const Value* v = find(obj, key);
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    int64_t value = 0;
    if (v->IsInt64()) {
        value = v->GetInt64();
    } else if (v->IsDouble() && std::isfinite(v->GetDouble()) &&
               v->GetDouble() == std::floor(v->GetDouble()) && std::fabs(v->GetDouble()) < 9e15) {
        value = static_cast<int64_t>(v->GetDouble());  // 16.0 is an integer too
    } else {
        err = type_error(path, "an integer", *v);
        return std::nullopt;
    }
    if (value < min || value > max) {
        std::string range;
        if (min != INT64_MIN && max != INT64_MAX) {
            range = "between " + std::to_string(min) + " and " + std::to_string(max);
        } else if (min != INT64_MIN) {
            range = ">= " + std::to_string(min);
        } else {
            range = "<= " + std::to_string(max);
        }
        err = canonical::bad_request("'" + std::string(path) + "' must be " + range + ", got " +
                                         std::to_string(value),
                                     std::string(path));
        return std::nullopt;
    }
    return value;
}

std::optional<double> get_number(const Value& obj, std::string_view key, std::string_view path,
                                 std::optional<canonical::Error>& err, double min, double max) {
    const Value* v = find(obj, key);
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsNumber()) {
        err = type_error(path, "a number", *v);
        return std::nullopt;
    }
    const double value = v->GetDouble();
    if (!(value >= min && value <= max)) {
        std::string shown = to_string(*v);
        err = canonical::bad_request("'" + std::string(path) + "' must be between " +
                                         to_string(Value(min)) + " and " + to_string(Value(max)) +
                                         ", got " + shown,
                                     std::string(path));
        return std::nullopt;
    }
    return value;
}

std::optional<std::string> get_string(const Value& obj, std::string_view key,
                                      std::string_view path, std::optional<canonical::Error>& err) {
    const Value* v = find(obj, key);
    if (v == nullptr || v->IsNull()) {
        return std::nullopt;
    }
    if (!v->IsString()) {
        err = type_error(path, "a string", *v);
        return std::nullopt;
    }
    return std::string(view(*v));
}

}  // namespace infergate::json
