#include "translators/openai/passthrough.hpp"

#include <algorithm>
#include <vector>

#include "translators/canonical/json_scan.hpp"

namespace infergate::translators::openai {

namespace {

using json::MemberSpan;
using json::ObjectSpans;

void append_string(std::string_view s, std::string& out) {
    json::StringOut os{&out};
    json::Writer w(os);
    json::string(w, s);
}

// What happens to one member of an object being rewritten.
struct MemberEdit {
    enum class Kind { keep, replace, remove } kind = Kind::keep;
    std::string value;  // the new value's JSON text, for replace
};

// Appends the object `spans` (of `text`) with `edits` (one per member) applied and `added`
// members (each "key":value text) put at its end. Every byte not edited is copied: the
// separator that followed a removed member goes with it, so commas stay right.
void rewrite_object(std::string_view text, const ObjectSpans& spans,
                    const std::vector<MemberEdit>& edits, const std::vector<std::string>& added,
                    std::string& out) {
    const auto& members = spans.members;
    out.append(text.substr(spans.open, 1));  // '{'
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
        out.append(text.substr(m.key_begin, m.value_begin - m.key_begin));  // "key" :
        if (edits[i].kind == MemberEdit::Kind::replace) {
            out.append(edits[i].value);
        } else {
            out.append(text.substr(m.value_begin, m.value_end - m.value_begin));
        }
        any = true;
        last = i;
    }
    for (const std::string& a : added) {
        if (any) {
            out.push_back(',');
        }
        out.append(a);
        any = true;
    }
    if (any && added.empty() && last + 1 == members.size()) {
        // The object's own whitespace before its '}'.
        out.append(text.substr(members[last].value_end, spans.close - members[last].value_end));
    } else if (members.empty() && added.empty()) {
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

// The text of `options` (an object member's value in `text`) with each of `keys` set to true.
bool stream_options_with(std::string_view text, const MemberSpan& options,
                         const std::vector<std::string_view>& keys, std::string& out) {
    ObjectSpans spans;
    if (!json::scan_object_at(text, options.value_begin, spans)) {
        return false;
    }
    std::vector<MemberEdit> edits(spans.members.size());
    std::vector<std::string> added;
    for (const std::string_view key : keys) {
        bool found = false;
        for (size_t i = 0; i < spans.members.size(); ++i) {
            if (json::key_is(text, spans.members[i], key)) {
                edits[i].kind = MemberEdit::Kind::replace;
                edits[i].value = "true";
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
    rewrite_object(text, spans, edits, added, out);
    return true;
}

void flatten_lines(std::string& out, size_t from) {
    std::replace_if(
        out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
        [](char c) { return c == '\n' || c == '\r'; }, ' ');
}

}  // namespace

bool edit_response(std::string_view data, const ResponseEdits& e, std::string& out) {
    ObjectSpans spans;
    if (!json::scan_object(data, spans)) {
        return false;
    }
    const size_t start = out.size();
    std::vector<MemberEdit> edits(spans.members.size());
    std::string model;
    std::string id;
    if (!e.model.empty()) {
        append_string(e.model, model);
    }
    if (!e.id.empty()) {
        append_string(e.id, id);
    }
    for (size_t i = 0; i < spans.members.size(); ++i) {
        const MemberSpan& m = spans.members[i];
        if (e.strip_usage && json::key_is(data, m, "usage")) {
            edits[i].kind = MemberEdit::Kind::remove;
        } else if (!model.empty() && is_string(data, m) && json::key_is(data, m, "model")) {
            edits[i] = {MemberEdit::Kind::replace, model};
        } else if (!id.empty() && is_string(data, m) && json::key_is(data, m, "id")) {
            edits[i] = {MemberEdit::Kind::replace, id};
        }
    }
    out.append(data.substr(0, spans.open));
    rewrite_object(data, spans, edits, {}, out);
    out.append(data.substr(spans.close + 1));
    if (e.one_line) {
        flatten_lines(out, start);
    }
    return true;
}

bool edit_request(std::string_view body, const RequestEdits& e, std::string& out) {
    ObjectSpans spans;
    if (!json::scan_object(body, spans)) {
        return false;
    }
    std::vector<MemberEdit> edits(spans.members.size());
    std::vector<std::string> added;
    if (!e.model.empty()) {
        std::string model;
        append_string(e.model, model);
        bool found = false;
        for (size_t i = 0; i < spans.members.size(); ++i) {
            if (json::key_is(body, spans.members[i], "model")) {
                edits[i] = {MemberEdit::Kind::replace, model};
                found = true;
            }
        }
        if (!found) {
            added.push_back("\"model\":" + model);
        }
    }
    std::vector<std::string_view> options;
    if (e.include_usage) {
        options.emplace_back("include_usage");
    }
    if (e.continuous_usage) {
        options.emplace_back("continuous_usage_stats");
    }
    if (!options.empty()) {
        const int at = last_named(body, spans, "stream_options");
        std::string value;
        if (at >= 0 && body[spans.members[static_cast<size_t>(at)].value_begin] == '{') {
            if (!stream_options_with(body, spans.members[static_cast<size_t>(at)], options,
                                     value)) {
                return false;
            }
        } else {
            // Absent, or not an object (null means absent to OpenAI): a new object.
            value = "{";
            for (size_t i = 0; i < options.size(); ++i) {
                value += i == 0 ? "\"" : ",\"";
                value += options[i];
                value += "\":true";
            }
            value += "}";
        }
        if (at >= 0) {
            edits[static_cast<size_t>(at)] = {MemberEdit::Kind::replace, std::move(value)};
        } else {
            added.push_back("\"stream_options\":" + value);
        }
    }
    out.append(body.substr(0, spans.open));
    rewrite_object(body, spans, edits, added, out);
    out.append(body.substr(spans.close + 1));
    return true;
}

}  // namespace infergate::translators::openai
