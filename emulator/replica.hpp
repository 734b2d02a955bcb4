// One emulator process as one engine replica: what its connections share — the simulated prefix
// cache (--prefix-cache), the running slots (--max-running) and the SGLang requests that
// /abort_request can stop — and one generation request's stay in it (Generation), from its
// admission to its `gen` line on stderr.
//
// Only generations touch it, and only when an option or an SGLang rid asks: with every option
// off a generation takes no lock and arms no extra timer.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "emulator/generator.hpp"
#include "emulator/options.hpp"
#include "emulator/prefix_cache.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {

// What a generation shares with the replica while it waits or runs: the timer of its waits (a
// slot, TTFT, ITL), which a grant or an abort wakes from any thread, and the names
// /abort_request knows it by.
struct Ticket : std::enable_shared_from_this<Ticket> {
    explicit Ticket(const tcp::socket::executor_type& executor) : timer(executor) {}
    // Cancels the timer's wait on its own executor; thread-safe.
    void wake();

    net::steady_timer timer;
    std::vector<std::string> rids;
    std::atomic<bool> granted{false};
    std::atomic<bool> aborted{false};
};

class Replica {
public:
    explicit Replica(const Options& options);

    const ReplicaOptions& options() const { return options_; }
    PrefixCache* cache() { return cache_ ? &*cache_ : nullptr; }
    // One line on stderr (one write, so lines of several threads stay whole), unless --quiet.
    void log(std::string_view line) const;

    // --max-running: true when `t` may run at once (t.granted); otherwise it joins the queue
    // until release() grants it a slot and wakes it.
    bool enter(const std::shared_ptr<Ticket>& t);
    // A running generation ends: its slot goes to the first in the queue.
    void release();
    // A queued generation gives up its place (its client left); afterwards t.granted says
    // whether a slot was granted first (it then holds it).
    void leave_queue(const Ticket& t);

    // SGLang rids: listed while their generation is admitted, for abort().
    void enlist(const std::shared_ptr<Ticket>& t);
    void delist(const Ticket& t);
    // POST /abort_request: when a listed generation has exactly `rid` (the tokenizer manager's
    // check), every one with a rid that starts with `rid` (the scheduler's) is stopped, queued or
    // running; with `all`, every listed one. Returns whether any was found.
    bool abort(std::string_view rid, bool all);

private:
    const ReplicaOptions options_;
    const bool quiet_;
    std::optional<PrefixCache> cache_;
    std::mutex mutex_;
    int running_ = 0;
    std::deque<std::shared_ptr<Ticket>> queue_;
    std::vector<std::shared_ptr<Ticket>> listed_;
};

// One generation request from its admission to its end (the handler keeps it for the request's
// lifetime; req.gen points at it meanwhile). Its end releases the slot, delists its rids and
// logs `gen /path prompt=<n> cached=<n> queued_ms=<x.y> total_ms=<x.y>`.
class Generation {
public:
    using Clock = std::chrono::steady_clock;

    explicit Generation(Request& req);
    ~Generation();
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    // Stopped by /abort_request: while queued (it never ran) or while running.
    bool aborted() const { return ticket_ && ticket_->aborted; }
    bool aborted_in_queue() const { return aborted() && !ran_; }
    // When it got its slot (the request's arrival when it never queued), and how long after
    // that its first token comes: --ttft-ms plus the prefill of its uncached prompt tokens.
    Clock::time_point started() const { return started_; }
    Clock::duration first_token_delay() const { return first_token_delay_; }
    Clock::time_point first_token_at() const { return started_ + first_token_delay_; }
    // Waits `d` on the connection's time; an abort ends the wait at once.
    net::awaitable<void> sleep(Conn& conn, Clock::duration d);

private:
    friend net::awaitable<std::unique_ptr<Generation>> admit(Conn&, Request&,
                                                             const std::vector<const PromptKey*>&,
                                                             std::vector<ChoiceState>&,
                                                             std::vector<std::string>);

    net::awaitable<bool> wait_for_slot(Conn& conn);
    void look_up(const std::vector<const PromptKey*>& prompts, std::vector<ChoiceState>& choices);

    Request& req_;
    Replica* replica_;
    std::shared_ptr<Ticket> ticket_;
    bool holds_slot_ = false;
    bool listed_ = false;
    bool ran_ = true;
    Clock::time_point started_;
    Clock::duration queued_{};
    Clock::duration first_token_delay_{};
    int prompt_tokens_ = 0;
    int cached_tokens_ = 0;
};

// Admits a generation of `prompts` (one or more per request; `choices` in prompt order, the same
// number for each): waits for a slot under --max-running (FIFO), looks every prompt up in the
// prefix cache and sets each choice's cached_tokens, and lists `rids` (SGLang) for
// /abort_request. Null when the client left while queued (the connection is then reset).
net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req,
                                                  const std::vector<const PromptKey*>& prompts,
                                                  std::vector<ChoiceState>& choices,
                                                  std::vector<std::string> rids = {});
// The same for a vector of prompts, and for one.
net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req,
                                                  const std::vector<PromptKey>& prompts,
                                                  std::vector<ChoiceState>& choices);
net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req, const PromptKey& prompt,
                                                  std::vector<ChoiceState>& choices);

}  // namespace infergate::emulator
