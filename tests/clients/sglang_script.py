#!/usr/bin/env python3
"""Quick latency / throughput check of an SGLang server through its native POST /generate.

Written the way people write these scripts against `python -m sglang.launch_server`:
urllib + json only, a warm-up request, then a streaming concurrency sweep that reads the SSE
stream (`data: {...}` events with cumulative `text` and `meta_info`, ended by `data: [DONE]`)
and derives TTFT and per-token ITL from meta_info.completion_tokens.

    python3 sglang_script.py --url http://127.0.0.1:30000

Per request it prints one `req` line (prompt and output as JSON strings so they can be compared
with another tool), then a summary per concurrency level. Exits 1 if any request misbehaved.
"""
import argparse
import json
import statistics
import sys
import threading
import time
import urllib.request


def make_prompt(concurrency, i):
    return f"Request {i} of batch {concurrency}: write a short story about a lighthouse keeper"


def generate(url, prompt, max_new_tokens, ignore_eos):
    """Non-streaming /generate; returns the parsed JSON response."""
    payload = {
        "text": prompt,
        "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens,
                            "ignore_eos": ignore_eos},
    }
    req = urllib.request.Request(url + "/generate", data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, json.loads(resp.read())


def stream_generate(url, prompt, max_new_tokens, ignore_eos):
    """Streaming /generate. Returns a dict of what was observed; raises AssertionError on a
    malformed stream."""
    payload = {
        "text": prompt,
        "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens,
                            "ignore_eos": ignore_eos},
        "stream": True,
    }
    req = urllib.request.Request(url + "/generate", data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft = None
    last_time = start
    prev_text = ""
    prev_tokens = 0
    itl = []  # one entry per new token, like bench_serving's adjusted ITL
    events = 0
    first_tokens = None
    finish_reason = None
    saw_done = False
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200, f"HTTP {resp.status}"
        ctype = resp.headers.get("Content-Type", "")
        assert ctype.startswith("text/event-stream"), f"Content-Type {ctype!r}"
        for raw in resp:  # one line at a time
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                continue
            assert line.startswith("data: "), f"unexpected line {line!r}"
            data = line[len("data: "):]
            if data == "[DONE]":
                saw_done = True
                break
            now = time.perf_counter()
            event = json.loads(data)
            assert "error" not in event, f"error event: {event['error']}"
            events += 1
            text = event["text"]
            meta = event["meta_info"]
            tokens = meta["completion_tokens"]
            # SGLang streams cumulative text: every event repeats everything so far.
            assert text.startswith(prev_text), (
                f"event {events}: text is not cumulative: previous {prev_text!r}, now {text!r}")
            assert tokens >= prev_tokens, (
                f"event {events}: completion_tokens went back from {prev_tokens} to {tokens}")
            new_tokens = tokens - prev_tokens
            if ttft is None:
                ttft = now - start
                first_tokens = tokens
            elif new_tokens > 0:
                itl.extend([(now - last_time) / new_tokens] * new_tokens)
            if new_tokens > 0:
                last_time = now
            prev_text, prev_tokens = text, tokens
            if meta.get("finish_reason") is not None:
                finish_reason = meta["finish_reason"]
        # Nothing may follow [DONE].
        rest = resp.read()
        assert rest.strip() == b"", f"bytes after [DONE]: {rest[:200]!r}"
    assert saw_done, "stream ended without data: [DONE]"
    assert events > 0, "no events before [DONE]"
    assert finish_reason is not None, "no event carried a finish_reason"
    return {
        "prompt": prompt, "text": prev_text, "tokens": prev_tokens, "events": events,
        "first_tokens": first_tokens, "itl": itl, "ttft": ttft,
        "latency": time.perf_counter() - start, "finish": finish_reason,
    }


def sweep(url, concurrency, max_new_tokens, ignore_eos):
    results = [None] * concurrency
    errors = []

    def worker(i):
        try:
            results[i] = stream_generate(url, make_prompt(concurrency, i), max_new_tokens,
                                         ignore_eos)
        except Exception as e:  # report every failure, not just the first
            errors.append(f"request {i}: {type(e).__name__}: {e}")

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    elapsed = time.perf_counter() - start
    if any(t.is_alive() for t in threads):
        errors.append("some requests did not finish within 120 s")
    return results, errors, elapsed


def ms(seconds):
    return f"{seconds * 1000:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:30000")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--concurrency", default="1,4,16",
                        help="comma-separated concurrency levels (default 1,4,16)")
    parser.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false",
                        help="let the model stop at EOS (default: ignore_eos, like bench_serving)")
    args = parser.parse_args()
    url = args.url.rstrip("/")

    status, out = generate(url, "Hello, my name is", args.max_new_tokens, args.ignore_eos)
    tokens = out["meta_info"]["completion_tokens"]
    ok = status == 200 and bool(out["text"]) and tokens > 0
    print(f"Warmup: {tokens} tokens, ok={ok}")
    if not ok:
        print(f"warm-up failed: {out!r}")
        return 1

    failed = False
    for concurrency in [int(c) for c in args.concurrency.split(",")]:
        results, errors, elapsed = sweep(url, concurrency, args.max_new_tokens, args.ignore_eos)
        done = [r for r in results if r is not None]
        for i, r in enumerate(results):
            if r is None:
                continue
            print(f"req c={concurrency} i={i} tokens={r['tokens']} events={r['events']} "
                  f"first_tokens={r['first_tokens']} itl_samples={len(r['itl'])} "
                  f"ttft_ms={ms(r['ttft'])} "
                  f"mean_itl_ms={ms(statistics.mean(r['itl'])) if r['itl'] else 'nan'} "
                  f"finish={json.dumps(r['finish'], separators=(',', ':'))} "
                  f"prompt={json.dumps(r['prompt'])} text={json.dumps(r['text'])}")
        for e in errors:
            print(f"ERROR c={concurrency} {e}")
        total_tokens = sum(r["tokens"] for r in done)
        itls = [x for r in done for x in r["itl"]]
        ttfts = [r["ttft"] for r in done]
        print(f"Concurrency {concurrency}: {len(done)}/{concurrency} ok, "
              f"{total_tokens} output tokens in {elapsed:.3f} s "
              f"({total_tokens / elapsed:.1f} tok/s), "
              f"TTFT mean {ms(statistics.mean(ttfts)) if ttfts else 'nan'} ms, "
              f"ITL mean {ms(statistics.mean(itls)) if itls else 'nan'} ms "
              f"p50 {ms(statistics.median(itls)) if itls else 'nan'} ms")
        if errors or len(done) != concurrency:
            failed = True
    print("FAILED" if failed else "All requests succeeded")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
