#!/usr/bin/env python3
"""Side-by-side proxy benchmark for infergate (issue 5). See bench/README.md.

    python3 bench/run.py --quick      # smoke run, about 2 minutes
    python3 bench/run.py              # full run (3 rounds, medians), about 15 minutes

Targets, all in front of the same bench-backend (bench/backend.c) on loopback:
direct, nginx 1 and 2 workers, haproxy, infergate 1 and 2 threads on the same-dialect fast path
(/v1/completions -> OpenAI backend) and on the translated path (SGLang /generate -> OpenAI backend).
Rounds are interleaved (every target once per round, in a rotated order) and figures are medians
over rounds. Prints one table and writes it to docs/performance.md. Python standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ir  # noqa: E402  (bench/ir.py: the callgrind measurement)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODEL = "M"
PROMPT = " ".join(f"w{i:03d}" for i in range(200))  # 1,000 bytes of prompt text
NONSTREAM_TOKENS = 16
STREAM_TOKENS = 64
IDLE_CONNS = 10000


T0 = time.time()


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, file=sys.stderr, flush=True)


def run(cmd, **kw):
    log("$", " ".join(shlex.quote(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


# ---------------------------------------------------------------------------------------------
# build

def build(args):
    bdir = args.build_dir
    if not os.path.exists(os.path.join(bdir, "build.ninja")):
        run(["cmake", "-S", REPO, "-B", bdir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
            stdout=subprocess.DEVNULL)
    if not args.no_build and not args.infergate:
        run(["ninja", "-C", bdir, "-j2", "infergate"], stdout=subprocess.DEVNULL)
    out = os.path.join(bdir, "bench")
    os.makedirs(out, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    bins = {}
    for name in ("backend", "loadgen"):
        src = os.path.join(HERE, f"{name}.c")
        dst = os.path.join(out, f"bench-{name}")
        if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(src):
            run([cc, "-O2", "-Wall", "-o", dst, src])
        bins[name] = dst
    bins["infergate"] = args.infergate or os.path.join(bdir, "proxy", "infergate")
    if not os.path.exists(bins["infergate"]):
        sys.exit(f"missing {bins['infergate']}")
    return bins


# ---------------------------------------------------------------------------------------------
# /proc helpers

def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def cpu_seconds(pids):
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / tick


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def read_listening(proc, timeout=15.0):
    end = time.time() + timeout
    while time.time() < end:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("listening on "):
            return int(line.strip().rsplit(":", 1)[1])
    raise RuntimeError("no 'listening on' line")


def taskset(cpus):
    return ["taskset", "-c", cpus] if cpus else []


# ---------------------------------------------------------------------------------------------
# targets

class Target:
    """A proxy (or the backend itself) that can be started and stopped."""

    def __init__(self, name, kind, path_kind, threads):
        self.name, self.kind, self.path_kind, self.threads = name, kind, path_kind, threads
        self.proc = None
        self.port = None

    def pids(self):
        if self.kind == "direct":
            return [self.ctx.backend.pid]
        return [self.proc.pid] + children(self.proc.pid)

    def start(self, ctx):
        self.ctx = ctx
        cpus = ctx.proxy_cpus[self.threads]
        tmp = ctx.tmp
        if self.kind == "direct":
            self.port = ctx.backend_port
            return
        if self.kind == "infergate":
            cmd = taskset(cpus) + [ctx.bins["infergate"], "--upstream",
                                   f"http://127.0.0.1:{ctx.backend_port}", "--listen",
                                   "127.0.0.1:0", "--threads", str(self.threads),
                                   "--access-log", "off", "--upstream-dialect", "openai",
                                   "--model", MODEL, "--log-level", "warn"]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                         stderr=open(os.path.join(tmp, "infergate.err"), "a"))
            self.port = read_listening(self.proc)
        elif self.kind == "nginx":
            self.port = free_port()
            d = os.path.join(tmp, f"nginx-{self.threads}")
            os.makedirs(d, exist_ok=True)
            conf = os.path.join(d, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(workers=self.threads, dir=d, port=self.port,
                                          backend=ctx.backend_port))
            self.proc = subprocess.Popen(taskset(cpus) + ["nginx", "-p", d, "-c", conf, "-e",
                                                          os.path.join(d, "error.log")],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(self.port)
            end = time.time() + 5
            while len(children(self.proc.pid)) < self.threads and time.time() < end:
                time.sleep(0.02)
        elif self.kind == "haproxy":
            self.port = free_port()
            cfg = os.path.join(tmp, "haproxy.cfg")
            with open(cfg, "w") as f:
                f.write(HAPROXY_CONF.format(threads=self.threads, port=self.port,
                                            backend=ctx.backend_port,
                                            maxconn=ctx.haproxy_maxconn))
            self.proc = subprocess.Popen(taskset(cpus) + ["haproxy", "-db", "-f", cfg],
                                         stdout=subprocess.DEVNULL,
                                         stderr=open(os.path.join(tmp, "haproxy.err"), "a"))
            wait_port(self.port)
        time.sleep(0.2)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM if self.kind != "nginx" else signal.SIGQUIT)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


NGINX_CONF = """
worker_processes {workers};
daemon off;
pid {dir}/nginx.pid;
worker_rlimit_nofile 19000;
events {{ worker_connections 19000; use epoll; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    upstream backend {{ server 127.0.0.1:{backend}; keepalive 256; keepalive_requests 10000000; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""

HAPROXY_CONF = """
global
    nbthread {threads}
    maxconn {maxconn}
defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s
    option http-keep-alive
    option http-no-delay
    http-reuse always
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    server s1 127.0.0.1:{backend} pool-max-conn 256
"""

TARGETS = [
    ("direct", "direct", "fast", 1),
    ("nginx-1w", "nginx", "fast", 1),
    ("nginx-2w", "nginx", "fast", 2),
    ("haproxy-1t", "haproxy", "fast", 1),
    ("ig-1t-fast", "infergate", "fast", 1),
    ("ig-2t-fast", "infergate", "fast", 2),
    ("ig-1t-trans", "infergate", "trans", 1),
    ("ig-2t-trans", "infergate", "trans", 2),
]


# ---------------------------------------------------------------------------------------------
# request bodies

def write_bodies(tmp):
    bodies = {
        ("fast", False): {"model": MODEL, "prompt": PROMPT, "max_tokens": NONSTREAM_TOKENS},
        ("fast", True): {"model": MODEL, "prompt": PROMPT, "max_tokens": STREAM_TOKENS,
                         "stream": True},
        ("trans", False): {"text": PROMPT, "sampling_params": {"max_new_tokens": NONSTREAM_TOKENS}},
        ("trans", True): {"text": PROMPT, "sampling_params": {"max_new_tokens": STREAM_TOKENS},
                          "stream": True},
    }
    files = {}
    for (kind, stream), body in bodies.items():
        p = os.path.join(tmp, f"body-{kind}-{'stream' if stream else 'plain'}.json")
        with open(p, "w") as f:
            json.dump(body, f)
        files[(kind, stream)] = p
        if not stream:
            lua = os.path.join(tmp, f"post-{kind}.lua")
            with open(lua, "w") as f:
                f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                        f"wrk.body = [==[{json.dumps(body)}]==]\n")
            files[(kind, "lua")] = lua
    return files


PATHS = {"fast": "/v1/completions", "trans": "/generate"}


# ---------------------------------------------------------------------------------------------
# measurements

class Ctx:
    pass


def measure_cpu(ctx, target, fn):
    pids = target.pids()
    c0, b0, t0 = cpu_seconds(pids), cpu_seconds([ctx.backend.pid]), time.time()
    out = fn()
    c1, b1, t1 = cpu_seconds(pids), cpu_seconds([ctx.backend.pid]), time.time()
    return out, c1 - c0, (b1 - b0) / (t1 - t0)


def wrk(ctx, target, conns, duration):
    url = f"http://127.0.0.1:{target.port}{PATHS[target.path_kind]}"
    cmd = taskset(ctx.client_cpus) + ["wrk", "-t1", f"-c{conns}", f"-d{duration}s", "--latency",
                                      "-s", ctx.files[(target.path_kind, "lua")], url]

    def go():
        return subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30).stdout

    out, cpu, backend_util = measure_cpu(ctx, target, go)
    rps, reqs, errors = None, 0, 0
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("Requests/sec:"):
            rps = float(s.split()[1])
        elif " requests in " in s:
            reqs = int(s.split()[0])
        elif s.startswith("Non-2xx") or s.startswith("Socket errors"):
            errors += sum(int(x) for x in s.replace(",", " ").split() if x.isdigit())
    if rps is None:
        log("wrk gave no result:", out[-500:])
    return {"rps": rps, "cpu_us_per_req": cpu / reqs * 1e6 if reqs else None,
            "backend_util": backend_util, "errors": errors}


def loadgen(ctx, target, mode, extra, timeout, stream=False, sample_rss_at=None):
    cmd = taskset(ctx.client_cpus) + [
        ctx.bins["loadgen"], mode, "--port", str(target.port), "--path",
        PATHS[target.path_kind], "--body-file", ctx.files[(target.path_kind, stream)]] + extra
    rss = {}

    def go():
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        if sample_rss_at is not None:
            time.sleep(sample_rss_at)
            rss["live"] = rss_kib(target.pids())
        out, _ = p.communicate(timeout=timeout)
        res = json.loads(out.strip().splitlines()[-1])
        # -1 = no sample in the measured window
        return {k: (None if isinstance(v, float) and v < 0 else v) for k, v in res.items()}

    res, cpu, backend_util = measure_cpu(ctx, target, go)
    res["proxy_cpu_s"] = cpu
    res["backend_util"] = backend_util
    res.update(rss)
    return res


def one_round(ctx, target, d):
    r = {}
    for c in d["wrk_conns"]:
        w = wrk(ctx, target, c, d["wrk_s"])
        r[f"rps_c{c}"] = w["rps"]
        r[f"cpu_req_c{c}"] = w["cpu_us_per_req"]
        r[f"backend_util_c{c}"] = w["backend_util"]
        r[f"wrk_errors_c{c}"] = w["errors"]
    lat = loadgen(ctx, target, "rate", ["--rate", str(d["rate"]), "--conns", "64", "--warmup",
                                        str(d["warm_s"]), "--duration", str(d["rate_s"])],
                  timeout=d["rate_s"] + d["warm_s"] + 30)
    r["lat_p50"], r["lat_p99"] = lat["lat_p50_us"], lat["lat_p99_us"]
    r["lat_achieved"] = lat["achieved_rate"] / d["rate"]
    r["lat_errors"] = lat["errors"]
    for n in d["streams"]:
        warm = d["warm_s"] + 0.45  # staggered starts over 0.35 s, then one stream's length
        s = loadgen(ctx, target, "stream", ["--conns", str(n), "--warmup", str(warm),
                                            "--duration", str(d["stream_s"]), "--stagger", "0.35",
                                            "--tokens", str(STREAM_TOKENS)],
                    timeout=warm + d["stream_s"] + 30, stream=True,
                    sample_rss_at=warm + d["stream_s"] / 2)
        for k in ("streams_per_s", "chunks_per_s", "ttfc_p50_us", "ttfc_p99_us", "chunk_p50_us",
                  "chunk_p99_us", "held_back", "pairs", "missing", "incomplete", "errors",
                  "client_cpu_s", "client_wall_s", "backend_util"):
            r[f"s{n}_{k}"] = s[k]
        r[f"s{n}_rss_kib"] = s.get("live")
        # the CPU delta covers the whole client run (connects and warm-up too): all chunks
        chunks = s["chunks_all"]
        r[f"s{n}_cpu_us_per_chunk"] = s["proxy_cpu_s"] / chunks * 1e6 if chunks else None
    return r


def memory(ctx, target):
    target.start(ctx)
    try:
        time.sleep(0.5)
        idle = rss_kib(target.pids())
        conns = ctx.idle_conns
        if target.kind == "haproxy":
            conns = min(conns, ctx.haproxy_maxconn - 50)
        cmd = taskset(ctx.client_cpus) + [
            ctx.bins["loadgen"], "idle", "--port", str(target.port), "--path",
            PATHS[target.path_kind], "--body-file", ctx.files[(target.path_kind, False)],
            "--conns", str(conns)]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        ready = int(line.split()[1]) if line.startswith("ready") else 0
        time.sleep(0.3)
        held = rss_kib(target.pids())
        p.communicate(timeout=30)  # closes stdin: the client lets go
        return {"rss_idle_kib": idle, "rss_idle_conns_kib": held, "idle_ready": ready}
    finally:
        target.stop()


def callgrind(ctx, n, warm=20):
    """Instructions of infergate (1 thread, translated path, non-stream) for `warm` + n requests."""
    with open(ctx.files[("trans", False)], "rb") as f:
        body = f.read()
    return ir.instructions(ctx.bins["infergate"], ctx.backend_port, "trans", warm + n, ctx.tmp,
                           prefix=taskset(ctx.proxy_cpus[1]), data=body, model=MODEL)


# ---------------------------------------------------------------------------------------------
# report

def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, float) and digits == 0 and abs(v) < 10:
        digits = 2 if abs(v) < 1 else 1
    return f"{v:,.{digits}f}"


def describe(binary):
    """infergate --version plus the source tree's commit (and whether it had local changes)."""
    try:
        v = subprocess.run([binary, "--version"], capture_output=True, text=True,
                           timeout=10).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        v = "?"
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "proxy",
                                "translators", "config", "CMakeLists.txt"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        v += f" (`{binary}`, source {head}{' + uncommitted changes' if dirty else ''})"
    except OSError:
        pass
    return v


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(), "load": load}


def build_table(ctx, res, mem, direct_alone, d):
    names = [t[0] for t in TARGETS]
    base = {n: res[n] for n in names}
    rows = []  # (label, {name: value}, kind) kind: "hi" higher is better, "lo", "info"

    def row(label, fn, kind="lo"):
        rows.append((label, {n: fn(n) for n in names}, kind))

    def m(key):
        return lambda n: med(r.get(key) for r in base[n])

    for c in d["wrk_conns"]:
        row(f"non-stream req/s, {c} conns (wrk)", m(f"rps_c{c}"), "hi")
    row(f"  backend CPU use at {d['wrk_conns'][-1]} conns (1.0 = a core)",
        m(f"backend_util_c{d['wrk_conns'][-1]}"), "info")
    direct_p50, direct_p99 = m("lat_p50")("direct"), m("lat_p99")("direct")
    row(f"latency run: achieved / offered {d['rate']} req/s", m("lat_achieved"), "info")
    row(f"latency p50 at {d['rate']}/s, us (absolute)", m("lat_p50"), "info")
    row(f"latency p99 at {d['rate']}/s, us (absolute)", m("lat_p99"), "info")
    row("  added p50 over direct, us",
        lambda n: None if n == "direct" or m("lat_p50")(n) is None else m("lat_p50")(n) - direct_p50)
    row("  added p99 over direct, us",
        lambda n: None if n == "direct" or m("lat_p99")(n) is None else m("lat_p99")(n) - direct_p99)
    row(f"CPU per request, us (at {d['wrk_conns'][-1]} conns)", m(f"cpu_req_c{d['wrk_conns'][-1]}"))
    for s in d["streams"]:
        row(f"{s} streams: completed streams/s", m(f"s{s}_streams_per_s"), "hi")
        row(f"{s} streams: chunks/s", m(f"s{s}_chunks_per_s"), "hi")
        for key, label in (("ttfc_p50_us", "first chunk p50"), ("ttfc_p99_us", "first chunk p99"),
                           ("chunk_p50_us", "per-chunk p50"), ("chunk_p99_us", "per-chunk p99")):
            row(f"{s} streams: {label}, us", m(f"s{s}_{key}"), "info")
            base_v = m(f"s{s}_{key}")("direct")
            row(f"  added {label} over direct, us",
                lambda n, key=key, base_v=base_v: None if n == "direct" or base_v is None
                or m(f"s{s}_{key}")(n) is None else m(f"s{s}_{key}")(n) - base_v)
        row(f"{s} streams: held-back chunks, % of pairs",
            lambda n, s=s: (lambda hb, pr: 100.0 * hb / pr if pr else None)(
                m(f"s{s}_held_back")(n), m(f"s{s}_pairs")(n)), "info")
        row(f"{s} streams: CPU per chunk, us", m(f"s{s}_cpu_us_per_chunk"))
        row(f"{s} streams: client CPU use (1.0 = a core)",
            lambda n, s=s: (lambda c, w: c / w if c is not None and w else None)(
                m(f"s{s}_client_cpu_s")(n), m(f"s{s}_client_wall_s")(n)), "info")
        row(f"{s} streams: backend CPU use (1.0 = a core)", m(f"s{s}_backend_util"), "info")
    row("RSS idle, KiB", lambda n: mem[n]["rss_idle_kib"])
    row("idle keep-alive conns held (of those opened)",
        lambda n: mem[n]["idle_ready"], "info")
    row("RSS with those idle conns, KiB", lambda n: mem[n]["rss_idle_conns_kib"])
    row("  per idle conn above idle, KiB",
        lambda n: (mem[n]["rss_idle_conns_kib"] - mem[n]["rss_idle_kib"]) / max(
            1, mem[n]["idle_ready"]))
    big = max(d["streams"])
    row(f"RSS at {big} live streams, KiB", m(f"s{big}_rss_kib"))
    row("  per live stream above idle, KiB",
        lambda n: None if m(f"s{big}_rss_kib")(n) is None else
        (m(f"s{big}_rss_kib")(n) - mem[n]["rss_idle_kib"]) / big)

    width = max(len(r[0]) for r in rows) + 2
    lines = ["| figure | " + " | ".join(names) + " |",
             "|---|" + "---:|" * len(names)]
    for label, vals, kind in rows:
        cells = [fmt(vals[n]) for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        if kind in ("hi", "lo") and not label.startswith("  "):
            for ref in ("nginx-1w", "direct"):
                rv = vals.get(ref)
                rc = [("-" if vals[n] is None or not rv else f"{vals[n] / rv:.2f}x") for n in names]
                lines.append(f"|   ÷ {ref} | " + " | ".join(rc) + " |")
        elif label.startswith("  added"):
            rv = vals.get("nginx-1w")
            rc = [("-" if vals[n] is None or not rv or rv <= 0 else f"{vals[n] / rv:.2f}x")
                  for n in names]
            lines.append("|   ÷ nginx-1w's added | " + " | ".join(rc) + " |")
    return "\n".join(lines), width


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run (~2 min): 1 round, short runs")
    ap.add_argument("--rounds", type=int, help="rounds (default 3, quick 1)")
    ap.add_argument("--rate", type=int, default=1000,
                    help="request rate of the latency run (default 1000/s)")
    ap.add_argument("--build-dir", default="/work/build-bench")
    ap.add_argument("--no-build", action="store_true", help="do not run ninja (still compiles bench/*.c)")
    ap.add_argument("--infergate", help="use this infergate binary instead of building one")
    ap.add_argument("--targets", help="comma-separated subset of target names")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--output", default=os.path.join(REPO, "docs", "performance.md"),
                    help="markdown report ('-' = do not write)")
    args = ap.parse_args()

    d = {
        "rounds": args.rounds if args.rounds is not None else (1 if args.quick else 3),
        "wrk_conns": [64] if args.quick else [16, 128],
        "wrk_s": 1 if args.quick else 5,
        "rate": args.rate,
        "rate_s": 1 if args.quick else 5,
        "warm_s": 0.3 if args.quick else 1,
        "stream_s": 1 if args.quick else 5,
        "streams": [16, 256, 2048],
        "callgrind_n": 200,
        "callgrind_runs": 1 if args.quick else 2,
    }
    started = time.time()
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mach = machine()
    log(f"machine: {mach}")
    bins = build(args)

    ctx = Ctx()
    ctx.bins = bins
    ctx.version = describe(bins["infergate"])
    ctx.tmp = tempfile.mkdtemp(prefix="infergate-bench-")
    ctx.files = write_bodies(ctx.tmp)
    soft, hard = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)
    __import__("resource").setrlimit(__import__("resource").RLIMIT_NOFILE, (hard, hard))
    ctx.idle_conns = min(IDLE_CONNS, hard - 200)
    # haproxy wants 2 fds per connection and refuses to start when the hard limit is lower.
    ctx.haproxy_maxconn = min(IDLE_CONNS + 100, (hard - 300) // 2)

    ncpu = os.cpu_count() or 1
    if ncpu >= 4:
        ctx.proxy_cpus = {1: "0", 2: "0,1"}
        ctx.backend_cpus, ctx.client_cpus = "2", "3"
    elif ncpu >= 2:
        ctx.proxy_cpus = {1: "0", 2: "0,1"}
        ctx.backend_cpus, ctx.client_cpus = "1", "1"
    else:
        ctx.proxy_cpus = {1: "", 2: ""}
        ctx.backend_cpus = ctx.client_cpus = ""
    pinning = (f"proxy with 1 thread/worker on CPU {ctx.proxy_cpus[1] or 'any'}, with 2 on CPUs "
               f"{ctx.proxy_cpus[2] or 'any'}; backend on CPU {ctx.backend_cpus or 'any'}; "
               f"clients (wrk -t1, bench-loadgen) on CPU {ctx.client_cpus or 'any'}")
    log("pinning:", pinning)

    backend = subprocess.Popen(taskset(ctx.backend_cpus) + [
        bins["backend"], "--listen", "127.0.0.1:0", "--ttft-ms", "5", "--itl-ms", "5",
        "--model", MODEL], stdout=subprocess.PIPE, text=True)
    ctx.backend = backend
    ctx.backend_port = read_listening(backend)

    wanted = set(args.targets.split(",")) if args.targets else None
    global TARGETS
    if wanted:
        TARGETS = [t for t in TARGETS if t[0] in wanted or t[0] in ("direct", "nginx-1w")]
    targets = [Target(*t) for t in TARGETS]
    res = {t.name: [] for t in targets}
    mem = {}
    ir = []
    try:
        for rnd in range(d["rounds"]):
            order = targets[rnd % len(targets):] + targets[:rnd % len(targets)]
            if rnd % 2:
                order = order[::-1]
            for t in order:
                log(f"round {rnd + 1}/{d['rounds']}: {t.name}")
                t.start(ctx)
                try:
                    res[t.name].append(one_round(ctx, t, d))
                finally:
                    t.stop()
                log("   ", json.dumps({k: v for k, v in res[t.name][-1].items()
                                       if k.startswith(("rps", "lat_p", "s256_streams",
                                                        "s2048_streams", "s256_chunk_p99"))}))
        for t in targets:
            log(f"memory: {t.name}")
            mem[t.name] = memory(ctx, t)
            log("   ", mem[t.name])
        if not args.no_callgrind:
            for _ in range(d["callgrind_runs"]):
                a = callgrind(ctx, 0)
                b = callgrind(ctx, d["callgrind_n"])
                ir.append((b - a) / d["callgrind_n"])
                log(f"callgrind: {a} Ir for 20 warm-up, {b} for 20 + {d['callgrind_n']}: "
                    f"{ir[-1]:.0f} Ir/request")
    finally:
        backend.terminate()
        backend.wait()

    table, _ = build_table(ctx, res, mem, None, d)
    elapsed = time.time() - started
    cmdline = "python3 bench/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    notes = [
        f"- Date: {started_at}; run time {elapsed:.0f} s; mode: "
        f"{'QUICK (smoke run: short runs, ' + str(d['rounds']) + ' rounds; indicative only)' if args.quick else 'full'}.",
        f"- Machine: {mach['nproc']} CPUs, {mach['cpu']}, Linux {mach['kernel']}; "
        f"load average at start {mach['load']} (other jobs were running if this is above ~0.5).",
        f"- Command: `{cmdline}`; binary: {ctx.version}.",
        f"- CPU pinning (taskset): {pinning}.",
        f"- Rounds: {d['rounds']}, interleaved (each round runs every target once, rotated order); "
        "figures are medians over rounds. Memory is measured once per target.",
        f"- Backend: bench/backend.c (epoll, one thread), 16-token non-stream answers, streams of "
        f"{STREAM_TOKENS} chunks 5 ms apart after a 5 ms first-chunk delay.",
        f"- Non-stream: ~1 KB JSON bodies; wrk -t1; latency from bench-loadgen's open-loop "
        f"{d['rate']} req/s over 64 connections, measured from the scheduled send time.",
        "- Streams: bench-loadgen, one stream per connection at a time, starts staggered over "
        "0.35 s; per-chunk latency = client receive time - the backend's send time stamped in "
        "the chunk; held back = chunk k reached the client after the backend had sent k+1.",
        "- RSS sums VmRSS over the target's processes (nginx: master + workers, so shared pages "
        "count twice); per-connection figures are (RSS with N connections - idle RSS) / N.",
        "- CPU per request / chunk: utime+stime of the target's processes (/proc/PID/stat) over "
        "the run, divided by requests or chunks delivered.",
    ]
    dres = res.get("direct") or []
    last_c = d["wrk_conns"][-1]
    b_req = med(r.get(f"cpu_req_c{last_c}") for r in dres)
    b_chunk = med(r.get("s256_cpu_us_per_chunk") for r in dres)
    utils = [r.get(k) for n, rs in res.items() if n != "direct" for r in rs for k in r
             if k.endswith("backend_util") or k.startswith("backend_util")]
    utils = [u for u in utils if u is not None]
    if b_req:
        notes.append(
            f"- Backend alone (the `direct` column, wrk on the same core): {b_req:.1f} us CPU per "
            f"request, i.e. ~{1e6 / b_req:,.0f} req/s per core"
            + (f", and {b_chunk:.1f} us per streamed chunk (~{1e6 / b_chunk:,.0f} chunks/s per core)"
               if b_chunk else "")
            + (f"; while it served the proxies its CPU use peaked at {max(utils):.2f} of a core "
               "(the rows 'backend CPU use'), so it was not the bottleneck of the proxied runs "
               "unless that figure is near 1.0." if utils else "."))
    for n in d["streams"]:
        offered = n * 1000 / 5
        got = med(r.get(f"s{n}_chunks_per_s") for r in dres)
        cli = med(r.get(f"s{n}_client_cpu_s") / r.get(f"s{n}_client_wall_s") for r in dres
                  if r.get(f"s{n}_client_wall_s"))
        bu = med(r.get(f"s{n}_backend_util") for r in dres)
        if got is not None and got < 0.9 * offered:
            notes.append(
                f"- {n} streams offer {offered:,.0f} chunks/s; backend + client alone (direct) "
                f"delivered {got:,.0f}/s (client {cli or 0:.2f} + backend {bu or 0:.2f} of their "
                "shared core): the machine saturates before any proxy is added, so this row shows "
                "behaviour under overload (queueing shows up as latency and as 'held back'), not "
                "the added cost of an idle proxy.")
    notes.append("- Targets: nginx 1.22 (`proxy_pass` to an `upstream` with `keepalive 256`, "
                 "`proxy_http_version 1.1`, `proxy_buffering off`, access log off); haproxy 2.6 "
                 "(`nbthread 1`, `http-reuse always`, keep-alive, `option http-no-delay`: without it haproxy "
                 "holds SSE chunks back ~40-90 ms); infergate `--threads N "
                 "--access-log off --upstream-dialect openai --model M` (Release build). "
                 "`fast` = POST /v1/completions (same dialect), `trans` = SGLang POST /generate "
                 "translated to /v1/completions. nginx, haproxy and direct carry the /v1/completions "
                 "requests.")
    with open("/proc/loadavg") as f:
        notes.append(f"- Load average at the end: {' '.join(f.read().split()[:3])}.")
    if ir:
        notes.append(f"- Instructions per request, translated path (SGLang /generate non-stream -> "
                     f"OpenAI backend), infergate --threads 1 under valgrind --tool=callgrind, "
                     f"(Ir of 20 warm-up + {d['callgrind_n']} requests - Ir of 20 warm-up) / "
                     f"{d['callgrind_n']}: **{', '.join(f'{x:,.0f}' for x in ir)}** Ir/request.")
    text = "\n".join(notes) + "\n\n" + table + "\n"
    print(text)
    raw = {"machine": mach, "params": d, "results": res, "memory": mem, "callgrind_ir": ir}
    raw_path = os.path.join(args.build_dir, "bench", "results.json")
    with open(raw_path, "w") as f:
        json.dump(raw, f, indent=1)
    log(f"raw results: {raw_path}")
    shutil.rmtree(ctx.tmp, ignore_errors=True)
    if args.output != "-":
        with open(args.output, "w") as f:
            f.write("# Performance\n\nWritten by `bench/run.py` (see `bench/README.md`); "
                    "do not edit by hand: re-run the benchmark.\n\n")
            if args.quick or float(mach["load"].split()[0]) >= 0.5:
                f.write("> **Indicative figures only**: "
                        + ("a `--quick` smoke run (1-second runs, no medians)" if args.quick
                           else "a full run")
                        + f" on a machine with load average {mach['load']} (other jobs running). "
                        "Re-run `python3 bench/run.py` on a quiet machine for reference figures; "
                        "the instructions-per-request figure is unaffected by load.\n\n")
            f.write(text)
            f.write("\n<details><summary>raw medians input (JSON)</summary>\n\n```json\n")
            f.write(json.dumps(raw, indent=None, separators=(",", ":")))
            f.write("\n```\n</details>\n")
        log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
