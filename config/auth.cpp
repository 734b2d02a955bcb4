// Client keys (auth:): read from their file and environment variable when the config loads.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "config/config.hpp"

namespace infergate::config {

namespace {

constexpr size_t kMinKeyLength = 8;

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

// A key's own problem, or nullopt. Never quotes the key.
std::optional<std::string> bad_key(std::string_view key) {
    if (key.size() < kMinKeyLength) {
        return "a key is shorter than " + std::to_string(kMinKeyLength) +
               " characters; use a long random one (openssl rand -hex 32)";
    }
    for (const char ch : key) {
        const auto u = static_cast<unsigned char>(ch);
        if (u <= 0x20 || u == 0x7f || ch == ',') {
            return std::string(
                "a key holds a space, a comma or a control character, which no "
                "client can send in a header");
        }
    }
    return std::nullopt;
}

// The YAML form: a list of maps. Returns false when the text is not that form.
bool read_yaml_keys(const std::string& text, const std::string& path, std::vector<ClientKey>& out,
                    std::vector<std::string>& errors) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception&) {
        return false;  // not YAML: one key per line
    }
    if (!root.IsSequence() || root.size() == 0 || !root[0].IsMap()) {
        return false;
    }
    for (size_t i = 0; i < root.size(); ++i) {
        const std::string p = path + "[" + std::to_string(i) + "]";
        const YAML::Node n = root[i];
        if (!n.IsMap()) {
            errors.push_back(p + ": must be a mapping of name, key, rps, max_concurrent");
            continue;
        }
        ClientKey k;
        for (const auto& kv : n) {
            const std::string field = kv.first.as<std::string>("");
            try {
                if (field == "name") {
                    k.name = kv.second.as<std::string>();
                } else if (field == "key") {
                    k.key = kv.second.as<std::string>();
                } else if (field == "rps") {
                    k.rps = kv.second.as<double>();
                } else if (field == "max_concurrent") {
                    k.max_concurrent = kv.second.as<int>();
                } else {
                    errors.push_back(p + "." + field +
                                     ": unknown key (known keys: name, key, rps, max_concurrent)");
                }
            } catch (const YAML::Exception&) {
                errors.push_back(p + "." + field + ": cannot read this value" +
                                 (field == "key" ? "" : " as a number"));
            }
        }
        if (k.name.empty()) {
            errors.push_back(p + ".name: missing; every key needs a name (its metrics label)");
        } else if (k.name.size() > 64 ||
                   k.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_.-") != std::string::npos) {
            errors.push_back(p + ".name: '" + k.name +
                             "' must be 1-64 letters, digits, '_', '.' or '-' (a metrics label)");
        }
        if (k.rps < 0 || k.max_concurrent < 0) {
            errors.push_back(p + ": rps and max_concurrent must be >= 0 (0: no limit)");
        }
        if (auto bad = bad_key(k.key)) {
            errors.push_back(p + ".key: " + (k.key.empty() ? std::string("missing") : *bad));
        }
        out.push_back(std::move(k));
    }
    return true;
}

// One key per line, or separated by commas (`commas`: the environment variable's form).
void read_key_lines(std::string_view text, bool commas, std::string_view prefix,
                    const std::string& path, std::vector<ClientKey>& out,
                    std::vector<std::string>& errors) {
    size_t line = 0;
    while (!text.empty()) {
        size_t end = text.find_first_of(commas ? ",\n" : "\n");
        std::string_view item = trimmed(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++line;
        if (item.empty() || item.front() == '#') {
            continue;
        }
        ClientKey k;
        k.name = std::string(prefix) + "-" + std::to_string(out.size() + 1);
        k.key = std::string(item);
        if (auto bad = bad_key(k.key)) {
            errors.push_back(path + (commas ? "" : " line " + std::to_string(line)) + ": " + *bad);
        }
        out.push_back(std::move(k));
    }
}

}  // namespace

void load_client_keys(Auth& auth, std::vector<std::string>& errors) {
    auth.keys.clear();
    if (!auth.keys_file.empty()) {
        const std::string p = "auth.keys_file";
        std::ifstream in(auth.keys_file);
        if (!in) {
            errors.push_back(p + ": cannot open '" + auth.keys_file + "'");
        } else {
            std::stringstream ss;
            ss << in.rdbuf();
            const std::string text = ss.str();
            if (!read_yaml_keys(text, p, auth.keys, errors)) {
                read_key_lines(text, false, "key", p, auth.keys, errors);
            }
        }
    }
    if (!auth.keys_env.empty()) {
        const std::string p = "auth.keys_env";
        const char* v = std::getenv(auth.keys_env.c_str());
        if (v == nullptr) {
            errors.push_back(p + ": the environment variable $" + auth.keys_env + " is not set");
        } else {
            read_key_lines(v, true, "env", p, auth.keys, errors);
        }
    }
    if (auth.keys.empty()) {
        errors.push_back("auth: no keys found in " +
                         std::string(auth.keys_file.empty() ? "" : "auth.keys_file ") +
                         std::string(auth.keys_env.empty() ? "" : "auth.keys_env ") +
                         "(every request would be refused); add keys or remove auth:");
    }
    std::set<std::string> names;
    std::set<std::string> keys;
    for (const auto& k : auth.keys) {
        if (!names.insert(k.name).second) {
            errors.push_back("auth: the key name '" + k.name + "' is used twice");
        }
        if (!keys.insert(k.key).second) {
            errors.push_back("auth: the key named '" + k.name +
                             "' is the same key as another one (keys must differ)");
        }
    }
}

}  // namespace infergate::config
