// Reading what a chat request asks besides text (tools, tool choice, a trailing tool result,
// images, a reasoning switch) and planning the deterministic answer (chat_extras.hpp).
#include "emulator/chat_extras.hpp"

#include <algorithm>

#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

constexpr std::size_t kFragmentBytes = 8;  // the longest streamed argument fragment
// How deep a structured-output value fills in nested objects; deeper ones are {} (a request's
// schema may nest deeper than the stack should go).
constexpr int kMaxSchemaNesting = 32;

std::string_view str(const Value& v) {
    return {v.GetString(), v.GetStringLength()};
}

std::string_view string_member(const Value& obj, std::string_view name) {
    const Value* v = member(obj, name);
    return v != nullptr && v->IsString() ? str(*v) : std::string_view();
}

std::string json_string(std::string_view s) {
    std::string out;
    JsonWriter w(out);
    w.str(s);
    return out;
}

// The text reversed by code point (a byte reversal would break UTF-8).
std::string reversed(std::string_view s) {
    std::vector<std::string_view> points;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t n = 1;
        while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xc0) == 0x80) {
            ++n;
        }
        points.push_back(s.substr(i, n));
        i += n;
    }
    std::string out;
    out.reserve(s.size());
    for (auto it = points.rbegin(); it != points.rend(); ++it) {
        out += *it;
    }
    return out;
}

ToolSpec tool_from_schema(std::string_view name, const Value* schema, int nest);

// The value the plan gives a property, from its schema. `nest` > 0: an object with
// `properties` gets its members too (structured output), down to that many more levels.
std::string arg_value(std::string_view name, const Value& schema, int nest) {
    if (const Value* e = member(schema, "enum"); e != nullptr && e->IsArray() && !e->Empty()) {
        return compact_json((*e)[0]);
    }
    const Value* props = member(schema, "properties");
    const bool members = nest > 0 && props != nullptr && props->IsObject();
    std::string_view type;
    if (const Value* t = member(schema, "type")) {
        if (t->IsString()) {
            type = str(*t);
        } else if (t->IsArray()) {  // ["string", "null"]: the first that is not null
            for (const Value& each : t->GetArray()) {
                if (each.IsString() && str(each) != "null") {
                    type = str(each);
                    break;
                }
            }
        }
    }
    if (type == "integer") {
        return "7";
    }
    if (type == "number") {
        return "1.5";
    }
    if (type == "boolean") {
        return "true";
    }
    if (type == "array") {
        return "[]";
    }
    if (type == "object" || (type.empty() && members)) {
        return members
                   ? render_args(tool_from_schema(name, &schema, nest - 1), ArgsLayout::kCompact)
                   : "{}";
    }
    return json_string(reversed(name));  // "string", and anything without a usable type
}

ToolSpec tool_from_schema(std::string_view name, const Value* schema, int nest) {
    ToolSpec tool;
    tool.name = std::string(name);
    const Value* props = schema != nullptr ? member(*schema, "properties") : nullptr;
    if (props != nullptr && props->IsObject()) {
        for (const auto& m : props->GetObject()) {
            tool.args.push_back({std::string(str(m.name)), arg_value(str(m.name), m.value, nest)});
        }
    }
    return tool;
}

// OpenAI and Ollama: [{"type": "function", "function": {"name", "parameters"}}].
void read_function_tools(const Value& doc, ChatAsk& ask) {
    const Value* tools = member(doc, "tools");
    if (tools == nullptr || !tools->IsArray()) {
        return;
    }
    for (const Value& t : tools->GetArray()) {
        const Value* fn = member(t, "function");
        if (fn == nullptr || !fn->IsObject()) {
            continue;
        }
        const std::string_view name = string_member(*fn, "name");
        if (!name.empty()) {
            ask.tools.push_back(tool_from_schema(name, member(*fn, "parameters"), 0));
        }
    }
}

// Anthropic: [{"name", "input_schema"}]; server tools (a "type" other than "custom") call no
// client code and are left out.
void read_anthropic_tools(const Value& doc, ChatAsk& ask) {
    const Value* tools = member(doc, "tools");
    if (tools == nullptr || !tools->IsArray()) {
        return;
    }
    for (const Value& t : tools->GetArray()) {
        const std::string_view type = string_member(t, "type");
        const std::string_view name = string_member(t, "name");
        if (!name.empty() && (type.empty() || type == "custom")) {
            ask.tools.push_back(tool_from_schema(name, member(t, "input_schema"), 0));
        }
    }
}

std::optional<std::size_t> tool_index(const ChatAsk& ask, std::string_view name) {
    for (std::size_t i = 0; i < ask.tools.size(); ++i) {
        if (ask.tools[i].name == name) {
            return i;
        }
    }
    return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}; TGI
// also takes a bare function name. Anthropic: {"type": "auto" | "any" | "none" | "tool", "name",
// "disable_parallel_tool_use"}.
void read_tool_choice(const Value& doc, ChatFamily family, ChatAsk& ask) {
    ask.tools_on = !ask.tools.empty();
    const Value* choice = member(doc, "tool_choice");
    if (choice == nullptr || family == ChatFamily::kOllama) {
        return;
    }
    if (family == ChatFamily::kAnthropic) {
        const std::string_view type = string_member(*choice, "type");
        bool one = false;
        get_bool(*choice, "disable_parallel_tool_use", one);
        ask.parallel = !one;
        if (type == "none") {
            ask.tools_on = false;
        } else if (type == "tool") {
            ask.named = tool_index(ask, string_member(*choice, "name"));
        }
        return;
    }
    if (choice->IsString()) {
        const std::string_view s = str(*choice);
        if (s == "none") {
            ask.tools_on = false;
        } else if (s != "auto" && s != "required") {
            ask.named = tool_index(ask, s);
        }
    } else if (const Value* fn = member(*choice, "function")) {
        ask.named = tool_index(ask, string_member(*fn, "name"));
    }
}

// A message's text: a string, or the text of its parts joined.
std::string content_text(const Value* content) {
    if (content == nullptr) {
        return {};
    }
    if (content->IsString()) {
        return std::string(str(*content));
    }
    std::string text;
    if (content->IsArray()) {
        for (const Value& part : content->GetArray()) {
            text += string_member(part, "text");
        }
    }
    return text;
}

// The text of the tool results that end the conversation, or nothing.
std::optional<std::string> trailing_results(const Value& messages, ChatFamily family) {
    std::vector<std::string> texts;
    if (family == ChatFamily::kAnthropic) {
        // A user turn made of tool_result blocks.
        const Value& last = messages[messages.Size() - 1];
        const Value* content = member(last, "content");
        if (string_member(last, "role") != "user" || content == nullptr || !content->IsArray() ||
            content->Empty()) {
            return std::nullopt;
        }
        for (const Value& block : content->GetArray()) {
            if (string_member(block, "type") != "tool_result") {
                return std::nullopt;
            }
            texts.push_back(content_text(member(block, "content")));
        }
    } else {
        // Trailing messages with role "tool", in order.
        std::size_t first = messages.Size();
        while (first > 0 && string_member(messages[first - 1], "role") == "tool") {
            --first;
        }
        for (std::size_t i = first; i < messages.Size(); ++i) {
            texts.push_back(content_text(member(messages[i], "content")));
        }
    }
    if (texts.empty()) {
        return std::nullopt;
    }
    std::string joined = "tool said: ";
    for (std::size_t i = 0; i < texts.size(); ++i) {
        joined += i == 0 ? "" : "; ";
        joined += texts[i];
    }
    return joined;
}

// Bytes a base64 text decodes to (padding, whitespace and anything else not counted).
std::uint64_t base64_decoded_size(std::string_view b64) {
    std::uint64_t sextets = 0;
    for (char c : b64) {
        const bool digit = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '-' || c == '_';
        sextets += digit ? 1 : 0;
    }
    return sextets * 6 / 8;
}

// An image_url part's URL: data:...;base64,<data> counts its decoded size, other data: URLs
// their payload, anything else 0.
std::uint64_t url_image_bytes(std::string_view url) {
    if (!url.starts_with("data:")) {
        return 0;
    }
    const auto comma = url.find(',');
    if (comma == std::string_view::npos) {
        return 0;
    }
    const std::string_view meta = url.substr(0, comma);
    const std::string_view payload = url.substr(comma + 1);
    return meta.ends_with(";base64") ? base64_decoded_size(payload) : payload.size();
}

void count_images(const Value& messages, ChatFamily family, ChatAsk& ask) {
    for (const Value& m : messages.GetArray()) {
        if (family == ChatFamily::kOllama) {
            if (const Value* images = member(m, "images"); images != nullptr && images->IsArray()) {
                for (const Value& img : images->GetArray()) {
                    ++ask.images;
                    ask.image_bytes += img.IsString() ? base64_decoded_size(str(img)) : 0;
                }
            }
            continue;
        }
        const Value* content = member(m, "content");
        if (content == nullptr || !content->IsArray()) {
            continue;
        }
        for (const Value& part : content->GetArray()) {
            const std::string_view type = string_member(part, "type");
            if (family == ChatFamily::kAnthropic && type == "image") {
                ++ask.images;
                const Value* source = member(part, "source");
                if (source != nullptr && string_member(*source, "type") == "base64") {
                    ask.image_bytes += base64_decoded_size(string_member(*source, "data"));
                }
            } else if (family == ChatFamily::kOpenai && type == "image_url") {
                ++ask.images;
                if (const Value* image = member(part, "image_url")) {
                    ask.image_bytes += url_image_bytes(
                        image->IsString() ? str(*image) : string_member(*image, "url"));
                }
            }
        }
    }
}

bool thinking_switch(const Value& doc, ChatFamily family) {
    if (family == ChatFamily::kAnthropic) {
        const Value* thinking = member(doc, "thinking");
        const std::string_view type =
            thinking != nullptr ? string_member(*thinking, "type") : std::string_view();
        return type == "enabled" || type == "adaptive";
    }
    if (family == ChatFamily::kOllama) {
        // think: true, or a level ("high", "medium", "low").
        const Value* think = member(doc, "think");
        return think != nullptr && ((think->IsBool() && think->GetBool()) ||
                                    (think->IsString() && str(*think) != "false" &&
                                     str(*think) != "none" && think->GetStringLength() > 0));
    }
    return false;
}

// Token ends of a text: one token per word, its leading whitespace included; whitespace at the
// end joins the last word.
std::vector<std::uint32_t> word_ends(std::string_view text) {
    std::vector<std::uint32_t> ends;
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && space(text[i])) {
            ++i;
        }
        if (i == text.size()) {  // trailing whitespace joins the last word
            if (ends.empty()) {
                ends.push_back(static_cast<std::uint32_t>(i));
            }
            ends.back() = static_cast<std::uint32_t>(i);
            break;
        }
        while (i < text.size() && !space(text[i])) {
            ++i;
        }
        ends.push_back(static_cast<std::uint32_t>(i));
    }
    return ends;
}

// Fragment ends of `text` from `from`: pieces of at most kFragmentBytes, never inside a UTF-8
// sequence.
std::vector<std::uint32_t> fragment_ends(std::string_view text, std::size_t from) {
    std::vector<std::uint32_t> ends;
    std::size_t at = from;
    while (at < text.size()) {
        std::size_t end = std::min(text.size(), at + kFragmentBytes);
        while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) {
            ++end;
        }
        ends.push_back(static_cast<std::uint32_t>(end));
        at = end;
    }
    return ends;
}

std::string random_from(std::string_view alphabet, std::size_t n) {
    std::string out;
    while (out.size() < n) {
        const std::string hex = random_hex_id();
        for (std::size_t i = 0; i + 1 < hex.size() && out.size() < n; i += 2) {
            const int v = std::stoi(hex.substr(i, 2), nullptr, 16);
            out.push_back(alphabet[static_cast<std::size_t>(v) % alphabet.size()]);
        }
    }
    return out;
}

}  // namespace

ChatAsk read_chat_ask(const Value& doc, ChatFamily family) {
    ChatAsk ask;
    if (!doc.IsObject()) {
        return ask;
    }
    if (family == ChatFamily::kAnthropic) {
        read_anthropic_tools(doc, ask);
    } else {
        read_function_tools(doc, ask);
    }
    read_tool_choice(doc, family, ask);
    if (family == ChatFamily::kOpenai) {
        get_bool(doc, "parallel_tool_calls", ask.parallel);
    }
    ask.thinking = thinking_switch(doc, family);
    const Value* messages = member(doc, "messages");
    if (messages != nullptr && messages->IsArray() && !messages->Empty()) {
        ask.result = trailing_results(*messages, family);
        count_images(*messages, family, ask);
    }
    return ask;
}

std::string render_args(const ToolSpec& tool, ArgsLayout layout) {
    const bool python = layout != ArgsLayout::kCompact;
    std::string out = "{";
    for (std::size_t i = 0; i < tool.args.size(); ++i) {
        if (i > 0) {
            out += python ? ", " : ",";
        } else if (layout == ArgsLayout::kTgiStream) {
            out += ' ';
        }
        out += json_string(tool.args[i].name);
        out += python ? ": " : ":";
        out += tool.args[i].value;
    }
    out += '}';
    return out;
}

void write_args_object(JsonWriter& w, const ToolSpec& tool) {
    w.StartObject();
    for (const ToolArg& a : tool.args) {
        w.key(a.name);
        w.RawValue(a.value.data(), a.value.size(), rapidjson::kObjectType);
    }
    w.EndObject();
}

std::string_view PlannedCall::fragments(std::size_t from, std::size_t to) const {
    const std::size_t begin = from == 0 ? head : ends[from - 1];
    const std::size_t end = to == 0 ? head : ends[to - 1];
    return std::string_view(args).substr(begin, end - begin);
}

int ChatPlan::call_tokens() const {
    int n = 0;
    for (const PlannedCall& c : calls) {
        n += c.tokens();
    }
    return n;
}

ChatPlan plan_chat(ChatAsk ask, const Knobs& knobs, const PlanOptions& options) {
    ChatPlan plan;
    if (options.reasons && (knobs.reasoning || ask.thinking)) {
        plan.reasoning = knobs.reasoning && !knobs.reasoning->empty()
                             ? *knobs.reasoning
                             : std::string(kDefaultReasoning);
        plan.reasoning_ends = word_ends(plan.reasoning);
    }
    if (!ask.result && ask.tools_on) {
        const int n = std::min(knobs.tool_calls, ask.parallel ? options.max_calls : 1);
        plan.named = ask.named.has_value();
        for (int k = 0; k < n; ++k) {
            PlannedCall& call = plan.calls.emplace_back();
            call.tool = ask.named ? *ask.named : static_cast<std::size_t>(k) % ask.tools.size();
            call.args = render_args(ask.tools[call.tool], options.layout);
            call.head = options.layout == ArgsLayout::kTgiStream ? 1 : 0;
            call.ends = fragment_ends(call.args, call.head);
        }
    }
    // Calls leave no text; a format's text comes before the others.
    if (plan.calls.empty() && ask.format) {
        plan.text = std::move(ask.format);
        plan.text_ends = format_pieces(*plan.text);
    } else if (plan.calls.empty() && (ask.result || ask.images > 0)) {
        plan.text = ask.result ? std::move(*ask.result)
                               : "images: " + std::to_string(ask.images) +
                                     ", bytes: " + std::to_string(ask.image_bytes);
        plan.text_ends = word_ends(*plan.text);
    }
    plan.tools = std::move(ask.tools);
    return plan;
}

void lead_spans(const ChatPlan& plan, int from, int to, std::vector<LeadSpan>& out) {
    out.clear();
    const int r = plan.reasoning_tokens();
    if (from < r) {
        const int upto = std::min(to, r);
        const std::size_t begin =
            from == 0 ? 0 : plan.reasoning_ends[static_cast<std::size_t>(from - 1)];
        const std::size_t end = plan.reasoning_ends[static_cast<std::size_t>(upto - 1)];
        out.push_back({LeadSpan::Kind::kReasoning, 0,
                       std::string_view(plan.reasoning).substr(begin, end - begin)});
    }
    int base = r;
    for (std::size_t k = 0; k < plan.calls.size(); ++k) {
        const PlannedCall& call = plan.calls[k];
        const int lo = std::max(from, base);
        const int hi = std::min(to, base + call.tokens());
        if (lo < hi) {
            if (lo == base) {
                out.push_back({LeadSpan::Kind::kCallStart, k,
                               std::string_view(call.args).substr(0, call.head)});
            }
            const int first = std::max(lo - base, 1);  // fragments are tokens 1..
            if (first < hi - base) {
                out.push_back({LeadSpan::Kind::kArgs, k,
                               call.fragments(static_cast<std::size_t>(first - 1),
                                              static_cast<std::size_t>(hi - base - 1))});
            }
        }
        base += call.tokens();
    }
}

std::string schema_value(const Value* schema) {
    return render_args(tool_from_schema("", schema, kMaxSchemaNesting), ArgsLayout::kCompact);
}

std::vector<std::uint32_t> format_pieces(std::string_view text) {
    if (text.empty()) {
        return {};
    }
    std::size_t first = 1;  // the first character, a whole UTF-8 sequence
    while (first < text.size() && (static_cast<unsigned char>(text[first]) & 0xc0) == 0x80) {
        ++first;
    }
    std::vector<std::uint32_t> ends{static_cast<std::uint32_t>(first)};
    const std::vector<std::uint32_t> rest = fragment_ends(text, first);
    ends.insert(ends.end(), rest.begin(), rest.end());
    return ends;
}

Output format_output(std::string_view text, int budget) {
    return scripted_output(text, format_pieces(text), budget);
}

Output scripted_output(std::string_view text, std::span<const std::uint32_t> ends, int budget) {
    Output out;
    out.budget = budget;
    out.raw_text = std::string(text);
    std::uint32_t start = 0;
    for (std::uint32_t end : ends) {
        if (out.completion_tokens() == budget) {
            out.final_len = start;
            out.raw_text.resize(start);
            out.finish = Finish::kLength;
            return out;
        }
        std::uint64_t h = 1469598103934665603ULL;
        for (std::size_t i = start; i < end; ++i) {
            h = (h ^ static_cast<unsigned char>(text[i])) * 1099511628211ULL;
        }
        out.token_ids.push_back(1000 + static_cast<std::int64_t>(h % 31000));
        out.text_end.push_back(end);
        start = end;
    }
    out.final_len = out.raw_text.size();
    if (out.completion_tokens() == budget) {
        out.finish = Finish::kLength;
        return out;
    }
    out.token_ids.push_back(kEosTokenId);
    out.text_end.push_back(static_cast<std::uint32_t>(out.raw_text.size()));
    out.finish = Finish::kEos;
    out.matched_token = kEosTokenId;
    return out;
}

Output no_text_output() {
    Output out;
    out.finish = Finish::kEos;
    out.matched_token = kEosTokenId;
    return out;
}

void apply_plan(const ChatPlan& plan, std::vector<ChoiceState>& choices, int budget) {
    for (ChoiceState& c : choices) {
        c.lead_tokens = plan.lead_tokens();
        if (plan.text) {
            c.out = scripted_output(*plan.text, plan.text_ends, budget);
        } else if (!plan.calls.empty()) {
            c.out = no_text_output();
        }
    }
}

std::string vllm_tool_call_id() {
    return "chatcmpl-tool-" + random_hex_id();
}

std::string sglang_tool_call_id() {
    return "call_" + random_hex_id().substr(0, 24);
}

std::string ollama_tool_call_id() {
    return "call_" + random_from("abcdefghijklmnopqrstuvwxyz0123456789", 8);
}

std::string llamacpp_tool_call_id() {
    return random_alnum(32);
}

std::string anthropic_tool_use_id() {
    return "toolu_" + random_alnum(24);
}

std::string tgi_tool_call_id(const Value& doc) {
    std::uint64_t next = 0;
    const Value* messages = member(doc, "messages");
    if (messages != nullptr && messages->IsArray()) {
        for (const Value& m : messages->GetArray()) {
            const Value* calls = member(m, "tool_calls");
            if (calls == nullptr || !calls->IsArray()) {
                continue;
            }
            for (const Value& c : calls->GetArray()) {
                const std::string_view id = string_member(c, "id");
                const bool number = !id.empty() && id.size() < 19 &&
                                    std::all_of(id.begin(), id.end(),
                                                [](char ch) { return ch >= '0' && ch <= '9'; });
                if (!number) {
                    // Uuid::new_v4().to_string(): hyphenated lower-case hex.
                    const std::string h = random_hex_id();
                    return h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-" +
                           "89ab"[h[16] % 4] + h.substr(17, 3) + "-" + h.substr(20, 12);
                }
                next = std::max<std::uint64_t>(next, std::stoull(std::string(id)) + 1);
            }
        }
    }
    return std::to_string(next);
}

std::string thinking_signature(std::string_view thinking) {
    static constexpr char kB64[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : thinking) {
        h = (h ^ c) * 1099511628211ULL;
    }
    std::string out = "EqQB";  // the real ones start with a protobuf-ish header too
    for (int i = 0; i < 15; ++i) {
        h = splitmix64(h);
        for (int k = 0; k < 4; ++k) {
            out.push_back(kB64[(h >> (6 * k)) & 63]);
        }
    }
    return out;
}

}  // namespace infergate::emulator
