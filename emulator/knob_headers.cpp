// X-Emulator-* request headers over the command line's defaults (resolve_knobs).
#include <optional>

#include "emulator/option_values.hpp"
#include "emulator/options.hpp"

namespace infergate::emulator {

bool resolve_knobs(const HttpRequest& req, const Knobs& defaults, Knobs& out, std::string& error) {
    out = defaults;
    // Cheap exit for the common case: benchmarks send none of these headers.
    bool any = false;
    for (const auto& field : req.base()) {
        if (field.name_string().size() > 11 &&
            (field.name_string()[0] == 'X' || field.name_string()[0] == 'x') &&
            field.name_string()[1] == '-') {
            any = true;
            break;
        }
    }
    if (!any) {
        return true;
    }
    auto header = [&](std::string_view name) -> std::optional<std::string_view> {
        auto it = req.base().find(name);
        if (it == req.base().end()) {
            return std::nullopt;
        }
        return std::string_view(it->value().data(), it->value().size());
    };
    auto int_header = [&](std::string_view name, int min_value, int& target) {
        if (auto v = header(name); v && !parse_int(*v, min_value, target)) {
            error = "invalid " + std::string(name) + " header: '" + std::string(*v) + "'";
            return false;
        }
        return true;
    };
    if (!int_header("X-Emulator-TTFT-Ms", 0, out.ttft_ms) ||
        !int_header("X-Emulator-ITL-Ms", 0, out.itl_ms) ||
        !int_header("X-Emulator-Tokens-Per-Chunk", 1, out.tokens_per_chunk) ||
        !int_header("X-Emulator-Fault-After", 0, out.fault_after)) {
        return false;
    }
    if (auto v = header("X-Emulator-Eos-After"); v && !parse_eos_after(*v, out.eos_after)) {
        error = "invalid X-Emulator-Eos-After header: '" + std::string(*v) + "'";
        return false;
    }
    if (auto v = header("X-Emulator-Tool-Calls");
        v && (!parse_int(*v, 1, out.tool_calls) || out.tool_calls > kMaxToolCalls)) {
        error = "invalid X-Emulator-Tool-Calls header: '" + std::string(*v) + "' (want 1.." +
                std::to_string(kMaxToolCalls) + ")";
        return false;
    }
    if (auto v = header("X-Emulator-Reasoning")) {
        out.reasoning = std::string(*v);
    }
    if (auto v = header("X-Emulator-Legacy-Delimiter"); v && !parse_delimiter(*v, out.nul_delimiter)) {
        error = "invalid X-Emulator-Legacy-Delimiter header: '" + std::string(*v) + "'";
        return false;
    }
    static constexpr std::pair<std::string_view, std::string_view> kStyleHeaders[] = {
        {"X-Emulator-Json-Style", "json-style"},     {"X-Emulator-Json-Escape", "json-escape"},
        {"X-Emulator-Sse-Style", "sse-style"},       {"X-Emulator-Ndjson-Style", "ndjson-style"},
        {"X-Emulator-Split-Writes", "split-writes"}, {"X-Emulator-Early-Hints", "early-hints"},
        {"X-Emulator-Interim", "interim"},           {"X-Emulator-Style-Seed", "style-seed"},
    };
    for (const auto& [header_name, option] : kStyleHeaders) {
        auto v = header(header_name);
        bool known = false;
        std::string why;
        if (v && !apply_style_option(option, *v, out.wire, known, why)) {
            error = "invalid " + std::string(header_name) + " header: '" + std::string(*v) +
                    "': " + why;
            return false;
        }
    }
    if (auto v = header("X-Emulator-Fault")) {
        auto fault = parse_fault(*v);
        if (!fault) {
            error = "invalid X-Emulator-Fault header: '" + std::string(*v) + "'";
            return false;
        }
        out.fault = *fault;
    }
    return true;
}

}  // namespace infergate::emulator
