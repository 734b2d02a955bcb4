// Generation: what every relay shares (the upstream request, ids, stream states, failures).
#include "proxy/generation.hpp"

#include "proxy/client_request.hpp"
#include "proxy/response_store.hpp"
#include "proxy/routing.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/passthrough.hpp"

namespace infergate {

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool refused_by_engine(int status, std::string_view body) {
    return status == 503 || status == 529 ||
           (status == 429 && (body.find("verloaded") != std::string_view::npos ||
                              body.find("overload") != std::string_view::npos));
}

void RetrySlot::take(RoutingShared& s) {
    if (shared == nullptr) {
        shared = &s;
        s.retrying.fetch_add(1, std::memory_order_relaxed);
    }
}

RetrySlot::~RetrySlot() {
    if (shared != nullptr) {
        shared->retrying.fetch_sub(1, std::memory_order_relaxed);
    }
}

void Generation::keep_turn() {
    if (keep == nullptr || store == nullptr) {
        return;
    }
    if (auto turn = front.stored_turn(req, *keep)) {
        turn->owner = meter.key_name();  // only the same client key finds it again
        store->put(std::move(*turn));
    }
    keep = nullptr;  // once
}

Task<std::optional<bool>> Generation::open(bool upstream_streams) {
    std::string body;
    if (plan.fast_path) {
        body = translators::passthrough_request(request.body(), req, plan, upstream_model);
    } else {
        auto encoded = back.encode_request(
            req, translators::UpstreamOptions{upstream_model, plan.flavor, upstream_streams,
                                              plan.stream_options});
        if (!encoded) {
            meter.set_outcome(Outcome::rejected);
            co_return co_await client.send_error(front, encoded.error());
        }
        body = std::move(encoded.value());
    }
    const std::string_view path = back.upstream_path(req);
    // A request decoded as the one it is equivalent to (a Responses request as a chat request)
    // is the client's own from here on: whole-answer decoders read req.dialect as the client's
    // dialect (what it takes: tool calls, reasoning). For every other dialect this changes
    // nothing.
    req.dialect = front.dialect();
    RetrySlot slot;
    // Another replica may take the request when this try failed before the backend could act
    // on it, tries are left, and the budget allows one more retry in flight.
    const auto fail_over = [&](int tries) {
        if (!can_fail_over || tries >= routing.attempts || !retry_allowed(routing_state, routing)) {
            return false;
        }
        const std::shared_ptr<BackendCounters> from = upstream.backend_view().counters;
        if (!next_replica()) {
            return false;
        }
        from->retries.fetch_add(1, std::memory_order_relaxed);
        meter.retrying(tries, upstream.request_id(), from->name);
        slot.take(routing_state);
        return true;
    };
    for (int tries = 1;; ++tries) {
        const std::string target = upstream.backend().url.base_path + std::string(path);
        // The body is kept for another try only when there may be one.
        std::string sent;
        if (can_fail_over && tries < routing.attempts) {
            sent = body;
        } else {
            sent = std::move(body);
        }
        if (!co_await send_try(tries == 1 && can_fail_over && routing.hedge_ms > 0, target,
                               std::move(sent), path, body, upstream_streams)) {
            if (upstream.client_left()) {
                co_return false;
            }
            if (upstream.retriable() && fail_over(tries)) {
                continue;
            }
            co_return co_await client.send_error(front, upstream.error());
        }
        const int status = upstream.status();
        if (status >= 200 && status < 300) {
            co_return std::nullopt;
        }
        // Before the first byte to the client an error is still a real HTTP error, with the
        // backend's status and message in the client's dialect.
        std::string response;
        const auto ec = co_await upstream.read_body(response);
        upstream.release(!ec);
        if (upstream.client_left()) {
            co_return false;
        }
        meter.set_outcome(Outcome::upstream_error);
        meter.note_upstream_error(status < 500 ? UpstreamErrorKind::status_4xx
                                               : UpstreamErrorKind::status_5xx);
        if (refused_by_engine(status, response)) {
            meter.failure().message = "it answered " + std::to_string(status);
        }
        if (refused_by_engine(status, response) && fail_over(tries)) {
            continue;
        }
        canonical::Error e = back.decode_error(status, response);
        e.status = status;
        co_return co_await client.send_error(front, e);
    }
}

Task<bool> Generation::send_try(bool hedged, const std::string& target, std::string sent,
                                std::string_view path, const std::string& body,
                                bool upstream_streams) {
    // Not a coroutine: the request's own frame holds one awaitable, as without hedging (a
    // bigger frame would outgrow Asio's recycled frame memory and cost a malloc per request).
    if (hedged) {
        return hedged_open(path, body, upstream_streams);
    }
    return upstream.open(http::verb::post, target, std::move(sent), upstream_streams);
}

Task<bool> Generation::hedged_open(std::string_view path, const std::string& body,
                                   bool upstream_streams) {
    // Both calls live in this frame; the hedge's coroutine is awaited before it returns.
    enum class Winner { none, first, hedge };
    Winner winner = Winner::none;
    bool first_done = false;
    bool hedge_started = false;
    bool hedge_running = true;
    auto executor = co_await net::this_coro::executor;
    Timer hedge_timer(executor);
    Timer hedge_ended(executor);  // an event: cancelled when the hedge's coroutine ends
    hedge_ended.expires_at(Timer::time_point::max());
    RequestMeter scratch(worker, {}, 0);
    std::unique_ptr<UpstreamCall> hedge = upstream.sibling(scratch);
    RetrySlot slot;
    // A 2xx counts once its first content is in (a streaming server sends its head before
    // the first token); an error status as it is. Returns the read's error.
    const auto first_content = [](UpstreamCall& call) -> Task<beast::error_code> {
        if (call.status() < 200 || call.status() >= 300) {
            co_return beast::error_code{};
        }
        co_return co_await call.prefetch();
    };
    auto second = [&]() -> Task<void> {
        hedge_timer.expires_after(std::chrono::milliseconds(routing.hedge_ms));
        auto [ec] = co_await hedge_timer.async_wait(use_nothrow);
        if (!ec && !first_done && retry_allowed(routing_state, routing) && hedge_target(*hedge)) {
            hedge_started = true;
            slot.take(routing_state);
            hedge->backend_view().counters->hedges.fetch_add(1, std::memory_order_relaxed);
            const std::string target = hedge->backend().url.base_path + std::string(path);
            bool ok = co_await hedge->open(http::verb::post, target, body, upstream_streams);
            if (ok) {
                const beast::error_code rec = co_await first_content(*hedge);
                ok = !rec;
            }
            if (!ok && hedge->client_left()) {
                upstream.hedge_out();  // the watch follows the hedge's connection: end both
            }
            if (ok) {
                if (winner == Winner::none) {
                    winner = Winner::hedge;
                    upstream.hedge_out();
                } else {
                    hedge->abandon();
                }
            }
        }
        hedge_running = false;
        hedge_ended.cancel();
    };
    net::co_spawn(executor, second(), net::detached);
    const std::string target = upstream.backend().url.base_path + std::string(path);
    bool ok = co_await upstream.open(http::verb::post, target, body, upstream_streams);
    if (ok) {
        const beast::error_code ec = co_await first_content(upstream);
        ok = !ec;
    }
    first_done = true;
    if (ok && winner == Winner::none) {
        winner = Winner::first;
    }
    if (winner == Winner::first || !hedge_started) {
        hedge_timer.cancel();
        hedge->hedge_out();  // the loser, or a hedge that is not to start
    }
    while (hedge_running) {
        co_await hedge_ended.async_wait(use_nothrow);
    }
    if (winner == Winner::hedge) {
        upstream.take_over(*hedge);
        meter.set_backend_name(upstream.backend().name);
        meter.set_outcome(Outcome::ok);  // the first call may have failed before the hedge won
        meter.failure() = Failure{};
    }
    upstream.reattach();
    co_return winner != Winner::none;
}

std::string Generation::new_id() const {
    return std::string(front.id_prefix()) + worker.random_hex(32);
}

canonical::StreamState Generation::client_stream_state() const {
    canonical::StreamState enc;
    enc.id = new_id();
    enc.model = client_model;
    enc.created = unix_seconds();
    enc.n = req.sampling.n;
    enc.batch = req.prompt_is_list || req.sampling.n > 1;
    enc.include_usage = req.include_usage;
    enc.continuous_usage = req.continuous_usage;
    enc.max_tokens = req.sampling.max_tokens;
    enc.request_ids = req.request_ids;
    canonical::set_logprob_request(enc, req);
    front.init_client_stream(enc, req);
    return enc;
}

canonical::StreamState Generation::upstream_stream_state() const {
    canonical::StreamState dec;
    dec.n = req.sampling.n;
    canonical::set_logprob_request(dec, req);
    if (!plan.fast_path) {
        // What only a client of the backend's dialect takes is kept for it (the fast path relays
        // the bytes themselves).
        dec.client = front.dialect();
    }
    if (!req.sampling.keep_stop_str.value_or(false)) {
        dec.stop = req.sampling.stop;
    }
    back.init_upstream_stream(dec, req);
    return dec;
}

Task<bool> Generation::fail(beast::error_code ec, std::string_view stage) {
    upstream.release(false);
    if (upstream.client_left()) {
        co_return false;
    }
    co_return co_await client.send_error(front, upstream.failure(ec, stage));
}

Task<bool> Generation::refuse_answer(const canonical::Error& e) {
    meter.set_outcome(Outcome::upstream_error);
    meter.note_upstream_error(UpstreamErrorKind::protocol);
    co_return co_await client.send_error(front, e);
}

}  // namespace infergate
