// The generation routes shared by both dialects' OpenAI layers, and the openai (vLLM) router.
#include <chrono>

#include "emulator/api.hpp"
#include "emulator/embed.hpp"
#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/wire_common.hpp"

namespace infergate::emulator {
namespace {

using boost::beast::http::verb;

constexpr std::string_view kVllmVersion = "0.11.0-emulator";

bool wants_stream(const rapidjson::Document& doc, bool doc_ok) {
    bool stream = false;
    return doc_ok && get_bool(doc, "stream", stream) == Lookup::kOk && stream;
}

std::string vllm_models_body(const Options& options) {
    const std::int64_t now = unix_now();
    return model_list_body(options.model, now, "vllm", [&options, now](JsonWriter& w) {
        w.kv("root", options.model);
        w.kv_null("parent");
        w.kv_int("max_model_len", options.max_model_len);
        w.key("permission");
        w.StartArray();
        w.StartObject();
        w.kv("id", "modelperm-" + random_hex_id());
        w.kv("object", "model_permission");
        w.kv_int("created", now);
        w.kv_bool("allow_create_engine", false);
        w.kv_bool("allow_sampling", true);
        w.kv_bool("allow_logprobs", true);
        w.kv_bool("allow_search_indices", false);
        w.kv_bool("allow_view", true);
        w.kv_bool("allow_fine_tuning", false);
        w.kv("organization", "*");
        w.kv_null("group");
        w.kv_bool("is_blocking", false);
        w.EndObject();
        w.EndArray();
    });
}

}  // namespace

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string_view finish_reason_name(const Output& out) {
    return out.finish == Finish::kLength ? "length" : "stop";
}

net::awaitable<void> send_not_found(Conn& conn) {
    co_await conn.send(404, kJson, R"({"detail":"Not Found"})");
}

net::awaitable<void> send_method_not_allowed(Conn& conn) {
    co_await conn.send(405, kJson, R"({"detail":"Method Not Allowed"})");
}

std::vector<ChoiceState> generate_choices(const std::vector<PromptKey>& prompts, int n, int budget,
                                          const StopRules& rules) {
    std::vector<ChoiceState> choices;
    choices.reserve(prompts.size() * static_cast<std::size_t>(n));
    for (std::size_t p = 0; p < prompts.size(); ++p) {
        for (int j = 0; j < n; ++j) {
            ChoiceState& c = choices.emplace_back();
            c.index = static_cast<int>(p) * n + j;
            c.prompt_tokens = prompts[p].tokens;
            c.out = generate(prompts[p].hash, j, budget, rules);
        }
    }
    return choices;
}

net::awaitable<void> handle_oai_generation(Request& req, Conn& conn, const Options& options,
                                           OaiFlavor flavor, bool chat) {
    const bool vllm = flavor == OaiFlavor::kVllm;
    const ErrorStyle& errors = vllm ? vllm_errors() : sglang_oai_errors();
    rapidjson::Document doc;
    const bool doc_ok = parse_json(req.body, doc);
    if (req.knobs.fault.kind != FaultKind::kNone &&
        co_await apply_early_fault(conn, req.knobs, wants_stream(doc, doc_ok), errors)) {
        co_return;
    }

    OaiRequest oai;
    if (auto error = parse_oai_request(doc, doc_ok, chat, flavor, options, oai)) {
        std::string body;
        if (!vllm && chat && oai.stream && !error->framework) {
            // SGLang's chat route opens the StreamingResponse before the engine validates, so
            // its errors arrive in-band under a 200.
            render_sglang_oai_error_event(*error, body);
            if (co_await conn.begin_stream(kEventStream) && co_await conn.send_chunk(body)) {
                co_await conn.finish_stream(kDoneEvent);
            }
            co_return;
        }
        if (vllm) {
            render_vllm_error(*error, body);
        } else {
            render_sglang_oai_error(*error, body);
        }
        co_await conn.send(error->status, kJson, body);
        co_return;
    }

    if (!vllm && oai.echo && oai.logprobs == 0) {
        // SGLang reads meta_info["input_top_logprobs"], which only top_logprobs_num > 0 fills:
        // a KeyError, a 500 or (the stream's headers already sent) a cut stream.
        if (!oai.stream) {
            std::string body;
            render_sglang_oai_error(
                OaiError{500, "Internal server error: 'input_top_logprobs'", false}, body);
            co_await conn.send(500, kJson, body);
        } else if (co_await conn.begin_stream(kEventStream)) {
            conn.close_clean();
        }
        co_return;
    }
    oai.stop.eos_after = req.knobs.eos_after;
    std::vector<ChoiceState> choices =
        generate_choices(oai.prompts, oai.n, oai.max_tokens, oai.stop);
    ChatPlan plan;
    if (chat) {
        // Both servers write arguments with json.dumps; both have a reasoning parser.
        ChatAsk ask = read_chat_ask(doc, ChatFamily::kOpenai);
        ask.format = std::move(oai.format);
        plan = plan_chat(std::move(ask), req.knobs, {ArgsLayout::kPython, true, kMaxToolCalls});
        if (plan.any()) {
            apply_plan(plan, choices, oai.max_tokens);
            oai.logprobs.reset();  // the emulator's logprob model covers generated words only
        }
    } else if (oai.format) {
        apply_format(*oai.format, choices, oai.max_tokens);
        oai.logprobs.reset();
    }
    OaiContext ctx{oai, {}, 0, 0, 0, &plan};
    ctx.created = unix_now();
    for (const PromptKey& p : oai.prompts) {
        ctx.prompt_tokens += p.tokens;
    }
    for (ChoiceState& c : choices) {
        ctx.completion_tokens += c.total_tokens();
        if (!vllm) {
            c.id = random_hex_id();  // SGLang: every item is its own engine request
        }
    }
    ctx.id = vllm ? (chat ? "chatcmpl-" : "cmpl-") + random_hex_id() : choices.front().id;
    const std::unique_ptr<Generation> gen = co_await admit(conn, req, oai.prompts, choices);
    if (!gen) {
        co_return;
    }

    if (!oai.stream) {
        std::string body;
        body.reserve(512 + choices.size() * (256 + static_cast<std::size_t>(oai.max_tokens) * 8));
        if (vllm) {
            render_vllm_response(ctx, choices, body);
        } else {
            render_sglang_oai_response(ctx, choices, body);
        }
        co_await send_generated(conn, req, choices, body, errors);
        co_return;
    }
    const std::unique_ptr<EventEncoder> encoder =
        vllm ? make_vllm_encoder(ctx) : make_sglang_oai_encoder(ctx);
    co_await run_stream(conn, req, choices, *encoder, errors);
}

// The openai dialect's generic flavour: an OpenAI-compatible server of no known make, in the
// OpenAI API's shapes where they differ from vLLM's.
net::awaitable<void> route_generic(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    const bool post = req.method == verb::post;
    if ((path == "/v1/completions" || path == "/v1/chat/completions") && post) {
        co_await handle_oai_generation(req, conn, options, OaiFlavor::kVllm,
                                       path == "/v1/chat/completions");
    } else if (path == "/v1/embeddings" && post) {
        co_await handle_generic_embeddings(req, conn, options);
    } else if (path == "/v1/models" && req.method == verb::get) {
        // The OpenAI API's model object: no root, parent, max_model_len or permission.
        co_await conn.send(200, kJson, model_list_body(options.model, 1705948997, "system"));
    } else if (path == "/health" && req.method == verb::get) {
        co_await conn.send(200, "", "");
    } else {
        const std::string body = openai_api_error(
            "Invalid URL (" + std::string(req.http != nullptr ? req.http->method_string() : "") +
                " " + std::string(path) + ")",
            "invalid_request_error");
        co_await conn.send(404, kJson, body);
    }
}

net::awaitable<void> route_openai(Request& req, Conn& conn, const Options& options) {
    const std::string_view path = req.path;
    if (options.openai_generic) {
        co_await route_generic(req, conn, options);
        co_return;
    }
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
        if (req.method != verb::post) {
            co_await send_method_not_allowed(conn);
            co_return;
        }
        if (options.embedding.enabled) {
            // A pooling model has no generation handler (api_server.py).
            std::string body;
            render_vllm_error(OaiError{400,
                                       path == "/v1/completions"
                                           ? "The model does not support Completions API"
                                           : "The model does not support Chat Completions API",
                                       false},
                              body);
            co_await conn.send(400, kJson, body);
            co_return;
        }
        co_await handle_oai_generation(req, conn, options, OaiFlavor::kVllm,
                                       path == "/v1/chat/completions");
        co_return;
    }
    if (path == "/v1/embeddings" || path == "/tokenize" || path == "/detokenize") {
        if (req.method != verb::post) {
            co_await send_method_not_allowed(conn);
        } else if (path == "/v1/embeddings") {
            co_await handle_vllm_embeddings(req, conn, options);
        } else {
            co_await handle_vllm_tokenize(req, conn, options, path == "/detokenize");
        }
        co_return;
    }
    const bool get = req.method == verb::get;
    if (path == "/health" || path == "/ping") {
        if (get || (path == "/ping" && req.method == verb::post)) {
            co_await conn.send(200, "", "");
        } else {
            co_await send_method_not_allowed(conn);
        }
    } else if (path == "/v1/models") {
        if (get) {
            co_await conn.send(200, kJson, vllm_models_body(options));
        } else {
            co_await send_method_not_allowed(conn);
        }
    } else if (path == "/version") {
        if (get) {
            co_await conn.send(200, kJson,
                               std::string(R"({"version":")") + std::string(kVllmVersion) + "\"}");
        } else {
            co_await send_method_not_allowed(conn);
        }
    } else {
        co_await send_not_found(conn);
    }
}

}  // namespace infergate::emulator
