// Client keys (config/auth.cpp): read from a file (lines or YAML) and an environment variable.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "config/config.hpp"

using namespace infergate::config;

namespace {

struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text) {
        char name[] = "/tmp/infergate-keys-XXXXXX";
        const int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        path = name;
        std::ofstream(path) << text;
        ::close(fd);
    }
    ~TempFile() { std::remove(path.c_str()); }
};

bool has(const std::vector<std::string>& errors, std::string_view text) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

bool mentions(const std::vector<std::string>& errors, std::string_view secret) {
    return has(errors, secret);
}

}  // namespace

TEST_CASE("keys one per line, comments and blank lines skipped, named by position") {
    TempFile f("# team keys\nsk-first-0123456789\n\n  sk-second-0123456789  \r\n");
    Auth a;
    a.keys_file = f.path;
    std::vector<std::string> errors;
    load_client_keys(a, errors);
    CHECK(errors.empty());
    REQUIRE(a.keys.size() == 2);
    CHECK(a.keys[0].name == "key-1");
    CHECK(a.keys[0].key == "sk-first-0123456789");
    CHECK(a.keys[1].name == "key-2");
    CHECK(a.keys[1].key == "sk-second-0123456789");
    CHECK(a.keys[1].rps == 0);
}

TEST_CASE("keys as YAML with names and limits") {
    TempFile f(
        "- name: team-a\n  key: sk-aaaaaaaaaaaa\n  rps: 2.5\n  max_concurrent: 3\n"
        "- {name: team-b, key: sk-bbbbbbbbbbbb}\n");
    Auth a;
    a.keys_file = f.path;
    std::vector<std::string> errors;
    load_client_keys(a, errors);
    CHECK(errors.empty());
    REQUIRE(a.keys.size() == 2);
    CHECK(a.keys[0].name == "team-a");
    CHECK(a.keys[0].rps == doctest::Approx(2.5));
    CHECK(a.keys[0].max_concurrent == 3);
    CHECK(a.keys[1].name == "team-b");
}

TEST_CASE("keys from an environment variable, comma or newline separated") {
    ::setenv("INFERGATE_TEST_KEYS", "sk-env-one-12345, sk-env-two-12345\nsk-env-three-1234", 1);
    Auth a;
    a.keys_env = "INFERGATE_TEST_KEYS";
    std::vector<std::string> errors;
    load_client_keys(a, errors);
    CHECK(errors.empty());
    REQUIRE(a.keys.size() == 3);
    CHECK(a.keys[2].name == "env-3");
    CHECK(a.keys[2].key == "sk-env-three-1234");
    ::unsetenv("INFERGATE_TEST_KEYS");
}

TEST_CASE("bad keys are errors with their path, and never quoted") {
    std::vector<std::string> errors;
    Auth missing_file;
    missing_file.keys_file = "/nonexistent/keys";
    load_client_keys(missing_file, errors);
    CHECK(has(errors, "auth.keys_file: cannot open"));

    errors.clear();
    TempFile short_key("abc\nsk-long-enough-1234\nsk-long-enough-1234\n");
    Auth a;
    a.keys_file = short_key.path;
    load_client_keys(a, errors);
    CHECK(has(errors, "auth.keys_file line 1: a key is shorter than 8"));
    CHECK(has(errors, "is the same key as another one"));
    CHECK_FALSE(mentions(errors, "abc\n"));
    CHECK_FALSE(mentions(errors, "sk-long-enough"));

    errors.clear();
    TempFile yaml(
        "- name: a b\n  key: sk-aaaaaaaaaaaa\n- name: ok\n  key: q7z\n  rps: -1\n"
        "- name: ok\n  key: sk-cccccccccccc\n  colour: red\n");
    Auth y;
    y.keys_file = yaml.path;
    load_client_keys(y, errors);
    CHECK(has(errors, "auth.keys_file[0].name: 'a b' must be"));
    CHECK(has(errors, "auth.keys_file[1].key: a key is shorter"));
    CHECK(has(errors, "auth.keys_file[1]: rps and max_concurrent must be >= 0"));
    CHECK(has(errors, "auth.keys_file[2].colour: unknown key"));
    CHECK(has(errors, "the key name 'ok' is used twice"));
    CHECK_FALSE(mentions(errors, "q7z"));

    errors.clear();
    Auth unset;
    unset.keys_env = "INFERGATE_TEST_UNSET_VARIABLE";
    load_client_keys(unset, errors);
    CHECK(has(errors, "auth.keys_env: the environment variable $INFERGATE_TEST_UNSET_VARIABLE"));
    CHECK(has(errors, "auth: no keys found"));
}

TEST_CASE("auth: in the config loads its keys; unknown keys under auth are errors") {
    TempFile f("sk-config-0123456789\n");
    auto r = load_yaml_text("auth:\n  keys_file: " + f.path +
                            "\nbackends:\n  - url: http://127.0.0.1:8000\n");
    REQUIRE(r.config);
    CHECK(r.config->auth.enabled());
    REQUIRE(r.config->auth.keys.size() == 1);
    r = load_yaml_text("auth:\n  keys: [sk-inline-0123456789]\nbackends:\n  - url: http://h:1\n");
    CHECK_FALSE(r.config);
    CHECK(has(r.errors, "auth.keys: unknown key"));
    r = load_yaml_text("backends:\n  - url: http://h:1\n");
    REQUIRE(r.config);
    CHECK_FALSE(r.config->auth.enabled());
}
