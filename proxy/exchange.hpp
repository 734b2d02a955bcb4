#pragma once
// One request/response exchange: route, decode, call the backend, relay or translate the answer,
// finish. Lives on one worker thread, inside its session's coroutine.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/client_request.hpp"
#include "proxy/deadlines.hpp"
#include "proxy/metrics.hpp"
#include "proxy/net.hpp"
#include "proxy/request_meter.hpp"
#include "proxy/router.hpp"
#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/catalogue.hpp"
#include "translators/codec.hpp"

namespace infergate {

class Worker;
class UpstreamConnection;
class DisconnectWatch;

// How an exchange ended (the metrics and the access log use it).
enum class Outcome { ok, client_disconnect, upstream_error, inband_error, truncated, timeout, rejected };
std::string_view to_string(Outcome o);

class Exchange {
public:
    // `client_deadline` times the writes to `client` (the session's, shared with its reads);
    // `watch` is the session's, started while the backend works on a generation.
    Exchange(Worker& worker, Stream& client, Deadline& client_deadline, DisconnectWatch& watch,
             ClientRequest request, const std::string& peer);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // Returns true when the client connection may serve another request.
    Task<bool> run();

private:
    struct Upstream;  // one call to the backend, in flight

    // ---- routes ---------------------------------------------------------------------------
    Task<bool> dispatch();
    // `path` is the matched route (TGI answers /generate, /generate_stream and / differently).
    Task<bool> generate(canonical::Dialect dialect, std::string_view path);
    Task<bool> generate_by_body(std::string_view path);
    Task<bool> root();
    Task<bool> serve_metrics();
    Task<bool> models(std::string_view id);
    Task<bool> health(bool generate);
    Task<bool> model_info(bool server_info);
    Task<bool> tgi_info();
    Task<bool> ollama_tags(bool running);
    Task<bool> ollama_version();
    Task<bool> ollama_show();
    Task<bool> llamacpp_props();

    // ---- generation paths -----------------------------------------------------------------
    // Encodes (or, same dialect, forwards) the request and reads the backend's response header.
    // nullopt: a 2xx is in and its body is next. A value: the exchange already answered (an
    // error in the client's dialect) and that is its keep-alive result.
    Task<std::optional<bool>> open_upstream(const translators::Codec& front,
                                            const translators::Codec& back,
                                            const canonical::GenerationRequest& req,
                                            bool same_dialect, bool upstream_streams,
                                            bool ask_usage, bool ask_running);
    Task<bool> relay_whole(const translators::Codec& front, const translators::Codec& back,
                           const canonical::GenerationRequest& req, bool same_dialect,
                           bool upstream_streams);
    Task<bool> relay_stream(const translators::Codec& front, const translators::Codec& back,
                            const canonical::GenerationRequest& req, bool same_dialect);
    // The client's encoder state for a translated stream.
    canonical::StreamState client_stream_state(const translators::Codec& front,
                                               const canonical::GenerationRequest& req);
    // Appends the end of a translated stream, with what this exchange measured in its timing.
    void encode_client_stream_end(const translators::Codec& front, canonical::StreamState& enc,
                                  std::string& out);
    // Encodes a whole answer in the client's dialect, with what this exchange measured.
    void encode_client_response(const translators::Codec& front,
                                canonical::GenerationResult& result,
                                const canonical::GenerationRequest& req, std::string& out);
    canonical::Timing measured_timing(bool content_now = false) const;

    // ---- backend --------------------------------------------------------------------------
    // Sends the request and reads the response header. On failure returns false with the error
    // already mapped (502/504) into `error_`.
    Task<bool> call_upstream(http::verb verb, std::string target, std::string body, bool stream);
    // Reads the rest of the upstream body into `out` (bounded).
    Task<beast::error_code> read_upstream_body(std::string& out);
    // Reads the next piece of the upstream body; empty view at the end of the message.
    Task<beast::error_code> read_upstream_some(std::string_view& out);
    void finish_upstream(bool reusable);
    std::chrono::milliseconds op_timeout(int64_t configured_ms) const;
    void start_watch();
    // Whether the client went away while the backend worked (the Watch saw it); records that as
    // the exchange's outcome, so that an answer nobody received is never counted as ok.
    bool client_left();
    canonical::Error upstream_failure(beast::error_code ec, std::string_view stage);

    // ---- responses ------------------------------------------------------------------------
    Task<bool> send(http::status status, std::string body,
                    std::string_view content_type = "application/json");
    Task<bool> send_error(const translators::Codec& codec, const canonical::Error& e);
    Task<bool> send_openai_error(const canonical::Error& e);
    Task<bool> start_stream(std::string_view content_type);
    Task<bool> write_stream(std::string_view bytes);
    Task<bool> end_stream();
    // Appends a response's status line and the headers every answer carries (not the blank
    // line that ends them).
    void append_response_head(unsigned status, std::string_view content_type, bool keep_alive,
                              std::string& out) const;

    // ---- measurement ----------------------------------------------------------------------
    // Content-bearing bytes carrying `tokens` tokens are about to leave for the client.
    void note_content(int64_t tokens);
    void note_usage(const canonical::Usage& usage);
    void note_upstream_error(UpstreamErrorKind kind);
    void finish_record();  // metrics + access log, once
    // Time spent waiting (for the backend or the client) is not the proxy's own overhead.
    struct WaitTimer {
        Exchange& x;
        std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
        ~WaitTimer() { x.waited_ += std::chrono::steady_clock::now() - t0; }
    };

    std::string client_model(const canonical::GenerationRequest& req) const;
    // What the info routes show: the names clients may use (the served model, then every
    // alias) and the backend's facts.
    canonical::ModelCatalogue catalogue() const;
    // GET /v1/models in Anthropic's shape (asked for by an `anthropic-version` header).
    Task<bool> anthropic_models(std::string_view id);
    std::string upstream_model(const canonical::GenerationRequest& req) const;

    Worker& worker_;
    Stream& client_;
    Deadline& client_deadline_;
    ClientRequest request_;
    const std::string& peer_;
    std::string request_id_;
    bool keep_alive_ = true;
    bool chunked_ = true;
    std::vector<std::pair<std::string_view, std::string>> extra_headers_;  // on the next send()
    std::string_view allow_;  // the Allow header of a 405  // false for HTTP/1.0 clients: the stream ends with the connection

    std::unique_ptr<Upstream> upstream_;
    DisconnectWatch& watch_;

    canonical::Error error_;  // the last upstream failure, mapped to a client-facing error
    Failure failure_;         // what the warn line of a failed request says
    Outcome outcome_ = Outcome::ok;
    int status_ = 0;  // the status sent to the client; 0 until a status line went out
    std::chrono::steady_clock::time_point received_;

    // What the metrics and the access log get at the end.
    bool generation_ = false;
    RequestRecord record_;
    std::string_view front_name_;
    std::string_view back_name_;
    std::string model_label_;
    std::chrono::steady_clock::duration waited_{};
    std::optional<std::chrono::steady_clock::time_point> first_content_;
    std::chrono::steady_clock::time_point last_content_;
    uint64_t bytes_in_ = 0;
    uint64_t bytes_out_ = 0;
    bool usage_known_ = false;
};

}  // namespace infergate
