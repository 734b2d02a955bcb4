#pragma once
// The parser of a backend's response: Beast's HTTP/1.1 parser without a field container. The
// proxy reads only the status and three headers of a backend response; Beast's http::parser would
// allocate and tree-insert every field. The body goes into a caller-provided buffer, as with
// http::buffer_body. Also: read_final_head(), the one reader of a response head for every call
// to the backend, which skips interim 1xx responses.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "proxy/net.hpp"

namespace infergate {

class UpstreamResponseParser : public http::basic_parser<false> {
public:
    UpstreamResponseParser() = default;

    int status() const { return status_; }
    // The headers the proxy uses; empty when absent. Content-Type is relayed on the same-dialect
    // fast path; TGI's /generate reports the prompt's length only in x-prompt-tokens, TEI's
    // /embed the inputs' tokens only in x-compute-tokens.
    std::string_view content_type() const { return content_type_.view(); }
    std::string_view prompt_tokens() const { return prompt_tokens_.view(); }
    std::string_view compute_tokens() const { return compute_tokens_.view(); }
    // The first Content-Encoding value that names a coding other than `identity` (RFC 9110
    // §8.4); empty when the body is plain. The proxy reads and translates bodies: it cannot
    // relay compressed bytes as if they were plain, so such a response is refused.
    std::string_view content_encoding() const { return content_encoding_.view(); }

    // Where the next body bytes go. `filled()` says how many went in since.
    void set_output(char* data, size_t size) {
        out_ = data;
        room_ = size;
        filled_ = 0;
    }
    size_t filled() const { return filled_; }

private:
    void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                         beast::error_code&) override {}
    void on_response_impl(int code, beast::string_view, int, beast::error_code&) override {
        status_ = code;
    }
    void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                       beast::error_code&) override;
    void on_header_impl(beast::error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
    size_t on_body_impl(beast::string_view body, beast::error_code& ec) override {
        return take(body, ec);
    }
    void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
    size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                              beast::error_code& ec) override {
        return take(body, ec);
    }
    void on_finish_impl(beast::error_code&) override {}

    // Copies what fits; need_buffer when the output is full (the rest comes on the next call).
    size_t take(beast::string_view body, beast::error_code& ec);

    // A kept header value: inline up to 96 bytes (no allocation for the usual ones).
    class Kept {
    public:
        bool empty() const { return !set_; }
        void assign(beast::string_view v);
        std::string_view view() const {
            return spill_.empty() ? std::string_view(inline_.data(), size_) : spill_;
        }

    private:
        std::array<char, 96> inline_;
        size_t size_ = 0;
        std::string spill_;
        bool set_ = false;
    };

    int status_ = 0;
    Kept content_type_;
    Kept prompt_tokens_;
    Kept compute_tokens_;
    Kept content_encoding_;
    char* out_ = nullptr;
    size_t room_ = 0;
    size_t filled_ = 0;
};

// Why a backend's response head was refused (Exchange::upstream_failure words them for clients).
enum class UpstreamErrc {
    switching_protocols = 1,  // a 101: infergate never asks for a protocol upgrade
    content_encoding,         // a compressed body (Content-Encoding other than identity)
};
const boost::system::error_category& upstream_category();
inline beast::error_code make_error_code(UpstreamErrc e) {
    return {static_cast<int>(e), upstream_category()};
}

namespace detail {
inline int response_status(const UpstreamResponseParser& p) {
    return p.status();
}
template <class Body, class Allocator>
int response_status(const http::parser<false, Body, Allocator>& p) {
    return p.get().result_int();
}
}  // namespace detail

// Reads the head of the backend's final response into `parser`, made afresh (emplace, then
// `setup(*parser)`) for every head: interim responses (100 Continue, 103 Early Hints, any 1xx but
// 101; RFC 9110 §15.2) come before the final one on the same connection and are read and dropped
// here, so that the final response is never left unread for the next request on a pooled
// connection. A 101 is UpstreamErrc::switching_protocols. The caller's deadline covers every head
// (nothing here settles it). Bytes after the final head stay in `buffer`.
template <class AsyncStream, class Parser, class Setup>
Task<beast::error_code> read_final_head(AsyncStream& stream, beast::flat_buffer& buffer,
                                        std::optional<Parser>& parser, Setup setup) {
    for (;;) {
        parser.emplace();
        setup(*parser);
        auto [ec, n] = co_await http::async_read_header(stream, buffer, *parser, use_nothrow);
        if (ec) {
            co_return ec;
        }
        const int status = detail::response_status(*parser);
        if (status == 101) {
            co_return make_error_code(UpstreamErrc::switching_protocols);
        }
        if (status >= 200) {
            co_return beast::error_code{};
        }
        // An interim response: Beast completes it with no body; the final one follows.
    }
}

}  // namespace infergate

template <>
struct boost::system::is_error_code_enum<infergate::UpstreamErrc> : std::true_type {};
