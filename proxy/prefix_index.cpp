#include "proxy/prefix_index.hpp"

#include <algorithm>
#include <cstring>

namespace infergate {

namespace {

uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

// A block's key from the previous block's key and the block's bytes (not cryptographic: the
// index only steers load, a collision costs one cache miss).
uint64_t block_key(uint64_t previous, std::string_view block) {
    uint64_t h = mix(previous ^ 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= block.size(); i += 8) {
        uint64_t w = 0;
        std::memcpy(&w, block.data() + i, 8);
        h = (h ^ mix(w)) * 0x100000001b3ULL;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, block.data() + i, block.size() - i);
    h = mix(h ^ mix(tail ^ (block.size() << 56)));
    return h == 0 ? 1 : h;
}

}  // namespace

PrefixIndex::PrefixIndex(Options options)
    : options_{options.block_bytes == 0 ? 128 : options.block_bytes, options.max_blocks} {}

std::vector<uint64_t> PrefixIndex::chain(std::string_view key) const {
    const size_t n = std::min(key.size() / options_.block_bytes, kMaxBlocksPerPrompt);
    std::vector<uint64_t> out;
    out.reserve(n);
    uint64_t h = 0;
    for (size_t i = 0; i < n; ++i) {
        h = block_key(h, key.substr(i * options_.block_bytes, options_.block_bytes));
        out.push_back(h);
    }
    return out;
}

PrefixIndex::Match PrefixIndex::match(std::string_view key, std::span<const uint64_t> candidates) {
    const std::vector<uint64_t> keys = chain(key);
    Match best;
    if (keys.empty() || candidates.empty()) {
        return best;
    }
    // depth[c]: how many leading blocks candidate c holds, while it still holds every one.
    std::vector<size_t> depth(candidates.size(), 0);
    std::vector<bool> alive(candidates.size(), true);
    std::lock_guard lock(mutex_);
    for (size_t b = 0; b < keys.size(); ++b) {
        const auto it = nodes_.find(keys[b]);
        if (it == nodes_.end()) {
            break;
        }
        bool any = false;
        for (size_t c = 0; c < candidates.size(); ++c) {
            if (!alive[c]) {
                continue;
            }
            const uint64_t* r = it->second.replicas;
            alive[c] = std::find(r, r + kReplicasPerBlock, candidates[c]) != r + kReplicasPerBlock;
            if (alive[c]) {
                depth[c] = b + 1;
                any = true;
            }
        }
        if (!any) {
            break;
        }
    }
    for (size_t c = 0; c < candidates.size(); ++c) {
        if (depth[c] * options_.block_bytes > best.bytes) {
            best = Match{candidates[c], depth[c] * options_.block_bytes};
        }
    }
    return best;
}

void PrefixIndex::insert(std::string_view key, uint64_t replica) {
    const std::vector<uint64_t> keys = chain(key);
    if (keys.empty() || replica == 0) {
        return;
    }
    std::lock_guard lock(mutex_);
    // Last block first: a prompt's first blocks end up the most recently used, so eviction
    // takes a prefix's tail before its head (a radix tree's leaves before its root).
    for (auto k_it = keys.rbegin(); k_it != keys.rend(); ++k_it) {
        const uint64_t k = *k_it;
        auto [it, added] = nodes_.try_emplace(k);
        Node& node = it->second;
        if (added) {
            lru_.push_front(k);
            node.lru = lru_.begin();
        } else {
            lru_.splice(lru_.begin(), lru_, node.lru);
        }
        // `replica` to the front, the others shifted back (the oldest falls off).
        uint64_t* r = node.replicas;
        uint64_t* at = std::find(r, r + kReplicasPerBlock, replica);
        if (at == r + kReplicasPerBlock) {
            at = r + kReplicasPerBlock - 1;
        }
        std::move_backward(r, at, at + 1);
        r[0] = replica;
    }
    while (nodes_.size() > options_.max_blocks) {
        nodes_.erase(lru_.back());
        lru_.pop_back();
    }
}

size_t PrefixIndex::blocks() const {
    std::lock_guard lock(mutex_);
    return nodes_.size();
}

}  // namespace infergate
