#!/usr/bin/env python3
"""Wire-faithful stand-ins for the request functions of the two benchmark clients people point at
an inference server, run through infergate against both emulator dialects.

The real clients cannot run here (they load a Hugging Face tokenizer and datasets at start), so
each function below re-implements, in its own words, what one original request function puts on
the wire and how it reads the answer: URL path, payload keys and values, headers, the aiohttp
session and line-by-line stream reading, the "data: " prefix removal, "[DONE]" handling, which
chunks count for TTFT/ITL, where token counts come from, and what it calls success. Every
function cites the file, commit and function it follows. Nothing is copied.

Sources read (GitHub):
  SG  = sgl-project/sglang  python/sglang/bench_serving.py        @ 0033168f0f58b2bc05aa0273bd475d9c01bafb1c
  V25 = vllm-project/vllm   benchmarks/backend_request_func.py     @ e7dffa683de59f5592d75896a56283e778c084f5
  V24 = vllm-project/vllm   benchmarks/backend_request_func.py     @ 011841309828ee36ff4c125eb2390b56e1c1bbad
  VS  = vllm-project/vllm   benchmarks/benchmark_serving.py        @ 8668d7c05027b98ac66bd5540955dd2ce3a0f318
        (api_url = base + --endpoint, default /v1/completions; --model is required; one
        "initial test run" request must succeed before the batch)

Both originals use aiohttp; so does this file (Debian package python3-aiohttp, see README.md).

    INFERGATE_BIN=... INFERGATE_EMULATOR_BIN=... python3 tests/clients/bench_clients.py -v
"""
import asyncio
import json
import os
import sys
import time
import traceback
import unittest
from dataclasses import dataclass, field
from typing import Optional

try:
    import aiohttp
except ImportError:
    # ctest may run a Python other than Debian's /usr/bin/python3 (e.g. a pyenv build of the same
    # 3.x); python3-aiohttp lives in Debian's dist-packages, which only /usr/bin/python3 searches.
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import aiohttp
    except ImportError:
        sys.exit("bench_clients.py needs aiohttp, as the originals do: apt-get install python3-aiohttp")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Stack, http_json  # noqa: E402

MODEL = "Qwen/Qwen2.5-7B-Instruct"
NUM_REQUESTS = 8
TTFT_MS = 15  # emulator --ttft-ms: a floor every measured TTFT must clear
TIMEOUT_6H = aiohttp.ClientTimeout(total=6 * 60 * 60)  # SG, V24 and V25 all use 6 hours


@dataclass
class Input:
    prompt: str
    api_url: str
    output_len: int
    model: str


@dataclass
class Output:
    generated_text: str = ""
    success: bool = False
    latency: float = 0.0
    ttft: float = 0.0
    itl: list = field(default_factory=list)
    error: str = ""
    output_len: Optional[int] = None  # SG: output_len; V25: output_tokens; V24: not read at all
    payload: dict = field(default_factory=dict)  # what was sent, for the ground-truth request


def strip_prefix(text, prefix):
    return text[len(prefix):] if text.startswith(prefix) else text


def failure(out):
    out.success = False
    out.error = "".join(traceback.format_exception(*sys.exc_info()))
    return out


# --------------------------------------------------------------------------------------------
# SGLang bench_serving.py (SG)
# Session: SG _create_bench_client_session(): ClientTimeout(total=6 h), read_bufsize=10 MiB.
# Headers: SG get_auth_headers(): Authorization only if $OPENAI_API_KEY is set, else none.
# Disable-flags at their defaults: stream on, ignore_eos on (--disable-stream/-ignore-eos unset),
# return_logprob off, no LoRA, no image, empty --extra-request-body.
# --------------------------------------------------------------------------------------------

def sg_session():
    return aiohttp.ClientSession(timeout=TIMEOUT_6H, read_bufsize=10 * 1024 ** 2)


def sg_headers():
    key = os.environ.get("OPENAI_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


async def sg_sglang_generate(inp):
    """SG async_request_sglang_generate (--backend sglang): POST /generate.

    Payload: "text" for a str prompt or "input_ids" for a token-id list (--tokenize-prompt),
    sampling_params {temperature 0.0, max_new_tokens, ignore_eos true}, stream true, lora_path
    null, return_logprob false, logprob_start_len -1.
    Stream: each line stripped, empties skipped, "data: " removed; "[DONE]" ignored; any other
    line is JSON; an event counts only if it has a non-empty "text", which REPLACES the text so
    far (cumulative), and meta_info.completion_tokens is the running output length. The first
    such event sets TTFT; later ones add (gap / new tokens) once per new token to ITL, and an
    event with no new tokens is skipped. Success = HTTP 200 and no exception; output_len is the
    last completion_tokens seen (initially the requested length).
    """
    out = Output()
    out.payload = {
        ("text" if isinstance(inp.prompt, str) else "input_ids"): inp.prompt,
        "sampling_params": {"temperature": 0.0, "max_new_tokens": inp.output_len,
                            "ignore_eos": True},
        "stream": True,
        "lora_path": None,
        "return_logprob": False,
        "logprob_start_len": -1,
    }
    out.output_len = inp.output_len
    async with sg_session() as session:
        start = time.perf_counter()
        last_ts = start
        prev_tokens = 0
        try:
            async with session.post(url=inp.api_url, json=out.payload,
                                    headers=sg_headers()) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = strip_prefix(line.decode("utf-8"), "data: ")
                    out.latency = time.perf_counter() - start
                    if body == "[DONE]":
                        continue
                    data = json.loads(body)
                    if not data.get("text"):
                        continue
                    now = time.perf_counter()
                    out.generated_text = data["text"]
                    out.output_len = data["meta_info"]["completion_tokens"]
                    if out.ttft == 0.0:
                        out.ttft = time.perf_counter() - start
                    else:
                        new = out.output_len - prev_tokens
                        if new == 0:
                            continue
                        out.itl.extend([(now - last_ts) / new] * new)
                    last_ts = now
                    prev_tokens = out.output_len
                out.success = True
        except Exception:
            return failure(out)
    return out


async def sg_openai_completions(inp):
    """SG async_request_openai_completions (--backend vllm, also sglang-oai): POST
    /v1/completions.

    Payload: model, prompt, temperature 0.0, best_of 1, max_tokens, stream true, ignore_eos true
    (no stream_options). Stream: strip / skip empty / drop "data: "; "[DONE]" ignored; otherwise
    choices[0].text is indexed directly (a chunk with an empty "choices" list raises IndexError
    and fails the request); a chunk counts only if that text is non-empty: TTFT on the first, one
    ITL entry per later one, text appended (delta), and output_len taken from the chunk's
    "usage".completion_tokens if the chunk carries a non-null usage, else kept. Success = HTTP
    200 and no exception.
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "prompt": inp.prompt,
        "temperature": 0.0,
        "best_of": 1,
        "max_tokens": inp.output_len,
        "stream": True,
        "ignore_eos": True,
    }
    out.output_len = inp.output_len
    async with sg_session() as session:
        start = time.perf_counter()
        last_ts = start
        try:
            async with session.post(url=inp.api_url, json=out.payload,
                                    headers=sg_headers()) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = strip_prefix(line.decode("utf-8"), "data: ")
                    out.latency = time.perf_counter() - start
                    if body == "[DONE]":
                        continue
                    data = json.loads(body)
                    piece = data["choices"][0]["text"]
                    if not piece:
                        continue
                    now = time.perf_counter()
                    if out.ttft == 0.0:
                        out.ttft = time.perf_counter() - start
                    else:
                        out.itl.append(now - last_ts)
                    last_ts = now
                    out.generated_text += piece
                    usage = data.get("usage") or {}
                    out.output_len = usage.get("completion_tokens", out.output_len)
                out.success = True
        except Exception:
            return failure(out)
    return out


async def sg_openai_chat(inp):
    """SG async_request_openai_chat_completions (--backend sglang-oai-chat): POST
    /v1/chat/completions.

    Payload: model, messages [{"role": "user", "content": <prompt string>}], temperature 0.0,
    max_tokens, stream true (no ignore_eos, no stream_options). Stream: strip / skip empty / drop
    "data: "; "[DONE]" ignored; delta = first element of data.get("choices", [{}]) then
    .get("delta", {}) - an EMPTY choices list raises IndexError and fails the request; content =
    delta.get("content", ""); only truthy content counts (TTFT / ITL / appended); on EVERY chunk
    output_len = (usage or {}).get("completion_tokens", output_len). Success = HTTP 200 and no
    exception.
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "messages": [{"role": "user", "content": inp.prompt}],
        "temperature": 0.0,
        "max_tokens": inp.output_len,
        "stream": True,
    }
    out.output_len = inp.output_len
    async with sg_session() as session:
        start = time.perf_counter()
        last_ts = start
        try:
            async with session.post(url=inp.api_url, json=out.payload,
                                    headers=sg_headers()) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = strip_prefix(line.decode("utf-8"), "data: ")
                    out.latency = time.perf_counter() - start
                    if body == "[DONE]":
                        continue
                    data = json.loads(body)
                    delta = data.get("choices", [{}])[0].get("delta", {})
                    content = delta.get("content", "")
                    if content:
                        now = time.perf_counter()
                        if out.ttft == 0.0:
                            out.ttft = now - start
                        else:
                            out.itl.append(now - last_ts)
                        last_ts = now
                        out.generated_text += content
                    usage = data.get("usage") or {}
                    out.output_len = usage.get("completion_tokens", out.output_len)
                out.success = True
        except Exception:
            return failure(out)
    return out


# --------------------------------------------------------------------------------------------
# vLLM backend_request_func.py, mid-2025 (V25). Session: ClientSession(trust_env=True,
# timeout=6 h). Authorization is always sent: f"Bearer {os.environ.get('OPENAI_API_KEY')}",
# i.e. the literal "Bearer None" when the variable is unset. benchmark_serving --ignore-eos is
# used (adds "ignore_eos": true), so the output length is known in advance.
# --------------------------------------------------------------------------------------------

def v_session():
    return aiohttp.ClientSession(trust_env=True, timeout=TIMEOUT_6H)


def v_auth():
    return f"Bearer {os.environ.get('OPENAI_API_KEY')}"


async def v25_openai_completions(inp):
    """V25 async_request_openai_completions (--backend vllm / openai): POST /v1/completions.

    Payload: model, prompt, temperature 0.0, repetition_penalty 1.0, max_tokens, logprobs null,
    stream true, stream_options {include_usage: true}, ignore_eos true. Headers: Authorization.
    Stream: strip / skip empty / removeprefix("data: "); anything but "[DONE]" is JSON. A chunk
    with a non-empty "choices" is a token chunk even when its text is empty or null: TTFT on the
    first, one ITL entry per later one, text (or "") appended. Otherwise, if it has a truthy
    "usage", output_tokens = usage.completion_tokens. Success requires at least one token chunk
    ("Never received a valid chunk to calculate TTFT"); latency = last token chunk - start.
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "prompt": inp.prompt,
        "temperature": 0.0,
        "repetition_penalty": 1.0,
        "max_tokens": inp.output_len,
        "logprobs": None,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    async with v_session() as session:
        start = time.perf_counter()
        last_ts = start
        got_first = False
        try:
            async with session.post(url=inp.api_url, json=out.payload,
                                    headers={"Authorization": v_auth()}) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = line.decode("utf-8").removeprefix("data: ")
                    if body == "[DONE]":
                        continue
                    data = json.loads(body)
                    choices = data.get("choices")
                    if choices:
                        piece = choices[0].get("text")
                        now = time.perf_counter()
                        if not got_first:
                            got_first = True
                            out.ttft = time.perf_counter() - start
                        else:
                            out.itl.append(now - last_ts)
                        last_ts = now
                        out.generated_text += piece or ""
                    elif data.get("usage"):
                        out.output_len = data["usage"].get("completion_tokens")
                if got_first:
                    out.success = True
                else:
                    out.error = "Never received a valid chunk to calculate TTFT."
                out.latency = last_ts - start
        except Exception:
            return failure(out)
    return out


async def v25_openai_chat(inp):
    """V25 async_request_openai_chat_completions (--backend openai-chat, --endpoint
    /v1/chat/completions): POST /v1/chat/completions.

    Payload: model, messages [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    (content as a list of parts), temperature 0.0, max_completion_tokens, stream true,
    stream_options {include_usage: true}, ignore_eos true. Headers: Content-Type
    application/json and Authorization. Stream: as above, but a chunk with non-empty "choices"
    reads choices[0]["delta"] by key (a choice without "delta" raises KeyError -> failure) and
    .get("content"); TTFT when ttft is still 0.0, else an ITL entry, for every such chunk
    (role-only and finish chunks included); content or "" appended. Otherwise a truthy "usage"
    gives output_tokens. most_recent_timestamp moves on every non-[DONE] chunk. Success = HTTP
    200 and no exception (no TTFT requirement here).
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "messages": [{"role": "user", "content": [{"type": "text", "text": inp.prompt}]}],
        "temperature": 0.0,
        "max_completion_tokens": inp.output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    headers = {"Content-Type": "application/json", "Authorization": v_auth()}
    async with v_session() as session:
        start = time.perf_counter()
        last_ts = start
        try:
            async with session.post(url=inp.api_url, json=out.payload, headers=headers) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = line.decode("utf-8").removeprefix("data: ")
                    if body == "[DONE]":
                        continue
                    now = time.perf_counter()
                    data = json.loads(body)
                    choices = data.get("choices")
                    if choices:
                        content = choices[0]["delta"].get("content")
                        if out.ttft == 0.0:
                            out.ttft = now - start
                        else:
                            out.itl.append(now - last_ts)
                        out.generated_text += content or ""
                    elif data.get("usage"):
                        out.output_len = data["usage"].get("completion_tokens")
                    last_ts = now
                out.success = True
                out.latency = last_ts - start
        except Exception:
            return failure(out)
    return out


# --------------------------------------------------------------------------------------------
# vLLM backend_request_func.py, 2024 (V24): no stream_options, best_of sent, chat uses
# max_tokens. Session: ClientSession(timeout=6 h). Authorization "Bearer <$OPENAI_API_KEY>".
# latency is only assigned when "[DONE]" arrives, so a stream without "[DONE]" makes the
# function raise (UnboundLocalError) and the request fails: these clients REQUIRE [DONE].
# --------------------------------------------------------------------------------------------

async def v24_openai_completions(inp):
    """V24 async_request_openai_completions (--backend vllm): POST /v1/completions.

    Payload: model, prompt, temperature 0.0, best_of 1, max_tokens, logprobs null, stream true.
    Stream: strip / skip empty / remove "data: "; "[DONE]" sets latency; other lines index
    choices[0]["text"] directly (an empty choices list -> IndexError -> failure); non-empty text
    counts for TTFT / ITL and is appended. Success = 200, no exception, and [DONE] seen.
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "prompt": inp.prompt,
        "temperature": 0.0,
        "best_of": 1,
        "max_tokens": inp.output_len,
        "logprobs": None,
        "stream": True,
    }
    async with aiohttp.ClientSession(timeout=TIMEOUT_6H) as session:
        start = time.perf_counter()
        last_ts = start
        done_at = None
        try:
            async with session.post(url=inp.api_url, json=out.payload,
                                    headers={"Authorization": v_auth()}) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = strip_prefix(line.decode("utf-8"), "data: ")
                    if body == "[DONE]":
                        done_at = time.perf_counter() - start
                        continue
                    data = json.loads(body)
                    piece = data["choices"][0]["text"]
                    if piece:
                        now = time.perf_counter()
                        if out.ttft == 0.0:
                            out.ttft = time.perf_counter() - start
                        else:
                            out.itl.append(now - last_ts)
                        last_ts = now
                        out.generated_text += piece
                if done_at is None:
                    raise UnboundLocalError("latency: the stream ended without data: [DONE]")
                out.latency = done_at
                out.success = True
        except Exception:
            return failure(out)
    return out


async def v24_openai_chat(inp):
    """V24 async_request_openai_chat_completions (--backend openai-chat): POST
    /v1/chat/completions.

    Payload: model, messages [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    temperature 0.0, max_tokens, stream true. Headers: Content-Type + Authorization. Stream:
    "[DONE]" sets latency; other lines read choices[0]["delta"] by index and key (empty choices
    or a missing delta -> failure); truthy delta.get("content") counts for TTFT / ITL and is
    appended; most_recent_timestamp moves on every chunk. Success = 200, no exception, [DONE].
    """
    out = Output()
    out.payload = {
        "model": inp.model,
        "messages": [{"role": "user", "content": [{"type": "text", "text": inp.prompt}]}],
        "temperature": 0.0,
        "max_tokens": inp.output_len,
        "stream": True,
    }
    headers = {"Content-Type": "application/json", "Authorization": v_auth()}
    async with aiohttp.ClientSession(timeout=TIMEOUT_6H) as session:
        start = time.perf_counter()
        last_ts = start
        done_at = None
        try:
            async with session.post(url=inp.api_url, json=out.payload, headers=headers) as resp:
                if resp.status != 200:
                    out.error = resp.reason or ""
                    return out
                async for line in resp.content:
                    line = line.strip()
                    if not line:
                        continue
                    body = strip_prefix(line.decode("utf-8"), "data: ")
                    if body == "[DONE]":
                        done_at = time.perf_counter() - start
                        continue
                    now = time.perf_counter()
                    data = json.loads(body)
                    delta = data["choices"][0]["delta"]
                    if delta.get("content", None):
                        if out.ttft == 0.0:
                            out.ttft = time.perf_counter() - start
                        else:
                            out.itl.append(now - last_ts)
                        out.generated_text += delta["content"]
                    last_ts = now
                if done_at is None:
                    raise UnboundLocalError("latency: the stream ended without data: [DONE]")
                out.latency = done_at
                out.success = True
        except Exception:
            return failure(out)
    return out


# name -> (request function, endpoint, reads token counts?, ITL entries: "text" = one per
# text-bearing chunk, "chunk" = one per chunk with choices, "tokens" = one per token)
CLIENTS = {
    "sglang bench_serving --backend sglang": (sg_sglang_generate, "/generate", True, "tokens"),
    "sglang bench_serving --backend sglang --tokenize-prompt": (sg_sglang_generate, "/generate",
                                                                True, "tokens"),
    "sglang bench_serving --backend vllm": (sg_openai_completions, "/v1/completions", True,
                                            "text"),
    "sglang bench_serving --backend sglang-oai-chat": (sg_openai_chat, "/v1/chat/completions",
                                                       True, "text"),
    "vllm benchmark_serving --backend vllm": (v25_openai_completions, "/v1/completions", True,
                                              "chunk"),
    "vllm benchmark_serving --backend openai-chat": (v25_openai_chat, "/v1/chat/completions",
                                                     True, "chunk"),
    "vllm benchmark_serving (2024) --backend vllm": (v24_openai_completions, "/v1/completions",
                                                     False, "text"),
    "vllm benchmark_serving (2024) --backend openai-chat": (v24_openai_chat,
                                                            "/v1/chat/completions", False,
                                                            "text"),
}


def prompt_for(name, i):
    # Different lengths and contents, like sampled dataset rows.
    if "--tokenize-prompt" in name:
        return [100 + (7 * i + 3 * j) % 64 for j in range(4 + i)]  # token ids, not text
    return (f"[{name}] request {i}: summarize the plot of Hamlet" + " in more detail" * (i % 4)
            + ", please.")


def output_len_for(i):
    return 6 + 3 * i


# Per-request overrides of the emulator's --fault and delays: the truth is always clean and fast.
CLEAN = {"X-Emulator-Fault": "none", "X-Emulator-TTFT-Ms": "0", "X-Emulator-ITL-Ms": "0"}


def ground_truth(stack, payload, endpoint):
    """Ask the emulator directly, in its own dialect, for the same generation (non-streaming)."""
    base = stack.emulator.base
    if endpoint == "/v1/chat/completions":
        # Both emulator dialects serve chat; same messages, same budget.
        budget = payload.get("max_completion_tokens", payload.get("max_tokens"))
        body = {"model": MODEL, "messages": payload["messages"], "max_tokens": budget,
                "temperature": 0}
        if payload.get("ignore_eos"):
            body["ignore_eos"] = True
        status, resp = http_json("POST", base + endpoint, body, headers=CLEAN)
        assert status == 200, resp
        return resp["choices"][0]["message"]["content"], resp["usage"]["completion_tokens"]
    if endpoint == "/generate":
        prompt = payload["text"] if "text" in payload else payload["input_ids"]
        budget = payload["sampling_params"]["max_new_tokens"]
        ignore_eos = payload["sampling_params"]["ignore_eos"]
    else:
        prompt, budget = payload["prompt"], payload["max_tokens"]
        ignore_eos = payload.get("ignore_eos", False)
    if stack.dialect == "sglang":
        status, resp = http_json("POST", base + "/generate", headers=CLEAN, body={
            ("text" if isinstance(prompt, str) else "input_ids"): prompt, "sampling_params": {"max_new_tokens": budget, "temperature": 0,
                                                "ignore_eos": ignore_eos}})
        assert status == 200, resp
        return resp["text"], resp["meta_info"]["completion_tokens"]
    status, resp = http_json("POST", base + "/v1/completions", headers=CLEAN, body={
        "model": MODEL, "prompt": prompt, "max_tokens": budget, "temperature": 0,
        "ignore_eos": ignore_eos})
    assert status == 200, resp
    return resp["choices"][0]["text"], resp["usage"]["completion_tokens"]


async def sg_discover_model(base):
    # SG run_benchmark(): without --model it GETs <base>/v1/models and takes data[0].id.
    async with aiohttp.ClientSession() as session:
        async with session.get(base + "/v1/models", headers=sg_headers()) as resp:
            models = (await resp.json()).get("data", [])
            return models[0]["id"] if models else None


async def run_client(name, base):
    func, endpoint, _, _ = CLIENTS[name]
    if name.startswith("sglang"):
        model = await sg_discover_model(base)
    else:
        model = MODEL  # VS: --model is required on the command line
    inputs = [Input(prompt_for(name, i), base + endpoint, output_len_for(i), model)
              for i in range(NUM_REQUESTS)]
    # SG benchmark(): one warm-up request (output_len capped at 32) must succeed.
    # VS benchmark(): "initial single prompt test run" with the first request must succeed.
    first = inputs[0]
    probe = Input(first.prompt, first.api_url, min(first.output_len, 32), model)
    warm = await func(probe)
    # Request rate inf, no max concurrency: all requests start at once.
    outs = await asyncio.gather(*(func(inp) for inp in inputs))
    return model, warm, inputs, outs


class BenchClientsThroughProxy(unittest.TestCase):
    def run_dialect(self, dialect):
        with Stack(dialect, MODEL, emulator_args=["--ttft-ms", str(TTFT_MS), "--itl-ms", "1"]) \
                as stack:
            summary = []
            for name, (_, endpoint, reads_tokens, itl_kind) in CLIENTS.items():
                with self.subTest(backend=dialect, client=name):
                    model, warm, inputs, outs = asyncio.run(run_client(name, stack.proxy.base))
                    self.assertEqual(model, MODEL, "model discovered through the proxy")
                    self.assertTrue(warm.success, f"warm-up failed: {warm.error}\n{stack.logs()}")
                    for inp, out in zip(inputs, outs):
                        where = f" [{name} -> {dialect}] {inp.prompt!r}"
                        self.assertTrue(out.success, f"failed: {out.error}" + where)
                        self.assertEqual(out.error, "", where)
                        want_text, want_tokens = ground_truth(stack, out.payload, endpoint)
                        self.assertTrue(out.generated_text, "no streamed text" + where)
                        self.assertEqual(out.generated_text, want_text, "streamed text" + where)
                        self.assertEqual(want_tokens, inp.output_len, "emulator sanity" + where)
                        self.assertGreaterEqual(out.ttft, TTFT_MS / 1000 * 0.95, "TTFT" + where)
                        if reads_tokens:
                            self.assertEqual(out.output_len, want_tokens,
                                             "output token count the client read" + where)
                        # One token per backend chunk (emulator default), so the ITL list length
                        # is fixed by how the original counts.
                        if itl_kind in ("tokens", "text"):
                            self.assertEqual(len(out.itl), want_tokens - 1, "ITL entries" + where)
                        else:
                            self.assertGreaterEqual(len(out.itl), want_tokens - 1,
                                                    "ITL entries" + where)
                    ok = sum(o.success for o in outs)
                    ttft = sum(o.ttft for o in outs) / len(outs) * 1000
                    toks = sum(o.output_len or 0 for o in outs)
                    summary.append(f"  {name:<56} {ok}/{len(outs)} ok  mean TTFT {ttft:6.2f} ms"
                                   f"  tokens read {toks if reads_tokens else '-'}")
            print(f"\nbackend dialect {dialect}:\n" + "\n".join(summary), file=sys.stderr)

    def test_broken_stream_is_never_a_clean_success(self):
        # Self-check that these checks can fail: when the backend drops the connection after 3
        # events, no client may end up with success AND the complete text. (Whether it reports
        # failure depends on the original: SG's /generate client, for one, counts an error
        # event as success with the text so far - that is the real tool's behaviour.)
        for dialect in ("openai", "sglang"):
            with Stack(dialect, MODEL, emulator_args=["--fault", "close_midstream",
                                                      "--fault-after", "3"]) as stack:
                for name, (func, endpoint, _, _) in CLIENTS.items():
                    with self.subTest(backend=dialect, client=name):
                        out = asyncio.run(func(Input(prompt_for(name, 0), stack.proxy.base +
                                                     endpoint, 12, MODEL)))
                        want_text, _ = ground_truth(stack, out.payload, endpoint)
                        self.assertFalse(out.success and out.generated_text == want_text,
                                         f"{name}: a cut stream looked complete")

    def test_openai_backend(self):
        self.run_dialect("openai")

    def test_sglang_backend(self):
        self.run_dialect("sglang")


if __name__ == "__main__":
    unittest.main()
