#include "proxy/exchange.hpp"

#include "proxy/exchange_detail.hpp"
#include "proxy/log.hpp"
#include "proxy/pairing.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/worker.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/json.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/canonical/stop_trim.hpp"
#include "translators/classify.hpp"
#include "translators/framing/framing.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/passthrough.hpp"

namespace infergate {

std::string_view to_string(Outcome o) {
    switch (o) {
        case Outcome::ok: return "ok";
        case Outcome::client_disconnect: return "client_disconnect";
        case Outcome::upstream_error: return "upstream_error";
        case Outcome::inband_error: return "inband_error";
        case Outcome::truncated: return "truncated";
        case Outcome::timeout: return "timeout";
        case Outcome::rejected: return "rejected";
    }
    return "ok";
}

Exchange::Exchange(Worker& worker, Stream& client, Deadline& client_deadline,
                   DisconnectWatch& watch, ClientRequest request, const std::string& peer)
    : worker_(worker),
      client_(client),
      client_deadline_(client_deadline),
      request_(std::move(request)),
      peer_(peer),
      watch_(watch),
      received_(std::chrono::steady_clock::now()) {
    keep_alive_ = request_.keep_alive();
    bytes_in_ = request_.body().size();
    chunked_ = request_.version() >= 11;
    const auto rid = request_["X-Request-Id"];
    request_id_ = !rid.empty() && rid.size() <= 128 ? std::string(rid) : worker_.random_hex(32);
}

Exchange::~Exchange() {
    watch_.stop();
    if (upstream_ && upstream_->conn) {
        upstream_->conn->close();
    }
}

Task<bool> Exchange::run() {
    const bool keep_alive = co_await dispatch();
    finish_record();
    co_return keep_alive;
}

Task<bool> Exchange::dispatch() {
    const Route route = match_route(request_.method_string(), request_.target());
    switch (route.kind) {
        case Route::Kind::metrics: co_return co_await serve_metrics();
        case Route::Kind::generate: co_return co_await generate(route.dialect, route.path);
        case Route::Kind::generate_by_body: co_return co_await generate_by_body(route.path);
        case Route::Kind::root: co_return co_await root();
        case Route::Kind::tgi_info: co_return co_await tgi_info();
        case Route::Kind::ollama_tags: co_return co_await ollama_tags(false);
        case Route::Kind::ollama_ps: co_return co_await ollama_tags(true);
        case Route::Kind::ollama_version: co_return co_await ollama_version();
        case Route::Kind::ollama_show: co_return co_await ollama_show();
        case Route::Kind::llamacpp_props: co_return co_await llamacpp_props();
        case Route::Kind::models: co_return co_await models({});
        case Route::Kind::model: co_return co_await models(route.model_id);
        case Route::Kind::health: co_return co_await health(false);
        case Route::Kind::health_generate: co_return co_await health(true);
        case Route::Kind::model_info: co_return co_await model_info(false);
        case Route::Kind::server_info: co_return co_await model_info(true);
        case Route::Kind::method_not_allowed: {
            outcome_ = Outcome::rejected;
            allow_ = route.allow;
            canonical::Error e;
            e.status = 405;
            e.message = "method " + std::string(request_.method_string()) + " is not allowed on " +
                        std::string(request_.target()) + "; allowed: " + std::string(route.allow);
            co_return co_await send_openai_error(e);
        }
        case Route::Kind::not_found: break;
    }
    outcome_ = Outcome::rejected;
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = "no route " + std::string(request_.method_string()) + " " +
                std::string(request_.target().substr(0, 200)) +
                "; infergate serves: " + route_list();
    co_return co_await send_openai_error(e);
}

// ---------------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------------

std::string Exchange::upstream_model(const canonical::GenerationRequest& req) const {
    for (const auto& a : worker_.config().aliases) {
        if (a.name == req.model) {
            return a.target;
        }
    }
    const std::string& served = worker_.backend().served_model;
    if (req.model.empty()) {
        return served;
    }
    // Ollama names a model's default tag either way: "llama3.2" is "llama3.2:latest".
    constexpr std::string_view kLatest = ":latest";
    if (req.model.size() == served.size() + kLatest.size() && req.model.starts_with(served) &&
        req.model.ends_with(kLatest)) {
        return served;
    }
    if (served.size() == req.model.size() + kLatest.size() && served.starts_with(req.model) &&
        served.ends_with(kLatest)) {
        return served;
    }
    return req.model;
}

std::string Exchange::client_model(const canonical::GenerationRequest& req) const {
    return req.model.empty() ? worker_.backend().served_model : req.model;
}

namespace {

RouteLabel route_label(canonical::Dialect d) {
    using canonical::Dialect;
    switch (d) {
        case Dialect::sglang: return RouteLabel::sglang_generate;
        case Dialect::openai_completions: return RouteLabel::openai_completions;
        case Dialect::openai_chat: return RouteLabel::openai_chat;
        case Dialect::tgi: return RouteLabel::tgi_generate;
        case Dialect::ollama_generate: return RouteLabel::ollama_generate;
        case Dialect::ollama_chat: return RouteLabel::ollama_chat;
        case Dialect::llamacpp: return RouteLabel::llamacpp_completion;
        case Dialect::vllm_legacy: return RouteLabel::vllm_generate;
        case Dialect::anthropic: return RouteLabel::anthropic_messages;
    }
    return RouteLabel::openai_completions;
}

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

int64_t unix_nanoseconds() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

Task<bool> Exchange::generate_by_body(std::string_view path) {
    auto dialect = translators::classify_generate_body(request_.body());
    if (!dialect) {
        generation_ = true;
        front_name_ = "unknown";
        record_.route = RouteLabel::sglang_generate;
        record_.model_slot = worker_.metrics_registry().model_slot({});
        worker_.metrics().request_started();
        outcome_ = Outcome::rejected;
        co_return co_await send_openai_error(dialect.error());
    }
    co_return co_await generate(dialect.value(), path);
}

Task<bool> Exchange::generate(canonical::Dialect dialect, std::string_view path) {
    const translators::Codec& front = translators::codec_for(dialect);
    generation_ = true;
    front_name_ = canonical::to_string(dialect);
    record_.route = route_label(dialect);
    record_.model_slot = worker_.metrics_registry().model_slot({});
    worker_.metrics().request_started();
    auto decoded = front.decode_request(request_.body());
    if (!decoded) {
        outcome_ = Outcome::rejected;
        co_return co_await send_error(front, decoded.error());
    }
    canonical::GenerationRequest& req = decoded.value();
    front.prepare_request(req, path);
    model_label_ = client_model(req);
    record_.model_slot = worker_.metrics_registry().model_slot(model_label_);
    const BackendInfo& info = worker_.backend();
    if (!info.ready) {
        outcome_ = Outcome::upstream_error;
        canonical::Error e;
        e.status = 503;
        e.type = "service_unavailable";
        e.message = "the backend at " + worker_.pool().backend().url.text() +
                    " is not ready yet (" + info.detail + "); retry shortly";
        co_return co_await send_error(front, e);
    }
    const Pairing pairing = pair_dialects(dialect, req.kind, info.dialect, req.sampling.n);
    if (pairing.refusal) {
        outcome_ = Outcome::rejected;
        co_return co_await send_error(front, *pairing.refusal);
    }
    if (pairing.fast_path && dialect != canonical::Dialect::sglang) {
        // The client's own bytes go upstream: a setting that backend's OpenAI layer would ignore
        // (llama.cpp has no min_tokens, ...) is refused here, as the encoder would refuse it.
        if (auto e = translators::openai::check_upstream_settings(
                req, openai_flavor(info.dialect, info.flavor, worker_.pool().backend().url.host))) {
            outcome_ = Outcome::rejected;
            co_return co_await send_error(front, *e);
        }
    }
    const translators::Codec& back = translators::codec_for(pairing.back);
    back_name_ = canonical::to_string(pairing.back);
    const bool same = pairing.fast_path;
    if (!same) {
        // Ids the client's dialect reads per choice (SGLang's meta_info.id); the fast path
        // relays the backend's own.
        const size_t count = front.choice_ids_wanted(req);
        for (size_t i = 0; i < count; ++i) {
            req.request_ids.push_back(worker_.random_hex(32));
        }
    }
    start_watch();
    if (req.stream) {
        co_return co_await relay_stream(front, back, req, same);
    }
    // SGLang clients read per-item token counts; an OpenAI backend reports those for a batch
    // or n > 1 only per streamed chunk, so such a request is streamed upstream and gathered.
    const bool gather = dialect == canonical::Dialect::sglang &&
                        pairing.back == canonical::Dialect::openai_completions &&
                        (req.prompt_is_list || req.sampling.n > 1);
    co_return co_await relay_whole(front, back, req, same, gather);
}

canonical::StreamState Exchange::client_stream_state(const translators::Codec& front,
                                                     const canonical::GenerationRequest& req) {
    canonical::StreamState enc;
    enc.id = std::string(front.id_prefix()) + worker_.random_hex(32);
    enc.model = client_model(req);
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

namespace {

// TGI's OpenAI-compatible routes leave the matched stop string in the text (its native codec
// handles that itself); an OpenAI-dialect decode of them needs it removed.
std::vector<std::string> stops_left_in_text(const BackendInfo& info, const translators::Codec& back,
                                            const canonical::GenerationRequest& req) {
    const bool openai_route = back.dialect() == canonical::Dialect::openai_chat ||
                              back.dialect() == canonical::Dialect::openai_completions;
    if (info.dialect != config::BackendDialect::tgi || !openai_route ||
        req.sampling.keep_stop_str.value_or(false)) {
        return {};
    }
    return req.sampling.stop;
}

}  // namespace

canonical::Timing Exchange::measured_timing(bool content_now) const {
    // What this exchange saw: prompt evaluation is the wait for the first token, evaluation the
    // time from there to the last one (a whole answer shows only its total). load_duration: the
    // model was loaded already, so it stays unset. `content_now`: content is going out now (it
    // is not in first_content_ / last_content_ yet).
    using std::chrono::duration_cast;
    using std::chrono::nanoseconds;
    const auto now = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> first = first_content_;
    std::chrono::steady_clock::time_point last = last_content_;
    if (content_now) {
        first = first.value_or(now);
        last = now;
    }
    canonical::Timing t;
    t.created_unix_ns = unix_nanoseconds();
    t.total_ns = duration_cast<nanoseconds>(now - received_).count();
    if (first) {
        t.prompt_eval_ns = duration_cast<nanoseconds>(*first - received_).count();
        t.eval_ns = duration_cast<nanoseconds>(last - *first).count();
    }
    return t;
}

void Exchange::encode_client_stream_end(const translators::Codec& front,
                                        canonical::StreamState& enc, std::string& out) {
    enc.timing = measured_timing();
    front.encode_stream_end(enc, out);
}

void Exchange::encode_client_response(const translators::Codec& front,
                                      canonical::GenerationResult& result,
                                      const canonical::GenerationRequest& req, std::string& out) {
    result.timing = measured_timing();
    front.encode_response(result, req, out);
}

namespace {

// The body to send upstream on the same-dialect fast path: the client's own bytes, with only the
// model name changed when it must be (translators/openai/passthrough: right for any valid JSON).
// `ask_usage`: an OpenAI stream whose client did not ask for usage gets
// stream_options.include_usage all the same (the tokens are counted from it); the usage chunk
// is taken out again before the client sees it.
// `ask_running`: also ask for running usage on every chunk (vLLM and SGLang), stripped again
// from each chunk when the client did not ask for it.
// `flavor`: the backend's OpenAI layer, whose names may differ from OpenAI's
// (translators::openai::name_edits).
std::string fast_path_body(std::string& client_body, const canonical::GenerationRequest& req,
                           const std::string& model, bool ask_usage, bool ask_running,
                           translators::Flavor flavor) {
    if (req.dialect == canonical::Dialect::sglang) {
        return std::move(client_body);
    }
    translators::openai::RequestEdits edits;
    const bool renamed =
        translators::openai::name_edits(flavor, req.sampling.keep_stop_str.has_value(), edits);
    if (model == req.model && !ask_usage && !ask_running && !renamed) {
        return std::move(client_body);
    }
    if (model != req.model) {
        edits.model = model;
    }
    edits.include_usage = ask_usage;
    edits.continuous_usage = ask_running;
    std::string body;
    body.reserve(client_body.size() + 96);
    if (!translators::openai::edit_request(client_body, edits, body)) {
        return std::move(client_body);  // it was decoded, so it is valid JSON: not reached
    }
    return body;
}

// Whether the backend is known to accept stream_options in a streamed OpenAI-dialect request:
// vLLM and SGLang (with continuous_usage_stats), the OpenAI layers of TGI and llama.cpp (llama.cpp
// builds that predate it ignore unknown fields), and OpenAI's own API. Other OpenAI-compatible
// servers may validate strictly and refuse a field they do not know: they are not sent it, and
// the tokens are counted from what they report.
bool accepts_stream_options(const BackendInfo& info, const config::Backend& backend) {
    if (info.flavor != translators::Flavor::generic) {
        return true;
    }
    if (info.dialect == config::BackendDialect::tgi ||
        info.dialect == config::BackendDialect::llamacpp) {
        return true;
    }
    const std::string& host = backend.url.host;
    return host == "api.openai.com" || host.ends_with(".openai.azure.com");
}

// The backend's response headers the proxy's parser keeps, for Codec::read_response_headers.
class KeptHeaders final : public translators::ResponseHeaders {
public:
    explicit KeptHeaders(const UpstreamResponseParser& parser) : parser_(parser) {}
    std::string_view find(std::string_view name) const override {
        if (name == "x-prompt-tokens") {
            return parser_.prompt_tokens();
        }
        if (name == "content-type") {
            return parser_.content_type();
        }
        return {};
    }

private:
    const UpstreamResponseParser& parser_;
};

}  // namespace

Task<std::optional<bool>> Exchange::open_upstream(const translators::Codec& front,
                                                  const translators::Codec& back,
                                                  const canonical::GenerationRequest& req,
                                                  bool same_dialect, bool upstream_streams,
                                                  bool ask_usage, bool ask_running) {
    const std::string model = upstream_model(req);
    const translators::Flavor flavor = openai_flavor(
        worker_.backend().dialect, worker_.backend().flavor, worker_.pool().backend().url.host);
    std::string body;
    if (same_dialect) {
        body = fast_path_body(request_.body(), req, model, ask_usage, ask_running, flavor);
    } else {
        auto encoded = back.encode_request(
            req, translators::UpstreamOptions{
                     model, flavor, upstream_streams,
                     accepts_stream_options(worker_.backend(), worker_.pool().backend())});
        if (!encoded) {
            outcome_ = Outcome::rejected;
            co_return co_await send_error(front, encoded.error());
        }
        body = std::move(encoded.value());
    }
    const std::string target =
        worker_.pool().backend().url.base_path + std::string(back.upstream_path(req));
    if (!co_await call_upstream(http::verb::post, target, std::move(body), upstream_streams)) {
        if (client_left()) {
            co_return false;
        }
        co_return co_await send_error(front, error_);
    }
    const int status = upstream_->status();
    if (status >= 200 && status < 300) {
        co_return std::nullopt;
    }
    // Before the first byte to the client an error is still a real HTTP error, with the
    // backend's status and message in the client's dialect.
    std::string response;
    const auto ec = co_await read_upstream_body(response);
    finish_upstream(!ec);
    if (client_left()) {
        co_return false;
    }
    outcome_ = Outcome::upstream_error;
    note_upstream_error(status < 500 ? UpstreamErrorKind::status_4xx
                                     : UpstreamErrorKind::status_5xx);
    canonical::Error e = back.decode_error(status, response);
    e.status = status;
    co_return co_await send_error(front, e);
}

Task<bool> Exchange::relay_whole(const translators::Codec& front, const translators::Codec& back,
                                 const canonical::GenerationRequest& req, bool same_dialect,
                                 bool upstream_streams) {
    const std::string model = upstream_model(req);
    if (auto finished = co_await open_upstream(front, back, req, same_dialect, upstream_streams,
                                               false, false)) {
        co_return *finished;
    }
    if (!upstream_streams) {
        std::string response;
        if (auto ec = co_await read_upstream_body(response)) {
            finish_upstream(false);
            if (client_left()) {
                co_return false;
            }
            co_return co_await send_error(front, upstream_failure(ec, "reading the response"));
        }
        finish_upstream(true);
        if (same_dialect) {
            // Relayed as is, but only if it is what the dialect says it is.
            auto checked = back.check_response(response, req);
            if (!checked) {
                outcome_ = Outcome::upstream_error;
                note_upstream_error(UpstreamErrorKind::protocol);
                co_return co_await send_error(front, checked.error());
            }
            note_usage(*checked);
            if (model != client_model(req)) {
                // The name the client used, whatever the backend answers with (an alias, or a
                // dated version of the model it was sent).
                const std::string shown = client_model(req);
                translators::openai::ResponseEdits edits;
                edits.model = shown;
                std::string edited;
                edited.reserve(response.size() + shown.size());
                if (translators::openai::edit_response(response, edits, edited)) {
                    response = std::move(edited);
                }
            }
            const std::string_view ctype = upstream_->parser->content_type();
            co_return co_await send(http::status::ok, std::move(response),
                                    ctype.empty() ? "application/json" : ctype);
        }
        auto result = back.decode_response(response, req);
        if (!result) {
            outcome_ = Outcome::upstream_error;
            note_upstream_error(UpstreamErrorKind::protocol);
            co_return co_await send_error(front, result.error());
        }
        canonical::GenerationResult& r = result.value();
        canonical::StopTrimmer(stops_left_in_text(worker_.backend(), back, req)).apply(r);
        back.read_response_headers(KeptHeaders(*upstream_->parser), r);
        note_usage(r.usage);
        r.model = client_model(req);
        r.created = unix_seconds();
        for (size_t i = 0; i < r.choices.size() && i < req.request_ids.size(); ++i) {
            r.choices[i].id = req.request_ids[i];
        }
        if (r.id.empty() || front.dialect() != back.dialect()) {
            r.id = std::string(front.id_prefix()) + worker_.random_hex(32);
        }
        front.response_headers(r, extra_headers_);
        std::string out;
        encode_client_response(front, r, req, out);
        co_return co_await send(http::status::ok, std::move(out));
    }

    // Gather a stream into one result (see generate()).
    framing::SseScanner scanner;
    std::vector<framing::SseEvent> events;
    std::vector<canonical::StreamEvent> decoded;
    canonical::StreamState state;
    state.n = req.sampling.n;
    canonical::set_logprob_request(state, req);
    canonical::GenerationResult result;
    bool done = false;
    for (;;) {
        std::string_view bytes;
        if (auto ec = co_await read_upstream_some(bytes)) {
            finish_upstream(false);
            if (client_left()) {
                co_return false;
            }
            co_return co_await send_error(front, upstream_failure(ec, "reading the stream"));
        }
        events.clear();
        if (bytes.empty()) {
            scanner.finish(events);
        } else {
            scanner.feed(bytes, events);
        }
        for (const auto& ev : events) {
            decoded.clear();
            back.decode_stream_event(ev.data, state, decoded);
            for (const auto& d : decoded) {
                if (d.type == canonical::StreamEvent::Type::error) {
                    finish_upstream(false);
                    outcome_ = Outcome::inband_error;
                    co_return co_await send_error(front, d.error);
                }
                done = done || d.type == canonical::StreamEvent::Type::done;
                canonical::apply_to_result(d, result);
            }
        }
        if (bytes.empty()) {
            break;
        }
    }
    finish_upstream(true);
    if (!done) {
        outcome_ = Outcome::truncated;
        canonical::Error e;
        e.status = 502;
        e.type = "upstream_error";
        e.message = "the backend ended its stream before the terminator; the answer is incomplete";
        co_return co_await send_error(front, e);
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
    }
    note_usage(result.usage);
    result.model = client_model(req);
    for (size_t i = 0; i < result.choices.size() && i < req.request_ids.size(); ++i) {
        result.choices[i].id = req.request_ids[i];
    }
    std::string out;
    encode_client_response(front, result, req, out);
    co_return co_await send(http::status::ok, std::move(out));
}

namespace {

// Splits an upstream body into events: SSE `data` payloads, or NDJSON / NUL-separated records
// (Ollama, vLLM's demo server), both as SseEvent so that one relay loop serves every backend.
class UpstreamSplitter {
public:
    explicit UpstreamSplitter(translators::Framing f) : framing_(f) {}
    void feed(std::string_view bytes, std::vector<framing::SseEvent>& out) {
        if (framing_ == translators::Framing::sse) {
            sse_.feed(bytes, out);
            return;
        }
        records_.clear();
        rec_.feed(bytes, records_);
        take(out);
    }
    void finish(std::vector<framing::SseEvent>& out) {
        if (framing_ == translators::Framing::sse) {
            sse_.finish(out);
            return;
        }
        records_.clear();
        rec_.finish(records_);
        take(out);
    }
    bool overflowed() const {
        return framing_ == translators::Framing::sse ? sse_.overflowed() : rec_.overflowed();
    }

private:
    void take(std::vector<framing::SseEvent>& out) {
        for (auto& r : records_) {
            out.emplace_back().data = std::move(r);
        }
    }
    translators::Framing framing_;
    framing::SseScanner sse_{4 * 1024 * 1024, true};  // comments too: keep-alives go on
    framing::RecordScanner rec_;
    std::vector<std::string> records_;
};

}  // namespace

namespace {

// One backend event relayed on the same-dialect fast path: the terminator as the dialect writes
// it, JSON with `edits` made (on one line: a payload that came over several `data:` lines goes
// out on one, which naive line-based clients need), anything else as it came.
void relay_event(std::string_view data, const translators::openai::ResponseEdits& edits,
                 bool strip_usage, std::string& out) {
    if (framing::is_done_sentinel(data)) {
        out.append(framing::kSseDone);
        return;
    }
    const bool multi_line = data.find('\n') != std::string_view::npos;
    if (edits.model.empty() && edits.id.empty() && !strip_usage && !multi_line) {
        framing::write_sse_data(data, out);
        return;
    }
    translators::openai::ResponseEdits e = edits;
    e.strip_usage = strip_usage;
    e.one_line = true;
    e.trusted = true;  // the backend codec decoded it already
    const size_t mark = out.size();
    framing::begin_sse_data(out);
    if (translators::openai::edit_response(data, e, out)) {
        framing::end_sse_data(out);
        return;
    }
    out.resize(mark);
    framing::write_sse_data_lines(data, out);
}

}  // namespace

Task<bool> Exchange::relay_stream(const translators::Codec& front, const translators::Codec& back,
                                  const canonical::GenerationRequest& req, bool same_dialect) {
    const std::string model = upstream_model(req);
    const std::string shown_model = client_model(req);
    const bool openai_fast_path = same_dialect && front.dialect() != canonical::Dialect::sglang;
    // The usage chunk, asked for on the client's behalf where the backend is known to accept
    // stream_options, and taken out again (a backend that sends one unasked is relayed as is).
    const bool strip_usage = openai_fast_path && !req.include_usage &&
                             accepts_stream_options(worker_.backend(), worker_.pool().backend());
    // Exact per-chunk token counts from servers that offer them (several tokens per chunk under
    // speculative decoding); removed again from every chunk if the client did not ask.
    const bool strip_running = openai_fast_path && !req.continuous_usage &&
                               translators::has_running_usage(worker_.backend().flavor);
    if (auto finished = co_await open_upstream(front, back, req, same_dialect, true, strip_usage,
                                               strip_running)) {
        co_return *finished;
    }
    if (!co_await start_stream(front.framing() == translators::Framing::ndjson
                                   ? "application/x-ndjson"
                                   : "text/event-stream")) {
        co_return false;
    }

    canonical::StreamState dec;
    dec.n = req.sampling.n;
    canonical::set_logprob_request(dec, req);
    if (!same_dialect) {
        // What only a client of the backend's dialect takes is kept for it (the fast path relays
        // the bytes themselves).
        dec.client = front.dialect();
    }
    if (!req.sampling.keep_stop_str.value_or(false)) {
        dec.stop = req.sampling.stop;
    }
    back.init_upstream_stream(dec, req);
    canonical::StreamState enc = client_stream_state(front, req);
    canonical::StopTrimmer trimmer(stops_left_in_text(worker_.backend(), back, req));

    // OpenAI streams carry one id on every chunk; SGLang's OpenAI layer gives each of n
    // choices its own.
    const bool rewrite_ids = same_dialect && req.sampling.n > 1 &&
                             front.dialect() != canonical::Dialect::sglang;
    translators::openai::ResponseEdits edits;  // what the fast path changes in every event
    if (model != shown_model) {
        edits.model = shown_model;  // the name the client used, whatever the backend answers
    }
    if (rewrite_ids) {
        edits.id = enc.id;  // SGLang's OpenAI layer gives each of n choices its own id
    }
    UpstreamSplitter splitter(back.framing());
    std::vector<framing::SseEvent> events;
    std::vector<canonical::StreamEvent> decoded;
    std::string out;
    bool done = false;
    bool message_complete = false;
    std::optional<canonical::Error> failure;
    canonical::TokenTally tally;
    tally.n = req.sampling.n;
    int64_t content_tokens = 0;
    // One decoded event: counted, and (translated path) encoded for the client. Returns false
    // when the backend reported an error, which is then already encoded in-band.
    auto take = [&](const canonical::StreamEvent& d, bool& usage_only) {
        if (d.type == canonical::StreamEvent::Type::done) {
            done = true;
            return true;
        }
        if (d.type == canonical::StreamEvent::Type::error) {
            front.encode_stream_error(d.error, enc, out);
            outcome_ = Outcome::inband_error;
            done = true;
            return false;
        }
        usage_only = d.type == canonical::StreamEvent::Type::usage;
        const int64_t tokens = tally.add(d);
        if (d.type == canonical::StreamEvent::Type::chunk && !d.text.empty()) {
            content_tokens += tokens;
        }
        if (!same_dialect) {
            if (d.finish) {
                // A final event may carry durations (llama.cpp's timings): as of now.
                enc.timing = measured_timing(!d.text.empty());
            }
            front.encode_stream_event(d, enc, out);
        }
        return true;
    };
    while (!done) {
        std::string_view bytes;
        if (auto ec = co_await read_upstream_some(bytes)) {
            if (client_left()) {
                note_usage(tally.total());
                co_return false;
            }
            failure = upstream_failure(ec, "streaming");
            if (outcome_ != Outcome::timeout) {
                outcome_ = Outcome::truncated;
            }
            break;
        }
        events.clear();
        if (bytes.empty()) {
            message_complete = true;
            splitter.finish(events);
        } else {
            splitter.feed(bytes, events);
            if (splitter.overflowed()) {
                failure = canonical::Error{502, "the backend sent a stream event larger than 4 MiB",
                                           "upstream_error", "", ""};
                outcome_ = Outcome::upstream_error;
                break;
            }
        }
        out.clear();
        content_tokens = 0;
        bool failed = false;
        for (auto& ev : events) {
            if (ev.comment) {
                // A keep-alive: on to the client in its own dialect's form, where it has one.
                if (same_dialect) {
                    framing::write_sse_comment(ev.data, out);
                } else {
                    canonical::StreamEvent keepalive;
                    keepalive.type = canonical::StreamEvent::Type::keepalive;
                    keepalive.text = std::move(ev.data);
                    bool usage_only = false;
                    take(keepalive, usage_only);
                }
                continue;
            }
            // Decoded on the fast path too: the tokens are counted from it, and garbage or the
            // backend's own error becomes a well-formed in-band error instead of reaching the
            // client raw.
            decoded.clear();
            back.decode_stream_event(ev.data, dec, decoded);
            bool usage_only = false;
            for (auto& d : decoded) {
                if (trimmer.active()) {
                    if (d.type == canonical::StreamEvent::Type::done) {
                        std::vector<canonical::StreamEvent> rest;
                        trimmer.flush(rest);
                        for (const auto& r : rest) {
                            take(r, usage_only);
                        }
                    }
                    trimmer.apply(d);
                }
                if (!take(d, usage_only)) {
                    failed = true;
                    break;
                }
            }
            if (failed) {
                break;
            }
            if (same_dialect && !(usage_only && strip_usage)) {
                relay_event(ev.data, edits, strip_running && !usage_only, out);
            }
        }
        if (message_complete && !failed && !done) {
            // A clean end of the body without a terminator: the end for a dialect that has none
            // (vLLM's demo server); for the others the codec adds nothing (a truncation, below).
            decoded.clear();
            back.decode_stream_end(dec, decoded);
            bool usage_only = false;
            for (const auto& d : decoded) {
                if (!take(d, usage_only)) {
                    break;
                }
            }
        }
        if (content_tokens > 0) {
            note_content(content_tokens);
        }
        if (!out.empty() && !co_await write_stream(out)) {
            note_usage(tally.total());
            co_return false;
        }
        if (message_complete) {
            break;
        }
    }
    note_usage(tally.total());
    if (!done && !failure) {
        failure = canonical::Error{502,
                                   "the backend closed the stream before it finished; the output "
                                   "above is incomplete",
                                   "upstream_error", "", ""};
        outcome_ = Outcome::truncated;
    }
    out.clear();
    if (failure) {
        front.encode_stream_error(*failure, enc, out);
    } else if (!same_dialect) {
        encode_client_stream_end(front, enc, out);
    }
    if (!out.empty() && !co_await write_stream(out)) {
        co_return false;
    }
    if (!co_await end_stream()) {
        co_return false;
    }
    // Drain what is left of the upstream message (the chunked terminator) so the connection can
    // be reused; a backend that does not finish promptly loses its connection instead.
    if (!failure && !message_complete && upstream_ && upstream_->conn) {
        upstream_->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        std::string_view rest;
        bool clean = true;
        for (int i = 0; i < 8; ++i) {
            if (co_await read_upstream_some(rest)) {
                clean = false;
                break;
            }
            if (rest.empty()) {
                break;
            }
        }
        finish_upstream(clean && upstream_->parser->is_done());
    } else {
        finish_upstream(!failure && message_complete);
    }
    co_return keep_alive_;
}

}  // namespace infergate
