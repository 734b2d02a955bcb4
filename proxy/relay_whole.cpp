// The whole-body relays: a non-streamed answer, passed through (the fast path) or translated,
// and the gather of a stream into one answer.
#include "proxy/client_request.hpp"
#include "proxy/generation.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/framing/framing.hpp"
#include "translators/passthrough.hpp"

namespace infergate {

namespace {

// The fast path: relayed as it came, but only if it is what the dialect says it is.
Task<bool> pass_through(Generation& g, std::string response) {
    auto checked = g.back.check_response(response, g.req);
    if (!checked) {
        co_return co_await g.refuse_answer(checked.error());
    }
    g.meter.note_usage(checked->usage);
    g.meter.note_finish(checked->finish);
    if (g.upstream_model != g.client_model) {
        // The name the client used, whatever the backend answers with (an alias, or a dated
        // version of the model it was sent).
        std::string edited;
        if (translators::passthrough_rename(response, g.client_model, edited)) {
            response = std::move(edited);
        }
    }
    const std::string_view ctype = g.upstream.content_type();
    co_return co_await g.client.send(http::status::ok, std::move(response),
                                     ctype.empty() ? "application/json" : ctype);
}

// The answer in the client's dialect, with the ids it reads and what this exchange measured.
Task<bool> send_result(Generation& g, canonical::GenerationResult& result) {
    result.model = g.client_model;
    for (size_t i = 0; i < result.choices.size() && i < g.req.request_ids.size(); ++i) {
        result.choices[i].id = g.req.request_ids[i];
    }
    result.timing = g.meter.measured_timing();
    std::string out;
    g.front.encode_response(result, g.req, out);
    if (g.keep != nullptr) {
        *g.keep = result;
        g.keep_turn();
    }
    co_return co_await g.client.send(http::status::ok, std::move(out));
}

}  // namespace

Task<bool> relay_whole(Generation& g) {
    if (auto finished = co_await g.open(false)) {
        co_return *finished;
    }
    std::string response;
    if (auto ec = co_await g.upstream.read_body(response)) {
        co_return co_await g.fail(ec, "reading the response");
    }
    g.upstream.release(true);
    if (g.plan.fast_path) {
        co_return co_await pass_through(g, std::move(response));
    }
    auto result = g.back.decode_response(response, g.req);
    if (!result) {
        co_return co_await g.refuse_answer(result.error());
    }
    canonical::GenerationResult& r = result.value();
    if (g.plan.trim_stops) {
        canonical::StopTrimmer(g.req.sampling.stop).apply(r);
    }
    g.back.read_response_headers(g.upstream.headers(), r);
    g.meter.note_usage(r.usage);
    for (const canonical::Choice& c : r.choices) {
        g.meter.note_finish(c.finish.kind);
    }
    r.created = unix_seconds();
    if (r.id.empty() || g.front.dialect() != g.back.dialect()) {
        r.id = g.new_id();
    }
    g.front.response_headers(r, g.client.extra_headers());
    co_return co_await send_result(g, r);
}

Task<bool> relay_gather(Generation& g) {
    if (auto finished = co_await g.open(true)) {
        co_return *finished;
    }
    framing::SseScanner scanner;
    std::vector<framing::SseEvent> events;
    std::vector<canonical::StreamEvent> decoded;
    canonical::StreamState state;
    state.n = g.req.sampling.n;
    canonical::set_logprob_request(state, g.req);
    canonical::GenerationResult result;
    bool done = false;
    for (;;) {
        std::string_view bytes;
        if (auto ec = co_await g.upstream.read_some(bytes)) {
            co_return co_await g.fail(ec, "reading the stream");
        }
        events.clear();
        if (bytes.empty()) {
            scanner.finish(events);
        } else {
            scanner.feed(bytes, events);
        }
        for (const auto& ev : events) {
            decoded.clear();
            g.back.decode_stream_event(ev.data, state, decoded);
            for (const auto& d : decoded) {
                if (d.type == canonical::StreamEvent::Type::error) {
                    g.upstream.release(false);
                    g.meter.set_outcome(Outcome::inband_error);
                    co_return co_await g.client.send_error(g.front, d.error);
                }
                done = done || d.type == canonical::StreamEvent::Type::done;
                canonical::apply_to_result(d, result);
            }
        }
        if (bytes.empty()) {
            break;
        }
    }
    g.upstream.release(true);
    if (!done) {
        g.meter.set_outcome(Outcome::truncated);
        canonical::Error e;
        e.status = 502;
        e.type = "upstream_error";
        e.message = "the backend ended its stream before the terminator; the answer is incomplete";
        co_return co_await g.client.send_error(g.front, e);
    }
    if (!result.usage.completion_tokens) {
        state.choices.clear();
        for (const auto& c : result.choices) {
            auto& s = state.choice(c.index);
            s.completion_tokens = c.usage.completion_tokens.value_or(0);
            s.prompt_tokens = c.usage.prompt_tokens;
            s.cached_tokens = c.usage.cached_tokens;
        }
        result.usage = state.aggregate_usage();
        for (const auto& c : result.choices) {
            if (c.usage.reasoning_tokens) {
                result.usage.reasoning_tokens =
                    result.usage.reasoning_tokens.value_or(0) + *c.usage.reasoning_tokens;
            }
        }
    }
    g.meter.note_usage(result.usage);
    for (const canonical::Choice& c : result.choices) {
        g.meter.note_finish(c.finish.kind);
    }
    co_return co_await send_result(g, result);
}

}  // namespace infergate
