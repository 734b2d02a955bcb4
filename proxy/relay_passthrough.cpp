// The pass-through stream (the fast path: OpenAI and SGLang in front of themselves): each backend
// event goes to the client as it came, with only what the plan says edited (the model name the
// client used, one id for every chunk, the usage asked for on the client's behalf taken out
// again). Every event is decoded all the same: the tokens are counted from it, and garbage or
// the backend's own error becomes a well-formed in-band error instead of reaching the client raw.
#include "proxy/generation.hpp"
#include "proxy/stream_relay.hpp"
#include "translators/framing/framing.hpp"
#include "translators/passthrough.hpp"

namespace infergate {

namespace {

class PassThroughStream final : public StreamRelay {
public:
    // The name the client used, whatever the backend says; one id for every chunk where the
    // plan says so.
    explicit PassThroughStream(Generation& g)
        : StreamRelay(g),
          edits_(g.plan, g.upstream_model != g.client_model ? g.client_model : std::string(),
                 g.plan.rewrite_ids ? enc_.id : std::string()) {}

private:
    bool relay(framing::SseEvent& ev) override {
        decoded_.clear();
        g_.back.decode_stream_event(ev.data, dec_, decoded_);
        bool usage_only = false;
        for (const auto& d : decoded_) {
            if (!take(d, usage_only)) {
                return false;
            }
        }
        edits_.relay(ev.data, usage_only, out_);
        return true;
    }

    void keepalive(framing::SseEvent& ev) override { framing::write_sse_comment(ev.data, out_); }

    translators::PassthroughEvents edits_;
};

}  // namespace

Task<bool> relay_passthrough_stream(Generation& g) {
    PassThroughStream relay(g);
    co_return co_await relay.run();
}

}  // namespace infergate
