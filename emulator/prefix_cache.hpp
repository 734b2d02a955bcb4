// A replica's simulated prefix cache (--prefix-cache), modelled on vLLM's automatic prefix caching
// and SGLang's RadixAttention: a prompt's tokens are cut into fixed blocks, block i is known by a
// hash chain (the key of block i-1 and block i's tokens), a request reuses the leading blocks the
// cache already holds, and its own full blocks go in afterwards, least recently used out first.
//
// One per process, shared by every io_context thread: its calls take a mutex.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace infergate::emulator {

class PrefixCache {
public:
    // `capacity`: tokens the cache may hold (> 0); `block`: tokens per block (> 0).
    PrefixCache(int capacity, int block);

    // How many of `tokens` (a prompt's token keys) the cache already holds: block size times the
    // leading blocks found. Like both engines it never counts the prompt's last token, which is
    // computed again for its logits, so only blocks within the first size - 1 tokens can hit.
    // Then every full block of the prompt is put in as the most recently used, its first block
    // most recent of all (a chain's tail is evicted before its head, as vLLM frees blocks in
    // reverse order and SGLang evicts leaves first), and the least recently used blocks go
    // while the cache holds more than `capacity` tokens.
    int lookup_and_insert(std::span<const std::uint64_t> tokens);

    int block() const { return block_; }

private:
    using Lru = std::list<std::uint64_t>;  // block keys, most recently used first

    static std::vector<std::uint64_t> chain(std::span<const std::uint64_t> tokens, int block);
    void touch(std::uint64_t key);

    const int capacity_;
    const int block_;
    std::mutex mutex_;
    Lru lru_;
    std::unordered_map<std::uint64_t, Lru::iterator> where_;
};

}  // namespace infergate::emulator
