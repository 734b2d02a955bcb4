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
import multiprocessing
import re
import os
import resource
import socket
import statistics
import subprocess
import sys
import time

from stack import start, start_emulator, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODEL = "bench-model"
BODY = json.dumps({"model": MODEL, "prompt": "hello", "max_tokens": 4}).encode()


def bystander_loop(port: int, pipe) -> None:
    """Ordinary completions, one after another over a keep-alive connection, reconnecting
    after an error; answers "take" on `pipe` with what it saw since the last one. A process of
    its own: as a thread it waited for the attack threads' GIL for milliseconds between two
    requests, and at the proxy's connection cap a keep-alive connection idle that long is
    rightly the first to be shed."""
    latencies: list[float] = []
    errors = 0
    conn = None
    while True:
        if pipe.poll():
            if pipe.recv() == "stop":
                return
            pipe.send((latencies, errors))
            latencies, errors = [], 0
        t0 = time.perf_counter()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/v1/completions", BODY, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            conn = None
        if ok:
            latencies.append(time.perf_counter() - t0)
        else:
            errors += 1


class Bystander:
    def __init__(self, port: int):
        self.pipe, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=bystander_loop, args=(port, child),
                                               daemon=True)

    def start(self):
        self.process.start()

    def stop(self):
        self.pipe.send("stop")
        self.process.join(timeout=15)

    def take(self) -> tuple[int, int, float, float]:
        self.pipe.send("take")
        lat, err = self.pipe.recv()
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


def idle_connections(port, seconds, conns=10000):
    """Connections that connect and send nothing (the proxy's cap is half its descriptors;
    at the cap the oldest idle one gives way)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    conns = min(conns, soft - 256)  # room for the bystander and this script
    socks = []
    for _ in range(conns):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    time.sleep(seconds)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1  # by the proxy: shed at the cap, or past client_header_ms
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    return (f"{len(socks)} idle connections opened, {closed} of them closed by the proxy (shed "
            f"at its cap, or silent past client_header_ms)")


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
        "bare LF": b"Content-Length: 2\nX-A: b\r\n\r\n{}",
    }
    out = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, rest in cases.items():
            out[name] = status_of(raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + rest))
    return "answers: " + ", ".join(f"{k} {v}" for k, v in out.items())


def slow_body(port, seconds, conns=200):
    """Heads sent whole, then the body a byte per second: under client_body_min_rate once the
    first client_body_ms are over, so each gets 408 instead of holding its connection."""
    socks = []
    for _ in range(conns):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: 100000\r\n\r\n{")
            socks.append(s)
        except OSError:
            break
    answered: dict[str, int] = {}
    pending = list(socks)
    end = time.monotonic() + max(seconds, 6)  # client_body_ms (2 s) and its rate grace
    while pending and time.monotonic() < end:
        still = []
        for s in pending:
            try:
                s.sendall(b" ")
                still.append(s)
            except OSError:  # answered and closed: read what it said
                pass
        pending = still
        time.sleep(1)
    for s in socks:
        s.setblocking(False)
        try:
            st = status_of(s.recv(4096))
        except BlockingIOError:
            st = "still open"
        except OSError:
            st = "reset"
        answered[st] = answered.get(st, 0) + 1
        s.close()
    return f"{len(socks)} bodies at 1 byte/s: {answered}"


FAULTS = {  # X-Emulator-Fault values (emulator/options.hpp): the backend misbehaving for one request
    "reset": False, "reset_midstream": True, "close_midstream": True, "garbage": False,
    "status:503": False, "stall": False,
}


def backend_faults(port, seconds):
    """Requests whose backend answer goes wrong (the emulator, told by a header, resets, cuts,
    stalls or answers garbage for that request only), and a 103 Early Hints before an answer:
    each ends with a clear error (or the answer) for its own client only."""
    statuses: dict[str, dict[str, int]] = {}
    body = json.dumps({"model": MODEL, "prompt": "hello", "max_tokens": 8}).encode()
    stream_body = json.dumps({"model": MODEL, "prompt": "hello", "max_tokens": 8,
                              "stream": True}).encode()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for fault, stream in list(FAULTS.items()) + [("interim 103", False)]:
            headers = {"Content-Type": "application/json"}
            if fault == "interim 103":
                headers["X-Emulator-Interim"] = "103"
            else:
                headers["X-Emulator-Fault"] = fault
            # A stalled backend: this client gives up after a second (the proxy must let go
            # of the upstream request too).
            conn = http.client.HTTPConnection("127.0.0.1", port,
                                              timeout=1 if fault == "stall" else 10)
            try:
                conn.request("POST", "/v1/completions", stream_body if stream else body, headers)
                r = conn.getresponse()
                data = r.read()
                st = str(r.status)
                if stream and r.status == 200:
                    st += " + in-band error" if b'"error"' in data else " (no error event!)"
            except socket.timeout:
                st = "client gave up"
            except (OSError, http.client.HTTPException) as e:
                st = type(e).__name__
            finally:
                conn.close()
            per = statuses.setdefault(fault, {})
            per[st] = per.get(st, 0) + 1
    return "; ".join(f"{k}: {v}" for k, v in statuses.items())


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


ATTACKS = [quiet, slowloris, idle_connections, slow_body, header_flood, body_flood, smuggling,
           h2_preface, pipelining, backend_faults]


def start_proxy(binary: str, cfg: str, fd_limit: int | None = None
                ) -> tuple[subprocess.Popen, int, str]:
    """infergate with its warnings in a file (read after the attack); `fd_limit` sets its soft
    and hard descriptor limits, as a small container's would be."""
    log = cfg + (f".{fd_limit}" if fd_limit else "") + ".log"

    def limit():
        if fd_limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))
    with open(log, "w") as err:
        p, port = start([binary, "--config", cfg], stderr=err, preexec_fn=limit)
    return p, port, log


def report(name: str, bystander: Bystander, proxy: subprocess.Popen, answer: str, rows: list):
    n, err, p50, p99 = bystander.take()
    alive = proxy.poll() is None
    rows.append((name, n, err, p50, p99, alive, answer))
    print(f"{name:17} bystander {n:6d} ok {err:3d} errors "
          f"p50 {p50:6.2f} ms p99 {p99:6.2f} ms  proxy {'up' if alive else 'DOWN'}  "
          f"| {answer}", flush=True)
    return alive


def fd_limit_scenario(binary: str, cfg: str, seconds: float, rows: list):
    """A proxy started with 256 descriptors (soft and hard) and 2,000 connections: it caps
    itself below half of them, sheds the connections idle the longest and logs it; its own
    bystander keeps being served."""
    proxy, port, log = start_proxy(binary, cfg, fd_limit=256)
    bystander = Bystander(port)
    try:
        bystander.start()
        wait_served(bystander)
        answer = idle_connections(port, seconds, conns=2000)
        with open(log) as f:
            text = f.read()
        wanted = {"the raised descriptor limit": r"file descriptor limit 256\b",
                  "the shedding": r"connection limit of \d+ reached \(limits.max_connections\): "
                                  r"closed the oldest idle connection"}
        missing = [k for k, rx in wanted.items() if not re.search(rx, text)]
        report("fd_limit (256)", bystander, proxy,
               f"{answer}; log: " + ("; ".join(l for l in text.splitlines()
                                               if "limit" in l)[:300]), rows)
        if missing:
            rows.append(("fd_limit log", 0, 1, 0, 0, True, "missing log lines"))
            print(f"fd_limit: the log does not say {missing}")
    finally:
        bystander.stop()
        proxy.terminate()
        proxy.wait()
        os.unlink(log)


def wait_served(bystander: Bystander):
    """Until the bystander has had one answer (the proxy is up and routing), then reset."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and bystander.take()[0] == 0:
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--infergate", default=os.path.join(REPO, "build/proxy/infergate"))
    ap.add_argument("--emulator", default=os.path.join(REPO, "build/emulator/infergate-emulator"))
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client opens thousands too
    print(f"descriptor limit of this client and the proxy: {hard}", flush=True)
    emu, emu_port = start_emulator(args.emulator, MODEL)
    cfg = write_config("hostile", emu_port, MODEL,
                       "log_level: info\nclient_header_ms: 2000\nclient_body_ms: 2000\n")
    rows: list = []
    try:
        proxy, port, log = start_proxy(args.infergate, cfg)
        try:
            bystander = Bystander(port)
            bystander.start()
            wait_served(bystander)
            for attack in ATTACKS:
                answer = attack(port, args.seconds)
                if not report(attack.__name__, bystander, proxy, answer, rows):
                    break
            bystander.stop()
        finally:
            proxy.terminate()
            proxy.wait()
            os.unlink(log)
        fd_limit_scenario(args.infergate, cfg, args.seconds, rows)
    finally:
        emu.terminate()
        os.unlink(cfg)
    failed = [r[0] for r in rows if r[2] or not r[5]]
    print("bystander errors or a proxy down in: " + ", ".join(failed) if failed else
          "every attack: 0 bystander errors, proxy up")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
