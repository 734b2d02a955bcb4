// Routing (proxy/routing.*, proxy/prefix_index.*): model lookup, balancing, prefix affinity,
// ejection, the retry budget.
#include "proxy/routing.hpp"

#include <doctest/doctest.h>

#include <map>

#include "translators/canonical/types.hpp"

using namespace infergate;

namespace {

BackendView view(const std::string& name, std::vector<std::string> models, int replicas,
                 int weight = 1, bool ready = true) {
    static uint64_t next_id = 1;
    BackendView v;
    v.config.name = name;
    v.config.weight = weight;
    v.info.ready = ready;
    v.info.models = models;
    v.info.served_model = models.empty() ? "" : models.front();
    for (int i = 0; i < replicas; ++i) {
        v.replicas.push_back(
            std::make_shared<Replica>(next_id++, name + std::to_string(i), std::nullopt));
    }
    v.counters = std::make_shared<BackendCounters>(name);
    return v;
}

config::Config routing_config(config::Balance balance = config::Balance::least_outstanding) {
    config::Config c;
    c.routing.balance = balance;
    c.routing.prefix_block_bytes = 16;
    c.routing.prefix_min_match_bytes = 32;
    return c;
}

std::shared_ptr<RoutingShared> shared_state() {
    return std::make_shared<RoutingShared>(PrefixIndex::Options{16, 1000});
}

}  // namespace

TEST_CASE("find: models, aliases, the default model and Ollama's :latest") {
    config::Config c = routing_config();
    c.aliases.push_back({"fast", "llama3.2:latest"});
    RoutingTable t({view("a", {"qwen", "llama3.2:latest"}, 2), view("b", {"qwen"}, 1)}, c,
                   shared_state());
    std::string upstream;
    const auto* qwen = t.find("qwen", upstream);
    REQUIRE(qwen != nullptr);
    CHECK(upstream == "qwen");
    CHECK(qwen->members.size() == 3);     // both backends' replicas
    CHECK(t.find("", upstream) == qwen);  // the first backend's first model is the default
    CHECK(t.find("fast", upstream) != nullptr);
    CHECK(upstream == "llama3.2:latest");
    CHECK(t.find("llama3.2", upstream) != nullptr);
    CHECK(t.find("qwen:latest", upstream) == qwen);
    CHECK(t.find("qwen2", upstream) == nullptr);
    CHECK(t.model_names() == std::vector<std::string>{"qwen", "llama3.2:latest", "fast"});
}

TEST_CASE("a backend not identified yet serves nothing, and says so") {
    RoutingTable t({view("a", {"m"}, 1), view("b", {}, 1, 1, false)}, routing_config(),
                   shared_state());
    std::string upstream;
    CHECK(t.find("m", upstream) != nullptr);
    CHECK(t.find("x", upstream) == nullptr);
    CHECK(t.any_unready());
}

TEST_CASE("least outstanding: idle replicas take turns; a busy one is avoided") {
    RoutingTable t({view("a", {"m"}, 3)}, routing_config(), shared_state());
    std::string upstream;
    const auto& pool = *t.find("m", upstream);
    std::mt19937_64 rng(1);
    std::map<uint64_t, int> count;
    for (int i = 0; i < 300; ++i) {
        ++count[t.choose(pool, {}, {}, nullptr, rng)->replica->id];
    }
    REQUIRE(count.size() == 3);
    for (const auto& [id, n] : count) {
        CHECK(n >= 90);  // 100 each but for the two-choice sampling
        CHECK(n <= 110);
    }
    pool.members[0].replica->outstanding = 5;
    for (int i = 0; i < 50; ++i) {
        CHECK(t.choose(pool, {}, {}, nullptr, rng)->replica != pool.members[0].replica);
    }
}

TEST_CASE("weights: a member of weight 3 gets three times the requests") {
    RoutingTable t({view("a", {"m"}, 1, 3), view("b", {"m"}, 1, 1)}, routing_config(),
                   shared_state());
    std::string upstream;
    const auto& pool = *t.find("m", upstream);
    std::mt19937_64 rng(2);
    int heavy = 0;
    for (int i = 0; i < 400; ++i) {
        heavy += t.choose(pool, {}, {}, nullptr, rng)->backend == 0 ? 1 : 0;
    }
    CHECK(heavy >= 270);
    CHECK(heavy <= 330);
}

TEST_CASE("ejected and unhealthy replicas are skipped, unless nothing else is left") {
    RoutingTable t({view("a", {"m"}, 2)}, routing_config(), shared_state());
    std::string upstream;
    const auto& pool = *t.find("m", upstream);
    std::mt19937_64 rng(3);
    Replica& r0 = *pool.members[0].replica;
    Replica& r1 = *pool.members[1].replica;
    config::Routing r;
    r.consecutive_failures = 2;
    r.ejection_ms = 1000;
    r.max_ejection_ms = 4000;
    const SteadyNs now = steady_now_ns();
    CHECK_FALSE(r0.failed(r, now));
    CHECK(r0.failed(r, now));  // the second in a row ejects
    CHECK(r0.ejected(now + 999'000'000));
    CHECK_FALSE(r0.ejected(now + 1'001'000'000));
    for (int i = 0; i < 20; ++i) {
        CHECK(t.choose(pool, {}, {}, nullptr, rng)->replica == &r1);
    }
    r1.healthy = false;  // both out: both tried anyway (panic mode), never a refusal
    CHECK(t.choose(pool, {}, {}, nullptr, rng) != nullptr);
    // The next ejection in a row lasts twice as long, up to the maximum.
    r0.ejected_until = 0;
    CHECK_FALSE(r0.failed(r, now));
    CHECK(r0.failed(r, now));
    CHECK(r0.ejected(now + 1'999'000'000));
}

TEST_CASE("failover skips the replicas tried, and keeps the first pick's dialect") {
    auto a = view("a", {"m"}, 2);
    auto b = view("b", {"m"}, 1);
    b.info.dialect = config::BackendDialect::ollama;
    RoutingTable t({a, b}, routing_config(), shared_state());
    std::string upstream;
    const auto& pool = *t.find("m", upstream);
    std::mt19937_64 rng(4);
    const PoolMember& first = pool.members[0];
    const std::vector<uint64_t> tried{first.replica->id};
    for (int i = 0; i < 20; ++i) {
        const PoolMember* next = t.choose(pool, {}, tried, &first, rng);
        REQUIRE(next != nullptr);
        CHECK(next->replica == pool.members[1].replica);  // not the Ollama backend
    }
    const std::vector<uint64_t> both{pool.members[0].replica->id, pool.members[1].replica->id};
    CHECK(t.choose(pool, {}, both, &first, rng) == nullptr);
}

TEST_CASE("prefix affinity: a shared prefix goes back where it went, unless that one is busy") {
    config::Config c = routing_config(config::Balance::prefix);
    c.routing.max_imbalance = 2;
    RoutingTable t({view("a", {"m"}, 4)}, c, shared_state());
    std::string upstream;
    const auto& pool = *t.find("m", upstream);
    std::mt19937_64 rng(5);
    const std::string system(200, 's');
    const PoolMember* home = t.choose(pool, system + "user one", {}, nullptr, rng);
    for (int i = 0; i < 20; ++i) {
        CHECK(t.choose(pool, system + "user " + std::to_string(i), {}, nullptr, rng) == home);
    }
    // Too short a shared prefix (below min_match_bytes) is no reason.
    std::map<const PoolMember*, int> spread;
    for (int i = 0; i < 40; ++i) {
        ++spread[t.choose(pool, std::to_string(i) + std::string(20, 'x'), {}, nullptr, rng)];
    }
    CHECK(spread.size() >= 3);  // the home replica, picked 21 times, waits its turn
    // Within max_imbalance of the least loaded: affinity holds.
    home->replica->outstanding = 2;
    CHECK(t.choose(pool, system + "user ok", {}, nullptr, rng) == home);
    // Busier than the least loaded by more than max_imbalance: load wins, and the new replica
    // holds the prefix too from then on.
    home->replica->outstanding = 3;
    const PoolMember* other = t.choose(pool, system + "user busy", {}, nullptr, rng);
    CHECK(other != home);
    home->replica->outstanding = 1;
    CHECK(t.choose(pool, system + "user again", {}, nullptr, rng) == other);  // less loaded
}

TEST_CASE("prefix index: chains, replicas per block, LRU bound") {
    PrefixIndex index({4, 8});
    const std::vector<uint64_t> both{1, 2};
    index.insert("aaaabbbbcccc", 1);
    CHECK(index.match("aaaabbbbcccc", both).replica == 1);
    CHECK(index.match("aaaabbbbcccc", both).bytes == 12);
    CHECK(index.match("aaaabbbbzzzz", both).bytes == 8);
    CHECK(index.match("zaaabbbbcccc", both).bytes == 0);  // a chain: block 0 differs
    index.insert("aaaabbbbdddd", 2);
    const auto m = index.match("aaaabbbbdddd", both);
    CHECK(m.replica == 2);
    CHECK(m.bytes == 12);
    CHECK(index.blocks() == 4);
    for (int i = 0; i < 10; ++i) {
        index.insert(std::string(4, static_cast<char>('k' + i)), 1);
    }
    CHECK(index.blocks() == 8);                           // bounded
    CHECK(index.match("aaaabbbbcccc", both).bytes == 0);  // evicted, oldest first
}

TEST_CASE("the prefix key of a chat is its messages in order") {
    canonical::GenerationRequest a;
    a.messages.push_back({.role = "system", .content = "You are helpful."});
    a.messages.push_back({.role = "user", .content = "one"});
    canonical::GenerationRequest b = a;
    b.messages.back().content = "two";
    const std::string ka = prefix_key(a);
    const std::string kb = prefix_key(b);
    CHECK(ka.starts_with(std::string("system") + '\0' + "You are helpful."));
    CHECK(ka.substr(0, ka.size() - 4) == kb.substr(0, kb.size() - 4));
    canonical::GenerationRequest p;
    p.prompts.push_back({.text = "plain prompt"});
    CHECK(prefix_key(p) == "plain prompt");
}

TEST_CASE("the retry budget: a share of requests in flight, at least budget_min") {
    RoutingShared s({16, 10});
    config::Routing r;
    r.budget_percent = 20;
    r.budget_min = 3;
    s.in_flight = 10;
    s.retrying = 2;
    CHECK(retry_allowed(s, r));
    s.retrying = 3;
    CHECK_FALSE(retry_allowed(s, r));
    s.in_flight = 100;
    CHECK(retry_allowed(s, r));
    s.retrying = 20;
    CHECK_FALSE(retry_allowed(s, r));
}
