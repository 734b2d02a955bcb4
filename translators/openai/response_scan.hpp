#pragma once
// The same-dialect fast path's look at a whole OpenAI response (completion or chat completion):
// one validating pass over the bytes, no document, no copy, that reads only the usage and the
// choices' finish_reason.

#include <optional>
#include <string_view>

#include "translators/canonical/types.hpp"

namespace infergate::translators::openai {

// The top-level usage of `body` when it is a well-formed JSON object whose first `choices` member
// is an array of objects; nullopt for anything else (malformed, nested deeper than
// json::kMaxDepth, another shape, an error envelope) and for the rare form this pass does not
// judge (an escaped key): the caller then decodes the body fully,
// which says exactly what is wrong. Where a key repeats, the first one counts, as json::find has
// it; a count is read only when it is an integer that fits in int64 (json::Value::IsInt64).
// `finish`, when given, gets how the answer ended (canonical::answer_finish's rule over the
// choices' finish_reason strings).
std::optional<canonical::Usage> scan_response_usage(std::string_view body,
                                                    canonical::FinishKind* finish = nullptr);

}  // namespace infergate::translators::openai
