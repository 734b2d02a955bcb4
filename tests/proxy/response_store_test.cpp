#include "proxy/response_store.hpp"

#include <doctest/doctest.h>

using infergate::ResponseStore;
using infergate::translators::StoredTurn;
using namespace std::chrono_literals;

namespace {

infergate::config::ResponseStoreLimits limits(int64_t entries, int64_t bytes, int64_t age_s) {
    infergate::config::ResponseStoreLimits l;
    l.max_entries = entries;
    l.max_bytes = bytes;
    l.max_age_s = age_s;
    return l;
}

// A turn with one input item (the client's, without an id) and one output item.
StoredTurn turn(const std::string& id, const std::string& previous = "",
                const std::string& text = "x") {
    StoredTurn t;
    t.id = id;
    t.previous_id = previous;
    t.response = R"({"id":")" + id + R"("})";
    t.items.emplace_back("", R"({"role":"user","content":")" + text + R"("})");
    t.items.emplace_back("msg_" + id, R"({"id":"msg_)" + id + R"(","type":"message"})");
    t.output_from = 1;
    return t;
}

}  // namespace

TEST_CASE("ResponseStore: a turn, its input items, its items by id, its conversation") {
    ResponseStore store(limits(10, 1 << 20, 3600));
    CHECK(store.enabled());
    store.put(turn("resp_a"));
    store.put(turn("resp_b", "resp_a", "y"));
    CHECK(store.response("resp_a") == R"({"id":"resp_a"})");
    CHECK_FALSE(store.response("resp_c").has_value());
    const auto inputs = store.input_items("resp_b");
    REQUIRE(inputs.has_value());
    CHECK(*inputs == std::vector<std::string>{R"({"role":"user","content":"y"})"});
    CHECK(store.item("msg_resp_a") == R"({"id":"msg_resp_a","type":"message"})");
    CHECK_FALSE(store.item("").has_value());  // input items without an id are not indexed
    // Oldest turn first, each turn's input then output.
    const auto conv = store.conversation("resp_b");
    REQUIRE(conv.has_value());
    REQUIRE(conv->size() == 4);
    CHECK((*conv)[0] == R"({"role":"user","content":"x"})");
    CHECK((*conv)[1] == R"({"id":"msg_resp_a","type":"message"})");
    CHECK((*conv)[2] == R"({"role":"user","content":"y"})");
    // A chain with a turn gone cannot be continued.
    CHECK(store.erase("resp_a"));
    CHECK_FALSE(store.erase("resp_a"));
    CHECK_FALSE(store.conversation("resp_b").has_value());
    CHECK_FALSE(store.item("msg_resp_a").has_value());
    CHECK(store.item("msg_resp_b").has_value());
    CHECK(store.size() == 1);
}

TEST_CASE("ResponseStore: bounded by entries, oldest first") {
    ResponseStore store(limits(2, 1 << 20, 3600));
    store.put(turn("r1"));
    store.put(turn("r2"));
    store.put(turn("r3"));
    CHECK(store.size() == 2);
    CHECK_FALSE(store.response("r1").has_value());
    CHECK_FALSE(store.item("msg_r1").has_value());
    CHECK(store.response("r2").has_value());
    CHECK(store.response("r3").has_value());
}

TEST_CASE("ResponseStore: bounded by bytes; a turn bigger than the bound is not kept") {
    const StoredTurn probe = turn("r1");
    ResponseStore measure(limits(10, 1 << 20, 3600));
    measure.put(probe);
    const size_t one = measure.bytes();
    REQUIRE(one > 0);
    ResponseStore store(limits(100, static_cast<int64_t>(2 * one + one / 2), 3600));
    store.put(turn("r1"));
    store.put(turn("r2"));
    CHECK(store.size() == 2);
    store.put(turn("r3"));  // room for two: r1 goes
    CHECK(store.size() == 2);
    CHECK_FALSE(store.response("r1").has_value());
    CHECK(store.bytes() <= 2 * one + one / 2);
    store.put(turn("big", "", std::string(4 * one, 'z')));
    CHECK_FALSE(store.response("big").has_value());
    CHECK(store.size() == 2);  // and nothing was evicted for it
}

TEST_CASE("ResponseStore: bounded by age") {
    ResponseStore store(limits(10, 1 << 20, 60));
    const auto t0 = ResponseStore::Clock::now();
    store.put(turn("old"), t0 - 61s);
    store.put(turn("new"), t0);
    CHECK_FALSE(store.response("old", "", t0).has_value());
    CHECK_FALSE(store.input_items("old", "", t0).has_value());
    CHECK_FALSE(store.conversation("old").has_value());
    CHECK(store.response("new", "", t0).has_value());
    CHECK(store.response("new", "", t0 + 59s).has_value());
    CHECK_FALSE(store.response("new", "", t0 + 61s).has_value());
    store.put(turn("later"), t0 + 1s);  // the expired one is dropped on the next put
    CHECK(store.size() == 2);
}

TEST_CASE("ResponseStore: max_entries 0 keeps nothing; new limits apply at the next put") {
    ResponseStore store(limits(0, 1 << 20, 3600));
    CHECK_FALSE(store.enabled());
    store.put(turn("r1"));
    CHECK(store.size() == 0);
    store.set_limits(limits(1, 1 << 20, 3600));
    CHECK(store.enabled());
    store.put(turn("r1"));
    store.put(turn("r2"));
    CHECK(store.size() == 1);
    CHECK(store.response("r2").has_value());
}

TEST_CASE("ResponseStore: creating and deleting turns behind a long-lived one stays bounded") {
    ResponseStore store(limits(1000, 1 << 30, 3600));
    store.put(turn("keep"));
    for (int i = 0; i < 5000; ++i) {
        const std::string id = "r" + std::to_string(i);
        store.put(turn(id));
        CHECK(store.erase(id));
    }
    CHECK(store.size() == 1);
    CHECK(store.response("keep").has_value());
    // Room is counted by what is kept, not by what was deleted.
    for (int i = 0; i < 999; ++i) {
        store.put(turn("k" + std::to_string(i)));
    }
    CHECK(store.size() == 1000);
    CHECK(store.response("keep").has_value());
}

TEST_CASE("ResponseStore: a turn belongs to the client key that made it") {
    ResponseStore store(limits(10, 1 << 20, 3600));
    StoredTurn a = turn("resp_a");
    a.owner = "team-a";
    store.put(a);
    StoredTurn b = turn("resp_b", "resp_a");
    b.owner = "team-a";
    store.put(b);
    CHECK(store.response("resp_a", "team-a").has_value());
    // To another key (or to none) it does not exist: not readable, continuable or deletable.
    for (std::string_view other : {"team-b", ""}) {
        CHECK_FALSE(store.response("resp_a", other).has_value());
        CHECK_FALSE(store.input_items("resp_a", other).has_value());
        CHECK_FALSE(store.conversation("resp_b", other).has_value());
        CHECK_FALSE(store.item("msg_resp_a", other).has_value());
        CHECK_FALSE(store.erase("resp_a", other));
    }
    const ResponseStore::Scoped scoped(store, "team-a");
    const infergate::translators::ConversationLookup& lookup = scoped;
    CHECK(lookup.conversation("resp_b").has_value());
    CHECK(lookup.item("msg_resp_a").has_value());
    CHECK(store.erase("resp_a", "team-a"));
}
