// The cross-dialect round trip (design §6, issue 4): every golden sample under tests/fixtures/
// (whole responses, streams in SSE, NDJSON and "\0" records, requests, error bodies) is decoded
// into the canonical model, re-encoded into EVERY dialect and decoded back by that dialect; the
// text, token counts and finish reasons (for requests: prompt/messages and the sampling
// settings) must come back. Where a dialect cannot carry a field, the expectation below says so
// and asserts the exact value the dialect documents instead (never a silent skip):
//
//   dialect        responses                               streams
//   ------------   --------------------------------------  --------------------------------------
//   sglang         everything                              everything; counts the upstream did
//                                                          not give are a chunk-count estimate
//   openai_*       everything                              everything (include_usage); idem
//   tgi            no prompt count (x-prompt-tokens        everything with details; one answer;
//                  header only); generated_tokens and      an unknown completion count is the
//                  finish_reason are required: unknown     chunk-count estimate
//                  -> 0 / eos_token (stop); one answer
//   ollama_*       one answer; no "unknown finish": a      one answer; an unknown finish is
//                  finished answer without done_reason     read back as stop; counts only when
//                  reads as stop                           exact (never estimated)
//   llamacpp       stop_type "none" below the budget       idem; unknown completion count is
//                  reads back as stop                      the chunk-count estimate
//   vllm_legacy    text only (prompt echoed in front,      text only: no counts; the finish is
//                  stripped again): no counts, no finish   inferred at the end (length at the
//                                                          budget, else stop)
//   anthropic      one answer; input/output_tokens are     idem; unknown completion count is
//                  required: unknown -> 0                  the chunk-count estimate
//
// A failure names the fixture, the source dialect and the dialect of the round trip.

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "translators/codec.hpp"
#include "translators/framing/framing.hpp"
#include "translators/ollama/codec.hpp"
#include "translators/tgi/codec.hpp"
#include "translators/vllm_legacy/codec.hpp"

namespace {

using infergate::canonical::ChatMessage;
using infergate::canonical::Dialect;
using infergate::canonical::FinishKind;
using infergate::canonical::GenerationRequest;
using infergate::canonical::GenerationResult;
using infergate::canonical::RequestKind;
using infergate::canonical::StreamEvent;
using infergate::canonical::StreamState;
using infergate::canonical::to_string;
using infergate::translators::Codec;
using infergate::translators::codec_for;
using infergate::translators::Flavor;
using infergate::translators::Framing;
using infergate::translators::UpstreamOptions;
namespace framing = infergate::framing;
namespace ollama = infergate::translators::ollama;
namespace tgi = infergate::translators::tgi;
namespace vllm_legacy = infergate::translators::vllm_legacy;

constexpr Dialect kDialects[] = {
    Dialect::sglang,          Dialect::openai_completions, Dialect::openai_chat,
    Dialect::tgi,             Dialect::ollama_generate,    Dialect::ollama_chat,
    Dialect::llamacpp,        Dialect::vllm_legacy,        Dialect::anthropic,
};

std::string name(Dialect d) { return std::string(to_string(d)); }

bool is_ollama(Dialect d) { return d == Dialect::ollama_generate || d == Dialect::ollama_chat; }

// Dialects whose wire has exactly one answer per request.
bool single_answer(Dialect d) {
    return d == Dialect::tgi || is_ollama(d) || d == Dialect::anthropic;
}

std::string read_fixture(const std::string& rel) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/" + rel, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing fixture " << rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string opt(const std::optional<int64_t>& v) {
    return v ? std::to_string(*v) : std::string("unknown");
}

std::string_view kind_name(FinishKind k) {
    switch (k) {
        case FinishKind::none: return "none";
        case FinishKind::stop: return "stop";
        case FinishKind::length: return "length";
        case FinishKind::tool_calls: return "tool_calls";
        case FinishKind::content_filter: return "content_filter";
        case FinishKind::abort: return "abort";
    }
    return "?";
}

// ---------------------------------------------------------------------------------------------
// What a generation amounts to, whichever wire it came over.
// ---------------------------------------------------------------------------------------------

struct Outcome {
    std::map<int, std::string> texts;      // per choice
    std::map<int, FinishKind> finishes;    // per choice, only choices that finished
    std::map<int, std::optional<int64_t>> choice_prompt, choice_completion;
    std::optional<int64_t> prompt_tokens;      // the request's totals
    std::optional<int64_t> completion_tokens;
    std::map<int, int64_t> text_chunks;  // non-empty text events per choice (streams)
    std::optional<std::string> error;    // an in-band error's message

    std::vector<int> choices() const {
        std::vector<int> out;
        for (const auto& [i, t] : texts) {
            out.push_back(i);
        }
        for (const auto& [i, k] : finishes) {
            if (texts.count(i) == 0) {
                out.push_back(i);
            }
        }
        return out;
    }
};

std::string describe(const Outcome& o) {
    std::ostringstream s;
    for (const auto& [i, t] : o.texts) {
        s << "[" << i << "] text=\"" << t << "\" ";
    }
    for (const auto& [i, k] : o.finishes) {
        s << "[" << i << "] finish=" << kind_name(k) << " ";
    }
    s << "prompt=" << opt(o.prompt_tokens) << " completion=" << opt(o.completion_tokens);
    if (o.error) {
        s << " error=\"" << *o.error << "\"";
    }
    return s.str();
}

// Empty when `got` is what was expected; otherwise says what differs.
std::string diff(const Outcome& want, const Outcome& got) {
    std::string d;
    if (want.texts != got.texts) {
        d += "text differs; ";
    }
    if (want.finishes != got.finishes) {
        d += "finish differs; ";
    }
    if (want.prompt_tokens != got.prompt_tokens) {
        d += "prompt_tokens differ; ";
    }
    if (want.completion_tokens != got.completion_tokens) {
        d += "completion_tokens differ; ";
    }
    if (want.error.has_value() != got.error.has_value() ||
        (want.error && got.error->find(*want.error) == std::string::npos)) {
        d += "error differs; ";
    }
    if (!d.empty()) {
        d += "\n  want: " + describe(want) + "\n  got:  " + describe(got);
    }
    return d;
}

Outcome from_result(const GenerationResult& r) {
    Outcome o;
    bool any_prompt = false;
    bool any_completion = false;
    int64_t prompt = 0;
    int64_t completion = 0;
    for (const auto& c : r.choices) {
        o.texts[c.index] = c.text;
        if (c.finish.kind != FinishKind::none) {
            o.finishes[c.index] = c.finish.kind;
        }
        o.choice_prompt[c.index] = c.usage.prompt_tokens;
        o.choice_completion[c.index] = c.usage.completion_tokens;
        if (c.usage.prompt_tokens) {
            any_prompt = true;
            prompt += *c.usage.prompt_tokens;
        }
        if (c.usage.completion_tokens) {
            any_completion = true;
            completion += *c.usage.completion_tokens;
        }
    }
    // The aggregate where the dialect reports one, else the per-choice sum (every fixture with
    // several choices has one prompt per choice).
    o.prompt_tokens = r.usage.prompt_tokens
                          ? r.usage.prompt_tokens
                          : (any_prompt ? std::optional<int64_t>(prompt) : std::nullopt);
    o.completion_tokens = r.usage.completion_tokens
                              ? r.usage.completion_tokens
                              : (any_completion ? std::optional<int64_t>(completion) : std::nullopt);
    return o;
}

Outcome from_events(const std::vector<StreamEvent>& events) {
    Outcome o;
    std::optional<int64_t> agg_prompt;
    std::optional<int64_t> agg_completion;
    for (const StreamEvent& ev : events) {
        switch (ev.type) {
            case StreamEvent::Type::chunk:
                if (!ev.text.empty()) {
                    o.texts[ev.index] += ev.text;
                    ++o.text_chunks[ev.index];
                }
                if (ev.finish && ev.finish->kind != FinishKind::none &&
                    o.finishes.count(ev.index) == 0) {
                    o.finishes[ev.index] = ev.finish->kind;
                }
                if (ev.usage.prompt_tokens) {
                    o.choice_prompt[ev.index] = ev.usage.prompt_tokens;
                }
                if (ev.usage.completion_tokens) {
                    o.choice_completion[ev.index] = ev.usage.completion_tokens;
                }
                break;
            case StreamEvent::Type::usage:
                if (ev.usage.prompt_tokens) {
                    agg_prompt = ev.usage.prompt_tokens;
                }
                if (ev.usage.completion_tokens) {
                    agg_completion = ev.usage.completion_tokens;
                }
                break;
            case StreamEvent::Type::error:
                if (!o.error) {
                    o.error = ev.error.message;
                }
                break;
            case StreamEvent::Type::done: break;
        }
    }
    auto sum = [](const std::map<int, std::optional<int64_t>>& m) -> std::optional<int64_t> {
        std::optional<int64_t> total;
        for (const auto& [i, v] : m) {
            if (v) {
                total = total.value_or(0) + *v;
            }
        }
        return total;
    };
    o.prompt_tokens = agg_prompt ? agg_prompt : sum(o.choice_prompt);
    o.completion_tokens = agg_completion ? agg_completion : sum(o.choice_completion);
    return o;
}

// The part of `o` a one-answer dialect can carry: choice 0, with its own counts.
Outcome first_choice(const Outcome& o) {
    if (o.choices().size() <= 1) {
        return o;
    }
    Outcome r;
    if (o.texts.count(0) != 0) {
        r.texts[0] = o.texts.at(0);
    }
    if (o.finishes.count(0) != 0) {
        r.finishes[0] = o.finishes.at(0);
    }
    r.prompt_tokens = o.choice_prompt.count(0) != 0 ? o.choice_prompt.at(0) : std::nullopt;
    r.completion_tokens =
        o.choice_completion.count(0) != 0 ? o.choice_completion.at(0) : std::nullopt;
    if (o.text_chunks.count(0) != 0) {
        r.text_chunks[0] = o.text_chunks.at(0);
    }
    r.error = o.error;
    return r;
}

enum class Path { response, stream };

// What `o` becomes after a trip through dialect `d` (the table at the top of the file).
Outcome expected_through(Dialect d, const Outcome& original, Path path) {
    Outcome want = single_answer(d) ? first_choice(original) : original;
    want.choice_prompt.clear();
    want.choice_completion.clear();

    // Finish reasons.
    const bool errored = want.error.has_value();
    std::map<int, FinishKind> finishes;
    for (int i : want.choices()) {
        const FinishKind k = want.finishes.count(i) != 0 ? want.finishes.at(i) : FinishKind::none;
        FinishKind got = k;
        switch (d) {
            case Dialect::vllm_legacy:
                // The wire has none. A whole response stays without one; at the clean end of a
                // stream the decoder infers it from the budget (none known here: a stop).
                got = path == Path::stream && !errored ? FinishKind::stop : FinishKind::none;
                break;
            case Dialect::tgi:
                // details.finish_reason is required in a whole response: "eos_token" for an
                // unknown one. A stream without a finish simply has no final event.
                if (path == Path::response && k == FinishKind::none) {
                    got = FinishKind::stop;
                }
                break;
            case Dialect::openai_completions:
            case Dialect::openai_chat:
                // A whole answer's finish_reason is required: "stop" for an unknown one.
                if (path == Path::response && k == FinishKind::none) {
                    got = FinishKind::stop;
                }
                break;
            case Dialect::ollama_generate:
            case Dialect::ollama_chat:
            case Dialect::llamacpp:
                // The final object (done: true / stop: true) always goes out, without a reason
                // when none is known; both dialects read that as the model stopping.
                if (k == FinishKind::none && !errored) {
                    got = FinishKind::stop;
                }
                break;
            default: break;
        }
        if (got != FinishKind::none) {
            finishes[i] = got;
        }
    }
    want.finishes = finishes;

    // Token counts.
    int64_t chunks = 0;
    for (const auto& [i, n] : want.text_chunks) {
        chunks += n;
    }
    const std::optional<int64_t> estimate =
        chunks > 0 ? std::optional<int64_t>(chunks) : std::nullopt;
    if (errored) {
        // An in-band error ends the stream before any final counts: what is left is what the
        // dialect writes on every event. SGLang events carry the running (estimated) count and
        // a TGI client counts token events; an Anthropic message_start carries input_tokens
        // (0 when unknown) once any text went out. The others say nothing.
        if (!want.completion_tokens && (d == Dialect::sglang || d == Dialect::tgi)) {
            want.completion_tokens = estimate;
        }
        if (!want.prompt_tokens && d == Dialect::anthropic && chunks > 0) {
            want.prompt_tokens = 0;
        }
        if (d == Dialect::vllm_legacy) {
            want.prompt_tokens.reset();
            want.completion_tokens.reset();
        }
        want.text_chunks.clear();
        return want;
    }
    switch (d) {
        case Dialect::vllm_legacy:
            want.prompt_tokens.reset();
            want.completion_tokens.reset();
            break;
        case Dialect::tgi:
            if (path == Path::response) {
                want.prompt_tokens.reset();  // only in the x-prompt-tokens header
                want.completion_tokens = want.completion_tokens.value_or(0);
            } else if (!want.completion_tokens && !errored) {
                want.completion_tokens = estimate;
            }
            break;
        case Dialect::anthropic:
            want.prompt_tokens = want.prompt_tokens.value_or(0);
            if (path == Path::response) {
                want.completion_tokens = want.completion_tokens.value_or(0);
            } else if (!want.completion_tokens) {
                want.completion_tokens = estimate.value_or(0);
            }
            break;
        case Dialect::ollama_generate:
        case Dialect::ollama_chat: break;  // never an estimate
        case Dialect::openai_completions:
        case Dialect::openai_chat:
            if (path == Path::stream && !want.completion_tokens && !errored) {
                want.completion_tokens = estimate;
            }
            // OpenAI's usage needs both counts (all three members are required): with one
            // unknown, the object is left out.
            if (!want.prompt_tokens || !want.completion_tokens) {
                want.prompt_tokens.reset();
                want.completion_tokens.reset();
            }
            break;
        default:
            if (path == Path::stream && !want.completion_tokens && !errored) {
                want.completion_tokens = estimate;
            }
            break;
    }
    want.text_chunks.clear();
    return want;
}

// ---------------------------------------------------------------------------------------------
// Streams: framing, decoding, encoding.
// ---------------------------------------------------------------------------------------------

// The event payloads of a wire stream, split by the framing scanners fed in 7-byte reads.
std::vector<std::string> scan(Framing f, std::string_view bytes) {
    std::vector<std::string> out;
    constexpr size_t kRead = 7;
    if (f == Framing::sse) {
        framing::SseScanner scanner;
        std::vector<framing::SseEvent> events;
        for (size_t at = 0; at < bytes.size(); at += kRead) {
            scanner.feed(bytes.substr(at, kRead), events);
        }
        scanner.finish(events);
        REQUIRE_FALSE(scanner.overflowed());
        for (auto& e : events) {
            out.push_back(std::move(e.data));
        }
    } else {
        framing::RecordScanner scanner;
        for (size_t at = 0; at < bytes.size(); at += kRead) {
            scanner.feed(bytes.substr(at, kRead), out);
        }
        scanner.finish(out);
        REQUIRE_FALSE(scanner.overflowed());
    }
    return out;
}

// What the exchange knows about the request behind a stream.
struct StreamContext {
    int n = 1;
    bool batch = false;
    std::string prompt;  // for the vLLM legacy echo
    std::vector<std::string> stop;
};

StreamState decoder_state(Dialect d, const StreamContext& ctx) {
    StreamState s;
    s.n = ctx.n;
    s.batch = ctx.batch;
    s.stop = ctx.stop;
    if (d == Dialect::vllm_legacy) {
        vllm_legacy::set_stream_prompt(s, ctx.prompt);
    }
    return s;
}

std::vector<StreamEvent> decode_stream(Dialect d, const std::vector<std::string>& payloads,
                                       const StreamContext& ctx) {
    StreamState state = decoder_state(d, ctx);
    std::vector<StreamEvent> events;
    for (const std::string& p : payloads) {
        codec_for(d).decode_stream_event(p, state, events);
    }
    if (d == Dialect::vllm_legacy) {
        vllm_legacy::decode_stream_end(state, events);  // the clean end of the body
    }
    return events;
}

// The client-side encoding of `events` in dialect `d`, as the exchange drives it.
std::string encode_stream(Dialect d, const std::vector<StreamEvent>& events,
                          const StreamContext& ctx) {
    StreamState state;
    state.id = "rt-0001";
    state.model = "round-trip-model";
    state.created = 1733000000;
    state.n = ctx.n;
    state.batch = ctx.batch;
    state.include_usage = true;  // OpenAI: stream_options.include_usage; TGI: details
    if (d == Dialect::vllm_legacy) {
        vllm_legacy::set_stream_prompt(state, ctx.prompt);
    }
    const Codec& c = codec_for(d);
    std::string out;
    for (const StreamEvent& ev : events) {
        if (ev.type == StreamEvent::Type::error) {
            // As the exchange does: an upstream's in-band error ends the client's stream.
            c.encode_stream_error(ev.error, state, out);
            break;
        }
        c.encode_stream_event(ev, state, out);
    }
    if (is_ollama(d)) {
        ollama::Timing timing;  // what an exchange measured
        timing.created_unix_ns = 1733000000123456789;
        timing.total_ns = 5'000'000;
        timing.eval_ns = 4'000'000;
        ollama::encode_stream_end(c, state, timing, out);
    } else {
        c.encode_stream_end(state, out);
    }
    std::string again;
    c.encode_stream_end(state, again);
    CHECK_MESSAGE(again.empty(), name(d) << ": encode_stream_end is not idempotent");
    return out;
}

struct StreamFixture {
    const char* file;
    Dialect dialect;
    StreamContext ctx;
    bool one_record = false;  // a pretty-printed single object (not split by lines)
};

std::vector<StreamFixture> stream_fixtures() {
    StreamContext batch2;
    batch2.batch = true;
    StreamContext vllm_n2;
    vllm_n2.n = 2;
    vllm_n2.batch = true;
    vllm_n2.prompt = "San Francisco is a";
    StreamContext tgi_stop;
    tgi_stop.stop = {"Par"};
    return {
        {"anthropic/basic_response.sse", Dialect::anthropic, {}},
        {"anthropic/error_event.sse", Dialect::anthropic, {}},
        {"llamacpp/completion_stream_ollama_test.sse", Dialect::llamacpp, {}},
        {"llamacpp/completion_stream_word.sse", Dialect::llamacpp, {}},
        {"llamacpp/completion_stream_old_repeat.sse", Dialect::llamacpp, {}},
        {"ollama/generate_stream.ndjson", Dialect::ollama_generate, {}},
        {"ollama/generate_stream_error.ndjson", Dialect::ollama_generate, {}},
        {"ollama/generate_stream_final.json", Dialect::ollama_generate, {}, true},
        {"openai/chat_stream_logprobs.sse", Dialect::openai_chat, {}},
        {"openai/chat_stream_max_tokens.sse", Dialect::openai_chat, {}},
        {"openai/vllm_completions_stream_continuous_usage.sse", Dialect::openai_completions, {}},
        {"sglang/generate_stream.sse", Dialect::sglang, {}},
        {"sglang/generate_stream_batch.sse", Dialect::sglang, batch2},
        {"tgi/generate_stream_eos.sse", Dialect::tgi, {}},
        {"tgi/generate_stream_final.sse", Dialect::tgi, {}},
        {"tgi/generate_stream_stop.sse", Dialect::tgi, tgi_stop},
        {"vllm_legacy/generate_stream_n2.ndjson", Dialect::vllm_legacy, vllm_n2},
        {"vllm_legacy/generate_stream_n2_nul.bin", Dialect::vllm_legacy, vllm_n2},
    };
}

// Round trip of one decoded stream through `d`; returns what came back.
Outcome stream_through(Dialect d, const std::vector<StreamEvent>& events, const StreamContext& ctx,
                       std::string* wire = nullptr) {
    std::string bytes = encode_stream(d, events, ctx);
    if (wire != nullptr) {
        *wire = bytes;
    }
    return from_events(decode_stream(d, scan(codec_for(d).framing(), bytes), ctx));
}

std::vector<StreamEvent> decode_fixture(const StreamFixture& f) {
    const std::string bytes = read_fixture(f.file);
    const std::vector<std::string> payloads =
        f.one_record ? std::vector<std::string>{bytes}
                     : scan(codec_for(f.dialect).framing(), bytes);
    REQUIRE_FALSE(payloads.empty());
    return decode_stream(f.dialect, payloads, f.ctx);
}

// ---------------------------------------------------------------------------------------------
// Whole responses.
// ---------------------------------------------------------------------------------------------

struct ResponseFixture {
    const char* file;
    Dialect dialect;
    std::vector<std::string> prompts;  // the request's prompts (vLLM legacy echoes them)
    std::vector<std::string> stop;
};

std::vector<ResponseFixture> response_fixtures() {
    return {
        {"anthropic/message_response.json", Dialect::anthropic, {}, {}},
        {"llamacpp/completion_response.json", Dialect::llamacpp, {"p"}, {}},
        {"llamacpp/completion_response_batch.json", Dialect::llamacpp,
         {"The capital of France is", "1+1="}, {"."}},
        {"ollama/chat_response.json", Dialect::ollama_chat, {}, {}},
        {"ollama/generate_response.json", Dialect::ollama_generate, {}, {}},
        // The final streamed object is also a well-formed whole answer.
        {"ollama/generate_stream_final.json", Dialect::ollama_generate, {}, {}},
        {"openai/chat_response.json", Dialect::openai_chat, {}, {}},
        {"openai/completions_response.json", Dialect::openai_completions, {"Say this is a test"},
         {}},
        {"openai/vllm_completions_response.json", Dialect::openai_completions,
         {"The capital of France is"}, {}},
        {"sglang/generate_response.json", Dialect::sglang, {"The capital of France is"}, {}},
        {"sglang/generate_response.compact.json", Dialect::sglang, {"The capital of France is"},
         {}},
        {"tgi/generate_response.json", Dialect::tgi, {"What is Deep Learning?"}, {}},
        {"tgi/generate_response_details.json", Dialect::tgi, {"Test request"}, {}},
        {"tgi/compat_stop_response.json", Dialect::tgi, {"The capital city of France is"},
         {"Par"}},
        {"vllm_legacy/generate_response.json", Dialect::vllm_legacy, {"San Francisco is a"}, {}},
    };
}

// The request a client of dialect `d` made, as far as the response codecs read it.
GenerationRequest response_request(Dialect d, const ResponseFixture& f) {
    GenerationRequest req;
    req.dialect = d;
    req.kind = (d == Dialect::openai_chat || d == Dialect::anthropic || is_ollama(d))
                   ? RequestKind::chat
                   : RequestKind::completion;
    req.model = "round-trip-model";
    for (const std::string& p : f.prompts) {
        req.prompts.push_back({p, {}, false});
    }
    if (req.prompts.empty()) {
        req.prompts.push_back({"Hello", {}, false});
    }
    req.prompt_is_list = req.prompts.size() > 1;
    req.sampling.stop = f.stop;
    req.include_usage = true;  // TGI: parameters.details
    return req;
}

std::string encode_response(Dialect d, const GenerationResult& r, const GenerationRequest& req) {
    std::string out;
    if (is_ollama(d)) {
        ollama::Timing timing;
        timing.created_unix_ns = 1733000000123456789;
        timing.total_ns = 5'000'000;
        ollama::encode_response(codec_for(d), r, req, timing, out);
    } else {
        codec_for(d).encode_response(r, req, out);
    }
    return out;
}

// A one-answer dialect is only ever asked for one answer: hand it choice 0 with its counts.
GenerationResult for_dialect(Dialect d, const GenerationResult& r) {
    if (!single_answer(d) || r.choices.size() <= 1) {
        return r;
    }
    GenerationResult one = r;
    one.choices.resize(1);
    one.usage = one.choices.front().usage;
    return one;
}

}  // namespace

// =============================================================================================

TEST_CASE("round trip: every whole response fixture through every dialect") {
    int trips = 0;
    for (const ResponseFixture& f : response_fixtures()) {
        const GenerationRequest source_req = response_request(f.dialect, f);
        auto decoded = codec_for(f.dialect).decode_response(read_fixture(f.file), source_req);
        REQUIRE_MESSAGE(decoded.ok(), f.file << ": " << decoded.error().message);
        decoded->model = "round-trip-model";
        decoded->created = 1733000000;
        const Outcome original = from_result(*decoded);
        REQUIRE_MESSAGE(!original.texts.empty(), f.file);
        for (Dialect d : kDialects) {
            INFO(std::string(f.file) << " (" << name(f.dialect) << ") -> " << name(d) << " -> " << name(d));
            const GenerationRequest req = response_request(d, f);
            const GenerationResult input = for_dialect(d, *decoded);
            const std::string body = encode_response(d, input, req);
            auto back = codec_for(d).decode_response(body, req);
            REQUIRE_MESSAGE(back.ok(), back.error().message << "\n  body: " << body);
            const Outcome want = expected_through(d, from_result(input), Path::response);
            const std::string why = diff(want, from_result(*back));
            CHECK_MESSAGE(why.empty(), why << "\n  body: " << body);
            ++trips;
        }
    }
    CHECK(trips == 15 * 9);
}

TEST_CASE("round trip: the golden responses decode to what their samples say") {
    struct Anchor {
        const char* file;
        std::map<int, std::string> texts;
        std::map<int, FinishKind> finishes;
        std::optional<int64_t> prompt, completion;
    };
    const Anchor anchors[] = {
        {"anthropic/message_response.json",
         {{0, R"({"product_name": "Green Tea", "price": 5.50, "quantity": 2})"}},
         {{0, FinishKind::stop}}, 249, 26},
        {"llamacpp/completion_response_batch.json", {{0, " Paris"}, {1, "2"}},
         {{0, FinishKind::stop}, {1, FinishKind::stop}}, 9, 4},
        {"openai/completions_response.json", {{0, "\n\nThis is indeed a test"}},
         {{0, FinishKind::length}}, 5, 7},
        {"tgi/generate_response_details.json", {}, {{0, FinishKind::length}}, std::nullopt, 10},
        {"vllm_legacy/generate_response.json", {{0, " city in Northern California ..."}}, {},
         std::nullopt, std::nullopt},
    };
    for (const Anchor& a : anchors) {
        INFO(std::string(a.file));
        for (const ResponseFixture& f : response_fixtures()) {
            if (std::string_view(f.file) != a.file) {
                continue;
            }
            auto r = codec_for(f.dialect).decode_response(read_fixture(f.file),
                                                          response_request(f.dialect, f));
            REQUIRE(r.ok());
            const Outcome o = from_result(*r);
            if (!a.texts.empty()) {
                CHECK(o.texts == a.texts);
            }
            CHECK(o.finishes == a.finishes);
            CHECK(o.prompt_tokens == a.prompt);
            CHECK(o.completion_tokens == a.completion);
        }
    }
}

TEST_CASE("round trip: a response that is not a generation is refused, not translated") {
    // Ollama's unload answer (done_reason "unload") has no text to translate.
    GenerationRequest req;
    req.dialect = Dialect::ollama_generate;
    auto r = codec_for(Dialect::ollama_generate)
                 .decode_response(read_fixture("ollama/unload_response.json"), req);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == 502);
    CHECK(r.error().message.find("unload") != std::string::npos);
}

TEST_CASE("round trip: every error fixture keeps its message through every dialect") {
    struct ErrorFixture {
        const char* file;
        Dialect dialect;
        int status;
        const char* message;
    };
    const ErrorFixture fixtures[] = {
        {"anthropic/rate_limit_error.json", Dialect::anthropic, 429,
         "exceed your organization's rate limit"},
        {"llamacpp/error_400.json", Dialect::llamacpp, 400, "Failed to parse grammar"},
        {"llamacpp/error_401.json", Dialect::llamacpp, 401, "Invalid API Key"},
        {"llamacpp/error_501.json", Dialect::llamacpp, 501,
         "This server does not support metrics endpoint."},
        {"llamacpp/error_503.json", Dialect::llamacpp, 503, "Loading model"},
    };
    for (const ErrorFixture& f : fixtures) {
        const auto original =
            codec_for(f.dialect).decode_error(f.status, read_fixture(f.file));
        REQUIRE_MESSAGE(original.message.find(f.message) != std::string::npos, f.file);
        for (Dialect d : kDialects) {
            INFO(std::string(f.file) << " (" << name(f.dialect) << ") -> " << name(d) << " -> " << name(d));
            std::string body;
            codec_for(d).encode_error(original, body);
            // The status travels in the HTTP status line, the message in the body.
            const auto back = codec_for(d).decode_error(original.status, body);
            CHECK(back.message == original.message);
            CHECK(back.status == f.status);
        }
    }
}

TEST_CASE("round trip: every stream fixture through every dialect") {
    int trips = 0;
    for (const StreamFixture& f : stream_fixtures()) {
        const std::vector<StreamEvent> events = decode_fixture(f);
        const Outcome original = from_events(events);
        REQUIRE_MESSAGE((!original.choices().empty() || original.error), f.file);
        for (Dialect d : kDialects) {
            INFO(std::string(f.file) << " (" << name(f.dialect) << ") -> " << name(d) << " -> " << name(d));
            std::string wire;
            const Outcome got = stream_through(d, events, f.ctx, &wire);
            const std::string why = diff(expected_through(d, original, Path::stream), got);
            CHECK_MESSAGE(why.empty(), why << "\n  wire:\n" << wire);
            ++trips;
        }
    }
    CHECK(trips == 18 * 9);
}

TEST_CASE("round trip: the golden streams decode to what their samples say") {
    // Anchors: the round trip compares against the decoded original, so the original itself
    // must be right (a decoder that lost everything would round-trip "nothing" perfectly).
    struct Anchor {
        const char* file;
        std::map<int, std::string> texts;
        std::optional<int64_t> prompt, completion;
    };
    const Anchor anchors[] = {
        {"anthropic/basic_response.sse", {{0, "Hello there!"}}, 11, 6},
        {"openai/chat_stream_logprobs.sse", {{0, "Foo!"}}, 9, 2},
        {"openai/chat_stream_max_tokens.sse", {{0, "{\""}}, 79, 1},
        {"openai/vllm_completions_stream_continuous_usage.sse", {{0, " Paris. It is also"}}, 6, 5},
        {"sglang/generate_stream_batch.sse", {{0, " Paris. It is"}, {1, " 2"}}, 9, 7},
        {"tgi/generate_stream_stop.sse", {{0, " is "}}, 6, 3},  // " is Par" minus "Par"
        {"vllm_legacy/generate_stream_n2_nul.bin",
         {{0, " city in Northern California"}, {1, " hilly place."}}, std::nullopt, std::nullopt},
        {"ollama/generate_stream.ndjson", {{0, "That's a fantastic question!"}}, std::nullopt,
         std::nullopt},
    };
    for (const Anchor& a : anchors) {
        INFO(std::string(a.file));
        for (const StreamFixture& f : stream_fixtures()) {
            if (std::string_view(f.file) == a.file) {
                const Outcome o = from_events(decode_fixture(f));
                CHECK(o.texts == a.texts);
                CHECK(o.prompt_tokens == a.prompt);
                CHECK(o.completion_tokens == a.completion);
            }
        }
    }
}

TEST_CASE("round trip: a corrupted wire is caught") {
    // The comparison must be able to fail: flip one byte of the text on the SGLang wire and
    // one token count on the OpenAI wire.
    const StreamFixture f = stream_fixtures()[8];  // openai/chat_stream_logprobs.sse
    REQUIRE(std::string_view(f.file) == "openai/chat_stream_logprobs.sse");
    const std::vector<StreamEvent> events = decode_fixture(f);
    const Outcome original = from_events(events);

    std::string wire = encode_stream(Dialect::sglang, events, f.ctx);
    const size_t at = wire.find("Foo");
    REQUIRE(at != std::string::npos);
    wire[at + 1] = 'x';
    Outcome got = from_events(
        decode_stream(Dialect::sglang, scan(Framing::sse, wire), f.ctx));
    std::string why = diff(expected_through(Dialect::sglang, original, Path::stream), got);
    CHECK(why.find("text differs") != std::string::npos);

    wire = encode_stream(Dialect::openai_completions, events, f.ctx);
    const size_t tokens = wire.find("\"completion_tokens\":2");
    REQUIRE(tokens != std::string::npos);
    wire[tokens + 20] = '3';
    got = from_events(decode_stream(Dialect::openai_completions, scan(Framing::sse, wire), f.ctx));
    why = diff(expected_through(Dialect::openai_completions, original, Path::stream), got);
    CHECK(why.find("completion_tokens differ") != std::string::npos);
}

// =============================================================================================
// Requests
// =============================================================================================

namespace {

struct RequestSample {
    const char* what;
    Dialect dialect;
    std::string body;
    const char* route = nullptr;  // TGI: the path it was posted to
};

std::vector<RequestSample> request_samples() {
    return {
        {"sglang representative", Dialect::sglang,
         R"({"text": "The capital of France is", "sampling_params": {"max_new_tokens": 12,
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "sampling_seed": 7,
             "stop": ["\n\n", " city"]}, "stream": true})"},
        {"sglang token ids", Dialect::sglang,
         R"({"input_ids": [791, 6864, 315, 9822, 374], "sampling_params": {"max_new_tokens": 8,
             "temperature": 0.5}, "stream": false})"},
        {"openai completions representative", Dialect::openai_completions,
         R"({"model": "m", "prompt": "The capital of France is", "max_tokens": 12,
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["\n\n"],
             "stream": true})"},
        {"openai completions without max_tokens", Dialect::openai_completions,
         R"({"model": "m", "prompt": "Once upon a time", "temperature": 1.0})"},
        {"openai chat representative", Dialect::openai_chat,
         R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
             {"role": "user", "content": "Why is the sky blue?"}], "max_tokens": 12,
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["\n\n"],
             "stream": true})"},
        {"tgi representative", Dialect::tgi,
         R"({"inputs": "What is Deep Learning?", "parameters": {"max_new_tokens": 12,
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["\n\n"],
             "details": true}})",
         "/generate_stream"},
        {"ollama generate representative", Dialect::ollama_generate,
         R"({"model": "m", "system": "Be brief.", "prompt": "Why is the sky blue?",
             "options": {"num_predict": 12, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
             "seed": 7, "stop": ["\n\n"]}, "stream": false})"},
        {"ollama generate raw", Dialect::ollama_generate,
         R"({"model": "m", "prompt": "[INST] why is the sky blue? [/INST]", "raw": true,
             "options": {"num_predict": 12, "temperature": 0.7, "seed": 7}})"},
        {"ollama/chat_request.json", Dialect::ollama_chat, read_fixture("ollama/chat_request.json")},
        {"llamacpp representative", Dialect::llamacpp,
         R"({"prompt": "Building a website can be done in 10 simple steps:", "n_predict": 12,
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["\n\n"],
             "stream": true})"},
        {"vllm_legacy/api_client_request.json", Dialect::vllm_legacy,
         read_fixture("vllm_legacy/api_client_request.json")},
        {"vllm legacy representative", Dialect::vllm_legacy,
         R"({"prompt": "San Francisco is a", "max_tokens": 12, "temperature": 0.7,
             "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["\n\n"], "stream": true})"},
        {"anthropic representative", Dialect::anthropic,
         R"({"model": "m", "max_tokens": 12, "system": "Be brief.",
             "messages": [{"role": "user", "content": "Why is the sky blue?"}],
             "temperature": 0.7, "top_p": 0.9, "top_k": 40, "stop_sequences": ["\n\n"],
             "stream": true})"},
    };
}

// Why `d`'s upstream encoder must refuse `req` (a word its message has to contain), if it must.
std::optional<std::string> refusal(const GenerationRequest& req, Dialect d) {
    const bool chat = req.kind == RequestKind::chat;
    const bool completion_only = d == Dialect::sglang || d == Dialect::openai_completions ||
                                 d == Dialect::tgi || d == Dialect::llamacpp ||
                                 d == Dialect::vllm_legacy;
    if (chat && completion_only) {
        return std::string("chat");  // no chat template on a raw-completion route
    }
    if (!chat && (d == Dialect::openai_chat || d == Dialect::anthropic)) {
        return std::string("raw prompt");  // it would be wrapped in a user turn
    }
    const bool tokens = !req.prompts.empty() && req.prompts.front().is_tokens;
    if (req.sampling.n > 1) {
        if (d == Dialect::tgi || d == Dialect::llamacpp || is_ollama(d)) {
            return std::string("n");
        }
    }
    if (tokens) {
        if (d == Dialect::tgi || is_ollama(d)) {
            return std::string("token");
        }
        if (d == Dialect::vllm_legacy) {
            return std::string("text prompts only");
        }
    }
    if (req.sampling.keep_stop_str.value_or(false) && (d == Dialect::llamacpp || is_ollama(d))) {
        // A TGI client expects the matched stop string in its text; llama.cpp and Ollama always
        // strip it.
        return std::string("stop string");
    }
    // A setting only the client's own family has (vLLM's demo client sends use_beam_search).
    const auto family = [](Dialect x) {
        return x == Dialect::openai_chat   ? Dialect::openai_completions
               : x == Dialect::ollama_chat ? Dialect::ollama_generate
                                           : x;
    };
    if (family(d) != family(req.dialect)) {
        for (const auto& e : req.extras) {
            if (!e.inert) {
                return e.key;
            }
        }
        for (const auto& e : req.sampling_extras) {
            if (!e.inert) {
                return e.key;
            }
        }
    }
    return std::nullopt;
}

// The codec that decodes what `d`'s upstream encoder wrote to `path`.
const Codec& decoder_for(Dialect d, std::string_view path) {
    if (is_ollama(d)) {
        return codec_for(path == "/api/chat" ? Dialect::ollama_chat : Dialect::ollama_generate);
    }
    return codec_for(d);
}

std::string describe(const GenerationRequest& r) {
    std::ostringstream s;
    s << "kind=" << (r.kind == RequestKind::chat ? "chat" : "completion");
    for (const auto& p : r.prompts) {
        s << " prompt=\"" << p.text << "\"";
        for (int64_t t : p.token_ids) {
            s << " " << t;
        }
    }
    for (const ChatMessage& m : r.messages) {
        s << " " << m.role << "=\"" << m.content << "\"";
    }
    const auto& sp = r.sampling;
    s << " max_tokens=" << opt(sp.max_tokens) << " temperature="
      << (sp.temperature ? std::to_string(*sp.temperature) : "unset")
      << " top_p=" << (sp.top_p ? std::to_string(*sp.top_p) : "unset")
      << " top_k=" << opt(sp.top_k) << " seed=" << opt(sp.seed) << " n=" << sp.n
      << " stream=" << r.stream << " stop=[";
    for (const auto& st : sp.stop) {
        s << "\"" << st << "\" ";
    }
    s << "]";
    return s.str();
}

// Empty when `got` (decoded again by `d`) carries what `sent` said.
std::string request_diff(const GenerationRequest& sent, Dialect d, const GenerationRequest& got) {
    std::string w;
    if (sent.kind != got.kind) {
        w += "kind differs; ";
    }
    if (sent.prompts.size() != got.prompts.size()) {
        w += "prompt count differs; ";
    } else {
        for (size_t i = 0; i < sent.prompts.size(); ++i) {
            if (sent.prompts[i].text != got.prompts[i].text ||
                sent.prompts[i].token_ids != got.prompts[i].token_ids ||
                sent.prompts[i].is_tokens != got.prompts[i].is_tokens) {
                w += "prompt " + std::to_string(i) + " differs; ";
            }
        }
    }
    if (sent.messages.size() != got.messages.size()) {
        w += "message count differs; ";
    } else {
        for (size_t i = 0; i < sent.messages.size(); ++i) {
            if (sent.messages[i].role != got.messages[i].role ||
                sent.messages[i].content != got.messages[i].content) {
                w += "message " + std::to_string(i) + " differs; ";
            }
        }
    }
    const auto& a = sent.sampling;
    const auto& b = got.sampling;
    // An unset max_tokens is written as the client dialect's own default (api-dialects §10.4);
    // Anthropic requires a number and gets its documented fallback of 4096.
    std::optional<int64_t> max_tokens =
        a.max_tokens ? a.max_tokens : infergate::canonical::default_max_tokens(sent.dialect);
    if (!max_tokens && d == Dialect::anthropic) {
        max_tokens = 4096;
    }
    if (b.max_tokens != max_tokens) {
        w += "max_tokens differs (want " + opt(max_tokens) + "); ";
    }
    if (a.stop != b.stop) {
        w += "stop differs; ";
    }
    if (a.temperature != b.temperature) {
        w += "temperature differs; ";
    }
    if (a.top_p != b.top_p) {
        w += "top_p differs; ";
    }
    if (a.top_k != b.top_k) {
        w += "top_k differs; ";
    }
    // The Messages API has no seed parameter (api-dialects §8.2): it is the one documented loss.
    const std::optional<int64_t> seed = d == Dialect::anthropic ? std::nullopt : a.seed;
    if (b.seed != seed) {
        w += "seed differs (want " + opt(seed) + "); ";
    }
    // Keeping the matched stop string: TGI always does (its decoder says so whenever there are
    // stop strings); everyone else carries the flag as it was.
    const std::optional<bool> keep =
        d == Dialect::tgi ? (a.stop.empty() ? std::nullopt : std::optional<bool>(true))
                          : a.keep_stop_str;
    if (b.keep_stop_str != keep) {
        w += "keep_stop_str differs; ";
    }
    if (a.n != b.n) {
        w += "n differs; ";
    }
    if (sent.stream != got.stream) {
        w += "stream differs; ";
    }
    if (!w.empty()) {
        w += "\n  sent: " + describe(sent) + "\n  got:  " + describe(got);
    }
    return w;
}

// Decodes `s` as its client would send it, TGI's route included.
GenerationRequest decode_sample(const RequestSample& s) {
    auto r = codec_for(s.dialect).decode_request(s.body);
    REQUIRE_MESSAGE(r.ok(), s.what << ": " << r.error().message);
    if (s.route != nullptr) {
        tgi::mark_route(*r, s.route);
    }
    return *r;
}

}  // namespace

TEST_CASE("round trip: every request sample through every upstream dialect") {
    int translated = 0;
    int refused = 0;
    for (const RequestSample& s : request_samples()) {
        const GenerationRequest sent = decode_sample(s);
        for (Dialect d : kDialects) {
            INFO(std::string(s.what) << " (" << name(s.dialect) << ") -> " << name(d) << " -> " << name(d));
            UpstreamOptions options;
            options.model = "served-model";  // the exchange names the backend's model
            options.flavor = Flavor::vllm;   // an OpenAI backend that takes top_k
            options.stream = sent.stream;
            auto body = codec_for(d).encode_request(sent, options);
            if (const auto why = refusal(sent, d)) {
                REQUIRE_MESSAGE(!body.ok(), "expected a refusal mentioning '" << *why
                                                                              << "', got "
                                                                              << *body);
                CHECK(body.error().status == 400);
                CHECK_MESSAGE(body.error().message.find(*why) != std::string::npos,
                              body.error().message);
                ++refused;
                continue;
            }
            REQUIRE_MESSAGE(body.ok(), body.error().message);
            const std::string path(codec_for(d).upstream_path(sent));
            auto got = decoder_for(d, path).decode_request(*body);
            REQUIRE_MESSAGE(got.ok(), got.error().message << "\n  body: " << *body);
            if (d == Dialect::tgi) {
                tgi::mark_route(*got, path);
            }
            const std::string why = request_diff(sent, d, *got);
            CHECK_MESSAGE(why.empty(), why << "\n  path: " << path << "\n  body: " << *body);
            ++translated;
        }
    }
    CHECK(translated + refused == 13 * 9);
    CHECK(refused > 0);
    CHECK(translated > refused);
}

TEST_CASE("round trip: a changed request setting is caught") {
    const GenerationRequest sent = decode_sample(request_samples()[2]);
    UpstreamOptions options;
    options.flavor = Flavor::vllm;
    options.stream = sent.stream;
    auto body = codec_for(Dialect::llamacpp).encode_request(sent, options);
    REQUIRE(body.ok());
    const size_t at = body->find("0.7");
    REQUIRE(at != std::string::npos);
    body->replace(at, 3, "0.8");
    auto got = codec_for(Dialect::llamacpp).decode_request(*body);
    REQUIRE(got.ok());
    CHECK(request_diff(sent, Dialect::llamacpp, *got).find("temperature differs") !=
          std::string::npos);
}
