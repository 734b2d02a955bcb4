// The parameter tables of docs/dialects.md ("Parameters"), read from the doc itself and checked
// cell by cell, so that the doc and the code cannot drift apart: every sampling and output
// parameter each front accepts, and for each backend engine the member it reaches the engine as
// (name, place and form) or the 400 that names it.
//
// A row gives the client's body as a fragment merged into a minimal request of that front. A
// cell is checked on the body the backend would get, made as the proxy makes it: the client's own
// bytes with the fast path's edits where client and backend speak the same OpenAI (or SGLang)
// dialect (translators/openai/passthrough: name_edits, check_upstream_settings), otherwise the
// client's codec decodes and the backend route's codec encodes. The route is the one
// translators/pairing.cpp picks: raw prompts to the engine's raw route, chat to its chat route.
//
// Cell syntax (the doc's legend): "400 `<param>`" (refused, the error naming <param>), or
// members in backticks: `<path>=<json>` (the member at the dotted path has that value; numbers
// compare as numbers) and `-<path>` (the member is not there). Text outside backticks is a note.

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "translators/canonical/json.hpp"
#include "translators/codec.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/passthrough.hpp"
#include "translators/tgi/codec.hpp"

namespace {

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::RequestKind;
using infergate::translators::codec_for;
using infergate::translators::Flavor;
using infergate::translators::UpstreamOptions;
namespace json = infergate::json;
namespace openai = infergate::translators::openai;

// The doc's columns.
enum Back { kVllm, kSglang, kTgi, kOllama, kLlamacpp, kVllmDemo, kAnthropic, kOpenai, kGeneric };
constexpr const char* kBackNames[] = {"vLLM",      "SGLang",     "TGI",
                                      "Ollama",    "llama.cpp",  "vLLM demo",
                                      "Anthropic", "OpenAI API", "generic OpenAI-compatible"};

struct Route {
    Dialect dialect;  // the backend API the request goes to
    Flavor flavor;    // its OpenAI layer, for the OpenAI routes
    bool fast;        // the client's own bytes go (same dialect)
};

bool is_openai(Dialect d) {
    return d == Dialect::openai_completions || d == Dialect::openai_chat;
}

// translators/pairing.cpp's table, and translators/pairing.cpp's openai_flavor.
Route route(Dialect front, RequestKind kind, Back back) {
    const bool chat = kind == RequestKind::chat;
    const Flavor flavor = back == kSglang     ? Flavor::sglang
                          : back == kTgi      ? Flavor::tgi
                          : back == kLlamacpp ? Flavor::llamacpp
                          : back == kOpenai   ? Flavor::openai
                          : back == kVllm     ? Flavor::vllm
                                              : Flavor::generic;
    Dialect d = Dialect::openai_completions;
    switch (back) {
        case kSglang:
            d = chat ? Dialect::openai_chat : Dialect::sglang;
            break;
        case kTgi:
            d = chat ? Dialect::openai_chat : Dialect::tgi;
            break;
        case kOllama:
            d = !chat                               ? Dialect::ollama_generate
                : front == Dialect::ollama_generate ? Dialect::ollama_generate
                                                    : Dialect::ollama_chat;
            break;
        case kLlamacpp:
            d = chat ? Dialect::openai_chat : Dialect::llamacpp;
            break;
        case kVllmDemo:
            d = Dialect::vllm_legacy;
            break;  // chat: refused
        case kAnthropic:
            d = Dialect::anthropic;
            break;  // raw: refused
        default:
            d = chat ? Dialect::openai_chat : Dialect::openai_completions;
            break;
    }
    const bool fast = d == front && back != kTgi && (is_openai(front) || front == Dialect::sglang);
    return {d, flavor, fast};
}

struct Upstream {
    std::optional<std::string> body;
    std::string refused_param;  // set when refused
    std::string message;
};

Upstream upstream(Dialect front, std::string_view client_body, Back back) {
    auto decoded = codec_for(front).decode_request(client_body);
    if (!decoded.ok()) {
        const std::string why = std::string(client_body) + ": " + decoded.error().message;
        FAIL(why);
    }
    GenerationRequest req = std::move(decoded.value());
    if (front == Dialect::tgi) {
        infergate::translators::tgi::mark_route(req, "/generate");
    }
    const Route r = route(front, req.kind, back);
    Upstream out;
    if (r.fast) {
        if (is_openai(front)) {
            if (auto e = openai::check_upstream_settings(req, r.flavor)) {
                out.refused_param = e->param;
                out.message = e->message;
                return out;
            }
        }
        openai::RequestEdits edits;
        openai::name_edits(r.flavor, req.sampling.keep_stop_str.has_value(), edits);
        std::string body;
        REQUIRE(openai::edit_request(client_body, edits, body));
        out.body = std::move(body);
        return out;
    }
    UpstreamOptions options;
    options.flavor = r.flavor;
    auto encoded = codec_for(r.dialect).encode_request(req, options);
    if (!encoded.ok()) {
        CHECK(encoded.error().status == 400);
        out.refused_param = encoded.error().param;
        out.message = encoded.error().message;
        return out;
    }
    out.body = std::move(encoded.value());
    return out;
}

const json::Value* at_path(const json::Value& doc, std::string_view path) {
    const json::Value* v = &doc;
    while (v != nullptr) {
        const size_t dot = path.find('.');
        v = json::find(*v, path.substr(0, dot));
        if (dot == std::string_view::npos) {
            return v;
        }
        path.remove_prefix(dot + 1);
    }
    return nullptr;
}

// Empty when `got` is what `cell` says.
std::string check_cell(std::string_view cell, const Upstream& got) {
    if (cell.starts_with("400 ")) {
        const std::string_view param = cell.substr(4);
        if (got.body) {
            return "expected a 400 naming '" + std::string(param) + "', got " + *got.body;
        }
        if (got.refused_param != param) {
            return "refused naming '" + got.refused_param + "', not '" + std::string(param) +
                   "': " + got.message;
        }
        // A route that cannot take the request at all (a chat to vLLM's demo server, a raw
        // prompt to Anthropic) says why in its own words; a setting is named as the client wrote
        // it.
        if (param != "messages" && param != "prompt" &&
            got.message.find(param) == std::string::npos) {
            return "the message does not name '" + std::string(param) + "': " + got.message;
        }
        return {};
    }
    if (!got.body) {
        return "refused (" + got.refused_param + "): " + got.message;
    }
    json::Document doc;
    if (auto err = json::parse(*got.body, doc)) {
        return "the upstream body is not JSON: " + *got.body;
    }
    std::string why;
    while (!cell.empty()) {
        const size_t semi = cell.find(';');
        const std::string_view item = cell.substr(0, semi);
        cell = semi == std::string_view::npos ? std::string_view() : cell.substr(semi + 1);
        if (item.starts_with("-")) {
            if (at_path(doc, item.substr(1)) != nullptr) {
                why += std::string(item.substr(1)) + " is there; ";
            }
            continue;
        }
        const size_t eq = item.find('=');
        REQUIRE_MESSAGE(eq != std::string_view::npos, "bad cell item: " << item);
        const json::Value* v = at_path(doc, item.substr(0, eq));
        json::Document want;
        REQUIRE_MESSAGE(!json::parse(item.substr(eq + 1), want), "bad cell JSON: " << item);
        if (v == nullptr) {
            why += std::string(item.substr(0, eq)) + " is missing; ";
        } else if (!(*v == want)) {
            why += std::string(item.substr(0, eq)) + " is " + json::to_string(*v) + "; ";
        }
    }
    return why.empty() ? why : why + "body: " + *got.body;
}

struct Row {
    std::string param;  // the doc's first column
    std::string body;   // the client's whole body
    std::vector<std::string> cells;
};

struct Table {
    Dialect front;
    std::string heading;
    std::vector<Row> rows;
};

// Each front's table heading in the doc, and the smallest request of that front (a row's
// fragment is merged into it).
struct Front {
    Dialect dialect;
    std::string_view heading;
    std::string_view base;
};
constexpr Front kFronts[] = {
    {Dialect::openai_completions, "OpenAI `POST /v1/completions`",
     R"({"model":"m","prompt":"hi"})"},
    {Dialect::openai_chat, "OpenAI `POST /v1/chat/completions`",
     R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"},
    {Dialect::sglang, "SGLang `POST /generate`", R"({"text":"hi"})"},
    {Dialect::tgi, "TGI `POST /generate`, `/generate_stream`, `POST /`", R"({"inputs":"hi"})"},
    {Dialect::ollama_generate, "Ollama `POST /api/generate` with `raw: true`",
     R"({"model":"m","prompt":"hi","raw":true})"},
    {Dialect::ollama_chat, "Ollama `POST /api/chat` (and `/api/generate` without `raw`)",
     R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"},
    {Dialect::llamacpp, "llama.cpp `POST /completion`", R"({"prompt":"hi"})"},
    {Dialect::vllm_legacy, "vLLM's demo server `POST /generate`", R"({"prompt":"hi"})"},
    {Dialect::anthropic, "Anthropic `POST /v1/messages`",
     R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})"},
};
constexpr std::string_view kHeader =
    "| Parameter | Client sends | vLLM | SGLang | TGI | Ollama | llama.cpp | vLLM demo | "
    "Anthropic | OpenAI API | generic |";

std::string trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') {
        s.remove_prefix(1);
    }
    while (!s.empty() && s.back() == ' ') {
        s.remove_suffix(1);
    }
    return std::string(s);
}

// The spans between backticks.
std::vector<std::string> code_spans(std::string_view s) {
    std::vector<std::string> out;
    for (size_t open = s.find('`'); open != std::string_view::npos; open = s.find('`', open)) {
        const size_t close = s.find('`', open + 1);
        REQUIRE_MESSAGE(close != std::string_view::npos, "unclosed ` in: " << std::string(s));
        out.emplace_back(s.substr(open + 1, close - open - 1));
        open = close + 1;
    }
    return out;
}

void merge(json::Value& into, json::Value& from, json::Document::AllocatorType& a) {
    for (auto& m : from.GetObject()) {
        auto it = into.FindMember(m.name);
        if (it != into.MemberEnd() && it->value.IsObject() && m.value.IsObject()) {
            merge(it->value, m.value, a);
        } else if (it != into.MemberEnd()) {
            it->value = m.value;
        } else {
            into.AddMember(m.name, m.value, a);
        }
    }
}

// A row's cells in the test's syntax: "400 <param>", or "<item>;<item>" of the code spans.
std::string cell_spec(std::string_view cell) {
    const std::vector<std::string> spans = code_spans(cell);
    REQUIRE_MESSAGE(!spans.empty(), "a cell says nothing: " << std::string(cell));
    if (cell.starts_with("400 ")) {
        return "400 " + spans.front();
    }
    std::string spec;
    for (const std::string& s : spans) {
        spec += (spec.empty() ? "" : ";") + s;
    }
    return spec;
}

std::vector<Table> tables_from_doc() {
    const std::string path = std::string(INFERGATE_FIXTURES) + "/../../docs/dialects.md";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot read " << path);
    std::vector<Table> tables;
    std::string line;
    bool in_section = false;
    Table* table = nullptr;
    int table_line = 0;  // 1: the header, 2: the separator, then rows
    while (std::getline(in, line)) {
        if (line.starts_with("## ")) {
            in_section = line == "## Parameters";
            table = nullptr;
            continue;
        }
        if (!in_section) {
            continue;
        }
        if (line.starts_with("#### ")) {
            const std::string heading = line.substr(5);
            const Front* front = nullptr;
            for (const Front& f : kFronts) {
                front = f.heading == heading ? &f : front;
            }
            REQUIRE_MESSAGE(front != nullptr, "a parameter table for no known front: " << heading);
            table = &tables.emplace_back(Table{front->dialect, heading, {}});
            table_line = 0;
            continue;
        }
        if (table == nullptr || !line.starts_with("|")) {
            if (table != nullptr && table_line > 0) {
                table = nullptr;  // the table ended
            }
            continue;
        }
        ++table_line;
        if (table_line == 1) {
            REQUIRE_MESSAGE(line == kHeader, "unexpected columns under " << table->heading);
            continue;
        }
        if (table_line == 2) {
            continue;
        }
        std::vector<std::string> cols;
        size_t from = 1;
        for (size_t bar = line.find('|', from); bar != std::string::npos;
             bar = line.find('|', from)) {
            cols.push_back(trim(std::string_view(line).substr(from, bar - from)));
            from = bar + 1;
        }
        REQUIRE_MESSAGE(cols.size() == 11, "a row without 11 columns: " << line);
        const Front* front = nullptr;
        for (const Front& f : kFronts) {
            front = f.dialect == table->front ? &f : front;
        }
        json::Document body;
        REQUIRE(!json::parse(front->base, body));
        const std::vector<std::string> fragment = code_spans(cols[1]);
        REQUIRE_MESSAGE(fragment.size() == 1, "no body fragment in: " << line);
        json::Document add;
        REQUIRE_MESSAGE(!json::parse(fragment[0], add), "bad JSON in: " << line);
        REQUIRE(add.IsObject());
        merge(body, add, body.GetAllocator());
        Row row{cols[0], json::to_string(body), {}};
        for (size_t c = 2; c < cols.size(); ++c) {
            row.cells.push_back(cell_spec(cols[c]));
        }
        table->rows.push_back(std::move(row));
    }
    return tables;
}

}  // namespace

TEST_CASE("parameters: every row of docs/dialects.md's tables reaches each engine as it says") {
    const std::vector<Table> tables = tables_from_doc();
    REQUIRE(tables.size() == std::size(kFronts));  // one table per front
    int cells = 0;
    for (const Table& t : tables) {
        CHECK_MESSAGE(t.rows.size() >= 2, t.heading);
        for (const Row& row : t.rows) {
            for (int b = 0; b < 9; ++b) {
                const std::string where = t.heading + " | " + row.param + " -> " + kBackNames[b] +
                                          "\n  client: " + row.body + "\n  want:   " + row.cells[b];
                INFO(where);
                const std::string why =
                    check_cell(row.cells[b], upstream(t.front, row.body, static_cast<Back>(b)));
                CHECK_MESSAGE(why.empty(), why);
                ++cells;
            }
        }
    }
    CHECK(cells > 1000);
    MESSAGE(cells << " cells checked");
}
