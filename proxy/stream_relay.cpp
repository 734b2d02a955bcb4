#include "proxy/stream_relay.hpp"

namespace infergate {

StreamRelay::StreamRelay(Generation& g)
    : g_(g),
      dec_(g.upstream_stream_state()),
      enc_(g.client_stream_state()),
      splitter_(g.back.framing() == translators::Framing::sse) {
    tally_.n = g.req.sampling.n;
}

bool StreamRelay::take(const canonical::StreamEvent& d, bool& usage_only) {
    if (d.type == canonical::StreamEvent::Type::done) {
        done_ = true;
        return true;
    }
    if (d.type == canonical::StreamEvent::Type::error) {
        g_.front.encode_stream_error(d.error, enc_, out_);
        g_.meter.set_outcome(Outcome::inband_error);
        done_ = true;
        return false;
    }
    usage_only = d.type == canonical::StreamEvent::Type::usage;
    if (d.finish) {
        g_.meter.note_finish(d.finish->kind);
    }
    const int64_t tokens = tally_.add(d);
    if (d.type == canonical::StreamEvent::Type::chunk &&
        (!d.text.empty() || !d.tool_calls.empty() || !d.reasoning.empty())) {
        content_tokens_ += tokens;
    }
    encode(d);
    return true;
}

Task<bool> StreamRelay::run() {
    if (auto finished = co_await g_.open(true)) {
        co_return *finished;
    }
    if (!co_await g_.client.start_stream(g_.front.framing() == translators::Framing::ndjson
                                             ? "application/x-ndjson"
                                             : "text/event-stream")) {
        co_return false;
    }
    bool message_complete = false;
    std::optional<canonical::Error> failure;
    while (!done_) {
        std::string_view bytes;
        if (auto ec = co_await g_.upstream.read_some(bytes)) {
            if (g_.upstream.client_left()) {
                g_.meter.note_usage(tally_.total());
                co_return false;
            }
            failure = g_.upstream.failure(ec, "streaming");
            if (g_.meter.outcome() != Outcome::timeout) {
                g_.meter.set_outcome(Outcome::truncated);
            }
            break;
        }
        events_.clear();
        if (bytes.empty()) {
            message_complete = true;
            splitter_.finish(events_);
        } else {
            splitter_.feed(bytes, events_);
            if (splitter_.overflowed()) {
                failure = canonical::Error{502, "the backend sent a stream event larger than 4 MiB",
                                           "upstream_error", "", ""};
                g_.meter.set_outcome(Outcome::upstream_error);
                break;
            }
        }
        out_.clear();
        content_tokens_ = 0;
        bool failed = false;
        for (auto& ev : events_) {
            if (ev.comment) {
                keepalive(ev);
            } else if (!relay(ev)) {
                failed = true;
                break;
            }
        }
        if (message_complete && !failed && !done_) {
            // A clean end of the body without a terminator: the end for a dialect that has none
            // (vLLM's demo server); for the others the codec adds nothing (a truncation, below).
            decoded_.clear();
            g_.back.decode_stream_end(dec_, decoded_);
            bool usage_only = false;
            for (const auto& d : decoded_) {
                if (!take(d, usage_only)) {
                    break;
                }
            }
        }
        if (content_tokens_ > 0) {
            g_.meter.note_content(content_tokens_);
        }
        if (!out_.empty() && !co_await g_.client.write(out_)) {
            g_.meter.note_usage(tally_.total());
            g_.upstream.abandon();  // stop the generation nobody will read
            co_return false;
        }
        if (message_complete) {
            break;
        }
    }
    g_.meter.note_usage(tally_.total());
    if (!done_ && !failure) {
        failure = canonical::Error{502,
                                   "the backend closed the stream before it finished; the output "
                                   "above is incomplete",
                                   "upstream_error", "", ""};
        g_.meter.set_outcome(Outcome::truncated);
    }
    out_.clear();
    if (failure) {
        g_.front.encode_stream_error(*failure, enc_, out_);
    } else {
        finish();
    }
    if (!out_.empty() && !co_await g_.client.write(out_)) {
        g_.upstream.abandon();
        co_return false;
    }
    if (!co_await g_.client.end_stream()) {
        co_return false;
    }
    if (!failure && !message_complete) {
        // What is left of the upstream message (the chunked terminator), so that the connection
        // can be reused; a backend that does not finish promptly loses its connection instead.
        co_await g_.upstream.drain();
    } else {
        g_.upstream.release(!failure && message_complete);
    }
    co_return g_.client.keep_alive();
}

}  // namespace infergate
