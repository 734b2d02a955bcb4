// Asio, Asio's SSL support and Beast are compiled exactly once, here
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION): every other translation
// unit includes only their declarations, which keeps a 2-core build fast.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
