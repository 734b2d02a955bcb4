"""The same-dialect fast path and the stream framing against backends that write other, equally
valid bytes than our emulator (issue 10): JSON with spaces (Python's json.dumps default), pretty
JSON over several `data:` lines, escapes, keys in another order, CRLF, `data:` without its space,
comments, event/id/retry lines, a BOM, a `[DONE]` with whitespace, a last event without its blank
line, and every event split into small writes. Backends are scripted (tests/integration/
scripted.py): each test says exactly which bytes the backend sends.
"""

from __future__ import annotations

import http.client
import json
import unittest

from harness import Emulator, Proxy, open_stream, post_json, strict_framing_problem
from scripted import ScriptedBackend, dumps, json_reply, ndjson_reply, raw_reply, sse_reply

MODEL = "m"
WORDS = [" w0", " w1", " w2"]


def models_reply(owned_by: str, model: str = MODEL):
    return json_reply({"object": "list", "data": [
        {"id": model, "object": "model", "created": 1, "owned_by": owned_by,
         "max_model_len": 4096}]}, style="spaced")


def completion_chunks(model: str = MODEL, *, running: bool, final_usage: bool,
                      id_after: bool = False) -> list[dict]:
    """vLLM's /v1/completions stream: one chunk per word (with running usage when `running`),
    a finish chunk, and a usage-only chunk when `final_usage`."""
    out = []
    for i, w in enumerate(WORDS):
        c = {"id": "cmpl-abc", "object": "text_completion", "created": 1, "model": model,
             "choices": [{"index": 0, "text": w, "logprobs": None,
                          "finish_reason": "length" if i == len(WORDS) - 1 else None,
                          "stop_reason": None}]}
        if running:
            c["usage"] = {"prompt_tokens": 2, "total_tokens": 3 + i, "completion_tokens": 1 + i}
        if id_after:
            c["id"] = c.pop("id")
        out.append(c)
    if final_usage:
        out.append({"id": "cmpl-abc", "object": "text_completion", "created": 1, "model": model,
                    "choices": [], "usage": {"prompt_tokens": 2, "total_tokens": 5,
                                             "completion_tokens": 3}})
    return out


def chat_chunks(model: str = MODEL, *, running: bool, final_usage: bool) -> list[dict]:
    out = [{"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                               "content": ""},
                                         "logprobs": None, "finish_reason": None}]}]
    for i, w in enumerate(WORDS):
        out.append({"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1,
                    "model": model,
                    "choices": [{"index": 0, "delta": {"content": w}, "logprobs": None,
                                 "finish_reason": "length" if i == len(WORDS) - 1 else None}]})
    if running:
        for i, c in enumerate(out):
            c["usage"] = {"prompt_tokens": 2, "total_tokens": 2 + i, "completion_tokens": i}
    if final_usage:
        out.append({"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1,
                    "model": model, "choices": [],
                    "usage": {"prompt_tokens": 2, "total_tokens": 5, "completion_tokens": 3}})
    return out


def payloads(chunks: list[dict], style: str) -> list[str]:
    return [dumps(c, style) for c in chunks] + ["[DONE]"]


def text_of(events, chat: bool) -> str:
    out = ""
    for e in events:
        if e.done:
            continue
        for c in e.json()["choices"]:
            out += (c.get("delta", {}).get("content") or "") if chat else c["text"]
    return out


class FastPathVllmTest(unittest.TestCase):
    """OpenAI clients in front of a vLLM-like backend (owned_by "vllm"): the proxy asks for
    usage and running usage on the client's behalf and takes them out again."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", models_reply("vllm"))
        cls.backend.route("GET", "/version", json_reply({"version": "0.8.5"}))
        cls.proxy = Proxy(["--upstream", cls.backend.url, "--alias", f"gpt-4o={MODEL}"],
                          model=MODEL)
        cls.addClassCleanup(cls.proxy.stop)

    def stream(self, path: str, body: dict):
        s = open_stream(self.proxy.port, path, body)
        self.assertEqual(s.status, 200, s.resp.read() if s.status != 200 else "")
        events = s.read_all()
        return s, events

    def check_clean(self, s, events, chat: bool, *, usage_chunk: bool):
        problem = strict_framing_problem(bytes(s.raw))
        self.assertIsNone(problem, bytes(s.raw)[:600])
        self.assertTrue(events[-1].done)
        self.assertEqual(text_of(events, chat), "".join(WORDS))
        body_chunks = [e.json() for e in events if not e.done and e.json()["choices"]]
        for c in body_chunks:
            self.assertNotIn("usage", c, "running usage the client did not ask for")
        usage_only = [e.json() for e in events if not e.done and not e.json()["choices"]]
        self.assertEqual(len(usage_only), 1 if usage_chunk else 0)
        if usage_chunk:
            self.assertEqual(usage_only[0]["usage"]["completion_tokens"], 3)

    def test_spaced_chunks_with_running_usage(self):
        """Issue 10's first defect: `"usage": {...}` after `", "` left `], }` behind."""
        for path, chat, chunks in [
                ("/v1/completions", False, completion_chunks(running=True, final_usage=True)),
                ("/v1/chat/completions", True, chat_chunks(running=True, final_usage=True))]:
            for style in ("spaced", "ascii", "compact"):
                with self.subTest(path=path, style=style):
                    self.backend.route("POST", path, sse_reply(payloads(chunks, style)))
                    body = ({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
                            if chat else {"model": MODEL, "prompt": "hi"})
                    body.update({"max_tokens": 3, "stream": True})
                    s, events = self.stream(path, body)
                    self.check_clean(s, events, chat, usage_chunk=False)
                    sent = self.backend.requests_to(path)[-1].json()
                    self.assertEqual(sent["stream_options"],
                                     {"include_usage": True, "continuous_usage_stats": True})

    def test_client_asked_for_usage_keeps_the_usage_chunk_only(self):
        chunks = completion_chunks(running=True, final_usage=True)
        self.backend.route("POST", "/v1/completions", sse_reply(payloads(chunks, "spaced")))
        s, events = self.stream("/v1/completions", {
            "model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True,
            "stream_options": {"include_usage": True}})
        self.check_clean(s, events, False, usage_chunk=True)

    def test_pretty_json_over_several_data_lines(self):
        """sse-starlette writes a payload holding newlines as several `data:` lines; naive
        clients read one line per event, so the proxy sends each event on one line."""
        chunks = completion_chunks(running=True, final_usage=True)
        for crlf in (False, True):
            with self.subTest(crlf=crlf):
                self.backend.route("POST", "/v1/completions",
                                   sse_reply(payloads(chunks, "pretty"), crlf=crlf))
                s, events = self.stream("/v1/completions", {
                    "model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True})
                self.check_clean(s, events, False, usage_chunk=False)

    def test_every_framing_variation_split_into_small_writes(self):
        """No space after `data:`, CR or CRLF line ends, event/id/retry lines, a BOM, `[DONE]`
        with whitespace, the last event at EOF without its blank line; the body cut into writes
        of 1-7 bytes."""
        chunks = completion_chunks(running=True, final_usage=True)
        texts = payloads(chunks, "spaced")[:-1] + ["  [DONE] "]
        variants = {
            "nospace-crlf": dict(space=False, crlf=True),
            "fields": dict(event="message", ids=True, retry=True),
            "eof-no-blank": dict(last_blank=False),
            "multiline-crlf": dict(multiline=True, crlf=True),
        }
        for name, style in variants.items():
            for seed in (1, 2):
                with self.subTest(variant=name, seed=seed):
                    reply = sse_reply(texts, split=seed, **style)
                    self.backend.route("POST", "/v1/completions", reply)
                    s, events = self.stream("/v1/completions", {
                        "model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True})
                    self.check_clean(s, events, False, usage_chunk=False)
        # A BOM before the first event (a chunked body's first bytes).
        body = b"\xef\xbb\xbf" + "".join(f"data: {t}\n\n" for t in texts).encode()
        self.backend.route("POST", "/v1/completions",
                           raw_reply(200, body, "text/event-stream", chunked=True))
        s, events = self.stream("/v1/completions", {
            "model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True})
        self.check_clean(s, events, False, usage_chunk=False)

    def test_alias_shown_whatever_model_the_backend_names(self):
        """The client uses an alias; the backend answers with a dated name, escaped ('\\/'),
        with spaces. The client sees its alias everywhere; the backend got its own name."""
        dated = MODEL + "-2024-08-06"
        chunks = chat_chunks(dated, running=False, final_usage=True)
        self.backend.route("POST", "/v1/chat/completions", sse_reply(payloads(chunks, "ascii")))
        # The client's own body, spaced, model last.
        raw_body = ('{"messages": [{"role": "user", "content": "hi"}], "stream": true, '
                    '"max_tokens": 3, "model": "gpt-4o"}')
        s = open_stream(self.proxy.port, "/v1/chat/completions", raw_body)
        self.assertEqual(s.status, 200)
        events = s.read_all()
        self.assertIsNone(strict_framing_problem(bytes(s.raw)))
        for e in events[:-1]:
            self.assertEqual(e.json()["model"], "gpt-4o")
        sent = self.backend.requests_to("/v1/chat/completions")[-1].json()
        self.assertEqual(sent["model"], MODEL)
        # Whole responses too.
        whole = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": dated,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "hey"},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}
        self.backend.route("POST", "/v1/chat/completions", json_reply(whole, style="pretty"))
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["model"], "gpt-4o")
        self.assertEqual(r.json()["choices"], whole["choices"])

    def test_keepalive_comments_reach_every_sse_client(self):
        chunks = completion_chunks(running=True, final_usage=True)
        self.backend.route("POST", "/v1/completions",
                           sse_reply(payloads(chunks, "spaced"), comments=True))
        s = open_stream(self.proxy.port, "/v1/completions",
                        {"model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True})
        events = s.read_all()
        self.assertEqual(bytes(s.raw).count(b": ping\n\n"), len(chunks) + 1)
        self.assertEqual(text_of(events, False), "".join(WORDS))
        # Translated: an SGLang client of the same backend gets them as comments too.
        s = open_stream(self.proxy.port, "/generate",
                        {"text": "hi", "sampling_params": {"max_new_tokens": 3}, "stream": True})
        events = s.read_all()
        self.assertEqual(bytes(s.raw).count(b": ping\n\n"), len(chunks) + 1)
        self.assertEqual(events[-2].json()["text"], "".join(WORDS))
        self.assertTrue(events[-1].done)


class FastPathIdsTest(unittest.TestCase):
    """SGLang's OpenAI layer gives each of n choices its own id; the proxy gives the stream one.
    The chunk id is the top-level member, wherever it is: not a tool call's id."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", models_reply("sglang"))
        cls.backend.route("GET", "/get_model_info", json_reply({"model_path": MODEL}))
        cls.proxy = Proxy(["--upstream", cls.backend.url], model=MODEL)
        cls.addClassCleanup(cls.proxy.stop)

    def test_n2_ids_after_choices_and_tool_call_ids(self):
        chunks = []
        for i in range(2):
            chunks.append({"object": "chat.completion.chunk", "created": 1, "model": MODEL,
                           "choices": [{"index": i, "delta": {"role": "assistant", "tool_calls": [
                               {"index": 0, "id": f"call_{i}", "type": "function",
                                "function": {"name": "f", "arguments": "{}"}}]},
                               "finish_reason": None}],
                           "id": f"choice-{i}"})
            chunks.append({"object": "chat.completion.chunk", "created": 1, "model": MODEL,
                           "choices": [{"index": i, "delta": {}, "finish_reason": "tool_calls"}],
                           "id": f"choice-{i}"})
        chunks.append({"id": "x", "object": "chat.completion.chunk", "created": 1,
                       "model": MODEL, "choices": [],
                       "usage": {"prompt_tokens": 2, "total_tokens": 4, "completion_tokens": 2}})
        self.backend.route("POST", "/v1/chat/completions", sse_reply(payloads(chunks, "spaced")))
        s = open_stream(self.proxy.port, "/v1/chat/completions", {
            "model": MODEL, "messages": [{"role": "user", "content": "hi"}], "n": 2,
            "stream": True, "tools": [{"type": "function", "function": {
                "name": "f", "parameters": {"type": "object", "properties": {}}}}]})
        self.assertEqual(s.status, 200)
        events = s.read_all()
        self.assertIsNone(strict_framing_problem(bytes(s.raw)))
        docs = [e.json() for e in events if not e.done]
        self.assertEqual(len({d["id"] for d in docs}), 1, [d["id"] for d in docs])
        calls = [c["delta"]["tool_calls"][0]["id"] for d in docs for c in d["choices"]
                 if "tool_calls" in c["delta"]]
        self.assertEqual(sorted(calls), ["call_0", "call_1"])


class GenericOpenAIBackendTest(unittest.TestCase):
    """An OpenAI-compatible server of unknown make may refuse fields it does not know: no
    stream_options is sent unless the client sent it; a usage chunk it sends is relayed."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", models_reply("acme-inference"))
        cls.proxy = Proxy(["--upstream", cls.backend.url], model=MODEL)
        cls.addClassCleanup(cls.proxy.stop)

    def test_no_stream_options_unless_the_client_sent_them(self):
        chunks = completion_chunks(running=False, final_usage=True)
        self.backend.route("POST", "/v1/completions", sse_reply(payloads(chunks, "spaced")))
        s = open_stream(self.proxy.port, "/v1/completions",
                        {"model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True})
        events = s.read_all()
        self.assertNotIn("stream_options", self.backend.requests_to("/v1/completions")[-1].json())
        # The backend sent a usage chunk unasked: relayed as it came.
        self.assertEqual(sum(1 for e in events if not e.done and not e.json()["choices"]), 1)
        s = open_stream(self.proxy.port, "/v1/completions", {
            "model": MODEL, "prompt": "hi", "max_tokens": 3, "stream": True,
            "stream_options": {"include_usage": True}})
        s.read_all()
        self.assertEqual(self.backend.requests_to("/v1/completions")[-1].json()["stream_options"],
                         {"include_usage": True})
        # Translated (an SGLang client): not sent either.
        s = open_stream(self.proxy.port, "/generate",
                        {"text": "hi", "sampling_params": {"max_new_tokens": 3}, "stream": True})
        self.assertTrue(s.read_all()[-1].done)
        self.assertNotIn("stream_options", self.backend.requests_to("/v1/completions")[-1].json())


class NdjsonVariantsTest(unittest.TestCase):
    """Ollama-style NDJSON with CRLF, blank lines and small writes."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.proxy = Proxy(["--upstream", cls.backend.url, "--upstream-dialect", "ollama",
                           "--model", MODEL], model=MODEL)
        cls.addClassCleanup(cls.proxy.stop)

    def test_chat_stream(self):
        lines = [dumps({"model": MODEL, "created_at": "2025-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": w}, "done": False}, "spaced")
                 for w in WORDS]
        lines.append(dumps({"model": MODEL, "created_at": "2025-01-01T00:00:00Z",
                            "message": {"role": "assistant", "content": ""}, "done": True,
                            "done_reason": "length", "total_duration": 10, "prompt_eval_count": 2,
                            "eval_count": 3}, "spaced"))
        for seed in (1, 2, 3):
            with self.subTest(seed=seed):
                reply = ndjson_reply(lines, crlf=True, blank_lines=True, split=seed)
                self.backend.route("POST", "/api/chat", reply)
                s = open_stream(self.proxy.port, "/v1/chat/completions", {
                    "model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                    "max_tokens": 3, "stream": True, "stream_options": {"include_usage": True}})
                events = s.read_all()
                self.assertIsNone(strict_framing_problem(bytes(s.raw)))
                self.assertEqual(text_of(events, True), "".join(WORDS))
                usage = [e.json()["usage"] for e in events if not e.done and "usage" in e.json()
                         and e.json()["usage"]]
                self.assertEqual(usage[-1]["completion_tokens"], 3)


class EmulatorInterimResponsesTest(unittest.TestCase):
    """The emulator in every dialect, with `100 Continue` and `103 Early Hints` before each answer:
    requests one after another over one client connection (so over one pooled upstream
    connection) each get their own answer, the same as from an emulator without them."""

    def test_every_dialect(self):
        for dialect, model in (("openai", "hints-m"), ("sglang", "hints-m"), ("tgi", "hints-m"),
                               ("ollama", "hints-m"), ("llamacpp", "hints-m")):
            with self.subTest(dialect=dialect):
                plain = Emulator(dialect, model, ["--quiet"])
                self.addCleanup(plain.stop)
                hinted = Emulator(dialect, model, ["--quiet", "--interim", "100,103"])
                self.addCleanup(hinted.stop)
                ref = Proxy(["--upstream", plain.url], wait_ready=False)
                self.addCleanup(ref.stop)
                proxy = Proxy(["--upstream", hinted.url], wait_ready=False)
                self.addCleanup(proxy.stop)
                served = [p.wait_ready()["data"][0]["id"] for p in (ref, proxy)]
                self.assertEqual(served[0], served[1])
                answers = []
                for p in (ref, proxy):
                    conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10)
                    got = []
                    for i, stream in enumerate((False, True, False, True)):
                        body = {"model": served[0], "prompt": f"prompt number {i}",
                                "max_tokens": 4, "stream": stream}
                        conn.request("POST", "/v1/completions", json.dumps(body),
                                     {"Content-Type": "application/json"})
                        r = conn.getresponse()
                        data = r.read()
                        self.assertEqual(r.status, 200, data[:300])
                        if stream:
                            text = "".join(
                                c["text"] for line in data.decode().split("\n\n")
                                if line.startswith("data: {")
                                for c in json.loads(line[6:])["choices"])
                        else:
                            text = json.loads(data)["choices"][0]["text"]
                        got.append(text)
                    conn.close()
                    answers.append(got)
                self.assertEqual(answers[1], answers[0])
                self.assertEqual(len(set(answers[0])), 4)  # each its own answer


if __name__ == "__main__":
    unittest.main()
