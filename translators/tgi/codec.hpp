#pragma once
#include <string_view>

#include "translators/codec.hpp"

namespace infergate::translators::tgi {

// Hugging Face TGI native POST /generate, /generate_stream and POST / (api-dialects §5).
const Codec& codec();

// Route conventions. A TGI body does not say which route it came to, and the route changes the
// answer: /generate never streams (a stray "stream" key is ignored), /generate_stream always
// streams, and POST / dispatches on "stream" and wraps a non-streaming answer in a JSON array.
// After decode_request the codec's prepare_request calls mark_route(req, path) with the
// request's path; it sets
// req.stream for the two dedicated routes and, for "/", records the compat route as the extra
// kCompatRouteExtra (never forwarded upstream), which encode_response reads back.
inline constexpr std::string_view kCompatRouteExtra = "infergate.tgi_compat_route";
// Set by decode_request when parameters.return_full_text is absent: POST / then defaults it to
// true, as TGI does for text-generation models (the dedicated routes default it to false).
// mark_route consumes it.
inline constexpr std::string_view kFullTextUnsetExtra = "infergate.tgi_full_text_unset";
void mark_route(GenerationRequest& req, std::string_view path);
bool uses_compat_route(const GenerationRequest& req);

// return_full_text: the TGI encoder puts the prompt in front of the generation itself, so the
// backend is asked for the generation only (most engines cannot echo). The codec's
// prepare_request (mark_route, then this) moves req.echo into kFullTextExtra, which
// encode_response reads back.
inline constexpr std::string_view kFullTextExtra = "infergate.tgi_full_text";
bool wants_full_text(const GenerationRequest& req);

}  // namespace infergate::translators::tgi
