"""Issue 13, first part, through the real binary: what a chat history carries besides text (an
assistant's tool calls, the tool results answering them, an assistant's reasoning, image parts)
reaches the backend of a translated pair, or the request is refused naming it. Before, the
decoders read role and text only: an agent's second turn reached the backend without the call
it had made (a 200 for another conversation).

The backends are scripted, each answering in two wire styles (compact and spaced JSON), and
record what they were sent."""

from __future__ import annotations

import json
import unittest

from harness import Proxy, post_json, start, stream
from scripted import ScriptedBackend, dumps, json_reply, ndjson_reply, sse_reply

MODEL = "tool-model"
ARGUMENTS = '{"city": "Paris", "unit": "\\u00b0C"}'  # as a model wrote it: spaces, an escape

OPENAI_HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "reasoning_content": "I should call the tool.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": ARGUMENTS}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees"},
]

OLLAMA_HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "thinking": "Call the tool.",
     "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_name": "get_weather", "content": "18 degrees"},
]


def chat_answer(text: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}


def ollama_answer(text: str) -> dict:
    return {"model": MODEL, "created_at": "2024-07-22T20:33:28.123648Z",
            "message": {"role": "assistant", "content": text}, "done_reason": "stop",
            "done": True, "prompt_eval_count": 9, "eval_count": 2}


class _Backend(unittest.TestCase):
    DIALECT = ""
    ROUTE = ""
    ANSWER = staticmethod(chat_answer)

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.style = "compact"

        def answer(_req):
            return json_reply(cls.ANSWER("It is 18 degrees."), style=cls.style)
        cls.backend.route("POST", cls.ROUTE, answer)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       cls.DIALECT, "--model", MODEL], model=MODEL)

    def sent(self) -> dict:
        return json.loads(self.backend.requests_to(self.ROUTE)[-1].body)

    def each_style(self):
        for style in ("compact", "spaced"):
            with self.subTest(style=style):
                type(self).style = style
                yield style


class OpenAIClientToTgi(_Backend):
    """TGI's OpenAI layer is translated, not passed through: the encoder wrote role and text."""
    DIALECT = "tgi"
    ROUTE = "/v1/chat/completions"

    def test_tool_calls_results_and_reasoning_reach_the_backend(self):
        for _ in self.each_style():
            r = post_json(self.proxy.port, "/v1/chat/completions",
                          {"model": MODEL, "messages": OPENAI_HISTORY})
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertEqual(r.json()["choices"][0]["message"]["content"], "It is 18 degrees.")
            messages = self.sent()["messages"]
            self.assertEqual(messages[1]["tool_calls"], OPENAI_HISTORY[1]["tool_calls"])
            self.assertIsNone(messages[1]["content"])
            self.assertEqual(messages[1]["reasoning_content"], "I should call the tool.")
            self.assertEqual(messages[2]["tool_call_id"], "call_1")
            # Byte for byte: the arguments string is not re-serialised.
            raw = self.backend.requests_to(self.ROUTE)[-1].body
            self.assertIn(json.dumps(ARGUMENTS).encode(), raw)

    def test_image_parts_reach_the_backend(self):
        parts = [{"type": "text", "text": "What is this?"},
                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": MODEL, "messages": [{"role": "user", "content": parts}]})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(self.sent()["messages"][0]["content"], parts)


class OllamaClientToOllama(_Backend):
    DIALECT = "ollama"
    ROUTE = "/api/chat"
    ANSWER = staticmethod(ollama_answer)

    def test_tool_calls_tool_name_and_thinking_reach_the_backend(self):
        for _ in self.each_style():
            r = post_json(self.proxy.port, "/api/chat",
                          {"model": MODEL, "stream": False, "messages": OLLAMA_HISTORY})
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertEqual(r.json()["message"]["content"], "It is 18 degrees.")
            self.assertEqual(self.sent()["messages"], OLLAMA_HISTORY)

    def test_openai_client_tool_calls_become_ollama_objects(self):
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": MODEL, "messages": OPENAI_HISTORY})
        self.assertEqual(r.status, 200, r.body[:300])
        messages = self.sent()["messages"]
        self.assertEqual(messages[1]["tool_calls"],
                         [{"id": "call_1", "function": {"name": "get_weather",
                                                        "arguments": json.loads(ARGUMENTS)}}])
        self.assertEqual(messages[1]["thinking"], "I should call the tool.")
        self.assertEqual(messages[2], {"role": "tool", "content": "18 degrees",
                                       "tool_name": "get_weather"})

    def test_arguments_that_are_not_an_object_are_refused(self):
        history = json.loads(json.dumps(OPENAI_HISTORY))
        history[1]["tool_calls"][0]["function"]["arguments"] = "[1, 2]"
        before = len(self.backend.requests_to(self.ROUTE))
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": MODEL, "messages": history})
        self.assertEqual(r.status, 400, r.body[:300])
        err = r.json()["error"]
        self.assertEqual(err["param"], "messages[1].tool_calls[0].function.arguments")
        self.assertIn("Ollama", err["message"])
        self.assertEqual(len(self.backend.requests_to(self.ROUTE)), before)


def anthropic_answer(text: str) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 2}}


class OpenAIClientToAnthropic(_Backend):
    DIALECT = "anthropic"
    ROUTE = "/v1/messages"
    ANSWER = staticmethod(anthropic_answer)

    def test_tool_calls_become_tool_use_and_results_tool_result_blocks(self):
        for _ in self.each_style():
            history = [OPENAI_HISTORY[0], dict(OPENAI_HISTORY[1], reasoning_content=None),
                       OPENAI_HISTORY[2], {"role": "user", "content": "And tomorrow?"}]
            r = post_json(self.proxy.port, "/v1/chat/completions",
                          {"model": MODEL, "max_tokens": 10, "messages": history})
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertEqual(r.json()["choices"][0]["message"]["content"], "It is 18 degrees.")
            self.assertEqual(self.sent()["messages"], [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "get_weather",
                     "input": json.loads(ARGUMENTS)}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "18 degrees"},
                    {"type": "text", "text": "And tomorrow?"}]}])

    def test_reasoning_in_the_history_is_refused_not_dropped(self):
        before = len(self.backend.requests_to(self.ROUTE))
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": MODEL, "max_tokens": 10, "messages": OPENAI_HISTORY})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json()["error"]["param"], "messages[1].reasoning_content")
        self.assertEqual(len(self.backend.requests_to(self.ROUTE)), before)


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


class ToolsOpenAIClientToOllama(unittest.TestCase):
    """An OpenAI client's tools to an Ollama backend, and its tool calls back (whole answers):
    before, 'tools' was refused on another family, and a tool call was a 502."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.style = "compact"
        answer = {"model": MODEL, "created_at": "2024-07-22T20:33:28.123648Z",
                  "message": {"role": "assistant", "content": "", "tool_calls": [
                      {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                  "done_reason": "stop", "done": True, "prompt_eval_count": 9, "eval_count": 5}
        cls.backend.route("POST", "/api/chat", lambda _r: json_reply(answer, style=cls.style))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "ollama", "--model", MODEL], model=MODEL)

    def test_tools_go_and_tool_calls_come_back(self):
        for style in ("compact", "spaced"):
            with self.subTest(style=style):
                type(self).style = style
                r = post_json(self.proxy.port, "/v1/chat/completions",
                              {"model": MODEL, "tools": TOOLS,
                               "messages": [{"role": "user", "content": "Weather in Paris?"}]})
                self.assertEqual(r.status, 200, r.body[:300])
                sent = json.loads(self.backend.requests_to("/api/chat")[-1].body)
                self.assertEqual(sent["tools"], TOOLS)
                choice = r.json()["choices"][0]
                self.assertEqual(choice["finish_reason"], "tool_calls")
                self.assertIsNone(choice["message"]["content"])
                calls = choice["message"]["tool_calls"]
                self.assertEqual(len(calls), 1)
                self.assertTrue(calls[0]["id"].startswith("call_"), calls[0])
                self.assertEqual(calls[0]["function"]["name"], "get_weather")
                self.assertEqual(json.loads(calls[0]["function"]["arguments"]), {"city": "Paris"})

    def test_tool_choice_ollama_cannot_honour_is_refused(self):
        r = post_json(self.proxy.port, "/v1/chat/completions",
                      {"model": MODEL, "tools": TOOLS, "tool_choice": "required",
                       "messages": [{"role": "user", "content": "Weather in Paris?"}]})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json()["error"]["param"], "tool_choice")


class ToolsOllamaClientToOpenAI(unittest.TestCase):
    """An Ollama client's tools to an OpenAI-compatible backend, and its tool calls back."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.style = "compact"
        answer = chat_answer("")
        answer["choices"][0]["message"] = {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "call_9", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
        answer["choices"][0]["finish_reason"] = "tool_calls"
        cls.backend.route("POST", "/v1/chat/completions",
                          lambda _r: json_reply(answer, style=cls.style))
        cls.backend.route("GET", "/v1/models", json_reply(
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm"}]}))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "openai", "--model", MODEL], model=MODEL)

    def test_tools_go_and_tool_calls_come_back(self):
        for style in ("compact", "spaced"):
            with self.subTest(style=style):
                type(self).style = style
                r = post_json(self.proxy.port, "/api/chat",
                              {"model": MODEL, "stream": False, "tools": TOOLS,
                               "messages": [{"role": "user", "content": "Weather in Paris?"}]})
                self.assertEqual(r.status, 200, r.body[:300])
                sent = json.loads(self.backend.requests_to("/v1/chat/completions")[-1].body)
                self.assertEqual(sent["tools"], TOOLS)
                got = r.json()
                # Ollama's own shape (api/types.go ToolCall): the id, and the call's index.
                self.assertEqual(got["message"]["tool_calls"],
                                 [{"id": "call_9", "function": {"index": 0, "name": "get_weather",
                                                                "arguments": {"city": "Paris"}}}])
                self.assertEqual(got["done_reason"], "stop")


def ollama_lines(style: str) -> list[str]:
    """An Ollama backend streaming two tool calls as it does (server/routes.go: each call whole,
    on a line of its own, with an id and its index; the turn ends with done_reason "stop")."""
    head = {"model": MODEL, "created_at": "2024-07-22T20:33:28.123648Z"}
    calls = [{"id": "call_ab12cd34", "function": {"index": 0, "name": "get_weather",
                                                   "arguments": {"city": "Paris"}}},
             {"id": "call_ef56gh78", "function": {"index": 1, "name": "get_time",
                                                   "arguments": {"zone": "CET", "h24": True}}}]
    lines = [dict(head, message={"role": "assistant", "content": "", "tool_calls": [c]},
                  done=False) for c in calls]
    lines.append(dict(head, message={"role": "assistant", "content": ""}, done_reason="stop",
                      done=True, prompt_eval_count=9, eval_count=12))
    return [dumps(line, style) for line in lines]


def openai_chunks(style: str, arguments: tuple[str, ...] = ('{"city": ', '"Par', 'is"}')) -> list[str]:
    """An OpenAI-compatible backend streaming two parallel tool calls as vLLM does: each call's
    first delta with its id, type and name, then its arguments in fragments."""
    def chunk(delta: dict | None, finish: str | None = None, usage: dict | None = None) -> str:
        doc = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": MODEL, "choices": [] if delta is None else
               [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if usage:
            doc["usage"] = usage
        return dumps(doc, style)

    out = [chunk({"role": "assistant", "content": ""})]
    for index, (cid, name, fragments) in enumerate(
            [("chatcmpl-tool-1", "get_weather", arguments),
             ("chatcmpl-tool-2", "get_time", ('{"zone": "CET"}',))]):
        out.append(chunk({"tool_calls": [{"index": index, "id": cid, "type": "function",
                                          "function": {"name": name, "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]})
                for f in fragments]
    out.append(chunk({}, "tool_calls"))
    out.append(chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 12,
                                  "total_tokens": 21}))
    out.append("[DONE]")
    return out


class StreamedToolsOpenAIClientToOllama(unittest.TestCase):
    """An Ollama backend's streamed tool calls reach an OpenAI client as deltas the SDK
    assembles; before, each was an in-band error."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.style = "compact"
        cls.backend.route("POST", "/api/chat", lambda _r: ndjson_reply(
            ollama_lines(cls.style), split=3, crlf=cls.style == "spaced"))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "ollama", "--model", MODEL], model=MODEL)

    def test_each_call_is_one_delta_and_the_finish_says_tool_calls(self):
        for style in ("compact", "spaced"):
            with self.subTest(style=style):
                type(self).style = style
                s = stream(self.proxy.port, "/v1/chat/completions",
                           {"model": MODEL, "stream": True, "tools": TOOLS,
                            "stream_options": {"include_usage": True},
                            "messages": [{"role": "user", "content": "Weather in Paris?"}]})
                self.assertTrue(s.events[-1].done)
                docs = [e.json() for e in s.events[:-1]]
                deltas = [d["choices"][0]["delta"] for d in docs if d["choices"]]
                calls = [c for d in deltas for c in d.get("tool_calls", [])]
                self.assertEqual(calls, [
                    {"index": 0, "id": "call_ab12cd34", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
                    {"index": 1, "id": "call_ef56gh78", "type": "function",
                     "function": {"name": "get_time",
                                  "arguments": '{"zone":"CET","h24":true}'}}])
                finishes = [d["choices"][0]["finish_reason"] for d in docs if d["choices"]]
                self.assertEqual([f for f in finishes if f], ["tool_calls"])
                self.assertEqual(docs[-1]["usage"]["completion_tokens"], 12)


class StreamedToolsOllamaClientToOpenAI(unittest.TestCase):
    """An OpenAI-compatible backend's streamed tool-call deltas are assembled into Ollama's
    whole calls (objects); before, each was an in-band error."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.style = "compact"
        cls.arguments = ('{"city": ', '"Par', 'is"}')
        cls.backend.route("POST", "/v1/chat/completions", lambda _r: sse_reply(
            openai_chunks(cls.style, cls.arguments), split=5, crlf=cls.style == "spaced",
            space=cls.style == "spaced"))
        cls.backend.route("GET", "/v1/models", json_reply(
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm"}]}))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "openai", "--model", MODEL], model=MODEL)

    def lines(self) -> list[dict]:
        r = post_json(self.proxy.port, "/api/chat",
                      {"model": MODEL, "tools": TOOLS,
                       "messages": [{"role": "user", "content": "Weather in Paris?"}]})
        self.assertEqual(r.status, 200, r.body[:300])
        return [json.loads(line) for line in r.body.decode().splitlines()]

    def test_fragments_become_whole_calls_with_object_arguments(self):
        for style in ("compact", "spaced"):
            with self.subTest(style=style):
                type(self).style = style
                type(self).arguments = ('{"city": ', '"Par', 'is"}')
                lines = self.lines()
                calls = [c for line in lines for c in line["message"].get("tool_calls", [])]
                self.assertEqual(calls, [
                    {"id": "chatcmpl-tool-1", "function": {"index": 0, "name": "get_weather",
                                                           "arguments": {"city": "Paris"}}},
                    {"id": "chatcmpl-tool-2", "function": {"index": 1, "name": "get_time",
                                                           "arguments": {"zone": "CET"}}}])
                # Each call goes out once complete: the first when the second starts.
                with_calls = [i for i, line in enumerate(lines) if line["message"].get("tool_calls")]
                self.assertEqual(len(with_calls), 2)
                self.assertTrue(lines[-1]["done"])
                self.assertEqual(lines[-1]["done_reason"], "stop")
                self.assertEqual(lines[-1]["eval_count"], 12)
                self.assertTrue(all(not line["done"] for line in lines[:-1]))

    def test_arguments_that_are_not_an_object_end_with_an_error_line(self):
        type(self).style = "compact"
        type(self).arguments = ('[1, ', '2]')
        try:
            lines = self.lines()
        finally:
            type(self).arguments = ('{"city": ', '"Par', 'is"}')
        self.assertIn("error", lines[-1])
        self.assertIn("get_weather", lines[-1]["error"])
        self.assertIn("not a JSON object", lines[-1]["error"])
        self.assertFalse(any(line.get("message", {}).get("tool_calls") for line in lines[:-1]))


if __name__ == "__main__":
    unittest.main()
