#include "emulator/prefix_cache.hpp"

#include "emulator/generator.hpp"

namespace infergate::emulator {
namespace {

constexpr std::uint64_t kChainSeed = 0x7072656669780000ULL;  // "prefix"

}  // namespace

PrefixCache::PrefixCache(int capacity, int block) : capacity_(capacity), block_(block) {}

std::vector<std::uint64_t> PrefixCache::chain(std::span<const std::uint64_t> tokens, int block) {
    const std::size_t size = static_cast<std::size_t>(block);
    std::vector<std::uint64_t> keys;
    keys.reserve(tokens.size() / size);
    std::uint64_t key = kChainSeed;
    for (std::size_t start = 0; start + size <= tokens.size(); start += size) {
        for (std::size_t i = start; i < start + size; ++i) {
            key = splitmix64(key ^ tokens[i]);
        }
        keys.push_back(key);
    }
    return keys;
}

void PrefixCache::touch(std::uint64_t key) {
    const auto it = where_.find(key);
    if (it != where_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return;
    }
    lru_.push_front(key);
    where_.emplace(key, lru_.begin());
}

int PrefixCache::lookup_and_insert(std::span<const std::uint64_t> tokens) {
    const std::vector<std::uint64_t> keys = chain(tokens, block_);
    const std::size_t reusable = tokens.empty() ? 0 : (tokens.size() - 1) / block_;
    const std::lock_guard lock(mutex_);
    std::size_t hits = 0;
    while (hits < reusable && where_.contains(keys[hits])) {
        ++hits;
    }
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
        touch(*it);
    }
    const std::size_t room = static_cast<std::size_t>(capacity_ / block_);
    while (lru_.size() > room) {
        where_.erase(lru_.back());
        lru_.pop_back();
    }
    return static_cast<int>(hits) * block_;
}

}  // namespace infergate::emulator
