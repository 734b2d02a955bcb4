#!/usr/bin/env python3
"""A mixed-traffic soak that watches infergate's memory (issue 12, item 6). See bench/README.md.

    python3 bench/soak.py [--infergate BIN] [--emulator BIN] [--minutes 10] [--interval 30]
                          [--clients 8] [--threads 1] [--seed 1]

Starts the emulator (an OpenAI backend) and infergate in front of it, then N client threads send
a fixed-seed random mix for --minutes: every front dialect's generation route, whole and
streamed; streams on which the emulator waits between tokens (X-Emulator-ITL-Ms) so that they
last; streams the client abandons after the first chunk(s); some invalid JSON (400 expected) and
unknown routes (404 expected); a few GET info routes. Connections are kept alive, with a new one
now and then. Every --interval seconds one line: infergate's VmRSS and VmHWM, its open fds, its
CPU use, the requests done in the interval, the expected 400/404/abandoned counts and the
unexpected errors (other statuses, exceptions, an in-band error in a stream).

At the end: RSS after the first interval (the warm-up) vs the last sample, the maximum, and the
least-squares slope of RSS over the second half of the samples. "flat" when that slope times the
second half's length is < 5 % of the RSS or < 1 MiB, else "GROWING". Once the clients have
stopped, /metrics is scraped and infergate_requests_in_flight must be back to 0. Exit status 1
when RSS grows, infergate died, an unexpected error happened or the in-flight gauge stayed
above 0. Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

from stack import start, start_emulator, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODEL = "soak-model"
PROMPT = "The quick brown fox jumps over the lazy dog and keeps running through the field"
JSON = {"Content-Type": "application/json"}
ANTHROPIC = {"Content-Type": "application/json", "anthropic-version": "2023-06-01"}
# Streams that last: 30 tokens 5 ms apart. Abandoned streams: 200 tokens 5 ms apart, so the
# backend is still sending when the client leaves.
LONG = {"X-Emulator-ITL-Ms": "5"}
ABANDON = {"X-Emulator-ITL-Ms": "5"}


# ---- the requests ------------------------------------------------------------------------------

def generation(route: str, tokens: int, stream: bool) -> tuple[str, dict, dict]:
    """(path, body, headers) of one generation request in a front dialect."""
    msgs = [{"role": "user", "content": PROMPT}]
    if route == "openai_completions":
        body = {"model": MODEL, "prompt": PROMPT, "max_tokens": tokens}
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return "/v1/completions", body, JSON
    if route == "openai_chat":
        body = {"model": MODEL, "messages": msgs, "max_tokens": tokens}
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return "/v1/chat/completions", body, JSON
    if route == "sglang":
        body = {"text": PROMPT, "sampling_params": {"max_new_tokens": tokens}}
        if stream:
            body["stream"] = True
        return "/generate", body, JSON
    if route == "tgi":
        return ("/generate_stream" if stream else "/generate",
                {"inputs": PROMPT, "parameters": {"max_new_tokens": tokens, "details": True}}, JSON)
    if route == "tgi_root":
        return "/", {"inputs": PROMPT, "stream": stream,
                     "parameters": {"max_new_tokens": tokens, "return_full_text": False}}, JSON
    if route == "vllm_legacy":
        body = {"prompt": PROMPT, "max_tokens": tokens}
        if stream:
            body["stream"] = True
        return "/generate", body, JSON
    if route == "ollama_generate":
        return "/api/generate", {"model": MODEL, "prompt": PROMPT, "stream": stream,
                                 "options": {"num_predict": tokens}}, JSON
    if route == "ollama_raw":
        return "/api/generate", {"model": MODEL, "prompt": PROMPT, "raw": True, "stream": stream,
                                 "options": {"num_predict": tokens}}, JSON
    if route == "ollama_chat":
        return "/api/chat", {"model": MODEL, "messages": msgs, "stream": stream,
                             "options": {"num_predict": tokens}}, JSON
    if route == "llamacpp":
        body = {"prompt": PROMPT, "n_predict": tokens}
        if stream:
            body["stream"] = True
        return "/completion", body, JSON
    if route == "anthropic":
        body = {"model": MODEL, "max_tokens": tokens, "messages": msgs}
        if stream:
            body["stream"] = True
        return "/v1/messages", body, ANTHROPIC
    raise ValueError(route)


ROUTES = ["openai_completions", "openai_chat", "sglang", "tgi", "tgi_root", "vllm_legacy",
          "ollama_generate", "ollama_raw", "ollama_chat", "llamacpp", "anthropic"]
BAD_JSON_PATHS = ["/v1/completions", "/v1/chat/completions", "/generate", "/generate_stream",
                  "/api/generate", "/api/chat", "/completion", "/v1/messages"]
INFO = ["/v1/models", "/health", "/api/tags", "/api/version", "/props", "/info"]
UNKNOWN = [("GET", "/no/such/route"), ("POST", "/v1/embeddings"), ("POST", "/api/pull")]

# (kind, weight): the share of each kind of request in the mix.
KINDS = [("whole", 35), ("stream", 35), ("long_stream", 6), ("abandon", 10), ("bad_json", 4),
         ("unknown", 4), ("info", 6)]
NEW_CONNECTION = 0.1  # otherwise the request reuses the client's keep-alive connection


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.done = 0           # requests that ended as expected (including the 400s and 404s)
        self.expected = {"400": 0, "404": 0, "abandoned": 0}
        self.errors = 0
        self.error_kinds: dict[str, int] = {}
        self.by_kind: dict[str, int] = {}

    def ok(self, kind: str, expected: str | None = None):
        with self.lock:
            self.done += 1
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
            if expected:
                self.expected[expected] += 1

    def error(self, what: str):
        with self.lock:
            self.errors += 1
            self.error_kinds[what] = self.error_kinds.get(what, 0) + 1

    def take(self) -> tuple[int, dict, int]:
        with self.lock:
            out = (self.done, dict(self.expected), self.errors)
            self.done, self.errors = 0, 0
            self.expected = {k: 0 for k in self.expected}
            return out


class Client(threading.Thread):
    def __init__(self, port: int, seed: int, stats: Stats, stop: threading.Event):
        super().__init__(daemon=True)
        self.port, self.rng, self.stats, self.stop = port, random.Random(seed), stats, stop
        self.conn: http.client.HTTPConnection | None = None
        self.kinds = [k for k, _ in KINDS]
        self.weights = [w for _, w in KINDS]
        self.route_i = self.rng.randrange(len(ROUTES))

    def connection(self) -> http.client.HTTPConnection:
        if self.conn is not None and self.rng.random() < NEW_CONNECTION:
            self.drop()
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        return self.conn

    def drop(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def next_route(self) -> str:
        self.route_i = (self.route_i + 1) % len(ROUTES)  # round-robin over the front dialects
        return ROUTES[self.route_i]

    def run(self):
        while not self.stop.is_set():
            kind = self.rng.choices(self.kinds, self.weights)[0]
            label = kind
            try:
                label = self.one(kind)
            except (OSError, http.client.HTTPException) as e:
                self.stats.error(f"{label}: {type(e).__name__}")
                self.drop()
        self.drop()

    def one(self, kind: str) -> str:
        rng = self.rng
        if kind in ("whole", "stream", "long_stream", "abandon"):
            route = self.next_route()
            stream = kind != "whole"
            tokens = {"whole": 16, "stream": 16, "long_stream": 30, "abandon": 200}[kind]
            path, body, headers = generation(route, tokens, stream)
            headers = dict(headers)
            headers.update({"long_stream": LONG, "abandon": ABANDON}.get(kind, {}))
            label = f"{kind} {route}"
            conn = self.connection()
            conn.request("POST", path, json.dumps(body).encode(), headers)
            r = conn.getresponse()
            if r.status != 200:
                r.read()
                self.stats.error(f"{label}: status {r.status}")
                return label
            if kind == "abandon":
                for _ in range(rng.randint(1, 3)):
                    if not r.read1(65536):
                        break
                self.drop()  # leaves mid-stream
                self.stats.ok(kind, "abandoned")
                return label
            data = r.read()
            if stream:
                # An in-band error event or record in any dialect names "error" as a JSON key.
                if not data or b'"error"' in data:
                    self.stats.error(f"{label}: bad stream {data[-200:]!r}")
                    return label
            else:
                try:
                    json.loads(data)
                except ValueError:
                    self.stats.error(f"{label}: body not JSON")
                    return label
            if r.will_close:
                self.drop()
            self.stats.ok(kind)
            return label
        if kind == "bad_json":
            path = rng.choice(BAD_JSON_PATHS)
            label = f"bad_json {path}"
            conn = self.connection()
            conn.request("POST", path, b'{"model": "' + MODEL.encode() + b'", "prompt": ', JSON)
            return self.expect(conn, label, kind, 400, "400")
        if kind == "unknown":
            method, path = rng.choice(UNKNOWN)
            label = f"unknown {method} {path}"
            conn = self.connection()
            conn.request(method, path, b"{}" if method == "POST" else None,
                         JSON if method == "POST" else {})
            return self.expect(conn, label, kind, 404, "404")
        path = rng.choice(INFO)
        label = f"info {path}"
        conn = self.connection()
        conn.request("GET", path)
        return self.expect(conn, label, kind, 200, None)

    def expect(self, conn, label, kind, status, expected) -> str:
        r = conn.getresponse()
        r.read()
        if r.will_close:
            self.drop()
        if r.status == status:
            self.stats.ok(kind, expected)
        else:
            self.stats.error(f"{label}: status {r.status}")
        return label


# ---- the process being watched -----------------------------------------------------------------

def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (KiB) and Threads from /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(rest.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def in_flight(port: int) -> tuple[float | None, list[str]]:
    """The sum of the in-flight / active gauges in /metrics, and their sample lines."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    lines = [l for l in text.splitlines()
             if not l.startswith("#") and re.search(r"in_flight|inflight|active", l.split(" ")[0])]
    if not lines:
        return None, []
    return sum(float(l.rsplit(" ", 1)[1]) for l in lines), lines


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infergate", default=os.path.join(REPO, "build/proxy/infergate"))
    ap.add_argument("--emulator", default=os.path.join(REPO, "build/emulator/infergate-emulator"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--interval", type=float, default=30, help="seconds between samples")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="infergate worker threads")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    emu, emu_port = start_emulator(args.emulator, MODEL)
    cfg = write_config("soak", emu_port, MODEL, f"threads: {args.threads}\nlog_level: error\n")
    proxy, port = start([args.infergate, "--config", cfg])
    pid = proxy.pid
    stats, stop = Stats(), threading.Event()
    samples: list[tuple[float, int, int, int]] = []  # (minutes, VmRSS, VmHWM, fds)
    died = False
    try:
        st0, fd0 = proc_status(pid), fds(pid)
        print(f"infergate pid {pid}, --threads {args.threads}, {args.clients} clients, "
              f"seed {args.seed}, {args.minutes:g} min, a sample every {args.interval:g} s; "
              f"idle: VmRSS {st0['VmRSS']} KiB, {fd0} fds", flush=True)
        print(f"{'elapsed':>8} {'VmRSS KiB':>10} {'VmHWM KiB':>10} {'fds':>5} {'cpu %':>6} "
              f"{'requests':>9} {'req/s':>7} {'400':>5} {'404':>5} {'abandon':>7} {'errors':>6}",
              flush=True)
        clients = [Client(port, args.seed * 1000 + i, stats, stop) for i in range(args.clients)]
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        for c in clients:
            c.start()
        last_t, last_cpu = t0, cpu_seconds(pid)
        tick = t0
        while True:
            tick = min(tick + args.interval, end)
            if stop.wait(max(0.0, tick - time.monotonic())):
                break
            if proxy.poll() is not None:
                died = True
                print(f"infergate DIED (exit status {proxy.returncode})", flush=True)
                break
            now = time.monotonic()
            st, nfd, cpu = proc_status(pid), fds(pid), cpu_seconds(pid)
            n, exp, err = stats.take()
            samples.append(((now - t0) / 60, st["VmRSS"], st["VmHWM"], nfd))
            print(f"{now - t0:7.0f}s {st['VmRSS']:10d} {st['VmHWM']:10d} {nfd:5d} "
                  f"{100 * (cpu - last_cpu) / (now - last_t):6.1f} {n:9d} "
                  f"{n / (now - last_t):7.0f} {exp['400']:5d} {exp['404']:5d} "
                  f"{exp['abandoned']:7d} {err:6d}", flush=True)
            last_t, last_cpu = now, cpu
            if now >= end:
                break
        stop.set()
        for c in clients:
            c.join(timeout=60)
        n, exp, err = stats.take()  # what finished after the last sample
        if err:
            print(f"{'(after)':>8} {'':>10} {'':>10} {'':>5} {'':>6} {n:9d} {'':>7} "
                  f"{exp['400']:5d} {exp['404']:5d} {exp['abandoned']:7d} {err:6d}")
        died = died or proxy.poll() is not None

        # ---- the summary ----
        print()
        total_err = sum(stats.error_kinds.values())
        print("requests by kind: "
              + ", ".join(f"{k} {v}" for k, v in sorted(stats.by_kind.items())))
        print(f"unexpected errors: {total_err}" + (
            " (" + "; ".join(f"{k} x{v}" for k, v in sorted(stats.error_kinds.items())[:10]) + ")"
            if total_err else ""))
        verdict, ok = "no samples", False
        if samples:
            rss = [s[1] for s in samples]
            first, last = samples[0], samples[-1]
            print(f"VmRSS: idle {st0['VmRSS']} KiB; after the warm-up (first sample, "
                  f"{first[0]:.1f} min) {first[1]} KiB; last {last[1]} KiB "
                  f"({last[1] - first[1]:+d} KiB); max {max(rss)} KiB; "
                  f"VmHWM {max(s[2] for s in samples)} KiB")
            half = samples[len(samples) // 2:]
            if len(half) >= 2:
                xs, ys = [s[0] for s in half], [s[1] for s in half]
                k = slope(xs, ys)
                growth = k * (xs[-1] - xs[0])
                limit = max(0.05 * last[1], 1024)
                verdict = "flat" if growth < limit else "GROWING"
                ok = growth < limit
                print(f"trend over the second half ({len(half)} samples, {xs[0]:.1f}-{xs[-1]:.1f} "
                      f"min): {k:+.1f} KiB/min, {growth:+.0f} KiB over it "
                      f"(limit {limit:.0f} KiB: 5 % of RSS or 1 MiB) -> {verdict}")
            else:
                print("trend: too few samples for a slope (use a longer run or a shorter "
                      "--interval)")
                ok = True
                verdict = "too short"
            print(f"fds: idle {fd0}, samples {min(s[3] for s in samples)}-"
                  f"{max(s[3] for s in samples)}, "
                  f"after the clients stopped {fds(pid) if not died else '-'}")
        gauge_ok = False
        if not died:
            value, lines = in_flight(port)
            if value is None:
                print("in-flight gauge: no in_flight/active family in /metrics")
            else:
                gauge_ok = value == 0
                print(f"in-flight gauge after the clients stopped: {'; '.join(lines)}"
                      + ("" if gauge_ok else "  <- NOT 0"))
                if not gauge_ok:  # does it get there late (a leak is never), within 5 s?
                    t1 = time.monotonic()
                    while value and time.monotonic() - t1 < 5:
                        time.sleep(0.1)
                        value, lines = in_flight(port)
                    print(f"  {'0' if not value else 'still ' + '; '.join(lines)} after "
                          f"{time.monotonic() - t1:.1f} s more")
        print(f"infergate: {'DIED' if died else 'alive'}; RSS {verdict}; "
              f"unexpected errors {total_err}")
        return 0 if ok and not died and total_err == 0 and gauge_ok else 1
    finally:
        stop.set()
        proxy.terminate()
        emu.terminate()
        for p in (proxy, emu):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        os.unlink(cfg)


if __name__ == "__main__":
    sys.exit(main())
