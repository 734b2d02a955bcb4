"""Dialect details a real server has and our earlier answers did not (issue 10, section 5):
llama.cpp's `GET /health` body and the numbers in `/completion`'s `timings`, and an SGLang
backend run with `--incremental-streaming-output`, whose stream carries each event's own text."""

from __future__ import annotations

import json
import unittest

from harness import Emulator, Proxy, open_stream, post_json, request, start
from scripted import ScriptedBackend, dumps, json_reply, sse_reply

MODEL = "detail-model"
TIMING_KEYS = ["prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
               "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second"]


class LlamaCppFrontTest(unittest.TestCase):
    """llama.cpp clients in front of an OpenAI backend (the emulator, 20 ms to the first token,
    10 ms between tokens)."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL,
                        ["--quiet", "--ttft-ms", "20", "--itl-ms", "10"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=MODEL)

    def test_health_answers_like_llama_server(self):
        r = request(self.proxy.port, "GET", "/health")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"status": "ok"})
        self.assertTrue(r.header("content-type").startswith("application/json"))

    def check_timings(self, timings: dict, predicted: int, streamed: bool):
        for k in TIMING_KEYS:
            self.assertIn(k, timings)
            v = timings[k]
            self.assertIsInstance(v, (int, float), f"timings.{k} = {v!r}")
            self.assertGreaterEqual(v, 0, k)
        self.assertEqual(timings["predicted_n"], predicted)
        self.assertGreater(timings["prompt_n"], 0)
        if streamed:
            # Measured by the proxy: the first token came after >= 20 ms, the others 10 ms apart.
            self.assertGreaterEqual(timings["prompt_ms"], 19.0)
            self.assertGreaterEqual(timings["predicted_ms"], 10.0 * (predicted - 1) * 0.9)
            self.assertAlmostEqual(timings["predicted_per_second"],
                                   1e3 / timings["predicted_ms"] * predicted, places=3)
        else:
            self.assertGreaterEqual(timings["predicted_ms"], 19.0)

    def test_completion_timings_are_numbers(self):
        r = post_json(self.proxy.port, "/completion", {"prompt": "tell me", "n_predict": 5})
        self.assertEqual(r.status, 200, r.body)
        self.check_timings(r.json()["timings"], 5, streamed=False)
        s = open_stream(self.proxy.port, "/completion",
                        {"prompt": "tell me", "n_predict": 5, "stream": True})
        events = s.read_all()
        final = events[-1].json()
        self.assertTrue(final["stop"])
        self.check_timings(final["timings"], 5, streamed=True)
        self.assertNotIn(b"null", bytes(s.raw))


class SGLangIncrementalStreamTest(unittest.TestCase):
    """SGLang with --incremental-streaming-output: `text` and `output_ids` are the event's own
    (python/sglang/srt/managers/tokenizer_manager.py, bzhng-development/sglang @8471c9eb);
    meta_info.completion_tokens still counts all of them."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", json_reply({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 1, "owned_by": "sglang",
             "root": MODEL, "max_model_len": 4096}]}))
        cls.backend.route("GET", "/get_model_info", json_reply(
            {"model_path": MODEL, "tokenizer_path": MODEL, "is_generation": True}))
        cls.proxy = Proxy(["--upstream", cls.backend.url], model=MODEL)
        cls.addClassCleanup(cls.proxy.stop)

    def test_delta_text_is_not_lost(self):
        pieces = ["Hello", " wor", "ld", "!"]
        events = []
        for i, p in enumerate(pieces):
            last = i == len(pieces) - 1
            events.append(dumps({
                "text": p, "output_ids": [100 + i],
                "meta_info": {"id": "abc", "prompt_tokens": 3, "completion_tokens": i + 1,
                              "cached_tokens": 0,
                              "finish_reason": {"type": "length", "length": 4} if last else None}},
                "spaced"))
        self.backend.route("POST", "/generate", sse_reply(events + ["[DONE]"]))
        s = open_stream(self.proxy.port, "/v1/completions",
                        {"model": MODEL, "prompt": "hi", "max_tokens": 4, "stream": True,
                         "stream_options": {"include_usage": True}})
        self.assertEqual(s.status, 200)
        got = s.read_all()
        text = "".join(c["text"] for e in got if not e.done for c in e.json()["choices"])
        self.assertEqual(text, "".join(pieces))
        usage = [e.json()["usage"] for e in got if not e.done and e.json().get("usage")]
        self.assertEqual(usage[-1]["completion_tokens"], 4)
        # An SGLang client of the same backend gets what that server sends (the pass-through).
        s = open_stream(self.proxy.port, "/generate",
                        {"text": "hi", "sampling_params": {"max_new_tokens": 4}, "stream": True})
        got = [e for e in s.read_all() if not e.done]
        self.assertEqual([e.json()["text"] for e in got], pieces)
        # A TGI client (translated): tokens one by one, and the whole text at the end.
        s = open_stream(self.proxy.port, "/generate_stream",
                        {"inputs": "hi", "parameters": {"max_new_tokens": 4}})
        got = [e.json() for e in s.read_all() if not e.done]
        self.assertEqual("".join(e["token"]["text"] for e in got), "".join(pieces))
        self.assertEqual(got[-1]["generated_text"], "".join(pieces))


if __name__ == "__main__":
    unittest.main()
