#include "translators/classify.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators {

namespace {

// Records which marker keys the top-level object has; nested objects are walked, not stored.
struct KeyScan : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, KeyScan> {
    int depth = 0;
    bool object = false;
    bool expect_value_of_sampling_params = false;
    bool tgi = false;     // inputs
    bool sglang = false;  // text, input_ids, input_embeds, or sampling_params as an object
    bool legacy = false;  // prompt
    bool sampling_params_key = false;

    bool Key(const char* str, rapidjson::SizeType len, bool) {
        if (depth != 1) {
            return true;
        }
        const std::string_view k(str, len);
        expect_value_of_sampling_params = k == "sampling_params";
        if (k == "inputs") {
            tgi = true;
        } else if (k == "text" || k == "input_ids" || k == "input_embeds") {
            sglang = true;
        } else if (k == "prompt") {
            legacy = true;
        }
        return true;
    }
    bool StartObject() {
        if (depth == 0) {
            object = true;
        } else if (depth == 1 && expect_value_of_sampling_params) {
            sglang = true;
        }
        expect_value_of_sampling_params = false;
        ++depth;
        return true;
    }
    bool EndObject(rapidjson::SizeType) {
        --depth;
        return true;
    }
    bool StartArray() {
        expect_value_of_sampling_params = false;
        ++depth;
        return true;
    }
    bool EndArray(rapidjson::SizeType) {
        --depth;
        return true;
    }
    bool Default() {
        expect_value_of_sampling_params = false;
        return true;
    }
};

constexpr std::string_view kShapes =
    "POST /generate takes one of three bodies: SGLang {\"text\" (or \"input_ids\"), "
    "\"sampling_params\": {...}}, TGI {\"inputs\": \"...\", \"parameters\": {...}}, or vLLM's "
    "demo server {\"prompt\": \"...\", \"max_tokens\": ..., ...}";

}  // namespace

canonical::Result<canonical::Dialect> classify_generate_body(std::string_view body) {
    KeyScan scan;
    // Depth-bounded (json::sax): a body of half a million '[' must not exhaust the stack of
    // the recursive reader.
    const bool ok = json::sax<rapidjson::kParseStopWhenDoneFlag>(body, scan);
    if (!ok || !scan.object) {
        // Not a JSON object: SGLang, the proxy's historical owner of the route, reports it.
        return canonical::Dialect::sglang;
    }
    const int markers = int(scan.tgi) + int(scan.sglang) + int(scan.legacy);
    if (markers == 1) {
        return scan.tgi      ? canonical::Dialect::tgi
               : scan.sglang ? canonical::Dialect::sglang
                             : canonical::Dialect::vllm_legacy;
    }
    if (markers == 0) {
        return canonical::bad_request(
            "the body has none of \"text\", \"input_ids\", \"inputs\" or \"prompt\"; " +
            std::string(kShapes));
    }
    std::string found;
    auto add = [&found](bool on, std::string_view what) {
        if (on) {
            found += found.empty() ? "" : " and ";
            found += what;
        }
    };
    add(scan.sglang, "SGLang's text/input_ids/sampling_params");
    add(scan.tgi, "TGI's inputs");
    add(scan.legacy, "vLLM's prompt");
    return canonical::bad_request("the body mixes " + found +
                                  ", so it is unclear which server's API it means; " +
                                  std::string(kShapes));
}

}  // namespace infergate::translators
