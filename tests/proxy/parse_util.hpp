#pragma once
// What the proxy's unit tests share: a client request parsed from its head.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "proxy/client_request.hpp"

namespace infergate::test {

// `head`: the request line and header lines, each ending in CRLF, without the blank line.
inline ClientRequest parse_head(std::string_view head) {
    ClientRequestParser p;
    p.body_limit(1024);
    beast::error_code ec;
    const std::string wire = std::string(head) + "\r\n";
    p.put(net::buffer(wire), ec);
    REQUIRE(p.is_done());
    return p.release();
}

}  // namespace infergate::test
