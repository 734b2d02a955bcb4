#pragma once
// Test support: the golden wire samples of tests/fixtures/ (INFERGATE_FIXTURES is set by CMake).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace infergate::testing {

// The bytes of tests/fixtures/<relative>; empty when it cannot be read.
inline std::string read_fixture(std::string_view relative) {
    std::ifstream in(std::string(INFERGATE_FIXTURES) + "/" + std::string(relative),
                     std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Every fixture file's path relative to tests/fixtures/, sorted, whose name ends in `suffix`.
inline std::vector<std::string> fixture_files(std::string_view suffix) {
    std::vector<std::string> out;
    const std::filesystem::path root(INFERGATE_FIXTURES);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        const std::string rel = e.path().lexically_relative(root).string();
        if (e.is_regular_file() && rel.ends_with(suffix)) {
            out.push_back(rel);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace infergate::testing
