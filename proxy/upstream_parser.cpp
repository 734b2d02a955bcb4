#include "proxy/upstream_parser.hpp"

#include <algorithm>
#include <cstring>

#include "proxy/http_head.hpp"

namespace infergate {

namespace {

// True when a Content-Encoding value lists only `identity` (or nothing): the body is plain.
// Anything else, malformed lists included, is taken as a coding the proxy cannot read.
bool identity_only(std::string_view value) {
    std::string_view coding;
    while (http_head::next_list_item(value, coding)) {
        if (!coding.empty() && !beast::iequals(coding, "identity")) {
            return false;
        }
    }
    return true;
}

class UpstreamCategory final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "infergate.upstream"; }
    std::string message(int ev) const override {
        switch (static_cast<UpstreamErrc>(ev)) {
            case UpstreamErrc::switching_protocols:
                return "the backend answered 101 Switching Protocols to a plain HTTP request";
            case UpstreamErrc::content_encoding:
                return "the backend sent a compressed body (Content-Encoding)";
        }
        return "upstream error";
    }
};

}  // namespace

const boost::system::error_category& upstream_category() {
    static const UpstreamCategory category;
    return category;
}

void UpstreamResponseParser::on_field_impl(http::field name, beast::string_view name_string,
                                           beast::string_view value, beast::error_code&) {
    // The first occurrence counts, as basic_fields::operator[] has it.
    if (name == http::field::content_type) {
        if (content_type_.empty()) {
            content_type_.assign(value);
        }
    } else if (name == http::field::content_encoding) {
        if (content_encoding_.empty() && !identity_only({value.data(), value.size()})) {
            content_encoding_.assign(value);
        }
    } else if (name == http::field::unknown && prompt_tokens_.empty() &&
               beast::iequals(name_string, "x-prompt-tokens")) {
        prompt_tokens_.assign(value);
    } else if (name == http::field::unknown && compute_tokens_.empty() &&
               beast::iequals(name_string, "x-compute-tokens")) {
        compute_tokens_.assign(value);
    }
}

void UpstreamResponseParser::Kept::assign(beast::string_view v) {
    set_ = true;
    if (v.size() <= inline_.size()) {
        std::memcpy(inline_.data(), v.data(), v.size());
        size_ = v.size();
    } else {
        spill_.assign(v.data(), v.size());
    }
}

size_t UpstreamResponseParser::take(beast::string_view body, beast::error_code& ec) {
    if (out_ == nullptr || room_ == 0) {
        ec = http::error::need_buffer;
        return 0;
    }
    const size_t n = std::min(room_, body.size());
    std::memcpy(out_, body.data(), n);
    out_ += n;
    room_ -= n;
    filled_ += n;
    if (n < body.size()) {
        ec = http::error::need_buffer;
    }
    return n;
}

}  // namespace infergate
