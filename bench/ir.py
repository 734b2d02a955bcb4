#!/usr/bin/env python3
"""Exactly repeatable cost figures: instructions (callgrind Ir) per request or per streamed chunk.

    python3 bench/ir.py [--infergate BIN] [--backend BIN] [paths...]

paths: trans (SGLang /generate -> OpenAI backend, non-stream), fast (/v1/completions, same
dialect), trans-stream, fast-stream (64 chunks each; also reported per chunk). Default: all four.
Each figure is (Ir of 20 + N requests - Ir of 20 requests) / N, so start-up cancels out; the
backend is bench-backend (bench/backend.c, built by bench/run.py) answering at once. Use it to hold
a change to a number on a noisy machine: repeats agree to within ~0.1 %.
"""
import argparse
import glob
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

PROMPT = "Write a detailed description of a harbour town at dawn. " * 18
BODIES = {
    "trans": ("/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 16}}),
    "fast": ("/v1/completions", {"model": "M", "prompt": PROMPT, "max_tokens": 16}),
    "trans-stream": ("/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 64},
                                   "stream": True}),
    "fast-stream": ("/v1/completions", {"model": "M", "prompt": PROMPT, "max_tokens": 64,
                                        "stream": True}),
}
CHUNKS = 64


def instructions(infergate, backend_port, what, n, tmp, prefix=(), data=None, model="M"):
    """callgrind Ir of an infergate (1 thread) that served `n` requests of kind `what`.

    `prefix`: a command to run it under (taskset); `data`: the request body (default: BODIES)."""
    out = os.path.join(tmp, f"cg.{what}.{n}")
    p = subprocess.Popen(
        list(prefix) + [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", infergate,
            "--upstream", f"http://127.0.0.1:{backend_port}", "--listen", "127.0.0.1:0",
            "--threads", "1", "--access-log", "off", "--upstream-dialect", "openai",
            "--model", model, "--log-level", "warn"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(re.search(r":(\d+)", p.stdout.readline()).group(1))
        path, body = BODIES[what]
        if data is None:
            data = json.dumps(body).encode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for i in range(n):
            conn.request("POST", path, data, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"{what} request {i}: HTTP {r.status}")
        conn.close()
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=120)
    total = 0
    for f in glob.glob(out + "*"):
        with open(f) as fh:
            for line in fh:
                if line.startswith(("totals:", "summary:")):
                    total += int(line.split()[1])
                    break
    return total


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--infergate", default="/work/build-bench/proxy/infergate")
    ap.add_argument("--backend", default="/work/build-bench/bench/bench-backend")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("paths", nargs="*", default=list(BODIES))
    args = ap.parse_args()
    for binary in (args.infergate, args.backend):
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary} not found: build with `python3 {here}/run.py --quick` first, or "
                     "pass --infergate / --backend")
    backend = subprocess.Popen([args.backend, "--listen", "127.0.0.1:0", "--ttft-ms", "0",
                                "--itl-ms", "0", "--model", "M"], stdout=subprocess.PIPE, text=True)
    try:
        backend_port = int(re.search(r"(\d+)\s*$", backend.stdout.readline()).group(1))
        with tempfile.TemporaryDirectory() as tmp:
            for what in args.paths:
                base = instructions(args.infergate, backend_port, what, 20, tmp)
                full = instructions(args.infergate, backend_port, what, 20 + args.requests, tmp)
                per = (full - base) / args.requests
                line = f"{what:13} {per:12,.0f} Ir/request"
                if what.endswith("stream"):
                    line += f"  {per / CHUNKS:9,.0f} Ir/chunk ({CHUNKS} chunks)"
                print(line, flush=True)
    finally:
        backend.kill()


if __name__ == "__main__":
    main()
