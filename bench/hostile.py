#!/usr/bin/env python3
"""The hostile-network battery with a bystander (issue 12, item 5). See bench/README.md.

    python3 bench/hostile.py [--infergate BIN] [--emulator BIN] [--seconds 5]

Starts the emulator (an OpenAI backend) and infergate in front of it, then runs each attack for
a few seconds while one background client keeps sending ordinary completions over a keep-alive
connection. For every attack it reports how the attack was answered and what the bystander saw:
its requests, errors and latency (p50, p99). An attack "costs nothing" when the bystander's
errors stay 0 and its p99 stays near the quiet baseline. Standard library only; the pass/fail
checks of each attack live in tests/integration (test_http_rfc, test_client_limits); this script
measures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODEL = "bench-model"
BODY = json.dumps({"model": MODEL, "prompt": "hello", "max_tokens": 4}).encode()


def start(argv: list[str]) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if line.startswith("listening on "):
            return p, int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"{argv[0]} did not start")


class Bystander(threading.Thread):
    """Ordinary completions, one after another, reconnecting after an error."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors = 0
        self.stop_flag = threading.Event()

    def run(self):
        conn = None
        while not self.stop_flag.is_set():
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/v1/completions", BODY,
                             {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn = None
            with self.lock:
                if ok:
                    self.latencies.append(time.perf_counter() - t0)
                else:
                    self.errors += 1

    def take(self) -> tuple[int, int, float, float]:
        with self.lock:
            lat, err = self.latencies, self.errors
            self.latencies, self.errors = [], 0
        if not lat:
            return 0, err, float("nan"), float("nan")
        lat.sort()
        return (len(lat), err, statistics.median(lat) * 1e3,
                lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3)


def raw(port: int, data: bytes, read: bool = True, timeout: float = 5) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and len(out) > 200:
                break
        return out
    finally:
        s.close()


def status_of(reply: bytes) -> str:
    line = reply.split(b"\r\n", 1)[0].decode("latin-1")
    return line.split(" ", 2)[1] if line.startswith("HTTP/") else ("closed" if not reply else "?")


# ---- the attacks: each runs for `seconds` and returns how it was answered ----------------------

def quiet(port, seconds):
    time.sleep(seconds)
    return "no attack (baseline)"


def slowloris(port, seconds, conns=300):
    socks = []
    for _ in range(conns):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\n")
            socks.append(s)
        except OSError:
            break
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in socks:
            try:
                s.sendall(b"X")
            except OSError:
                pass
        time.sleep(1)
    answered, still_open, closed = {}, 0, 0
    for s in socks:
        s.setblocking(False)
        try:
            data = s.recv(4096)
            if data:
                st = status_of(data)
                answered[st] = answered.get(st, 0) + 1
            else:
                closed += 1
        except BlockingIOError:
            still_open += 1
        except OSError:
            closed += 1
        s.close()
    return (f"{len(socks)} connections sending a header byte per second: answered {answered}, "
            f"closed {closed}, still open {still_open}")


def idle_connections(port, seconds, conns=2000):
    socks = []
    for _ in range(conns):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    time.sleep(seconds)
    for s in socks:
        s.close()
    return f"{len(socks)} idle connections opened"


def header_flood(port, seconds):
    statuses = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        head = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 70000 + b"\r\n\r\n"
        st = status_of(raw(port, head))
        statuses[st] = statuses.get(st, 0) + 1
    return f"70 KB header fields: {statuses}"


def body_flood(port, seconds):
    statuses = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000000\r\n\r\n")
        st = status_of(raw(port, head + b"{" * 65536))
        statuses[st] = statuses.get(st, 0) + 1
    return f"100 MB Content-Length: {statuses}"


def smuggling(port, seconds):
    cases = {
        "CL+TE": b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "two CL": b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "TE identity": b"Transfer-Encoding: identity\r\n\r\n{}",
        "obs-fold": b"Content-Length: 2\r\nX-A: 1\r\n b\r\n\r\n{}",
        "NUL": b"X-A: a\x00b\r\nContent-Length: 2\r\n\r\n{}",
    }
    out = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, rest in cases.items():
            out[name] = status_of(raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + rest))
    return "answers: " + ", ".join(f"{k} {v}" for k, v in out.items())


def h2_preface(port, seconds):
    st = "?"
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st = status_of(raw(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
    return f"HTTP/2 prior-knowledge preface: {st}"


def pipelining(port, seconds):
    n = 0
    end = time.monotonic() + seconds
    req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
    while time.monotonic() < end:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(req * 20)
        got = b""
        while got.count(b"HTTP/1.1 200") < 20:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        n += got.count(b"HTTP/1.1 200")
        s.close()
    return f"{n} pipelined requests answered (20 per connection)"


ATTACKS = [quiet, slowloris, idle_connections, header_flood, body_flood, smuggling, h2_preface,
           pipelining]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infergate", default=os.path.join(REPO, "build/proxy/infergate"))
    ap.add_argument("--emulator", default=os.path.join(REPO, "build/emulator/infergate-emulator"))
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client opens thousands too
    emu, emu_port = start([args.emulator, "--listen", "127.0.0.1:0", "--dialect", "openai",
                           "--model", MODEL, "--quiet"])
    cfg = os.path.join("/tmp", f"infergate-hostile-{os.getpid()}.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:0\naccess_log: off\nlog_level: error\n"
                f"client_header_ms: 2000\nclient_body_ms: 2000\n"
                f"backends:\n  - url: http://127.0.0.1:{emu_port}\n    dialect: openai\n"
                f"    model: {MODEL}\n")
    proxy, port = start([args.infergate, "--config", cfg])
    try:
        bystander = Bystander(port)
        bystander.start()
        time.sleep(1)
        bystander.take()
        rows = []
        for attack in ATTACKS:
            answer = attack(port, args.seconds)
            n, err, p50, p99 = bystander.take()
            alive = proxy.poll() is None
            rows.append((attack.__name__, n, err, p50, p99, alive, answer))
            print(f"{attack.__name__:17} bystander {n:6d} ok {err:3d} errors "
                  f"p50 {p50:6.2f} ms p99 {p99:6.2f} ms  proxy {'up' if alive else 'DOWN'}  "
                  f"| {answer}", flush=True)
            if not alive:
                break
        bystander.stop_flag.set()
        bystander.join(timeout=15)
    finally:
        proxy.terminate()
        emu.terminate()
        os.unlink(cfg)
    return 0 if all(r[2] == 0 and r[5] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
