#pragma once
// RapidJSON helpers shared by every codec: bounded parsing that reports where the body is wrong,
// typed field readers that name the offending field, and a writer that appends straight into a
// std::string (no intermediate buffer).

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include "translators/canonical/types.hpp"

namespace infergate::json {

using Value = rapidjson::Value;

namespace detail {

// The memory of a Document, constructed before the rapidjson document that uses it.
struct DocumentStorage {
    using Pool = rapidjson::MemoryPoolAllocator<>;
    static constexpr size_t kValueBytes = 6 * 1024;
    static constexpr size_t kStackBytes = 1024;
    static constexpr size_t kTextBytes = 4 * 1024;
    alignas(16) std::array<char, kValueBytes> value_buffer;
    alignas(16) std::array<char, kStackBytes> stack_buffer;
    Pool values{value_buffer.data(), value_buffer.size()};
    Pool stack{stack_buffer.data(), stack_buffer.size()};
    // The parsed text, copied and NUL-terminated: parsed in situ, so string values point into it
    // instead of being copied into the pool one byte at a time.
    alignas(16) std::array<char, kTextBytes> text_buffer;
    std::string text_spill;  // for text longer than text_buffer
};

// `text` copied into `buf` (or, when it does not fit, into `spill`) with a NUL after it, for
// RapidJSON's in-situ parsing.
template <size_t N>
char* nul_terminated_copy(std::string_view text, std::array<char, N>& buf, std::string& spill) {
    char* out = buf.data();
    if (text.size() >= buf.size()) {
        spill.resize(text.size() + 1);
        out = spill.data();
    }
    if (!text.empty()) {  // an empty view's data() may be null, which memcpy must not get
        std::memcpy(out, text.data(), text.size());
    }
    out[text.size()] = '\0';
    return out;
}

}  // namespace detail

// A parsed JSON document whose text, first 6 KiB of values and parse stack live inside the
// object: the small JSON of a request or a stream event is parsed without touching the heap (a
// default rapidjson::Document mallocs a 64 KiB pool and a stack for every parse), and its strings
// are not copied (json::parse parses a private copy of the text in situ). Larger input spills to
// the heap. Not copyable or movable (its allocators and strings point into it): declare it where
// it is used.
class Document
    : private detail::DocumentStorage,
      public rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                                        rapidjson::MemoryPoolAllocator<>> {
    using Base = rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                                            rapidjson::MemoryPoolAllocator<>>;

public:
    Document() : Base(&values, kStackBytes / 2, &stack) {}
    Document(const Document&) = delete;
    Document& operator=(const Document&) = delete;

    // A NUL-terminated private copy of `text`, to be parsed in situ (json::parse does).
    char* copy_text(std::string_view text);
};

// Deeper nesting than this is rejected before parsing (no request needs it; deep input must not
// cost stack or time).
inline constexpr int kMaxDepth = 64;

// True when `body` nests no deeper than kMaxDepth: what makes RapidJSON's recursive parser
// safe on untrusted input (a memchr count of brackets, walked precisely only when it is high).
bool depth_within_limit(std::string_view body);

// RapidJSON's SAX reader over a private NUL-terminated copy of `body`, parsed in situ (string
// values are not copied) and depth-bounded like parse(). For the paths that need a few members
// of a document and not the document. False when the body is malformed, too deep, or the
// handler stopped the parse. `kFlags`: more RapidJSON parse flags (kParseStopWhenDoneFlag to
// ignore what follows the value).
template <unsigned kFlags = 0, class Handler>
bool sax(std::string_view body, Handler& handler) {
    if (!depth_within_limit(body)) {
        return false;
    }
    std::array<char, 2048> inline_copy;
    std::string spill;
    rapidjson::InsituStringStream in(detail::nul_terminated_copy(body, inline_copy, spill));
    rapidjson::Reader reader;
    return !reader.Parse<rapidjson::kParseInsituFlag | kFlags>(in, handler).IsError();
}

// How numbers with more than 15 significant digits are read: `fast` may leave the last binary
// digit off (RapidJSON's default); `exact` reads the nearest double, so a number read and
// written again keeps its digits. Exact costs about 250 instructions per stream event (every
// digit of every number is buffered), so it is asked for only where such numbers are carried:
// log probabilities (canonical::exact_numbers).
enum class Numbers { fast, exact };

// Parses `body` (depth-bounded). On failure returns a 400 whose message says where:
// "malformed JSON in request body at offset 17: Missing a comma or '}' after an object member."
std::optional<canonical::Error> parse(std::string_view body, Document& doc,
                                      std::string_view what = "request body",
                                      Numbers numbers = Numbers::fast);

// A client's request body: parse() and then a JSON object, or the 400 that says which it is not
// ("the request body must be a JSON object, got an array").
std::optional<canonical::Error> parse_request_object(std::string_view body, Document& doc);

// Output stream adapter for rapidjson::Writer that appends to a std::string.
struct StringOut {
    using Ch = char;
    std::string* s;
    void Put(char c) { s->push_back(c); }
    void Flush() {}
};

namespace detail {

// The first byte in [p, end) that a JSON string cannot hold as it is: a quote, a backslash or a
// control character; `end` when there is none. 16 bytes at a time with SSE2.
inline const char* find_string_special(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1f);
    while (end - p >= 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                         _mm_cmpeq_epi8(_mm_max_epu8(x, control), control));  // x <= 0x1f
        const int mask = _mm_movemask_epi8(hit);
        if (mask != 0) {
            return p + __builtin_ctz(static_cast<unsigned>(mask));
        }
        p += 16;
    }
#endif
    for (; p != end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"' || c == '\\' || c < 0x20) {
            return p;
        }
    }
    return p;
}

// The Writer's string loop (below): appends the run of bytes that need no escape in one go and
// leaves `is` at the next byte that does; false at the end of the string.
inline bool write_plain_run(rapidjson::StringStream& is, size_t length, std::string& out) {
    const char* end = is.head_ + length;
    const char* stop = find_string_special(is.src_, end);
    out.append(is.src_, static_cast<size_t>(stop - is.src_));
    is.src_ = stop;
    return stop != end;
}

}  // namespace detail
}  // namespace infergate::json

// RapidJSON's Writer copies a string one Put() per byte unless its output stream has a bulk
// path (it has one only for its own StringBuffer): these give the two writers over StringOut one
// (a 1 KB prompt was ~28 instructions per byte). Declared here, before any use instantiates them.
namespace rapidjson {
template <>
inline bool Writer<infergate::json::StringOut>::ScanWriteUnescapedString(StringStream& is,
                                                                         size_t length) {
    return infergate::json::detail::write_plain_run(is, length, *os_->s);
}
template <>
inline bool Writer<infergate::json::StringOut, UTF8<>, UTF8<>,
                   MemoryPoolAllocator<CrtAllocator>>::ScanWriteUnescapedString(StringStream& is,
                                                                                size_t length) {
    return infergate::json::detail::write_plain_run(is, length, *os_->s);
}
}  // namespace rapidjson

namespace infergate::json {

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

// Appends every member of `obj` whose key is not in `known` to `out`, the key prefixed with
// `prefix` and the value serialized compactly (what a decoder keeps for a client of its own
// dialect: canonical::Carried).
void collect_unknown(const Value& obj, std::initializer_list<std::string_view> known,
                     std::vector<canonical::Extra>& out, std::string_view prefix = {});
// Writes the members of `carried` whose key starts with `prefix` (without it) and is not in
// `skip`: the inverse of collect_unknown.
void write_carried(Writer& w, const std::vector<canonical::Extra>& carried,
                   std::string_view prefix = {}, std::initializer_list<std::string_view> skip = {});

// One tool call as OpenAI and Ollama write it ({"id", "function": {"name", "arguments"}}) into
// `out`: the arguments' JSON text is a string's content as it is, an object written compactly,
// "{}" for none. False (nothing added) when it has no function name.
bool read_function_call(const Value& call, canonical::ToolCall& out);

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
