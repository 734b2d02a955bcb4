// bench-loadgen: the benchmark's own HTTP/1.1 client (single-threaded epoll; pin it with taskset).
//
//   stream  --conns N          N keep-alive connections, each running one SSE stream after another.
//                              Reads the " @k.NS" markers bench-backend puts in every token (NS =
//                              the backend's CLOCK_MONOTONIC send time) and reports completed
//                              streams/s, time to first chunk, per-chunk latency (receive time -
//                              backend send time) and held-back chunks: chunk k counts as held back
//                              when it reached the client after the backend had already sent k+1.
//   rate   --rate R --conns C  open-loop non-stream requests at R/s over up to C connections;
//                              latency from the scheduled send time (no coordinated omission).
//   idle   --conns N           N connections, one request each, then idle: prints "ready N" and
//                              holds them until stdin closes (the caller measures memory).
//
// Common: --port P [--host 127.0.0.1] --path /x --body-file F [--warmup S] [--duration S]
//         [--stagger S] [--tokens N]. Prints one JSON object on stdout.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int64_t *v;
    size_t n, cap;
} Samples;

static void add(Samples *s, int64_t x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->v = realloc(s->v, s->cap * sizeof(int64_t));
    }
    s->v[s->n++] = x;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(Samples *s, double p) {  // microseconds; s must be sorted
    if (!s->n) return -1;
    size_t i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
    return (double)s->v[i] / 1000.0;
}

enum { kHead, kChunkSize, kChunkData, kChunkCrlf, kTrailer, kLength, kUntilClose, kDone };

typedef struct Conn {
    int fd;
    int idx;
    int connected, busy, dead;
    char *in;
    size_t in_len, in_cap;
    size_t out_off;  // bytes of the request already written
    // response parser
    int state, status;
    size_t remain;
    // SSE event assembly
    char *ev;
    size_t ev_len, ev_cap;
    // per-stream bookkeeping
    int64_t sent_ns, sched_ns, last_recv_ns, start_at;
    int last_k;
    struct Conn *next_idle;
} Conn;

static int mode_stream, mode_rate, mode_idle;
static int ep, tfd;
static char *req;
static size_t req_len;
static struct sockaddr_in addr;
static int64_t t0, warm_end, run_end;
static int tokens_expected = 64;
static Conn *conns;
static int nconns;

// results
static Samples lat, ttfc, rate_lat;
static long completed, incomplete, held_back, pairs, missing, errors, chunks, responses, chunks_all;
static long connect_fail, ready_count;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int in_window(int64_t t) { return t >= warm_end && t < run_end; }

static void conn_open(Conn *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->connected = 0;
    c->dead = 0;
    int r = connect(c->fd, (struct sockaddr *)&addr, sizeof addr);
    if (r < 0 && errno != EINPROGRESS) {
        connect_fail++;
        close(c->fd);
        c->dead = 1;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void send_request(Conn *c, int64_t sched) {
    c->busy = 1;
    c->state = kHead;
    c->ev_len = 0;
    c->last_k = -1;
    c->sched_ns = sched;
    c->sent_ns = now_ns();
    c->out_off = 0;
    ssize_t w = write(c->fd, req, req_len);
    if (w < 0) w = 0;
    c->out_off = (size_t)w;
    if (c->out_off < req_len) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
}

static void on_token(Conn *c, int k, int64_t sent, int64_t recv) {
    if (k <= c->last_k) return;
    chunks_all++;
    int win = in_window(recv);
    if (win) {
        chunks++;
        add(&lat, recv - sent);
        if (k == 0) add(&ttfc, recv - c->sent_ns);
        if (c->last_k >= 0 && k == c->last_k + 1) {
            pairs++;
            if (c->last_recv_ns > sent) held_back++;
        }
        if (k != c->last_k + 1) missing += k - c->last_k - 1;
    }
    c->last_k = k;
    c->last_recv_ns = recv;
}

static void on_event(Conn *c, const char *p, size_t n, int64_t recv) {
    // The newest token is the last " @k.NS" marker of the event (SGLang repeats earlier ones).
    const char *at = NULL;
    for (size_t i = n; i-- > 0;) {
        if (p[i] == '@') { at = p + i; break; }
    }
    if (!at) return;
    char *end;
    long k = strtol(at + 1, &end, 10);
    if (*end != '.') return;
    long long ns = strtoll(end + 1, NULL, 10);
    on_token(c, (int)k, (int64_t)ns, recv);
}

static void body_bytes(Conn *c, const char *p, size_t n, int64_t recv) {
    if (!mode_stream) return;
    if (c->ev_len + n > c->ev_cap) {
        c->ev_cap = (c->ev_len + n) * 2 + 4096;
        c->ev = realloc(c->ev, c->ev_cap);
    }
    memcpy(c->ev + c->ev_len, p, n);
    size_t scan_from = c->ev_len > 1 ? c->ev_len - 1 : 0;
    c->ev_len += n;
    size_t start = 0;
    for (size_t i = scan_from; i + 1 < c->ev_len; i++) {
        if (c->ev[i] == '\n' && c->ev[i + 1] == '\n') {
            on_event(c, c->ev + start, i - start, recv);
            start = i + 2;
            i++;
        }
    }
    if (start) {
        memmove(c->ev, c->ev + start, c->ev_len - start);
        c->ev_len -= start;
    }
}

static void next_request(Conn *c);

static void response_done(Conn *c, int64_t t) {
    c->busy = 0;
    responses++;
    if (c->status != 200) errors++;
    if (mode_stream) {
        if (in_window(t)) {
            if (c->last_k + 1 == tokens_expected) completed++;
            else incomplete++;
        }
    } else if (mode_rate) {
        if (in_window(c->sched_ns)) add(&rate_lat, t - c->sched_ns);
    } else if (mode_idle) {
        ready_count++;
    }
    next_request(c);
}

// Consumes c->in; returns 0 if more bytes are needed.
static void parse(Conn *c, int64_t recv) {
    size_t off = 0;
    while (off < c->in_len && c->busy) {
        char *p = c->in + off;
        size_t avail = c->in_len - off;
        if (c->state == kHead) {
            char *e = memmem(p, avail, "\r\n\r\n", 4);
            if (!e) break;
            c->status = atoi(p + 9);
            c->state = kUntilClose;
            for (char *q = p; q < e; q++) {
                if (*q != '\n') continue;
                if (strncasecmp(q + 1, "content-length:", 15) == 0) {
                    c->remain = strtoul(q + 16, NULL, 10);
                    c->state = kLength;
                } else if (strncasecmp(q + 1, "transfer-encoding:", 18) == 0 &&
                           memmem(q, (size_t)(e - q), "chunked", 7)) {
                    c->state = kChunkSize;
                }
            }
            off += (size_t)(e - p) + 4;
            if (c->state == kLength && c->remain == 0) response_done(c, recv);
        } else if (c->state == kChunkSize) {
            char *e = memmem(p, avail, "\r\n", 2);
            if (!e) break;
            c->remain = strtoul(p, NULL, 16);
            off += (size_t)(e - p) + 2;
            c->state = c->remain ? kChunkData : kTrailer;
        } else if (c->state == kChunkData || c->state == kLength) {
            size_t n = avail < c->remain ? avail : c->remain;
            body_bytes(c, p, n, recv);
            c->remain -= n;
            off += n;
            if (!c->remain) {
                if (c->state == kLength) response_done(c, recv);
                else c->state = kChunkCrlf;
            }
        } else if (c->state == kChunkCrlf) {
            if (avail < 2) break;
            off += 2;
            c->state = kChunkSize;
        } else if (c->state == kTrailer) {
            char *e = memmem(p, avail, "\r\n", 2);
            if (!e) break;
            off += (size_t)(e - p) + 2;
            if (e == p) response_done(c, recv);
        } else if (c->state == kUntilClose) {
            body_bytes(c, p, avail, recv);
            off += avail;
        } else {
            break;
        }
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
}

// rate mode: idle connections and requests waiting for one
static Conn *idle_list;
static int64_t *backlog;
static size_t backlog_head, backlog_len, backlog_cap;
static int64_t next_sched, period_ns;
static int stopping;

static void next_request(Conn *c) {
    if (mode_idle) return;
    int64_t t = now_ns();
    if (t >= run_end) {
        stopping = 1;
        return;
    }
    if (mode_stream) {
        send_request(c, t);
        return;
    }
    if (backlog_len) {
        int64_t s = backlog[backlog_head];
        backlog_head = (backlog_head + 1) % backlog_cap;
        backlog_len--;
        send_request(c, s);
    } else {
        c->next_idle = idle_list;
        idle_list = c;
    }
}

static void conn_failed(Conn *c) {
    if (c->dead) return;
    c->dead = 1;
    if (c->busy) errors++;
    if (c->busy && mode_idle) connect_fail++;
    c->busy = 0;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
}

static void on_io(Conn *c, uint32_t events) {
    if (c->dead) return;
    if (!c->connected && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) {
            connect_fail++;
            conn_failed(c);
            return;
        }
        c->connected = 1;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        if (mode_rate) {
            c->next_idle = idle_list;
            idle_list = c;
        } else if (mode_idle) {
            send_request(c, now_ns());
        } else if (c->start_at <= now_ns()) {
            send_request(c, now_ns());
        }
        return;
    }
    if ((events & EPOLLOUT) && c->busy && c->out_off < req_len) {
        ssize_t w = write(c->fd, req + c->out_off, req_len - c->out_off);
        if (w > 0) c->out_off += (size_t)w;
        if (c->out_off == req_len) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        for (;;) {
            if (c->in_cap - c->in_len < 16384) {
                c->in_cap = c->in_cap ? c->in_cap * 2 : 32768;
                c->in = realloc(c->in, c->in_cap);
            }
            ssize_t r = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
            int64_t t = now_ns();
            if (r == 0 || (r < 0 && errno != EAGAIN)) {
                if (c->busy && c->state == kUntilClose) response_done(c, t);
                conn_failed(c);
                return;
            }
            if (r < 0) break;
            c->in_len += (size_t)r;
            parse(c, t);
            if (c->in_cap - c->in_len > 0 && (size_t)r < 16384) break;
        }
    }
}

static void arm_at(int64_t at) {
    struct itimerspec its = {0};
    its.it_value.tv_sec = at / 1000000000ll;
    its.it_value.tv_nsec = at % 1000000000ll;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *path = "/v1/completions", *body_file = NULL;
    int port = 0;
    double warmup = 1, duration = 3, stagger = 0.35, rate = 1000;
    nconns = 64;
    if (argc < 2) {
        fprintf(stderr, "usage: bench-loadgen stream|rate|idle [options]\n");
        return 2;
    }
    mode_stream = !strcmp(argv[1], "stream");
    mode_rate = !strcmp(argv[1], "rate");
    mode_idle = !strcmp(argv[1], "idle");
    if (!mode_stream && !mode_rate && !mode_idle) return 2;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "--path")) path = v;
        else if (!strcmp(a, "--body-file")) body_file = v;
        else if (!strcmp(a, "--conns")) nconns = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atof(v);
        else if (!strcmp(a, "--duration")) duration = atof(v);
        else if (!strcmp(a, "--stagger")) stagger = atof(v);
        else if (!strcmp(a, "--rate")) rate = atof(v);
        else if (!strcmp(a, "--tokens")) tokens_expected = atoi(v);
        else {
            fprintf(stderr, "bench-loadgen: unknown option %s\n", a);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    char body[65536];
    size_t blen = 0;
    if (body_file) {
        FILE *f = fopen(body_file, "rb");
        if (!f) { perror(body_file); return 2; }
        blen = fread(body, 1, sizeof body, f);
        fclose(f);
    }
    req = malloc(blen + 512);
    req_len = (size_t)sprintf(req,
                              "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                              "Content-Length: %zu\r\n\r\n",
                              path, host, port, blen);
    memcpy(req + req_len, body, blen);
    req_len += blen;
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &addr.sin_addr);

    ep = epoll_create1(0);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);

    conns = calloc((size_t)nconns, sizeof(Conn));
    t0 = now_ns();
    warm_end = t0 + (int64_t)(warmup * 1e9);
    run_end = warm_end + (int64_t)(duration * 1e9);
    period_ns = (int64_t)(1e9 / rate);
    next_sched = warm_end - (int64_t)(warmup * 1e9 / 2);  // half the warm-up at the same rate
    if (mode_rate) {
        backlog_cap = 1 << 20;
        backlog = malloc(backlog_cap * sizeof(int64_t));
    }
    for (int i = 0; i < nconns; i++) {
        conns[i].idx = i;
        conns[i].start_at = t0 + (int64_t)(stagger * 1e9 * i / nconns);
    }
    // Connect in waves so that listen backlogs never overflow (a dropped SYN costs 1 s).
    int opened = 0;
    int64_t stagger_tick = 0;
    struct epoll_event evs[1024];
    int all_ready_printed = 0;
    int started = 0;
    for (;;) {
        int64_t t = now_ns();
        int inflight = 0;
        for (int i = (opened > 512 ? opened - 512 : 0); i < opened; i++) {
            inflight += !conns[i].connected && !conns[i].dead;
        }
        while (opened < nconns && inflight < 256) {
            conn_open(&conns[opened++]);
            inflight++;
        }
        if (mode_stream && t >= stagger_tick && started < nconns) {  // start staggered streams that are due
            for (int i = 0; i < nconns; i++) {
                Conn *c = &conns[i];
                if (c->connected && !c->busy && !c->dead && !c->sent_ns && c->start_at <= t &&
                    t < run_end) {
                    send_request(c, t);
                }
                started += c->sent_ns != 0 || c->dead;
            }
            if (started < nconns) started = 0;
            stagger_tick = t + 1000000;
        }
        if (mode_rate) {
            while (next_sched <= t && next_sched < run_end) {
                if (idle_list) {
                    Conn *c = idle_list;
                    idle_list = c->next_idle;
                    send_request(c, next_sched);
                } else if (backlog_len < backlog_cap) {
                    backlog[(backlog_head + backlog_len++) % backlog_cap] = next_sched;
                }
                next_sched += period_ns;
            }
            if (next_sched < run_end) arm_at(next_sched);
        }
        if (mode_idle && !all_ready_printed && ready_count + connect_fail >= nconns) {
            printf("ready %ld\n", ready_count);
            fflush(stdout);
            all_ready_printed = 1;
            char b[64];
            while (read(0, b, sizeof b) > 0) {}
            break;
        }
        if (mode_stream && t >= run_end) break;
        if (!mode_idle && t >= run_end + 500000000ll) break;  // grace for in-flight answers
        if (!mode_idle && t >= run_end && stopping) {
            int busy = 0;
            for (int i = 0; i < nconns && !busy; i++) busy = conns[i].busy && !conns[i].dead;
            if (!busy) break;
        }
        int timeout = mode_stream ? 1 : (mode_rate ? 1 : 100);
        int n = epoll_wait(ep, evs, 1024, timeout);
        for (int i = 0; i < n; i++) {
            if (!evs[i].data.ptr) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) < 0) {}
                continue;
            }
            on_io(evs[i].data.ptr, evs[i].events);
        }
        if (mode_idle && now_ns() - t0 > 120000000000ll) break;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    double wall = (double)(now_ns() - t0) / 1e9;
    qsort(lat.v, lat.n, sizeof(int64_t), cmp64);
    qsort(ttfc.v, ttfc.n, sizeof(int64_t), cmp64);
    qsort(rate_lat.v, rate_lat.n, sizeof(int64_t), cmp64);
    printf("{\"mode\":\"%s\",\"conns\":%d,\"duration\":%.3f,\"completed\":%ld,\"incomplete\":%ld,"
           "\"streams_per_s\":%.2f,\"chunks\":%ld,\"chunks_per_s\":%.1f,"
           "\"chunk_p50_us\":%.1f,\"chunk_p99_us\":%.1f,\"chunk_max_us\":%.1f,"
           "\"ttfc_p50_us\":%.1f,\"ttfc_p99_us\":%.1f,\"held_back\":%ld,\"pairs\":%ld,"
           "\"missing\":%ld,\"lat_n\":%zu,\"lat_p50_us\":%.1f,\"lat_p99_us\":%.1f,"
           "\"lat_p999_us\":%.1f,\"rate\":%.1f,\"achieved_rate\":%.1f,\"errors\":%ld,"
           "\"connect_fail\":%ld,\"ready\":%ld,\"responses\":%ld,\"client_cpu_s\":%.3f,"
           "\"client_wall_s\":%.3f,\"chunks_all\":%ld}\n",
           argv[1], nconns, duration, completed, incomplete, completed / duration, chunks,
           chunks / duration, pct(&lat, 50), pct(&lat, 99), pct(&lat, 100), pct(&ttfc, 50),
           pct(&ttfc, 99), held_back, pairs, missing, rate_lat.n, pct(&rate_lat, 50),
           pct(&rate_lat, 99), pct(&rate_lat, 99.9), mode_rate ? rate : 0.0,
           rate_lat.n / duration, errors, connect_fail, ready_count, responses, cpu, wall, chunks_all);
    return 0;
}
