"""Issue 16 item 3 through the real binary: log probabilities both ways, and echo.

Every backend is scripted with the bytes its real server writes: llama.cpp's are the real
llama-server c392e509's own answers (tests/fixtures/llamacpp/README.md); SGLang's, vLLM's, TGI's
and Ollama's follow their servers' source (cited at each). The request a backend receives is
checked too: each engine must be asked under the names it reads.

The loglikelihood request is the one lm-evaluation-harness's `local-completions` model sends
(lm_eval/models/openai_completions.py, `_create_payload` with generate=False): `echo` and
`logprobs: 1` with `max_tokens: 1`, the context and continuation as one prompt in a list (token
ids by default, text with tokenized_requests=False); it then reads
`choices[i].logprobs.token_logprobs[ctxlen:-1]` and `top_logprobs[ctxlen:-1]`."""

from __future__ import annotations

import json
import pathlib
import unittest

from harness import Proxy, open_stream, post_json, request, start
from scripted import ScriptedBackend, json_reply, ndjson_reply, raw_reply, sse_reply

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"


def fixture(rel: str) -> str:
    return (FIXTURES / rel).read_text()


def sse_payloads(text: str) -> list[str]:
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]


def ndjson(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def lm_eval_request(model: str, prompt) -> dict:
    return {"model": model, "prompt": [prompt], "max_tokens": 1, "temperature": 0, "logprobs": 1,
            "seed": 1234, "echo": True}


def code_points(s: str) -> int:
    return len(s)


class LlamacppLogprobsTest(unittest.TestCase):
    """A llama.cpp backend: n_probs → completion_probabilities, the real engine's bytes."""
    MODEL = "tiny-llama"

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.whole = fixture("llamacpp/completion_logprobs_real_c392e509.json").strip()
        cls.stream = fixture("llamacpp/completion_logprobs_stream_real_c392e509.sse")
        cls.engine = json.loads(cls.whole)["completion_probabilities"]
        # The streamed run's own entries (a second run of the engine: its last digits differ).
        cls.engine_stream = [e for p in sse_payloads(cls.stream)
                             for e in json.loads(p).get("completion_probabilities", [])]

        def completion(req):
            if json.loads(req.body).get("stream"):
                return sse_reply(sse_payloads(cls.stream))
            return raw_reply(200, cls.whole.encode(), "application/json; charset=utf-8")
        cls.backend.route("POST", "/completion", completion)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "llamacpp", "--model", cls.MODEL], model=cls.MODEL)

    def last_request(self) -> dict:
        return self.backend.requests_to("/completion")[-1].json()

    def check_openai_logprobs(self, lp: dict, top: int, engine: list[dict]):
        self.assertEqual(lp["tokens"], [e["token"] for e in engine])
        self.assertEqual(lp["token_logprobs"], [e["logprob"] for e in engine])
        offsets, at = [], 0
        for e in engine:
            offsets.append(at)
            at += code_points(e["token"])
        self.assertEqual(lp["text_offset"], offsets)
        for got, e in zip(lp["top_logprobs"], engine):
            want = {a["token"]: a["logprob"] for a in e["top_logprobs"][:top]}
            want[e["token"]] = e["logprob"]  # the chosen token too, as vLLM and OpenAI write it
            self.assertEqual(got, want)

    def test_openai_completions_logprobs(self):
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": self.MODEL, "prompt": "Hello world", "max_tokens": 3,
                       "logprobs": 2, "temperature": 0})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(self.last_request().get("n_probs"), 2)
        choice = r.json()["choices"][0]
        self.assertIsNotNone(choice["logprobs"], "the logprobs the engine reported were lost")
        self.check_openai_logprobs(choice["logprobs"], 2, self.engine)

    def test_openai_completions_logprobs_streamed(self):
        s = open_stream(self.proxy.port, "/v1/completions",
                        {"model": self.MODEL, "prompt": "Hello world", "max_tokens": 3,
                         "logprobs": 1, "temperature": 0, "stream": True})
        self.assertEqual(s.status, 200)
        merged = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
        for ev in s.read_all():
            if ev.done:
                continue
            for c in ev.json()["choices"]:
                if c.get("logprobs"):
                    for k in merged:
                        merged[k] += c["logprobs"][k]
        self.check_openai_logprobs(merged, 1, self.engine_stream)

    def test_no_logprobs_asked_none_written(self):
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": self.MODEL, "prompt": "Hello world", "max_tokens": 3})
        self.assertEqual(r.status, 200)
        self.assertNotIn("n_probs", self.last_request())
        self.assertIsNone(r.json()["choices"][0]["logprobs"])

    def test_llamacpp_client_gets_the_engines_entries(self):
        r = post_json(self.proxy.port, "/completion",
                      {"prompt": "Hello world", "n_predict": 3, "n_probs": 2})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json()["completion_probabilities"], self.engine)

    def test_ollama_generate_logprobs(self):
        r = post_json(self.proxy.port, "/api/generate",
                      {"model": self.MODEL, "prompt": "Hello world", "raw": True, "stream": False,
                       "logprobs": True, "top_logprobs": 1, "options": {"num_predict": 3}})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(self.last_request().get("n_probs"), 1)
        got = r.json()["logprobs"]
        self.assertEqual([(e["token"], e["logprob"]) for e in got],
                         [(e["token"], e["logprob"]) for e in self.engine])
        self.assertEqual([len(e["top_logprobs"]) for e in got], [1] * len(self.engine))

    def test_ollama_generate_logprobs_streamed(self):
        r = request(self.proxy.port, "POST", "/api/generate",
                    {"model": self.MODEL, "prompt": "Hello world", "raw": True,
                     "logprobs": True, "options": {"num_predict": 3}})
        self.assertEqual(r.status, 200, r.body[:300])
        got = [e for line in ndjson(r.body) for e in line.get("logprobs", [])]
        self.assertEqual([(e["token"], e["logprob"]) for e in got],
                         [(e["token"], e["logprob"]) for e in self.engine_stream])
        self.assertTrue(all("top_logprobs" not in e for e in got))  # none asked (omitempty)

    def test_lm_eval_loglikelihood_is_refused_naming_echo(self):
        # llama-server c392e509 has no prompt logprobs: a loglikelihood cannot be computed.
        before = len(self.backend.requests_to("/completion"))
        r = post_json(self.proxy.port, "/v1/completions",
                      lm_eval_request(self.MODEL, "Hello world"))
        self.assertEqual(r.status, 400, r.body[:300])
        err = r.json()["error"]
        self.assertEqual(err["param"], "echo")
        self.assertIn("prompt's log probabilities", err["message"])
        self.assertEqual(len(self.backend.requests_to("/completion")), before)

    def test_echo_alone_works(self):
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": self.MODEL, "prompt": "Hello world", "max_tokens": 3,
                       "echo": True})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json()["choices"][0]["text"],
                         "Hello world" + json.loads(self.whole)["content"])


class RefusalsTest(unittest.TestCase):
    """Backends that report no log probabilities: a 400 naming what was asked, never a 200
    without it."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "anthropic", "--model", "claude"], model="claude")

    def test_openai_chat_logprobs_to_anthropic(self):
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": "claude", "messages": [{"role": "user", "content": "hi"}],
                       "max_tokens": 4, "logprobs": True, "top_logprobs": 2})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json()["error"]["param"], "logprobs")
        self.assertEqual(self.backend.requests_to("/v1/messages"), [])

    def test_ollama_chat_logprobs_to_anthropic(self):
        r = post_json(self.proxy.port, "/api/chat",
                      {"model": "claude", "messages": [{"role": "user", "content": "hi"}],
                       "stream": False, "logprobs": True})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("logprobs", r.json()["error"])


if __name__ == "__main__":
    unittest.main()
