#include "emulator/stream.hpp"

#include <algorithm>
#include <limits>

#include "emulator/replica.hpp"

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kFaultMessage = "emulated fault (X-Emulator-Fault)";

// Deliberately invalid: a JSON-looking prefix, raw control bytes and bytes that are not UTF-8.
constexpr std::string_view kGarbageBody = "{\"choices\": [<<garbage \x01\x02\xff\xfe not json";
constexpr std::string_view kGarbageEvents[] = {
    "data: {\"text\": \" the\", <<garbage\xff\xfe\n\n",
    "data: \x01\x02 not json at all }}]]\n\n",
};

bool is_midstream(FaultKind kind) {
    return kind == FaultKind::kResetMidstream || kind == FaultKind::kCloseMidstream ||
           kind == FaultKind::kStallMidstream || kind == FaultKind::kErrorEvent;
}

int steps_for(const ChoiceState& c, int tokens_per_chunk) {
    const int tokens = c.total_tokens();
    return std::max(1, (tokens + tokens_per_chunk - 1) / tokens_per_chunk);
}

// The connection-level half of the mid-stream faults.
net::awaitable<void> break_connection(Conn& conn, FaultKind kind) {
    switch (kind) {
        case FaultKind::kResetMidstream:
            co_await conn.reset_after_sent();
            break;
        case FaultKind::kCloseMidstream:
            conn.close_clean();
            break;
        case FaultKind::kStallMidstream:
            co_await conn.stall();
            break;
        default:
            break;
    }
}

// The end of a stream: `events`, then the terminator (if the dialect has one), the very last of
// them sent with the stream's end so that a wire style can write it as the last event.
net::awaitable<bool> send_tail(Conn& conn, std::vector<std::string_view> events,
                               std::string_view terminator) {
    if (!terminator.empty()) {
        events.push_back(terminator);
    }
    std::erase_if(events, [](std::string_view e) { return e.empty(); });
    if (events.empty()) {
        co_return co_await conn.end_stream();
    }
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
        if (!co_await conn.send_chunk(events[i])) {
            co_return false;
        }
    }
    co_return co_await conn.finish_stream(events.back());
}

// The request's waits: on its generation when admitted (an abort ends them), else the
// connection's timer.
net::awaitable<void> pause(Conn& conn, const Request& req, Clock::duration d) {
    if (req.gen != nullptr) {
        co_await req.gen->sleep(conn, d);
    } else {
        co_await conn.sleep_for(d);
    }
}

Clock::duration first_token_delay(const Request& req) {
    return req.gen != nullptr ? req.gen->first_token_delay()
                              : std::chrono::milliseconds(req.knobs.ttft_ms);
}

// Output k tokens long, ended by an abort (the tokens after k never came).
void cut_output(Output& out, int k) {
    if (k < out.completion_tokens()) {
        const auto n = static_cast<std::size_t>(k);
        out.token_ids.resize(n);
        out.text_end.resize(n);
        out.raw_text.resize(n > 0 ? out.text_end.back() : 0);
        out.final_len = out.raw_text.size();
    }
    out.finish = Finish::kAbort;
}

// An aborted generation's unfinished choices end now: after `done` tokens (each choice's own
// tokens_sent when nullopt) and the one decode step SGLang still runs for an aborted request;
// with no token when the abort found it still queued.
void cut_aborted(std::vector<ChoiceState>& choices, const Generation& gen,
                 std::optional<int> done) {
    for (ChoiceState& c : choices) {
        if (c.finished || c.out.finish == Finish::kAbort) {
            continue;
        }
        const int had = done.value_or(c.tokens_sent);
        const int keep = gen.aborted_in_queue() ? 0 : std::min(c.total_tokens(), had + 1);
        cut_output(c.out, std::max(0, keep - c.lead_tokens));
    }
}

// Tokens every choice of a whole answer had when its generation was aborted: one per step since
// the first token.
int tokens_done(const Request& req) {
    const Clock::duration since = Clock::now() - req.gen->first_token_at();
    if (since < Clock::duration::zero()) {
        return 0;
    }
    if (req.knobs.itl_ms <= 0) {
        return std::numeric_limits<int>::max() - 1;
    }
    const std::int64_t steps = 1 + since / std::chrono::milliseconds(req.knobs.itl_ms);
    return static_cast<int>(std::min<std::int64_t>(steps * req.knobs.tokens_per_chunk,
                                                   std::numeric_limits<int>::max() - 1));
}

}  // namespace

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

net::awaitable<bool> apply_early_fault(Conn& conn, const Knobs& knobs, bool stream,
                                       const ErrorStyle& errors, const Framing& framing) {
    switch (knobs.fault.kind) {
        case FaultKind::kStatus: {
            std::string body;
            const std::string_view type =
                errors.render_status(knobs.fault.status, kFaultMessage, body);
            co_await conn.send(knobs.fault.status, type, body);
            co_return true;
        }
        case FaultKind::kReset:
            conn.reset();
            co_return true;
        case FaultKind::kStall:
            co_await conn.stall();
            co_return true;
        case FaultKind::kGarbage:
            if (!stream) {
                co_await conn.send(200, framing.body_type, kGarbageBody);
                co_return true;
            }
            if (co_await conn.begin_stream(framing.stream_type)) {
                const std::span<const std::string_view> garbage =
                    framing.garbage.empty() ? std::span<const std::string_view>(kGarbageEvents)
                                            : framing.garbage;
                co_await send_tail(conn,
                                   std::vector<std::string_view>(garbage.begin(), garbage.end()),
                                   framing.terminator);
            }
            co_return true;
        default:
            co_return false;
    }
}

net::awaitable<void> run_stream(Conn& conn, const Request& req, std::vector<ChoiceState>& choices,
                                EventEncoder& encoder, const ErrorStyle& errors,
                                const Framing& framing) {
    const Knobs& knobs = req.knobs;
    // Headers go out at once, like StreamingResponse; the first event waits for TTFT.
    if (!co_await conn.begin_stream(framing.stream_type)) {
        co_return;
    }
    const FaultKind fault = is_midstream(knobs.fault.kind) ? knobs.fault.kind : FaultKind::kNone;
    int written = 0;
    EventList local;
    EventList& events = req.events != nullptr ? *req.events : local;

    // Fires the pending mid-stream fault.
    auto fire = [&]() -> net::awaitable<void> {
        if (fault == FaultKind::kErrorEvent) {
            std::string& event = events.next();
            errors.render_event(kFaultMessage, event);
            if (event.empty()) {
                conn.close_clean();
            } else {
                co_await send_tail(conn, std::vector<std::string_view>(1, event),
                                   framing.terminator);
            }
        } else {
            co_await break_connection(conn, fault);
        }
    };

    auto all_finished = [&choices] {
        return std::all_of(choices.begin(), choices.end(),
                           [](const ChoiceState& c) { return c.finished; });
    };
    co_await pause(conn, req, first_token_delay(req));
    events.clear();
    for (bool first = true; !all_finished(); first = false) {
        if (!first) {
            co_await pause(conn, req, std::chrono::milliseconds(knobs.itl_ms));
        }
        if (req.gen != nullptr && req.gen->aborted()) {
            cut_aborted(choices, *req.gen, std::nullopt);  // this step is the last
        }
        // One engine step: every unfinished choice advances by tokens_per_chunk tokens.
        events.clear();
        if (first) {
            encoder.on_start(choices, events);
        }
        for (ChoiceState& c : choices) {
            if (c.finished) {
                continue;
            }
            const int total = c.total_tokens();
            const int upto = std::min(total, c.tokens_sent + knobs.tokens_per_chunk);
            const bool last = upto == total;
            encoder.on_step(c, upto, last, events);
            c.tokens_sent = upto;
            c.finished = last;
        }
        encoder.on_step_end(choices, events);
        if (fault == FaultKind::kNone && all_finished()) {
            break;  // the last step's events leave with the trailer, below
        }
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (fault != FaultKind::kNone && written >= knobs.fault_after) {
                co_await fire();
                co_return;
            }
            if (!co_await conn.send_chunk(events[i])) {
                conn.reset();  // the client went away; nothing more to say
                co_return;
            }
            ++written;
        }
    }
    // A fault that was asked for always fires, at the latest before the trailer.
    if (fault != FaultKind::kNone) {
        events.clear();
        co_await fire();
        co_return;
    }
    // The last step's events, then finish and usage events, then the terminator: the very last
    // of them ends the stream (a wire style may write it differently).
    encoder.on_end(choices, events);
    std::vector<std::string_view> tail;
    for (std::size_t i = 0; i < events.size(); ++i) {
        tail.emplace_back(events[i]);
    }
    if (!co_await send_tail(conn, std::move(tail), framing.terminator)) {
        conn.reset();
    }
}

net::awaitable<void> send_generated(Conn& conn, const Request& req,
                                    std::vector<ChoiceState>& choices, std::string_view body,
                                    const ErrorStyle& errors) {
    co_await send_generated(
        conn, req, choices, [body](std::string& out) { out.assign(body); }, errors, kSseFraming);
}

net::awaitable<void> send_generated(Conn& conn, const Request& req,
                                    std::vector<ChoiceState>& choices, const BodyRenderer& render,
                                    const ErrorStyle& errors, const Framing& framing) {
    const Knobs& knobs = req.knobs;
    int steps = 1;
    for (const ChoiceState& c : choices) {
        steps = std::max(steps, steps_for(c, knobs.tokens_per_chunk));
    }
    co_await pause(conn, req,
                   first_token_delay(req) +
                       std::chrono::milliseconds(std::int64_t{knobs.itl_ms} * (steps - 1)));
    if (req.gen != nullptr && req.gen->aborted()) {
        cut_aborted(choices, *req.gen, tokens_done(req));
    }
    const FaultKind kind = knobs.fault.kind;
    if (kind == FaultKind::kErrorEvent) {
        // A non-stream answer has no events; the nearest equivalent is a 500 in the dialect's
        // shape.
        std::string error_body;
        const std::string_view type = errors.render_status(500, kFaultMessage, error_body);
        co_await conn.send(500, type, error_body);
        co_return;
    }
    std::string body;
    render(body);
    if (is_midstream(kind)) {
        // Announce the whole body, deliver half of it.
        if (co_await conn.send_truncated(200, framing.body_type, body)) {
            co_await break_connection(conn, kind);
        } else {
            conn.reset();
        }
        co_return;
    }
    if (!co_await conn.send(200, framing.body_type, body)) {
        conn.reset();
    }
}

}  // namespace infergate::emulator
