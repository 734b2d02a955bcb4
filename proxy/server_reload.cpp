// Server: hot reload (SIGHUP, POST /-/reload on the admin listener): re-read the config file,
// validate it, and hand the new config to every worker (docs/security.md, "Hot reload").
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "proxy/backend_probe.hpp"
#include "proxy/client_auth.hpp"
#include "proxy/listener.hpp"
#include "proxy/log.hpp"
#include "proxy/response_store.hpp"
#include "proxy/routing.hpp"
#include "proxy/server.hpp"
#include "proxy/worker.hpp"

namespace infergate {

namespace {

// The text of a reload's answer: a JSON document written by `fn` on a RapidJSON writer.
template <class Fn>
std::string json_text(Fn&& fn) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    fn(w);
    return std::string(buffer.GetString(), buffer.GetSize());
}

template <class W>
void write_string(W& w, std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// OpenAI's error shape, with the list of errors beside the message (which lists them too).
std::string reload_error(std::string_view message, std::string_view code,
                         const std::vector<std::string>& errors) {
    return json_text([&](auto& w) {
        w.StartObject();
        w.Key("error");
        w.StartObject();
        w.Key("message");
        write_string(w, message);
        w.Key("type");
        w.String("invalid_request_error");
        w.Key("param");
        w.Null();
        w.Key("code");
        write_string(w, code);
        if (!errors.empty()) {
            w.Key("errors");
            w.StartArray();
            for (const auto& e : errors) {
                write_string(w, e);
            }
            w.EndArray();
        }
        w.EndObject();
        w.EndObject();
    });
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        out += (out.empty() ? "" : ", ") + i;
    }
    return out;
}

}  // namespace

Server::ReloadResult Server::reload(std::string_view trigger, std::function<void()> applied) {
    // Posted, never called here: the caller has the result by the time it runs.
    const auto answer_now = [&] { net::post(control_, std::move(applied)); };
    const std::string why = "reload (" + std::string(trigger) + ")";
    if (!reread_) {
        answer_now();
        log::warn(why +
                  ": nothing to re-read: infergate was started without --config, from "
                  "command-line flags; restart it to change them, or start it with "
                  "--config FILE to reload");
        return {409, reload_error("infergate was started without --config (its settings are "
                                  "the command line): there is no config file to re-read; "
                                  "restart it with new flags, or start it with --config FILE",
                                  "no_config_file", {})};
    }
    config::LoadResult loaded = reread_();
    if (log::Level level; loaded.config && !log::parse_level(loaded.config->log_level, level)) {
        // At start main() refuses it; here it is one more error that keeps the running config.
        loaded.errors.push_back("log_level: must be debug, info, warn or error, got '" +
                                loaded.config->log_level + "'");
        loaded.config = nullptr;
    }
    if (!loaded.config) {
        answer_now();
        metrics_->count_reload(false);
        log::warn(why + ": " + config_path_ + " has " + std::to_string(loaded.errors.size()) +
                  " error(s); the running config is kept:");
        for (const auto& e : loaded.errors) {
            log::warn("  " + e);
        }
        std::string message = "the config file " + config_path_ + " has " +
                              std::to_string(loaded.errors.size()) +
                              " error(s); the running config is kept: ";
        for (size_t i = 0; i < loaded.errors.size(); ++i) {
            message += (i ? "; " : "") + loaded.errors[i];
        }
        return {400, reload_error(message, "invalid_config", loaded.errors)};
    }
    const config::ConfigChanges changes = config::diff(*config_, *loaded.config);
    std::vector<std::string> restart = changes.needs_restart;
    auto next = std::make_shared<const config::Config>(
        config::keep_restart_values(*config_, *loaded.config));
    // https backends need the TLS context, made once: the first https backend makes it,
    // another CA bundle needs a restart (workers' connections use the one in place).
    for (size_t i = 0; i < next->backends.size(); ++i) {
        const config::Backend& b = next->backends[i];
        if (!b.url.tls) {
            continue;
        }
        if (tls_) {
            if (b.tls_ca_file != tls_ca_file_) {
                restart.emplace_back("backends[" + std::to_string(i) + "].tls_ca_file");
            }
            continue;
        }
        net::ssl::context tls(net::ssl::context::tls_client);
        tls.set_default_verify_paths();
        tls.set_verify_mode(net::ssl::verify_peer);
        if (const std::string& ca = b.tls_ca_file; !ca.empty()) {
            beast::error_code ec;
            tls.load_verify_file(ca, ec);
            if (ec) {
                answer_now();
                const std::string e = "backends[" + std::to_string(i) +
                                      "].tls_ca_file: cannot load '" + ca + "': " + ec.message();
                metrics_->count_reload(false);
                log::warn(why + ": " + e + "; the running config is kept");
                return {400, reload_error("the config file " + config_path_ +
                                              " has 1 error(s); the running config is kept: " + e,
                                          "invalid_config", {e})};
            }
        }
        tls_.emplace(std::move(tls));
        tls_ca_file_ = b.tls_ca_file;
    }
    auto auth = std::make_shared<ClientAuth>(next->auth, auth_.get());
    net::ssl::context* tls = tls_ ? &*tls_ : nullptr;
    auto pending = std::make_shared<std::atomic<size_t>>(workers_.size());
    auto last = std::make_shared<std::function<void()>>(std::move(applied));
    for (auto& w : workers_) {
        net::post(w->io(), [this, worker = w.get(), next, auth, tls, pending, last] {
            worker->apply(next, auth, tls);
            if (pending->fetch_sub(1) == 1) {
                net::post(control_, std::move(*last));
            }
        });
    }
    config_ = next;
    auth_ = auth;
    responses_->set_limits(next->response_store);
    if (log::Level level; log::parse_level(next->log_level, level)) {
        log::set_level(level);
    }
    for (const auto& note : loaded.notes) {
        log::info(note);
    }
    for (const auto& r : restart) {
        log::warn(why + ": " + r + " changed: it needs a restart (the running value is kept)");
    }
    metrics_->count_reload(true);
    log::info(why + ": " + config_path_ + " applied; " +
              (changes.applied.empty() ? std::string("nothing else changed")
                                       : "changed: " + joined(changes.applied)) +
              (restart.empty() ? std::string() : "; needs a restart: " + joined(restart)));
    if (changes.routing_changed) {
        // Unchanged backends keep their replicas and what their probes found; new and changed
        // ones start over. Posted after the config above: a worker runs the new config first.
        start_backends();
        publish_table();
    }
    return {200, json_text([&](auto& w) {
                w.StartObject();
                w.Key("status");
                w.String("reloaded");
                w.Key("changed");
                w.StartArray();
                for (const auto& c : changes.applied) {
                    write_string(w, c);
                }
                w.EndArray();
                w.Key("needs_restart");
                w.StartArray();
                for (const auto& r : restart) {
                    write_string(w, r);
                }
                w.EndArray();
                w.EndObject();
            })};
}

Server::~Server() {
    // Its timer before control_ (declared after it) is destroyed; the pools of health checks
    // still pending unregister from it when control_ goes.
    if (control_deadlines_) {
        control_deadlines_->stop();
    }
}

}  // namespace infergate
