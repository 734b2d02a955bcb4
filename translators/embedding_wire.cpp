#include "translators/embedding_wire.hpp"

#include <algorithm>
#include <cmath>

#include "translators/canonical/json_scan.hpp"

namespace infergate::translators::embed_wire {

using canonical::Error;

bool read_vector(const json::Value& v, std::vector<double>& out) {
    if (!v.IsArray()) {
        return false;
    }
    out.clear();
    out.reserve(v.Size());
    for (const auto& x : v.GetArray()) {
        if (!x.IsNumber()) {
            return false;
        }
        out.push_back(x.GetDouble());
    }
    return true;
}

void write_vector(json::Writer& w, const std::vector<double>& values, bool base64) {
    std::string text;
    if (base64) {
        canonical::append_base64_floats(text, values);
        json::string(w, text);
        return;
    }
    w.StartArray();
    for (const double v : values) {
        text.clear();
        if (canonical::append_number(text, v)) {
            w.RawValue(text.data(), text.size(), rapidjson::kNumberType);
        } else {
            w.Null();
        }
    }
    w.EndArray();
}

bool read_ids(const json::Value& v, std::vector<int64_t>& out) {
    if (!v.IsArray() || v.Empty()) {
        return false;
    }
    out.clear();
    out.reserve(v.Size());
    for (const auto& x : v.GetArray()) {
        if (!x.IsInt64() || x.GetInt64() < 0 || x.GetInt64() > 0xFFFFFFFFLL) {
            return false;
        }
        out.push_back(x.GetInt64());
    }
    return true;
}

void write_ids(json::Writer& w, const std::vector<int64_t>& ids) {
    w.StartArray();
    for (const int64_t id : ids) {
        w.Int64(id);
    }
    w.EndArray();
}

void write_texts(json::Writer& w, const std::vector<std::string>& texts, bool as_list) {
    if (!as_list) {
        json::string(w, texts.empty() ? std::string_view() : std::string_view(texts.front()));
        return;
    }
    w.StartArray();
    for (const std::string& t : texts) {
        json::string(w, t);
    }
    w.EndArray();
}

void write_id_lists(json::Writer& w, const std::vector<std::vector<int64_t>>& ids, bool as_list) {
    if (!as_list) {
        write_ids(w, ids.empty() ? std::vector<int64_t>() : ids.front());
        return;
    }
    w.StartArray();
    for (const auto& list : ids) {
        write_ids(w, list);
    }
    w.EndArray();
}

namespace {

bool all_of_type(const json::Value& list, bool (*pred)(const json::Value&)) {
    for (const auto& x : list.GetArray()) {
        if (!pred(x)) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<Error> read_inputs(const json::Value& v, std::string_view name,
                                 const InputRules& rules, canonical::EmbeddingRequest& req) {
    const std::string path(name);
    const auto shape = [&]() {
        std::string kinds = "a string or a list of strings";
        if (rules.tokens) {
            kinds = rules.mixed_list
                        ? "a string, a list of token ids, or a list of strings and token-id lists"
                        : "a string, a list of strings, a list of token ids or a list of "
                          "token-id lists";
        }
        return canonical::bad_request(
            "'" + path + "' must be " + kinds + ", got " + std::string(json::type_name(v)), path);
    };
    req.input_name = path;
    req.inputs.clear();
    if (v.IsString()) {
        req.inputs.push_back(canonical::Prompt{std::string(json::view(v)), {}, false});
        req.input_is_list = false;
        return std::nullopt;
    }
    if (!v.IsArray()) {
        return shape();
    }
    if (v.Empty()) {
        return canonical::bad_request("'" + path + "' must not be an empty list", path);
    }
    if (rules.tokens && all_of_type(v, [](const json::Value& x) { return x.IsNumber(); })) {
        canonical::Prompt p;
        p.is_tokens = true;
        if (!read_ids(v, p.token_ids)) {
            return canonical::bad_request(
                "'" + path + "' holds a number that is not a token id (an integer from 0)", path);
        }
        req.inputs.push_back(std::move(p));
        req.input_is_list = false;
        return std::nullopt;
    }
    req.input_is_list = true;
    size_t i = 0;
    for (const auto& x : v.GetArray()) {
        const std::string item = path + "[" + std::to_string(i++) + "]";
        if (x.IsString()) {
            req.inputs.push_back(canonical::Prompt{std::string(json::view(x)), {}, false});
            continue;
        }
        if (rules.tokens && x.IsArray()) {
            canonical::Prompt p;
            p.is_tokens = true;
            if (!read_ids(x, p.token_ids)) {
                return canonical::bad_request(
                    "'" + item + "' must be a non-empty list of token ids (integers from 0)", item);
            }
            req.inputs.push_back(std::move(p));
            continue;
        }
        return shape();
    }
    if (rules.tokens && !rules.mixed_list && mixes_kinds(req)) {
        return canonical::bad_request(
            "'" + path + "' mixes strings and token-id lists; send one kind", path);
    }
    if (!rules.empty_text) {
        for (size_t k = 0; k < req.inputs.size(); ++k) {
            if (!req.inputs[k].is_tokens && req.inputs[k].text.empty()) {
                return canonical::bad_request("'" + path + "' holds an empty string", path);
            }
        }
    }
    return std::nullopt;
}

void write_inputs(json::Writer& w, std::string_view name, const canonical::EmbeddingRequest& req,
                  bool as_list) {
    json::key(w, name);
    auto one = [&](const canonical::Prompt& p) {
        if (p.is_tokens) {
            write_ids(w, p.token_ids);
        } else {
            json::string(w, p.text);
        }
    };
    if (!as_list && req.inputs.size() == 1) {
        one(req.inputs.front());
        return;
    }
    w.StartArray();
    for (const canonical::Prompt& p : req.inputs) {
        one(p);
    }
    w.EndArray();
}

bool mixes_kinds(const canonical::EmbeddingRequest& req) {
    for (const canonical::Prompt& p : req.inputs) {
        if (p.is_tokens != req.inputs.front().is_tokens) {
            return true;
        }
    }
    return false;
}

bool has_tokens(const canonical::EmbeddingRequest& req) {
    for (const canonical::Prompt& p : req.inputs) {
        if (p.is_tokens) {
            return true;
        }
    }
    return false;
}

std::optional<Error> refuse_extras(const std::vector<canonical::Extra>& extras,
                                   std::string_view backend) {
    for (const canonical::Extra& e : extras) {
        if (!e.inert) {
            return canonical::bad_request(
                "'" + e.key + "' cannot be carried to " + std::string(backend) +
                    ": it has no equivalent there, and infergate passes such a setting only to a "
                    "backend that speaks the client's own API; remove it",
                e.key);
        }
    }
    return std::nullopt;
}

Error cannot_carry(std::string_view param, std::string_view backend, std::string_view why) {
    return canonical::bad_request("'" + std::string(param) + "' cannot be carried to " +
                                      std::string(backend) + ": " + std::string(why),
                                  std::string(param));
}

Error malformed(std::string_view api, std::string_view what) {
    Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message =
        "malformed answer from the backend's " + std::string(api) + ": " + std::string(what);
    return e;
}

void collect_extras(const json::Value& obj, std::initializer_list<std::string_view> known,
                    const canonical::InertRule* rules, size_t rule_count, bool inert_all,
                    std::vector<canonical::Extra>& out) {
    for (const auto& m : obj.GetObject()) {
        const std::string_view key = json::view(m.name);
        if (std::find(known.begin(), known.end(), key) != known.end()) {
            continue;
        }
        canonical::Extra e;
        e.key = std::string(key);
        e.json = json::to_string(m.value);
        e.inert = inert_all || canonical::is_inert(e.key, e.json, rules, rule_count);
        out.push_back(std::move(e));
    }
}

std::optional<int64_t> header_count(const ResponseHeaders& headers, std::string_view name) {
    std::string_view v = headers.find(name);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
        v.remove_prefix(1);
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
    }
    if (v.empty() || v.size() > 18) {
        return std::nullopt;
    }
    int64_t n = 0;
    for (const char c : v) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        n = n * 10 + (c - '0');
    }
    return n;
}

namespace {

// The integer of the last member `key` of the object at `spans`, when it is one.
std::optional<int64_t> int_member(std::string_view text, const json::ObjectSpans& spans,
                                  std::string_view key, const json::MemberSpan** found) {
    const json::MemberSpan* last = nullptr;
    for (const json::MemberSpan& m : spans.members) {
        if (json::key_is(text, m, key)) {
            last = &m;
        }
    }
    if (found != nullptr) {
        *found = last;
    }
    if (last == nullptr) {
        return std::nullopt;
    }
    json::Cursor cur(text.substr(last->value_begin, last->value_end - last->value_begin));
    std::optional<int64_t> n;
    if (cur.at_end() || (cur.peek() != '-' && (cur.peek() < '0' || cur.peek() > '9')) ||
        !cur.number(&n)) {
        return std::nullopt;
    }
    return n;
}

}  // namespace

Result<std::optional<int64_t>> scan_answer(std::string_view body, std::string_view api, bool array,
                                           std::string_view list_key, std::string_view count_key,
                                           std::string_view count_subkey) {
    if (array) {
        json::Cursor cur(body);
        cur.ws();
        if (cur.at_end() || cur.peek() != '[') {
            return malformed(api, "expected a JSON array");
        }
        if (!cur.skip_value(0)) {
            return malformed(api, "invalid JSON");
        }
        cur.ws();
        if (!cur.at_end()) {
            return malformed(api, "bytes after the JSON value");
        }
        return std::optional<int64_t>();
    }
    json::ObjectSpans spans;
    if (!json::scan_object(body, spans)) {
        return malformed(api, "expected one JSON object");
    }
    if (!list_key.empty()) {
        const json::MemberSpan* list = nullptr;
        for (const json::MemberSpan& m : spans.members) {
            list = json::key_is(body, m, list_key) ? &m : list;
        }
        if (list == nullptr || body[list->value_begin] != '[') {
            return malformed(api, "no '" + std::string(list_key) + "' list");
        }
    }
    if (count_key.empty()) {
        return std::optional<int64_t>();
    }
    if (count_subkey.empty()) {
        return int_member(body, spans, count_key, nullptr);
    }
    const json::MemberSpan* outer = nullptr;
    int_member(body, spans, count_key, &outer);
    if (outer == nullptr || body[outer->value_begin] != '{') {
        return std::optional<int64_t>();
    }
    json::ObjectSpans inner;
    if (!json::scan_object_at(body, outer->value_begin, inner)) {
        return malformed(api, "invalid JSON");  // not reached: the whole body was scanned
    }
    return int_member(body, inner, count_subkey, nullptr);
}

void align_pieces(std::string_view input, std::vector<canonical::Token>& tokens) {
    size_t pos = 0;
    for (canonical::Token& t : tokens) {
        if (t.start && t.stop) {
            // Placed by the backend already: the next one comes after it.
            pos = std::max(pos, static_cast<size_t>(std::max<int64_t>(*t.stop, 0)));
            continue;
        }
        if (!t.has_text) {
            continue;
        }
        const std::string_view piece = t.text;
        const std::string_view rest = input.substr(pos);
        size_t length = 0;
        if (!piece.empty() && rest.starts_with(piece)) {
            length = piece.size();
        } else if (piece.size() > 1 && piece.front() == ' ' && rest.starts_with(piece.substr(1))) {
            length = piece.size() - 1;
        } else {
            t.special = t.special.value_or(true);
            t.start = static_cast<int64_t>(pos);
            t.stop = static_cast<int64_t>(pos);
            continue;
        }
        t.special = t.special.value_or(false);
        t.start = static_cast<int64_t>(pos);
        t.stop = static_cast<int64_t>(pos + length);
        pos += length;
    }
}

std::string lossy_utf8(std::string_view bytes) {
    if (canonical::valid_utf8(bytes)) {
        return std::string(bytes);
    }
    std::string out;
    size_t i = 0;
    while (i < bytes.size()) {
        // The longest valid sequence at i (1 to 4 bytes), else one replacement for the byte.
        size_t len = 0;
        for (size_t n = 1; n <= 4 && i + n <= bytes.size(); ++n) {
            if (canonical::valid_utf8(bytes.substr(i, n))) {
                len = n;
                break;
            }
        }
        if (len == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(bytes.substr(i, len));
            i += len;
        }
    }
    return out;
}

}  // namespace infergate::translators::embed_wire
