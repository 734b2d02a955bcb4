#include "translators/openai/passthrough.hpp"

#include <string.h>  // memmem

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "translators/canonical/json_scan.hpp"
#include "translators/canonical/types.hpp"

namespace infergate::translators::openai {

namespace {

using json::MemberSpan;
using json::ObjectSpans;

// `s` as a JSON string literal. Model names and ids rarely need an escape: those are copied.
void append_string(std::string_view s, std::string& out) {
    if (json::detail::find_string_special(s.data(), s.data() + s.size()) == s.data() + s.size()) {
        out.push_back('"');
        out.append(s);
        out.push_back('"');
        return;
    }
    json::StringOut os{&out};
    json::Writer w(os);
    json::string(w, s);
}

// What happens to one member of an object being rewritten.
struct MemberEdit {
    enum class Kind { keep, replace, remove, rename } kind = Kind::keep;
    std::string_view value;  // the new value's JSON text (replace), or the new key's (rename)
};

// Per-thread scratch, so that editing one stream event allocates nothing once warm (the fast
// path edits every chunk of a stream). Two levels: a top-level object and one nested in it.
struct Scratch {
    ObjectSpans spans;
    std::vector<MemberEdit> edits;
    ObjectSpans inner_spans;
    std::vector<MemberEdit> inner_edits;
};

Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// Appends the object `spans` (of `text`) with `edits` (one per member) applied and `added`
// members (each "key":value text) put at its end. Every byte not edited is copied: the
// separator that followed a removed member goes with it, so commas stay right.
void rewrite_object(std::string_view text, const ObjectSpans& spans,
                    const std::vector<MemberEdit>& edits, const std::string_view* added,
                    size_t added_count, std::string& out) {
    const auto& members = spans.members;
    out.push_back('{');
    bool any = false;
    size_t last = 0;  // the index of the last member written, when any
    for (size_t i = 0; i < members.size(); ++i) {
        const MemberSpan& m = members[i];
        if (edits[i].kind == MemberEdit::Kind::remove) {
            continue;
        }
        if (!any) {
            // The whitespace after '{' (or after the removed members' place).
            out.append(text.substr(spans.open + 1, members[0].key_begin - spans.open - 1));
        } else {
            // The separator in front of this member: whitespace, one comma, whitespace.
            out.append(
                text.substr(members[i - 1].value_end, m.key_begin - members[i - 1].value_end));
        }
        if (edits[i].kind == MemberEdit::Kind::replace) {
            out.append(text.substr(m.key_begin, m.value_begin - m.key_begin));  // "key" :
            out.append(edits[i].value);
        } else if (edits[i].kind == MemberEdit::Kind::rename) {
            out.append(edits[i].value);                                   // "new key"
            out.append(text.substr(m.key_end, m.value_end - m.key_end));  // : value
        } else {
            out.append(text.substr(m.key_begin, m.value_end - m.key_begin));
        }
        any = true;
        last = i;
    }
    for (size_t a = 0; a < added_count; ++a) {
        if (any) {
            out.push_back(',');
        }
        out.append(added[a]);
        any = true;
    }
    if (any && added_count == 0 && last + 1 == members.size()) {
        // The object's own whitespace before its '}'.
        out.append(text.substr(members[last].value_end, spans.close - members[last].value_end));
    } else if (members.empty() && added_count == 0) {
        out.append(text.substr(spans.open + 1, spans.close - spans.open - 1));  // {  }
    }
    out.push_back('}');
}

bool is_string(std::string_view text, const MemberSpan& m) {
    return text[m.value_begin] == '"';
}

// The last member named `key`, or -1 (a parser that keeps the last duplicate reads that one).
int last_named(std::string_view text, const ObjectSpans& spans, std::string_view key) {
    for (size_t i = spans.members.size(); i-- > 0;) {
        if (json::key_is(text, spans.members[i], key)) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

// Whether member `m`'s value is the string `want` (escapes decoded).
bool string_value_is(std::string_view text, const MemberSpan& m, std::string_view want) {
    if (text[m.value_begin] != '"') {
        return false;
    }
    const std::string_view raw = text.substr(m.value_begin + 1, m.value_end - m.value_begin - 2);
    return raw.find('\\') == std::string_view::npos ? raw == want : json::unescape(raw) == want;
}

// The bytes of S in a response_format member {"type": "json_schema", "json_schema": {"schema":
// S}} (the last of each key), S not null; empty when `member` is not such.
std::string_view response_format_schema(std::string_view text, const MemberSpan& member) {
    if (text[member.value_begin] != '{') {
        return {};
    }
    ObjectSpans format;
    if (!json::scan_object_at(text, member.value_begin, format)) {
        return {};
    }
    const int type = last_named(text, format, "type");
    const int named = last_named(text, format, "json_schema");
    if (type < 0 || named < 0 ||
        !string_value_is(text, format.members[static_cast<size_t>(type)], "json_schema")) {
        return {};
    }
    const MemberSpan& js = format.members[static_cast<size_t>(named)];
    ObjectSpans inner;
    if (text[js.value_begin] != '{' || !json::scan_object_at(text, js.value_begin, inner)) {
        return {};
    }
    const int schema = last_named(text, inner, "schema");
    if (schema < 0) {
        return {};
    }
    const MemberSpan& sm = inner.members[static_cast<size_t>(schema)];
    const std::string_view value = text.substr(sm.value_begin, sm.value_end - sm.value_begin);
    return value == "null" ? std::string_view() : value;
}

// The text of `options` (an object member's value in `text`) with each of `keys` set to true.
bool stream_options_with(std::string_view text, const MemberSpan& options,
                         const std::vector<std::string_view>& keys, std::string& out) {
    Scratch& s = scratch();
    if (!json::scan_object_at(text, options.value_begin, s.inner_spans)) {
        return false;
    }
    s.inner_edits.assign(s.inner_spans.members.size(), MemberEdit{});
    std::vector<std::string> added;
    for (const std::string_view key : keys) {
        bool found = false;
        for (size_t i = 0; i < s.inner_spans.members.size(); ++i) {
            if (json::key_is(text, s.inner_spans.members[i], key)) {
                s.inner_edits[i] = {MemberEdit::Kind::replace, "true"};
                found = true;
            }
        }
        if (!found) {
            std::string member;
            append_string(key, member);
            member += ":true";
            added.push_back(std::move(member));
        }
    }
    const std::vector<std::string_view> added_views(added.begin(), added.end());
    rewrite_object(text, s.inner_spans, s.inner_edits, added_views.data(), added_views.size(), out);
    return true;
}

// Raw CR and LF in [from, end) of `out` become spaces: valid JSON has them only as whitespace
// between tokens.
void flatten_lines(std::string& out, size_t from) {
    std::replace_if(
        out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
        [](char c) { return c == '\n' || c == '\r'; }, ' ');
}

bool has_line_break(std::string_view s) {
    return std::memchr(s.data(), '\n', s.size()) != nullptr ||
           std::memchr(s.data(), '\r', s.size()) != nullptr;
}

bool contains(std::string_view s, std::string_view needle) {
    return ::memmem(s.data(), s.size(), needle.data(), needle.size()) != nullptr;
}

// Whether a key that `e` edits may be a member of `data`. Without a backslash anywhere, a key is
// its bytes between quotes; with one, an escape may spell it.
bool may_name_an_edited_key(std::string_view data, const ResponseEdits& e) {
    if (std::memchr(data.data(), '\\', data.size()) != nullptr) {
        return true;
    }
    return (e.strip_usage && contains(data, "\"usage\"")) ||
           (!e.model.empty() && contains(data, "\"model\"")) ||
           (!e.id.empty() && contains(data, "\"id\""));
}

// The text of `member`'s value (an object of token-id keys and number values) as llama.cpp's
// [[id, bias], ...], into `out`; false (out unspecified) when it is not such an object.
bool logit_bias_as_pairs(std::string_view text, const MemberSpan& member, std::string& out) {
    if (text[member.value_begin] != '{') {
        return false;
    }
    Scratch& s = scratch();
    if (!json::scan_object_at(text, member.value_begin, s.inner_spans)) {
        return false;
    }
    // As json.loads reads the object (a repeated key: its first place, its last value), then as
    // int() of the keys merges spellings of one token: both as canonical::logit_bias_from_object.
    std::vector<std::pair<std::string, std::string_view>> by_key;
    for (const MemberSpan& m : s.inner_spans.members) {
        std::string key =
            m.key_escaped
                ? json::unescape(text.substr(m.key_begin + 1, m.key_end - m.key_begin - 2))
                : std::string(text.substr(m.key_begin + 1, m.key_end - m.key_begin - 2));
        const std::string_view value = text.substr(m.value_begin, m.value_end - m.value_begin);
        auto it = std::find_if(by_key.begin(), by_key.end(),
                               [&](const auto& e) { return e.first == key; });
        if (it != by_key.end()) {
            it->second = value;
        } else {
            by_key.emplace_back(std::move(key), value);
        }
    }
    std::vector<std::pair<int64_t, std::string_view>> by_id;
    for (const auto& [key, value] : by_key) {
        const std::optional<int64_t> id = canonical::token_id_key(key);
        if (!id || (value[0] != '-' && (value[0] < '0' || value[0] > '9'))) {
            return false;
        }
        auto it =
            std::find_if(by_id.begin(), by_id.end(), [&](const auto& e) { return e.first == *id; });
        if (it != by_id.end()) {
            it->second = value;
        } else {
            by_id.emplace_back(*id, value);
        }
    }
    out.push_back('[');
    for (size_t i = 0; i < by_id.size(); ++i) {
        out.append(i == 0 ? "[" : ",[");
        out.append(std::to_string(by_id[i].first));
        out.push_back(',');
        out.append(by_id[i].second);
        out.push_back(']');
    }
    out.push_back(']');
    return true;
}

}  // namespace

bool edit_response(std::string_view data, const ResponseEdits& e, std::string& out) {
    if (e.trusted && !may_name_an_edited_key(data, e)) {
        const size_t start = out.size();
        out.append(data);
        if (e.one_line && has_line_break(data)) {
            flatten_lines(out, start);
        }
        return true;
    }
    Scratch& s = scratch();
    if (!json::scan_object(data, s.spans)) {
        return false;
    }
    const size_t start = out.size();
    s.edits.assign(s.spans.members.size(), MemberEdit{});
    std::string model;
    std::string id;
    if (!e.model.empty()) {
        append_string(e.model, model);
    }
    if (!e.id.empty()) {
        append_string(e.id, id);
    }
    for (size_t i = 0; i < s.spans.members.size(); ++i) {
        const MemberSpan& m = s.spans.members[i];
        if (e.strip_usage && json::key_is(data, m, "usage")) {
            s.edits[i].kind = MemberEdit::Kind::remove;
        } else if (!model.empty() && is_string(data, m) && json::key_is(data, m, "model")) {
            s.edits[i] = {MemberEdit::Kind::replace, model};
        } else if (!id.empty() && is_string(data, m) && json::key_is(data, m, "id")) {
            s.edits[i] = {MemberEdit::Kind::replace, id};
        }
    }
    out.append(data.substr(0, s.spans.open));
    rewrite_object(data, s.spans, s.edits, nullptr, 0, out);
    out.append(data.substr(s.spans.close + 1));
    if (e.one_line && has_line_break(data)) {
        flatten_lines(out, start);
    }
    return true;
}

bool edit_request(std::string_view body, const RequestEdits& e, std::string& out) {
    Scratch& s = scratch();
    if (!json::scan_object(body, s.spans)) {
        return false;
    }
    s.edits.assign(s.spans.members.size(), MemberEdit{});
    std::string_view added[3];
    size_t added_count = 0;
    std::string model;
    std::string model_member;
    if (!e.model.empty()) {
        append_string(e.model, model);
        bool found = false;
        for (size_t i = 0; i < s.spans.members.size(); ++i) {
            if (json::key_is(body, s.spans.members[i], "model")) {
                s.edits[i] = {MemberEdit::Kind::replace, model};
                found = true;
            }
        }
        if (!found) {
            model_member = "\"model\":" + model;
            added[added_count++] = model_member;
        }
    }
    std::vector<std::string_view> options;
    if (e.include_usage) {
        options.emplace_back("include_usage");
    }
    if (e.continuous_usage) {
        options.emplace_back("continuous_usage_stats");
    }
    std::string value;
    std::string options_member;
    if (!options.empty()) {
        const int at = last_named(body, s.spans, "stream_options");
        if (at >= 0 && body[s.spans.members[static_cast<size_t>(at)].value_begin] == '{') {
            if (!stream_options_with(body, s.spans.members[static_cast<size_t>(at)], options,
                                     value)) {
                return false;
            }
        } else {
            // Absent, or not an object (null means absent to OpenAI): a new object.
            value.assign(1, '{');
            for (size_t i = 0; i < options.size(); ++i) {
                value += i == 0 ? "\"" : ",\"";
                value += options[i];
                value += "\":true";
            }
            value += "}";
        }
        if (at >= 0) {
            s.edits[static_cast<size_t>(at)] = {MemberEdit::Kind::replace, value};
        } else {
            options_member = "\"stream_options\":" + value;
            added[added_count++] = options_member;
        }
    }
    std::vector<std::string> new_keys;  // the renamed members' key texts
    new_keys.reserve(e.rename_count);
    for (size_t r = 0; r < e.rename_count; ++r) {
        const Rename& rename = e.renames[r];
        const int at = last_named(body, s.spans, rename.from);
        if (at < 0 ||
            body.substr(s.spans.members[static_cast<size_t>(at)].value_begin, 4) == "null") {
            continue;
        }
        std::string& key = new_keys.emplace_back();
        append_string(rename.to, key);
        for (size_t i = 0; i < s.spans.members.size(); ++i) {
            if (json::key_is(body, s.spans.members[i], rename.from)) {
                s.edits[i] = {MemberEdit::Kind::rename, key};
            } else if (json::key_is(body, s.spans.members[i], rename.to)) {
                s.edits[i] = {MemberEdit::Kind::remove, {}};
            }
        }
    }
    std::string pairs;
    if (e.logit_bias_pairs) {
        const int at = last_named(body, s.spans, "logit_bias");
        if (at >= 0 && s.edits[static_cast<size_t>(at)].kind == MemberEdit::Kind::keep &&
            logit_bias_as_pairs(body, s.spans.members[static_cast<size_t>(at)], pairs)) {
            s.edits[static_cast<size_t>(at)] = {MemberEdit::Kind::replace, pairs};
        }
    }
    std::string schema_member;
    if (e.schema_from_response_format && last_named(body, s.spans, "json_schema") < 0) {
        const int at = last_named(body, s.spans, "response_format");
        if (at >= 0) {
            const std::string_view schema =
                response_format_schema(body, s.spans.members[static_cast<size_t>(at)]);
            if (!schema.empty()) {
                schema_member.append("\"json_schema\":").append(schema);
                added[added_count++] = schema_member;
            }
        }
    }
    out.append(body.substr(0, s.spans.open));
    rewrite_object(body, s.spans, s.edits, added, added_count, out);
    out.append(body.substr(s.spans.close + 1));
    return true;
}

bool name_edits(Flavor flavor, bool keep_stop_str_sent, RequestEdits& edits) {
    static constexpr Rename kLlamacpp[] = {{"max_completion_tokens", "max_tokens"},
                                           {"repetition_penalty", "repeat_penalty"}};
    static constexpr Rename kSglang[] = {{"include_stop_str_in_output", "no_stop_trim"}};
    if (flavor == Flavor::llamacpp) {
        edits.renames = kLlamacpp;
        edits.rename_count = std::size(kLlamacpp);
        edits.logit_bias_pairs = true;
        edits.schema_from_response_format = true;
        return true;
    }
    if (flavor == Flavor::sglang && keep_stop_str_sent) {
        edits.renames = kSglang;
        edits.rename_count = std::size(kSglang);
        return true;
    }
    return false;
}

}  // namespace infergate::translators::openai
