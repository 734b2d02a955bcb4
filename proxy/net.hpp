#pragma once
// Asio/Beast aliases used across the proxy core (declarations only: the implementations are
// compiled once in asio_impl.cpp).

#include <chrono>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace infergate {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Every I/O object and coroutine names the io_context's own executor type instead of the
// type-erased any_io_executor (whose copies, moves and destructions are virtual calls: ~5k
// instructions per request). A worker's objects all live on its one io_context.
using Executor = net::io_context::executor_type;
template <class T = void>
using Task = net::awaitable<T, Executor>;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Acceptor = net::basic_socket_acceptor<tcp, Executor>;
using Resolver = net::ip::basic_resolver<tcp, Executor>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                        net::wait_traits<std::chrono::steady_clock>, Executor>;
using Stream = beast::basic_stream<tcp, Executor>;

// co_await op(..., use_nothrow) yields a tuple (error_code, result...): no exceptions on the
// data path.
inline constexpr auto use_nothrow = net::as_tuple(net::use_awaitable_t<Executor>{});

}  // namespace infergate
