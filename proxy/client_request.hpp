#pragma once
// A client's request as the proxy keeps it, and the parser that fills it: Beast's HTTP/1.1
// parser (all its validation and limits) without Beast's field container, which allocates and
// tree-inserts every header. Here the names and values sit back to back in one string and are
// found by a linear scan (a request has a handful of headers, and the proxy asks for three).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/net.hpp"

namespace infergate {

class ClientRequest {
public:
    struct Field {
        http::field id;  // field::unknown for names Beast does not know
        std::string_view name;
        std::string_view value;
    };

    http::verb method() const { return method_; }
    std::string_view method_string() const { return method_string_; }
    // In origin form (path and query): an absolute-form target (http://host/path, RFC 9112
    // §3.2.2) is reduced to its path and query.
    std::string_view target() const { return target_; }
    unsigned version() const { return version_; }
    bool keep_alive() const { return keep_alive_; }
    std::string& body() { return body_; }
    const std::string& body() const { return body_; }

    // The first value of a header (names compare case-insensitively); empty when absent.
    std::string_view operator[](std::string_view name) const;
    std::string_view operator[](http::field id) const;

    size_t field_count() const { return entries_.size(); }
    Field field(size_t i) const;

private:
    friend class ClientRequestParser;
    struct Entry {
        http::field id;
        uint32_t name_at;
        uint32_t name_size;
        uint32_t value_at;
        uint32_t value_size;
    };

    http::verb method_ = http::verb::unknown;
    std::string method_string_;
    std::string target_;
    unsigned version_ = 11;
    bool keep_alive_ = true;
    std::string text_;  // every name and value, back to back
    std::vector<Entry> entries_;
    std::string body_;
};

class ClientRequestParser : public http::basic_parser<true> {
public:
    ClientRequestParser() = default;

    ClientRequest& get() { return request_; }
    // The request, once parsed (its keep-alive as the parser judged it).
    ClientRequest release();

    // A request whose body is framed other than by Content-Length alone or by `chunked` alone
    // as its only transfer coding is refused before its body is read, and its connection closed:
    // where two parsers could disagree on where the body ends (Beast took `Transfer-Encoding:
    // identity` as "no body", then read the body as the next request), requests can be
    // smuggled past whatever sits in front (RFC 9112 §6.1, §6.3, §11.2).
    struct Refusal {
        http::status status;  // 400, or 501 for a coding before `chunked` we cannot decode
        std::string message;  // names the header and says what to send instead
    };
    // The same for an HTTP/1.1 request without exactly one Host (400, RFC 9112 §3.2), and
    // 505 for a version other than 1.0 and 1.1 (the HTTP/2 preface).
    // A line of the head ended by a bare LF (400): RFC 9112 §2.2 lets a server accept it, but
    // a front proxy that reads it differently could smuggle a request past it, so it is
    // refused by name rather than as a bad version or value.
    // The refusal behind a parse error `ec`, or nullopt when `ec` is about something else.
    // `unparsed`: the bytes the parser stopped at (the head, when it failed there).
    std::optional<Refusal> framing_refusal(beast::error_code ec,
                                           std::string_view unparsed = {}) const;

private:
    void on_request_impl(http::verb method, beast::string_view method_string,
                         beast::string_view target, int version, beast::error_code&) override;
    void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
    void on_field_impl(http::field id, beast::string_view name, beast::string_view value,
                       beast::error_code& ec) override;
    void on_header_impl(beast::error_code& ec) override;
    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                           beast::error_code& ec) override;
    size_t on_body_impl(beast::string_view body, beast::error_code&) override {
        request_.body_.append(body.data(), body.size());
        return body.size();
    }
    void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
    size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, beast::error_code&) override {
        request_.body_.append(body.data(), body.size());
        return body.size();
    }
    void on_finish_impl(beast::error_code&) override {}

    ClientRequest request_;
    std::string transfer_encoding_;  // every Transfer-Encoding field line, joined by ", "
    bool has_transfer_encoding_ = false;
    bool content_length_ = false;
    int hosts_ = 0;
    std::optional<Refusal> refusal_;
};

}  // namespace infergate
