#include "proxy/client_request.hpp"

#include <limits>
#include <vector>

namespace infergate {

namespace {

// A header value as quoted in a message: bounded, so that a huge header cannot make a huge answer.
std::string quoted(std::string_view value) {
    constexpr size_t kMax = 120;
    return value.size() <= kMax ? std::string(value) : std::string(value.substr(0, kMax)) + "...";
}

std::string_view trim_ows(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
        v.remove_prefix(1);
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
    }
    return v;
}

constexpr std::string_view kSendInstead =
    "send the body with Content-Length, or with Transfer-Encoding: chunked alone";

ClientRequestParser::Refusal both_framings() {
    return {http::status::bad_request,
            "the request has both Transfer-Encoding and Content-Length, which may disagree on "
            "where its body ends (RFC 9112 §6.1); send only one: Content-Length with the body's "
            "size, or Transfer-Encoding: chunked"};
}

}  // namespace

std::string_view ClientRequest::operator[](std::string_view name) const {
    for (const Entry& e : entries_) {
        if (beast::iequals(std::string_view(text_.data() + e.name_at, e.name_size), name)) {
            return {text_.data() + e.value_at, e.value_size};
        }
    }
    return {};
}

std::string_view ClientRequest::operator[](http::field id) const {
    for (const Entry& e : entries_) {
        if (e.id == id) {
            return {text_.data() + e.value_at, e.value_size};
        }
    }
    return {};
}

ClientRequest::Field ClientRequest::field(size_t i) const {
    const Entry& e = entries_[i];
    return {e.id, std::string_view(text_.data() + e.name_at, e.name_size),
            std::string_view(text_.data() + e.value_at, e.value_size)};
}

namespace {

std::string_view origin_form(std::string_view target) {
    // RFC 9112 §3.2.2: a server must accept the absolute form (what a client sends to a proxy).
    // The scheme is case-insensitive; the authority ends at the path, the query or the end.
    size_t scheme = 0;
    if (target.size() >= 7 && beast::iequals(target.substr(0, 7), "http://")) {
        scheme = 7;
    } else if (target.size() >= 8 && beast::iequals(target.substr(0, 8), "https://")) {
        scheme = 8;
    } else {
        return target;
    }
    const size_t end = target.find_first_of("/?", scheme);
    if (end == std::string_view::npos) {
        return "/";
    }
    return target.substr(end);  // "?q": the caller puts the empty path's "/" before it
}

}  // namespace

void ClientRequestParser::on_request_impl(http::verb method, beast::string_view method_string,
                                          beast::string_view target, int version,
                                          beast::error_code&) {
    request_.method_ = method;
    request_.method_string_.assign(method_string.data(), method_string.size());
    // Routed, logged and forwarded by its path and query alone, as any origin-form target.
    const std::string_view origin = origin_form(target);
    request_.target_.assign(origin.starts_with('?') ? "/" : "");
    request_.target_.append(origin.data(), origin.size());
    request_.version_ = static_cast<unsigned>(version);
}

void ClientRequestParser::on_field_impl(http::field id, beast::string_view name,
                                        beast::string_view value, beast::error_code& ec) {
    std::string& text = request_.text_;
    // The header limit (basic_parser::header_limit) bounds the total far below 4 GiB.
    if (text.size() + name.size() + value.size() > std::numeric_limits<uint32_t>::max()) {
        ec = http::error::header_limit;
        return;
    }
    if (text.capacity() < 512) {
        text.reserve(512);
        request_.entries_.reserve(16);
    }
    ClientRequest::Entry e{};
    e.id = id;
    e.name_at = static_cast<uint32_t>(text.size());
    e.name_size = static_cast<uint32_t>(name.size());
    text.append(name.data(), name.size());
    e.value_at = static_cast<uint32_t>(text.size());
    e.value_size = static_cast<uint32_t>(value.size());
    text.append(value.data(), value.size());
    request_.entries_.push_back(e);
    if (id == http::field::transfer_encoding) {
        if (has_transfer_encoding_) {
            transfer_encoding_ += ", ";  // field lines of a list combine (RFC 9110 §5.3)
        }
        has_transfer_encoding_ = true;
        transfer_encoding_.append(value.data(), value.size());
    } else if (id == http::field::content_length) {
        content_length_ = true;
    } else if (id == http::field::host) {
        ++hosts_;
    }
}

void ClientRequestParser::on_header_impl(beast::error_code& ec) {
    // RFC 9112 §3.2: an HTTP/1.1 request without exactly one Host gets 400 (HTTP/1.0 had none).
    if (request_.version_ >= 11 && hosts_ != 1) {
        refusal_ =
            Refusal{http::status::bad_request,
                    hosts_ == 0 ? "the HTTP/1.1 request has no Host header, which RFC 9112 §3.2 "
                                  "requires; send Host: with the server's name and port"
                                : "the request has " + std::to_string(hosts_) +
                                      " Host headers; RFC 9112 §3.2 allows exactly one: send "
                                      "a single Host: with the server's name and port"};
        ec = http::error::bad_field;
        return;
    }
    if (!has_transfer_encoding_) {
        return;  // Content-Length or no body: Beast has checked it (one value, digits only)
    }
    const std::string value = quoted(transfer_encoding_);
    if (request_.version_ < 11) {
        refusal_ = Refusal{http::status::bad_request,
                           "Transfer-Encoding is not part of HTTP/1.0, so the body's framing "
                           "cannot be trusted (RFC 9112 §6.1); send the body with "
                           "Content-Length, or use HTTP/1.1"};
    } else if (content_length_) {
        refusal_ = both_framings();
    } else {
        // The codings, in the order they were applied; empty list elements do not count.
        std::vector<std::string_view> codings;
        std::string_view rest = transfer_encoding_;
        while (!rest.empty()) {
            const size_t comma = rest.find(',');
            const std::string_view c = trim_ows(rest.substr(0, comma));
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            if (!c.empty()) {
                codings.push_back(c);
            }
        }
        size_t chunked = 0;
        for (const std::string_view c : codings) {
            chunked += beast::iequals(c, "chunked") ? 1 : 0;
        }
        if (codings.empty() || !beast::iequals(codings.back(), "chunked")) {
            refusal_ = Refusal{http::status::bad_request,
                               "Transfer-Encoding: " + value +
                                   " does not end with chunked, so the length of the request "
                                   "body cannot be known (RFC 9112 §6.3); " +
                                   std::string(kSendInstead)};
        } else if (chunked > 1) {
            refusal_ = Refusal{http::status::bad_request,
                               "Transfer-Encoding: " + value +
                                   " applies chunked more than once (RFC 9112 §7.1); " +
                                   std::string(kSendInstead)};
        } else if (codings.size() > 1) {
            refusal_ = Refusal{http::status::not_implemented,
                               "the transfer coding " + quoted(codings.front()) +
                                   " is not supported (Transfer-Encoding: " + value +
                                   "); send the body uncompressed, with Transfer-Encoding: "
                                   "chunked alone or with Content-Length"};
        }
    }
    if (refusal_) {
        ec = http::error::bad_transfer_encoding;
    }
}

namespace {

// Whether a line of the head in `bytes` (up to its blank line, if there is one) ends with a
// LF that no CR precedes.
bool head_has_bare_lf(std::string_view bytes) {
    if (const size_t end = bytes.find("\r\n\r\n"); end != std::string_view::npos) {
        bytes = bytes.substr(0, end + 4);
    }
    for (size_t i = bytes.find('\n'); i != std::string_view::npos; i = bytes.find('\n', i + 1)) {
        if (i == 0 || bytes[i - 1] != '\r') {
            return true;
        }
    }
    return false;
}

}  // namespace

std::optional<ClientRequestParser::Refusal> ClientRequestParser::framing_refusal(
    beast::error_code ec, std::string_view unparsed) const {
    if (refusal_) {
        return refusal_;
    }
    const bool head_syntax = ec == http::error::bad_line_ending || ec == http::error::bad_method ||
                             ec == http::error::bad_target || ec == http::error::bad_version ||
                             ec == http::error::bad_field || ec == http::error::bad_value;
    if (head_syntax && !is_header_done() && head_has_bare_lf(unparsed)) {
        return Refusal{http::status::bad_request,
                       "a line of the request head ends with a bare LF; end the request line "
                       "and every header line with CRLF (\\r\\n, RFC 9112 §2.2)"};
    }
    // Beast's own refusals, which stop the parse before on_field_impl sees the field: a
    // Transfer-Encoding after chunked, or Transfer-Encoding and Content-Length in either order.
    if (ec == http::error::bad_transfer_encoding) {
        if (content_length_) {
            return both_framings();
        }
        return Refusal{http::status::bad_request,
                       "Transfer-Encoding: " + quoted(transfer_encoding_) +
                           " is followed by more Transfer-Encoding after chunked (RFC 9112 "
                           "§6.3); " +
                           std::string(kSendInstead)};
    }
    if (ec == http::error::bad_content_length && has_transfer_encoding_) {
        return both_framings();
    }
    // A version other than HTTP/1.0 or 1.1: above all the h2c connection preface
    // ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") of an HTTP/2 client with prior knowledge. nginx
    // answers a version it does not speak on an HTTP/1 port with 505 (ngx_http_request.c,
    // NGX_HTTP_PARSE_INVALID_VERSION); so does this, naming what to send instead.
    if (ec == http::error::bad_version) {
        return Refusal{http::status::http_version_not_supported,
                       "this port speaks HTTP/1.1 and HTTP/1.0 only, not HTTP/2 or another "
                       "version; send HTTP/1.1 requests (an HTTP/2 client must not use prior "
                       "knowledge here: curl without --http2-prior-knowledge)"};
    }
    return std::nullopt;
}

void ClientRequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                            beast::error_code& ec) {
    if (content_length) {
        if (*content_length > request_.body_.max_size()) {
            ec = http::error::buffer_overflow;
            return;
        }
        // The body limit was checked by the parser already.
        request_.body_.reserve(static_cast<size_t>(*content_length));
    }
}

ClientRequest ClientRequestParser::release() {
    request_.keep_alive_ = keep_alive();
    return std::move(request_);
}

}  // namespace infergate
