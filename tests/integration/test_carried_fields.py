"""Issue 16 items 4 and 7 through the real binary: what a backend answers that only a client of
its own dialect can take reaches that client (llama.cpp's id_slot, generation_settings,
truncated, tokens_cached and timings; Anthropic's tool_use blocks; Ollama's tool_calls), the
cached part of a llama.cpp prompt reaches other dialects and the metrics, and a translated pair
that would lose a tool call says so instead of answering 200 without it.

The backends are scripted with the bytes the real servers write (the llama.cpp answers are the
real llama-server's at the pinned commit c392e509, ../shared/engines/README.md)."""

from __future__ import annotations

import json
import pathlib
import re
import unittest

from harness import Proxy, open_stream, post_json, request, start, stream
from scripted import ScriptedBackend, json_reply, ndjson_reply, raw_reply, sse_reply

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"


def fixture(rel: str) -> str:
    return (FIXTURES / rel).read_text()


def sse_payloads(text: str) -> list[str]:
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]


def metric(port: int, name: str) -> float:
    body = request(port, "GET", "/metrics").body.decode()
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", body,
                                                         re.M))


class LlamacppBackendTest(unittest.TestCase):
    MODEL = "tiny-llama"

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.whole = fixture("llamacpp/completion_real_c392e509.json").strip()
        cls.stream = fixture("llamacpp/completion_stream_real_c392e509.sse")

        def completion(req):
            if json.loads(req.body).get("stream"):
                return sse_reply(sse_payloads(cls.stream))
            return raw_reply(200, cls.whole.encode(), "application/json; charset=utf-8")
        cls.backend.route("POST", "/completion", completion)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "llamacpp", "--model", cls.MODEL], model=cls.MODEL)

    def test_llamacpp_client_gets_the_engines_members(self):
        r = post_json(self.proxy.port, "/completion", {"prompt": "Hello", "n_predict": 4})
        self.assertEqual(r.status, 200, r.body[:300])
        got = r.json()
        want = json.loads(self.whole)
        for key in ("id_slot", "generation_settings", "prompt", "has_new_line", "truncated",
                    "tokens_cached", "timings", "tokens", "tokens_evaluated", "stop_type"):
            self.assertEqual(got.get(key), want[key], key)
        self.assertEqual(got["timings"]["prompt_n"], 1)  # not the whole prompt (2)

    def test_llamacpp_client_stream_gets_ids_and_the_final_members(self):
        s = open_stream(self.proxy.port, "/completion",
                        {"prompt": "Hello", "n_predict": 4, "stream": True})
        self.assertEqual(s.status, 200)
        got = [e.json() for e in s.read_all() if not e.done]
        want = [json.loads(p) for p in sse_payloads(self.stream)]
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            for key, value in w.items():
                self.assertEqual(g.get(key), value, key)

    def test_cached_tokens_reach_openai_clients_and_the_metric(self):
        before = metric(self.proxy.port, "infergate_cached_prompt_tokens_total")
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": self.MODEL, "prompt": "Hello", "max_tokens": 4})
        self.assertEqual(r.status, 200, r.body[:300])
        usage = r.json()["usage"]
        self.assertEqual(usage["prompt_tokens"], 2)
        self.assertEqual(usage["prompt_tokens_details"]["cached_tokens"], 1)
        self.assertEqual(metric(self.proxy.port, "infergate_cached_prompt_tokens_total"),
                         before + 1)
        # SGLang clients read meta_info.cached_tokens.
        g = post_json(self.proxy.port, "/generate",
                      {"text": "Hello", "sampling_params": {"max_new_tokens": 4}})
        self.assertEqual(g.status, 200, g.body[:300])
        self.assertEqual(g.json()["meta_info"]["cached_tokens"], 1)

    def test_tgi_client_stream_has_one_event_per_token_with_its_id(self):
        s = open_stream(self.proxy.port, "/generate_stream",
                        {"inputs": "Hello", "parameters": {"max_new_tokens": 4,
                                                           "details": True}})
        self.assertEqual(s.status, 200)
        events = [e.json() for e in s.read_all() if not e.done]
        self.assertEqual([e["token"]["id"] for e in events], [14747, 6135, 29922, 26428])
        self.assertEqual([e["index"] for e in events], [1, 2, 3, 4])
        self.assertEqual([e["generated_text"] is not None for e in events],
                         [False, False, False, True])
        self.assertEqual(events[-1]["details"]["generated_tokens"], 4)


ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"


class AnthropicBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.whole = fixture("anthropic/tool_use_response.json").strip()
        cls.stream = fixture("anthropic/tool_use_stream.sse")

        def messages(req):
            if json.loads(req.body).get("stream"):
                return raw_reply(200, cls.stream.encode(), "text/event-stream", chunked=True)
            return raw_reply(200, cls.whole.encode())
        cls.backend.route("POST", "/v1/messages", messages)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "anthropic", "--model", ANTHROPIC_MODEL],
                          model=ANTHROPIC_MODEL)

    def body(self, stream: bool = False) -> dict:
        return {"model": ANTHROPIC_MODEL, "max_tokens": 100, "stream": stream,
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]}

    def test_tool_use_block_comes_back(self):
        r = post_json(self.proxy.port, "/v1/messages", self.body())
        self.assertEqual(r.status, 200, r.body[:300])
        got = r.json()
        self.assertEqual(got["stop_reason"], "tool_use")
        self.assertEqual(got["content"], json.loads(self.whole)["content"])
        # The tools reached the backend.
        sent = json.loads(self.backend.requests_to("/v1/messages")[-1].body)  # not a probe GET
        self.assertEqual(sent["tools"][0]["name"], "get_weather")

    def test_streamed_tool_use_block_comes_back(self):
        s = open_stream(self.proxy.port, "/v1/messages", self.body(True))
        self.assertEqual(s.status, 200)
        events = [(e.json()["type"], e.json()) for e in s.read_all()]
        starts = [d["content_block"] for name, d in events if name == "content_block_start"]
        self.assertIn("tool_use", [b["type"] for b in starts])
        partial = "".join(d["delta"]["partial_json"] for name, d in events
                          if name == "content_block_delta"
                          and d["delta"]["type"] == "input_json_delta")
        self.assertEqual(json.loads(partial), {"location": "San Francisco, CA"})
        start = next(d for name, d in events if name == "message_start")
        self.assertEqual(start["message"]["usage"]["input_tokens"], 472)

    def test_an_openai_client_gets_the_call_as_tool_calls(self):
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": ANTHROPIC_MODEL, "max_tokens": 100,
                       "messages": [{"role": "user", "content": "Weather in Paris?"}]})
        self.assertEqual(r.status, 200, r.body[:300])
        choice = r.json()["choices"][0]
        self.assertEqual(choice["finish_reason"], "tool_calls")
        blocks = [b for b in json.loads(self.whole)["content"] if b["type"] == "tool_use"]
        calls = choice["message"]["tool_calls"]
        self.assertEqual([c["id"] for c in calls], [b["id"] for b in blocks])
        self.assertEqual([json.loads(c["function"]["arguments"]) for c in calls],
                         [b["input"] for b in blocks])

    def test_a_streaming_openai_client_gets_the_call_as_deltas(self):
        s = stream(self.proxy.port, "/v1/chat/completions",
                   {"model": ANTHROPIC_MODEL, "max_tokens": 100, "stream": True,
                    "messages": [{"role": "user", "content": "Weather in Paris?"}]})
        self.assertTrue(s.events[-1].done)
        docs = [e.json() for e in s.events[:-1]]
        calls = {}
        finishes = []
        for d in docs:
            for c in d["choices"]:
                finishes.append(c["finish_reason"])
                for t in c["delta"].get("tool_calls", []):
                    call = calls.setdefault(t["index"], {"id": t.get("id"), "arguments": ""})
                    call["arguments"] += t["function"].get("arguments", "")
        self.assertEqual(len(calls), 1)
        self.assertTrue(calls[0]["id"].startswith("toolu_"), calls)
        self.assertIsInstance(json.loads(calls[0]["arguments"]), dict)
        self.assertIn("tool_calls", finishes)


OLLAMA_MODEL = "llama3.2"


class OllamaBackendTest(unittest.TestCase):
    ANSWER = {"model": OLLAMA_MODEL, "created_at": "2024-07-22T20:33:28.123648Z",
              "message": {"role": "assistant", "content": "", "tool_calls": [
                  {"function": {"name": "get_current_weather",
                                "arguments": {"format": "celsius", "location": "Paris, FR"}}}]},
              "done_reason": "stop", "done": True, "prompt_eval_count": 122, "eval_count": 33}

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)

        def chat(req):
            if json.loads(req.body).get("stream"):
                first = dict(cls.ANSWER, done=False)
                for k in ("done_reason", "prompt_eval_count", "eval_count"):
                    first.pop(k)
                last = dict(cls.ANSWER, message={"role": "assistant", "content": ""})
                return ndjson_reply([json.dumps(first), json.dumps(last)])
            return json_reply(cls.ANSWER)
        cls.backend.route("POST", "/api/chat", chat)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "ollama", "--model", OLLAMA_MODEL], model=OLLAMA_MODEL)

    def body(self, stream: bool) -> dict:
        return {"model": OLLAMA_MODEL, "stream": stream,
                "messages": [{"role": "user", "content": "Weather in Paris?"}],
                "tools": [{"type": "function", "function": {"name": "get_current_weather"}}]}

    def test_tool_calls_come_back(self):
        r = post_json(self.proxy.port, "/api/chat", self.body(False))
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json()["message"]["tool_calls"],
                         self.ANSWER["message"]["tool_calls"])

    def test_streamed_tool_calls_come_back(self):
        r = post_json(self.proxy.port, "/api/chat", self.body(True))
        self.assertEqual(r.status, 200, r.body[:300])
        lines = [json.loads(line) for line in r.body.decode().splitlines() if line]
        calls = [line["message"]["tool_calls"] for line in lines
                 if "tool_calls" in line.get("message", {})]
        self.assertEqual(calls, [self.ANSWER["message"]["tool_calls"]])
        self.assertTrue(lines[-1]["done"])


if __name__ == "__main__":
    unittest.main()
