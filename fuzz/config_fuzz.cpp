// The config loader must turn any text into either a Config or a list of errors: never crash,
// never let an exception out.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto result = infergate::config::load_yaml_text(text);
    if (!result.config && result.errors.empty()) {
        __builtin_trap();  // a failure must say why
    }
    return 0;
}
