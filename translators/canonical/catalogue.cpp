// The model catalogue's lookup and its timestamps.
#include "translators/canonical/catalogue.hpp"

#include <cstdio>

namespace infergate::canonical {

const CatalogueModel* ModelCatalogue::find(std::string_view name) const {
    for (const auto& m : models) {
        if (m.name == name) {
            return &m;
        }
    }
    return nullptr;
}

std::string format_rfc3339(int64_t unix_ns) {
    constexpr int64_t kNsPerSec = 1'000'000'000;
    int64_t secs = unix_ns / kNsPerSec;
    int64_t frac = unix_ns % kNsPerSec;
    if (frac < 0) {
        frac += kNsPerSec;
        --secs;
    }
    int64_t days = secs / 86400;
    int64_t rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        --days;
    }
    // Howard Hinnant's civil_from_days: proleptic Gregorian date of a day count since 1970.
    days += 719468;
    const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const int64_t doe = days - era * 146097;
    const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const int64_t mp = (5 * doy + 2) / 153;
    const int64_t day = doy - (153 * mp + 2) / 5 + 1;
    const int64_t month = mp < 10 ? mp + 3 : mp - 9;
    const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    char buf[48];
    int len =
        std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld",
                      static_cast<long long>(year), static_cast<long long>(month),
                      static_cast<long long>(day), static_cast<long long>(rem / 3600),
                      static_cast<long long>(rem % 3600 / 60), static_cast<long long>(rem % 60));
    std::string s(buf, static_cast<size_t>(len));
    if (frac != 0) {
        len = std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(frac));
        std::string_view digits(buf, static_cast<size_t>(len));
        while (digits.back() == '0') {
            digits.remove_suffix(1);
        }
        s.append(digits);
    }
    s.push_back('Z');
    return s;
}

}  // namespace infergate::canonical
