#include "translators/passthrough.hpp"

#include <doctest/doctest.h>

#include <string>

using infergate::canonical::Dialect;
using infergate::canonical::GenerationRequest;
using infergate::canonical::RequestKind;
using infergate::translators::BackendFacts;
using infergate::translators::Flavor;
using infergate::translators::PassthroughEvents;
using infergate::translators::plan_generation;
using B = infergate::translators::BackendDialect;

namespace {

GenerationRequest chat(bool stream, std::string model = "m") {
    GenerationRequest req;
    req.kind = RequestKind::chat;
    req.stream = stream;
    req.model = std::move(model);
    return req;
}

}  // namespace

TEST_CASE("a fast-path stream event: edits made on one line, the usage asked for dropped") {
    const auto req = chat(true);
    // vLLM: include_usage and continuous usage asked for on the client's behalf.
    const auto plan =
        plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::vllm, "h"});
    REQUIRE(plan.ask_usage);
    REQUIRE(plan.ask_running);
    const PassthroughEvents events(plan, "alias", "chatcmpl-1");
    std::string out;
    // Spaced JSON over two data lines, with running usage: one line, model and id replaced,
    // usage gone.
    events.relay(
        "{ \"id\" : \"x\",\n \"model\" : \"served\", \"choices\": [],"
        " \"usage\": {\"completion_tokens\": 1} }",
        false, out);
    CHECK(out.starts_with("data: "));
    CHECK(out.ends_with("\n\n"));
    CHECK(out.find('\n') == out.size() - 2);
    CHECK(out.find("\"alias\"") != std::string::npos);
    CHECK(out.find("\"chatcmpl-1\"") != std::string::npos);
    CHECK(out.find("served") == std::string::npos);
    CHECK(out.find("usage") == std::string::npos);
    // The usage chunk nobody asked for: dropped whole.
    out.clear();
    events.relay("{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":3}}", true, out);
    CHECK(out.empty());
    // The terminator as the dialect writes it.
    events.relay("[DONE]", false, out);
    CHECK(out == "data: [DONE]\n\n");
}

TEST_CASE("a fast-path stream event with nothing to edit goes as it came") {
    auto req = chat(true);
    req.include_usage = true;
    const auto plan =
        plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::generic, "h"});
    REQUIRE_FALSE(plan.ask_usage);
    REQUIRE_FALSE(plan.ask_running);
    const PassthroughEvents events(plan, "", "");
    std::string out;
    const std::string data = "{\"id\" : \"x\", \"usage\": {\"prompt_tokens\": 3}}";
    events.relay(data, true, out);  // the client asked for usage: it stays
    CHECK(out == "data: " + data + "\n\n");
}

TEST_CASE("the fast path's request body: the client's bytes, edited only as the plan says") {
    auto req = chat(true, "alias");
    const auto plan =
        plan_generation(Dialect::openai_chat, req, BackendFacts{B::openai, Flavor::vllm, "h"});
    std::string client = R"({"model" : "alias", "stream": true, "messages": []})";
    const std::string body =
        infergate::translators::passthrough_request(client, req, plan, "served");
    CHECK(body.find("\"served\"") != std::string::npos);
    CHECK(body.find("\"include_usage\":true") != std::string::npos);
    CHECK(body.find("\"continuous_usage_stats\":true") != std::string::npos);
    // SGLang's /generate: as it is, whatever the names.
    GenerationRequest gen;
    gen.kind = RequestKind::completion;
    gen.model = "alias";
    const auto sglang =
        plan_generation(Dialect::sglang, gen, BackendFacts{B::sglang, Flavor::sglang, "h"});
    REQUIRE(sglang.fast_path);
    std::string raw = R"({"text": "hi", "model": "alias"})";
    CHECK(infergate::translators::passthrough_request(raw, gen, sglang, "served") ==
          R"({"text": "hi", "model": "alias"})");
}

TEST_CASE("a whole fast-path answer gets the client's model name") {
    std::string out;
    REQUIRE(infergate::translators::passthrough_rename(
        R"({"id": "x", "model": "served-2024", "choices": []})", "served", out));
    CHECK(out.find("\"served\"") != std::string::npos);
    CHECK(out.find("2024") == std::string::npos);
    out.clear();
    CHECK_FALSE(infergate::translators::passthrough_rename("not json", "served", out));
}
