#include "proxy/routing.hpp"

#include <algorithm>

#include "translators/canonical/types.hpp"

namespace infergate {

SteadyNs steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

Replica::Replica(uint64_t i, std::string a, std::optional<net::ip::address> addr)
    : id(i), address(std::move(a)), ip(std::move(addr)) {}

void Replica::succeeded() {
    if (failures.load(std::memory_order_relaxed) != 0) {
        failures.store(0, std::memory_order_relaxed);
    }
    if (ejections.load(std::memory_order_relaxed) != 0 && !ejected(steady_now_ns())) {
        ejections.store(0, std::memory_order_relaxed);  // back, and answering: forgiven
    }
}

bool Replica::failed(const config::Routing& r, SteadyNs now) {
    const int run = failures.fetch_add(1, std::memory_order_relaxed) + 1;
    if (run < r.consecutive_failures || ejected(now)) {
        return false;
    }
    // Ejected for ejection_ms, twice as long for each ejection in a row (max_ejection_ms).
    const int n = std::min(ejections.fetch_add(1, std::memory_order_relaxed), 20);
    const int64_t ms = std::min<int64_t>(r.max_ejection_ms, r.ejection_ms << n);
    ejected_until.store(now + ms * 1000000, std::memory_order_relaxed);
    failures.store(0, std::memory_order_relaxed);
    return true;
}

void BackendCounters::observe_latency(double seconds) {
    size_t i = 0;
    while (i < std::size(kLatencyBounds) && seconds > kLatencyBounds[i]) {
        ++i;
    }
    latency_buckets[i].fetch_add(1, std::memory_order_relaxed);
    double sum = latency_sum.load(std::memory_order_relaxed);
    while (!latency_sum.compare_exchange_weak(sum, sum + seconds, std::memory_order_relaxed)) {
    }
}

RoutingTable::RoutingTable(std::vector<BackendView> backends, const config::Config& config,
                           std::shared_ptr<RoutingShared> shared)
    : backends_(std::move(backends)),
      aliases_(config.aliases),
      default_model_(config.default_model),
      routing_(config.routing),
      shared_(std::move(shared)) {
    for (uint32_t b = 0; b < backends_.size(); ++b) {
        const BackendView& v = backends_[b];
        // A backend not identified yet serves nothing: its models are unknown until it is.
        if (!v.info.ready) {
            continue;
        }
        for (const auto& model : v.info.models) {
            auto [it, added] = by_model_.try_emplace(model, static_cast<uint32_t>(pools_.size()));
            if (added) {
                pools_.push_back(Pool{model, {}});
            }
            for (const auto& r : v.replicas) {
                pools_[it->second].members.push_back(Member{r.get(), b, v.config.weight});
            }
        }
    }
    if (default_model_.empty()) {
        for (const BackendView& v : backends_) {
            if (!v.info.served_model.empty()) {
                default_model_ = v.info.served_model;
                break;
            }
            if (!v.config.model.empty()) {
                default_model_ = v.config.model;
                break;
            }
        }
    }
    std::string target = default_model_;
    for (const auto& a : aliases_) {
        target = a.name == default_model_ ? a.target : target;
    }
    for (size_t b = 0; b < backends_.size(); ++b) {
        const auto& models = backends_[b].info.models;
        if (std::find(models.begin(), models.end(), target) != models.end()) {
            primary_ = b;
            break;
        }
    }
}

const RoutingTable::Pool* RoutingTable::pool_named(std::string_view name) const {
    // A few models (the usual case): comparing is cheaper than hashing.
    if (pools_.size() <= 8) {
        for (const Pool& p : pools_) {
            if (p.model == name) {
                return &p;
            }
        }
        return nullptr;
    }
    const auto it = by_model_.find(name);
    return it == by_model_.end() ? nullptr : &pools_[it->second];
}

const RoutingTable::Pool* RoutingTable::find(std::string_view client_model,
                                             std::string& upstream_model) const {
    std::string_view name = client_model.empty() ? std::string_view(default_model_) : client_model;
    for (const auto& a : aliases_) {
        if (a.name == name) {
            name = a.target;
            break;
        }
    }
    const Pool* pool = pool_named(name);
    // Ollama names a model's default tag either way: "llama3.2" is "llama3.2:latest".
    constexpr std::string_view kLatest = ":latest";
    if (pool == nullptr && name.ends_with(kLatest)) {
        pool = pool_named(name.substr(0, name.size() - kLatest.size()));
    } else if (pool == nullptr) {
        pool = pool_named(std::string(name) + std::string(kLatest));
    }
    if (pool != nullptr) {
        upstream_model = pool->model;
    }
    return pool;
}

std::vector<std::string> RoutingTable::model_names() const {
    std::vector<std::string> out;
    const auto add = [&](const std::string& m) {
        if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) {
            out.push_back(m);
        }
    };
    // The primary backend's models first: a client that takes the first listed model (many
    // benchmark scripts do) gets the default.
    for (const auto& m : primary().info.models) {
        add(m);
    }
    for (const auto& p : pools_) {
        add(p.model);
    }
    for (const auto& a : aliases_) {
        add(a.name);
    }
    return out;
}

bool RoutingTable::any_unready() const {
    return std::any_of(backends_.begin(), backends_.end(),
                       [](const BackendView& v) { return !v.info.ready; });
}

namespace {

// Load per unit of weight, compared without division: a/wa < b/wb. Two idle replicas go by the
// times each was chosen per unit of weight (a weighted round robin, not a coin: an idle pool
// spreads evenly); two equally busy ones by the sampling's order (a slower replica holds its
// requests longer, and a count of picks would pull it back to an equal share).
bool less_loaded(const RoutingTable::Member& a, const RoutingTable::Member& b) {
    const int64_t la = int64_t{a.replica->outstanding.load(std::memory_order_relaxed)} * b.weight;
    const int64_t lb = int64_t{b.replica->outstanding.load(std::memory_order_relaxed)} * a.weight;
    if (la != lb || la != 0) {
        return la < lb;
    }
    return a.replica->picks.load(std::memory_order_relaxed) * static_cast<uint64_t>(b.weight) <
           b.replica->picks.load(std::memory_order_relaxed) * static_cast<uint64_t>(a.weight);
}

// One member, picked with probability proportional to its weight.
size_t weighted_pick(const std::vector<const RoutingTable::Member*>& c, int total,
                     std::mt19937_64& rng) {
    int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(total));
    for (size_t i = 0; i < c.size(); ++i) {
        x -= c[i]->weight;
        if (x < 0) {
            return i;
        }
    }
    return c.size() - 1;
}

}  // namespace

const RoutingTable::Member* RoutingTable::choose(const Pool& pool, std::string_view prefix_key,
                                                 std::span<const uint64_t> tried,
                                                 const Member* same_as,
                                                 std::mt19937_64& rng) const {
    if (pool.members.size() == 1) {  // the common case, and the single-backend one: no work
        const Member& m = pool.members.front();
        return tried.empty() ? &m : nullptr;
    }
    const SteadyNs now = steady_now_ns();
    std::vector<const Member*> candidates;
    candidates.reserve(pool.members.size());
    const auto eligible = [&](const Member& m) {
        if (std::find(tried.begin(), tried.end(), m.replica->id) != tried.end()) {
            return false;
        }
        if (same_as != nullptr) {
            // The request as encoded for the first pick's API: the same dialect, and the same
            // engine flavour unless it was planned for none (generic: plain OpenAI, which an
            // engine's OpenAI layer takes too).
            const BackendInfo& a = backends_[m.backend].info;
            const BackendInfo& b = backends_[same_as->backend].info;
            return a.dialect == b.dialect &&
                   (a.flavor == b.flavor || b.flavor == translators::Flavor::generic);
        }
        return true;
    };
    for (const Member& m : pool.members) {
        if (eligible(m) && m.replica->available(now)) {
            candidates.push_back(&m);
        }
    }
    if (candidates.empty()) {
        // Every member out (ejected or failing checks): try them anyway rather than refuse
        // (Envoy's panic mode); a backend that is really down fails fast on connect.
        for (const Member& m : pool.members) {
            if (eligible(m)) {
                candidates.push_back(&m);
            }
        }
    }
    if (candidates.size() <= 1) {
        return candidates.empty() ? nullptr : candidates.front();
    }
    const Member* least = candidates.front();
    for (const Member* m : candidates) {
        least = less_loaded(*m, *least) ? m : least;
    }
    const Member* chosen = nullptr;
    if (routing_.balance == config::Balance::prefix && !prefix_key.empty()) {
        // Least loaded first: among replicas holding equally long prefixes, it wins.
        std::vector<const Member*> by_load = candidates;
        std::stable_sort(by_load.begin(), by_load.end(),
                         [](const Member* a, const Member* b) { return less_loaded(*a, *b); });
        std::vector<uint64_t> ids;
        ids.reserve(by_load.size());
        for (const Member* m : by_load) {
            ids.push_back(m->replica->id);
        }
        const PrefixIndex::Match match = shared_->prefix.match(prefix_key, ids);
        if (match.replica != 0 &&
            static_cast<int64_t>(match.bytes) >= routing_.prefix_min_match_bytes) {
            for (const Member* m : candidates) {
                if (m->replica->id != match.replica) {
                    continue;
                }
                // Affinity yields when the cached replica is max_imbalance requests (per unit
                // of weight) busier than the least loaded one.
                const int64_t load = m->replica->outstanding.load(std::memory_order_relaxed);
                const int64_t low = least->replica->outstanding.load(std::memory_order_relaxed);
                if (load * least->weight <= (low + routing_.max_imbalance) * m->weight) {
                    chosen = m;
                }
            }
        }
    }
    if (chosen == nullptr) {
        // Power of two choices: two members picked by weight, the less loaded one wins.
        int total = 0;
        for (const Member* m : candidates) {
            total += m->weight;
        }
        const size_t a = weighted_pick(candidates, total, rng);
        size_t b = weighted_pick(candidates, total, rng);
        for (int i = 0; i < 4 && b == a; ++i) {
            b = weighted_pick(candidates, total, rng);
        }
        chosen = less_loaded(*candidates[b], *candidates[a]) ? candidates[b] : candidates[a];
    }
    chosen->replica->picks.fetch_add(1, std::memory_order_relaxed);
    if (routing_.balance == config::Balance::prefix && !prefix_key.empty()) {
        shared_->prefix.insert(prefix_key, chosen->replica->id);
    }
    return chosen;
}

std::string prefix_key(const canonical::GenerationRequest& req) {
    std::string key;
    if (!req.messages.empty()) {
        for (const auto& m : req.messages) {
            key += m.role;
            key.push_back('\0');
            key += m.content;
            for (const auto& c : m.tool_calls) {
                key += c.name;
                key += c.arguments;
            }
            key.push_back('\0');
        }
        return key;
    }
    if (!req.prompts.empty()) {
        const canonical::Prompt& p = req.prompts.front();
        if (!p.is_tokens) {
            return p.text;
        }
        key.resize(p.token_ids.size() * sizeof(int64_t));
        std::memcpy(key.data(), p.token_ids.data(), key.size());
    }
    return key;
}

bool retry_allowed(const RoutingShared& shared, const config::Routing& r) {
    const int in_flight = shared.in_flight.load(std::memory_order_relaxed);
    const int retrying = shared.retrying.load(std::memory_order_relaxed);
    return retrying < std::max<int64_t>(r.budget_min, int64_t{in_flight} * r.budget_percent / 100);
}

}  // namespace infergate
