// infergate: the command line. Everything else lives in the proxy core.
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "proxy/log.hpp"
#include "proxy/server.hpp"
#include "proxy/version.hpp"

namespace {

constexpr const char* kUsage = R"(infergate - a translating reverse proxy for LLM inference servers

Usage:
  infergate --config FILE [--listen HOST:PORT] [--admin-listen HOST:PORT] [--threads N]
            [--log-level L]
  infergate [--upstream URL] [--listen HOST:PORT] [--upstream-dialect D] [--model NAME]
            [--alias NAME=MODEL]... [--threads N] [--log-level L]

Clients may speak SGLang, TGI or vLLM-legacy (POST /generate, /generate_stream, /), OpenAI
(/v1/completions, /v1/chat/completions), Ollama (/api/generate, /api/chat), llama.cpp
(/completion) or Anthropic (/v1/messages); infergate translates to whatever the backend speaks.

Options:
  --config FILE          YAML config (see config/infergate.example.yaml)
  --upstream URL         backend base URL (default http://127.0.0.1:8000, vLLM's default); a
                         trailing /v1 (OPENAI_BASE_URL style) is dropped: routes are at the root
  --listen HOST:PORT     where to listen (default 127.0.0.1:30000, this host only, as SGLang;
                         0.0.0.0:30000 or [::]:30000 for every interface, localhost:30000
                         for 127.0.0.1 and ::1; port 0 = any free port, printed as
                         "listening on HOST:PORT")
  --admin-listen HOST:PORT
                         serve /metrics and /get_server_info there only, not on --listen (no
                         auth: keep it on 127.0.0.1 or a private network); health routes are
                         on both; printed as "admin listening on HOST:PORT"
  --upstream-dialect D   auto (default: probe the backend's info routes), openai (also:
                         vllm), sglang, tgi, ollama, llamacpp, vllm_legacy, anthropic or tei
                         (text-embeddings-inference: embeddings and tokenizer only)
  --model NAME           the backend's served model name (default: discovered)
  --alias NAME=MODEL     let clients call MODEL by NAME (repeatable)
  --api-key-env VAR      send "Authorization: Bearer $VAR" (Anthropic: "x-api-key") upstream
  --tls-ca-file FILE     PEM CA bundle to verify an https backend (default: system CAs)
  --threads N            worker threads (default 1)
  --log-level L          debug, info (default), warn, error
  --access-log WHERE     one JSON line per request: stderr (default), off, or a file path
  --check-config         validate the configuration and exit

Signals:
  SIGHUP                 re-read the --config file (command-line overrides applied again) and
                         apply it; a file with errors keeps the running config and logs why;
                         listen, admin_listen, threads, access_log and limits.max_connections
                         need a restart. Also POST /-/reload on the admin listener.
  SIGINT, SIGTERM        stop accepting, let requests finish (shutdown_grace_ms), exit
  --version              print the version and exit
  --help                 print this help and exit
)";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "infergate: %s\nTry 'infergate --help'.\n", message.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace infergate;
    std::string config_path;
    std::string upstream;
    std::string listen;
    std::string admin_listen;
    std::string dialect;
    std::string model;
    std::string api_key_env;
    std::string tls_ca_file;
    std::string log_level;
    std::string access_log;
    std::vector<config::Alias> aliases;
    int threads = 0;
    bool check_only = false;

    std::vector<std::string_view> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); ++i) {
        std::string_view arg = args[i];
        std::string_view inline_value;
        bool has_inline = false;
        if (arg.starts_with("--") && arg.find('=') != std::string_view::npos) {
            inline_value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
            has_inline = true;
        }
        auto value = [&](std::string& out) -> bool {
            if (has_inline) {
                out = std::string(inline_value);
                return true;
            }
            if (i + 1 >= args.size()) {
                return false;
            }
            out = std::string(args[++i]);
            return true;
        };
        std::string v;
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (arg == "--version") {
            std::printf("infergate %s (commit %s)\n", kVersion, kGitCommit);
            return 0;
        }
        if (arg == "--check-config") {
            check_only = true;
            continue;
        }
        if (!value(v)) {
            return usage_error(std::string(arg.starts_with("--") ? "option " : "unexpected argument ") +
                               std::string(arg) + (arg.starts_with("--") ? " needs a value" : ""));
        }
        if (arg == "--config") {
            config_path = v;
        } else if (arg == "--upstream") {
            upstream = v;
        } else if (arg == "--listen") {
            listen = v;
        } else if (arg == "--admin-listen") {
            admin_listen = v;
        } else if (arg == "--upstream-dialect") {
            dialect = v;
        } else if (arg == "--model") {
            model = v;
        } else if (arg == "--api-key-env") {
            api_key_env = v;
        } else if (arg == "--tls-ca-file") {
            tls_ca_file = v;
        } else if (arg == "--log-level") {
            log_level = v;
        } else if (arg == "--access-log") {
            access_log = v;
        } else if (arg == "--alias") {
            const size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
                return usage_error("--alias takes NAME=MODEL, got '" + v + "'");
            }
            aliases.push_back(config::Alias{v.substr(0, eq), v.substr(eq + 1)});
        } else if (arg == "--threads") {
            try {
                threads = std::stoi(v);
            } catch (...) {
                return usage_error("--threads takes a number, got '" + v + "'");
            }
        } else {
            return usage_error("unknown option " + std::string(arg));
        }
    }

    // Build the configuration: from the file, or from the flags (config-free start).
    config::LoadResult loaded;
    if (!config_path.empty()) {
        if (!upstream.empty() || !dialect.empty() || !model.empty() || !aliases.empty() ||
            !api_key_env.empty() || !tls_ca_file.empty()) {
            return usage_error(
                "--upstream, --upstream-dialect, --model, --alias and --api-key-env describe the "
                "backend, which --config already does; use one or the other");
        }
    } else {
        // Every value quoted as YAML reads it back exactly (a quote or backslash in an alias
        // then meets the config's own check, which names it, not a YAML syntax error).
        using config::yaml_quote;
        std::string yaml =
            "backends:\n  - url: " +
            yaml_quote(upstream.empty() ? std::string("http://127.0.0.1:8000") : upstream) +
            "\n    dialect: " + yaml_quote(dialect.empty() ? "auto" : dialect) + "\n";
        if (!model.empty()) {
            yaml += "    model: " + yaml_quote(model) + "\n";
        }
        if (!api_key_env.empty()) {
            yaml += "    api_key_env: " + yaml_quote(api_key_env) + "\n";
        }
        if (!tls_ca_file.empty()) {
            yaml += "    tls_ca_file: " + yaml_quote(tls_ca_file) + "\n";
        }
        if (!aliases.empty()) {
            yaml += "models:\n  aliases:\n";
            for (const auto& a : aliases) {
                yaml += "    " + yaml_quote(a.name) + ": " + yaml_quote(a.target) + "\n";
            }
        }
        loaded = config::load_yaml_text(yaml);
    }
    // A file is read again on SIGHUP and POST /-/reload, with the same command-line overrides.
    const auto override_flags = [=](config::LoadResult loaded) {
        if (loaded.config && (!listen.empty() || !admin_listen.empty() || threads > 0 ||
                              !log_level.empty() || !access_log.empty())) {
            auto c = std::make_shared<config::Config>(*loaded.config);
            if (!listen.empty()) {
                std::string err;
                if (!config::parse_listen(listen, c->listen_host, c->listen_port, err)) {
                    loaded.errors.push_back("--listen: " + err);
                }
            }
            if (!admin_listen.empty()) {
                std::string err;
                if (!config::parse_listen(admin_listen, c->admin_host, c->admin_port, err)) {
                    loaded.errors.push_back("--admin-listen: " + err);
                }
            }
            if (threads > 0) {
                c->threads = threads;
            }
            if (!log_level.empty()) {
                c->log_level = log_level;
            }
            if (!access_log.empty()) {
                c->access_log = access_log;
            }
            auto more = config::validate(*c);
            loaded.errors.insert(loaded.errors.end(), more.begin(), more.end());
            loaded.config =
                loaded.errors.empty() ? std::shared_ptr<const config::Config>(c) : nullptr;
        }
        return loaded;
    };
    std::function<config::LoadResult()> reread;
    if (!config_path.empty()) {
        reread = [=] { return override_flags(config::load_yaml_file(config_path)); };
        loaded = reread();
    } else {
        loaded = override_flags(std::move(loaded));
    }
    if (!loaded.config) {
        std::fprintf(stderr, "infergate: invalid configuration%s%s:\n",
                     config_path.empty() ? "" : " in ", config_path.c_str());
        for (const auto& e : loaded.errors) {
            std::fprintf(stderr, "  %s\n", e.c_str());
        }
        return 2;
    }
    log::Level level = log::Level::info;
    if (!log::parse_level(loaded.config->log_level, level)) {
        return usage_error("log level must be debug, info, warn or error, got '" +
                           loaded.config->log_level + "'");
    }
    log::set_level(level);
    for (const auto& note : loaded.notes) {
        log::info(note);
    }
    if (check_only) {
        std::printf("configuration OK\n");
        return 0;
    }
    Server server(loaded.config, std::move(reread), config_path);
    return server.run();
}
