// Issue 13's round-trip property over generated cases: for every pair of chat dialects that
// carries a feature (tool definitions and calls, tool results, reasoning, images), what one
// side says survives being written in the other's shape and read back as a client of that
// dialect writes it.
//
// - Requests: generated agent conversations (calls with nested, escaped, non-ASCII arguments
//   written compactly or with spaces; results; reasoning; images), each in a client dialect's
//   bytes, go to every other chat dialect; the backend's body, decoded as a client of the
//   backend's dialect, holds the same conversation.
// - Answers: generated results (text, reasoning, calls, finishes) encoded for each chat client
//   and decoded back by that dialect's response decoder say the same.
//
// What a pair cannot carry is excluded by design where the docs say so (Anthropic history
// reasoning needs a signature: refused, checked as a refusal); ids that a dialect does not
// carry (Ollama's history keys results by tool name) are compared through the call they
// answer.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"

namespace {

namespace canonical = infergate::canonical;
namespace json = infergate::json;
using canonical::ChatMessage;
using canonical::Dialect;
using canonical::FinishKind;
using canonical::GenerationRequest;
using canonical::GenerationResult;
using infergate::translators::codec_for;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;

// A small deterministic generator (LCG), so a failure names its case number.
class Gen {
public:
    explicit Gen(uint32_t seed) : s_(seed * 2654435761u + 1) {}
    uint32_t next(uint32_t n) {
        s_ = s_ * 1103515245u + 12345u;
        return (s_ >> 8) % n;
    }
    bool coin() { return next(2) == 0; }

    std::string text() {
        static const char* kWords[] = {"weather", "Paris",       "caf\u00e9", "\"quoted\"",
                                       "a\\b",    "line\nbreak", "\u2603",    "tab\there",
                                       "<b>",     "{json}"};
        std::string out;
        const uint32_t n = 1 + next(4);
        for (uint32_t i = 0; i < n; ++i) {
            out += (i ? " " : "");
            out += kWords[next(10)];
        }
        return out;
    }

    // A JSON object of arguments, compact or spaced as a model may write it.
    std::string arguments() {
        const bool spaced = coin();
        const std::string colon = spaced ? ": " : ":";
        const std::string comma = spaced ? ", " : ",";
        std::string out = "{";
        const uint32_t n = next(4);
        for (uint32_t i = 0; i < n; ++i) {
            out += (i ? comma : "");
            out += json_string(std::string(kKeys[next(5)]) + std::to_string(i)) + colon;
            switch (next(6)) {
                case 0:
                    out += std::to_string(static_cast<int>(next(2000)) - 1000);
                    break;
                case 1:
                    out += coin() ? "true" : "null";
                    break;
                case 2:
                    out += "1.5e3";
                    break;
                case 3:
                    out += "[1" + comma + "\"two\"" + comma + "{\"x\"" + colon + "[]}]";
                    break;
                case 4:
                    out += "{\"inner\"" + colon + "\"caf\\u00e9 \\\"q\\\"\"}";
                    break;
                default:
                    out += json_string(text());
                    break;
            }
        }
        return out + "}";
    }

    static std::string json_string(std::string_view s) {
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        json::string(w, s);
        return out;
    }

private:
    static constexpr const char* kKeys[] = {"city", "unit", "n\u00e4me", "a\"b", "x/y"};
    uint32_t s_;
};

constexpr const char* kTools[] = {"get_weather", "lookup", "set_flag"};
// 1x1 PNG.
constexpr std::string_view kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg"
    "==";

struct Call {
    std::string id;
    std::string name;
    std::string arguments;  // as the model wrote them
};

// One generated conversation, written below in each client dialect.
struct Turn {
    std::string role;  // system, user, assistant, tool
    std::string text;
    std::string reasoning;  // assistant
    std::vector<Call> calls;
    std::string answers;  // tool: the id of the call it answers
    std::string answers_name;
    bool image = false;  // user: one PNG before the text
};

std::vector<Turn> conversation(Gen& g, bool reasoning) {
    std::vector<Turn> out;
    if (g.coin()) {
        out.push_back({"system", "You are helpful. " + g.text()});
    }
    out.push_back({"user", g.text(), "", {}, "", "", g.next(3) == 0});
    const uint32_t rounds = 1 + g.next(3);
    for (uint32_t r = 0; r < rounds; ++r) {
        Turn a{"assistant", g.coin() ? g.text() : ""};
        if (reasoning && g.coin()) {
            a.reasoning = "I think: " + g.text();
        }
        const uint32_t calls = 1 + g.next(2);
        for (uint32_t c = 0; c < calls; ++c) {
            a.calls.push_back({"call_" + std::to_string(r) + "_" + std::to_string(c),
                               kTools[g.next(3)], g.arguments()});
        }
        out.push_back(a);
        for (const Call& c : a.calls) {
            out.push_back({"tool", "result " + g.text(), "", {}, c.id, c.name});
        }
    }
    out.push_back({"assistant", g.text()});
    out.push_back({"user", g.text(), "", {}, "", "", g.next(3) == 0});
    return out;
}

std::string tools_json(Dialect d) {
    std::string out = "[";
    for (size_t i = 0; i < std::size(kTools); ++i) {
        const std::string schema = R"({"type":"object","properties":{"city":{"type":"string"}}})";
        out += i ? "," : "";
        if (d == Dialect::anthropic) {
            out += R"({"name":")" + std::string(kTools[i]) +
                   R"(","description":"d","input_schema":)" + schema + "}";
        } else {
            out += R"({"type":"function","function":{"name":")" + std::string(kTools[i]) +
                   R"(","description":"d","parameters":)" + schema + "}}";
        }
    }
    return out + "]";
}

// The conversation as a client of `d` writes it.
std::string client_body(Dialect d, const std::vector<Turn>& turns) {
    const auto q = Gen::json_string;
    std::string msgs;
    std::string system;
    auto add = [&](const std::string& m) { msgs += (msgs.empty() ? "" : ",") + m; };
    for (size_t i = 0; i < turns.size(); ++i) {
        const Turn& t = turns[i];
        if (d == Dialect::openai_chat) {
            std::string m = R"({"role":)" + q(t.role) + R"(,"content":)";
            if (t.image) {
                m += R"([{"type":"image_url","image_url":{"url":"data:image/png;base64,)" +
                     std::string(kPng) + R"("}},{"type":"text","text":)" + q(t.text) + "}]";
            } else {
                m += t.text.empty() && !t.calls.empty() ? "null" : q(t.text);
            }
            if (!t.reasoning.empty()) {
                m += R"(,"reasoning_content":)" + q(t.reasoning);
            }
            if (!t.calls.empty()) {
                m += R"(,"tool_calls":[)";
                for (size_t c = 0; c < t.calls.size(); ++c) {
                    m += (c ? "," : "") + std::string(R"({"id":)") + q(t.calls[c].id) +
                         R"(,"type":"function","function":{"name":)" + q(t.calls[c].name) +
                         R"(,"arguments":)" + q(t.calls[c].arguments) + "}}";
                }
                m += "]";
            }
            if (t.role == "tool") {
                m += R"(,"tool_call_id":)" + q(t.answers);
            }
            add(m + "}");
        } else if (d == Dialect::ollama_chat) {
            std::string m = R"({"role":)" + q(t.role) + R"(,"content":)" + q(t.text);
            if (t.image) {
                m += R"(,"images":[")" + std::string(kPng) + "\"]";
            }
            if (!t.reasoning.empty()) {
                m += R"(,"thinking":)" + q(t.reasoning);
            }
            if (!t.calls.empty()) {
                m += R"(,"tool_calls":[)";
                for (size_t c = 0; c < t.calls.size(); ++c) {
                    m += (c ? "," : "") + std::string(R"({"function":{"name":)") +
                         q(t.calls[c].name) + R"(,"arguments":)" + t.calls[c].arguments + "}}";
                }
                m += "]";
            }
            if (t.role == "tool") {
                m += R"(,"tool_name":)" + q(t.answers_name);
            }
            add(m + "}");
        } else {  // Anthropic: system on top; results are user blocks; calls tool_use blocks
            if (t.role == "system") {
                system = t.text;
                continue;
            }
            if (t.role == "tool") {
                std::string blocks;
                size_t j = i;
                for (; j < turns.size() && turns[j].role == "tool"; ++j) {
                    blocks += (blocks.empty() ? "" : ",") +
                              std::string(R"({"type":"tool_result","tool_use_id":)") +
                              q(turns[j].answers) + R"(,"content":)" + q(turns[j].text) + "}";
                }
                i = j - 1;
                add(R"({"role":"user","content":[)" + blocks + "]}");
                continue;
            }
            std::string blocks;
            if (t.image) {
                blocks +=
                    R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":")" +
                    std::string(kPng) + "\"}}";
            }
            if (!t.text.empty()) {
                blocks += (blocks.empty() ? "" : ",") + std::string(R"({"type":"text","text":)") +
                          q(t.text) + "}";
            }
            for (const Call& c : t.calls) {
                blocks += (blocks.empty() ? "" : ",") + std::string(R"({"type":"tool_use","id":)") +
                          q(c.id) + R"(,"name":)" + q(c.name) + R"(,"input":)" + c.arguments + "}";
            }
            add(R"({"role":)" + q(t.role) + R"(,"content":[)" + blocks + "]}");
        }
    }
    if (d == Dialect::anthropic) {
        return R"({"model":"m","max_tokens":64,)" +
               (system.empty() ? std::string() : R"("system":)" + q(system) + ",") + R"("tools":)" +
               tools_json(d) + R"(,"messages":[)" + msgs + "]}";
    }
    return R"({"model":"m","tools":)" + tools_json(d) + R"(,"messages":[)" + msgs + "]}";
}

// A message as every dialect can say it: role, text, reasoning, calls (name and arguments,
// compact), the name of the call a result answers, the images' bytes.
struct Said {
    std::string role, text, reasoning, answers;
    std::vector<std::string> calls;
    std::vector<std::string> images;
    bool operator==(const Said&) const = default;
};

std::string compact(std::string_view text) {
    json::Document doc;
    if (json::parse(text.empty() ? std::string_view("{}") : text, doc)) {
        return "<invalid: " + std::string(text) + ">";
    }
    return json::to_string(doc);
}

std::vector<Said> said(const GenerationRequest& req) {
    std::vector<Said> out;
    std::vector<std::pair<std::string, std::string>> ids;  // call id -> name
    for (const ChatMessage& m : req.messages) {
        Said s{m.role == "developer" ? "system" : m.role, m.content, m.reasoning, ""};
        for (const canonical::ToolCall& c : m.tool_calls) {
            ids.emplace_back(c.id, c.name);
            s.calls.push_back(c.name + compact(c.arguments));
        }
        if (m.role == "tool") {
            s.answers = m.name;
            for (const auto& [id, name] : ids) {
                if (!m.tool_call_id.empty() && id == m.tool_call_id) {
                    s.answers = name;
                }
            }
        }
        for (const canonical::Image& image : m.images) {
            s.images.push_back(image.data);
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::string show(const std::vector<Said>& v) {
    std::string out;
    for (const Said& s : v) {
        out += "[" + s.role + "] " + s.text + " {" + s.reasoning + "} ->" + s.answers;
        for (const auto& c : s.calls) {
            out += " call:" + c;
        }
        out += " images:" + std::to_string(s.images.size()) + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("chat round trip: generated conversations between every pair of chat dialects") {
    const Dialect dialects[] = {Dialect::openai_chat, Dialect::ollama_chat, Dialect::anthropic};
    int carried = 0;
    int refused = 0;
    for (uint32_t n = 0; n < 120; ++n) {
        for (const Dialect client : dialects) {
            Gen g(n * 3 + static_cast<uint32_t>(client));
            // Anthropic's history has no reasoning without a signature: none generated there.
            const bool reasoning = client != Dialect::anthropic && g.coin();
            const std::vector<Turn> turns = conversation(g, reasoning);
            const std::string body = client_body(client, turns);
            auto sent = codec_for(client).decode_request(body);
            REQUIRE_MESSAGE(sent.ok(), sent.error().message << "\n" << body);
            const std::vector<Said> want = said(*sent);
            for (const Dialect backend : dialects) {
                if (backend == client) {
                    continue;
                }
                INFO("case " << n << ": " << canonical::to_string(client) << " -> "
                             << canonical::to_string(backend) << "\n"
                             << body);
                UpstreamOptions options;
                options.flavor = Flavor::vllm;
                options.model = "m";
                auto encoded = codec_for(backend).encode_request(*sent, options);
                const bool history_reasoning = [&] {
                    for (const ChatMessage& m : sent->messages) {
                        if (m.role == "assistant" && !m.reasoning.empty()) {
                            return true;
                        }
                    }
                    return false;
                }();
                if (backend == Dialect::anthropic && history_reasoning) {
                    REQUIRE_FALSE(encoded.ok());
                    CHECK(encoded.error().status == 400);
                    CHECK(encoded.error().param.find("messages[") == 0);
                    ++refused;
                    continue;
                }
                REQUIRE_MESSAGE(encoded.ok(), encoded.error().message);
                auto back = codec_for(backend).decode_request(*encoded);
                REQUIRE_MESSAGE(back.ok(), back.error().message << "\n" << *encoded);
                const std::vector<Said> got = said(*back);
                CHECK_MESSAGE(got == want, "sent:\n"
                                               << show(want) << "got:\n"
                                               << show(got) << "body: " << *encoded);
                ++carried;
            }
        }
    }
    CHECK(carried > 500);
    CHECK(refused > 20);
}

TEST_CASE("chat round trip: generated answers through each chat client's encoder and back") {
    const Dialect dialects[] = {Dialect::openai_chat, Dialect::ollama_chat, Dialect::anthropic};
    int checked = 0;
    for (uint32_t n = 0; n < 200; ++n) {
        Gen g(n + 1000);
        GenerationResult result;
        result.id = "id-" + std::to_string(n);
        result.model = "m";
        result.created = 1;
        canonical::Choice& c = result.choices.emplace_back();
        c.text = g.coin() ? g.text() : "";
        c.reasoning = g.coin() ? "Reasoning: " + g.text() : "";
        const uint32_t calls = g.next(3);
        for (uint32_t i = 0; i < calls; ++i) {
            c.tool_calls.push_back({"call_" + std::to_string(i), kTools[g.next(3)], g.arguments()});
        }
        c.finish.kind =
            calls > 0 ? FinishKind::tool_calls : (g.coin() ? FinishKind::stop : FinishKind::length);
        c.usage.prompt_tokens = 5;
        c.usage.completion_tokens = 7;
        result.usage = c.usage;
        for (const Dialect d : dialects) {
            INFO("case " << n << ": " << canonical::to_string(d));
            GenerationRequest req;
            req.dialect = d;
            req.kind = canonical::RequestKind::chat;
            req.model = "m";
            std::string body;
            codec_for(d).encode_response(result, req, body);
            // Read back as a backend's answer to a client of another dialect (nothing carried).
            GenerationRequest other = req;
            other.dialect = d == Dialect::openai_chat ? Dialect::ollama_chat : Dialect::openai_chat;
            auto back = codec_for(d).decode_response(body, other);
            REQUIRE_MESSAGE(back.ok(), back.error().message << "\n" << body);
            REQUIRE(back->choices.size() == 1);
            const canonical::Choice& b = back->choices[0];
            INFO(body);
            CHECK(b.text == c.text);
            CHECK(b.reasoning == c.reasoning);
            REQUIRE(b.tool_calls.size() == c.tool_calls.size());
            for (size_t i = 0; i < c.tool_calls.size(); ++i) {
                CHECK(b.tool_calls[i].name == c.tool_calls[i].name);
                CHECK(compact(b.tool_calls[i].arguments) == compact(c.tool_calls[i].arguments));
                if (d == Dialect::openai_chat) {  // a string both ways: byte for byte
                    CHECK(b.tool_calls[i].arguments == c.tool_calls[i].arguments);
                    CHECK(b.tool_calls[i].id == c.tool_calls[i].id);
                }
            }
            // (Ollama says "stop" after calls; its decoder reads that as tool_calls again.)
            CHECK(b.finish.kind == c.finish.kind);
            ++checked;
        }
    }
    CHECK(checked == 600);
}
