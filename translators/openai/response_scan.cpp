#include "translators/openai/response_scan.hpp"

#include <cstdint>
#include <cstring>

#include "translators/canonical/json_scan.hpp"
#include "translators/openai/common.hpp"

namespace infergate::translators::openai {

namespace {

// What the value being read is to the caller.
enum class Role {
    other,           // anything: validated and skipped
    root,            // the document: must be an object
    choices,         // the first top-level "choices": must be an array of objects
    choice,          // one of its elements: its first "finish_reason" is read
    finish,          // a choice's finish_reason: read when it is a string
    usage,           // the first top-level "usage": its counts are read when it is an object
    details,         // usage's first "prompt_tokens_details": its cached_tokens is read
    output_details,  // usage's first "completion_tokens_details": its reasoning_tokens is read
    count,           // a count: read when it is an int64
};

// A recursive-descent validator of RFC 8259 JSON over the raw bytes (json::Cursor's tokens). It
// accepts nothing that RapidJSON (as json::parse runs it) rejects; whatever it does not judge
// makes it fail, and the caller falls back to the full decode.
class Scanner {
public:
    explicit Scanner(std::string_view body) : cur_(body) {}

    std::optional<canonical::Usage> run() {
        cur_.ws();
        if (!value(Role::root, 0) || !choices_) {
            return std::nullopt;
        }
        cur_.ws();
        if (!cur_.at_end()) {
            return std::nullopt;  // trailing bytes
        }
        // As read_usage: OpenAI's completion_tokens_details first, then SGLang's member.
        usage_.reasoning_tokens = detailed_reasoning_ ? detailed_reasoning_ : plain_reasoning_;
        return usage_;
    }
    canonical::FinishKind finish() const { return finish_; }

private:
    bool at(char c) const { return !cur_.at_end() && cur_.peek() == c; }

    bool value(Role role, int depth) {
        if (cur_.at_end()) {
            return false;
        }
        const char c = cur_.peek();
        if (c == '{') {
            return object(role, depth + 1);
        }
        if (c == '[') {
            return array(role, depth + 1);
        }
        if (role == Role::root || role == Role::choices) {
            return false;  // the wrong shape: the full decode says so
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            std::optional<int64_t> integer;
            if (!cur_.number(&integer)) {
                return false;
            }
            if (role == Role::count && count_ != nullptr) {
                *count_ = integer;
            }
            return true;
        }
        if (role == Role::finish && c == '"') {
            std::string_view name;
            bool escaped = false;
            if (!cur_.string(name, escaped)) {
                return false;
            }
            // (No finish name has an escape; one written with escapes is left unread.)
            const canonical::FinishKind kind =
                escaped ? canonical::FinishKind::none : parse_finish_kind(name);
            if (kind == canonical::FinishKind::tool_calls ||
                finish_ == canonical::FinishKind::none) {
                finish_ = kind;
            }
            return true;
        }
        return cur_.skip_value(depth);  // a string or a literal
    }

    bool object(Role role, int depth) {
        if (depth > json::kMaxDepth) {
            return false;
        }
        cur_.advance();  // '{'
        cur_.ws();
        if (at('}')) {
            cur_.advance();
            return role != Role::choices;
        }
        if (role == Role::choices) {
            return false;
        }
        bool seen_finish = false;  // a choice's first finish_reason counts, as json::find has it
        for (;;) {
            if (!at('"')) {
                return false;
            }
            std::string_view key;
            bool escaped = false;
            if (!cur_.string(key, escaped) || escaped) {
                return false;  // an escaped key may equal a name read here: not judged
            }
            cur_.ws();
            if (!at(':')) {
                return false;
            }
            cur_.advance();
            cur_.ws();
            count_ = nullptr;
            Role member = Role::other;
            if (role == Role::root) {
                if (key == "choices" && !seen_choices_) {
                    seen_choices_ = true;
                    member = Role::choices;
                } else if (key == "usage" && !seen_usage_) {
                    seen_usage_ = true;
                    member = Role::usage;
                }
            } else if (role == Role::usage) {
                if (key == "prompt_tokens" && !seen_prompt_) {
                    seen_prompt_ = true;
                    member = Role::count;
                    count_ = &usage_.prompt_tokens;
                } else if (key == "completion_tokens" && !seen_completion_) {
                    seen_completion_ = true;
                    member = Role::count;
                    count_ = &usage_.completion_tokens;
                } else if (key == "prompt_tokens_details" && !seen_details_) {
                    seen_details_ = true;
                    member = Role::details;
                } else if (key == "completion_tokens_details" && !seen_output_details_) {
                    seen_output_details_ = true;
                    member = Role::output_details;
                } else if (key == "reasoning_tokens" && !seen_plain_reasoning_) {
                    seen_plain_reasoning_ = true;
                    member = Role::count;
                    count_ = &plain_reasoning_;
                }
            } else if (role == Role::choice && key == "finish_reason" && !seen_finish) {
                seen_finish = true;
                member = Role::finish;
            } else if (role == Role::output_details && key == "reasoning_tokens" &&
                       !seen_detailed_reasoning_) {
                seen_detailed_reasoning_ = true;
                member = Role::count;
                count_ = &detailed_reasoning_;
            } else if (role == Role::details && key == "cached_tokens" && !seen_cached_) {
                seen_cached_ = true;
                member = Role::count;
                count_ = &usage_.cached_tokens;
            }
            if (!value(member, depth)) {
                return false;
            }
            if (const auto next = cur_.after_item('}'); next != json::Cursor::Next::more) {
                return next == json::Cursor::Next::closed;
            }
        }
    }

    bool array(Role role, int depth) {
        if (depth > json::kMaxDepth || role == Role::root) {
            return false;
        }
        if (role == Role::choices) {
            choices_ = true;
        }
        cur_.advance();  // '['
        cur_.ws();
        if (at(']')) {
            cur_.advance();
            return true;
        }
        for (;;) {
            // The elements of choices must be objects (read as anything else is).
            if (role == Role::choices && !at('{')) {
                return false;
            }
            if (!value(role == Role::choices ? Role::choice : Role::other, depth)) {
                return false;
            }
            if (const auto next = cur_.after_item(']'); next != json::Cursor::Next::more) {
                return next == json::Cursor::Next::closed;
            }
        }
    }

    json::Cursor cur_;
    canonical::Usage usage_;
    std::optional<int64_t>* count_ = nullptr;  // where the count being read goes
    canonical::FinishKind finish_ = canonical::FinishKind::none;
    bool choices_ = false;
    bool seen_choices_ = false;
    bool seen_usage_ = false;
    bool seen_prompt_ = false;
    bool seen_completion_ = false;
    bool seen_details_ = false;
    bool seen_cached_ = false;
    std::optional<int64_t> detailed_reasoning_;  // completion_tokens_details.reasoning_tokens
    std::optional<int64_t> plain_reasoning_;     // usage.reasoning_tokens (SGLang)
    bool seen_output_details_ = false;
    bool seen_detailed_reasoning_ = false;
    bool seen_plain_reasoning_ = false;
};

}  // namespace

std::optional<canonical::Usage> scan_response_usage(std::string_view body,
                                                    canonical::FinishKind* finish) {
    Scanner scanner(body);
    auto usage = scanner.run();
    if (usage && finish != nullptr) {
        *finish = scanner.finish();
    }
    return usage;
}

}  // namespace infergate::translators::openai
