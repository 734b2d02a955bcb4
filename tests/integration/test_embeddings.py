"""Embeddings and the tokenizer's routes through infergate (issue 17 parts 2, 3; docs/dialects.md,
"Embeddings" and "Tokenizer routes").

Two kinds of backend:
- scripted ones (tests/integration/scripted.py), which answer with exactly the bytes a test gives
  them: text-embeddings-inference's own shapes (its /info, /embed with the count in a header),
  every JSON layout and any split of the bytes over reads, SGLang's OpenAI layer that ignores
  `encoding_format`, backends without the route;
- the emulator in every dialect that has embeddings, in its own wire style and in another one
  (harness.OTHER_WIRE_STYLE), where each client's answer through the proxy is compared with the
  emulator's direct answer in its own API.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import unittest
from typing import Any

from harness import OTHER_WIRE_STYLE, Emulator, Proxy, post_json, request, start, wait_until
from scripted import ScriptedBackend, dumps, json_reply, raw_reply, split_random

MODEL = "BAAI/bge-small-en-v1.5"

# text-embeddings-inference's GET /info (router/src/lib.rs Info), as it serializes it.
TEI_INFO = {
    "model_id": MODEL, "model_sha": None, "model_dtype": "float16",
    "model_type": {"embedding": {"pooling": "cls"}}, "max_concurrent_requests": 512,
    "max_input_length": 512, "max_batch_tokens": 16384, "max_batch_requests": None,
    "max_client_batch_size": 32, "auto_truncate": False, "tokenization_workers": 4,
    "version": "1.8.0", "sha": None, "docker_label": None,
}

# Two vectors written in every form a printer uses: an exponent, -0.0, integers, 17 digits.
VECTORS = [[0.0123, -0.0456, 1e-3, -0.0, 0, 1, 2.5e-2],
           [-0.5, 0.25, 0.10000000149011612, -1e-05, 3, 1e-06, -7]]
VECTORS_TEXT = ('[[0.0123, -0.0456, 1e-3, -0.0, 0, 1, 2.5E-2], '
                '[-0.5, 0.25, 0.10000000149011612, -1.0e-5, 3, 0.000001, -7]]')


def floats32(b64: str) -> list[float]:
    raw = base64.b64decode(b64)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def as_float32(values: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if m and m.group(1) == name:
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            if all(got.get(k) == v for k, v in labels.items()):
                return float(m.group(3))
    return 0.0


class ScriptedTeiTest(unittest.TestCase):
    """A text-embeddings-inference backend, found by its /info alone: every client API gets the
    backend's vectors, whatever the layout of its answer or how its bytes are split; the count
    comes from the x-compute-tokens header; generations are refused (E)."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/info", json_reply(TEI_INFO, style="compact"))
        cls.backend.route("GET", "/health", raw_reply(200, b""))
        cls.backend.route("POST", "/embed", lambda req: cls.embed_answer)
        cls.embed_answer = cls.reply(VECTORS_TEXT)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--access-log", "off"],
                          model=MODEL)
        cls.port = cls.proxy.port

    @staticmethod
    def reply(body: str, *, split: int | None = None, chunked: bool = False,
              tokens: str = "11"):
        data = body.encode()
        return raw_reply(200, data, chunked=chunked,
                         pieces=split_random(data, split) if split is not None else None,
                         extra_headers=[("x-compute-type", "cpu"), ("x-compute-tokens", tokens),
                                        ("x-compute-characters", "20")])

    def post(self, path: str, body: Any, status: int = 200):
        r = request(self.port, "POST", path, body)
        self.assertEqual(r.status, status, f"POST {path}: {r.body[:300]!r}")
        return r

    def test_detected_by_its_info(self):
        r = request(self.port, "GET", "/get_server_info")
        self.assertEqual(r.status, 200)
        self.assertIn("tei", r.body.decode())

    def test_every_layout_and_split_gives_the_same_vectors(self):
        texts = ["hello", "wörld"]
        layouts = {
            "as written": VECTORS_TEXT,
            "compact": dumps(VECTORS, "compact"),
            "pretty": dumps(VECTORS, "pretty"),
            "crlf": dumps(VECTORS, "pretty").replace("\n", "\r\n"),
            "tabs": VECTORS_TEXT.replace(", ", ",\t").replace("[[", "[ \n[").replace("]]", "]\n ]"),
        }
        for name, body in layouts.items():
            for split in (None, 3, 11):
                for chunked in (False, True):
                    with self.subTest(layout=name, split=split, chunked=chunked):
                        type(self).embed_answer = self.reply(body, split=split, chunked=chunked)
                        got = self.post("/v1/embeddings", {"model": MODEL, "input": texts}).json()
                        self.assertEqual([d["embedding"] for d in got["data"]], VECTORS)
                        self.assertEqual(got["usage"], {"prompt_tokens": 11, "total_tokens": 11})
                        self.assertEqual(self.post("/embed", {"inputs": texts}).json(), VECTORS)
        type(self).embed_answer = self.reply(VECTORS_TEXT)
        # -0.0 keeps its sign, integers come back as floats.
        raw = self.post("/api/embed", {"model": MODEL, "input": texts}).body.decode()
        self.assertIn("-0.0,", raw)
        self.assertIn("[-0.5,0.25,0.10000000149011612,-1e-05,3.0,1e-06,-7.0]", raw)

    def test_each_client_api_and_what_the_backend_was_sent(self):
        type(self).embed_answer = self.reply(VECTORS_TEXT)
        ollama = self.post("/api/embed", {"model": MODEL, "input": ["a", "b"]}).json()
        self.assertEqual(ollama["model"], MODEL)
        self.assertEqual(ollama["embeddings"], VECTORS)
        self.assertEqual(ollama["prompt_eval_count"], 11)
        # Ollama truncates by default: TEI is told so.
        self.assertEqual(self.backend.requests_to("/embed")[-1].json(),
                         {"inputs": ["a", "b"], "truncate": True})
        llama = self.post("/embedding", {"content": ["a", "b"]}).json()
        self.assertEqual(llama, [{"index": 0, "embedding": [VECTORS[0]]},
                                 {"index": 1, "embedding": [VECTORS[1]]}])
        # An OpenAI client's token ids, dimensions; its inputs are never truncated.
        self.post("/v1/embeddings", {"model": MODEL, "input": [[101, 7592, 102], [5]],
                                     "dimensions": 4})
        self.assertEqual(self.backend.requests_to("/embed")[-1].json(),
                         {"inputs": [[101, 7592, 102], [5]], "truncate": False, "dimensions": 4})
        # Ollama's older route: one vector, not normalised (TEI is told not to).
        type(self).embed_answer = self.reply(dumps([VECTORS[1]]))
        legacy = self.post("/api/embeddings", {"model": MODEL, "prompt": "a"}).json()
        self.assertEqual(legacy, {"embedding": VECTORS[1]})
        self.assertEqual(self.backend.requests_to("/embed")[-1].json(),
                         {"inputs": "a", "normalize": False, "truncate": False})
        # A TEI client's own bytes go as they are, and the answer comes back as it came.
        body = b'{ "inputs" : ["a"], "normalize" : false, "prompt_name" : "query", "x" : 1 }'
        type(self).embed_answer = self.reply(dumps([VECTORS[0]], "pretty"), tokens="3")
        r = self.post("/embed", body)
        self.assertEqual(self.backend.requests_to("/embed")[-1].body, body)
        self.assertEqual(r.body.decode(), dumps([VECTORS[0]], "pretty"))
        self.assertEqual(r.header("x-compute-tokens"), "3")
        type(self).embed_answer = self.reply(VECTORS_TEXT)

    def test_base64_is_float32_little_endian(self):
        type(self).embed_answer = self.reply(VECTORS_TEXT)
        got = self.post("/v1/embeddings", {"model": MODEL, "input": ["a", "b"],
                                           "encoding_format": "base64"}).json()
        for d, want in zip(got["data"], VECTORS):
            self.assertIsInstance(d["embedding"], str)
            self.assertEqual(floats32(d["embedding"]), as_float32(want))

    def test_refusals_name_the_field_in_the_clients_shape(self):
        r = self.post("/v1/embeddings", {"model": MODEL, "input": "a",
                                         "truncate_prompt_tokens": 5}, 400)
        self.assertEqual(r.json()["error"]["param"], "truncate_prompt_tokens")
        r = self.post("/api/embed", {"model": MODEL, "input": [1, 2]}, 400)
        self.assertIn("invalid input type", r.json()["error"])
        r = self.post("/embedding", {"content": [12, "text", 34]}, 400)
        self.assertEqual(r.json()["error"]["code"], 400)
        self.assertIn("'content' cannot be carried", r.json()["error"]["message"])
        # A generation: TEI has none (E), in each client's shape.
        r = self.post("/v1/chat/completions",
                      {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}, 400)
        err = r.json()["error"]
        self.assertEqual(err["param"], "model")
        self.assertTrue(err["message"].startswith(
            "the backend (TEI) has no generation endpoint; point generation requests at a vLLM"),
            err["message"])
        r = self.post("/api/generate", {"model": MODEL, "prompt": "hi", "stream": False}, 400)
        self.assertIn("has no generation endpoint", r.json()["error"])

    def test_backend_errors_reach_the_client_in_its_shape(self):
        type(self).embed_answer = json_reply(
            {"error": "batch size 40 > maximum allowed batch size 32", "error_type": "Validation"},
            413, reason="Payload Too Large")
        try:
            r = self.post("/v1/embeddings", {"model": MODEL, "input": ["a"] * 40}, 413)
            self.assertEqual(r.json()["error"]["message"],
                             "batch size 40 > maximum allowed batch size 32")
            r = self.post("/embed", {"inputs": ["a"] * 40}, 413)
            self.assertEqual(r.json(), {"error": "batch size 40 > maximum allowed batch size 32",
                                        "error_type": "Validation"})
            r = self.post("/api/embed", {"model": MODEL, "input": ["a"] * 40}, 413)
            self.assertEqual(r.json(), {"error": "batch size 40 > maximum allowed batch size 32"})
        finally:
            type(self).embed_answer = self.reply(VECTORS_TEXT)
        for bad in (b"[[1, 2]", b'{"embeddings": [[1]]}', b'[["a"]]', b"[[1],[2],[3]]"):
            with self.subTest(bad=bad):
                type(self).embed_answer = raw_reply(200, bad)
                r = self.post("/api/embed", {"model": MODEL, "input": ["a", "b"]}, 502)
                self.assertIn("backend", r.json()["error"])
        type(self).embed_answer = self.reply(VECTORS_TEXT)

    def test_metrics_count_the_backends_tokens_under_the_clients_route(self):
        type(self).embed_answer = self.reply(VECTORS_TEXT, tokens="11")
        before = request(self.port, "GET", "/metrics").body.decode()
        self.post("/embed", {"inputs": ["a", "b"]})
        self.post("/v1/embeddings", {"model": MODEL, "input": ["a", "b"]})
        after = request(self.port, "GET", "/metrics").body.decode()
        for route in ("tei_embed", "openai_embeddings"):
            with self.subTest(route=route):
                self.assertEqual(metric(after, "infergate_prompt_tokens_total", route=route)
                                 - metric(before, "infergate_prompt_tokens_total", route=route),
                                 11)
                self.assertEqual(metric(after, "infergate_requests_total", route=route,
                                        outcome="ok", status_class="2xx")
                                 - metric(before, "infergate_requests_total", route=route,
                                          outcome="ok", status_class="2xx"), 1)
        self.assertNotIn('infergate_requests_tokens_unknown_total{route="tei_embed"', after)


class ScriptedSglangBase64Test(unittest.TestCase):
    """SGLang's OpenAI layer ignores `encoding_format` and answers floats: an OpenAI client that
    asked for base64 (the OpenAI SDK's default) gets base64 made by infergate; vLLM-only keys are
    refused rather than dropped by SGLang without a word."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", json_reply({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 1, "owned_by": "sglang",
             "root": MODEL, "parent": None, "max_model_len": 512}]}))
        cls.backend.route("GET", "/get_model_info", json_reply({"model_path": MODEL,
                                                                "is_generation": False}))
        answer = {"data": [{"embedding": v, "index": i, "object": "embedding"}
                           for i, v in enumerate(VECTORS)],
                  "model": MODEL, "object": "list",
                  "usage": {"prompt_tokens": 6, "total_tokens": 6, "completion_tokens": 0,
                            "prompt_tokens_details": None, "reasoning_tokens": 0}}
        cls.backend.route("POST", "/v1/embeddings", json_reply(answer, style="spaced"))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--access-log", "off",
                                       "--alias", f"emb={MODEL}"], model=MODEL)

    def test_base64_made_from_floats(self):
        r = post_json(self.proxy.port, "/v1/embeddings",
                      {"model": "emb", "input": ["a", "b"], "encoding_format": "base64"})
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        self.assertEqual(doc["model"], "emb")
        self.assertEqual([floats32(d["embedding"]) for d in doc["data"]],
                         [as_float32(v) for v in VECTORS])
        self.assertEqual(doc["usage"]["prompt_tokens"], 6)
        sent = self.backend.requests_to("/v1/embeddings")[-1].json()
        self.assertEqual(sent["model"], MODEL)  # the alias resolved, the rest as the client wrote
        self.assertEqual(sent["encoding_format"], "base64")

    def test_floats_relayed_as_they_came_with_the_clients_model_name(self):
        r = post_json(self.proxy.port, "/v1/embeddings", {"model": "emb", "input": ["a", "b"]})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["model"], "emb")
        self.assertEqual(r.json()["usage"]["reasoning_tokens"], 0)  # the backend's own bytes
        self.assertEqual([d["embedding"] for d in r.json()["data"]], VECTORS)

    def test_vllm_only_keys_refused(self):
        for key, value in (("normalize", False), ("truncate_prompt_tokens", 8),
                           ("embed_dtype", "float16")):
            with self.subTest(key=key):
                r = post_json(self.proxy.port, "/v1/embeddings",
                              {"model": "emb", "input": "a", key: value})
                self.assertEqual(r.status, 400, r.body[:300])
                err = r.json()["error"]
                self.assertEqual(err["param"], key)
                self.assertIn("SGLang", err["message"])


class ScriptedNoEmbeddingsTest(unittest.TestCase):
    """Backends without the route: embeddings get (C), tokenizer routes (D), in each client's
    shape; an OpenAI-compatible server that is not vLLM or SGLang has no tokenizer."""

    @classmethod
    def setUpClass(cls):
        cls.tgi = ScriptedBackend()
        cls.addClassCleanup(cls.tgi.stop)
        cls.tgi.route("GET", "/info", json_reply({"model_id": "tgi-model", "router":
                                                  "text-generation-router", "version": "3.0.0",
                                                  "max_total_tokens": 4096}))
        cls.ollama = ScriptedBackend()
        cls.addClassCleanup(cls.ollama.stop)
        cls.ollama.route("GET", "/", raw_reply(200, b"Ollama is running", "text/plain"))
        cls.ollama.route("GET", "/api/tags", json_reply({"models": [{"name": "llama3:latest"}]}))
        yaml = (f"backends:\n  - {{name: gen, url: '{cls.tgi.url}'}}\n"
                f"  - {{name: chat, url: '{cls.ollama.url}'}}\n")
        cls.proxy = start(cls, Proxy, ["--access-log", "off"], config_yaml=yaml,
                          model="llama3:latest")

    def test_embeddings_on_a_generation_only_backend(self):
        r = post_json(self.proxy.port, "/v1/embeddings", {"model": "tgi-model", "input": "a"})
        self.assertEqual(r.status, 400, r.body[:300])
        err = r.json()["error"]
        self.assertEqual(err["param"], "model")
        self.assertEqual(err["message"],
                         "the backend 'gen' (TGI) has no embeddings endpoint; point embeddings "
                         "requests at a TEI, vLLM, SGLang, Ollama or llama.cpp backend (name a "
                         "model one of them serves)")
        r = post_json(self.proxy.port, "/embed", {"inputs": "a", "model": "tgi-model"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error_type"], "Validation")
        self.assertIn("has no embeddings endpoint", r.json()["error"])
        self.assertEqual(self.tgi.requests_to("/embed"), [])

    def test_tokenizer_routes_on_a_backend_without_them(self):
        r = post_json(self.proxy.port, "/tokenize", {"model": "llama3", "prompt": "hi"})
        self.assertEqual(r.status, 404, r.body[:300])
        msg = r.json()["error"]["message"]
        self.assertTrue(msg.startswith(
            "the backend 'chat' (Ollama) has no tokenize endpoint; point tokenize requests at a "
            "vLLM, SGLang, llama.cpp, TGI or TEI backend; infergate serves: "), msg)
        self.assertIn("POST /tokenize", msg)
        r = post_json(self.proxy.port, "/detokenize", {"model": "tgi-model", "tokens": [1, 2]})
        self.assertEqual(r.status, 404, r.body[:300])
        self.assertIn("(TGI) has no detokenize endpoint", r.json()["error"]["message"])
        r = post_json(self.proxy.port, "/apply-template",
                      {"model": "llama3", "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(r.status, 404, r.body[:300])
        self.assertEqual(r.json()["error"]["code"], 404)  # llama.cpp's error shape
        self.assertIn("has no apply-template endpoint", r.json()["error"]["message"])


# =============================================================================================
# The emulator in every dialect that has embeddings: every front, two wire styles
# =============================================================================================

TEXTS = ["The sky is blue", "grass  is green\n", "h\u00e9llo \u2603 \U0001F600"]


def sorted_data(doc: dict) -> list:
    return [d["embedding"] for d in sorted(doc["data"], key=lambda d: d["index"])]


class _EmbeddingsMatrix:
    """One backend dialect (`DIALECT`, emulator `EMU_ARGS` plus a wire style `STYLE`): each client
    API's answer through the proxy against the emulator's own answer in its API."""

    DIALECT = "openai"
    EMU_ARGS: list[str] = ["--embeddings"]
    STYLE: list[str] = []
    MODEL = MODEL
    API = "openai"    # the backend's embeddings API: openai, ollama, tei
    NORMALIZE_SWITCH = False  # the backend can answer unnormalised vectors (vLLM, TEI)
    TOKEN_IDS = True  # the backend takes token-id inputs

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL,
                        ["--quiet", *cls.EMU_ARGS, *cls.STYLE])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--access-log", "off"],
                          model=cls.MODEL)

    # ---- the backend asked directly, in its own API ----------------------------------------

    def direct(self, inputs: Any, *, normalize: bool = True) -> tuple[list[list[float]], Any]:
        """(vectors, token count) for `inputs` (a string, strings or token-id lists)."""
        port = self.emu.port
        if self.API == "ollama":
            if not normalize:
                vectors = []
                for text in ([inputs] if isinstance(inputs, str) else inputs):
                    r = post_json(port, "/api/embeddings", {"model": self.MODEL, "prompt": text})
                    self.assertEqual(r.status, 200, r.body[:300])
                    vectors.append(r.json()["embedding"])
                return vectors, None
            r = post_json(port, "/api/embed", {"model": self.MODEL, "input": inputs})
            self.assertEqual(r.status, 200, r.body[:300])
            return r.json()["embeddings"], r.json().get("prompt_eval_count")
        if self.API == "tei":
            r = post_json(port, "/embed", {"inputs": inputs, "normalize": normalize})
            self.assertEqual(r.status, 200, r.body[:300])
            vectors = r.json()
            return vectors, int(r.header("x-compute-tokens"))
        body = {"model": self.MODEL, "input": inputs, "encoding_format": "float"}
        if not normalize and self.NORMALIZE_SWITCH:
            body["normalize"] = False
        r = post_json(port, "/v1/embeddings", body)
        self.assertEqual(r.status, 200, r.body[:300])
        return sorted_data(r.json()), r.json()["usage"]["prompt_tokens"]

    def post(self, path: str, body: Any, status: int = 200):
        r = post_json(self.proxy.port, path, body)
        self.assertEqual(r.status, status, f"POST {path} {body}: {r.body[:400]!r}")
        return r

    # ---- the cells -------------------------------------------------------------------------

    def test_openai_client(self):
        ref, tokens = self.direct(TEXTS)
        got = self.post("/v1/embeddings", {"model": self.MODEL, "input": TEXTS}).json()
        self.assertEqual(sorted_data(got), ref)
        self.assertEqual(got["model"], self.MODEL)
        if tokens is not None:
            # On the fast path the backend's own usage object (vLLM's and SGLang's have more).
            self.assertEqual(got["usage"]["prompt_tokens"], tokens)
            self.assertEqual(got["usage"]["total_tokens"], tokens)
        b64 = self.post("/v1/embeddings", {"model": self.MODEL, "input": TEXTS,
                                           "encoding_format": "base64"}).json()
        self.assertEqual([floats32(v) for v in sorted_data(b64)], [as_float32(v) for v in ref])
        one, _ = self.direct(TEXTS[0])
        single = self.post("/v1/embeddings", {"model": self.MODEL, "input": TEXTS[0]}).json()
        self.assertEqual(sorted_data(single), one)

    def test_token_id_inputs(self):
        ids = [[1000 + i, 1001 + i, 1002] for i in range(2)]
        if not self.TOKEN_IDS:
            r = self.post("/v1/embeddings", {"model": self.MODEL, "input": ids}, 400)
            self.assertEqual(r.json()["error"]["param"], "input")
            return
        ref, _ = self.direct(ids)
        got = self.post("/v1/embeddings", {"model": self.MODEL, "input": ids}).json()
        self.assertEqual(sorted_data(got), ref)

    def test_ollama_clients(self):
        ref, tokens = self.direct(TEXTS)
        got = self.post("/api/embed", {"model": self.MODEL, "input": TEXTS}).json()
        self.assertEqual(got["embeddings"], ref)
        self.assertEqual(got["model"], self.MODEL)
        if tokens:
            self.assertEqual(got["prompt_eval_count"], tokens)
        self.assertEqual(self.post("/api/embed", {"model": self.MODEL, "input": []}).json()
                         ["embeddings"], [])
        # The older route: the vector as the model made it where the backend can say so.
        raw, _ = self.direct(TEXTS[1], normalize=False)
        legacy = self.post("/api/embeddings", {"model": self.MODEL, "prompt": TEXTS[1]}).json()
        if self.NORMALIZE_SWITCH or self.API == "ollama":
            self.assertEqual(legacy, {"embedding": raw[0]})
        else:  # a backend that always normalises (docs/dialects.md, "Embeddings")
            one, _ = self.direct(TEXTS[1])
            self.assertEqual(legacy, {"embedding": one[0]})

    def test_tei_and_llamacpp_clients(self):
        ref, tokens = self.direct(TEXTS)
        tei = self.post("/embed", {"inputs": TEXTS, "model": self.MODEL})
        self.assertEqual(tei.json(), ref)
        if tokens:
            self.assertEqual(tei.header("x-compute-tokens"), str(tokens))
        llama = self.post("/embedding", {"content": TEXTS, "model": self.MODEL}).json()
        self.assertEqual(llama, [{"index": i, "embedding": [v]} for i, v in enumerate(ref)])
        if self.NORMALIZE_SWITCH:
            raw, _ = self.direct(TEXTS, normalize=False)
            got = self.post("/embed", {"inputs": TEXTS, "normalize": False,
                                       "model": self.MODEL}).json()
            self.assertEqual(got, raw)
        else:
            r = self.post("/embed", {"inputs": TEXTS, "normalize": False,
                                     "model": self.MODEL}, 400)
            self.assertIn("'normalize'", r.json()["error"])


class TestEmbeddingsVllm(_EmbeddingsMatrix, unittest.TestCase):
    EMU_ARGS = ["--embeddings", "--matryoshka"]
    NORMALIZE_SWITCH = True

    def test_dimensions_and_vllm_keys_on_the_fast_path(self):
        ref = post_json(self.emu.port, "/v1/embeddings",
                        {"model": self.MODEL, "input": TEXTS, "dimensions": 8,
                         "truncate_prompt_tokens": 2}).json()
        got = self.post("/v1/embeddings", {"model": self.MODEL, "input": TEXTS, "dimensions": 8,
                                           "truncate_prompt_tokens": 2}).json()
        self.assertEqual(sorted_data(got), sorted_data(ref))
        self.assertEqual(got["usage"], ref["usage"])
        self.assertEqual(len(sorted_data(got)[0]), 8)
        tei = self.post("/embed", {"inputs": TEXTS, "dimensions": 8, "model": self.MODEL}).json()
        self.assertEqual(tei, sorted_data(post_json(self.emu.port, "/v1/embeddings", {
            "model": self.MODEL, "input": TEXTS, "dimensions": 8}).json()))


class TestEmbeddingsVllmOtherStyle(TestEmbeddingsVllm):
    STYLE = OTHER_WIRE_STYLE


class TestEmbeddingsGenericOpenAI(_EmbeddingsMatrix, unittest.TestCase):
    EMU_ARGS = ["--openai-flavor", "generic"]

    def test_the_servers_own_refusal_in_each_clients_shape(self):
        r = self.post("/embed", {"inputs": "x", "dimensions": 8, "model": self.MODEL}, 400)
        self.assertEqual(r.json()["error"], "This model does not support specifying dimensions.")
        self.assertIn("error_type", r.json())
        r = self.post("/api/embed", {"model": self.MODEL, "input": "x", "dimensions": 8}, 400)
        self.assertEqual(r.json(), {"error": "This model does not support specifying dimensions."})


class TestEmbeddingsSglang(_EmbeddingsMatrix, unittest.TestCase):
    DIALECT = "sglang"


class TestEmbeddingsSglangOtherStyle(TestEmbeddingsSglang):
    STYLE = OTHER_WIRE_STYLE


class TestEmbeddingsOllama(_EmbeddingsMatrix, unittest.TestCase):
    DIALECT = "ollama"
    MODEL = "nomic-embed-text:v1.5"
    API = "ollama"
    TOKEN_IDS = False


class TestEmbeddingsOllamaOtherStyle(TestEmbeddingsOllama):
    STYLE = OTHER_WIRE_STYLE


class TestEmbeddingsLlamaCpp(_EmbeddingsMatrix, unittest.TestCase):
    DIALECT = "llamacpp"

    def test_llamacpp_clients_get_the_native_answer(self):
        for body in ({"content": TEXTS}, {"input": [1000, "x y", 1001]}, {"content": TEXTS[0]}):
            with self.subTest(body=body):
                direct = post_json(self.emu.port, "/embedding", body)
                self.assertEqual(direct.status, 200, direct.body[:300])
                self.assertEqual(self.post("/embedding", body).body, direct.body)
        r = self.post("/v1/embeddings", {"model": self.MODEL, "input": "x", "dimensions": 8}, 400)
        self.assertEqual(r.json()["error"]["param"], "dimensions")


class TestEmbeddingsLlamaCppOtherStyle(TestEmbeddingsLlamaCpp):
    STYLE = OTHER_WIRE_STYLE


class TestEmbeddingsTei(_EmbeddingsMatrix, unittest.TestCase):
    DIALECT = "tei"
    EMU_ARGS = ["--st-prompt", "query=query: "]
    API = "tei"
    NORMALIZE_SWITCH = True

    def test_tei_settings_carried_and_generations_refused(self):
        body = {"inputs": TEXTS, "prompt_name": "query", "truncate": True,
                "truncation_direction": "left", "dimensions": 16}
        ref = post_json(self.emu.port, "/embed", body).json()
        got = self.post("/embed", body).json()
        self.assertEqual(got, ref)
        r = self.post("/v1/chat/completions",
                      {"model": self.MODEL, "messages": [{"role": "user", "content": "x"}]}, 400)
        self.assertIn("(TEI) has no generation endpoint", r.json()["error"]["message"])


class TestEmbeddingsTeiOtherStyle(TestEmbeddingsTei):
    STYLE = OTHER_WIRE_STYLE


class TestEmbeddingsGenerationOnly(unittest.TestCase):
    """A TGI emulator: no embeddings route (C), in every client's shape; nothing reaches it."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "tgi", "tgi-model", ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--access-log", "off"],
                          model="tgi-model")

    def test_every_front_gets_the_refusal_in_its_shape(self):
        cases = [("/v1/embeddings", {"model": "tgi-model", "input": "x"},
                  lambda b: b["error"]["message"]),
                 ("/api/embed", {"model": "tgi-model", "input": "x"}, lambda b: b["error"]),
                 ("/api/embeddings", {"model": "tgi-model", "prompt": "x"}, lambda b: b["error"]),
                 ("/embed", {"inputs": "x"}, lambda b: b["error"]),
                 ("/embedding", {"content": "x"}, lambda b: b["error"]["message"])]
        for path, body, message in cases:
            with self.subTest(path=path):
                r = post_json(self.proxy.port, path, body)
                self.assertEqual(r.status, 400, r.body[:300])
                self.assertTrue(message(r.json()).startswith(
                    "the backend (TGI) has no embeddings endpoint"), r.body[:300])


class TestEmbeddingsRouting(unittest.TestCase):
    """Embeddings next to generations behind one endpoint (docs/routing.md): requests that name
    no model go to a backend that has embeddings, generations never to TEI, embeddings never to
    the generation-only backend; a dead replica of the embeddings pool fails over."""

    @classmethod
    def setUpClass(cls):
        from harness import closed_port
        cls.chat = start(cls, Emulator, "tgi", "chat-model", ["--quiet"])
        cls.tei = start(cls, Emulator, "tei", MODEL, ["--quiet"])
        dead = f"http://127.0.0.1:{closed_port()}"
        yaml = (f"backends:\n"
                f"  - {{name: chat, url: '{cls.chat.url}'}}\n"
                f"  - {{name: emb, url: '{cls.tei.url}'}}\n"
                f"  - {{name: emb-dead, url: '{dead}', dialect: tei, model: '{MODEL}'}}\n"
                f"models: {{default: chat-model, aliases: {{emb: '{MODEL}'}}}}\n"
                f"routing: {{retries: {{attempts: 3}}}}\n")
        cls.proxy = start(cls, Proxy, ["--access-log", "off"], config_yaml=yaml, model=MODEL)
        # Every live backend identified (emb-dead is served from its config at once).
        cls.proxy.wait_ready(model="chat-model")
        wait_until(lambda: metric(request(cls.proxy.port, "GET", "/metrics").body.decode(),
                                  "infergate_backend_up", backend="emb") == 1,
                   timeout=30, what="backend 'emb' identified")

    def test_nameless_requests_go_to_a_backend_that_has_the_route(self):
        before = request(self.proxy.port, "GET", "/metrics").body.decode()
        ref = post_json(self.tei.port, "/embed", {"inputs": ["a b", "c"]}).json()
        for i in range(6):  # the dead replica is chosen now and then: failover each time
            with self.subTest(i=i):
                r = post_json(self.proxy.port, "/embed", {"inputs": ["a b", "c"]})
                self.assertEqual(r.status, 200, r.body[:300])
                self.assertEqual(r.json(), ref)
                r = post_json(self.proxy.port, "/embedding", {"content": ["a b", "c"]})
                self.assertEqual(r.status, 200, r.body[:300])
                self.assertEqual([x["embedding"][0] for x in r.json()], ref)
        # Idle ties go by picks: the dead replica had its turns, and each moved on.
        metrics = request(self.proxy.port, "GET", "/metrics").body.decode()
        self.assertGreater(metric(metrics, "infergate_backend_retries_total", backend="emb-dead"), 0)
        self.assertEqual(metric(metrics, "infergate_backend_requests_total", backend="chat"),
                         metric(before, "infergate_backend_requests_total", backend="chat"))
        r = post_json(self.proxy.port, "/v1/embeddings", {"model": "emb", "input": ["a b", "c"]})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json()["model"], "emb")
        self.assertEqual(sorted_data(r.json()), ref)
        # TGI tokenizes; a nameless TEI-or-TGI body goes to the default model's TGI.
        r = post_json(self.proxy.port, "/tokenize", {"inputs": "a b"})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json(), post_json(self.chat.port, "/tokenize", {"inputs": "a b"}).json())

    def test_each_kind_where_it_can_go(self):
        r = post_json(self.proxy.port, "/v1/embeddings", {"model": "chat-model", "input": "x"})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("the backend 'chat' (TGI) has no embeddings endpoint",
                      r.json()["error"]["message"])
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": "emb", "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("(TEI) has no generation endpoint", r.json()["error"]["message"])
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": "chat-model", "messages": [{"role": "user", "content": "x"}],
                       "max_tokens": 2})
        self.assertEqual(r.status, 200, r.body[:300])


# =============================================================================================
# The tokenizer's routes against the emulator
# =============================================================================================

TOKENIZE_TEXT = "Hello wörld <|im_start|>user\nhi"


class _TokenizerMatrix:
    DIALECT = "openai"
    EMU_ARGS: list[str] = []
    STYLE: list[str] = []
    MODEL = "tok-model"
    DETOKENIZE = True

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL,
                        ["--quiet", *cls.EMU_ARGS, *cls.STYLE])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--access-log", "off"],
                          model=cls.MODEL)

    def direct_ids(self, text: str) -> list[int]:
        port = self.emu.port
        if self.DIALECT == "llamacpp":
            return post_json(port, "/tokenize", {"content": text}).json()["tokens"]
        if self.DIALECT == "tgi":
            return [t["id"] for t in post_json(port, "/tokenize", {"inputs": text}).json()]
        if self.DIALECT == "tei":
            return [t["id"] for t in post_json(port, "/tokenize", {"inputs": text}).json()[0]]
        return post_json(port, "/tokenize", {"model": self.MODEL, "prompt": text}).json()["tokens"]

    def post(self, path: str, body: Any, status: int = 200):
        r = post_json(self.proxy.port, path, body)
        self.assertEqual(r.status, status, f"POST {path} {body}: {r.body[:400]!r}")
        return r

    def test_every_client_gets_the_backends_ids(self):
        ids = self.direct_ids(TOKENIZE_TEXT)
        self.assertTrue(ids)
        vllm = self.post("/tokenize", {"model": self.MODEL, "prompt": TOKENIZE_TEXT}).json()
        self.assertEqual(vllm["tokens"], ids)
        self.assertEqual(vllm["count"], len(ids))
        sglang = self.post("/v1/tokenize", {"prompt": TOKENIZE_TEXT}).json()
        self.assertEqual(sglang["tokens"], ids)
        llama = self.post("/tokenize", {"content": TOKENIZE_TEXT}).json()
        self.assertEqual(llama, {"tokens": ids})
        tgi = self.post("/tokenize", {"inputs": TOKENIZE_TEXT, "parameters": {}}).json()
        self.assertEqual([t["id"] for t in tgi], ids)
        tei = self.post("/tokenize", {"inputs": [TOKENIZE_TEXT]}).json()
        self.assertEqual([t["id"] for t in tei[0]], ids)
        if self.DIALECT in ("llamacpp", "tgi", "tei"):
            # Texts and byte offsets: from the backend, or placed from llama.cpp's pieces.
            data = TOKENIZE_TEXT.encode()
            self.assertEqual(b"".join(data[t["start"]:t["stop"]] for t in tgi), data)
            for t in tgi:
                self.assertEqual(t["text"].encode(), data[t["start"]:t["stop"]])

    def test_detokenize(self):
        ids = self.direct_ids(TOKENIZE_TEXT)
        if not self.DETOKENIZE:
            r = self.post("/detokenize", {"tokens": ids}, 404)
            self.assertIn("has no detokenize endpoint", r.json()["error"]["message"])
            return
        want = TOKENIZE_TEXT
        body = self.post("/detokenize", {"tokens": ids}).json()
        # A bare /detokenize body is answered as the backend's own server does: SGLang leaves the
        # special tokens out by default.
        self.assertEqual(list(body.values()),
                         [want.replace("<|im_start|>", "") if self.DIALECT == "sglang" else want])
        batch = {"tokens": [ids, ids[:1]], "skip_special_tokens": False}
        if self.DIALECT in ("sglang", "tei"):
            self.assertEqual(self.post("/v1/detokenize", batch).json()["text"][0], want)
        else:  # one list per request there: refused, naming it
            r = self.post("/v1/detokenize", batch, 400)
            self.assertEqual(r.json()["error"]["param"], "tokens")
        self.assertEqual(self.post("/decode", {"ids": ids, "skip_special_tokens": False})
                         .json(), [want])


class TestTokenizerVllm(_TokenizerMatrix, unittest.TestCase):
    pass


class TestTokenizerSglang(_TokenizerMatrix, unittest.TestCase):
    DIALECT = "sglang"
    STYLE = OTHER_WIRE_STYLE


class TestTokenizerLlamaCpp(_TokenizerMatrix, unittest.TestCase):
    DIALECT = "llamacpp"

    def test_llamacpp_clients_get_its_bytes(self):
        for path, body in (("/tokenize", {"content": TOKENIZE_TEXT, "with_pieces": True}),
                           ("/detokenize", {"tokens": self.direct_ids(TOKENIZE_TEXT)}),
                           ("/apply-template", {"messages": [{"role": "user",
                                                              "content": "hi"}]})):
            with self.subTest(path=path):
                direct = post_json(self.emu.port, path, body)
                self.assertEqual(direct.status, 200)
                self.assertEqual(self.post(path, body).body, direct.body)


class TestTokenizerLlamaCppOtherStyle(TestTokenizerLlamaCpp):
    STYLE = OTHER_WIRE_STYLE


class TestTokenizerTgi(_TokenizerMatrix, unittest.TestCase):
    DIALECT = "tgi"
    DETOKENIZE = False


class TestTokenizerTei(_TokenizerMatrix, unittest.TestCase):
    DIALECT = "tei"
    STYLE = OTHER_WIRE_STYLE


class TestTokenizerOllama(unittest.TestCase):
    """Ollama has no tokenizer route: a 404 (D) in each client's shape, naming what has one."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "ollama", "llama3:8b", ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--access-log", "off"],
                          model="llama3:8b")

    def test_404_in_each_shape(self):
        for path, body, message in (
                ("/tokenize", {"prompt": "x"}, lambda b: b["error"]["message"]),
                ("/tokenize", {"content": "x"}, lambda b: b["error"]["message"]),
                ("/tokenize", {"inputs": "x"}, lambda b: b["error"]),
                ("/decode", {"ids": [1]}, lambda b: b["error"]),
                ("/detokenize", {"tokens": [1]}, lambda b: b["error"]["message"])):
            with self.subTest(path=path, body=body):
                r = post_json(self.proxy.port, path, body)
                self.assertEqual(r.status, 404, r.body[:300])
                self.assertIn("(Ollama) has no ", message(r.json()))
                self.assertIn("infergate serves: ", message(r.json()))


if __name__ == "__main__":
    unittest.main()
