#!/usr/bin/env python3
"""Prefix-cache-aware routing vs least outstanding requests (issue 14, docs/routing.md).

Four emulator replicas, each one engine with a bounded prefix cache (--prefix-cache), a prefill
time per uncached prompt token and a few generation slots (--max-running): the cache and the
queue of a real engine, in miniature. The workload is N chats over 20 shared system prompts
(each a few hundred tokens) with a short user turn each, sent by C concurrent clients through
infergate, once with routing.balance: prefix and once with least_outstanding, in the same run and
the same order. Reported per mode: the prefix-cache hit ratio (cached prompt tokens / prompt
tokens, from the engines' own counts), the p50/p99 time a request waited for a slot, and the
p50/p99 end-to-end latency the clients saw.

    python3 bench/prefix_affinity.py [--requests 600] [--clients 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from harness import Emulator, Proxy, post_json  # noqa: E402

MODEL = "affinity-model"
WORDS = ("the a of to and in is it you that he was for on are with as his they be at one have "
         "this from or had by not word but what some we can out other were all there when up "
         "use your how said an each she which do their time if will way about many then them "
         "write would like so these her long make thing see him two has look more day could go "
         "come did number sound no most people my over know water than call first who may "
         "down side been now find").split()


def system_prompt(i: int, words: int) -> str:
    rng = random.Random(1000 + i)
    return f"System prompt {i}: " + " ".join(rng.choice(WORDS) for _ in range(words))


def workload(n: int, prompts: int, words: int, seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    systems = [system_prompt(i, words) for i in range(prompts)]
    out = []
    for u in range(n):
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
        out.append([{"role": "system", "content": rng.choice(systems)},
                    {"role": "user", "content": f"user {u}: {question}"}])
    return out


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


GEN = re.compile(r"^gen \S+ prompt=(\d+) cached=(\d+) queued_ms=([0-9.]+) total_ms=([0-9.]+)$",
                 re.M)


def run_mode(balance: str, chats: list[list[dict]], args) -> dict:
    emus = [Emulator("openai", MODEL, ["--prefix-cache", str(args.cache_tokens),
                                       "--prefix-block", "16",
                                       "--prefill-us-per-token", str(args.prefill_us),
                                       "--max-running", str(args.slots),
                                       "--itl-ms", str(args.itl_ms)])
            for _ in range(args.replicas)]
    yaml = "backends:\n" + "".join(
        f"  - {{name: r{i}, url: '{e.url}', dialect: openai, model: {MODEL}}}\n"
        for i, e in enumerate(emus))
    yaml += f"routing:\n  balance: {balance}\n"
    proxy = Proxy(["--access-log", "off"], config_yaml=yaml, model=MODEL)
    import threading
    lock = threading.Lock()
    next_i = [0]
    latencies: list[float] = []
    errors = [0]

    def client():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= len(chats):
                return
            t0 = time.monotonic()
            r = post_json(proxy.port, "/v1/chat/completions",
                          {"model": MODEL, "messages": chats[i], "max_tokens": args.max_tokens})
            dt = time.monotonic() - t0
            with lock:
                latencies.append(dt)
                errors[0] += r.status != 200

    try:
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        t_start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t_start
        prompt = cached = 0
        queued: list[float] = []
        per_replica = []
        for e in emus:
            n = 0
            for m in GEN.finditer(e.stderr_text()):
                prompt += int(m.group(1))
                cached += int(m.group(2))
                queued.append(float(m.group(3)))
                n += 1
            per_replica.append(n)
    finally:
        proxy.stop()
        for e in emus:
            e.stop()
    return {
        "balance": balance,
        "requests": len(chats),
        "errors": errors[0],
        "per_replica": per_replica,
        "hit_ratio": cached / prompt if prompt else 0.0,
        "queued_ms_p50": percentile(queued, 50),
        "queued_ms_p99": percentile(queued, 99),
        "e2e_ms_p50": 1000 * percentile(latencies, 50),
        "e2e_ms_p99": 1000 * percentile(latencies, 99),
        "wall_s": wall,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--replicas", type=int, default=4)
    ap.add_argument("--prompts", type=int, default=20, help="shared system prompts")
    ap.add_argument("--prompt-words", type=int, default=300)
    ap.add_argument("--cache-tokens", type=int, default=2400,
                    help="per replica: room for about 6 of the 20 system prompts")
    ap.add_argument("--prefill-us", type=int, default=200, help="per uncached prompt token")
    ap.add_argument("--slots", type=int, default=4, help="--max-running per replica")
    ap.add_argument("--itl-ms", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    chats = workload(args.requests, args.prompts, args.prompt_words, args.seed)
    results = [run_mode(b, chats, args) for b in ("least_outstanding", "prefix")]
    lo, px = results
    summary = {
        "modes": results,
        "hit_ratio_x": px["hit_ratio"] / lo["hit_ratio"] if lo["hit_ratio"] else float("inf"),
        "queued_p99_ratio": (px["queued_ms_p99"] / lo["queued_ms_p99"]
                             if lo["queued_ms_p99"] else 0.0),
        "e2e_p99_ratio": px["e2e_ms_p99"] / lo["e2e_ms_p99"] if lo["e2e_ms_p99"] else 0.0,
    }
    for r in results:
        print(f"{r['balance']:>17}: hit ratio {r['hit_ratio']:.3f}, queued p50/p99 "
              f"{r['queued_ms_p50']:.1f}/{r['queued_ms_p99']:.1f} ms, e2e p50/p99 "
              f"{r['e2e_ms_p50']:.1f}/{r['e2e_ms_p99']:.1f} ms, per replica {r['per_replica']}, "
              f"errors {r['errors']}, {r['wall_s']:.1f} s")
    print(f"prefix / least_outstanding: hit ratio x{summary['hit_ratio_x']:.2f}, queued p99 "
          f"x{summary['queued_p99_ratio']:.2f}, e2e p99 x{summary['e2e_p99_ratio']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0 if all(r["errors"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
