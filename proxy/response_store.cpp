#include "proxy/response_store.hpp"

#include <algorithm>

namespace infergate {

namespace {

size_t size_of(const translators::StoredTurn& t) {
    size_t n = sizeof(t) + t.id.size() + t.previous_id.size() + t.response.size();
    for (const auto& [id, json] : t.items) {
        n += id.size() + json.size() + 64;  // + the item index's entry
    }
    return n;
}

}  // namespace

void ResponseStore::set_limits(const config::ResponseStoreLimits& limits) {
    std::lock_guard lock(mu_);
    limits_ = limits;
}

bool ResponseStore::enabled() const {
    std::lock_guard lock(mu_);
    return limits_.max_entries > 0 && limits_.max_bytes > 0;
}

const ResponseStore::Entry* ResponseStore::live(const std::string& id, std::string_view owner,
                                                Clock::time_point now) const {
    auto it = entries_.find(id);
    if (it == entries_.end() || now - it->second.at > std::chrono::seconds(limits_.max_age_s) ||
        it->second.turn.owner != owner) {
        return nullptr;
    }
    return &it->second;
}

void ResponseStore::drop(const std::string& id) {
    auto it = entries_.find(id);
    if (it == entries_.end()) {
        return;
    }
    for (const auto& item : it->second.turn.items) {
        if (!item.first.empty()) {
            auto at = items_.find(item.first);
            if (at != items_.end() && at->second == id) {
                items_.erase(at);
            }
        }
    }
    bytes_ -= it->second.bytes;
    entries_.erase(it);
}

void ResponseStore::put(translators::StoredTurn turn, Clock::time_point now) {
    std::lock_guard lock(mu_);
    const size_t bytes = size_of(turn);
    const auto max_entries = static_cast<size_t>(std::max<int64_t>(limits_.max_entries, 0));
    const auto max_bytes = static_cast<size_t>(std::max<int64_t>(limits_.max_bytes, 0));
    if (max_entries == 0 || bytes > max_bytes) {
        return;
    }
    // The oldest first: expired ones, then as many as the new turn needs room for.
    const auto max_age = std::chrono::seconds(limits_.max_age_s);
    while (!order_.empty()) {
        const std::string& oldest = order_.front();
        auto it = entries_.find(oldest);
        const bool gone = it == entries_.end();
        const bool expired = !gone && now - it->second.at > max_age;
        const bool full = entries_.size() >= max_entries || bytes_ + bytes > max_bytes;
        if (!gone && !expired && !full) {
            break;
        }
        drop(oldest);
        order_.pop_front();
    }
    const std::string id = turn.id;
    drop(id);  // (ids are random: a second put of one id replaces it)
    for (const auto& item : turn.items) {
        if (!item.first.empty()) {
            items_[item.first] = id;
        }
    }
    entries_[id] = Entry{std::move(turn), now, bytes};
    bytes_ += bytes;
    order_.push_back(id);
    // Deleted turns leave their ids in order_ until they reach its front; a client that keeps
    // creating and deleting turns behind a long-lived one would grow it without bound.
    if (order_.size() > 2 * entries_.size() + 64) {
        std::erase_if(order_, [&](const std::string& k) { return !entries_.contains(k); });
    }
}

std::optional<std::string> ResponseStore::response(std::string_view id, std::string_view owner,
                                                   Clock::time_point now) const {
    std::lock_guard lock(mu_);
    const Entry* e = live(std::string(id), owner, now);
    if (e == nullptr) {
        return std::nullopt;
    }
    return e->turn.response;
}

std::optional<std::vector<std::string>> ResponseStore::input_items(std::string_view id,
                                                                   std::string_view owner,
                                                                   Clock::time_point now) const {
    std::lock_guard lock(mu_);
    const Entry* e = live(std::string(id), owner, now);
    if (e == nullptr) {
        return std::nullopt;
    }
    std::vector<std::string> out;
    for (size_t i = 0; i < e->turn.output_from && i < e->turn.items.size(); ++i) {
        out.push_back(e->turn.items[i].second);
    }
    return out;
}

bool ResponseStore::erase(std::string_view id, std::string_view owner) {
    std::lock_guard lock(mu_);
    const std::string key(id);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.turn.owner != owner) {
        return false;
    }
    drop(key);  // its place in order_ is skipped when it comes up
    return true;
}

std::optional<std::vector<std::string>> ResponseStore::conversation(
    std::string_view id, std::string_view owner) const {
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mu_);
    std::vector<const Entry*> chain;
    std::string at(id);
    while (!at.empty()) {
        const Entry* e = live(at, owner, now);
        if (e == nullptr || chain.size() > entries_.size()) {
            return std::nullopt;  // a turn of the chain is gone (or the chain loops)
        }
        chain.push_back(e);
        at = e->turn.previous_id;
    }
    std::vector<std::string> out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        for (const auto& item : (*it)->turn.items) {
            out.push_back(item.second);
        }
    }
    return out;
}

std::optional<std::string> ResponseStore::item(std::string_view id,
                                               std::string_view owner) const {
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mu_);
    auto it = items_.find(std::string(id));
    if (it == items_.end()) {
        return std::nullopt;
    }
    const Entry* e = live(it->second, owner, now);
    if (e == nullptr) {
        return std::nullopt;
    }
    for (const auto& item : e->turn.items) {
        if (item.first == id) {
            return item.second;
        }
    }
    return std::nullopt;
}

size_t ResponseStore::size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
}

size_t ResponseStore::bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
}

}  // namespace infergate
