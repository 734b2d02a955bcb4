#include "translators/canonical/catalogue.hpp"

#include <doctest/doctest.h>

#include "tests/translators/canonical/catalogue_util.hpp"

using namespace infergate;

TEST_CASE("catalogue find returns the entry of that exact name, or null") {
    const auto c = test::served_catalogue();
    REQUIRE(c.find("alias1") != nullptr);
    CHECK(c.find("alias1")->target == "emu/m-x");
    CHECK(c.find("a2")->target == "other");
    CHECK(c.find("alias") == nullptr);
    CHECK(c.find("") == nullptr);
    CHECK(canonical::ModelCatalogue{}.find("x") == nullptr);
}

TEST_CASE("catalogue creation time in whole seconds truncates the nanoseconds") {
    CHECK(test::served_catalogue().started_unix_s() == 1796293330);
}

TEST_CASE("format_rfc3339 follows Go's RFC3339Nano") {
    CHECK(canonical::format_rfc3339(0) == "1970-01-01T00:00:00Z");
    CHECK(canonical::format_rfc3339(test::kStartedNs) == "2026-12-03T10:22:10.158607272Z");
    CHECK(canonical::format_rfc3339(1691176965499127000) == "2023-08-04T19:22:45.499127Z");
    CHECK(canonical::format_rfc3339(951782400000000001) == "2000-02-29T00:00:00.000000001Z");
    CHECK(canonical::format_rfc3339(-1) == "1969-12-31T23:59:59.999999999Z");
}
