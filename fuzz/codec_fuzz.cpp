// Feeds arbitrary bytes to every decoder of every dialect: request bodies, whole responses and
// stream events. Nothing may crash, hang or read out of bounds; every failure must be an Error
// value. The first byte picks the dialect and the decoder, the rest is the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "translators/codec.hpp"

using namespace infergate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    static constexpr canonical::Dialect kDialects[] = {canonical::Dialect::sglang,
                                                       canonical::Dialect::openai_completions,
                                                       canonical::Dialect::openai_chat};
    const auto& codec = translators::codec_for(kDialects[data[0] % 3]);
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    switch ((data[0] / 3) % 3) {
        case 0: {
            auto req = codec.decode_request(input);
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
                    translators::codec_for(kDialects[(data[0] / 9) % 3])
                        .encode_stream_event(e, enc, out);
                }
                start = end + 1;
            }
            translators::codec_for(kDialects[(data[0] / 9) % 3]).encode_stream_end(enc, out);
            break;
        }
    }
    return 0;
}
