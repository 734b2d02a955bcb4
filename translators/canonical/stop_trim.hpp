#pragma once
// For backends that leave the matched stop string in the generated text (TGI, also on its
// OpenAI-compatible routes) when the client's dialect expects it removed: strips a whole stop
// string at the end of a choice that finished on a stop, and while streaming holds back a tail
// that may be the start of one, so that no byte of a stop string ever reaches the client.

#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/types.hpp"

namespace infergate::canonical {

// The length of the longest tail of `text` that is a prefix of (or all of) one of `stops`: the
// bytes a stream must hold back until it knows whether a stop string follows. A stop string
// begins a code point, so the cut never splits one.
size_t stop_prefix_tail(std::string_view text, const std::vector<std::string>& stops);

class StopTrimmer {
public:
    explicit StopTrimmer(std::vector<std::string> stops) : stops_(std::move(stops)) {}
    bool active() const { return !stops_.empty(); }

    // Streams: rewrites a chunk event's text in place (other events pass unchanged).
    void apply(StreamEvent& ev);
    // The end of a stream without a finish: appends a chunk per choice for text still held.
    void flush(std::vector<StreamEvent>& out);
    // A whole answer.
    void apply(GenerationResult& result) const;

private:
    // Strips a stop string the text ends with; returns it (empty when none).
    std::string strip(std::string& text) const;

    std::vector<std::string> stops_;
    std::vector<std::string> held_;  // per choice index
};

}  // namespace infergate::canonical
