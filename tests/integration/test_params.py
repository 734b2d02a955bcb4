"""Every parameter carried as the engine means it (issue 16, items 1, 2 and 6), seen on the wire:
the body a backend gets for what a client sent, through the real binary.

- The token budget reaches llama-server as `max_tokens` (releases before 2026 do not read
  `max_completion_tokens`: it generated 4,079 tokens for `num_predict: 16`), from Ollama,
  Anthropic and OpenAI clients, on the translated path and on the same-dialect fast path.
- Ollama's `repeat_penalty` reaches llama.cpp's chat route as `repeat_penalty` (its own name),
  with `repeat_last_n` and `typical_p`; OpenAI's `logit_bias` reaches llama.cpp in its
  `[[id, bias]]` form on `/completion` and on the chat route.
- What a backend cannot take is a 400 in the client's dialect that names it, never dropped.
- A one-element prompt list (LangChain's `OpenAI` class always sends one) is served by a TGI
  backend, and the client gets what its dialect gives a list of one.

The full table (every front, parameter and backend) is unit-tested in
tests/translators/roundtrip/params_test.cpp and written out in docs/dialects.md, "Parameters".
"""

from __future__ import annotations

import json
import unittest

from harness import Emulator, Proxy, open_stream, post_json, start
from scripted import ScriptedBackend, dumps, json_reply, sse_reply

MODEL = "tiny-llama"

CHAT_ANSWER = {
    "choices": [{"finish_reason": "length", "index": 0,
                 "message": {"role": "assistant", "content": "ines eind"}}],
    "created": 1796268008, "model": MODEL, "system_fingerprint": "b0-unknown",
    "object": "chat.completion",
    "usage": {"completion_tokens": 2, "prompt_tokens": 11, "total_tokens": 13},
    "id": "chatcmpl-F3kvd82j5Av2TagDwfeKYyKHotBkuVB8"}

CHAT_CHUNKS = [
    {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": "ines"}}],
     "created": 1796268008, "id": "chatcmpl-1", "model": MODEL,
     "system_fingerprint": "b0-unknown", "object": "chat.completion.chunk"},
    {"choices": [{"finish_reason": "length", "index": 0, "delta": {}}],
     "created": 1796268008, "id": "chatcmpl-1", "model": MODEL,
     "system_fingerprint": "b0-unknown", "object": "chat.completion.chunk",
     "usage": {"completion_tokens": 1, "prompt_tokens": 11, "total_tokens": 12}},
]

# llama-server's /completion answer (docs of ../shared/engines/README.md, shortened).
COMPLETION_ANSWER = {
    "index": 0, "content": "^+rá=", "tokens": [], "id_slot": 1, "stop": True, "model": MODEL,
    "tokens_predicted": 2, "tokens_evaluated": 2, "prompt": "<s> hi", "has_new_line": False,
    "truncated": False, "stop_type": "limit", "stopping_word": "", "tokens_cached": 3,
    "timings": {"prompt_n": 1, "prompt_ms": 5.5, "prompt_per_token_ms": 5.5,
                "prompt_per_second": 181.2, "predicted_n": 2, "predicted_ms": 3.1,
                "predicted_per_token_ms": 1.5, "predicted_per_second": 640.0}}


def chat_reply(request):
    if request.json().get("stream"):
        return sse_reply([dumps(c) for c in CHAT_CHUNKS] + ["[DONE]"])
    return json_reply(CHAT_ANSWER, style="compact")


class LlamaCppBackendTest(unittest.TestCase):
    """A llama-server backend (scripted with its own answers): what reaches it."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("POST", "/v1/chat/completions", chat_reply)
        cls.backend.route("POST", "/completion", json_reply(COMPLETION_ANSWER, style="compact"))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "llamacpp", "--model", MODEL], model=MODEL)

    def last_body(self, path: str) -> dict:
        reqs = self.backend.requests_to(path)
        self.assertTrue(reqs, f"nothing reached {path}")
        return reqs[-1].json()

    def assert_budget(self, body: dict, n: int):
        self.assertEqual(body.get("max_tokens"), n, body)
        self.assertNotIn("max_completion_tokens", body)

    def test_ollama_chat_budget_is_max_tokens(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                r = post_json(self.proxy.port, "/api/chat", {
                    "model": MODEL, "stream": stream, "options": {"num_predict": 16},
                    "messages": [{"role": "user", "content": "Hi"}]})
                self.assertEqual(r.status, 200, r.body)
                self.assert_budget(self.last_body("/v1/chat/completions"), 16)

    def test_ollama_templated_generate_budget_is_max_tokens(self):
        r = post_json(self.proxy.port, "/api/generate", {
            "model": MODEL, "prompt": "Hi", "stream": False, "options": {"num_predict": 16}})
        self.assertEqual(r.status, 200, r.body)
        self.assert_budget(self.last_body("/v1/chat/completions"), 16)

    def test_anthropic_budget_is_max_tokens(self):
        r = post_json(self.proxy.port, "/v1/messages", {
            "model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]},
            headers={"anthropic-version": "2023-06-01"})
        self.assertEqual(r.status, 200, r.body)
        self.assert_budget(self.last_body("/v1/chat/completions"), 16)

    def test_openai_chat_fast_path_renames_for_llama_server(self):
        # The client's own bytes go upstream (same dialect); only what llama-server reads
        # under another name changes.
        for stream in (False, True):
            with self.subTest(stream=stream):
                raw = ('{"model": "%s", "messages": [{"role": "user", "content": "Hi"}], '
                       '"max_completion_tokens": 16, "repetition_penalty": 1.25, '
                       '"logit_bias": {"32000": 7, "13": -100}, "stream": %s}'
                       % (MODEL, "true" if stream else "false"))
                if stream:
                    s = open_stream(self.proxy.port, "/v1/chat/completions", raw.encode())
                    self.assertEqual(s.status, 200)
                    self.assertTrue(s.read_all()[-1].done)
                else:
                    r = post_json(self.proxy.port, "/v1/chat/completions", raw.encode())
                    self.assertEqual(r.status, 200, r.body)
                reqs = self.backend.requests_to("/v1/chat/completions")
                sent = reqs[-1].body.decode()
                body = json.loads(sent)
                self.assert_budget(body, 16)
                self.assertEqual(body["repeat_penalty"], 1.25)
                self.assertNotIn("repetition_penalty", body)
                self.assertEqual(body["logit_bias"], [[32000, 7], [13, -100]])
                # Everything else keeps its bytes (Python's spacing here).
                self.assertIn('"messages": [{"role": "user", "content": "Hi"}]', sent)
                self.assertIn('"max_tokens": 16', sent)

    def test_openai_chat_fast_path_refuses_what_llama_server_ignores(self):
        before = len(self.backend.requests_to("/v1/chat/completions"))
        for key, value in (("min_tokens", 2), ("stop_token_ids", [2]),
                           ("skip_special_tokens", False)):
            with self.subTest(key=key):
                r = post_json(self.proxy.port, "/v1/chat/completions", {
                    "model": MODEL, "messages": [{"role": "user", "content": "Hi"}], key: value})
                self.assertEqual(r.status, 400, r.body)
                err = r.json()["error"]
                self.assertEqual(err["param"], key)
                self.assertIn(key, err["message"])
        self.assertEqual(len(self.backend.requests_to("/v1/chat/completions")), before)

    def test_ollama_penalties_reach_llama_cpp_under_its_names(self):
        r = post_json(self.proxy.port, "/api/chat", {
            "model": MODEL, "stream": False, "messages": [{"role": "user", "content": "Hi"}],
            "options": {"repeat_penalty": 1.3, "repeat_last_n": 32, "typical_p": 0.7,
                        "num_ctx": 8192, "seed": -1}})
        self.assertEqual(r.status, 200, r.body)
        body = self.last_body("/v1/chat/completions")
        self.assertEqual(body["repeat_penalty"], 1.3)
        self.assertEqual(body["repeat_last_n"], 32)
        self.assertEqual(body["typical_p"], 0.7)
        for absent in ("repetition_penalty", "num_ctx", "seed"):
            self.assertNotIn(absent, body)

    def test_openai_completions_logit_bias_is_pairs(self):
        r = post_json(self.proxy.port, "/v1/completions", {
            "model": MODEL, "prompt": "hi", "max_tokens": 4, "logit_bias": {"32000": 7}})
        self.assertEqual(r.status, 200, r.body)
        body = self.last_body("/completion")
        self.assertEqual(body["logit_bias"], [[32000, 7]])
        self.assertEqual(body["n_predict"], 4)

    def test_what_cannot_be_carried_is_refused_in_the_clients_shape(self):
        # Ollama's `format` (structured output) reaches llama.cpp's chat route as the
        # json_schema it reads on every version (test_structured_output has the matrix).
        r = post_json(self.proxy.port, "/api/chat", {
            "model": MODEL, "stream": False, "format": "json",
            "messages": [{"role": "user", "content": "Hi"}]})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.last_body("/v1/chat/completions")["json_schema"], {"type": "object"})
        # A regular expression has none: a 400 in the client's shape, naming it.
        r = post_json(self.proxy.port, "/generate", {
            "text": "Hi", "sampling_params": {"max_new_tokens": 4, "regex": "a+"}})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("'sampling_params.regex'", r.json()["error"]["message"])
        # An Ollama option llama.cpp has no setting for, named as the client wrote it.
        r = post_json(self.proxy.port, "/api/chat", {
            "model": MODEL, "stream": False, "options": {"min_p": 0.1, "top_k": 5},
            "messages": [{"role": "user", "content": "Hi"}], "think": True})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("'think'", r.json()["error"])


class TgiPromptListTest(unittest.TestCase):
    """A TGI backend (the emulator): one prompt per request, so a list of one is that prompt."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "tgi", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=MODEL)

    def test_openai_completions_list_of_one(self):
        single = post_json(self.proxy.port, "/v1/completions",
                           {"model": MODEL, "prompt": "hi", "max_tokens": 5})
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": MODEL, "prompt": ["hi"], "max_tokens": 5})
        self.assertEqual(r.status, 200, r.body)
        choices = r.json()["choices"]
        self.assertEqual(len(choices), 1)
        self.assertEqual(choices[0]["index"], 0)
        self.assertEqual(choices[0]["text"], single.json()["choices"][0]["text"])
        self.assertEqual(r.json()["usage"]["completion_tokens"], 5)

    def test_openai_completions_list_of_one_streamed(self):
        s = open_stream(self.proxy.port, "/v1/completions",
                        {"model": MODEL, "prompt": ["hi"], "max_tokens": 5, "stream": True})
        self.assertEqual(s.status, 200)
        events = s.read_all()
        self.assertTrue(events[-1].done)
        text = "".join(c["text"] for e in events if not e.done for c in e.json()["choices"])
        single = post_json(self.proxy.port, "/v1/completions",
                           {"model": MODEL, "prompt": "hi", "max_tokens": 5})
        self.assertEqual(text, single.json()["choices"][0]["text"])

    def test_sglang_list_of_one_answers_a_list(self):
        r = post_json(self.proxy.port, "/generate",
                      {"text": ["hi"], "sampling_params": {"max_new_tokens": 5}})
        self.assertEqual(r.status, 200, r.body)
        doc = r.json()
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 1)
        self.assertEqual(doc[0]["meta_info"]["completion_tokens"], 5)

    def test_a_batch_is_still_refused_and_logit_bias_named(self):
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": MODEL, "prompt": ["a", "b"], "max_tokens": 5})
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.json()["error"]["param"], "prompt")
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": MODEL, "prompt": "a", "max_tokens": 5, "logit_bias": {"1": 5}})
        self.assertEqual(r.status, 400, r.body)
        self.assertEqual(r.json()["error"]["param"], "logit_bias")


if __name__ == "__main__":
    unittest.main()
