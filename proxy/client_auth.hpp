#pragma once
// Client keys (config auth:): which key a request presents, checked in constant time, and each
// key's limits (requests per second, generations in flight) and counts. One ClientAuth is shared
// by every worker; a request touches it only when keys are configured. A reload builds a new one
// from the previous: a key keeps its counts and generations in flight by name, so the counters do
// not restart and max_concurrent holds across the reload.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace infergate {

class ClientRequest;

class ClientAuth {
public:
    explicit ClientAuth(const config::Auth& auth, const ClientAuth* previous = nullptr);
    ~ClientAuth();
    ClientAuth(const ClientAuth&) = delete;
    ClientAuth& operator=(const ClientAuth&) = delete;

    bool enabled() const { return !keys_.empty(); }

    // The key a request presents: `Authorization: Bearer <key>` (OpenAI, TGI, Ollama and Hugging
    // Face clients), `x-api-key` (Anthropic) or `api-key` (Azure OpenAI clients). Empty: none.
    static std::string_view presented(const ClientRequest& request);

    // The index of the configured key equal to `presented`, or -1. Constant time in what the
    // keys hold: the presented key's SHA-256 is compared with every key's, with no early exit.
    int find(std::string_view presented) const;
    const std::string& name(int key) const { return keys_[static_cast<size_t>(key)]->name; }

    enum class Admission { ok, rate_limited, too_many_in_flight };
    // A generation for `key`: within its requests per second and its generations in flight.
    // ok: counted in flight until release(). Otherwise `retry_after_s` says when to try again.
    Admission admit(int key, int& retry_after_s);
    void release(int key);

    // Counts for the scrape.
    void count_request(int key);
    enum class Refusal { missing, invalid };
    void count_refusal(Refusal r);
    // The Prometheus text of infergate_client_key_requests_total{key},
    // infergate_client_key_limited_total{key,limit} and infergate_auth_failures_total{reason}.
    std::string render() const;

private:
    // Shared by a key's successive ClientAuths (same name) across reloads.
    struct Counts {
        std::atomic<int> in_flight{0};
        std::atomic<uint64_t> requests{0};
        std::atomic<uint64_t> rate_limited{0};
        std::atomic<uint64_t> concurrency_limited{0};
    };
    struct Key {
        std::string name;
        std::array<unsigned char, 32> digest{};
        double rps = 0;
        int max_concurrent = 0;
        std::mutex bucket_mutex;  // only when rps is set
        double tokens = 0;
        int64_t refilled_ns = 0;
        std::shared_ptr<Counts> counts;
    };
    std::vector<std::unique_ptr<Key>> keys_;
    std::shared_ptr<std::array<std::atomic<uint64_t>, 2>> refusals_;
};

}  // namespace infergate
