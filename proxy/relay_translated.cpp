// The translated stream: each backend event decoded into the canonical model and written by the
// client dialect's own encoder (with the stop strings a backend leaves in the text trimmed).
#include "proxy/generation.hpp"
#include "proxy/stream_relay.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/stop_trim.hpp"

namespace infergate {

namespace {

class TranslatedStream final : public StreamRelay {
public:
    explicit TranslatedStream(Generation& g)
        : StreamRelay(g),
          trimmer_(g.plan.trim_stops ? g.req.sampling.stop : std::vector<std::string>{}) {}

private:
    bool relay(framing::SseEvent& ev) override {
        decoded_.clear();
        g_.back.decode_stream_event(ev.data, dec_, decoded_);
        bool usage_only = false;
        for (auto& d : decoded_) {
            if (trimmer_.active()) {
                if (d.type == canonical::StreamEvent::Type::done) {
                    rest_.clear();
                    trimmer_.flush(rest_);
                    for (const auto& r : rest_) {
                        take(r, usage_only);
                    }
                }
                trimmer_.apply(d);
            }
            if (!take(d, usage_only)) {
                return false;
            }
        }
        return true;
    }

    void keepalive(framing::SseEvent& ev) override {
        canonical::StreamEvent keepalive;
        keepalive.type = canonical::StreamEvent::Type::keepalive;
        keepalive.text = std::move(ev.data);
        bool usage_only = false;
        take(keepalive, usage_only);
    }

    void encode(const canonical::StreamEvent& d) override {
        if (d.finish) {
            // A final event may carry durations (llama.cpp's timings): as of now.
            enc_.timing = g_.meter.measured_timing(!d.text.empty() || !d.tool_calls.empty() ||
                                                   !d.reasoning.empty());
        }
        g_.front.encode_stream_event(d, enc_, out_);
        if (g_.keep != nullptr) {
            canonical::apply_to_result(d, *g_.keep);
        }
    }

    void finish() override {
        enc_.timing = g_.meter.measured_timing();
        g_.front.encode_stream_end(enc_, out_);
        if (g_.keep != nullptr) {
            canonical::GenerationResult& r = *g_.keep;
            r.id = enc_.id;
            r.model = enc_.model;
            r.created = enc_.created;
            if (!r.usage.completion_tokens) {
                r.usage = enc_.usage_final ? enc_.usage : enc_.aggregate_usage();
            }
            g_.keep_turn();  // before the final event leaves
        }
    }

    canonical::StopTrimmer trimmer_;
    std::vector<canonical::StreamEvent> rest_;
};

}  // namespace

Task<bool> relay_translated_stream(Generation& g) {
    TranslatedStream relay(g);
    co_return co_await relay.run();
}

}  // namespace infergate
