#pragma once
// The parser of a backend's response: Beast's HTTP/1.1 parser without a field container. The
// proxy reads only the status and two headers of a backend response; Beast's http::parser would
// allocate and tree-insert every field. The body goes into a caller-provided buffer, as with
// http::buffer_body.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/net.hpp"

namespace infergate {

class UpstreamResponseParser : public http::basic_parser<false> {
public:
    UpstreamResponseParser() = default;

    int status() const { return status_; }
    // The headers the proxy uses; empty when absent. Content-Type is relayed on the same-dialect
    // fast path; TGI's /generate reports the prompt's length only in x-prompt-tokens.
    std::string_view content_type() const { return content_type_.view(); }
    std::string_view prompt_tokens() const { return prompt_tokens_.view(); }

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
    char* out_ = nullptr;
    size_t room_ = 0;
    size_t filled_ = 0;
};

}  // namespace infergate
