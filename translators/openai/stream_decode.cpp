// Upstream side of OpenAI streams: an OpenAI-compatible backend's SSE payloads to canonical
// events (deltas, finishes, usage, logprobs, in-band errors).

#include "translators/openai/stream_codec.hpp"

#include <algorithm>
#include <utility>

#include "translators/canonical/accumulate.hpp"
#include "translators/canonical/logprobs.hpp"
#include "translators/framing/framing.hpp"
#include "translators/openai/logprobs.hpp"

namespace infergate::translators::openai {

using canonical::Usage;

namespace {

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

void push_error(std::vector<StreamEvent>& out, canonical::Error error) {
    StreamEvent& ev = out.emplace_back();
    ev.type = StreamEvent::Type::error;
    ev.error = std::move(error);
}

}  // namespace

void decode_stream_event(std::string_view data, StreamState& state, std::vector<StreamEvent>& out,
                         Api api) {
    const std::string_view payload = trim(data);
    if (framing::is_done_sentinel(payload)) {
        out.emplace_back().type = StreamEvent::Type::done;
        return;
    }
    json::Document doc;
    if (auto err = json::parse(payload, doc, "stream event", canonical::exact_numbers(state))) {
        push_error(out, upstream_error("the backend sent malformed stream data: " + err->message));
        return;
    }
    if (!doc.IsObject()) {
        push_error(out, upstream_error("the backend sent malformed stream data: expected a JSON "
                                       "object, got " +
                                       std::string(json::type_name(doc))));
        return;
    }
    const json::Value* error = json::find(doc, "error");
    const json::Value* object = json::find(doc, "object");
    if ((error != nullptr && !error->IsNull()) ||
        (object != nullptr && object->IsString() && json::view(*object) == "error")) {
        push_error(out, read_upstream_error(doc));
        return;
    }
    Usage usage;
    if (const json::Value* u = json::find(doc, "usage"); u != nullptr) {
        usage = read_usage(*u);
    }
    const json::Value* choices = json::find(doc, "choices");
    if (choices == nullptr || !choices->IsArray() || choices->Empty()) {
        if (usage_known(usage)) {
            StreamEvent& ev = out.emplace_back();
            ev.type = StreamEvent::Type::usage;
            ev.usage = usage;
        }
        return;
    }
    for (rapidjson::SizeType i = 0; i < choices->Size(); ++i) {
        const json::Value& item = (*choices)[i];
        if (!item.IsObject()) {
            push_error(out, upstream_error("the backend sent malformed stream data: choices[" +
                                           std::to_string(i) + "] is " +
                                           std::string(json::type_name(item)) + ", not an object"));
            return;
        }
        const json::Value* text = nullptr;
        canonical::Carried carried;
        std::vector<canonical::ToolCallDelta> tool_calls;
        std::string reasoning;
        if (api == Api::chat) {
            if (const json::Value* delta = json::find(item, "delta")) {
                text = json::find(*delta, "content");
                if (state.client && *state.client != canonical::Dialect::openai_chat &&
                    canonical::takes_reasoning(*state.client)) {
                    read_reasoning(*delta, reasoning);
                }
                // A client of another dialect that has tool calls gets them translated; an
                // OpenAI client gets them as they are (carried), the others an error.
                const json::Value* calls = json::find(*delta, "tool_calls");
                if (calls != nullptr && state.client &&
                    *state.client != canonical::Dialect::openai_chat &&
                    canonical::takes_tool_calls(*state.client)) {
                    if (auto bad = read_tool_call_deltas(*calls, tool_calls)) {
                        push_error(out, std::move(*bad));
                        return;
                    }
                } else if (auto lost = carry(*delta, "delta.", state.client, carried)) {
                    push_error(out, std::move(*lost));
                    return;
                }
            }
        } else {
            text = json::find(item, "text");
        }
        const bool has_text = text != nullptr && text->IsString() && text->GetStringLength() > 0;
        std::optional<canonical::FinishReason> finish = read_finish(item, state.max_tokens);
        // vLLM's token ids (return_token_ids): a token whose text is empty is still one.
        const json::Value* ids = json::find(item, "token_ids");
        const bool has_ids = ids != nullptr && ids->IsArray() && !ids->Empty();
        // Role-only and empty deltas carry nothing a client of another dialect could use, but
        // a prompt count that comes before any text (continuous usage) is worth passing on.
        std::vector<canonical::TokenLogprob> logprobs;
        // Only a chunk that has them pays for reading them (the path is built for a message).
        if (const json::Value* lp = json::find(item, "logprobs"); lp != nullptr && !lp->IsNull()) {
            if (auto bad =
                    read_logprobs(lp, "choices[" + std::to_string(i) + "].logprobs", logprobs)) {
                push_error(out, upstream_error("the backend sent malformed stream data: " + *bad));
                return;
            }
        }
        if (!has_text && !finish && !has_ids && !usage.prompt_tokens && carried.empty() &&
            logprobs.empty() && tool_calls.empty() && reasoning.empty()) {
            continue;
        }
        StreamEvent& ev = out.emplace_back();
        ev.logprobs = std::move(logprobs);
        ev.carried = std::move(carried);
        ev.tool_calls = std::move(tool_calls);
        ev.reasoning = std::move(reasoning);
        if (has_ids) {
            for (const json::Value& id : ids->GetArray()) {
                if (id.IsInt64()) {
                    ev.token_ids.push_back(id.GetInt64());
                }
            }
        }
        ev.type = StreamEvent::Type::chunk;
        const json::Value* index = json::find(item, "index");
        ev.index = index != nullptr && index->IsInt() ? index->GetInt() : static_cast<int>(i);
        if (has_text) {
            ev.text.assign(text->GetString(), text->GetStringLength());
        }
        ev.finish = std::move(finish);
        // Asked for the prompt's logprobs, the backend echoed the prompt on the choice's first
        // chunk (vLLM, SGLang's OpenAI layer): its entries and text come off.
        if (api == Api::completions && state.prompt_logprob_start &&
            !state.choice(ev.index).prompt_done) {
            state.choice(ev.index).prompt_done = true;
            const int n = state.n > 0 ? state.n : 1;
            const size_t prompt_index = static_cast<size_t>(std::max(ev.index, 0) / n);
            const canonical::Prompt* p =
                prompt_index < state.prompts.size() ? &state.prompts[prompt_index] : nullptr;
            split_echoed_prompt(ev.text, ev.logprobs, ev.prompt_logprobs, p, usage.prompt_tokens,
                                *state.prompt_logprob_start);
        }
        // vLLM/SGLang continuous_usage_stats: the usage on a chunk with choices is that
        // choice's running count.
        ev.usage = usage;
    }
}

}  // namespace infergate::translators::openai
