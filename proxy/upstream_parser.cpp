#include "proxy/upstream_parser.hpp"

#include <algorithm>
#include <cstring>

namespace infergate {

void UpstreamResponseParser::on_field_impl(http::field name, beast::string_view name_string,
                                           beast::string_view value, beast::error_code&) {
    // The first occurrence counts, as basic_fields::operator[] has it.
    if (name == http::field::content_type) {
        if (content_type_.empty()) {
            content_type_.assign(value);
        }
    } else if (name == http::field::unknown && prompt_tokens_.empty() &&
               beast::iequals(name_string, "x-prompt-tokens")) {
        prompt_tokens_.assign(value);
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
