#pragma once
// Builders of canonical log-probability entries for the codec tests.

#include <optional>
#include <string>
#include <vector>

#include "translators/canonical/types.hpp"

namespace logprob_test {

inline infergate::canonical::TokenAlternative alt(std::string text, std::optional<int64_t> id,
                                                  double logprob) {
    infergate::canonical::TokenAlternative a;
    a.token = std::move(text);
    a.id = id;
    a.logprob = logprob;
    return a;
}

inline infergate::canonical::TokenLogprob entry(
    std::string text, std::optional<int64_t> id, std::optional<double> logprob,
    std::vector<infergate::canonical::TokenAlternative> top = {}) {
    infergate::canonical::TokenLogprob t;
    t.token = std::move(text);
    t.id = id;
    t.logprob = logprob;
    t.top = std::move(top);
    return t;
}

}  // namespace logprob_test
