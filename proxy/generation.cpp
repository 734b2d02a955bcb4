// Generation: what every relay shares (the upstream request, ids, stream states, failures).
#include "proxy/generation.hpp"

#include "proxy/client_request.hpp"
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

namespace {

// An answer that says the engine did not take the request (overloaded, draining, starting):
// another replica may. 503 (vLLM, SGLang and TGI when their engine is down or full), 529
// (Anthropic's overloaded_error), 429 that says "overloaded" (TGI's queue). Not a 429 rate
// limit: that one is the client's.
bool refused_by_engine(int status, std::string_view body) {
    return status == 503 || status == 529 ||
           (status == 429 && (body.find("verloaded") != std::string_view::npos ||
                              body.find("overload") != std::string_view::npos));
}

// Counted in RoutingShared::retrying while it lives (the retry budget).
struct RetrySlot {
    RoutingShared* shared = nullptr;
    void take(RoutingShared& s) {
        if (shared == nullptr) {
            shared = &s;
            s.retrying.fetch_add(1, std::memory_order_relaxed);
        }
    }
    ~RetrySlot() {
        if (shared != nullptr) {
            shared->retrying.fetch_sub(1, std::memory_order_relaxed);
        }
    }
};

}  // namespace

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
        if (!co_await upstream.open(http::verb::post, target, std::move(sent), upstream_streams)) {
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
