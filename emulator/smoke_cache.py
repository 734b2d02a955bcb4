#!/usr/bin/env python3
"""Smoke test of the emulator as one engine replica (docs/emulator.md, "Prefix cache, prefill
and queueing"): cached prompt tokens in every dialect's own field, whole and streamed; LRU
eviction; prefill time on a hit; --max-running queueing; SGLang's /abort_request; and the stderr
lines.

usage: smoke_cache.py PATH/TO/infergate-emulator
Standard library only; exits non-zero on failure. Waits for events (stream bytes, stderr
lines), never sleeps to synchronise.
"""
import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_test import FAILURES, check  # noqa: E402

BLOCK = 16
REQUEST_LINE = re.compile(r"^[A-Z]+ /\S* [0-9.]+ms$")
GEN_LINE = re.compile(r"^gen (/\S*) prompt=(\d+) cached=(\d+) queued_ms=([0-9.]+) "
                      r"total_ms=([0-9.]+)$")
ABORT_LINE = re.compile(r"^abort (?:rid=(\S*)|all) found=([01])$")


def words(n, tag):
    return " ".join(f"{tag}{i}" for i in range(n))


def system_for(user):
    """A system prompt of 30 words of its own for each test prompt."""
    return words(30, "sys-" + user.split()[0] + "-")


def chat(user, system=None):
    return [{"role": "system", "content": system or system_for(user)},
            {"role": "user", "content": user}]


class Emulator:
    """The binary on port 0, its stderr read line by line on a thread."""

    def __init__(self, binary, *args):
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--model", "m", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on 127.0.0.1:"), line
        self.port = int(line.rsplit(":", 1)[1])
        self.lines = queue.Queue()
        self.seen = []  # read, not yet consumed by a wait
        self.all = []  # every line, in order
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.all.append(line.rstrip("\n"))
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, pattern, timeout=10):
        """The first stderr line (not yet consumed by an earlier wait) that matches."""
        deadline = time.monotonic() + timeout
        while True:
            for i, line in enumerate(self.seen):
                m = pattern.match(line)
                if m:
                    del self.seen[i]
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self.seen.append(self.lines.get(timeout=left))
            except queue.Empty:
                return None

    def gen(self, timeout=10):
        return self.wait_line(GEN_LINE, timeout)

    def stop(self):
        """Ends the process; returns every stderr line it wrote."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
            self.reader.join(5)
        return self.all

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def post(port, path, body, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, raw


def sse(raw):
    """data payloads of an SSE body, JSON decoded ([DONE] kept as a string)."""
    out = []
    for line in raw.decode().split("\n"):
        if line.startswith("data:"):
            data = line[5:].strip()
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


class Stream:
    """A streamed answer read event by event (its head is read with the first event: a queued
    request sends none until it runs)."""

    def __init__(self, port, path, body):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        self.conn.request("POST", path, body=json.dumps(body),
                          headers={"Content-Type": "application/json"})
        self.resp = None

    def next(self):
        """The next data payload, or None at the end."""
        if self.resp is None:
            self.resp = self.conn.getresponse()
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().strip()
            if line.startswith("data:"):
                data = line[5:].strip()
                return data if data == "[DONE]" else json.loads(data)

    def rest(self):
        out = []
        while (event := self.next()) is not None:
            out.append(event)
        self.conn.close()
        return out


def repeat_hit(prompt_tokens):
    """What a repeat of a prompt finds: its full blocks within all but its last token."""
    return (prompt_tokens - 1) // BLOCK * BLOCK


# Each dialect: requests that read (prompt tokens, cached tokens) back from the dialect's own
# field, whole and streamed. A reader returns None where the dialect has no field.
def oai_details(usage):
    details = usage.get("prompt_tokens_details")
    return details["cached_tokens"] if details else 0


def read_oai_whole(raw):
    usage = json.loads(raw)["usage"]
    return usage["prompt_tokens"], oai_details(usage)


def read_oai_stream(raw):
    usage = [e for e in sse(raw) if isinstance(e, dict) and e.get("usage")][-1]["usage"]
    return usage["prompt_tokens"], oai_details(usage)


def read_sglang_whole(raw):
    meta = json.loads(raw)["meta_info"]
    return meta["prompt_tokens"], meta["cached_tokens"]


def read_sglang_stream(raw):
    metas = [e["meta_info"] for e in sse(raw) if isinstance(e, dict)]
    assert len({m["cached_tokens"] for m in metas}) == 1, "cached_tokens on every event"
    return metas[-1]["prompt_tokens"], metas[-1]["cached_tokens"]


def read_llama_native_whole(raw):
    body = json.loads(raw)
    t = body["timings"]
    assert t["cache_n"] + t["prompt_n"] == body["tokens_evaluated"], t
    return body["tokens_evaluated"], t["cache_n"]


def read_llama_native_stream(raw):
    return read_llama_native_whole(json.dumps(sse(raw)[-1]).encode())


def read_llama_oai_whole(raw):
    body = json.loads(raw)
    prompt, cached = read_oai_whole(raw)
    assert body["timings"]["cache_n"] == cached and "prompt_tokens_details" in body["usage"]
    return prompt, cached


def read_llama_oai_stream(raw):
    events = [e for e in sse(raw) if isinstance(e, dict)]
    usage = [e for e in events if e.get("usage")][-1]["usage"]
    assert "prompt_tokens_details" in usage, usage
    return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]


def read_anthropic_usage(usage):
    return (usage["input_tokens"] + usage["cache_read_input_tokens"] +
            usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"])


def read_anthropic_whole(raw):
    return read_anthropic_usage(json.loads(raw)["usage"])


def read_anthropic_stream(raw):
    start = [e for e in sse(raw) if e.get("type") == "message_start"][0]
    return read_anthropic_usage(start["message"]["usage"])


def no_field(raw):
    text = raw.decode()
    assert "cached" not in text and "cache_n" not in text, text[:300]
    return None


def text_case(path, make, whole, stream, stream_flag=None):
    return {"path": path, "make": make, "whole": whole, "stream": stream,
            "stream_flag": stream_flag or (lambda b: {**b, "stream": True})}


def with_usage(body):
    return {**body, "stream": True, "stream_options": {"include_usage": True}}


CASES = {
    "openai": [
        text_case("/v1/completions", lambda p: {"prompt": p, "max_tokens": 2},
                  read_oai_whole, read_oai_stream, with_usage),
        text_case("/v1/chat/completions", lambda p: {"messages": chat(p), "max_tokens": 2},
                  read_oai_whole, read_oai_stream, with_usage),
    ],
    "sglang": [
        text_case("/generate", lambda p: {"text": p, "sampling_params": {"max_new_tokens": 2}},
                  read_sglang_whole, read_sglang_stream),
        text_case("/v1/completions", lambda p: {"model": "m", "prompt": p, "max_tokens": 2},
                  read_oai_whole, read_oai_stream, with_usage),
        text_case("/v1/chat/completions",
                  lambda p: {"model": "m", "messages": chat(p), "max_tokens": 2},
                  read_oai_whole, read_oai_stream, with_usage),
    ],
    "llamacpp": [
        text_case("/completion", lambda p: {"prompt": p, "n_predict": 2},
                  read_llama_native_whole, read_llama_native_stream),
        text_case("/v1/completions", lambda p: {"prompt": p, "max_tokens": 2},
                  read_llama_oai_whole, read_llama_oai_stream),
        text_case("/v1/chat/completions", lambda p: {"messages": chat(p), "max_tokens": 2},
                  read_llama_oai_whole, read_llama_oai_stream, with_usage),
    ],
    "anthropic": [
        text_case("/v1/messages", lambda p: {"model": "m", "system": system_for(p),
                                             "max_tokens": 2,
                                             "messages": [{"role": "user", "content": p}]},
                  read_anthropic_whole, read_anthropic_stream),
    ],
    "tgi": [
        text_case("/generate", lambda p: {"inputs": p, "parameters": {"max_new_tokens": 2}},
                  no_field, no_field, lambda b: b),
        text_case("/v1/chat/completions",
                  lambda p: {"model": "m", "messages": chat(p), "max_tokens": 2},
                  no_field, no_field),
    ],
    "ollama": [
        text_case("/api/generate", lambda p: {"model": "m", "prompt": p, "raw": True,
                                              "stream": False, "options": {"num_predict": 2}},
                  no_field, no_field, lambda b: {**b, "stream": True}),
        text_case("/api/chat", lambda p: {"model": "m", "messages": chat(p), "stream": False,
                                          "options": {"num_predict": 2}},
                  no_field, no_field, lambda b: {**b, "stream": True}),
    ],
    "vllm_legacy": [
        text_case("/generate", lambda p: {"prompt": p, "max_tokens": 2}, no_field, no_field),
    ],
}
HEADERS = {"anthropic": {"anthropic-version": "2023-06-01"}}


def ask(emu, dialect, case, prompt, stream):
    body = case["make"](prompt)
    if stream:
        body = case["stream_flag"](body)
    if dialect == "tgi" and stream and case["path"] == "/generate":
        path = "/generate_stream"
    else:
        path = case["path"]
    status, raw = post(emu.port, path, body, HEADERS.get(dialect))
    assert status == 200, (status, raw[:300])
    got = (case["stream"] if stream else case["whole"])(raw)
    line = emu.gen()
    return got, (int(line[2]), int(line[3])) if line else None


def test_fields(binary):
    """Per dialect and route: a first request finds nothing, its repeat the blocks its first put
    in; whole then streamed for one prompt, streamed then whole for another."""
    for dialect, cases in CASES.items():
        with Emulator(binary, "--dialect", dialect, "--prefix-cache", "4096") as emu:
            for n, case in enumerate(cases):
                for first_stream in (False, True):
                    label = f"{dialect} {case['path']} {'stream' if first_stream else 'whole'}"
                    prompt = words(40, f"p{n}{int(first_stream)}x")
                    try:
                        a, gen_a = ask(emu, dialect, case, prompt, first_stream)
                        b, gen_b = ask(emu, dialect, case, prompt, not first_stream)
                    except (AssertionError, KeyError, IndexError, ValueError) as e:
                        check(label, False, repr(e))
                        continue
                    check(f"{label}: gen lines 0, then the repeat's hit",
                          gen_a is not None and gen_b is not None and gen_a[1] == 0 and
                          gen_b[1] == repeat_hit(gen_b[0]) and gen_b[1] % BLOCK == 0 and
                          gen_b[1] > 0, (gen_a, gen_b))
                    if a is None:
                        check(f"{label}: no cached field (the server has none)", b is None)
                        continue
                    check(f"{label}: first 0 cached, repeat {repeat_hit(a[0])} (both forms)",
                          a[1] == 0 and b == (a[0], repeat_hit(a[0])) and
                          (a[0], b[1]) == gen_b, (a, b, gen_b))


def test_shared_system_prompt(binary):
    """Two chats with the same system prompt and different user turns share its blocks."""
    with Emulator(binary, "--prefix-cache", "4096") as emu:
        system = words(30, "shared")
        _, raw = post(emu.port, "/v1/chat/completions",
                      {"messages": chat("first question here", system), "max_tokens": 1})
        first = read_oai_whole(raw)
        _, raw = post(emu.port, "/v1/chat/completions",
                      {"messages": chat("a different user turn", system), "max_tokens": 1})
        second = read_oai_whole(raw)
        # system: <|im_start|> system \n + 30 words + <|im_end|>, then <|im_start|> user \n
        shared = (3 + 30 + 1 + 3) // BLOCK * BLOCK
        check("chats share the system prompt's blocks", first[1] == 0 and second[1] == shared,
              (first, second))


def test_eviction(binary):
    """A 4-block cache (64 tokens): a third 2-block prompt evicts the least recently used."""
    with Emulator(binary, "--prefix-cache", "64", "--prefix-block", "16") as emu:
        def cached(tag):
            _, raw = post(emu.port, "/v1/completions",
                          {"prompt": words(40, tag), "max_tokens": 1})
            return read_oai_whole(raw)[1]
        got = [cached("a"), cached("b"), cached("a"), cached("c"), cached("a"), cached("b"),
               cached("c")]
        # a, b fill it; a is used again; c evicts b (the least recently used), keeps a;
        # b comes back (evicting c); c then misses.
        check("LRU eviction", got == [0, 0, 32, 0, 32, 0, 0], got)


def first_byte_time(port, body):
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.readline()
    elapsed = time.monotonic() - t0
    resp.read()
    conn.close()
    return elapsed


def test_prefill(binary):
    """2 ms per uncached token, a 200-token prompt: the miss waits ~400 ms, the hit ~16 ms."""
    with Emulator(binary, "--prefix-cache", "4096", "--prefill-us-per-token", "2000") as emu:
        body = {"prompt": words(200, "w"), "max_tokens": 2, "stream": True}
        miss = first_byte_time(emu.port, {**body, "stream": False})
        hit = first_byte_time(emu.port, {**body, "stream": False})
        check(f"prefill: miss {miss * 1000:.0f} ms, hit {hit * 1000:.0f} ms (>= 300 ms apart)",
              miss >= 0.38 and miss - hit >= 0.3, (miss, hit))
        stream_body = {**body, "prompt": words(200, "v")}
        miss = first_byte_time(emu.port, stream_body)
        hit = first_byte_time(emu.port, stream_body)
        check("prefill in streams: the first event after it", miss - hit >= 0.3, (miss, hit))
    with Emulator(binary, "--prefill-us-per-token", "2000") as emu:
        body = {"prompt": words(200, "w"), "max_tokens": 2}
        t = [first_byte_time(emu.port, body) for _ in range(2)]
        check("prefill without a cache: every request pays it", min(t) >= 0.38, t)


def test_queueing(binary):
    with Emulator(binary, "--max-running", "1", "--itl-ms", "20") as emu:
        first = Stream(emu.port, "/v1/completions",
                       {"prompt": "one", "max_tokens": 20, "stream": True})
        first.next()  # running: it holds the only slot
        t0 = time.monotonic()
        status, raw = post(emu.port, "/v1/completions", {"prompt": "two words", "max_tokens": 1})
        waited = time.monotonic() - t0
        first.rest()
        lines = [emu.gen(), emu.gen()]
        by_prompt = {int(m[2]): m for m in lines if m}
        one, two = by_prompt.get(1), by_prompt.get(2)
        check("max-running 1: the second request waits for the first",
              status == 200 and one is not None and two is not None and
              float(two[4]) >= float(one[5]) - 100 and waited >= 0.25,
              (lines and [m.group(0) for m in lines if m], waited))
        check("the first did not queue", one is not None and float(one[4]) == 0.0)

        # A client that leaves while queued leaves the queue: a third request then runs as
        # soon as the first ends, not after the second.
        first = Stream(emu.port, "/v1/completions",
                       {"prompt": "one", "max_tokens": 20, "stream": True})
        first.next()
        leaver = socket.create_connection(("127.0.0.1", emu.port))
        data = json.dumps({"prompt": "three word prompt", "max_tokens": 30}).encode()
        leaver.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                       % len(data) + data)
        leaver.close()
        left = emu.gen()
        check("a queued request whose client left logs its gen line at once",
              left is not None and int(left[2]) == 3 and first.next() is not None, left)
        first.rest()
        ended = emu.gen()
        check("and never runs", ended is not None and ended[2] == "1" and
              emu.gen(timeout=0.5) is None, ended and ended.group(0))


def abort_when_admitted(emu, rid):
    """Asks /abort_request for `rid` until it is found (its request admitted)."""
    for _ in range(1000):
        post(emu.port, "/abort_request", {"rid": rid})
        line = emu.wait_line(ABORT_LINE)
        if line is None or line[2] == "1":
            return line
    return None


def test_abort(binary):
    with Emulator(binary, "--dialect", "sglang", "--itl-ms", "20") as emu:
        stream = Stream(emu.port, "/generate", {"text": "abort me", "rid": "rid-1", "stream": True,
                                                "sampling_params": {"max_new_tokens": 500}})
        stream.next()
        t0 = time.monotonic()
        status, raw = post(emu.port, "/abort_request", {"rid": "rid-1"})
        events = stream.rest()
        took = time.monotonic() - t0
        line = emu.wait_line(ABORT_LINE)
        last = events[-2] if len(events) >= 2 else {}
        check("abort_request 200, empty", status == 200 and raw == b"")
        check("abort log found=1", line is not None and line[1] == "rid-1" and line[2] == "1",
              line and line.group(0))
        check(f"aborted stream ends early ({len(events)} events, {took * 1000:.0f} ms)",
              events[-1:] == ["[DONE]"] and len(events) < 20 and took < 2 and
              last.get("meta_info", {}).get("finish_reason") ==
              {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None},
              events[-2:])
        status, raw = post(emu.port, "/abort_request", {"rid": "no-such-rid"})
        line = emu.wait_line(ABORT_LINE)
        check("unknown rid: 200 and found=0", status == 200 and line is not None and
              line[1] == "no-such-rid" and line[2] == "0", line and line.group(0))
        status, raw = post(emu.port, "/generate", {"text": "x", "rid": "done-already",
                                                   "sampling_params": {"max_new_tokens": 1}})
        post(emu.port, "/abort_request", {"rid": "done-already"})
        line = emu.wait_line(ABORT_LINE)
        check("a finished rid is not found", line is not None and line[2] == "0")
        # A whole answer aborted while it runs: the tokens it had, and the abort.
        holder = {}
        thread = threading.Thread(target=lambda: holder.update(r=post(
            emu.port, "/generate", {"text": "whole", "rid": "w-1",
                                    "sampling_params": {"max_new_tokens": 500}})))
        thread.start()
        abort_when_admitted(emu, "w-1")  # its answer would take 10 s
        thread.join()
        meta = json.loads(holder["r"][1])["meta_info"]
        check("an aborted whole answer", meta["finish_reason"]["type"] == "abort" and
              0 < meta["completion_tokens"] < 500, meta)

    with Emulator(binary, "--dialect", "sglang", "--itl-ms", "20", "--max-running", "1") as emu:
        running = Stream(emu.port, "/generate", {"text": "a", "rid": "run", "stream": True,
                                                 "sampling_params": {"max_new_tokens": 500}})
        running.next()
        queued = Stream(emu.port, "/generate", {"text": "b", "rid": "wait", "stream": True,
                                                "sampling_params": {"max_new_tokens": 5}})
        abort_when_admitted(emu, "wait")  # admitted: in the queue behind "run"
        events = queued.rest()
        check("abort of a queued request: its waiting-queue answer",
              len(events) == 2 and events[0]["meta_info"]["finish_reason"] ==
              {"type": "abort", "message": "Abort in waiting queue"} and
              events[0]["text"] == "" and events[1] == "[DONE]", events)
        post(emu.port, "/abort_request", {"abort_all": True})
        line = emu.wait_line(re.compile(r"^abort all found=1$"))
        check("abort_all stops the running one", line is not None and
              running.rest()[-2]["meta_info"]["finish_reason"]["type"] == "abort")


def test_default_lines(binary):
    """Without the options: no gen line, the same zeros as before, every line in its format."""
    with Emulator(binary, "--dialect", "openai") as emu:
        prompt = words(40, "d")
        for _ in range(2):
            _, raw = post(emu.port, "/v1/completions", {"prompt": prompt, "max_tokens": 1})
            emu.wait_line(REQUEST_LINE)  # a gen line would come before it
        usage = json.loads(raw)["usage"]
        lines = emu.stop()
    check("cache off: prompt_tokens_details null on a repeat",
          usage.get("prompt_tokens_details", "absent") is None, usage)
    check("cache off: no gen lines, request lines as before",
          lines and all(REQUEST_LINE.match(line) for line in lines), lines)


def test_line_formats(binary):
    with Emulator(binary, "--dialect", "sglang", "--prefix-cache", "64", "--max-running",
                  "2") as emu:
        post(emu.port, "/generate", {"text": "a b", "sampling_params": {"max_new_tokens": 1}})
        post(emu.port, "/abort_request", {"rid": "x y"})
        for pattern in (GEN_LINE, REQUEST_LINE, ABORT_LINE, REQUEST_LINE):
            emu.wait_line(pattern)
        lines = emu.stop()
    bad = [line for line in lines if not (REQUEST_LINE.match(line) or GEN_LINE.match(line) or
                                           ABORT_LINE.match(line))]
    check("every stderr line is a request, gen or abort line", not bad and len(lines) == 4,
          lines)
    check("a rid with a space is one word in the abort line", "abort rid=x?y found=0" in lines,
          lines)


if __name__ == "__main__":
    binary = sys.argv[1]
    test_fields(binary)
    test_shared_system_prompt(binary)
    test_eviction(binary)
    test_prefill(binary)
    test_queueing(binary)
    test_abort(binary)
    test_default_lines(binary)
    test_line_formats(binary)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
