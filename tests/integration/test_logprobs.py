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

from harness import (OTHER_WIRE_STYLE, Emulator, Proxy, open_stream, post_json, request, start,
                     token_id)
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


class EmulatorBackendsTest(unittest.TestCase):
    """The emulator's log-probability model gives the same numbers in every dialect (it depends
    on the tokens only), so one request translated to each backend dialect must give an OpenAI
    client the same logprobs object (to float32 precision: TGI writes 32-bit floats), and the
    loglikelihood request the same prompt entries wherever the backend has them."""
    MODEL = "emulator-model"
    PROMPT = "the time of them"  # words of the emulator's vocabulary
    EMU_ARGS: list[str] = []  # the emulator's wire style (harness.OTHER_WIRE_STYLE below)

    @classmethod
    def setUpClass(cls):
        cls.proxies = {}
        for dialect in ("openai", "sglang", "tgi", "llamacpp", "ollama"):
            emu = start(cls, Emulator, dialect, cls.MODEL, ["--quiet", *cls.EMU_ARGS])
            cls.proxies[dialect] = start(cls, Proxy, ["--upstream", emu.url, "--model",
                                                      cls.MODEL], model=cls.MODEL)

    def completions(self, dialect: str, body: dict) -> dict:
        r = post_json(self.proxies[dialect].port, "/v1/completions",
                      {"model": self.MODEL, **body})
        self.assertEqual(r.status, 200, f"{dialect}: {r.body[:300]!r}")
        return r.json()["choices"][0]

    def assert_same(self, got: dict, ref: dict, what: str) -> None:
        self.assertEqual(got["tokens"], ref["tokens"], what)
        self.assertEqual(got["text_offset"], ref["text_offset"], what)
        for a, b in zip(got["token_logprobs"], ref["token_logprobs"]):
            if b is None:
                self.assertIsNone(a, what)
            else:
                self.assertAlmostEqual(a, b, delta=1e-5, msg=what)
        for a, b in zip(got["top_logprobs"], ref["top_logprobs"]):
            if b is None:
                self.assertIsNone(a, what)
                continue
            # EOS as an alternative: vLLM writes its text "</s>", llama.cpp and Ollama render
            # special tokens as "" (each engine's own way; not the proxy's to change).
            a = {k: v for k, v in a.items() if k not in ("", "</s>")}
            b = {k: v for k, v in b.items() if k not in ("", "</s>")}
            self.assertEqual(set(a), set(b), what)
            for k in b:
                self.assertAlmostEqual(a[k], b[k], delta=1e-5, msg=what)

    def test_generated_logprobs_alike_from_every_backend(self):
        body = {"prompt": self.PROMPT, "max_tokens": 5, "temperature": 0, "logprobs": 2,
                "ignore_eos": True}
        ref = self.completions("openai", body)  # vLLM's own answer, relayed
        self.assertEqual(len(ref["logprobs"]["tokens"]), 5)
        for dialect in ("sglang", "tgi", "llamacpp", "ollama"):
            with self.subTest(dialect):
                b = dict(body)
                if dialect in ("tgi", "ollama"):
                    del b["ignore_eos"]  # neither has it; the emulator's text is the same
                got = self.completions(dialect, b)
                self.assertEqual(got["text"], ref["text"])
                self.assert_same(got["logprobs"], ref["logprobs"], dialect)

    def test_streamed_logprobs_add_up_to_the_whole(self):
        body = {"prompt": self.PROMPT, "max_tokens": 5, "temperature": 0, "logprobs": 1}
        for dialect in ("sglang", "tgi", "llamacpp", "ollama"):
            with self.subTest(dialect):
                whole = self.completions(dialect, body)["logprobs"]
                s = open_stream(self.proxies[dialect].port, "/v1/completions",
                                {"model": self.MODEL, **body, "stream": True})
                self.assertEqual(s.status, 200)
                merged = {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                          "text_offset": []}
                for ev in s.read_all():
                    if ev.done:
                        continue
                    for c in ev.json()["choices"]:
                        if c.get("logprobs"):
                            for k in merged:
                                merged[k] += c["logprobs"][k]
                self.assert_same(merged, whole, dialect)

    def test_lm_eval_loglikelihood(self):
        for prompt_form in ("text", "tokens"):
            prompt = self.PROMPT
            if prompt_form == "tokens":
                prompt = [token_id(w) for w in self.PROMPT.split()]
            ref = self.completions("openai", lm_eval_request(self.MODEL, prompt))
            n_prompt = len(ref["logprobs"]["tokens"]) - 1
            self.assertGreater(n_prompt, 1)
            self.assertIsNone(ref["logprobs"]["token_logprobs"][0])
            for dialect in ("sglang", "tgi"):
                with self.subTest(dialect=dialect, prompt=prompt_form):
                    if dialect == "tgi" and prompt_form == "tokens":
                        continue  # TGI takes text only (a 400 says so)
                    got = self.completions(dialect, lm_eval_request(self.MODEL, prompt))
                    self.assertTrue(got["text"].startswith(self.PROMPT) or
                                    prompt_form == "tokens", got["text"])
                    lp = got["logprobs"]
                    self.assertEqual(len(lp["tokens"]), n_prompt + 1)
                    self.assertEqual(lp["tokens"], ref["logprobs"]["tokens"])
                    self.assertIsNone(lp["token_logprobs"][0])
                    # What the harness sums: the continuation's logprobs, from the prompt.
                    for a, b in zip(lp["token_logprobs"][1:], ref["logprobs"]["token_logprobs"][1:]):
                        self.assertAlmostEqual(a, b, delta=1e-5)
            for dialect in ("llamacpp", "ollama"):
                with self.subTest(dialect=dialect, prompt=prompt_form):
                    r = post_json(self.proxies[dialect].port, "/v1/completions",
                                  lm_eval_request(self.MODEL, prompt))
                    self.assertEqual(r.status, 400, r.body[:300])
                    self.assertIn(r.json()["error"]["param"], ("echo", "prompt"))

    def test_tgi_client_prefill_from_a_vllm_backend(self):
        r = post_json(self.proxies["openai"].port, "/generate",
                      {"inputs": self.PROMPT, "parameters": {"max_new_tokens": 3, "details": True,
                                                             "decoder_input_details": True,
                                                             "top_n_tokens": 2}})
        self.assertEqual(r.status, 200, r.body[:300])
        d = r.json()["details"]
        self.assertIsNone(d["prefill"][0]["logprob"])
        self.assertEqual(len(d["tokens"]), 3)
        self.assertTrue(all(t["logprob"] is not None for t in d["tokens"]))
        self.assertEqual([len(t) for t in d["top_tokens"]], [2, 2, 2])
        self.assertEqual("".join(p["text"] for p in d["prefill"]).strip(),
                         self.PROMPT.strip())
        self.assertEqual(r.json()["generated_text"], "".join(t["text"] for t in d["tokens"]))

    def test_sglang_client_from_a_tgi_backend_streamed(self):
        body = {"text": self.PROMPT, "stream": True, "return_logprob": True,
                "top_logprobs_num": 1, "return_text_in_logprobs": True,
                "sampling_params": {"max_new_tokens": 4, "temperature": 0}}
        s = open_stream(self.proxies["tgi"].port, "/generate", body)
        self.assertEqual(s.status, 200)
        events = [e.json() for e in s.read_all() if not e.done]
        last = events[-1]["meta_info"]
        self.assertEqual(len(last["output_token_logprobs"]), 4)  # cumulative, as SGLang's
        self.assertEqual("".join(t[2] for t in last["output_token_logprobs"]), events[-1]["text"])
        counts = [len(e["meta_info"]["output_token_logprobs"]) for e in events]
        self.assertEqual(counts, sorted(counts))


class EmulatorBackendsOtherStyleTest(EmulatorBackendsTest):
    """The same, with every backend writing the other wire style: spaced JSON with ASCII escapes,
    CRLF SSE with comments, extra fields and multi-line data, CRLF NDJSON with blank lines, and
    writes split every 7 bytes."""
    EMU_ARGS = OTHER_WIRE_STYLE


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
