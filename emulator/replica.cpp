#include "emulator/replica.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace infergate::emulator {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

// The socket of a queued request turned readable: true when that is its client's EOF or an
// error, false for bytes (a pipelined next request), which stay unread.
bool peer_left(tcp::socket& socket) {
    char byte = 0;
    const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::string ms_text(Clock::duration d) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", std::chrono::duration<double, std::milli>(d).count());
    return text;
}

}  // namespace

void Ticket::wake() {
    net::post(timer.get_executor(), [self = shared_from_this()] { self->timer.cancel(); });
}

Replica::Replica(const Options& options) : options_(options.replica), quiet_(options.quiet) {
    if (options_.prefix_cache > 0) {
        cache_.emplace(options_.prefix_cache, options_.prefix_block);
    }
}

void Replica::log(std::string_view line) const {
    if (quiet_) {
        return;
    }
    std::string text(line.substr(0, 400));
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stderr);
}

bool Replica::enter(const std::shared_ptr<Ticket>& t) {
    const std::lock_guard lock(mutex_);
    if (running_ < options_.max_running && queue_.empty()) {
        ++running_;
        t->granted = true;
        return true;
    }
    queue_.push_back(t);
    return false;
}

void Replica::release() {
    std::shared_ptr<Ticket> next;
    {
        const std::lock_guard lock(mutex_);
        if (queue_.empty()) {
            --running_;
            return;
        }
        next = std::move(queue_.front());
        queue_.pop_front();
        next->granted = true;  // the slot passes on: running_ stays
    }
    next->wake();
}

void Replica::leave_queue(const Ticket& t) {
    const std::lock_guard lock(mutex_);
    std::erase_if(queue_, [&t](const std::shared_ptr<Ticket>& q) { return q.get() == &t; });
}

void Replica::enlist(const std::shared_ptr<Ticket>& t) {
    const std::lock_guard lock(mutex_);
    listed_.push_back(t);
}

void Replica::delist(const Ticket& t) {
    const std::lock_guard lock(mutex_);
    std::erase_if(listed_, [&t](const std::shared_ptr<Ticket>& l) { return l.get() == &t; });
}

bool Replica::abort(std::string_view rid, bool all) {
    auto has = [](const Ticket& t, auto&& match) {
        return std::any_of(t.rids.begin(), t.rids.end(), match);
    };
    std::vector<std::shared_ptr<Ticket>> stopped;
    {
        const std::lock_guard lock(mutex_);
        const bool found =
            all ? !listed_.empty() : std::any_of(listed_.begin(), listed_.end(), [&](auto& t) {
                return has(*t, [rid](const std::string& r) { return r == rid; });
            });
        if (!found) {
            return false;
        }
        for (const std::shared_ptr<Ticket>& t : listed_) {
            if (all || has(*t, [rid](const std::string& r) { return r.starts_with(rid); })) {
                t->aborted = true;
                stopped.push_back(t);
            }
        }
        // Queued ones leave the queue at once, as the scheduler pops its waiting queue.
        std::erase_if(queue_, [](const std::shared_ptr<Ticket>& q) { return q->aborted.load(); });
    }
    for (const std::shared_ptr<Ticket>& t : stopped) {
        t->wake();
    }
    return true;
}

Generation::Generation(Request& req)
    : req_(req),
      replica_(req.replica),
      started_(req.received),
      first_token_delay_(std::chrono::milliseconds(req.knobs.ttft_ms)) {
    req.gen = this;
}

Generation::~Generation() {
    req_.gen = nullptr;
    if (replica_ == nullptr) {
        return;
    }
    if (holds_slot_) {
        replica_->release();
    }
    if (listed_) {
        replica_->delist(*ticket_);
    }
    if (replica_->options().logs_generations()) {
        replica_->log("gen " + std::string(req_.path.substr(0, 300)) + " prompt=" +
                      std::to_string(prompt_tokens_) + " cached=" + std::to_string(cached_tokens_) +
                      " queued_ms=" + ms_text(queued_) +
                      " total_ms=" + ms_text(Clock::now() - req_.received));
    }
}

net::awaitable<void> Generation::sleep(Conn& conn, Clock::duration d) {
    if (d <= Clock::duration::zero()) {
        co_return;
    }
    if (!ticket_) {
        co_await conn.sleep_for(d);
        co_return;
    }
    if (ticket_->aborted) {
        co_return;
    }
    ticket_->timer.expires_after(d);
    co_await ticket_->timer.async_wait(kNoThrow);
}

net::awaitable<bool> Generation::wait_for_slot(Conn& conn) {
    using namespace net::experimental::awaitable_operators;
    Ticket& t = *ticket_;
    if (replica_->enter(ticket_)) {
        holds_slot_ = true;
        co_return true;
    }
    ran_ = false;
    const Clock::time_point since = Clock::now();
    bool watch = true;  // for the client's EOF, until it pipelines a next request
    bool left = false;
    while (!t.granted && !t.aborted && !left) {
        t.timer.expires_at(Clock::time_point::max());
        if (!watch) {
            co_await t.timer.async_wait(kNoThrow);
            continue;
        }
        const auto woke = co_await (t.timer.async_wait(kNoThrow) ||
                                    conn.socket().async_wait(tcp::socket::wait_read, kNoThrow));
        if (woke.index() == 1) {
            left = peer_left(conn.socket());
            watch = false;
        }
    }
    if (left) {
        replica_->leave_queue(t);
    }
    holds_slot_ = t.granted;
    ran_ = holds_slot_;
    queued_ = Clock::now() - since;
    started_ = Clock::now();
    co_return !left;
}

void Generation::look_up(const std::vector<const PromptKey*>& prompts,
                         std::vector<ChoiceState>& choices) {
    PrefixCache* cache = replica_ != nullptr && ran_ ? replica_->cache() : nullptr;
    const std::size_t per_prompt = std::max<std::size_t>(1, choices.size() / prompts.size());
    int uncached = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        const PromptKey& p = *prompts[i];
        const int cached = cache != nullptr ? cache->lookup_and_insert(p.token_keys) : 0;
        for (std::size_t k = i * per_prompt; k < std::min(choices.size(), (i + 1) * per_prompt);
             ++k) {
            choices[k].cached_tokens = cached;
        }
        cached_tokens_ += cached;
        uncached += p.tokens - cached;
    }
    if (replica_ != nullptr) {
        first_token_delay_ += std::chrono::microseconds(std::int64_t{uncached} *
                                                        replica_->options().prefill_us_per_token);
    }
}

net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req,
                                                  const std::vector<const PromptKey*>& prompts,
                                                  std::vector<ChoiceState>& choices,
                                                  std::vector<std::string> rids) {
    auto gen = std::make_unique<Generation>(req);
    for (const PromptKey* p : prompts) {
        gen->prompt_tokens_ += p->tokens;
    }
    Replica* replica = req.replica;
    const bool queues = replica != nullptr && replica->options().max_running > 0;
    if (replica != nullptr && (queues || !rids.empty())) {
        gen->ticket_ = std::make_shared<Ticket>(conn.socket().get_executor());
        gen->ticket_->rids = std::move(rids);
        if (!gen->ticket_->rids.empty()) {
            replica->enlist(gen->ticket_);
            gen->listed_ = true;
        }
    }
    if (queues && !co_await gen->wait_for_slot(conn)) {
        conn.reset();  // the client left while its request waited
        co_return nullptr;
    }
    gen->look_up(prompts, choices);
    co_return gen;
}

net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req,
                                                  const std::vector<PromptKey>& prompts,
                                                  std::vector<ChoiceState>& choices) {
    std::vector<const PromptKey*> pointers;
    pointers.reserve(prompts.size());
    for (const PromptKey& p : prompts) {
        pointers.push_back(&p);
    }
    co_return co_await admit(conn, req, pointers, choices);
}

net::awaitable<std::unique_ptr<Generation>> admit(Conn& conn, Request& req, const PromptKey& prompt,
                                                  std::vector<ChoiceState>& choices) {
    const std::vector<const PromptKey*> one(1, &prompt);
    co_return co_await admit(conn, req, one, choices);
}

}  // namespace infergate::emulator
