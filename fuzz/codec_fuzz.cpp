// Feeds arbitrary bytes to every decoder of every dialect: request bodies, whole responses and
// stream events. Nothing may crash, hang or read out of bounds; every failure must be an Error
// value. The first byte picks the dialect and the decoder, the rest is the input.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/codec.hpp"
#include "translators/conversation.hpp"

using namespace infergate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    static constexpr canonical::Dialect kDialects[] = {
        canonical::Dialect::sglang, canonical::Dialect::openai_completions,
        canonical::Dialect::openai_chat, canonical::Dialect::openai_responses};
    constexpr unsigned kN = 4;
    const auto& codec = translators::codec_for(kDialects[data[0] % kN]);
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    switch ((data[0] / kN) % 3) {
        case 0: {
            // A store that knows one conversation and one item, so previous_response_id and
            // item_reference are walked too.
            struct Lookup final : translators::ConversationLookup {
                std::optional<std::vector<std::string>> conversation(
                    std::string_view id) const override {
                    if (id != "resp_1") {
                        return std::nullopt;
                    }
                    return std::vector<std::string>{
                        R"({"type":"message","role":"user","content":"hi"})",
                        R"({"type":"function_call","call_id":"c","name":"f","arguments":"{}"})"};
                }
                std::optional<std::string> item(std::string_view id) const override {
                    if (id != "fc_1") {
                        return std::nullopt;
                    }
                    return std::string(
                        R"({"type":"function_call","call_id":"c","name":"f","arguments":"{}"})");
                }
            };
            static const Lookup lookup;
            auto req = codec.decode_stateful(input, &lookup);
            if (req) {
                // A decoded request must encode for every backend without crashing.
                for (auto d : kDialects) {
                    auto body = translators::codec_for(d).encode_request(
                        *req, translators::UpstreamOptions{"m", translators::Flavor::vllm, true});
                    (void)body;
                }
            }
            break;
        }
        case 1: {
            canonical::GenerationRequest req;
            req.sampling.n = 2;
            auto res = codec.decode_response(input, req);
            if (res) {
                std::string out;
                for (auto d : kDialects) {
                    translators::codec_for(d).encode_response(*res, req, out);
                }
            }
            break;
        }
        default: {
            // Split the input into events at '\n' and run them through decode → encode.
            canonical::StreamState dec;
            canonical::StreamState enc;
            enc.n = 2;
            enc.include_usage = true;
            std::vector<canonical::StreamEvent> events;
            std::string out;
            size_t start = 0;
            while (start <= input.size()) {
                size_t end = input.find('\n', start);
                if (end == std::string_view::npos) {
                    end = input.size();
                }
                events.clear();
                codec.decode_stream_event(input.substr(start, end - start), dec, events);
                for (const auto& e : events) {
                    translators::codec_for(kDialects[(data[0] / (kN * 3)) % kN])
                        .encode_stream_event(e, enc, out);
                }
                start = end + 1;
            }
            translators::codec_for(kDialects[(data[0] / (kN * 3)) % kN])
                .encode_stream_end(enc, out);
            break;
        }
    }
    return 0;
}
