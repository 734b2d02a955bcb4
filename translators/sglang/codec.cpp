#include "translators/sglang/codec.hpp"

#include <algorithm>

#include "translators/sglang/codec_impl.hpp"
#include "translators/sglang/wire.hpp"

namespace infergate::translators::sglang {

const Codec& codec() {
    static const SglangCodec instance;
    return instance;
}

std::string_view SglangCodec::upstream_path(const GenerationRequest& /*req*/) const {
    // Chat requests never reach this codec's encoder (encode_request refuses them); the proxy
    // sends them to SGLang's OpenAI route instead.
    return "/generate";
}

size_t SglangCodec::choice_ids_wanted(const GenerationRequest& req) const {
    // SGLang clients read meta_info.id: every choice gets one unless the request named them.
    if (!req.request_ids.empty()) {
        return 0;
    }
    return std::max<size_t>(1, req.prompts.size()) *
           static_cast<size_t>(std::max(1, req.sampling.n));
}

void SglangCodec::encode_error(const Error& error, std::string& out) const {
    // SGLang's /generate answers request errors as {"error": {"message": ...}} (api-dialects
    // §4.7); its clients read nothing else, so status and type travel only in the HTTP status.
    wire::ensure_room(out, error.message.size() + 32);
    wire::OutWriter w(out);
    w->StartObject();
    wire::key(*w, "error");
    w->StartObject();
    wire::key(*w, "message");
    wire::string(*w, error.message);
    w->EndObject();
    w->EndObject();
}

}  // namespace infergate::translators::sglang
