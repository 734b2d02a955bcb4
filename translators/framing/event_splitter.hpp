#pragma once
// Splits a backend's body into events: SSE `data` payloads (and comments, so that keep-alives go
// on), or NDJSON / NUL-separated records (Ollama, vLLM's demo server) as SseEvents too, so that
// one relay loop serves every backend.

#include <string>
#include <string_view>
#include <vector>

#include "translators/framing/framing.hpp"

namespace infergate::framing {

class EventSplitter {
public:
    // `sse`: the body is an event stream; otherwise records.
    explicit EventSplitter(bool sse) : sse_framing_(sse) {}
    void feed(std::string_view bytes, std::vector<SseEvent>& out) {
        if (sse_framing_) {
            sse_.feed(bytes, out);
            return;
        }
        records_.clear();
        rec_.feed(bytes, records_);
        take(out);
    }
    void finish(std::vector<SseEvent>& out) {
        if (sse_framing_) {
            sse_.finish(out);
            return;
        }
        records_.clear();
        rec_.finish(records_);
        take(out);
    }
    // An event or record grew past 4 MiB.
    bool overflowed() const { return sse_framing_ ? sse_.overflowed() : rec_.overflowed(); }

private:
    void take(std::vector<SseEvent>& out) {
        for (auto& r : records_) {
            out.emplace_back().data = std::move(r);
        }
    }
    bool sse_framing_;
    SseScanner sse_{4 * 1024 * 1024, true};  // comments too: keep-alives go on
    RecordScanner rec_;
    std::vector<std::string> records_;
};

}  // namespace infergate::framing
