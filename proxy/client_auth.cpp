#include "proxy/client_auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <chrono>
#include <cmath>

#include "proxy/client_request.hpp"

namespace infergate {

namespace {

std::array<unsigned char, 32> sha256(std::string_view text) {
    std::array<unsigned char, 32> out{};
    unsigned int size = 0;
    EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr);
    return out;
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void append_escaped(std::string& out, std::string_view v) {
    for (const char ch : v) {  // names are [A-Za-z0-9_.-] (config/auth.cpp): nothing to escape
        out += ch;
    }
}

}  // namespace

ClientAuth::ClientAuth(const config::Auth& auth, const ClientAuth* previous)
    : refusals_(previous ? previous->refusals_
                         : std::make_shared<std::array<std::atomic<uint64_t>, 2>>()) {
    for (const auto& k : auth.keys) {
        auto key = std::make_unique<Key>();
        key->name = k.name;
        if (previous) {
            for (const auto& p : previous->keys_) {
                if (p->name == k.name) {
                    key->counts = p->counts;
                }
            }
        }
        if (!key->counts) {
            key->counts = std::make_shared<Counts>();
        }
        key->digest = sha256(k.key);
        key->rps = k.rps;
        key->max_concurrent = k.max_concurrent;
        key->tokens = std::max(1.0, k.rps);  // a full second's burst to start with
        key->refilled_ns = now_ns();
        keys_.push_back(std::move(key));
    }
}

ClientAuth::~ClientAuth() = default;

std::string_view ClientAuth::presented(const ClientRequest& request) {
    std::string_view auth = request[http::field::authorization];
    if (auth.size() > 7 && beast::iequals(auth.substr(0, 7), "Bearer ")) {
        auth.remove_prefix(7);
        while (!auth.empty() && auth.front() == ' ') {
            auth.remove_prefix(1);
        }
        return auth;
    }
    if (const std::string_view k = request["x-api-key"]; !k.empty()) {
        return k;
    }
    return request["api-key"];
}

int ClientAuth::find(std::string_view presented) const {
    if (presented.empty()) {
        return -1;
    }
    const auto digest = sha256(presented);
    int found = -1;
    for (size_t i = 0; i < keys_.size(); ++i) {
        const bool equal =
            CRYPTO_memcmp(digest.data(), keys_[i]->digest.data(), digest.size()) == 0;
        found = equal ? static_cast<int>(i) : found;
    }
    return found;
}

ClientAuth::Admission ClientAuth::admit(int index, int& retry_after_s) {
    Key& k = *keys_[static_cast<size_t>(index)];
    // The slot first, then the token: a request refused for either uses neither.
    if (k.max_concurrent > 0 &&
        k.counts->in_flight.fetch_add(1, std::memory_order_acq_rel) >= k.max_concurrent) {
        k.counts->in_flight.fetch_sub(1, std::memory_order_acq_rel);
        retry_after_s = 1;
        k.counts->concurrency_limited.fetch_add(1, std::memory_order_relaxed);
        return Admission::too_many_in_flight;
    }
    if (k.rps > 0) {
        std::lock_guard lock(k.bucket_mutex);
        const int64_t now = now_ns();
        const double burst = std::max(1.0, k.rps);
        k.tokens =
            std::min(burst, k.tokens + static_cast<double>(now - k.refilled_ns) * 1e-9 * k.rps);
        k.refilled_ns = now;
        if (k.tokens < 1.0) {
            retry_after_s = std::max(1, static_cast<int>(std::ceil((1.0 - k.tokens) / k.rps)));
            k.counts->rate_limited.fetch_add(1, std::memory_order_relaxed);
            if (k.max_concurrent > 0) {
                k.counts->in_flight.fetch_sub(1, std::memory_order_acq_rel);
            }
            return Admission::rate_limited;
        }
        k.tokens -= 1.0;
    }
    return Admission::ok;
}

void ClientAuth::release(int index) {
    Key& k = *keys_[static_cast<size_t>(index)];
    if (k.max_concurrent > 0) {
        k.counts->in_flight.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ClientAuth::count_request(int index) {
    keys_[static_cast<size_t>(index)]->counts->requests.fetch_add(1, std::memory_order_relaxed);
}

void ClientAuth::count_refusal(Refusal r) {
    (*refusals_)[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
}

std::string ClientAuth::render() const {
    std::string out;
    if (keys_.empty()) {
        return out;
    }
    out +=
        "# HELP infergate_client_key_requests_total Requests that presented a valid client key, "
        "by the key's configured name.\n# TYPE infergate_client_key_requests_total counter\n";
    for (const auto& k : keys_) {
        out += "infergate_client_key_requests_total{key=\"";
        append_escaped(out, k->name);
        out += "\"} " + std::to_string(k->counts->requests.load(std::memory_order_relaxed)) + "\n";
    }
    out +=
        "# HELP infergate_client_key_limited_total Generations refused with 429 by a key's "
        "limit (rps or max_concurrent).\n# TYPE infergate_client_key_limited_total counter\n";
    for (const auto& k : keys_) {
        for (const auto& [limit, v] : {std::pair{"rps", &k->counts->rate_limited},
                                       {"max_concurrent", &k->counts->concurrency_limited}}) {
            out += "infergate_client_key_limited_total{key=\"";
            append_escaped(out, k->name);
            out += "\",limit=\"" + std::string(limit) + "\"} " +
                   std::to_string(v->load(std::memory_order_relaxed)) + "\n";
        }
    }
    out +=
        "# HELP infergate_auth_failures_total Requests refused with 401: no key, or a key that "
        "is not configured.\n# TYPE infergate_auth_failures_total counter\n";
    out += "infergate_auth_failures_total{reason=\"missing\"} " +
           std::to_string((*refusals_)[0].load(std::memory_order_relaxed)) + "\n";
    out += "infergate_auth_failures_total{reason=\"invalid\"} " +
           std::to_string((*refusals_)[1].load(std::memory_order_relaxed)) + "\n";
    return out;
}

}  // namespace infergate
