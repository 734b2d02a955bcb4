#include "proxy/client_request.hpp"

#include <limits>

namespace infergate {

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

void ClientRequestParser::on_request_impl(http::verb method, beast::string_view method_string,
                                          beast::string_view target, int version,
                                          beast::error_code&) {
    request_.method_ = method;
    request_.method_string_.assign(method_string.data(), method_string.size());
    request_.target_.assign(target.data(), target.size());
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
