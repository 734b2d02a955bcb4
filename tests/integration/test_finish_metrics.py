"""Issue 13, metrics: infergate_finish_reasons_total tells tool-call turns apart, whatever the
path (translated or the same-dialect fast path) and whether the answer was streamed. The
backends are emulators in their tool mode: given tools, they call one; the finish is the
backend's own word for it (vLLM "tool_calls", Ollama "stop" with tool calls)."""

from __future__ import annotations

import re
import unittest

from harness import Emulator, Proxy, post_json, request, start, stream

MODEL = "tool-model"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def finishes(port: int) -> dict[tuple[str, str], float]:
    """(route, finish_reason) -> count, summed over the other labels."""
    text = request(port, "GET", "/metrics").body.decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = re.match(r'infergate_finish_reasons_total\{(.*)\} (\S+)$', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        key = (labels["route"], labels["finish_reason"])
        out[key] = out.get(key, 0) + float(m.group(2))
    return out


class _Finishes(unittest.TestCase):
    DIALECT = ""
    MODEL_NAME = MODEL

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL_NAME)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=cls.MODEL_NAME)

    def chat(self, tools: bool, streamed: bool) -> None:
        body = {"model": self.MODEL_NAME, "max_tokens": 8,
                "messages": [{"role": "user", "content": "Weather in Paris?"}]}
        if tools:
            body["tools"] = TOOLS
        if streamed:
            body["stream"] = True
            s = stream(self.proxy.port, "/v1/chat/completions", body)
            self.assertTrue(s.events[-1].done)
        else:
            r = post_json(self.proxy.port, "/v1/chat/completions", body)
            self.assertEqual(r.status, 200, r.body[:300])

    def check(self) -> None:
        before = finishes(self.proxy.port)
        for streamed in (False, True):
            self.chat(tools=True, streamed=streamed)
            self.chat(tools=False, streamed=streamed)
        after = finishes(self.proxy.port)

        def grew(reason: str) -> float:
            key = ("openai_chat", reason)
            return after.get(key, 0) - before.get(key, 0)

        self.assertEqual(grew("tool_calls"), 2, after)
        self.assertEqual(grew("stop") + grew("length"), 2, after)


class FastPath(_Finishes):
    """An OpenAI client of a vLLM-style backend: the bytes are relayed as they came."""
    DIALECT = "openai"

    def test_tool_call_finishes_are_counted(self):
        self.check()


class Translated(_Finishes):
    """An OpenAI client of Ollama: Ollama says "stop" after a tool call; the answer and the
    metric say tool_calls."""
    DIALECT = "ollama"
    MODEL_NAME = MODEL + ":latest"

    def test_tool_call_finishes_are_counted(self):
        self.check()


if __name__ == "__main__":
    unittest.main()


def reasoning_tokens(port: int) -> dict[str, float]:
    """route -> infergate_reasoning_tokens_total, summed over the other labels."""
    text = request(port, "GET", "/metrics").body.decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r'infergate_reasoning_tokens_total\{(.*)\} (\S+)$', line)
        if m:
            route = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))["route"]
            out[route] = out.get(route, 0) + float(m.group(2))
    return out


class ReasoningTokens(unittest.TestCase):
    """Reasoning tokens are counted where the backend reports them: SGLang's OpenAI layer writes
    usage.reasoning_tokens (the emulator: one per reasoning word). An OpenAI client takes the
    fast path, an Ollama client a translated one; whole and streamed, each is counted once."""

    REASONING = "Weigh it first, then answer."  # 5 words: 5 reasoning tokens

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "sglang", MODEL)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=MODEL)

    def test_counted_on_the_fast_path_and_translated(self):
        headers = {"X-Emulator-Reasoning": self.REASONING}
        messages = [{"role": "user", "content": "Why?"}]
        for route, path, body in (
                ("openai_chat", "/v1/chat/completions",
                 {"model": MODEL, "max_tokens": 8, "messages": messages}),
                ("ollama_chat", "/api/chat",
                 {"model": MODEL, "options": {"num_predict": 8}, "messages": messages})):
            for streamed in (False, True):
                with self.subTest(route=route, streamed=streamed):
                    before = reasoning_tokens(self.proxy.port).get(route, 0)
                    r = post_json(self.proxy.port, path, {**body, "stream": streamed}, headers)
                    self.assertEqual(r.status, 200, r.body[:300])
                    self.assertIn(b"Weigh", r.body)
                    after = reasoning_tokens(self.proxy.port).get(route, 0)
                    self.assertEqual(after - before, 5)
