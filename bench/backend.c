// bench-backend: a minimal epoll HTTP/1.1 server that answers like vLLM's OpenAI server
// (POST /v1/completions, non-stream and SSE stream; GET /v1/models) and does nothing else, so
// that it is never the bottleneck of a proxy benchmark.
//
// Every streamed token carries its own send time: the text of token k is " @k.NS" where NS is
// CLOCK_MONOTONIC in nanoseconds read just before the write(2) that sends it. A client on the
// same machine compares it with its receive time (per-chunk latency) and with the send time of
// token k+1 (was token k held back until the next one was sent?). The marker survives any
// translation that keeps the text (OpenAI deltas, SGLang cumulative text).
//
// Usage: bench-backend [--listen HOST:PORT] [--ttft-ms N] [--itl-ms N] [--model M]
// Prints "listening on HOST:PORT" once bound. Single-threaded (pin it with taskset).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { kReadMax = 1 << 20 };

typedef struct Conn {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;             // bytes not yet accepted by the kernel
    size_t out_len, out_cap;
    int streaming;         // a stream is in progress: requests wait in `in`
    int tokens, sent;      // stream budget and tokens sent so far
    int usage;             // include_usage asked
    int want_out;          // EPOLLOUT armed
    int closed;
} Conn;

typedef struct Timer {
    uint64_t at;
    Conn *c;
} Timer;

static Timer *heap;
static size_t heap_len, heap_cap;
static int ep, tfd;
static uint64_t ttft_ns = 5000000, itl_ns = 5000000;
static const char *model = "M";
static uint64_t armed_at = 0;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void heap_push(Timer t) {
    if (heap_len == heap_cap) {
        heap_cap = heap_cap ? heap_cap * 2 : 1024;
        heap = realloc(heap, heap_cap * sizeof(Timer));
    }
    size_t i = heap_len++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (heap[p].at <= t.at) break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = t;
}

static Timer heap_pop(void) {
    Timer top = heap[0];
    Timer last = heap[--heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        Timer *best = &last;
        if (l < heap_len && heap[l].at < best->at) { m = l; best = &heap[l]; }
        if (r < heap_len && heap[r].at < best->at) { m = r; }
        if (m == i) break;
        heap[i] = heap[m];
        i = m;
    }
    if (heap_len) heap[i] = last;
    return top;
}

static void arm_timer(void) {
    if (!heap_len) return;
    uint64_t at = heap[0].at;
    if (armed_at && armed_at <= at && armed_at > now_ns()) return;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(at / 1000000000ull);
    its.it_value.tv_nsec = (long)(at % 1000000000ull);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    armed_at = at;
}

static Conn **graveyard;
static size_t graveyard_len, graveyard_cap;

static void defer_free(Conn *c) {
    if (graveyard_len == graveyard_cap) {
        graveyard_cap = graveyard_cap ? graveyard_cap * 2 : 256;
        graveyard = realloc(graveyard, graveyard_cap * sizeof(Conn *));
    }
    graveyard[graveyard_len++] = c;
}

static void conn_close(Conn *c) {
    if (c->closed) return;
    c->closed = 1;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    // Freed after the current epoll batch (a later event of the batch may name it); a streaming
    // connection still has a timer entry, whose expiry frees it instead.
    if (!c->streaming) defer_free(c);
}

static void set_out_interest(Conn *c, int on) {
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

static void out_append(Conn *c, const char *p, size_t n) {
    if (c->out_len + n > c->out_cap) {
        c->out_cap = (c->out_len + n) * 2;
        c->out = realloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

// Sends p (after anything still queued); returns -1 if the connection died.
static int send_bytes(Conn *c, const char *p, size_t n) {
    if (c->out_len) {
        out_append(c, p, n);
        return 0;
    }
    ssize_t w = write(c->fd, p, n);
    if (w < 0) {
        if (errno != EAGAIN) return -1;
        w = 0;
    }
    if ((size_t)w < n) {
        out_append(c, p + w, n - (size_t)w);
        set_out_interest(c, 1);
    }
    return 0;
}

static int flush_out(Conn *c) {
    while (c->out_len) {
        ssize_t w = write(c->fd, c->out, c->out_len);
        if (w < 0) {
            if (errno == EAGAIN) return 0;
            return -1;
        }
        memmove(c->out, c->out + w, c->out_len - (size_t)w);
        c->out_len -= (size_t)w;
    }
    set_out_interest(c, 0);
    return 0;
}

static const char *kHeadJson =
    "HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"
    "content-length: %zu\r\ncontent-type: application/json\r\n\r\n";
static const char *kHeadSse =
    "HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"
    "content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
static const char *kId = "cmpl-0123456789abcdef0123456789abcdef";

static int answer_json(Conn *c, const char *body, size_t n) {
    char buf[16384];
    int h = snprintf(buf, sizeof buf, kHeadJson, n);
    if (n + (size_t)h > sizeof buf) return -1;
    memcpy(buf + h, body, n);
    return send_bytes(c, buf, (size_t)h + n);
}

static int find_int(const char *body, size_t n, const char *key, int dflt) {
    const char *p = memmem(body, n, key, strlen(key));
    if (!p) return dflt;
    p += strlen(key);
    while (p < body + n && (*p == ' ' || *p == ':' || *p == '"')) p++;
    if (p >= body + n || *p < '0' || *p > '9') return dflt;
    return atoi(p);
}

static int has_true(const char *body, size_t n, const char *key) {
    const char *p = memmem(body, n, key, strlen(key));
    if (!p) return 0;
    p += strlen(key);
    while (p < body + n && (*p == ' ' || *p == ':' || *p == '"')) p++;
    return p + 4 <= body + n && memcmp(p, "true", 4) == 0;
}

static int words(const char *body, size_t n) {
    // Rough prompt token count: spaces in the body (the usage numbers only need to be plausible).
    int k = 1;
    for (size_t i = 0; i < n; i++) k += body[i] == ' ';
    return k;
}

static int send_chunk(Conn *c, const char *data, size_t n) {
    char buf[4096];
    int h = snprintf(buf, sizeof buf, "%zx\r\n", n);
    if ((size_t)h + n + 2 > sizeof buf) return -1;
    memcpy(buf + h, data, n);
    memcpy(buf + h + n, "\r\n", 2);
    return send_bytes(c, buf, (size_t)h + n + 2);
}

static void stream_step(Conn *c);

static int handle_request(Conn *c, const char *head, size_t head_len, const char *body,
                          size_t body_len) {
    if (head_len >= 4 && memcmp(head, "GET ", 4) == 0) {
        char b[512];
        int n = snprintf(b, sizeof b,
                         "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\","
                         "\"created\":1767225600,\"owned_by\":\"vllm\",\"root\":\"%s\","
                         "\"parent\":null,\"max_model_len\":65536,\"permission\":[]}]}",
                         model, model);
        return answer_json(c, b, (size_t)n);
    }
    int tokens = find_int(body, body_len, "\"max_tokens\"", 16);
    if (tokens < 1) tokens = 1;
    if (tokens > 4096) tokens = 4096;
    int prompt = words(body, body_len);
    if (has_true(body, body_len, "\"stream\"")) {
        c->streaming = 1;
        c->tokens = tokens;
        c->sent = 0;
        c->usage = has_true(body, body_len, "\"include_usage\"");
        if (send_bytes(c, kHeadSse, strlen(kHeadSse)) < 0) return -1;
        heap_push((Timer){now_ns() + ttft_ns, c});
        arm_timer();
        return 0;
    }
    char b[8192];
    int n = snprintf(b, sizeof b,
                     "{\"id\":\"%s\",\"object\":\"text_completion\",\"created\":1767225600,"
                     "\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"",
                     kId, model);
    for (int i = 0; i < tokens && n < 7000; i++) n += snprintf(b + n, sizeof b - n, " the");
    n += snprintf(b + n, sizeof b - n,
                  "\",\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null,"
                  "\"token_ids\":null,\"prompt_logprobs\":null,\"prompt_token_ids\":null}],"
                  "\"service_tier\":null,\"system_fingerprint\":null,\"usage\":{\"prompt_tokens\":"
                  "%d,\"total_tokens\":%d,\"completion_tokens\":%d,\"prompt_tokens_details\":"
                  "null},\"kv_transfer_params\":null}",
                  prompt, prompt + tokens, tokens);
    return answer_json(c, b, (size_t)n);
}

// Parses and answers whole requests in c->in while no stream is running.
static int process_input(Conn *c) {
    size_t off = 0;
    while (!c->streaming) {
        char *start = c->in + off;
        size_t avail = c->in_len - off;
        char *end = memmem(start, avail, "\r\n\r\n", 4);
        if (!end) break;
        size_t head_len = (size_t)(end - start) + 4;
        size_t clen = 0;
        for (char *p = start; p < end; p++) {
            if ((*p == '\n') && end - p > 16 && strncasecmp(p + 1, "content-length:", 15) == 0) {
                clen = strtoul(p + 16, NULL, 10);
            }
        }
        if (avail < head_len + clen) break;
        if (handle_request(c, start, head_len, start + head_len, clen) < 0) return -1;
        off += head_len + clen;
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    return 0;
}

static void stream_step(Conn *c) {
    char data[1024];
    int k = c->sent;
    int last = k + 1 == c->tokens;
    uint64_t t = now_ns();
    int n = snprintf(data, sizeof data,
                     "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":1767225600,"
                     "\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\" @%d.%llu\","
                     "\"logprobs\":null,\"finish_reason\":%s,\"stop_reason\":null,"
                     "\"prompt_token_ids\":null,\"token_ids\":null}]}\n\n",
                     kId, model, k, (unsigned long long)t, last ? "\"length\"" : "null");
    if (send_chunk(c, data, (size_t)n) < 0) {
        c->streaming = 0;  // its timer entry was just popped
        conn_close(c);
        return;
    }
    c->sent++;
    if (!last) {
        heap_push((Timer){t + itl_ns, c});
        return;
    }
    char tail[1024];
    size_t m = 0;
    if (c->usage) {
        n = snprintf(data, sizeof data,
                     "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":1767225600,"
                     "\"model\":\"%s\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,"
                     "\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n",
                     kId, model, 8 + c->tokens, c->tokens);
        m += (size_t)snprintf(tail + m, sizeof tail - m, "%x\r\n%s\r\n", n, data);
    }
    m += (size_t)snprintf(tail + m, sizeof tail - m, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
    c->streaming = 0;
    if (send_bytes(c, tail, m) < 0 || process_input(c) < 0) conn_close(c);
}

static void on_timer(void) {
    uint64_t exp;
    if (read(tfd, &exp, sizeof exp) < 0) { /* spurious */ }
    armed_at = 0;
    uint64_t now = now_ns();
    while (heap_len && heap[0].at <= now) {
        Timer t = heap_pop();
        if (t.c->closed) {
            defer_free(t.c);  // a streaming connection's only timer entry
            continue;
        }
        stream_step(t.c);
    }
    arm_timer();
}

static void on_readable(Conn *c) {
    for (;;) {
        if (c->in_cap - c->in_len < 4096) {
            if (c->in_cap >= kReadMax) { conn_close(c); return; }
            c->in_cap = c->in_cap ? c->in_cap * 2 : 8192;
            c->in = realloc(c->in, c->in_cap);
        }
        ssize_t r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (r == 0) { conn_close(c); return; }
        if (r < 0) {
            if (errno == EAGAIN) break;
            conn_close(c);
            return;
        }
        c->in_len += (size_t)r;
        if ((size_t)r < c->in_cap - c->in_len + (size_t)r) break;  // drained
    }
    if (process_input(c) < 0) conn_close(c);
}

int main(int argc, char **argv) {
    const char *listen_at = "127.0.0.1:0";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--listen")) { listen_at = v; i++; }
        else if (!strcmp(a, "--ttft-ms")) { ttft_ns = (uint64_t)(atof(v) * 1e6); i++; }
        else if (!strcmp(a, "--itl-ms")) { itl_ns = (uint64_t)(atof(v) * 1e6); i++; }
        else if (!strcmp(a, "--model")) { model = v; i++; }
        else { fprintf(stderr, "bench-backend: unknown option %s\n", a); return 2; }
    }
    signal(SIGPIPE, SIG_IGN);
    char host[64];
    const char *colon = strrchr(listen_at, ':');
    if (!colon || (size_t)(colon - listen_at) >= sizeof host) return 2;
    memcpy(host, listen_at, (size_t)(colon - listen_at));
    host[colon - listen_at] = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host, &sa.sin_addr);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 4096) < 0) {
        perror("bench-backend: bind");
        return 1;
    }
    socklen_t sl = sizeof sa;
    getsockname(ls, (struct sockaddr *)&sa, &sl);
    printf("listening on %s:%d\n", host, ntohs(sa.sin_port));
    fflush(stdout);

    ep = epoll_create1(0);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ls};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    ev.data.ptr = &tfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    struct epoll_event evs[512];
    for (;;) {
        int n = epoll_wait(ep, evs, 512, -1);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &ls) {
                for (;;) {
                    int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
                    if (fd < 0) break;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    Conn *c = calloc(1, sizeof(Conn));
                    c->fd = fd;
                    struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e2);
                }
            } else if (p == &tfd) {
                on_timer();
            } else {
                Conn *c = p;
                if (c->closed) continue;
                if (evs[i].events & EPOLLOUT) {
                    if (flush_out(c) < 0) { conn_close(c); continue; }
                }
                if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
            }
        }
        for (size_t i = 0; i < graveyard_len; i++) free(graveyard[i]);
        graveyard_len = 0;
    }
}
