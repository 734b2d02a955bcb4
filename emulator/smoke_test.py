#!/usr/bin/env python3
"""Smoke test of infergate-emulator against its documented wire behaviour (docs/emulator.md).

usage: smoke_test.py PATH/TO/infergate-emulator

Starts the binary on port 0 in both dialects and checks routes, generation rules, streaming
shapes, faults and 300 concurrent streams. Standard library only; exits non-zero on failure.
"""
import asyncio
import http.client
import json
import socket
import subprocess
import sys
import time

FAILURES = []


def check(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + ("" if cond else f"  -- {detail}"))
    if not cond:
        FAILURES.append(name)


def start(binary, *args):
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--quiet", *args],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on 127.0.0.1:"), line
    return proc, int(line.rsplit(":", 1)[1])


def request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body) if isinstance(body, (dict, list)) else body
    conn.request(method, path, body=data, headers={"Content-Type": "application/json",
                                                    **(headers or {})})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), raw


def events(raw):
    out = []
    for block in raw.decode().split("\n\n"):
        if block:
            assert block.startswith("data: "), block
            out.append(block[6:] if block == "data: [DONE]" else json.loads(block[6:]))
    return out


def raw_exchange(port, body, headers=""):
    """Sends one request on a raw socket; returns (bytes received, how the peer ended)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    data = json.dumps(body).encode()
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
              f"{headers}\r\n".encode() + data)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got, "eof"
            got += chunk
    except ConnectionResetError:
        return got, "reset"
    except socket.timeout:
        return got, "timeout"
    finally:
        s.close()


def test_openai(binary):
    proc, port = start(binary, "--model", "m")
    try:
        st, hd, raw = request(port, "GET", "/health")
        check("openai /health 200 empty", st == 200 and raw == b"")
        st, _, raw = request(port, "GET", "/v1/models")
        card = json.loads(raw)["data"][0]
        check("openai /v1/models", card["owned_by"] == "vllm" and card["max_model_len"] == 4096)
        st, _, raw = request(port, "GET", "/nope")
        check("openai 404 body", st == 404 and json.loads(raw) == {"detail": "Not Found"})
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a b c"})
        body = json.loads(raw)
        check("completions default 16 tokens", body["usage"] == {
            "prompt_tokens": 3, "total_tokens": 19, "completion_tokens": 16,
            "prompt_tokens_details": None} and body["choices"][0]["finish_reason"] == "length")
        text = body["choices"][0]["text"]
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a b c"})
        check("deterministic text", json.loads(raw)["choices"][0]["text"] == text)
        words = text.split()
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": "a b c", "stop": words[2]})
        c = json.loads(raw)["choices"][0]
        check("stop string cut + stop_reason", c["stop_reason"] == words[2] and
              words[2] not in c["text"].split() and c["finish_reason"] == "stop", c)
        st, _, raw = request(port, "POST", "/v1/completions", {"model": "x", "prompt": "a"})
        check("unknown model 404", st == 404 and json.loads(raw)["error"]["type"] == "NotFoundError")
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a", "top_p": 0})
        check("top_p validation 400", st == 400 and json.loads(raw)["error"]["code"] == 400)
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": ["a", "b"], "n": 2, "max_tokens": 2})
        idx = [c["index"] for c in json.loads(raw)["choices"]]
        check("batch x n indices", idx == [0, 1, 2, 3], idx)
        st, hd, raw = request(port, "POST", "/v1/chat/completions",
                              {"messages": [{"role": "user", "content": "hi there"}],
                               "max_tokens": 3, "stream": True, "stream_options": {}},
                              {"X-Emulator-Eos-After": "2"})
        ev = events(raw)
        check("chat stream content-type", hd.get("content-type") ==
              "text/event-stream; charset=utf-8", hd)
        check("chat stream role chunk first", ev[0]["choices"][0]["delta"] ==
              {"role": "assistant", "content": ""})
        check("chat stream eos finish on last text chunk",
              ev[-3]["choices"][0]["finish_reason"] == "stop" and
              ev[-3]["choices"][0]["stop_reason"] is None)
        check("usage chunk with stream_options {}", ev[-2]["choices"] == [] and
              ev[-2]["usage"]["completion_tokens"] == 3 and ev[-2]["usage"]["prompt_tokens"] == 8)
        check("[DONE]", ev[-1] == "[DONE]")
        got, end = raw_exchange(port, {"prompt": "a", "stream": True},
                                "X-Emulator-Fault: reset_midstream\r\n")
        check("reset_midstream", end == "reset" and got.count(b"data: ") == 2, (end, got[-80:]))
        got, end = raw_exchange(port, {"prompt": "a", "stream": True},
                                "X-Emulator-Fault: close_midstream\r\n")
        check("close_midstream", end == "eof" and not got.endswith(b"0\r\n\r\n"))
        got, end = raw_exchange(port, {"prompt": "a"}, "X-Emulator-Fault: stall\r\n")
        check("stall", end == "timeout" and got == b"")
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a", "stream": True},
                             {"X-Emulator-Fault": "error_event"})
        ev = events(raw)
        check("error_event", "error" in ev[-2] and ev[-1] == "[DONE]" and len(ev) == 4)
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a"},
                             {"X-Emulator-Fault": "status:503"})
        check("status:503", st == 503 and json.loads(raw)["error"]["code"] == 503)
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "a"},
                             {"X-Emulator-Fault": "garbage"})
        try:
            json.loads(raw)
            check("garbage is not JSON", False)
        except ValueError:
            check("garbage is not JSON", st == 200)
        asyncio.run(concurrent_streams(port, 300))
    finally:
        proc.terminate()
        proc.wait()


def test_sglang(binary):
    proc, port = start(binary, "--dialect", "sglang", "--model", "m")
    try:
        st, _, raw = request(port, "GET", "/get_model_info")
        check("sglang /get_model_info", json.loads(raw)["model_path"] == "m")
        st, _, raw = request(port, "POST", "/generate", {"text": "a b", "rid": "r1"})
        body = json.loads(raw)
        check("sglang default 128 + rid", body["meta_info"]["completion_tokens"] == 128 and
              body["meta_info"]["id"] == "r1" and
              body["meta_info"]["finish_reason"] == {"type": "length", "length": 128})
        st, _, raw = request(port, "PUT", "/generate",
                             {"text": ["a", "b"], "sampling_params": {"n": 2, "max_new_tokens": 2}})
        check("sglang batch x n array", isinstance(json.loads(raw), list) and
              len(json.loads(raw)) == 4)
        st, _, raw = request(port, "POST", "/generate",
                             {"text": "a", "sampling_params": {"max_tokens": 3}})
        check("sglang unknown key 500", st == 500 and raw == b"Internal Server Error")
        st, _, raw = request(port, "POST", "/generate", {"foo": 1})
        check("sglang missing text 400", st == 400 and json.loads(raw) == {"error": {
            "message": "Either text, input_ids or input_embeds should be provided."}})
        st, _, raw = request(port, "POST", "/generate",
                             {"input_ids": [[1, 2], [3]], "stream": True,
                              "sampling_params": {"max_new_tokens": 3}},
                             {"X-Emulator-Eos-After": "1"})
        ev = events(raw)
        last = [e for e in ev[:-1] if e["meta_info"]["finish_reason"]]
        check("sglang stream batch index + eos", sorted(e["index"] for e in last) == [0, 1] and
              all(e["meta_info"]["finish_reason"] == {"type": "stop", "matched": 2}
                  for e in last))
        check("sglang stream cumulative text",
              ev[1]["text"].startswith(ev[0]["text"]) or ev[1]["index"] != ev[0]["index"])
        st, _, raw = request(port, "POST", "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
                              "stream": True})
        ev = events(raw)
        check("sglang oai chat separate finish chunk",
              ev[-2]["choices"][0]["finish_reason"] == "length" and
              ev[-2]["choices"][0]["delta"]["content"] is None)
        st, _, raw = request(port, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 0})
        check("sglang oai flat error", st == 400 and json.loads(raw)["object"] == "error")
    finally:
        proc.terminate()
        proc.wait()


async def concurrent_streams(port, count):
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 32,
                       "stream": True}).encode()

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\nX-Emulator-ITL-Ms: 5\r\n\r\n" % len(body) + body)
        data = await reader.read()
        writer.close()
        return data.count(b"data: ") == 34 and data.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")

    t0 = time.monotonic()
    results = await asyncio.gather(*[one() for _ in range(count)], return_exceptions=True)
    ok = sum(1 for r in results if r is True)
    check(f"{count} concurrent streams ({time.monotonic() - t0:.2f}s)", ok == count,
          f"{ok} ok")


if __name__ == "__main__":
    test_openai(sys.argv[1])
    test_sglang(sys.argv[1])
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
