// libFuzzer target for translators/openai/passthrough, the byte edits of the same-dialect fast
// path. The differential property: editing the bytes gives the document that editing the parsed
// document gives, parse(rewrite(x)) == dom_edit(parse(x)), read the way the peers' own parsers
// (Python's json, JavaScript's JSON.parse) read JSON: the last duplicate key wins.
//
// Two kinds of input, chosen by the last byte (FuzzedDataProvider takes its numbers from the
// end; the seed corpus is JSON followed by 7 such bytes):
// - generated: the input drives a generator of JSON documents (keys from the vocabulary the edits
//   look for, duplicates, strings holding quotes, escapes and look-alike key text, numbers of
//   every form, nesting), written in one of the styles real peers use (compact, spaced, pretty
//   with LF or CRLF, reordered, every string escaped, random whitespace), then edited;
// - raw: the input itself is the JSON. Whatever RapidJSON accepts as an object (within the depth
//   limit) the edits must accept and get right; whatever they accept must come out as JSON.

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>

#include "tests/support/json_variants.hpp"
#include "tests/support/passthrough_oracle.hpp"
#include "translators/canonical/json.hpp"
#include "translators/openai/passthrough.hpp"

namespace {

namespace openai = infergate::translators::openai;
namespace testing = infergate::testing;

[[noreturn]] void fail(const char* what, std::string_view input, std::string_view got,
                       std::string_view want) {
    std::fprintf(stderr, "%s\ninput: %.*s\ngot:   %.*s\nwant:  %.*s\n", what,
                 static_cast<int>(input.size()), input.data(), static_cast<int>(got.size()),
                 got.data(), static_cast<int>(want.size()), want.data());
    std::abort();
}

// clang-format off
constexpr const char* kKeys[] = {
    "model",   "id",   "usage", "stream_options", "include_usage", "continuous_usage_stats",
    "choices", "text", "x",     "mod\"el",        "\"model\":",    "usage\\",
    "é",       "max_completion_tokens", "max_tokens", "repetition_penalty", "repeat_penalty",
    "logit_bias", "7", "007", "32000", "-1", "99999999999", "response_format", "json_schema",
    "type", "schema"};
// clang-format on
constexpr const char* kStrings[] = {"",       "m",   "\"model\":\"m\"", "\\", "\"",         "a/b",
                                    "\n\r\t", "é€😀", "\"usage\":{",     "}",  ",\"id\":\"", "\x01"};

class Generator {
public:
    Generator(FuzzedDataProvider& in, rapidjson::Document::AllocatorType& a) : in_(in), a_(a) {}

    void object(rapidjson::Value& v, int depth) {
        v.SetObject();
        const int n = in_.ConsumeIntegralInRange(0, depth == 0 ? 8 : 4);
        for (int i = 0; i < n; ++i) {
            rapidjson::Value key;
            string(key, kKeys);
            rapidjson::Value val;
            if (key == "logit_bias" && in_.ConsumeBool()) {
                biases(val);
            } else if (key == "response_format" && in_.ConsumeBool()) {
                format(val, depth + 1);
            } else {
                value(val, depth + 1);
            }
            v.AddMember(key, val, a_);  // duplicates allowed, as on the wire
        }
    }

private:
    // An object shaped like OpenAI's logit_bias (token-id keys, number values) that the
    // llama.cpp edit rewrites, with repeated keys and spellings of one id; now and then a key or
    // value that makes it not one.
    void biases(rapidjson::Value& v) {
        static constexpr const char* kIds[] = {"7", "007", "13", "32000", "0", "7", "x", "-1"};
        v.SetObject();
        const int n = in_.ConsumeIntegralInRange(0, 5);
        for (int i = 0; i < n; ++i) {
            const size_t k = in_.ConsumeIntegralInRange<size_t>(0, std::size(kIds) - 1);
            rapidjson::Value key(kIds[k], a_);
            rapidjson::Value val;
            if (in_.ConsumeIntegralInRange(0, 7) == 0) {
                val.SetString("1", a_);
            } else if (in_.ConsumeBool()) {
                val.SetInt64(in_.ConsumeIntegralInRange<int64_t>(-100, 100));
            } else {
                val.SetDouble(in_.ConsumeFloatingPointInRange<double>(-100.0, 100.0));
            }
            v.AddMember(key, val, a_);
        }
    }

    // An object shaped like OpenAI's response_format ({"type": "json_schema", "json_schema":
    // {"name", "schema"}}) that the llama.cpp edit copies the schema of, with repeated keys, a
    // null or missing schema; now and then another type.
    void format(rapidjson::Value& v, int depth) {
        // (The variant writer's styles spell the type with escapes too.)
        static constexpr const char* kTypes[] = {"json_schema", "json_schema", "json_object",
                                                 "text"};
        v.SetObject();
        const int n = in_.ConsumeIntegralInRange(1, 4);
        for (int i = 0; i < n; ++i) {
            switch (in_.ConsumeIntegralInRange(0, 3)) {
                case 0: {
                    rapidjson::Value tv(kTypes[in_.ConsumeIntegralInRange<size_t>(0, 3)], a_);
                    v.AddMember("type", tv, a_);
                    break;
                }
                case 1: {
                    rapidjson::Value named(rapidjson::kObjectType);
                    named.AddMember("name", "n", a_);
                    rapidjson::Value schema;
                    if (in_.ConsumeIntegralInRange(0, 5) == 0) {
                        schema.SetNull();
                    } else {
                        value(schema, depth + 1);
                    }
                    named.AddMember("schema", schema, a_);
                    if (in_.ConsumeBool()) {
                        rapidjson::Value again;
                        value(again, depth + 1);
                        named.AddMember("schema", again, a_);
                    }
                    v.AddMember("json_schema", named, a_);
                    break;
                }
                case 2: {
                    rapidjson::Value other;
                    value(other, depth + 1);
                    v.AddMember("json_schema", other, a_);
                    break;
                }
                default: {
                    rapidjson::Value key;
                    string(key, kKeys);
                    rapidjson::Value other;
                    value(other, depth + 1);
                    v.AddMember(key, other, a_);
                    break;
                }
            }
        }
    }

    template <size_t N>
    void string(rapidjson::Value& v, const char* const (&pool)[N]) {
        if (in_.ConsumeBool()) {
            v.SetString(pool[in_.ConsumeIntegralInRange<size_t>(0, N - 1)], a_);
        } else {
            const std::string s = in_.ConsumeRandomLengthString(12);
            // Valid UTF-8 only: a peer's JSON is UTF-8 (RFC 8259 §8.1).
            std::string clean;
            for (const char c : s) {
                clean.push_back(static_cast<unsigned char>(c) < 0x80 ? c : '?');
            }
            v.SetString(clean.data(), static_cast<rapidjson::SizeType>(clean.size()), a_);
        }
    }

    void value(rapidjson::Value& v, int depth) {
        switch (in_.ConsumeIntegralInRange(0, depth > 6 ? 5 : 7)) {
            case 0:
                v.SetNull();
                break;
            case 1:
                v.SetBool(in_.ConsumeBool());
                break;
            case 2:
                v.SetInt64(in_.ConsumeIntegral<int64_t>());
                break;
            case 3:
                v.SetUint64(in_.ConsumeIntegral<uint64_t>());
                break;
            case 4: {
                const double d = in_.ConsumeFloatingPoint<double>();
                v.SetDouble(std::isfinite(d) ? d : 0.5);
                break;
            }
            case 5:
                string(v, kStrings);
                break;
            case 6: {
                v.SetArray();
                const int n = in_.ConsumeIntegralInRange(0, 3);
                for (int i = 0; i < n; ++i) {
                    rapidjson::Value e;
                    value(e, depth + 1);
                    v.PushBack(e, a_);
                }
                break;
            }
            default:
                object(v, depth);
                break;
        }
    }

    FuzzedDataProvider& in_;
    rapidjson::Document::AllocatorType& a_;
};

// `valid`: RapidJSON accepts `text` as an object within the depth limit. The edits must then
// accept it too; where they accept what RapidJSON does not, the only allowed reason is a number
// too large for a double (json_scan.hpp).
void check(std::string_view text, const openai::ResponseEdits& re, const openai::RequestEdits& rq,
           bool valid, rapidjson::ParseErrorCode rapidjson_error) {
    std::string out;
    const bool accepted = openai::edit_response(text, re, out);
    if (accepted != valid && (valid || (rapidjson_error != rapidjson::kParseErrorNumberTooBig &&
                                        rapidjson_error != rapidjson::kParseErrorNone))) {
        fail(valid ? "edit_response refused a valid object" : "edit_response accepted bad JSON",
             text, out, "");
    }
    if (accepted && valid) {
        const std::string want = testing::dom_edit_response(text, re);
        const std::string got = testing::canonical(out);
        if (got != want) {
            fail("edit_response differs from the document edit", text, out, want);
        }
        if (re.one_line && out.find_first_of("\r\n") != std::string::npos) {
            fail("edit_response left a line break", text, out, "");
        }
        // The trusted shortcut (no scan when no edited key can be there) changes nothing.
        openai::ResponseEdits trusted = re;
        trusted.trusted = true;
        std::string quick;
        if (!openai::edit_response(text, trusted, quick) || quick != out) {
            fail("the trusted edit differs", text, quick, out);
        }
    }
    out.clear();
    const bool request_accepted = openai::edit_request(text, rq, out);
    if (request_accepted != accepted) {
        fail("edit_request and edit_response disagree on the input", text, out, "");
    }
    if (request_accepted && valid) {
        const std::string want = testing::dom_edit_request(text, rq);
        const std::string got = testing::canonical(out);
        if (got != want) {
            fail("edit_request differs from the document edit", text, out, want);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    const bool generated = in.ConsumeBool();
    openai::ResponseEdits re;
    openai::RequestEdits rq;
    static const char* const kNames[] = {"", "alias", "a\"b\\c", "m/x é", "gpt-4o-2024-08-06"};
    const std::string model = kNames[in.ConsumeIntegralInRange(0, 4)];
    const std::string id = kNames[in.ConsumeIntegralInRange(0, 4)];
    re.model = model;
    re.id = id;
    re.strip_usage = in.ConsumeBool();
    re.one_line = in.ConsumeBool();
    rq.model = model;
    rq.include_usage = in.ConsumeBool();
    rq.continuous_usage = in.ConsumeBool();
    // The llama.cpp names of the fast path (translators/passthrough.cpp, passthrough_request), and one more
    // between keys the generator uses often.
    static constexpr openai::Rename kRenames[] = {{"max_completion_tokens", "max_tokens"},
                                                  {"repetition_penalty", "repeat_penalty"},
                                                  {"x", "text"}};
    rq.renames = kRenames;
    rq.rename_count = in.ConsumeIntegralInRange<size_t>(0, std::size(kRenames));
    rq.logit_bias_pairs = in.ConsumeBool();
    rq.schema_from_response_format = in.ConsumeBool();

    if (generated) {
        rapidjson::Document doc;
        Generator gen(in, doc.GetAllocator());
        gen.object(doc, 0);
        const auto style = testing::kAllStyles[in.ConsumeIntegralInRange<size_t>(
            0, std::size(testing::kAllStyles) - 1)];
        const std::string text = testing::write_variant(doc, style, in.ConsumeIntegral<uint32_t>());
        if (testing::canonical(text) != testing::canonical(doc)) {
            fail("the variant writer changed the document", text, testing::canonical(text),
                 testing::canonical(doc));
        }
        check(text, re, rq, true, rapidjson::kParseErrorNone);
        return 0;
    }
    const std::string text = in.ConsumeRemainingBytesAsString();
    // Valid as the proxy's own parser judges it (RapidJSON's Parse(text, size) alone would stop
    // at an embedded NUL and accept what precedes it).
    // RapidJSON 1.1's SSE2 string scan lets raw bytes 0x1A-0x1F through inside strings (it
    // compares with 0x19 instead of 0x1F); RFC 8259, Python and the edits refuse them.
    infergate::json::Document doc;
    const bool rapidjson_quirk =
        text.find_first_of("\x1a\x1b\x1c\x1d\x1e\x1f") != std::string::npos;
    const bool valid_object =
        !infergate::json::parse(text, doc) && doc.IsObject() && !rapidjson_quirk;
    check(text, re, rq, valid_object, doc.GetParseError());
    return 0;
}
