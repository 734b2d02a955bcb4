#pragma once
// The loop every streamed answer runs: read the backend's body piece by piece, split it into
// events, hand each to the relay (translated or passed through), write what it produced to the
// client as one chunk per read, and end the stream: the dialect's end, or an error the client
// can see when the backend broke off, failed or sent garbage. Then the upstream connection is
// drained for reuse or closed. The two relays (relay_translated.cpp, relay_passthrough.cpp)
// differ only in what one event becomes.

#include <optional>
#include <string>
#include <vector>

#include "proxy/generation.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/framing/event_splitter.hpp"

namespace infergate {

class StreamRelay {
public:
    explicit StreamRelay(Generation& g);
    virtual ~StreamRelay() = default;
    StreamRelay(const StreamRelay&) = delete;
    StreamRelay& operator=(const StreamRelay&) = delete;

    // Returns whether the client connection may serve another request.
    Task<bool> run();

protected:
    // One backend event (not a comment): appended to out_ as the client gets it. false when the
    // backend reported an error, which take() has encoded in-band already.
    virtual bool relay(framing::SseEvent& ev) = 0;
    // A keep-alive comment, in the client's dialect's form where it has one.
    virtual void keepalive(framing::SseEvent& ev) = 0;
    // What take() does with a counted event besides counting it.
    virtual void encode(const canonical::StreamEvent&) {}
    // The end of a stream that finished well (the terminator the client's dialect writes).
    virtual void finish() {}

    // One decoded event: the terminator noted, the backend's error encoded in-band (false),
    // tokens counted, then encode(). `usage_only`: the event carried usage and nothing else.
    bool take(const canonical::StreamEvent& d, bool& usage_only);

    Generation& g_;
    canonical::StreamState dec_;  // the backend's stream, decoding
    canonical::StreamState enc_;  // the client's stream, encoding (its errors on the fast path)
    std::vector<canonical::StreamEvent> decoded_;
    std::string out_;  // the bytes for the client from one read of the backend
    bool done_ = false;

private:
    framing::EventSplitter splitter_;
    std::vector<framing::SseEvent> events_;
    canonical::TokenTally tally_;
    int64_t content_tokens_ = 0;
};

}  // namespace infergate
