#pragma once
// What the metrics tests share: a test config and checks on render()'s text exposition.

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/metrics.hpp"

namespace metrics_test {

// One backend serving "m1" with two aliases: slots m1, fast, m2, (discovered), other.
inline infergate::config::Config test_config() {
    infergate::config::Config c;
    c.backends.emplace_back();
    c.backends[0].name = "b0";
    c.backends[0].model = "m1";
    c.aliases.push_back({"fast", "m1"});
    c.aliases.push_back({"m2", "m1"});
    return c;
}

inline bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

// The text format's sample line: name{label="value",...} value. Returns the metric name, or ""
// when the line is malformed.
inline std::string parse_sample(const std::string& line) {
    auto name_start = [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
    };
    auto name_char = [&](char c) {
        return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
    };
    size_t i = 0;
    if (i >= line.size() || !name_start(line[i])) {
        return "";
    }
    while (i < line.size() && name_char(line[i])) {
        ++i;
    }
    std::string name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (true) {
            if (i >= line.size() || !name_start(line[i]) || line[i] == ':') {
                return "";
            }
            while (i < line.size() && name_char(line[i]) && line[i] != ':') {
                ++i;
            }
            if (line.compare(i, 2, "=\"") != 0) {
                return "";
            }
            i += 2;
            while (i < line.size() && line[i] != '"') {
                if (line[i] == '\\') {
                    if (i + 1 >= line.size() ||
                        std::string("\\\"n").find(line[i + 1]) == std::string::npos) {
                        return "";
                    }
                    ++i;
                }
                ++i;
            }
            if (i >= line.size()) {
                return "";
            }
            ++i;  // closing quote
            if (i < line.size() && line[i] == ',') {
                ++i;
                continue;
            }
            if (i < line.size() && line[i] == '}') {
                ++i;
                break;
            }
            return "";
        }
    }
    if (i >= line.size() || line[i] != ' ') {
        return "";
    }
    const std::string value = line.substr(i + 1);
    if (value == "+Inf" || value == "-Inf" || value == "NaN") {
        return name;
    }
    char* end = nullptr;
    std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) {
        return "";
    }
    return name;
}

// Checks the whole exposition: every line a comment or a well-formed sample, one TYPE per family
// before its samples, cumulative buckets that never decrease and end in +Inf == _count.
inline void check_exposition(const std::string& text) {
    REQUIRE(!text.empty());
    CHECK(text.back() == '\n');
    std::set<std::string> typed;
    std::string current_family;
    std::string current_type;
    std::string last_series;  // a histogram's labels without le
    double last_bucket = -1;
    for (const std::string& line : lines_of(text)) {
        if (line.rfind("# HELP ", 0) == 0) {
            continue;
        }
        if (line.rfind("# TYPE ", 0) == 0) {
            std::istringstream in(line.substr(7));
            in >> current_family >> current_type;
            CHECK_MESSAGE(typed.insert(current_family).second, "TYPE twice: " << current_family);
            CHECK(std::set<std::string>{"counter", "gauge", "histogram"}.count(current_type) == 1);
            continue;
        }
        const std::string name = parse_sample(line);
        REQUIRE_MESSAGE(!name.empty(), "not a sample line: " << line);
        if (current_type == "histogram") {
            const bool ok = name == current_family + "_bucket" || name == current_family + "_sum" ||
                            name == current_family + "_count";
            CHECK_MESSAGE(ok, line);
            if (name == current_family + "_bucket") {
                const size_t le = line.find(",le=\"");
                REQUIRE(le != std::string::npos);
                const std::string series = line.substr(0, le);
                const double v = std::strtod(line.substr(line.rfind(' ') + 1).c_str(), nullptr);
                if (series == last_series) {
                    CHECK_MESSAGE(v >= last_bucket, "buckets decrease: " << line);
                }
                last_series = series;
                last_bucket = v;
            }
        } else {
            CHECK_MESSAGE(name == current_family, line);
        }
    }
    // +Inf bucket == _count for every histogram series.
    for (const std::string& line : lines_of(text)) {
        const size_t inf = line.find(",le=\"+Inf\"} ");
        if (inf == std::string::npos) {
            continue;
        }
        std::string series = line.substr(0, inf);
        const size_t bucket = series.find("_bucket{");
        REQUIRE(bucket != std::string::npos);
        const std::string count_line =
            series.replace(bucket, 8, "_count{") + "} " + line.substr(line.rfind(' ') + 1);
        CHECK_MESSAGE(has_line(text, count_line), "no matching _count for " << line);
    }
}

inline std::string read_repo_file(const std::string& relative) {
    // The repository root, from CMake (__FILE__ may be relative: ccache's base_dir rewrites it).
    const auto path = std::filesystem::path(INFERGATE_SOURCE_DIR) / relative;
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot read " << path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::set<std::string> family_names(const std::string& text) {
    std::set<std::string> names;
    for (const std::string& line : lines_of(text)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            names.insert(line.substr(7, line.find(' ', 7) - 7));
        }
    }
    return names;
}

inline const std::string kChatM1 = R"(route="openai_chat",backend="b0",model="m1")";
inline const std::string kGenAiChatM1 =
    R"(gen_ai_operation_name="chat",gen_ai_request_model="m1",route="openai_chat",backend="b0")";

}  // namespace metrics_test
