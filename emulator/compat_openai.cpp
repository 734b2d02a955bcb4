// The OpenAI layers of TGI (router/src/server.rs chat_completions / completions) and llama.cpp
// (server-task.cpp to_json_oaicompat*). Requests are parsed by openai_request.cpp; budgets,
// checks and every wire shape are the servers' own (api-dialects §5.7 and §7.6). This file holds
// the handler: errors, checks, budgets; the bodies and chunks are in compat_openai_wire.cpp.
#include <algorithm>

#include "emulator/api.hpp"
#include "emulator/compat_openai.hpp"
#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/llamacpp.hpp"
#include "emulator/tgi_request.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kTgiDone = "data:[DONE]\n\n";
constexpr Framing kTgiFraming{"text/event-stream", kJson, kTgiDone, {}};
constexpr Framing kLlamaFraming{"text/event-stream", kLlamaJson, kDoneEvent, {}};

class TgiOaiErrors final : public ErrorStyle {
public:
    std::string_view render_status(int status, std::string_view message,
                                   std::string& body) const override {
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", message);
        w.kv("error_type", status == 422 ? "validation" : "generation");
        w.EndObject();
        return kJson;
    }
    void render_event(std::string_view message, std::string& event) const override {
        event = "data:";
        JsonWriter w(event);
        w.StartObject();
        w.key("error");
        w.StartObject();
        w.kv("message", message);
        w.kv_int("http_status_code", 500);
        w.EndObject();
        w.EndObject();
        event += "\n\n";
    }
};
const TgiOaiErrors kTgiErrors;

net::awaitable<void> handle_compat(Request& req, Conn& conn, const Options& options, bool chat,
                                   bool tgi) {
    const ErrorStyle& errors = tgi ? static_cast<const ErrorStyle&>(kTgiErrors) : llamacpp_errors();
    const Framing& framing = tgi ? kTgiFraming : kLlamaFraming;
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    bool stream = false;
    if (doc_ok && doc.IsObject()) {
        get_bool(doc, "stream", stream);
    }
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, stream, errors, framing)) {
        co_return;
    }
    OaiRequest oai;
    std::optional<OaiError> error = parse_oai_request(
        doc, doc_ok, chat, tgi ? OaiFlavor::kTgi : OaiFlavor::kLlamacpp, options, oai);
    int longest = 0;
    for (const PromptKey& p : oai.prompts) {
        longest = std::max(longest, p.tokens);
    }
    const int room = options.max_model_len - longest;
    LlamaProbs probs;
    if (!error && !tgi) {
        // Parameters llama.cpp's completions route refuses, and its chat route's logprobs.
        std::optional<std::string> refused;
        for (const char* param : {"best_of", "echo", "suffix"}) {
            if (!chat && !refused && doc.IsObject() && doc.HasMember(param)) {
                refused = std::string("Unsupported param: ") + param;
            }
        }
        if (!refused) {
            refused = llamacpp_probs(doc, chat, probs);
        }
        if (!refused) {
            refused = std::move(oai.format_error);  // a runtime_error of the parser: a 500
        }
        if (refused) {
            std::string body;
            render_llamacpp_error(500, *refused, body);
            co_await conn.send(500, kLlamaJson, body);
            co_return;
        }
    }
    if (!error && tgi && chat && doc.IsObject() && member(doc, "response_format") != nullptr &&
        member(doc, "tools") != nullptr) {
        // ChatRequest::try_into_generate, before any validation.
        std::string body;
        JsonWriter w(body);
        w.StartObject();
        w.kv("error", "Tool error: Grammar and tools are mutually exclusive");
        w.kv("error_type", "tool_error");
        w.EndObject();
        co_await conn.send(422, kJson, body);
        co_return;
    }
    if (!error && tgi) {
        probs.n = oai.logprobs.value_or(0);
        if (auto m = tgi_check_sampling(oai.temperature == 0.0 ? std::nullopt : oai.temperature,
                                        oai.top_p, std::nullopt, oai.requested_max_tokens)) {
            error = OaiError{422, "Input validation error: " + *m, false};
        } else if (auto top = tgi_check_top_n(oai.top_logprobs)) {
            error = OaiError{422, "Input validation error: " + *top, false};
        } else if (room <= 0 || oai.requested_max_tokens.value_or(0) > room) {
            error = OaiError{422,
                             "Input validation error: `inputs` tokens + `max_new_tokens` must be <= " +
                                 std::to_string(options.max_model_len) + ". Given: " +
                                 std::to_string(longest) + " `inputs` tokens and " +
                                 std::to_string(oai.requested_max_tokens.value_or(room)) +
                                 " `max_new_tokens`",
                             false};
        } else if (oai.format_error) {
            error = OaiError{422, "Input validation error: " + *oai.format_error, false};
        }
    } else if (!error && room <= 0) {
        error = OaiError{400, "the request exceeds the available context size, try increasing it",
                         false};
    }
    if (error) {
        std::string body;
        if (tgi && error->framework) {
            co_await conn.send(422, kPlainText,
                               "Failed to deserialize the JSON body into the target type: " +
                                   error->message);
        } else if (tgi) {
            co_await conn.send(422, errors.render_status(422, error->message, body), body);
        } else {
            render_llamacpp_error(error->status, error->message, body);
            co_await conn.send(error->status, kLlamaJson, body);
        }
        co_return;
    }
    // Both fill the context when no budget is given (TGI v3, llama.cpp n_predict -1).
    const std::int64_t wanted = oai.requested_max_tokens.value_or(room);
    oai.max_tokens = static_cast<int>(std::clamp<std::int64_t>(wanted, 0, room));
    oai.n = 1;  // TGI ignores n; llama.cpp serves one choice per prompt
    oai.stop.keep_stop_string = tgi;
    oai.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices = generate_choices(oai.prompts, 1, oai.max_tokens, oai.stop);
    ChatPlan plan;
    if (chat) {
        // TGI: one call per turn (its grammar has one), arguments streamed token by token after
        // a "{" and re-serialised compactly in a whole answer, no reasoning output. llama.cpp:
        // nlohmann's compact dump, reasoning_content.
        ChatAsk ask = read_chat_ask(doc, ChatFamily::kOpenai);
        ask.format = std::move(oai.format);
        plan = plan_chat(std::move(ask), req.knobs,
                         tgi ? PlanOptions{ArgsLayout::kTgiStream, false, 1}
                             : PlanOptions{ArgsLayout::kCompact, true, kMaxToolCalls});
        if (plan.any()) {
            apply_plan(plan, choices, oai.max_tokens);
            oai.logprobs.reset();
            probs.n = 0;  // the emulator's logprob model covers generated words only
        }
    } else if (oai.format) {
        apply_format(*oai.format, choices, oai.max_tokens);
        probs.n = 0;
    }
    CompatContext ctx{
        .req = oai,
        .tgi = tgi,
        .id = (chat ? "chatcmpl-" : "cmpl-") + random_alnum(32),
        .created = unix_now(),
        .times = {req.received, Clock::now()},
        .probs = probs,
        .logprobs = tgi ? oai.logprobs.has_value() : probs.n > 0,
        .plan = &plan,
        .tool_id = tgi && !plan.calls.empty() ? tgi_tool_call_id(doc) : std::string()};
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, oai.prompts, choices);
    if (!gen) {
        co_return;
    }
    ctx.times.received = gen->started();
    ctx.cache_report = options.replica.prefix_cache > 0;
    for (const ChoiceState& c : choices) {
        ctx.prompt_tokens += c.prompt_tokens;
        ctx.cached_tokens += c.cached_tokens;
        ctx.completion_tokens += c.total_tokens();
    }
    if (oai.stream) {
        CompatEncoder encoder(ctx);
        co_await run_stream(conn, req, choices, encoder, errors, framing);
        co_return;
    }
    auto render = [&](std::string& body) {
        ctx.times.first = gen->first_token_at();
        render_response(ctx, choices, body);
    };
    co_await send_generated(conn, req, choices, render, errors, framing);
}

}  // namespace

net::awaitable<void> handle_tgi_openai(Request& req, Conn& conn, const Options& options,
                                       bool chat) {
    co_await handle_compat(req, conn, options, chat, true);
}

net::awaitable<void> handle_llamacpp_openai(Request& req, Conn& conn, const Options& options,
                                            bool chat) {
    co_await handle_compat(req, conn, options, chat, false);
}

}  // namespace infergate::emulator
