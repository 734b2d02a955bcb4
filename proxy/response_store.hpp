#pragma once
// The Responses API's answered turns (previous_response_id, item_reference, GET and DELETE
// /v1/responses/{id}): one store per infergate process, shared by the workers under a mutex
// (only Responses requests that store or continue a turn take it), bounded by count, bytes and
// age (config responses.store; docs/dialects.md, "Responses API"). It keeps strings: what a
// turn is, the Responses codec says (translators::StoredTurn). A turn belongs to the client key
// that made it (StoredTurn::owner): to another key it does not exist.

#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "translators/conversation.hpp"

namespace infergate {

class ResponseStore {
public:
    using Clock = std::chrono::steady_clock;

    explicit ResponseStore(const config::ResponseStoreLimits& limits) : limits_(limits) {}

    // A reload's new limits (applied at the next put).
    void set_limits(const config::ResponseStoreLimits& limits);
    bool enabled() const;

    // Keeps `turn`, evicting the oldest turns past the limits; a turn bigger than max_bytes is
    // not kept.
    void put(translators::StoredTurn turn, Clock::time_point now = Clock::now());
    // The response object of `owner`'s turn `id`, or nullopt.
    std::optional<std::string> response(std::string_view id, std::string_view owner = {},
                                        Clock::time_point now = Clock::now()) const;
    // Turn `id`'s input items (compact JSON), or nullopt.
    std::optional<std::vector<std::string>> input_items(std::string_view id,
                                                        std::string_view owner = {},
                                                        Clock::time_point now = Clock::now()) const;
    // Forgets turn `id` (later turns that continue it can no longer be continued). False when
    // `owner` has no such turn.
    bool erase(std::string_view id, std::string_view owner = {});

    // What translators::ConversationLookup asks, for `owner`'s turns.
    std::optional<std::vector<std::string>> conversation(std::string_view id,
                                                         std::string_view owner = {}) const;
    std::optional<std::string> item(std::string_view id, std::string_view owner = {}) const;

    // The store as one client key sees it (what a Responses decoder is given).
    class Scoped final : public translators::ConversationLookup {
    public:
        Scoped(const ResponseStore& store, std::string_view owner)
            : store_(store), owner_(owner) {}
        std::optional<std::vector<std::string>> conversation(std::string_view id) const override {
            return store_.conversation(id, owner_);
        }
        std::optional<std::string> item(std::string_view id) const override {
            return store_.item(id, owner_);
        }

    private:
        const ResponseStore& store_;
        std::string_view owner_;
    };

    size_t size() const;
    size_t bytes() const;

private:
    struct Entry {
        translators::StoredTurn turn;
        Clock::time_point at;
        size_t bytes = 0;
    };
    // mu_ held: `owner`'s live turn `id`, or null.
    const Entry* live(const std::string& id, std::string_view owner, Clock::time_point now) const;
    void drop(const std::string& id);                                       // mu_ held

    mutable std::mutex mu_;
    config::ResponseStoreLimits limits_;
    std::unordered_map<std::string, Entry> entries_;
    std::deque<std::string> order_;  // ids in the order they were kept (some erased since)
    std::unordered_map<std::string, std::string> items_;  // item id -> its turn's id
    size_t bytes_ = 0;
};

}  // namespace infergate
