#include "translators/openai/response_codec.hpp"
#include "translators/canonical/logprobs.hpp"

#include <algorithm>
#include <utility>

#include "translators/openai/logprobs.hpp"
#include "translators/openai/response_scan.hpp"

namespace infergate::translators::openai {

using canonical::Choice;
using canonical::SamplingParams;
using canonical::Usage;

namespace {

// The aggregate usage to report: the result's own, or, when a decoder only had per-choice
// counts, their sum with the prompt counted once per prompt (every `n` choices share one).
Usage response_usage(const GenerationResult& result, int n) {
    if (usage_known(result.usage)) {
        return result.usage;
    }
    Usage total;
    const int per_prompt = n > 0 ? n : 1;
    for (const Choice& c : result.choices) {
        if (c.usage.completion_tokens) {
            total.completion_tokens =
                total.completion_tokens.value_or(0) + *c.usage.completion_tokens;
        }
        if (c.usage.reasoning_tokens) {
            total.reasoning_tokens = total.reasoning_tokens.value_or(0) + *c.usage.reasoning_tokens;
        }
        if (c.index % per_prompt == 0) {
            if (c.usage.prompt_tokens) {
                total.prompt_tokens = total.prompt_tokens.value_or(0) + *c.usage.prompt_tokens;
            }
            if (c.usage.cached_tokens) {
                total.cached_tokens = total.cached_tokens.value_or(0) + *c.usage.cached_tokens;
            }
        }
    }
    return total;
}

// echo: the prompt goes in front of the text. Choices of one prompt are `n` apart
// (index = prompt_index * n + j, as OpenAI and vLLM number them). A token-id prompt has no text
// without the model's tokenizer: its prompt entries' token texts are used when the backend sent
// them (an echo with logprobs), else nothing is echoed. nullopt when there is no echo.
std::optional<std::string> echoed_prompt(const Choice& c, const GenerationRequest& req, Api api) {
    if (api != Api::completions || !req.echo) {
        return std::nullopt;
    }
    const int n = req.sampling.n > 0 ? req.sampling.n : 1;
    const size_t prompt_index = static_cast<size_t>(std::max(c.index, 0) / n);
    if (prompt_index >= req.prompts.size()) {
        return std::nullopt;
    }
    if (!req.prompts[prompt_index].is_tokens) {
        return req.prompts[prompt_index].text;
    }
    std::string text;
    for (const canonical::TokenLogprob& t : c.prompt_logprobs) {
        text += t.token;
    }
    return text;
}

// echo with max_tokens 0 scores the prompt and generates nothing: vLLM answers the prompt
// alone (serving_completion.py: "only return the prompt"), whatever a backend that had to be
// asked for a token produced.
bool scoring_only(const GenerationRequest& req, Api api) {
    return api == Api::completions && req.echo && req.sampling.max_tokens == 0;
}

void write_choice_logprobs(json::Writer& w, const Choice& c, const GenerationRequest& req,
                           Api api) {
    json::key(w, "logprobs");
    if (!canonical::wants_logprobs(req)) {
        w.Null();
        return;
    }
    const size_t top = canonical::top_count(req);
    if (api == Api::chat) {
        write_chat_logprobs(w, c.logprobs, top);
        return;
    }
    const bool echo_entries = req.echo && canonical::wants_prompt_logprobs(req);
    static const std::vector<canonical::TokenLogprob> kNone;
    // Offsets are into the text the client gets: past an echoed prompt that has no entries.
    size_t offset = 0;
    if (echo_entries && c.prompt_logprobs.empty()) {
        if (auto prompt = echoed_prompt(c, req, api)) {
            offset = canonical::code_points(*prompt);
        }
    }
    write_completion_logprobs(w, echo_entries ? &c.prompt_logprobs : nullptr,
                              scoring_only(req, api) ? kNone : c.logprobs, offset, top);
}

void write_finish(json::Writer& w, const canonical::FinishReason& finish, Api api) {
    json::key(w, "finish_reason");
    json::string(w, whole_finish_reason(finish.kind, api));
}

// The backend echoed the prompt (asked for its logprobs only): its entries go to
// prompt_logprobs and its text off the front of Choice::text.
void split_echo(Choice& c, const GenerationRequest& req,
                const std::optional<int64_t>& prompt_tokens) {
    const int n = req.sampling.n > 0 ? req.sampling.n : 1;
    const size_t prompt_index = static_cast<size_t>(std::max(c.index, 0) / n);
    const canonical::Prompt* p =
        prompt_index < req.prompts.size() ? &req.prompts[prompt_index] : nullptr;
    // usage.prompt_tokens counts every prompt of a batch: only a single prompt's is its own.
    split_echoed_prompt(c.text, c.logprobs, c.prompt_logprobs, p,
                        req.prompts.size() == 1 ? prompt_tokens : std::nullopt,
                        req.prompt_logprob_start.value_or(0));
}

}  // namespace

void encode_response(const GenerationResult& result, const GenerationRequest& req, std::string& out,
                     Api api) {
    size_t text_size = 0;
    for (const Choice& c : result.choices) {
        text_size += c.text.size();
    }
    out.reserve(out.size() + 256 + 128 * result.choices.size() + text_size);
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "id");
    json::string(w, result.id);
    json::key(w, "object");
    json::string(w, api == Api::chat ? "chat.completion" : "text_completion");
    json::key(w, "created");
    w.Int64(result.created);
    json::key(w, "model");
    json::string(w, result.model);
    json::key(w, "choices");
    w.StartArray();
    std::string echoed;
    for (const Choice& c : result.choices) {
        w.StartObject();
        json::key(w, "index");
        w.Int(c.index);
        if (api == Api::chat) {
            json::key(w, "message");
            w.StartObject();
            json::key(w, "role");
            json::string(w, "assistant");
            json::key(w, "content");
            const canonical::Carried* carried = own(c.carried);
            if (carried == nullptr && c.text.empty() && !c.tool_calls.empty()) {
                w.Null();  // a turn that only calls tools, as OpenAI writes it
            } else {
                json::string(w, c.text);
            }
            if (carried != nullptr) {
                json::write_carried(w, carried->members, "message.");
            } else if (!c.tool_calls.empty()) {
                // Another dialect's tool calls; a call without an id gets one made from the
                // completion's id and its place (Ollama's calls have none, and a client sends
                // the id back with the tool's result).
                write_tool_calls(w, c.tool_calls, "call_" + result.id + "_");
            }
            if (carried == nullptr && !c.reasoning.empty()) {
                // Another dialect's reasoning, where vLLM, SGLang and llama.cpp put it.
                json::key(w, "reasoning_content");
                json::string(w, c.reasoning);
            }
            w.EndObject();
        } else {
            json::key(w, "text");
            if (auto prompt = echoed_prompt(c, req, api)) {
                echoed = std::move(*prompt);
                if (!scoring_only(req, api)) {
                    echoed.append(c.text);
                }
                json::string(w, echoed);
            } else {
                json::string(w, c.text);
            }
        }
        write_choice_logprobs(w, c, req, api);
        write_finish(w, c.finish, api);
        w.EndObject();
    }
    w.EndArray();
    const Usage usage = response_usage(result, req.sampling.n);
    if (usage_complete(usage)) {
        json::key(w, "usage");
        write_usage(w, usage);
    }
    w.EndObject();
}

void encode_error(const Error& error, std::string& out) {
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    json::key(w, "error");
    write_error_object(w, error);
    w.EndObject();
}

Result<GenerationResult> decode_response(std::string_view body, const GenerationRequest& req,
                                         Api api) {
    json::Document doc;
    if (auto err = json::parse(body, doc, "backend response", canonical::exact_numbers(req))) {
        return upstream_error("the backend sent a malformed response: " + err->message);
    }
    if (!doc.IsObject()) {
        return upstream_error("the backend response is " + std::string(json::type_name(doc)) +
                              ", not a JSON object");
    }
    const json::Value* choices = json::find(doc, "choices");
    if (choices == nullptr || !choices->IsArray()) {
        if (const json::Value* e = json::find(doc, "error"); e != nullptr && !e->IsNull()) {
            return read_upstream_error(doc);  // an error envelope sent with a 2xx status
        }
        return upstream_error("the backend response has no 'choices' array");
    }
    GenerationResult result;
    if (const json::Value* id = json::find(doc, "id"); id != nullptr && id->IsString()) {
        result.id = std::string(json::view(*id));
    }
    if (const json::Value* model = json::find(doc, "model");
        model != nullptr && model->IsString()) {
        result.model = std::string(json::view(*model));
    }
    if (const json::Value* created = json::find(doc, "created");
        created != nullptr && created->IsInt64()) {
        result.created = created->GetInt64();
    }
    const SamplingParams* sampling = shared_sampling(req);
    const std::optional<int64_t> budget =
        effective_max_tokens(sampling != nullptr ? *sampling : req.sampling, req.dialect);

    result.choices.reserve(choices->Size());
    for (rapidjson::SizeType i = 0; i < choices->Size(); ++i) {
        const json::Value& item = (*choices)[i];
        if (!item.IsObject()) {
            return upstream_error("the backend response's choices[" + std::to_string(i) + "] is " +
                                  std::string(json::type_name(item)) + ", not an object");
        }
        Choice& c = result.choices.emplace_back();
        const json::Value* index = json::find(item, "index");
        c.index = index != nullptr && index->IsInt() ? index->GetInt() : static_cast<int>(i);
        const json::Value* text = nullptr;
        if (api == Api::chat) {
            if (const json::Value* message = json::find(item, "message")) {
                text = json::find(*message, "content");
                if (auto lost = carry(*message, "message.", req.dialect, c.carried, &c.tool_calls,
                                      &c.reasoning)) {
                    return std::move(*lost);
                }
            }
        } else {
            text = json::find(item, "text");
        }
        if (text != nullptr && text->IsString()) {
            c.text.assign(text->GetString(), text->GetStringLength());
        }
        if (auto finish = read_finish(item, budget)) {
            c.finish = std::move(*finish);
        }
        const std::string path = "choices[" + std::to_string(i) + "].logprobs";
        if (auto bad = read_logprobs(json::find(item, "logprobs"), path, c.logprobs)) {
            return upstream_error("the backend response's " + *bad);
        }
    }
    if (const json::Value* usage = json::find(doc, "usage"); usage != nullptr) {
        result.usage = read_usage(*usage);
    }
    if (api == Api::completions && canonical::wants_prompt_logprobs(req)) {
        for (Choice& c : result.choices) {
            split_echo(c, req, result.usage.prompt_tokens);
        }
    }
    // TGI returns batch choices in completion order, not by index.
    std::stable_sort(result.choices.begin(), result.choices.end(),
                     [](const Choice& a, const Choice& b) { return a.index < b.index; });
    if (result.choices.size() == 1) {
        result.choices.front().usage = result.usage;
    }
    return result;
}

Result<canonical::ResponseFacts> check_response(std::string_view body, const GenerationRequest& req,
                                                Api api) {
    canonical::FinishKind finish = canonical::FinishKind::none;
    if (auto usage = scan_response_usage(body, &finish)) {
        return canonical::ResponseFacts{*usage, finish};
    }
    // Malformed, the wrong shape or an error envelope: the full decode says what is wrong.
    auto decoded = decode_response(body, req, api);
    if (!decoded) {
        return std::move(decoded.error());
    }
    return canonical::ResponseFacts{decoded->usage, canonical::answer_finish(*decoded)};
}

}  // namespace infergate::translators::openai
