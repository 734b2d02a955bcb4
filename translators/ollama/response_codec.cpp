// Whole (non-streaming) responses in both directions, and the error body.

#include <utility>

#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/ollama/impl.hpp"

namespace infergate::translators::ollama {

using canonical::FinishKind;

namespace {

std::optional<int64_t> int_member(const json::Value& obj, std::string_view key) {
    const json::Value* v = json::find(obj, key);
    if (v == nullptr || !v->IsInt64()) {
        return std::nullopt;
    }
    return v->GetInt64();
}

bool ollama_dialect(canonical::Dialect d) {
    return d == canonical::Dialect::ollama_generate || d == canonical::Dialect::ollama_chat;
}

// The error an Ollama body carries ({"error": "..."}), if any.
std::optional<canonical::Error> in_band_error(const json::Value& doc) {
    const json::Value* err = json::find(doc, "error");
    if (err == nullptr || err->IsNull()) {
        return std::nullopt;
    }
    return upstream_error(err->IsString() ? std::string(json::view(*err)) : json::to_string(*err));
}

}  // namespace

namespace {

std::optional<canonical::Error> read_tool_calls(const json::Value& calls,
                                                std::vector<canonical::ToolCall>& out) {
    // Each call's arguments object becomes OpenAI's string, written compactly.
    for (rapidjson::SizeType i = 0; i < calls.Size(); ++i) {
        if (!json::read_function_call(calls[i], out.emplace_back())) {
            return upstream_error("the Ollama backend's message.tool_calls[" + std::to_string(i) +
                                  "] has no function name");
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<canonical::Error> carry(const json::Value& doc,
                                      std::optional<canonical::Dialect> client,
                                      canonical::Carried& out,
                                      std::vector<canonical::ToolCall>* tool_calls,
                                      std::string* thinking) {
    const json::Value* message = json::find(doc, "message");
    if (client && !ollama_dialect(*client)) {
        if (const json::Value* t = message != nullptr ? json::find(*message, "thinking") : nullptr;
            t != nullptr && t->IsString() && thinking != nullptr &&
            canonical::takes_reasoning(*client)) {
            thinking->append(json::view(*t));
        }
        const json::Value* calls =
            message != nullptr ? json::find(*message, "tool_calls") : nullptr;
        if (calls != nullptr && calls->IsArray() && !calls->Empty() && tool_calls != nullptr &&
            canonical::takes_tool_calls(*client)) {
            return read_tool_calls(*calls, *tool_calls);
        }
        if (calls != nullptr && calls->IsArray() && !calls->Empty()) {
            return upstream_error(
                "the Ollama backend answered with tool calls (message.tool_calls), which "
                "infergate cannot translate to a " +
                std::string(canonical::to_string(*client)) +
                " client yet: the answer would lose them. Send tool requests through Ollama's "
                "POST /api/chat, which carries them as they are");
        }
        return std::nullopt;
    }
    if (!client) {
        return std::nullopt;
    }
    out.from = *client;
    if (message != nullptr) {
        json::collect_unknown(*message, {"role", "content"}, out.members, "message.");
    }
    json::collect_unknown(doc,
                          {"model", "created_at", "response", "message", "done", "done_reason",
                           "total_duration", "load_duration", "prompt_eval_count",
                           "prompt_eval_duration", "eval_count", "eval_duration", "logprobs"},
                          out.members);
    return std::nullopt;
}

const canonical::Carried* own(const canonical::Carried& carried) {
    return ollama_dialect(carried.from) && !carried.empty() ? &carried : nullptr;
}

void encode_response(const GenerationResult& result, const GenerationRequest& req,
                     const Timing& timing, std::string& out, Api api) {
    // Ollama has no n and no batches: the first choice is the answer.
    const canonical::Choice* choice = result.choices.empty() ? nullptr : &result.choices.front();
    const std::string_view text = choice != nullptr ? std::string_view(choice->text) : "";
    canonical::Usage usage = result.usage;
    if (choice != nullptr) {
        if (!usage.prompt_tokens) {
            usage.prompt_tokens = choice->usage.prompt_tokens;
        }
        if (!usage.completion_tokens) {
            usage.completion_tokens = choice->usage.completion_tokens;
        }
    }
    out.reserve(out.size() + 256 + text.size());
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    // An Ollama client gets back the model name it asked for.
    write_head(w, req.model.empty() ? std::string_view(result.model) : req.model, result.created,
               timing);
    // An Ollama backend's own members (tool_calls, thinking, context, ...) for an Ollama client.
    const canonical::Carried* carried = choice != nullptr ? own(choice->carried) : nullptr;
    if (api == Api::chat) {
        json::key(w, "message");
        w.StartObject();
        json::key(w, "role");
        json::string(w, "assistant");
        json::key(w, "content");
        json::string(w, text);
        if (carried == nullptr && choice != nullptr && !choice->reasoning.empty()) {
            json::key(w, "thinking");  // another dialect's reasoning
            json::string(w, choice->reasoning);
        }
        if (carried != nullptr) {
            json::write_carried(w, carried->members, "message.");
        } else if (choice != nullptr && !choice->tool_calls.empty()) {
            // Another dialect's tool calls, their arguments checked by its decoder.
            write_tool_calls(w, choice->tool_calls, 0);
        }
        w.EndObject();
    } else {
        json::key(w, "response");
        json::string(w, text);
    }
    if (carried != nullptr) {
        json::write_carried(w, carried->members);
    }
    LogprobsOut lp;
    if (choice != nullptr && canonical::wants_logprobs(req)) {
        lp = {&choice->logprobs, canonical::top_count(req)};
    }
    write_tail(w, choice != nullptr ? choice->finish.kind : FinishKind::none, usage, timing, api,
               lp);
    w.EndObject();
}

void encode_error(const Error& error, std::string& out) {
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "error");
    json::string(w, error.message);
    w.EndObject();
}

Result<canonical::FinishReason> read_done_reason(const json::Value& doc,
                                                 const GenerationRequest* req) {
    canonical::FinishReason finish;
    const json::Value* reason = json::find(doc, "done_reason");
    const std::string_view value =
        reason != nullptr && reason->IsString() ? json::view(*reason) : std::string_view();
    if (value == "load" || value == "unload") {
        return upstream_error("the backend answered with done_reason \"" + std::string(value) +
                              "\" (a model " + std::string(value) +
                              ") instead of generating text; the prompt was probably empty");
    }
    if (value == "length") {
        finish.kind = FinishKind::length;
        if (req != nullptr) {
            finish.length = req->sampling.max_tokens ? req->sampling.max_tokens
                                                     : canonical::default_max_tokens(req->dialect);
        }
    } else {
        // "stop" (EOS or a stop string, indistinguishable); absent on servers before v0.1.35
        // and when the runner's connection closed: the generation did end.
        finish.kind = FinishKind::stop;
    }
    return finish;
}

canonical::Usage read_counts(const json::Value& doc) {
    canonical::Usage u;
    // omitempty upstream: an absent count is unknown, never 0.
    u.prompt_tokens = int_member(doc, "prompt_eval_count");
    u.completion_tokens = int_member(doc, "eval_count");
    u.cached_tokens = int_member(doc, "prompt_eval_cached_count");
    return u;
}

Result<GenerationResult> decode_response(std::string_view body, const GenerationRequest& req) {
    json::Document doc;
    if (auto err = json::parse(body, doc, "upstream response", canonical::exact_numbers(req))) {
        return upstream_error("the backend sent a malformed response: " + err->message);
    }
    if (!doc.IsObject()) {
        return upstream_error(
            "the backend sent a malformed response: expected a JSON object, got " +
            std::string(json::type_name(doc)));
    }
    if (auto err = in_band_error(doc)) {
        return std::move(*err);
    }
    const json::Value* text = json::find(doc, "response");
    if (text == nullptr) {
        if (const json::Value* message = json::find(doc, "message"); message != nullptr) {
            text = json::find(*message, "content");
        }
    }
    if (text == nullptr || !text->IsString()) {
        return upstream_error(
            "the backend sent a malformed response: neither a string 'response' nor a string "
            "'message.content'");
    }
    const json::Value* done = json::find(doc, "done");
    if (done == nullptr || !done->IsBool() || !done->GetBool()) {
        return upstream_error(
            "the backend sent an unfinished response (done is not true) to a non-streaming "
            "request");
    }
    Result<canonical::FinishReason> finish = read_done_reason(doc, &req);
    if (!finish) {
        return finish.error();
    }
    GenerationResult result;
    if (const json::Value* model = json::find(doc, "model");
        model != nullptr && model->IsString()) {
        result.model = std::string(json::view(*model));
    }
    canonical::Choice& choice = result.choices.emplace_back();
    if (auto err = carry(doc, req.dialect, choice.carried, &choice.tool_calls, &choice.reasoning)) {
        return std::move(*err);
    }
    if (auto err = read_logprobs(doc, choice.logprobs)) {
        return std::move(*err);
    }
    choice.text.assign(text->GetString(), text->GetStringLength());
    choice.finish = std::move(*finish);
    if (!choice.tool_calls.empty() && choice.finish.kind == FinishKind::stop) {
        // Ollama ends a turn that calls tools with "stop"; OpenAI says why: "tool_calls".
        choice.finish.kind = FinishKind::tool_calls;
    }
    choice.usage = read_counts(doc);
    result.usage = choice.usage;
    return result;
}

}  // namespace infergate::translators::ollama
