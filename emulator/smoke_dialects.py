#!/usr/bin/env python3
"""Smoke test of the tgi, ollama, llamacpp, vllm_legacy and anthropic dialects of
infergate-emulator (docs/emulator.md): routes, streaming and non-streaming wire framing, an
error and a fault per dialect, and token counts that agree with the openai dialect.

usage: smoke_dialects.py PATH/TO/infergate-emulator
Standard library only; exits non-zero on failure.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_test import FAILURES, check, request, start  # noqa: E402

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "hi there"}]


def running(binary, dialect):
    return start(binary, "--dialect", dialect, "--model", "m")


def reference(binary):
    """What the openai (vLLM) dialect says for the shared prompts."""
    proc, port = running(binary, "openai")
    try:
        _, _, raw = request(port, "POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 4})
        comp = json.loads(raw)
        _, _, raw = request(port, "POST", "/v1/chat/completions",
                            {"messages": CHAT, "max_tokens": 3})
        chat = json.loads(raw)
        return {"text": comp["choices"][0]["text"], "prompt": comp["usage"]["prompt_tokens"],
                "chat_text": chat["choices"][0]["message"]["content"],
                "chat_prompt": chat["usage"]["prompt_tokens"]}
    finally:
        proc.terminate()
        proc.wait()


def sse_events(raw, sep):
    blocks = [b for b in raw.decode().split("\n\n") if b]
    assert all(b.startswith(sep) for b in blocks), blocks
    return [b[len(sep):] for b in blocks]


def test_tgi(binary, ref):
    proc, port = running(binary, "tgi")
    try:
        st, _, raw = request(port, "GET", "/info")
        info = json.loads(raw)
        check("tgi /info router", info["router"] == "text-generation-router" and
              info["model_id"] == "m" and info["max_total_tokens"] == 4096)
        st, _, raw = request(port, "GET", "/v1/models")
        card = json.loads(raw)["data"][0]
        check("tgi /v1/models owned_by = id, created 0", card["owned_by"] == "m" and
              card["created"] == 0)
        st, hd, raw = request(port, "GET", "/health")
        check("tgi /health empty 200", st == 200 and raw == b"")
        st, hd, raw = request(port, "POST", "/generate",
                              {"inputs": PROMPT, "parameters": {"max_new_tokens": 4,
                                                                "details": True}})
        body = json.loads(raw)
        check("tgi /generate text = openai text", body["generated_text"] == ref["text"], body)
        check("tgi x-prompt-tokens header", hd.get("x-prompt-tokens") == str(ref["prompt"]) and
              hd.get("x-generated-tokens") == "4", hd)
        check("tgi details", body["details"]["finish_reason"] == "length" and
              body["details"]["generated_tokens"] == 4 and body["details"]["prefill"] == [] and
              len(body["details"]["tokens"]) == 4)
        stop = ref["text"].split()[1]
        st, _, raw = request(port, "POST", "/generate",
                             {"inputs": PROMPT, "parameters": {"max_new_tokens": 4,
                                                               "stop": [stop], "details": True}})
        body = json.loads(raw)
        check("tgi keeps the stop sequence", body["generated_text"].endswith(stop) and
              body["details"]["finish_reason"] == "stop_sequence", body)
        st, hd, raw = request(port, "POST", "/generate_stream",
                              {"inputs": PROMPT, "parameters": {"max_new_tokens": 3,
                                                                "details": True}},
                              {"X-Emulator-Eos-After": "2"})
        check("tgi stream framing data:{ no space", raw.startswith(b"data:{") and
              b"data: " not in raw and b"[DONE]" not in raw, raw[:40])
        ev = [json.loads(e) for e in sse_events(raw, "data:")]
        check("tgi stream per token + final", len(ev) == 3 and ev[0]["index"] == 1 and
              ev[0]["generated_text"] is None and ev[-1]["token"]["special"] is True and
              ev[-1]["details"]["finish_reason"] == "eos_token" and
              ev[-1]["details"]["input_length"] == ref["prompt"] and
              ev[-1]["generated_text"] == " ".join(ref["text"].split()[:2]).join([" ", ""]), ev)
        st, _, raw = request(port, "POST", "/", {"inputs": "a b",
                                                 "parameters": {"max_new_tokens": 2}})
        out = json.loads(raw)
        check("tgi POST / array + full text", isinstance(out, list) and
              out[0]["generated_text"].startswith("a b "))
        st, _, raw = request(port, "POST", "/generate",
                             {"inputs": "a", "parameters": {"temperature": 0}})
        check("tgi temperature 0 -> 422 validation", st == 422 and json.loads(raw) == {
            "error": "Input validation error: `temperature` must be strictly positive",
            "error_type": "validation"}, raw)
        st, hd, raw = request(port, "POST", "/generate", {"parameters": {}})
        check("tgi missing inputs -> 422 plain text", st == 422 and
              hd["content-type"].startswith("text/plain") and b"missing field `inputs`" in raw)
        st, _, raw = request(port, "POST", "/generate_stream",
                             {"inputs": "a", "parameters": {"top_p": 1.0}})
        check("tgi stream validation in-band", st == 200 and raw.startswith(b"data:{\"error\""))
        st, _, raw = request(port, "POST", "/generate_stream",
                             {"inputs": "a", "parameters": {"max_new_tokens": 5}},
                             {"X-Emulator-Fault": "error_event"})
        ev = [json.loads(e) for e in sse_events(raw, "data:")]
        check("tgi error_event", len(ev) == 3 and ev[-1]["error_type"] == "generation")
        st, _, raw = request(port, "POST", "/v1/chat/completions",
                             {"messages": CHAT, "max_tokens": 3, "stream": True,
                              "stream_options": {"include_usage": True}})
        ev = sse_events(raw, "data:")
        chunks = [json.loads(e) for e in ev[:-1]]
        check("tgi oai chat stream", ev[-1] == "[DONE]" and chunks[0]["id"] == "" and
              "".join(c["choices"][0]["delta"]["content"] for c in chunks[:-1]) ==
              ref["chat_text"] and chunks[-1]["usage"]["prompt_tokens"] == ref["chat_prompt"])
    finally:
        proc.terminate()
        proc.wait()


def test_ollama(binary, ref):
    proc, port = running(binary, "ollama")
    try:
        st, hd, raw = request(port, "GET", "/")
        check("ollama GET /", raw == b"Ollama is running" and
              hd["content-type"].startswith("text/plain"))
        st, hd, raw = request(port, "HEAD", "/")
        check("ollama HEAD /", st == 200 and raw == b"")
        st, _, raw = request(port, "GET", "/api/tags")
        m = json.loads(raw)["models"][0]
        check("ollama /api/tags", m["name"] == "m:latest" and "quantization_level" in m["details"])
        st, _, raw = request(port, "GET", "/api/version")
        check("ollama /api/version", "version" in json.loads(raw))
        st, _, raw = request(port, "GET", "/v1/models")
        check("ollama /v1/models owned_by library",
              json.loads(raw)["data"][0]["owned_by"] == "library")
        st, hd, raw = request(port, "POST", "/api/generate",
                              {"model": "m", "prompt": PROMPT, "raw": True,
                               "options": {"num_predict": 4}})
        lines = raw.decode().split("\n")
        check("ollama stream is default NDJSON", hd["content-type"] == "application/x-ndjson" and
              lines[-1] == "" and all(not l.startswith("data:") for l in lines))
        objs = [json.loads(l) for l in lines[:-1]]
        final = objs[-1]
        check("ollama raw text and counts = openai",
              "".join(o["response"] for o in objs) == ref["text"] and
              final["done"] and final["done_reason"] == "length" and
              final["prompt_eval_count"] == ref["prompt"] and final["eval_count"] == 4 and
              "context" not in final and isinstance(final["total_duration"], int), final)
        st, _, raw = request(port, "POST", "/api/generate",
                             {"model": "m", "prompt": PROMPT, "stream": False,
                              "options": {"num_predict": 2}})
        body = json.loads(raw)
        check("ollama templated prompt counts 2 more + context",
              body["prompt_eval_count"] == ref["prompt"] + 2 and
              len(body["context"]) == ref["prompt"] + 2 + 2, body)
        st, _, raw = request(port, "POST", "/api/chat",
                             {"model": "m", "messages": CHAT, "stream": False,
                              "options": {"num_predict": 3}})
        body = json.loads(raw)
        check("ollama chat = openai chat", body["message"]["content"] == ref["chat_text"] and
              body["prompt_eval_count"] == ref["chat_prompt"], body)
        st, _, raw = request(port, "POST", "/api/generate", {"model": "x", "prompt": "a"})
        check("ollama unknown model 404", st == 404 and json.loads(raw) == {
            "error": "model \"x\" not found, try pulling it first"})
        st, _, raw = request(port, "POST", "/api/generate", "{bad")
        check("ollama bad JSON 400", st == 400 and "error" in json.loads(raw))
        st, _, raw = request(port, "POST", "/api/generate",
                             {"model": "m", "prompt": "a", "options": {"num_predict": 6}},
                             {"X-Emulator-Fault": "error_event"})
        lines = raw.decode().split("\n")
        check("ollama in-band error line", st == 200 and len(lines) == 4 and
              json.loads(lines[2]) == {"error": "emulated fault (X-Emulator-Fault)"}, lines)
    finally:
        proc.terminate()
        proc.wait()


def test_llamacpp(binary, ref):
    proc, port = running(binary, "llamacpp")
    try:
        st, hd, raw = request(port, "GET", "/health")
        check("llamacpp /health + Server header", json.loads(raw) == {"status": "ok"} and
              hd.get("server") == "llama.cpp", hd)
        st, hd, raw = request(port, "GET", "/nope")
        check("llamacpp 404 shape", st == 404 and hd.get("server") == "llama.cpp" and
              json.loads(raw)["error"]["type"] == "not_found_error")
        st, _, raw = request(port, "GET", "/v1/models")
        check("llamacpp owned_by", json.loads(raw)["data"][0]["owned_by"] == "llamacpp")
        st, _, raw = request(port, "POST", "/completion", {"prompt": PROMPT, "n_predict": 4})
        body = json.loads(raw)
        check("llamacpp /completion = openai", body["content"] == ref["text"] and
              body["tokens_evaluated"] == ref["prompt"] and body["tokens_predicted"] == 4 and
              body["stop_type"] == "limit" and "timings" in body, body)
        stop = ref["text"].split()[2]
        st, _, raw = request(port, "POST", "/completions",
                             {"prompt": PROMPT, "max_tokens": 4, "stop": [stop], "stream": True})
        ev = [json.loads(e) for e in sse_events(raw, "data: ")]
        check("llamacpp stream: no [DONE], final stop event", b"[DONE]" not in raw and
              ev[-1]["stop"] is True and ev[-1]["content"] == "" and
              ev[-1]["stop_type"] == "word" and ev[-1]["stopping_word"] == stop and
              all(e["stop"] is False for e in ev[:-1]) and
              "".join(e["content"] for e in ev[:-1]) == " ".join(ref["text"].split()[:2])
              .join([" ", " "]), ev)
        st, _, raw = request(port, "POST", "/completion", {"n_predict": 1})
        check("llamacpp missing prompt error shape", st == 500 and
              json.loads(raw)["error"]["code"] == 500)
        st, _, raw = request(port, "POST", "/completion", {"prompt": "a"},
                             {"X-Emulator-Fault": "status:503"})
        check("llamacpp status:503", st == 503 and
              json.loads(raw)["error"]["type"] == "unavailable_error")
        st, _, raw = request(port, "POST", "/v1/chat/completions",
                             {"messages": CHAT, "max_tokens": 3, "stream": True})
        ev = sse_events(raw, "data: ")
        chunks = [json.loads(e) for e in ev[:-1]]
        check("llamacpp oai chat stream", ev[-1] == "[DONE]" and
              chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None} and
              chunks[-1]["choices"][0]["delta"] == {} and "timings" in chunks[-1] and
              "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) ==
              ref["chat_text"], chunks)
    finally:
        proc.terminate()
        proc.wait()


def test_vllm_legacy(binary, ref):
    proc, port = running(binary, "vllm_legacy")
    try:
        st, _, raw = request(port, "GET", "/health")
        check("legacy /health", st == 200 and raw == b"")
        for path in ("/v1/models", "/info", "/version"):
            st, _, raw = request(port, "GET", path)
            check("legacy 404 " + path, st == 404 and json.loads(raw) == {"detail": "Not Found"})
        st, _, raw = request(port, "POST", "/generate", {"prompt": PROMPT, "max_tokens": 4})
        check("legacy non-stream echoes prompt", json.loads(raw) == {"text": [PROMPT + ref["text"]]})
        st, _, raw = request(port, "POST", "/generate", {"prompt": PROMPT})
        check("legacy default 16 tokens", len(json.loads(raw)["text"][0].split()) == 5 + 16)
        st, hd, raw = request(port, "POST", "/generate",
                              {"prompt": PROMPT, "max_tokens": 4, "n": 2, "stream": True})
        check("legacy stream: chunked, no content-type", "content-length" not in hd and
              hd.get("transfer-encoding") == "chunked" and "content-type" not in hd, hd)
        recs = raw.decode().split("\n")
        objs = [json.loads(r) for r in recs[:-1]]
        check("legacy stream: \\n records, cumulative, n texts", recs[-1] == "" and
              len(objs) == 4 and all(len(o["text"]) == 2 for o in objs) and
              objs[-1]["text"][0] == PROMPT + ref["text"] and
              recs[0].startswith('{"text": ["'), recs)
        st, _, raw = request(port, "POST", "/generate", {"prompt": "a", "max_tokens": 2,
                                                         "stream": True},
                             {"X-Emulator-Legacy-Delimiter": "nul"})
        check("legacy \\0 delimiter", raw.count(b"\0") == 2 and b"\n" not in raw)
        st, _, raw = request(port, "POST", "/generate", {"prompt": "a", "bogus": 1})
        check("legacy unknown key 500", st == 500 and raw == b"Internal Server Error")
        st, _, raw = request(port, "POST", "/generate", {"max_tokens": 1})
        check("legacy missing prompt 500", st == 500)
        st, _, raw = request(port, "POST", "/generate", {"prompt": "a", "stream": True},
                             {"X-Emulator-Fault": "garbage"})
        check("legacy garbage", st == 200 and b"garbage" in raw)
    finally:
        proc.terminate()
        proc.wait()


def test_anthropic(binary, ref):
    proc, port = running(binary, "anthropic")
    v = {"anthropic-version": "2023-06-01"}
    try:
        st, _, raw = request(port, "GET", "/v1/models")
        body = json.loads(raw)
        check("anthropic /v1/models", body["data"][0]["type"] == "model" and
              body["has_more"] is False and body["first_id"] == "m")
        st, hd, raw = request(port, "POST", "/v1/messages",
                              {"model": "m", "max_tokens": 3, "messages": CHAT}, v)
        body = json.loads(raw)
        check("anthropic message = openai chat", body["type"] == "message" and
              body["id"].startswith("msg_") and body["content"] == [
                  {"type": "text", "text": ref["chat_text"]}] and
              body["stop_reason"] == "max_tokens" and
              body["usage"]["input_tokens"] == ref["chat_prompt"] and
              body["usage"]["output_tokens"] == 3 and "request-id" in hd, body)
        st, _, raw = request(port, "POST", "/v1/messages",
                             {"model": "m", "max_tokens": 3, "stream": True, "messages": CHAT},
                             dict(v, **{"X-Emulator-Eos-After": "2"}))
        blocks = [b for b in raw.decode().split("\n\n") if b]
        names = [b.split("\n")[0][len("event: "):] for b in blocks]
        check("anthropic event order", names == [
            "message_start", "content_block_start", "ping", "content_block_delta",
            "content_block_delta", "content_block_stop", "message_delta", "message_stop"], names)
        delta = json.loads(blocks[-2].split("\n")[1][len("data: "):])
        check("anthropic message_delta", delta["delta"]["stop_reason"] == "end_turn" and
              delta["usage"]["output_tokens"] == 3, delta)
        st, _, raw = request(port, "POST", "/v1/messages", {"model": "m", "messages": CHAT}, v)
        check("anthropic max_tokens required", st == 400 and json.loads(raw)["error"]["type"] ==
              "invalid_request_error")
        st, _, raw = request(port, "POST", "/v1/messages",
                             {"model": "m", "max_tokens": 3, "messages": CHAT})
        check("anthropic-version required", st == 400)
        st, _, raw = request(port, "POST", "/v1/messages",
                             {"model": "m", "max_tokens": 8, "stream": True, "messages": CHAT},
                             dict(v, **{"X-Emulator-Fault": "error_event"}))
        last = [b for b in raw.decode().split("\n\n") if b][-1]
        check("anthropic event: error", last.startswith("event: error\ndata: ") and
              json.loads(last.split("\n")[1][6:])["error"]["type"] == "api_error", last)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    binary = sys.argv[1]
    ref = reference(binary)
    for test in (test_tgi, test_ollama, test_llamacpp, test_vllm_legacy, test_anthropic):
        test(binary, ref)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
