// Metrics::render(): the exact text exposition, its escaping, its documentation (docs/metrics.md,
// the Grafana dashboard) and its cost (proxy/metrics_render.cpp).
#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>

#include <rapidjson/document.h>

#include "proxy/metrics.hpp"
#include "proxy/routing.hpp"
#include "proxy/version.hpp"
#include "tests/proxy/metrics_test_util.hpp"

using infergate::FinishLabel;
using infergate::Metrics;
using infergate::OutcomeLabel;
using infergate::RequestRecord;
using infergate::RouteLabel;
using infergate::UpstreamErrorKind;
using namespace metrics_test;

TEST_CASE("render: exact series after known observations") {
    Metrics m(test_config(), 2);
    auto& w0 = m.worker(0);
    auto& w1 = m.worker(1);

    RequestRecord r;
    r.route = RouteLabel::openai_chat;
    r.model_slot = m.model_slot("m1");
    r.streamed = true;
    r.prompt_tokens = 10;
    r.completion_tokens = 4;
    r.cached_tokens = 8;
    r.overhead_seconds = 3e-6;

    // Three ok requests across two workers with TTFTs 0.125 s, 0.5 s and 2000 s.
    w0.request_started();
    r.e2e_seconds = 1;
    r.ttft_seconds = 0.125;
    r.tpot_seconds = 0.02;
    w0.request_finished(r);
    w1.request_started();
    r.ttft_seconds = 0.5;
    r.tpot_seconds = 0.03;
    w1.request_finished(r);
    w0.request_started();
    r.e2e_seconds = 3000;
    r.ttft_seconds = 2000;
    r.tpot_seconds = std::nullopt;
    w0.request_finished(r);

    // One answered request whose backend reported no usage, for a model nobody configured.
    RequestRecord unknown;
    unknown.route = RouteLabel::openai_completions;
    unknown.model_slot = m.model_slot("typo-model");
    unknown.e2e_seconds = 0.5;
    w1.request_started();
    w1.request_finished(unknown);

    // A rejected request (no answer: not counted as tokens-unknown) and one still in flight.
    RequestRecord rejected = unknown;
    rejected.outcome = OutcomeLabel::rejected;
    rejected.status = 400;
    w1.request_started();
    w1.request_finished(rejected);
    w0.request_started();

    // The backend's served model, discovered later.
    m.set_discovered_model("served");
    RequestRecord served;
    served.route = RouteLabel::sglang_generate;
    served.model_slot = m.model_slot("served");
    served.outcome = OutcomeLabel::client_disconnect;
    served.status = 0;
    served.e2e_seconds = 2;
    w1.request_started();
    w1.request_finished(served);

    w0.upstream_error(UpstreamErrorKind::reset);
    w1.upstream_error(UpstreamErrorKind::reset);

    const std::string text = m.render();
    INFO(text);
    check_exposition(text);

    CHECK(has_line(text, std::string("infergate_build_info{version=\"") + infergate::kVersion +
                             "\",commit=\"" + infergate::kGitCommit + "\"} 1"));
    // Counter summed across both workers.
    CHECK(has_line(
        text, "infergate_requests_total{" + kChatM1 + ",outcome=\"ok\",status_class=\"2xx\"} 3"));
    CHECK(has_line(
        text, R"(infergate_requests_total{route="openai_completions",backend="b0",model="other",)"
              R"(outcome="ok",status_class="2xx"} 1)"));
    CHECK(has_line(
        text, R"(infergate_requests_total{route="openai_completions",backend="b0",model="other",)"
              R"(outcome="rejected",status_class="4xx"} 1)"));
    CHECK(has_line(
        text, R"(infergate_requests_total{route="sglang_generate",backend="b0",model="served",)"
              R"(outcome="client_disconnect",status_class="none"} 1)"));
    CHECK(has_line(text, "infergate_requests_in_flight 1"));

    // TTFT: cumulative buckets, _sum and _count; 2000 s is past the last bound (1200 s).
    const std::string ttft = "gen_ai_client_operation_time_to_first_chunk_seconds";
    CHECK(has_line(text, ttft + "_count{" + kGenAiChatM1 + "} 3"));
    CHECK(has_line(text, ttft + "_sum{" + kGenAiChatM1 + "} 2000.625"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.1\"} 0"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.15\"} 1"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.4\"} 1"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"0.5\"} 2"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"640\"} 2"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"1200\"} 2"));
    CHECK(has_line(text, ttft + "_bucket{" + kGenAiChatM1 + ",le=\"+Inf\"} 3"));

    const std::string e2e = "gen_ai_client_operation_duration_seconds";
    CHECK(has_line(text, e2e + "_count{" + kGenAiChatM1 + "} 3"));
    CHECK(has_line(text, e2e + "_sum{" + kGenAiChatM1 + "} 3002"));
    CHECK(has_line(text, e2e + "_bucket{" + kGenAiChatM1 + ",le=\"1\"} 2"));
    CHECK(has_line(text, e2e + "_bucket{" + kGenAiChatM1 + ",le=\"3600\"} 3"));

    const std::string tpot = "infergate_time_per_output_token_seconds";
    CHECK(has_line(text, tpot + "_count{" + kChatM1 + "} 2"));
    CHECK(has_line(text, tpot + "_bucket{" + kChatM1 + ",le=\"0.0175\"} 0"));
    CHECK(has_line(text, tpot + "_bucket{" + kChatM1 + ",le=\"0.02\"} 1"));
    CHECK(has_line(text, tpot + "_bucket{" + kChatM1 + ",le=\"0.03\"} 2"));

    // Tokens: counters summed, per-request histograms with the OTel buckets.
    CHECK(has_line(text, "infergate_prompt_tokens_total{" + kChatM1 + "} 30"));
    CHECK(has_line(text, "infergate_completion_tokens_total{" + kChatM1 + "} 12"));
    CHECK(has_line(text, "infergate_cached_prompt_tokens_total{" + kChatM1 + "} 24"));
    const std::string usage = "gen_ai_client_token_usage";
    CHECK(has_line(text, usage + "_count{" + kGenAiChatM1 + ",gen_ai_token_type=\"input\"} 3"));
    CHECK(has_line(text, usage + "_sum{" + kGenAiChatM1 + ",gen_ai_token_type=\"input\"} 30"));
    CHECK(has_line(
        text, usage + "_bucket{" + kGenAiChatM1 + ",gen_ai_token_type=\"output\",le=\"1\"} 0"));
    CHECK(has_line(
        text, usage + "_bucket{" + kGenAiChatM1 + ",gen_ai_token_type=\"output\",le=\"4\"} 3"));
    CHECK(has_line(text, usage + "_bucket{" + kGenAiChatM1 +
                             ",gen_ai_token_type=\"input\",le=\"67108864\"} 3"));

    // Tokens unknown: the answered request without usage, not the rejected one, not the
    // client that left before any status.
    CHECK(has_line(
        text, R"(infergate_requests_tokens_unknown_total{route="openai_completions",backend="b0",)"
              R"(model="other",token_type="output"} 1)"));
    CHECK(has_line(
        text, R"(infergate_requests_tokens_unknown_total{route="openai_completions",backend="b0",)"
              R"(model="other",token_type="input"} 1)"));
    CHECK(text.find("infergate_requests_tokens_unknown_total{route=\"sglang_generate\"") ==
          std::string::npos);

    CHECK(has_line(text, R"(infergate_upstream_errors_total{backend="b0",kind="reset"} 2)"));
    CHECK(has_line(text, R"(infergate_upstream_errors_total{backend="b0",kind="connect"} 0)"));
    CHECK(has_line(
        text,
        R"(infergate_overhead_seconds_bucket{route="openai_chat",backend="b0",le="2.5e-06"} 0)"));
    CHECK(has_line(
        text,
        R"(infergate_overhead_seconds_bucket{route="openai_chat",backend="b0",le="5e-06"} 3)"));

    // Nothing was observed for them: no series, only HELP and TYPE.
    CHECK(text.find("infergate_inter_token_latency_seconds_count") == std::string::npos);
    CHECK(text.find("model=\"fast\"") == std::string::npos);
}

TEST_CASE("render: before discovery the discovered slot has no series") {
    Metrics m(test_config(), 1);
    RequestRecord r;
    r.model_slot = 3;  // a caller bug: the discovered slot before discovery
    m.worker(0).request_started();
    m.worker(0).request_finished(r);
    const std::string text = m.render();
    check_exposition(text);
    CHECK(text.find("model=\"\"") == std::string::npos);
    CHECK(has_line(text, "infergate_requests_in_flight 0"));
}

TEST_CASE("label values from the config are escaped") {
    infergate::config::Config c = test_config();
    c.backends[0].model = "org/we\"ird\\name";
    Metrics m(c, 1);
    RequestRecord r;
    r.model_slot = m.model_slot("org/we\"ird\\name");
    CHECK(r.model_slot == 0);
    m.worker(0).request_finished(r);
    const std::string text = m.render();
    check_exposition(text);
    CHECK(text.find(R"(model="org/we\"ird\\name")") != std::string::npos);
}

namespace {

// A routing table of two backends: "b0" (two replicas, one ejected) and "b1" (not identified).
std::shared_ptr<const infergate::RoutingTable> two_backends(const infergate::config::Config& c) {
    using namespace infergate;
    std::vector<BackendView> views(2);
    views[0].config.name = "b0";
    views[0].info.ready = true;
    views[0].info.models = {"m1"};
    views[1].config.name = "b1";
    for (uint64_t id : {1, 2}) {
        views[0].replicas.push_back(std::make_shared<Replica>(id, "r", std::nullopt));
    }
    views[1].replicas.push_back(std::make_shared<Replica>(3, "r", std::nullopt));
    views[0].replicas[1]->ejected_until = steady_now_ns() + 60'000'000'000;
    views[0].replicas[0]->outstanding = 2;
    for (auto& v : views) {
        v.counters = std::make_shared<BackendCounters>(v.config.name);
    }
    views[0].counters->requests = 7;
    views[0].counters->retries = 1;
    views[0].counters->observe_latency(0.02);
    return std::make_shared<RoutingTable>(
        std::move(views), c, std::make_shared<RoutingShared>(PrefixIndex::Options{}));
}

}  // namespace

TEST_CASE("the backend families, from the routing table") {
    Metrics m(test_config(), 1);
    m.set_routing(two_backends(test_config()));
    const std::string text = m.render();
    check_exposition(text);
    CHECK(has_line(text, R"(infergate_backend_up{backend="b0"} 1)"));
    CHECK(has_line(text, R"(infergate_backend_up{backend="b1"} 0)"));
    CHECK(has_line(text, R"(infergate_backend_replicas{backend="b0",state="available"} 1)"));
    CHECK(has_line(text, R"(infergate_backend_replicas{backend="b0",state="ejected"} 1)"));
    CHECK(has_line(text, R"(infergate_backend_requests_in_flight{backend="b0"} 2)"));
    CHECK(has_line(text, R"(infergate_backend_requests_total{backend="b0"} 7)"));
    CHECK(has_line(text, R"(infergate_backend_retries_total{backend="b0"} 1)"));
    CHECK(has_line(text, R"(infergate_backend_first_byte_seconds_bucket{backend="b0",le="0.025"} 1)"));
    CHECK(has_line(text, R"(infergate_backend_first_byte_seconds_bucket{backend="b0",le="0.01"} 0)"));
    CHECK(has_line(text, R"(infergate_backend_first_byte_seconds_count{backend="b0"} 1)"));
}

TEST_CASE("docs/metrics.md documents every metric family") {
    const std::string doc = read_repo_file("docs/metrics.md");
    Metrics m(test_config(), 1);
    m.set_routing(two_backends(test_config()));
    const std::set<std::string> families = family_names(m.render());
    CHECK(families.size() == 29);
    for (const std::string& name : families) {
        CHECK_MESSAGE(doc.find("| `" + name + "` |") != std::string::npos,
                      name << " is not in the table of docs/metrics.md");
    }
}

TEST_CASE("the Grafana dashboard runs exactly the documented queries, on metrics that exist") {
    const std::string doc = read_repo_file("docs/metrics.md");
    std::set<std::string> documented;
    for (size_t at = doc.find("```promql\n"); at != std::string::npos;
         at = doc.find("```promql\n", at + 1)) {
        const size_t start = at + 10;
        documented.insert(doc.substr(start, doc.find("\n```", start) - start));
    }
    REQUIRE(documented.size() >= 8);

    const std::string json = read_repo_file("docker/grafana-dashboard.json");
    rapidjson::Document d;
    d.Parse(json.c_str(), json.size());
    REQUIRE_FALSE(d.HasParseError());
    CHECK(d["schemaVersion"].GetInt() >= 39);
    CHECK(std::string(d["templating"]["list"][0]["type"].GetString()) == "datasource");
    std::set<std::string> used;
    for (const auto& panel : d["panels"].GetArray()) {
        CHECK(std::string(panel["datasource"]["uid"].GetString()) == "${datasource}");
        for (const auto& target : panel["targets"].GetArray()) {
            used.insert(target["expr"].GetString());
        }
    }
    CHECK(used == documented);

    // Every metric a query names is one render() writes (histograms through their _bucket).
    Metrics m(test_config(), 1);
    const std::set<std::string> families = family_names(m.render());
    for (const std::string& q : documented) {
        for (size_t i = 0; i < q.size();) {
            if (q.compare(i, 10, "infergate_") != 0 && q.compare(i, 7, "gen_ai_") != 0) {
                ++i;
                continue;
            }
            size_t end = i;
            while (end < q.size() &&
                   (std::isalnum(static_cast<unsigned char>(q[end])) != 0 || q[end] == '_')) {
                ++end;
            }
            std::string name = q.substr(i, end - i);
            if (name.starts_with("gen_ai_request_model") || name.starts_with("gen_ai_token_type")) {
                i = end;
                continue;  // a label, not a metric
            }
            if (name.ends_with("_bucket")) {
                name.resize(name.size() - 7);
            }
            CHECK_MESSAGE(families.count(name) == 1, name << " in " << q);
            i = end;
        }
    }
}

TEST_CASE("render time with every series populated (8 workers)") {
    // Eight configured model names: 8 + discovered + other = 10 model slots.
    infergate::config::Config c = test_config();
    c.aliases.clear();
    for (int i = 0; i < 7; ++i) {
        c.aliases.push_back({"alias-" + std::to_string(i), "m1"});
    }
    constexpr int kWorkers = 8;
    Metrics m(c, kWorkers);
    m.set_discovered_model("served");
    REQUIRE(m.model_slots() == 10);
    for (int w = 0; w < kWorkers; ++w) {
        auto& wm = m.worker(w);
        for (int route = 0; route < static_cast<int>(RouteLabel::kCount); ++route) {
            for (int slot = 0; slot < static_cast<int>(m.model_slots()); ++slot) {
                for (int o = 0; o < static_cast<int>(OutcomeLabel::kCount); ++o) {
                    for (int status : {200, 302, 400, 502, 0}) {
                        RequestRecord r;
                        r.route = static_cast<RouteLabel>(route);
                        r.model_slot = slot;
                        r.outcome = static_cast<OutcomeLabel>(o);
                        r.finish = static_cast<FinishLabel>((o + status) %
                                                            static_cast<int>(FinishLabel::kCount));
                        r.status = status;
                        r.e2e_seconds = 1.5;
                        r.ttft_seconds = 0.2;
                        r.tpot_seconds = 0.02;
                        r.prompt_tokens = 100;
                        r.completion_tokens = 50;
                        r.cached_tokens = 64;
                        r.upstream_connect_seconds = 0.001;
                        r.upstream_first_byte_seconds = 0.1;
                        r.overhead_seconds = 2e-5;
                        wm.request_started();
                        wm.request_finished(r);
                    }
                }
                wm.observe_chunk(static_cast<RouteLabel>(route), slot, 0.02, 1);
                RequestRecord unknown;
                unknown.route = static_cast<RouteLabel>(route);
                unknown.model_slot = slot;
                wm.request_finished(unknown);
            }
        }
    }
    std::string text = m.render();
    check_exposition(text);
    constexpr int kRenders = 20;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRenders; ++i) {
        text = m.render();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count() /
        kRenders;
    const auto lines = lines_of(text).size();
    MESSAGE("render(): " << ms << " ms for " << lines << " lines, " << text.size() / 1024
                         << " KiB (8 workers, 10 model slots, every series populated)");
    CHECK(ms < 1000);  // generous: a sanity bound, not a benchmark
}
