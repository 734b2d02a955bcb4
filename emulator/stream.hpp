// The dialect-neutral part of answering a generation: pacing (TTFT, ITL, tokens per chunk),
// the stream loop and every fault. Dialects plug in an EventEncoder and an ErrorStyle.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>

#include "emulator/generator.hpp"
#include "emulator/http_conn.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

class EventList;
class Generation;
class Replica;

// One parsed HTTP request as the API handlers see it.
struct Request {
    boost::beast::http::verb method = boost::beast::http::verb::unknown;
    std::string_view path;
    std::string_view body;
    Knobs knobs;
    std::chrono::steady_clock::time_point received;
    // The parsed message, for dialects that read request headers (content type, versions).
    const HttpRequest* http = nullptr;
    // Per-connection scratch for stream events, reused across requests (set by the session).
    EventList* events = nullptr;
    // The process as an engine replica (set by the session), and this request's generation
    // once admitted (replica.hpp): its prefill time, its queueing, its abort.
    Replica* replica = nullptr;
    Generation* gen = nullptr;
};

// One output sequence of a request and how much of it is already on the wire.
struct ChoiceState {
    int index = 0;          // wire index: prompt_i * n + j
    int prompt_tokens = 0;  // of the prompt this choice continues
    int cached_tokens = 0;  // of those, found in the prefix cache (replica.hpp)
    std::string id;         // per-choice id where the dialect has one (SGLang items)
    Output out;
    int tokens_sent = 0;
    std::size_t text_sent = 0;  // bytes of text already streamed (delta dialects)
    bool finished = false;
    // Tokens a chat answer spends before its text: reasoning and tool calls (chat_extras.hpp).
    // tokens_sent and the stream's steps count them first; `out` holds the text after them.
    int lead_tokens = 0;

    int total_tokens() const { return lead_tokens + out.completion_tokens(); }
};

// A reusable list of complete SSE events ("data: ...\n\n"); each is written as one chunk.
class EventList {
public:
    std::string& next() {
        if (size_ == items_.size()) {
            items_.emplace_back().reserve(512);
        }
        std::string& s = items_[size_++];
        s.clear();
        return s;
    }
    void clear() { size_ = 0; }
    std::size_t size() const { return size_; }
    const std::string& operator[](std::size_t i) const { return items_[i]; }

private:
    std::vector<std::string> items_;
    std::size_t size_ = 0;
};

class EventEncoder {
public:
    virtual ~EventEncoder() = default;
    // Once, right before the first step (after TTFT): e.g. vLLM's role chunks for every choice.
    virtual void on_start(std::vector<ChoiceState>& choices, EventList& out) {}
    // `choice` advanced from choice.tokens_sent to `tokens`; `last` when it just finished.
    // Called before tokens_sent is updated, so the encoder sees both ends of the step.
    virtual void on_step(ChoiceState& choice, int tokens, bool last, EventList& out) = 0;
    // After every choice of one engine step: dialects that write one record per step (vLLM
    // legacy) emit it here.
    virtual void on_step_end(std::vector<ChoiceState>& choices, EventList& out) {}
    // After every choice finished: finish chunks, usage chunk. Not the [DONE] terminator.
    virtual void on_end(std::vector<ChoiceState>& choices, EventList& out) = 0;
};

class ErrorStyle {
public:
    virtual ~ErrorStyle() = default;
    // Writes an HTTP error body for `status` into `body`; returns its content type.
    virtual std::string_view render_status(int status, std::string_view message,
                                           std::string& body) const = 0;
    // Writes one complete in-band error event. Left empty, the stream is cut without a final
    // chunk instead (a server without an in-band error shape).
    virtual void render_event(std::string_view message, std::string& event) const = 0;
};

inline constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

// How a dialect frames a generation on the wire, besides its events.
struct Framing {
    std::string_view stream_type = kEventStream;  // "" = no content-type header
    std::string_view body_type = kJson;           // non-stream bodies
    std::string_view terminator = kDoneEvent;     // after the last event; "" = none
    // What the garbage fault streams; empty = SSE events that are not JSON.
    std::span<const std::string_view> garbage;
};
// SSE with data: [DONE]: vLLM, SGLang and every OpenAI layer.
inline constexpr Framing kSseFraming{};

// Guards memory: a request may ask for at most this many tokens over all its choices.
inline constexpr std::int64_t kMaxTotalTokens = std::int64_t{1} << 24;

// Faults that act before any generation: status, reset, stall, garbage. Returns true if one
// answered (or swallowed) the request.
net::awaitable<bool> apply_early_fault(Conn& conn, const Knobs& knobs, bool stream,
                                       const ErrorStyle& errors,
                                       const Framing& framing = kSseFraming);

// Streams `choices` through `encoder`, paced by req.knobs (and req.gen's first-token delay), with
// mid-stream faults; an aborted generation's choices end at the next step (Finish::kAbort).
net::awaitable<void> run_stream(Conn& conn, const Request& req, std::vector<ChoiceState>& choices,
                                EventEncoder& encoder, const ErrorStyle& errors,
                                const Framing& framing = kSseFraming);

// Sends a complete non-stream body after the time the generation would have taken (its first
// token's delay, then the steps), applying the truncation faults (half the body under a full
// Content-Length).
net::awaitable<void> send_generated(Conn& conn, const Request& req,
                                    std::vector<ChoiceState>& choices, std::string_view body,
                                    const ErrorStyle& errors);
// The same, rendering the body only after the generation time has passed, so that bodies which
// report timings (Ollama durations, llama.cpp timings, TGI headers) report real ones, and an
// aborted generation (replica.hpp) shows the choices cut where the abort found them.
using BodyRenderer = std::function<void(std::string& body)>;
net::awaitable<void> send_generated(Conn& conn, const Request& req,
                                    std::vector<ChoiceState>& choices, const BodyRenderer& render,
                                    const ErrorStyle& errors, const Framing& framing);

// Seconds since the request arrived, for SGLang's e2e_latency.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace infergate::emulator
