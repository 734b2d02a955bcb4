#pragma once
// Which replica served which prompt prefix, for prefix-cache-aware routing (docs/routing.md).
// A prompt is cut into blocks of `block_bytes`; block i's key is a hash of block i-1's key and
// block i's bytes (a chain, as vLLM's automatic prefix caching keys its KV blocks), so one key
// names a whole prefix. Each key remembers the last few replicas that were sent that prefix. A
// lookup walks the chain while some replica holds every block so far: that replica's engine
// most likely still has the prefix in its cache.
//
// Bounded: at most `max_blocks` keys, least recently used evicted first (about 128 bytes each:
// 8 MiB at the default 65,536). Shared by every worker behind one mutex, taken only for pools of
// more than one replica; no Asio.

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace infergate {

class PrefixIndex {
public:
    struct Options {
        size_t block_bytes = 128;
        size_t max_blocks = 65536;
    };
    // A prefix beyond this many blocks is neither looked up nor stored (a 128 KiB prompt's
    // first 1,024 blocks are its shared part, if any).
    static constexpr size_t kMaxBlocksPerPrompt = 1024;
    // Replicas remembered per block: a prefix sent to more has spread over the pool already.
    static constexpr size_t kReplicasPerBlock = 4;

    explicit PrefixIndex(Options options);

    struct Match {
        uint64_t replica = 0;  // the replica holding the longest prefix (0: none)
        size_t bytes = 0;      // how long, in whole blocks
    };
    // The longest prefix of `key` that one of `candidates` (replica ids, non-zero) was sent
    // before; among equal lengths, the first in `candidates`.
    Match match(std::string_view key, std::span<const uint64_t> candidates);
    // `key` was sent to `replica`: every block of it now names that replica first.
    void insert(std::string_view key, uint64_t replica);

    size_t blocks() const;
    size_t block_bytes() const { return options_.block_bytes; }
    size_t max_blocks() const { return options_.max_blocks; }

private:
    struct Node {
        uint64_t replicas[kReplicasPerBlock] = {};  // most recent first; 0: empty
        std::list<uint64_t>::iterator lru;          // its place in lru_
    };
    // The chain of block keys of `key`'s whole blocks.
    std::vector<uint64_t> chain(std::string_view key) const;

    const Options options_;
    mutable std::mutex mutex_;
    std::unordered_map<uint64_t, Node> nodes_;
    std::list<uint64_t> lru_;  // most recently used first
};

}  // namespace infergate
