// Exchange: embeddings and the tokenizer's routes (docs/dialects.md, "Embeddings", "Tokenizer
// routes"). Each is one whole request: decoded by the client's API (translators/embedding.hpp,
// tokenizer.hpp), routed by model to a backend that has the route, sent through the upstream
// call with failover, and answered in the client's API: the backend's own bytes on the
// same-dialect fast path, else translated. Timeouts, the 502/504 mapping, client keys and
// pooling are the upstream call's and the client writer's, as for a generation.
#include "proxy/client_request.hpp"
#include "proxy/disconnect_watch.hpp"
#include "proxy/exchange.hpp"
#include "proxy/generation.hpp"
#include "proxy/worker.hpp"
#include "translators/embedding.hpp"
#include "translators/tokenizer.hpp"

namespace infergate {

namespace {

using canonical::TokenizerDialect;

bool embeds(const BackendInfo& info) {
    return translators::has_embeddings(info.dialect);
}

bool tokenizes(const BackendInfo& info) {
    return translators::backend_tokenizer(info.dialect, info.flavor).has_value();
}

bool detokenizes(const BackendInfo& info) {
    const auto t = translators::backend_tokenizer(info.dialect, info.flavor);
    return t && !translators::tokenizer_codec(*t).detokenize_path().empty();
}

bool renders_templates(const BackendInfo& info) {
    return info.dialect == config::BackendDialect::llamacpp ||
           info.dialect == config::BackendDialect::tgi;
}

}  // namespace

std::string Exchange::default_model_for(bool (*capable)(const BackendInfo&)) const {
    const std::string& fallback = table_->default_model();
    std::string upstream;
    if (const RoutingTable::Pool* pool = table_->find(fallback, upstream)) {
        for (const PoolMember& m : pool->members) {
            if (capable(table_->backends()[m.backend].info)) {
                return fallback;
            }
        }
    }
    for (const BackendView& view : table_->backends()) {
        if (view.info.ready && capable(view.info) && !view.info.models.empty()) {
            return view.info.models.front();
        }
    }
    return fallback;
}

bool Exchange::route_capable(const RoutingTable::Pool& pool, bool (*capable)(const BackendInfo&)) {
    bool any = false;
    for (const PoolMember& m : pool.members) {
        any = any || capable(table_->backends()[m.backend].info);
    }
    for (;;) {
        if (!route(pool, {}, nullptr, upstream_)) {
            return false;
        }
        // One that cannot serve the route counts as tried: never sent, never failed over to.
        if (!any || capable(upstream_.backend_view().info)) {
            return true;
        }
    }
}

template <class BackCodec>
Task<std::optional<bool>> Exchange::call_backend(std::string body, std::string_view path,
                                                 ErrorShape front, const BackCodec& back,
                                                 const RoutingTable::Pool& pool) {
    const config::Routing& routing = table_->routing();
    RoutingShared& shared = table_->shared();
    const bool can_fail_over = pool.members.size() > 1 && routing.attempts > 1;
    const BackendView& first_view = upstream_.backend_view();
    const PoolMember first{&upstream_.replica(),
                           static_cast<uint32_t>(&first_view - table_->backends().data()),
                           first_view.config.weight};
    RetrySlot slot;
    // As Generation::open: another replica of the same dialect when this try failed before the
    // backend could act on it, tries are left and the retry budget allows.
    const auto fail_over = [&](int tries) {
        if (!can_fail_over || tries >= routing.attempts || !retry_allowed(shared, routing)) {
            return false;
        }
        const std::shared_ptr<BackendCounters> from = upstream_.backend_view().counters;
        if (!route(pool, {}, &first, upstream_)) {
            return false;
        }
        from->retries.fetch_add(1, std::memory_order_relaxed);
        meter_.retrying(tries, request_id_, from->name);
        slot.take(shared);
        return true;
    };
    for (int tries = 1;; ++tries) {
        const std::string target = upstream_.backend().url.base_path + std::string(path);
        std::string sent;
        if (can_fail_over && tries < routing.attempts) {
            sent = body;
        } else {
            sent = std::move(body);
        }
        const bool opened =
            co_await upstream_.open(http::verb::post, target, std::move(sent), false);
        if (!opened) {
            if (upstream_.client_left()) {
                co_return false;
            }
            if (upstream_.retriable() && fail_over(tries)) {
                continue;
            }
            co_return co_await client_.send_error(front, upstream_.error());
        }
        const int status = upstream_.status();
        if (status >= 200 && status < 300) {
            co_return std::nullopt;
        }
        std::string response;
        const auto ec = co_await upstream_.read_body(response);
        upstream_.release(!ec);
        if (upstream_.client_left()) {
            co_return false;
        }
        meter_.set_outcome(Outcome::upstream_error);
        meter_.note_upstream_error(status < 500 ? UpstreamErrorKind::status_4xx
                                                : UpstreamErrorKind::status_5xx);
        if (refused_by_engine(status, response)) {
            meter_.failure().message = "it answered " + std::to_string(status);
            if (fail_over(tries)) {
                continue;
            }
        }
        canonical::Error e = back.decode_error(status, response);
        e.status = status;
        co_return co_await client_.send_error(front, e);
    }
}

namespace {

// The backend's whole answer, or the error the client got (and the keep-alive result).
struct Answer {
    std::string body;
    std::optional<bool> finished;
};

Task<Answer> read_answer(UpstreamCall& upstream, ClientWriter& client, ErrorShape front) {
    Answer a;
    if (auto ec = co_await upstream.read_body(a.body)) {
        upstream.release(false);
        if (upstream.client_left()) {
            a.finished = false;
        } else {
            a.finished =
                co_await client.send_error(front, upstream.failure(ec, "reading the response"));
        }
        co_return a;
    }
    upstream.release(true);
    co_return a;
}

// A 503 for a pool whose backends have no replica yet (discovery: dns found no address).
canonical::Error no_replica(const std::string& model) {
    canonical::Error e;
    e.status = 503;
    e.type = "service_unavailable";
    e.message = "no replica of the model '" + model +
                "' is known: its backend's host name resolved to no address yet (discovery: "
                "dns); retry shortly";
    return e;
}

canonical::Error wrong_count(size_t got, size_t sent) {
    canonical::Error e;
    e.status = 502;
    e.type = "upstream_error";
    e.message = "the backend answered " + std::to_string(got) + " vector(s) for " +
                std::to_string(sent) + " input(s)";
    return e;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------------------------

Task<bool> Exchange::embed(canonical::EmbedDialect dialect) {
    const translators::EmbedCodec& front = translators::embed_codec(dialect);
    meter_.start_generation(canonical::to_string(dialect), route_label(dialect));
    meter_.count_tokens(true, false);
    if (auto refused = co_await admit(front)) {
        co_return *refused;
    }
    auto decoded = front.decode_request(request_.body());
    if (!decoded) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, decoded.error());
    }
    canonical::EmbeddingRequest& req = decoded.value();
    // TEI's and llama.cpp's requests name no model: the default one, or a model of a backend
    // that has embeddings when the default's has none.
    const std::string client_model = req.model.empty() ? default_model_for(embeds) : req.model;
    meter_.set_model(client_model);
    std::string upstream_model;
    const RoutingTable::Pool* pool = table_->find(client_model, upstream_model);
    if (pool == nullptr) {
        // A named local: GCC 12 destroys a conditional's temporary inside a co_await twice.
        std::string named;
        if (!req.model.empty()) {
            named = client_model;
        }
        co_return co_await unknown_model(front, named);
    }
    if (!route_capable(*pool, embeds)) {
        meter_.set_outcome(Outcome::upstream_error);
        co_return co_await client_.send_error(front, no_replica(upstream_model));
    }
    in_flight_ = &table_->shared().in_flight;
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    const BackendView& view = upstream_.backend_view();
    const std::string label =
        translators::backend_label(backend_name(view.config), view.info.dialect, view.info.flavor);
    const translators::BackendFacts facts{view.info.dialect, view.info.flavor, view.config.url.host,
                                          backend_name(view.config)};
    const translators::EmbedPlan plan = translators::plan_embeddings(dialect, req, facts, label);
    if (plan.refusal) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, *plan.refusal);
    }
    const translators::EmbedCodec& back = translators::embed_codec(plan.back);
    meter_.set_back(canonical::to_string(plan.back));
    const auto answer = [&](const canonical::EmbeddingResult& result) -> Task<bool> {
        meter_.note_usage(canonical::Usage{result.prompt_tokens, {}, {}, {}});
        std::string out;
        front.encode_response(
            result, req, translators::EmbedAnswer{client_model, meter_.measured_timing()}, out);
        front.answer_headers(req, result.prompt_tokens, client_.extra_headers());
        co_return co_await client_.send(http::status::ok, std::move(out));
    };
    if (!plan.fast_path && req.inputs.empty() && !req.mixed) {
        // Nothing to embed (Ollama's call that only loads the model): the empty answer its own
        // server gives.
        co_return co_await answer(canonical::EmbeddingResult{});
    }
    std::string body;
    if (plan.fast_path) {
        body = translators::embed_passthrough_request(request_.body(), dialect, req.model,
                                                      upstream_model);
    } else {
        auto encoded = back.encode_request(
            req, translators::EmbedOptions{
                     upstream_model,
                     translators::openai_flavor(facts.dialect, facts.probed, facts.host), label});
        if (!encoded) {
            meter_.set_outcome(Outcome::rejected);
            co_return co_await client_.send_error(front, encoded.error());
        }
        body = std::move(encoded.value());
    }
    watch_.start();
    if (auto finished =
            co_await call_backend(std::move(body), back.upstream_path(), front, back, *pool)) {
        co_return *finished;
    }
    Answer got = co_await read_answer(upstream_, client_, front);
    if (got.finished) {
        co_return *got.finished;
    }
    const auto refuse = [&](const canonical::Error& e) -> Task<bool> {
        meter_.set_outcome(Outcome::upstream_error);
        meter_.note_upstream_error(UpstreamErrorKind::protocol);
        co_return co_await client_.send_error(front, e);
    };
    if (plan.fast_path && !translators::floats_where_base64_asked(got.body, req)) {
        auto checked = back.check_response(got.body, upstream_.headers());
        if (!checked) {
            co_return co_await refuse(checked.error());
        }
        meter_.note_usage(canonical::Usage{checked.value(), {}, {}, {}});
        if (client_model != upstream_model) {
            std::string renamed;
            if (translators::embed_passthrough_rename(got.body, dialect, client_model, renamed)) {
                got.body = std::move(renamed);
            }
        }
        front.answer_headers(req, checked.value(), client_.extra_headers());
        const std::string_view ctype = upstream_.content_type();
        co_return co_await client_.send(http::status::ok, std::move(got.body),
                                        ctype.empty() ? "application/json" : ctype);
    }
    auto result = back.decode_response(got.body, upstream_.headers());
    if (!result) {
        co_return co_await refuse(result.error());
    }
    if (!req.mixed && !req.inputs.empty() && result->vectors.size() != req.inputs.size()) {
        co_return co_await refuse(wrong_count(result->vectors.size(), req.inputs.size()));
    }
    co_return co_await answer(result.value());
}

// ---------------------------------------------------------------------------------------------
// Tokenizer routes
// ---------------------------------------------------------------------------------------------

Task<bool> Exchange::tokenizer(const Route& route) {
    const bool detok = route.kind == Route::Kind::detokenize;
    meter_.start_generation(detok ? "detokenize" : "tokenize",
                            detok ? RouteLabel::detokenize : RouteLabel::tokenize);
    meter_.count_tokens(false, false);
    // The API: the path's, else the body's. TGI's and TEI's /tokenize bodies can be alike, and
    // /detokenize bodies are: those are read as one API's for routing and read again as the
    // backend's once it is known (its clients are the ones that call it).
    std::optional<TokenizerDialect> dialect = route.tokenizer;
    bool by_backend = false;
    if (!dialect) {
        auto classified = detok ? translators::classify_detokenize_body(request_.body())
                                : translators::classify_tokenize_body(request_.body());
        if (!classified) {
            meter_.set_outcome(Outcome::rejected);
            co_return co_await client_.send_openai_error(classified.error());
        }
        dialect = classified.value();
        if (!dialect) {
            by_backend = true;
            dialect = detok ? TokenizerDialect::vllm : TokenizerDialect::tgi;
        }
    }
    const translators::TokenizerCodec* front = &translators::tokenizer_codec(*dialect);
    if (auto refused = co_await admit(*front)) {
        co_return *refused;
    }
    std::optional<canonical::TokenizeRequest> treq;
    std::optional<canonical::DetokenizeRequest> dreq;
    // Decodes the body as `front`'s; the keep-alive result when it was refused.
    const auto decode = [&]() -> std::optional<canonical::Error> {
        if (detok) {
            auto d = front->decode_detokenize(request_.body());
            if (!d) {
                return d.error();
            }
            dreq = std::move(d.value());
        } else {
            auto d = front->decode_tokenize(request_.body());
            if (!d) {
                return d.error();
            }
            treq = std::move(d.value());
        }
        return std::nullopt;
    };
    if (auto e = decode()) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(*front, *e);
    }
    const std::string& named = detok ? dreq->model : treq->model;
    const auto capable = detok ? detokenizes : tokenizes;
    const std::string client_model = named.empty() ? default_model_for(capable) : named;
    meter_.set_model(client_model);
    std::string upstream_model;
    const RoutingTable::Pool* pool = table_->find(client_model, upstream_model);
    if (pool == nullptr) {
        std::string unknown;  // not a conditional inside the co_await (GCC 12)
        if (!named.empty()) {
            unknown = client_model;
        }
        co_return co_await unknown_model(*front, unknown);
    }
    if (!route_capable(*pool, capable)) {
        meter_.set_outcome(Outcome::upstream_error);
        co_return co_await client_.send_error(*front, no_replica(upstream_model));
    }
    in_flight_ = &table_->shared().in_flight;
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    const BackendView& view = upstream_.backend_view();
    const std::string label =
        translators::backend_label(backend_name(view.config), view.info.dialect, view.info.flavor);
    const translators::BackendFacts facts{view.info.dialect, view.info.flavor, view.config.url.host,
                                          backend_name(view.config)};
    if (by_backend) {
        const auto own = translators::backend_tokenizer(
            view.info.dialect, translators::openai_flavor(facts.dialect, facts.probed, facts.host));
        TokenizerDialect decided = *dialect;
        if (detok && own && *own != TokenizerDialect::tei && *own != TokenizerDialect::tgi) {
            decided = *own;
        } else if (!detok && own == TokenizerDialect::tei) {
            decided = TokenizerDialect::tei;
        }
        if (decided != *dialect) {
            dialect = decided;
            front = &translators::tokenizer_codec(decided);
            if (auto e = decode()) {
                meter_.set_outcome(Outcome::rejected);
                co_return co_await client_.send_error(*front, *e);
            }
        }
    }
    const translators::TokenizerPlan plan = translators::plan_tokenizer(
        *dialect, detok, treq ? &*treq : nullptr, dreq ? &*dreq : nullptr, facts, label);
    if (plan.refusal) {
        meter_.set_outcome(Outcome::rejected);
        canonical::Error e = *plan.refusal;
        if (e.status == 404) {
            e.message += "; infergate serves: " + route_list(listener_);
        }
        co_return co_await client_.send_error(*front, e);
    }
    const translators::TokenizerCodec& back = translators::tokenizer_codec(plan.back);
    meter_.set_back(canonical::to_string(plan.back));
    const translators::TokenizerAnswer facts_out{client_model, view.info.max_model_len};
    if (!detok && treq->texts.empty() && !treq->chat && !treq->mixed) {
        // llama.cpp's /tokenize without a content: an empty list, as llama-server answers.
        std::string out;
        front->encode_tokenize_answer(canonical::TokenizeResult{}, *treq, facts_out, out);
        co_return co_await client_.send(http::status::ok, std::move(out));
    }
    std::string body;
    if (plan.fast_path) {
        body = translators::tokenizer_passthrough_request(request_.body(), *dialect, named,
                                                          upstream_model);
    } else {
        const translators::TokenizerOptions options{upstream_model, label};
        auto encoded =
            detok ? back.encode_detokenize(*dreq, options) : back.encode_tokenize(*treq, options);
        if (!encoded) {
            meter_.set_outcome(Outcome::rejected);
            co_return co_await client_.send_error(*front, encoded.error());
        }
        body = std::move(encoded.value());
    }
    watch_.start();
    const std::string_view path = detok ? back.detokenize_path() : back.tokenize_path();
    if (auto finished = co_await call_backend(std::move(body), path, *front, back, *pool)) {
        co_return *finished;
    }
    Answer got = co_await read_answer(upstream_, client_, *front);
    if (got.finished) {
        co_return *got.finished;
    }
    std::string out;
    std::optional<canonical::Error> bad;
    if (detok) {
        auto result = back.decode_detokenize_answer(got.body, *dreq);
        if (!result) {
            bad = result.error();
        } else if (!plan.fast_path) {
            front->encode_detokenize_answer(result.value(), *dreq, out);
        }
    } else {
        auto result = back.decode_tokenize_answer(got.body, *treq);
        if (!result) {
            bad = result.error();
        } else if (!plan.fast_path) {
            front->encode_tokenize_answer(result.value(), *treq, facts_out, out);
        }
    }
    if (bad) {
        meter_.set_outcome(Outcome::upstream_error);
        meter_.note_upstream_error(UpstreamErrorKind::protocol);
        co_return co_await client_.send_error(*front, *bad);
    }
    if (plan.fast_path) {
        const std::string_view ctype = upstream_.content_type();
        co_return co_await client_.send(http::status::ok, std::move(got.body),
                                        ctype.empty() ? "application/json" : ctype);
    }
    co_return co_await client_.send(http::status::ok, std::move(out));
}

Task<bool> Exchange::apply_template() {
    const translators::Codec& front = translators::codec_for(canonical::Dialect::llamacpp);
    meter_.start_generation("apply_template", RouteLabel::apply_template);
    meter_.count_tokens(false, false);
    if (auto refused = co_await admit(front)) {
        co_return *refused;
    }
    auto named = translators::template_model(request_.body());
    if (!named) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, named.error());
    }
    const std::string client_model =
        named->empty() ? default_model_for(renders_templates) : named.value();
    meter_.set_model(client_model);
    std::string upstream_model;
    const RoutingTable::Pool* pool = table_->find(client_model, upstream_model);
    if (pool == nullptr) {
        std::string unknown;  // not a conditional inside the co_await (GCC 12)
        if (!named->empty()) {
            unknown = client_model;
        }
        co_return co_await unknown_model(front, unknown);
    }
    if (!route_capable(*pool, renders_templates)) {
        meter_.set_outcome(Outcome::upstream_error);
        co_return co_await client_.send_error(front, no_replica(upstream_model));
    }
    in_flight_ = &table_->shared().in_flight;
    in_flight_->fetch_add(1, std::memory_order_relaxed);
    const BackendView& view = upstream_.backend_view();
    const config::BackendDialect dialect = view.info.dialect;
    const std::string label =
        translators::backend_label(backend_name(view.config), dialect, view.info.flavor);
    auto call = translators::template_call(request_.body(), dialect, upstream_model, label);
    if (!call) {
        meter_.set_outcome(Outcome::rejected);
        co_return co_await client_.send_error(front, call.error());
    }
    if (!call.value()) {
        meter_.set_outcome(Outcome::rejected);
        canonical::Error e = translators::no_endpoint(
            label, "apply-template",
            "a llama.cpp or TGI backend (TGI renders it on /chat_tokenize)", 404);
        e.message += "; infergate serves: " + route_list(listener_);
        co_return co_await client_.send_error(front, e);
    }
    meter_.set_back(config::to_string(dialect));
    const translators::Codec& back = translators::codec_for(dialect == config::BackendDialect::tgi
                                                                ? canonical::Dialect::tgi
                                                                : canonical::Dialect::llamacpp);
    watch_.start();
    if (auto finished = co_await call_backend(std::move(call.value()->body), call.value()->path,
                                              front, back, *pool)) {
        co_return *finished;
    }
    Answer got = co_await read_answer(upstream_, client_, front);
    if (got.finished) {
        co_return *got.finished;
    }
    auto out = translators::template_answer(got.body, dialect);
    if (!out) {
        meter_.set_outcome(Outcome::upstream_error);
        meter_.note_upstream_error(UpstreamErrorKind::protocol);
        co_return co_await client_.send_error(front, out.error());
    }
    co_return co_await client_.send(http::status::ok, std::move(out.value()));
}

}  // namespace infergate
