#pragma once
// Asio/Beast aliases used across the proxy core (declarations only: the implementations are
// compiled once in asio_impl.cpp).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace infergate {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// co_await op(..., use_nothrow) yields a tuple (error_code, result...): no exceptions on the
// data path.
inline constexpr auto use_nothrow = net::as_tuple(net::use_awaitable);

}  // namespace infergate
