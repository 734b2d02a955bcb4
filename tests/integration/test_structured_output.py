"""Structured output through the real binary (issue 13): a client's JSON schema, "any JSON
object" or regular expression, written where its own dialect writes it, reaches a backend of
another dialect where that engine reads it, whole and streamed, or is refused with a 400 in the
client's own error shape that names it.

The backends are infergate-emulator instances, each in its own bytes and in another wire style
(spaced JSON with ASCII escapes, CRLF multi-line SSE with comments, CRLF NDJSON with blank
records, writes split into pieces). The emulator answers a constrained request with a text that
shows which constraint it got (docs/emulator.md, "Structured output"): the JSON value a schema
describes, `{}` for any JSON object, `regex: <pattern>` for a regular expression."""

from __future__ import annotations

import json
import unittest

from harness import OTHER_WIRE_STYLE, Emulator, Proxy, post_json

MODEL = "fmt-model:latest"

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"},
    "days": {"type": "integer"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
    "caf\u00e9": {"type": "string"},
}}
# What the emulator writes for SCHEMA (a string is its property name reversed).
FROM_SCHEMA = {"city": "ytic", "days": 7, "unit": "celsius", "where": {"lat": 1.5},
               "caf\u00e9": "\u00e9fac"}
REGEX = "[0-9]{3}-\"x\""

USER = [{"role": "user", "content": "Give me the weather as JSON."}]


def body_for(front: str, fmt: dict, stream: bool) -> tuple[str, dict]:
    """The path and body of a request on `front` asking for `fmt` ({kind, ...})."""
    kind = fmt["kind"]
    if front == "openai_chat":
        rf = ({"type": "json_object"} if kind == "json" else
              {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA,
                                                      "strict": True}})
        return "/v1/chat/completions", {"model": MODEL, "messages": USER, "max_tokens": 64,
                                        "stream": stream, "response_format": rf}
    if front == "openai_completions":
        rf = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA}}
        return "/v1/completions", {"model": MODEL, "prompt": "weather:", "max_tokens": 64,
                                   "stream": stream, "response_format": rf}
    if front == "ollama_chat":
        return "/api/chat", {"model": MODEL, "messages": USER, "stream": stream,
                             "options": {"num_predict": 64},
                             "format": "json" if kind == "json" else SCHEMA}
    if front == "ollama_generate":
        return "/api/generate", {"model": MODEL, "prompt": "weather:", "raw": True,
                                 "stream": stream, "options": {"num_predict": 64},
                                 "format": "json" if kind == "json" else SCHEMA}
    if front == "anthropic":
        return "/v1/messages", {"model": MODEL, "messages": USER, "max_tokens": 64,
                                "stream": stream,
                                "output_config": {"format": {"type": "json_schema",
                                                             "schema": SCHEMA}}}
    if front == "sglang":
        sp = {"max_new_tokens": 64}
        if kind == "regex":
            sp["regex"] = REGEX
        else:
            sp["json_schema"] = json.dumps(SCHEMA)
        return "/generate", {"text": "weather:", "sampling_params": sp, "stream": stream}
    if front == "tgi":
        grammar = ({"type": "regex", "value": REGEX} if kind == "regex" else
                   {"type": "json", "value": SCHEMA})
        return ("/generate_stream" if stream else "/generate",
                {"inputs": "weather:", "parameters": {"max_new_tokens": 64, "grammar": grammar}})
    if front == "llamacpp":
        return "/completion", {"prompt": "weather:", "n_predict": 64, "stream": stream,
                               "json_schema": SCHEMA}
    raise AssertionError(front)


def sse_data(raw: bytes) -> list[dict]:
    """The JSON data of each event of an event stream (any line ending, multi-line data)."""
    out, data = [], []
    for line in raw.decode().replace("\r\n", "\n").split("\n"):
        if line == "":
            if data:
                text = "\n".join(data)
                if text != "[DONE]":
                    out.append(json.loads(text))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return out


def ndjson(raw: bytes) -> list[dict]:
    return [json.loads(l) for l in raw.decode().splitlines() if l.strip()]


def answer_text(front: str, raw: bytes, stream: bool) -> str:
    """The generated text of a 200 answer on `front`."""
    if not stream:
        doc = json.loads(raw)
        return {
            "openai_chat": lambda: doc["choices"][0]["message"]["content"],
            "openai_completions": lambda: doc["choices"][0]["text"],
            "ollama_chat": lambda: doc["message"]["content"],
            "ollama_generate": lambda: doc["response"],
            "anthropic": lambda: "".join(b["text"] for b in doc["content"] if b["type"] == "text"),
            "sglang": lambda: doc["text"],
            "tgi": lambda: doc["generated_text"],
            "llamacpp": lambda: doc["content"],
        }[front]()
    if front in ("ollama_chat", "ollama_generate"):
        lines = ndjson(raw)
        key = "message" if front == "ollama_chat" else None
        return "".join((l["message"]["content"] if key else l["response"]) for l in lines)
    events = sse_data(raw)
    if front == "openai_chat":
        return "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
    if front == "openai_completions":
        return "".join(c["text"] for e in events for c in e["choices"])
    if front == "anthropic":
        return "".join(e["delta"]["text"] for e in events
                       if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")
    if front == "sglang":
        return events[-1]["text"]  # cumulative
    if front == "tgi":
        return events[-1]["generated_text"]
    if front == "llamacpp":
        return "".join(e["content"] for e in events)
    raise AssertionError(front)


def chunks(front: str, raw: bytes) -> int:
    """How many events of a stream carried text (it must not be one buffered answer)."""
    if front in ("ollama_chat", "ollama_generate"):
        return sum(1 for l in ndjson(raw)
                   if (l.get("message", {}).get("content") if front == "ollama_chat"
                       else l.get("response")))
    if front == "tgi":
        return sum(1 for e in sse_data(raw) if not e["token"].get("special") and e["token"]["text"])
    if front == "sglang":
        return len({e["text"] for e in sse_data(raw)})  # cumulative: distinct texts
    one = {"openai_chat": lambda e: "".join(c["delta"].get("content") or "" for c in e["choices"]),
           "openai_completions": lambda e: "".join(c["text"] for c in e["choices"]),
           "anthropic": lambda e: e.get("delta", {}).get("text", ""),
           "llamacpp": lambda e: e["content"]}[front]
    return sum(1 for e in sse_data(raw) if one(e))


class StructuredOutputTest(unittest.TestCase):
    """Each backend dialect in two wire styles behind its own proxy."""

    BACKENDS = ("openai", "sglang", "tgi", "ollama", "llamacpp", "anthropic")

    @classmethod
    def setUpClass(cls):
        cls.proxies: dict[tuple[str, str], Proxy] = {}
        for backend in cls.BACKENDS:
            for style, extra in (("own", []), ("styled", OTHER_WIRE_STYLE)):
                emu = Emulator(backend, MODEL, ["--quiet", *extra])
                cls.addClassCleanup(emu.stop)
                proxy = Proxy(["--upstream", emu.url, "--upstream-dialect", backend])
                cls.addClassCleanup(proxy.stop)
                cls.proxies[(backend, style)] = proxy

    def check_pair(self, front: str, backend: str, fmt: dict, want: str):
        for style in ("own", "styled"):
            port = self.proxies[(backend, style)].port
            for stream in (False, True):
                with self.subTest(front=front, backend=backend, fmt=fmt["kind"], style=style,
                                  stream=stream):
                    path, body = body_for(front, fmt, stream)
                    r = post_json(port, path, body)
                    self.assertEqual(r.status, 200, r.body[:600])
                    self.assertEqual(answer_text(front, r.body, stream), want)
                    if stream:  # in pieces ("{}" is two: "{" and "}")
                        self.assertGreaterEqual(chunks(front, r.body), 2, r.body[:600])

    def check_refused(self, front: str, backend: str, fmt: dict, param: str, says: str):
        for stream in (False, True):
            with self.subTest(front=front, backend=backend, fmt=fmt["kind"], stream=stream):
                path, body = body_for(front, fmt, stream)
                r = post_json(self.proxies[(backend, "own")].port, path, body)
                self.assertEqual(r.status, 400, r.body[:600])
                text = r.body.decode()
                self.assertIn(param, text)
                self.assertIn(says, text)
                doc = r.json()
                # The client's own error shape.
                if front.startswith("ollama") or front == "tgi":
                    self.assertIsInstance(doc["error"], str)
                else:
                    self.assertIn("message", doc["error"])

    def test_json_schema_from_every_front(self):
        schema_text = json.dumps(FROM_SCHEMA, separators=(",", ":"), ensure_ascii=False)
        pairs = [("openai_chat", b) for b in ("ollama", "anthropic", "tgi", "llamacpp", "sglang")]
        pairs += [("ollama_chat", b) for b in ("openai", "anthropic", "tgi", "llamacpp")]
        pairs += [("anthropic", b) for b in ("openai", "ollama", "sglang")]
        pairs += [("sglang", b) for b in ("openai", "ollama", "tgi", "llamacpp")]
        pairs += [("tgi", b) for b in ("sglang", "llamacpp", "ollama")]
        pairs += [("llamacpp", b) for b in ("openai", "ollama", "sglang")]
        pairs += [("ollama_generate", b) for b in ("sglang", "openai")]
        pairs += [("openai_completions", b) for b in ("ollama", "tgi", "llamacpp")]
        for front, backend in pairs:
            self.check_pair(front, backend, {"kind": "schema"}, schema_text)

    def test_any_json_object(self):
        for front, backend in (("ollama_chat", "openai"), ("ollama_chat", "sglang"),
                               ("ollama_chat", "llamacpp"), ("openai_chat", "ollama"),
                               ("ollama_generate", "sglang"), ("ollama_generate", "llamacpp")):
            self.check_pair(front, backend, {"kind": "json"}, "{}")

    def test_regex(self):
        for front, backend in (("sglang", "tgi"), ("sglang", "openai"), ("tgi", "sglang"),
                               ("tgi", "openai")):
            self.check_pair(front, backend, {"kind": "regex"}, "regex: " + REGEX)

    def test_what_a_backend_cannot_take_is_refused_in_the_clients_shape(self):
        self.check_refused("ollama_chat", "anthropic", {"kind": "json"}, "format",
                           "only a JSON schema")
        self.check_refused("ollama_chat", "tgi", {"kind": "json"}, "format",
                           "JSON schema with properties")
        # An OpenAI client of TGI's OpenAI layer too: TGI reads its own shape only.
        self.check_refused("openai_chat", "tgi", {"kind": "json"}, "response_format",
                           "JSON schema with properties")
        self.check_refused("sglang", "ollama", {"kind": "regex"}, "sampling_params.regex",
                           "no regular expression")
        self.check_refused("tgi", "llamacpp", {"kind": "regex"}, "parameters.grammar",
                           "no regular expression")


if __name__ == "__main__":
    unittest.main()
