// WorkerMetrics' recording and Metrics' model slots (proxy/metrics.cpp), read back through
// render().
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "proxy/metrics.hpp"
#include "tests/proxy/metrics_test_util.hpp"

using infergate::Metrics;
using infergate::RequestRecord;
using infergate::RouteLabel;
using namespace metrics_test;

TEST_CASE("model slots: configured names once, a discovered name, and one overflow slot") {
    Metrics m(test_config(), 1);
    CHECK(m.model_slots() == 5);  // m1, fast, m2, discovered, other
    CHECK(m.model_slot("m1") == 0);
    CHECK(m.model_slot("fast") == 1);
    CHECK(m.model_slot("m2") == 2);
    const int other = m.model_slot("gpt-4-typed-by-a-client");
    CHECK(other == 4);
    CHECK(m.model_slot("other") == other);
    CHECK(m.model_slot("") == 0);  // no model named: the backend's configured model

    m.set_discovered_model("m1");  // already configured: no slot needed
    CHECK(m.model_slot("served") == other);
    m.set_discovered_model("served");
    CHECK(m.model_slot("served") == 3);
    m.set_discovered_model("later");  // the first call wins
    CHECK(m.model_slot("later") == other);
    CHECK(m.model_slot("served") == 3);
}

TEST_CASE(
    "model slots: a backend without a configured model counts nameless requests under the "
    "discovered one") {
    infergate::config::Config c;
    c.backends.emplace_back();
    Metrics m(c, 1);
    CHECK(m.model_slots() == 2);
    CHECK(m.model_slot("") == 1);  // "other" until the probe knows
    m.set_discovered_model("served");
    CHECK(m.model_slot("") == 0);
    CHECK(m.model_slot("served") == 0);
}

TEST_CASE(
    "inter-token latency: a chunk's gap is divided over its tokens; 20 ms and 200 ms land "
    "in distinguishable buckets") {
    Metrics m(test_config(), 1);
    auto& w = m.worker(0);
    const int m1 = m.model_slot("m1");
    w.observe_chunk(RouteLabel::openai_chat, m1, 0.06, 3);  // three tokens of 20 ms
    w.observe_chunk(RouteLabel::openai_chat, m1, 0.0165, 1);
    w.observe_chunk(RouteLabel::openai_chat, m1, 0.024, 0);  // no count: still one token

    RequestRecord r;
    r.route = RouteLabel::openai_chat;
    r.model_slot = m1;
    r.ttft_seconds = 0.2;
    w.request_finished(r);
    r.ttft_seconds = 0.16;
    w.request_finished(r);
    r.ttft_seconds = 0.24;
    w.request_finished(r);

    const std::string text = m.render();
    check_exposition(text);
    const std::string itl = "infergate_inter_token_latency_seconds";
    CHECK(has_line(text, itl + "_count{" + kChatM1 + "} 5"));
    CHECK(has_line(text, itl + "_bucket{" + kChatM1 + ",le=\"0.015\"} 0"));
    CHECK(has_line(text, itl + "_bucket{" + kChatM1 + ",le=\"0.0175\"} 1"));
    CHECK(has_line(text, itl + "_bucket{" + kChatM1 + ",le=\"0.02\"} 4"));
    CHECK(has_line(text, itl + "_bucket{" + kChatM1 + ",le=\"0.0225\"} 4"));
    CHECK(has_line(text, itl + "_bucket{" + kChatM1 + ",le=\"0.025\"} 5"));

    const std::string chunk = "gen_ai_client_operation_time_per_output_chunk_seconds";
    CHECK(has_line(text, chunk + "_count{" + kGenAiChatM1 + "} 3"));
    CHECK(has_line(text, chunk + "_bucket{" + kGenAiChatM1 + ",le=\"0.05\"} 2"));
    CHECK(has_line(text, chunk + "_bucket{" + kGenAiChatM1 + ",le=\"0.06\"} 3"));

    const std::string ttft = "gen_ai_client_operation_time_to_first_chunk_seconds";
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.15\"} 0"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.2\"} 2"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.25\"} 3"));
}

TEST_CASE("histograms ignore non-finite values and clamp negative ones to zero") {
    Metrics m(test_config(), 1);
    RequestRecord r;
    r.model_slot = m.model_slot("m1");
    r.e2e_seconds = std::nan("");
    r.ttft_seconds = -1;
    r.overhead_seconds = std::numeric_limits<double>::infinity();
    m.worker(0).request_finished(r);
    const std::string text = m.render();
    check_exposition(text);
    CHECK(text.find("gen_ai_client_operation_duration_seconds_count") == std::string::npos);
    CHECK(text.find("infergate_overhead_seconds_count") == std::string::npos);
    CHECK(has_line(text, R"(gen_ai_client_operation_time_to_first_chunk_seconds_sum{)"
                         R"(gen_ai_operation_name="text_completion",gen_ai_request_model="m1",)"
                         R"(route="openai_completions",backend="b0"} 0)"));
}

TEST_CASE("concurrent writers and scrapes: exact totals, in-flight never negative") {
    Metrics m(test_config(), 2);
    constexpr int kRequests = 20000;
    std::atomic<bool> scraping{false};
    std::atomic<bool> done{false};
    int scrapes = 0;
    bool negative = false;
    std::thread scraper([&] {
        do {
            scraping = true;
            const std::string text = m.render();
            negative = negative || text.find("infergate_requests_in_flight -") != std::string::npos;
            ++scrapes;
        } while (!done.load());
    });
    while (!scraping.load()) {
        std::this_thread::yield();  // let the scrapes overlap the writes
    }
    std::vector<std::thread> writers;
    writers.reserve(2);
    for (int i = 0; i < 2; ++i) {
        writers.emplace_back([&m, i] {
            auto& w = m.worker(i);
            RequestRecord r;
            r.model_slot = 0;
            r.e2e_seconds = 0.01;
            r.completion_tokens = 2;
            for (int n = 0; n < kRequests; ++n) {
                w.request_started();
                w.observe_chunk(RouteLabel::openai_completions, 0, 0.02, 2);
                w.request_finished(r);
            }
        });
    }
    std::thread discover([&m] { m.set_discovered_model("served"); });
    for (auto& t : writers) {
        t.join();
    }
    discover.join();
    done = true;
    scraper.join();
    CHECK_FALSE(negative);
    CHECK(scrapes > 0);
    const std::string text = m.render();
    check_exposition(text);
    CHECK(has_line(text,
                   R"(infergate_requests_total{route="openai_completions",backend="b0",model="m1",)"
                   R"(outcome="ok",status_class="2xx"} 40000)"));
    CHECK(has_line(text,
                   R"(infergate_completion_tokens_total{route="openai_completions",backend="b0",)"
                   R"(model="m1"} 80000)"));
    CHECK(has_line(
        text,
        R"(infergate_inter_token_latency_seconds_count{route="openai_completions",backend="b0",)"
        R"(model="m1"} 80000)"));
    CHECK(has_line(text, "infergate_requests_in_flight 0"));
    CHECK(m.model_slot("served") == 3);
}

TEST_CASE("embeddings count input tokens only; the tokenizer's routes count none") {
    Metrics m(test_config(), 1);
    auto& w = m.worker(0);
    const int m1 = m.model_slot("m1");
    RequestRecord embed;
    embed.route = RouteLabel::openai_embeddings;
    embed.model_slot = m1;
    embed.input_tokens = true;
    embed.output_tokens = false;
    embed.prompt_tokens = 12;
    w.request_started();
    w.request_finished(embed);
    RequestRecord no_count = embed;  // a backend that reports no count (llama.cpp's own route)
    no_count.prompt_tokens.reset();
    w.request_started();
    w.request_finished(no_count);
    RequestRecord tokenize;
    tokenize.route = RouteLabel::tokenize;
    tokenize.model_slot = m1;
    tokenize.input_tokens = false;
    tokenize.output_tokens = false;
    w.request_started();
    w.request_finished(tokenize);

    const std::string text = m.render();
    check_exposition(text);
    const std::string e = R"(route="openai_embeddings",backend="b0",model="m1")";
    CHECK(has_line(text, "infergate_prompt_tokens_total{" + e + "} 12"));
    CHECK(has_line(
        text, R"(infergate_requests_tokens_unknown_total{)" + e + R"(,token_type="input"} 1)"));
    CHECK(text.find(R"(infergate_requests_tokens_unknown_total{)" + e +
                    R"(,token_type="output"})") == std::string::npos);
    CHECK(text.find(R"(infergate_requests_tokens_unknown_total{route="tokenize")") ==
          std::string::npos);
    CHECK(has_line(
        text,
        R"(gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="embeddings",gen_ai_request_model="m1",route="openai_embeddings",backend="b0"} 2)"));
    CHECK(has_line(
        text,
        R"(infergate_requests_total{route="tokenize",backend="b0",model="m1",outcome="ok",status_class="2xx"} 1)"));
}
