#pragma once
// How WorkerMetrics' arrays are indexed (series kinds, label counts) and the histograms' bucket
// bounds; shared by the per-request recording (metrics.cpp) and render() (metrics_render.cpp).

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "proxy/metrics.hpp"

namespace infergate::metrics_detail {

inline constexpr size_t kRoutes = static_cast<size_t>(RouteLabel::kCount);
inline constexpr size_t kOutcomes = static_cast<size_t>(OutcomeLabel::kCount);
inline constexpr size_t kErrorKinds = static_cast<size_t>(UpstreamErrorKind::kCount);
inline constexpr size_t kFinishes = static_cast<size_t>(FinishLabel::kCount);

// "none": no status line was sent (the client left first, or the exchange never got that far).
inline constexpr std::array<std::string_view, 5> kStatusClasses = {"2xx", "3xx", "4xx", "5xx",
                                                                   "none"};
inline constexpr size_t kStatusClassCount = kStatusClasses.size();

enum TokenKind : size_t { kPrompt, kCompletion, kCached, kReasoning, kTokenKinds };
enum UnknownKind : size_t { kUnknownInput, kUnknownOutput, kUnknownKinds };

// The histograms kept per [route][model].
enum Kind : size_t { kE2e, kTtft, kTpot, kItl, kChunk, kTokensIn, kTokensOut, kKinds };

// Bucket upper bounds (le). They are part of the metrics' contract: docs/metrics.md lists them,
// and changing one breaks histogram_quantile() across the change in stored data.

// Time to first token (also the upstream first byte): a warm prefix-cache hit is a few ms, a
// long prefill or a reasoning model's hidden preamble many minutes. 0.15/0.2/0.25 keep typical
// interactive TTFTs apart.
inline constexpr std::array<double, 35> kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3,
    0.4,   0.5,   0.75, 1,    1.5,  2,    3,    5,   7.5,  10,  15,   20,
    30,    45,    60,   90,   120,  180,  300,  450, 640,  900, 1200};

// Whole requests: up to an hour for long reasoning generations.
inline constexpr std::array<double, 32> kE2eBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1,   1.5, 2,   3,   5,    7.5,  10,   15,
    20,    30,   45,    60,   90,  120,  180, 240,  300, 450, 600, 900, 1200, 1800, 2700, 3600};

// Per-token and per-chunk latency: decode steps live between ~5 and ~60 ms, so the resolution
// is 2.5 ms up to 25 ms and 5 ms up to 50 ms; the tail reaches stalls of seconds.
inline constexpr std::array<double, 28> kTokenLatencyBuckets = {
    0.001, 0.0025, 0.005, 0.0075, 0.01,  0.0125, 0.015, 0.0175, 0.02, 0.0225,
    0.025, 0.03,   0.035, 0.04,   0.045, 0.05,   0.06,  0.075,  0.1,  0.15,
    0.2,   0.3,    0.5,   0.75,   1,     2.5,    5,     10};

// The proxy's own work per request: microseconds for a fast-path relay, more for translation.
inline constexpr std::array<double, 16> kOverheadBuckets = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5,
                                                            1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
                                                            0.01, 0.025,  0.05, 0.1};

// TCP (+TLS) connect to the backend; the default connect timeout is 5 s.
inline constexpr std::array<double, 16> kConnectBuckets = {
    1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// Tokens per request: the OpenTelemetry GenAI advice for gen_ai.client.token.usage, 1..4^13.
inline constexpr std::array<double, 14> kTokenBuckets = {
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

inline std::span<const double> bounds_of(Kind k) {
    switch (k) {
        case kE2e:
            return kE2eBuckets;
        case kTtft:
            return kTtftBuckets;
        case kTpot:
        case kItl:
        case kChunk:
            return kTokenLatencyBuckets;
        case kTokensIn:
        case kTokensOut:
        case kKinds:
            break;
    }
    return kTokenBuckets;
}

}  // namespace infergate::metrics_detail
