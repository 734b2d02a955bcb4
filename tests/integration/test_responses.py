"""The OpenAI Responses API through infergate (issue 17 part 1; docs/dialects.md, "Responses API").

POST /v1/responses is bridged onto the backend's chat API, so each answer is checked against the
same proxy's /v1/chat/completions for the equivalent messages (a path the other suites check
against each backend): the same text, the same token counts, the finish as a status. Every
backend dialect is run in its own wire style and in another one (harness.OTHER_WIRE_STYLE).

Also: the typed stream events (names, order, sequence numbers, what each carries), tools and
tool results, reasoning, the store behind previous_response_id, item_reference and
GET/DELETE /v1/responses/{id}, its limits, errors in the Responses API's own shape, metrics.
"""

from __future__ import annotations

import json
import os
import re
import unittest
from typing import Any

from harness import (OTHER_WIRE_STYLE, Emulator, Proxy, Stream, keys_file, open_stream,
                     post_json, request, start, stream)
from scripted import ScriptedBackend, dumps, json_reply, sse_reply

MODEL = "resp-model"

WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "The weather now",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}


def event_names(s: Stream) -> list[str]:
    """Each event's `event:` line, in order (None where an event has none)."""
    names = []
    for ev in s.events:
        m = re.search(rb"^event: ?(\S+)", ev.raw, re.M)
        names.append(m.group(1).decode() if m else None)
    return names


def check_event_stream(test: unittest.TestCase, s: Stream) -> list[dict[str, Any]]:
    """The events as JSON after checking what every Responses stream holds: each event named by
    its type, sequence numbers 0, 1, 2, ..., no [DONE], created and in_progress first, one
    terminal event last."""
    docs = [ev.json() for ev in s.events]
    test.assertFalse(any(ev.done for ev in s.events), "a Responses stream has no [DONE]")
    test.assertEqual(event_names(s), [d["type"] for d in docs])
    test.assertEqual([d["sequence_number"] for d in docs], list(range(len(docs))))
    types = [d["type"] for d in docs]
    test.assertEqual(types[:2], ["response.created", "response.in_progress"])
    test.assertIn(types[-1], ("response.completed", "response.incomplete", "response.failed"))
    test.assertEqual(sum(t in ("response.completed", "response.incomplete", "response.failed")
                         for t in types), 1)
    rid = docs[0]["response"]["id"]
    for d in docs:
        if "response" in d:
            test.assertEqual(d["response"]["id"], rid)
    return docs


def output_text(resp: dict) -> str:
    return "".join(p["text"] for item in resp["output"] if item["type"] == "message"
                   for p in item["content"] if p["type"] == "output_text")


def without_ids(items: list[dict]) -> list[dict]:
    return [{k: v for k, v in it.items() if k not in ("id", "call_id")} for it in items]


class _EmulatorBackend(unittest.TestCase):
    """One backend dialect, in its own wire style and in another one."""
    DIALECT = ""
    REASONING = True  # the dialect has a reasoning output (TGI has none)
    THINKING_SWITCH = False  # reasoning.effort switches the emulator's thinking on
    EMULATOR_ARGS: list[str] = []

    @classmethod
    def setUpClass(cls):
        if not cls.DIALECT:
            raise unittest.SkipTest("base class")
        cls.pairs = []
        for style in ([], OTHER_WIRE_STYLE):
            emu = start(cls, Emulator, cls.DIALECT, MODEL, [*cls.EMULATOR_ARGS, *style])
            proxy = start(cls, Proxy, ["--upstream", emu.url, "--upstream-dialect",
                                       cls.DIALECT, "--model", MODEL, "--access-log", "off"],
                          model=MODEL)
            cls.pairs.append(("own" if not style else "other", proxy))

    def each(self) -> list[tuple[str, int]]:
        return [(style, proxy.port) for style, proxy in self.pairs]

    def chat(self, port: int, messages: list[dict], **extra) -> dict:
        r = post_json(port, "/v1/chat/completions",
                      {"model": MODEL, "messages": messages, **extra})
        self.assertEqual(r.status, 200, r.body[:400])
        return r.json()

    def responses(self, port: int, body: dict, headers: dict | None = None) -> dict:
        r = post_json(port, "/v1/responses", {"model": MODEL, **body}, headers)
        self.assertEqual(r.status, 200, r.body[:400])
        self.assertTrue(r.header("content-type").startswith("application/json"))
        return r.json()

    def test_text_and_usage_equal_the_chat_answer(self):
        for style, port in self.each():
            with self.subTest(style=style):
                for budget in (4, 200):
                    ref = self.chat(port, [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Tell me about the sea"}],
                                    max_tokens=budget)
                    doc = self.responses(port, {"instructions": "Be brief.",
                                                "input": "Tell me about the sea",
                                                "max_output_tokens": budget})
                    choice = ref["choices"][0]
                    self.assertEqual(output_text(doc), choice["message"]["content"])
                    self.assertEqual(doc["object"], "response")
                    self.assertTrue(doc["id"].startswith("resp_"))
                    self.assertEqual(doc["model"], MODEL)
                    self.assertEqual(doc["instructions"], "Be brief.")
                    self.assertEqual(doc["max_output_tokens"], budget)
                    u = doc["usage"]
                    self.assertEqual(u["input_tokens"], ref["usage"]["prompt_tokens"])
                    self.assertEqual(u["output_tokens"], ref["usage"]["completion_tokens"])
                    self.assertEqual(u["total_tokens"], u["input_tokens"] + u["output_tokens"])
                    self.assertEqual(u["output_tokens_details"], {"reasoning_tokens": 0})
                    self.assertIn("cached_tokens", u["input_tokens_details"])
                    if choice["finish_reason"] == "length":
                        self.assertEqual(doc["status"], "incomplete")
                        self.assertEqual(doc["incomplete_details"], {"reason": "max_output_tokens"})
                        self.assertEqual(doc["output"][0]["status"], "incomplete")
                    else:
                        self.assertEqual(choice["finish_reason"], "stop")
                        self.assertEqual(doc["status"], "completed")
                        self.assertIsNone(doc["incomplete_details"])
                        self.assertEqual(doc["output"][0]["status"], "completed")
                    msg = doc["output"][0]
                    self.assertEqual((msg["type"], msg["role"]), ("message", "assistant"))
                    self.assertTrue(msg["id"].startswith("msg_"))

    def test_message_items_equal_the_chat_messages(self):
        items = [{"role": "developer", "content": "Answer in English."},
                 {"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "Hello there"}]},
                 {"role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
                 {"role": "user", "content": [{"type": "input_text", "text": "What"},
                                              {"type": "input_text", "text": "now?"}]}]
        for style, port in self.each():
            with self.subTest(style=style):
                # Text parts reach a chat backend joined with "\n", as vLLM joins them.
                ref = self.chat(port, [{"role": "developer", "content": "Answer in English."},
                                       {"role": "user", "content": "Hello there"},
                                       {"role": "assistant", "content": "Hi."},
                                       {"role": "user", "content": "What\nnow?"}],
                                max_tokens=6)
                doc = self.responses(port, {"input": items, "max_output_tokens": 6})
                self.assertEqual(output_text(doc), ref["choices"][0]["message"]["content"])
                self.assertEqual(doc["usage"]["input_tokens"], ref["usage"]["prompt_tokens"])

    def test_stream_events_carry_the_same_answer(self):
        for style, port in self.each():
            with self.subTest(style=style):
                for budget in (5, 200):
                    whole = self.responses(port, {"input": "Count the waves", "store": False,
                                                  "max_output_tokens": budget})
                    s = stream(port, "/v1/responses", {"model": MODEL, "input": "Count the waves",
                                                       "max_output_tokens": budget, "stream": True,
                                                       "store": False})
                    self.assertTrue(s.header("content-type").startswith("text/event-stream"))
                    docs = check_event_stream(self, s)
                    types = [d["type"] for d in docs]
                    deltas = [d for d in docs if d["type"] == "response.output_text.delta"]
                    self.assertGreater(len(deltas), 1, "streamed as it is generated")
                    text = "".join(d["delta"] for d in deltas)
                    self.assertEqual(text, output_text(whole))
                    item_id = deltas[0]["item_id"]
                    self.assertEqual(types[2:5], ["response.output_item.added",
                                                  "response.content_part.added",
                                                  "response.output_text.delta"])
                    self.assertEqual(types[-5:-1], ["response.output_text.delta",
                                                    "response.output_text.done",
                                                    "response.content_part.done",
                                                    "response.output_item.done"])
                    done = next(d for d in docs if d["type"] == "response.output_text.done")
                    self.assertEqual(done["text"], text)
                    self.assertEqual(done["item_id"], item_id)
                    part = next(d for d in docs if d["type"] == "response.content_part.done")
                    self.assertEqual(part["part"]["text"], text)
                    final = docs[-1]["response"]
                    expected = "response.incomplete" if whole["status"] == "incomplete" \
                        else "response.completed"
                    self.assertEqual(docs[-1]["type"], expected)
                    self.assertEqual(final["status"], whole["status"])
                    self.assertEqual(final["incomplete_details"], whole["incomplete_details"])
                    self.assertEqual(without_ids(final["output"]), without_ids(whole["output"]))
                    self.assertEqual(final["output"][0]["id"], item_id)
                    self.assertEqual(final["usage"], whole["usage"])
                    self.assertIsNone(docs[0]["response"]["usage"])
                    self.assertEqual(docs[0]["response"]["status"], "in_progress")
                    for d in deltas:
                        self.assertEqual((d["output_index"], d["content_index"]), (0, 0))

    def test_tool_call_then_its_result(self):
        for style, port in self.each():
            with self.subTest(style=style):
                doc = self.responses(port, {"input": "Weather in Paris?", "tools": [WEATHER_TOOL]})
                self.assertEqual(doc["status"], "completed")
                calls = [it for it in doc["output"] if it["type"] == "function_call"]
                self.assertEqual(len(calls), 1, doc["output"])
                call = calls[0]
                self.assertEqual(call["name"], "get_weather")
                self.assertEqual(json.loads(call["arguments"]), {"city": "ytic"})
                self.assertEqual(call["status"], "completed")
                self.assertTrue(call["id"].startswith("fc_"))
                self.assertTrue(call["call_id"])
                self.assertEqual(doc["tools"][0]["name"], "get_weather")
                # Streamed: the arguments in deltas, then done with the whole string.
                s = stream(port, "/v1/responses", {"model": MODEL, "input": "Weather in Paris?",
                                                   "tools": [WEATHER_TOOL], "stream": True})
                docs = check_event_stream(self, s)
                args = "".join(d["delta"] for d in docs
                               if d["type"] == "response.function_call_arguments.delta")
                done = next(d for d in docs if d["type"] == "response.function_call_arguments.done")
                self.assertEqual(done["arguments"], args)
                self.assertEqual(json.loads(args), {"city": "ytic"})
                added = next(d for d in docs if d["type"] == "response.output_item.added"
                             and d["item"]["type"] == "function_call")
                self.assertEqual(added["item"]["name"], "get_weather")
                self.assertEqual(added["item"]["arguments"], "")
                final_call = [it for it in docs[-1]["response"]["output"]
                              if it["type"] == "function_call"][0]
                self.assertEqual(final_call["arguments"], args)
                self.assertEqual(final_call["call_id"], added["item"]["call_id"])
                # The second turn: the call and its output go back; the backend saw the result.
                turn2 = self.responses(port, {"tools": [WEATHER_TOOL], "input": [
                    {"role": "user", "content": "Weather in Paris?"},
                    {"type": "function_call", "call_id": call["call_id"], "name": "get_weather",
                     "arguments": call["arguments"]},
                    {"type": "function_call_output", "call_id": call["call_id"],
                     "output": "18 degrees"}]})
                self.assertEqual(output_text(turn2), "tool said: 18 degrees")

    def test_reasoning_item(self):
        if not self.REASONING:
            self.skipTest("the backend has no reasoning output")
        hdrs = {"X-Emulator-Reasoning": "Waves come in sets."}
        for style, port in self.each():
            with self.subTest(style=style):
                doc = self.responses(port, {"input": "Why?", "max_output_tokens": 30}, hdrs)
                first = doc["output"][0]
                self.assertEqual(first["type"], "reasoning", doc["output"])
                self.assertTrue(first["id"].startswith("rs_"))
                self.assertEqual(first["summary"], [])
                self.assertEqual(first["content"],
                                 [{"type": "reasoning_text", "text": "Waves come in sets."}])
                self.assertEqual(doc["output"][1]["type"], "message")
                s = stream(port, "/v1/responses", {"model": MODEL, "input": "Why?",
                                                   "max_output_tokens": 30, "stream": True}, hdrs)
                docs = check_event_stream(self, s)
                text = "".join(d["delta"] for d in docs
                               if d["type"] == "response.reasoning_text.delta")
                self.assertEqual(text, "Waves come in sets.")
                final = docs[-1]["response"]["output"]
                self.assertEqual(final[0]["content"], first["content"])
                self.assertEqual(output_text(docs[-1]["response"]), output_text(doc))
                # The reasoning item's events come before the message's, each at its own index.
                added = [d for d in docs if d["type"] == "response.output_item.added"]
                self.assertEqual([(d["output_index"], d["item"]["type"]) for d in added],
                                 [(0, "reasoning"), (1, "message")])

    def test_reasoning_effort_is_the_backends_thinking_switch(self):
        if not self.THINKING_SWITCH:
            self.skipTest("the emulator of this dialect has no thinking switch")
        for style, port in self.each():
            with self.subTest(style=style):
                doc = self.responses(port, {"input": "Why?", "max_output_tokens": 5000,
                                            "reasoning": {"effort": "high"}})
                self.assertEqual(doc["output"][0]["type"], "reasoning", doc["output"])
                self.assertEqual(doc["output"][0]["content"][0]["text"], "Thinking about it.")
                self.assertEqual(doc["reasoning"]["effort"], "high")
                doc = self.responses(port, {"input": "Why?", "max_output_tokens": 5000,
                                            "reasoning": {"effort": "none"}})
                self.assertEqual([it["type"] for it in doc["output"]], ["message"])
                r = post_json(port, "/v1/responses", {"model": MODEL, "input": "Why?",
                                                      "reasoning": {"effort": "sometimes"}})
                self.assertEqual(r.status, 400, r.body[:300])
                self.assertEqual(r.json()["error"]["param"], "reasoning.effort")

    def test_previous_response_id_continues_the_conversation(self):
        for style, port in self.each():
            with self.subTest(style=style):
                first = self.responses(port, {"instructions": "Be brief.", "input": "Hello",
                                              "max_output_tokens": 4})
                second = self.responses(port, {"previous_response_id": first["id"],
                                               "input": "And then?", "max_output_tokens": 4})
                self.assertEqual(second["previous_response_id"], first["id"])
                # Instructions are not carried over (OpenAI's rule): the history is the items.
                ref = self.chat(port, [{"role": "user", "content": "Hello"},
                                       {"role": "assistant", "content": output_text(first)},
                                       {"role": "user", "content": "And then?"}], max_tokens=4)
                self.assertEqual(output_text(second), ref["choices"][0]["message"]["content"])
                self.assertEqual(second["usage"]["input_tokens"], ref["usage"]["prompt_tokens"])


class ResponsesOverVllm(_EmulatorBackend):
    DIALECT = "openai"


class ResponsesOverSglang(_EmulatorBackend):
    DIALECT = "sglang"


class ResponsesOverTgi(_EmulatorBackend):
    DIALECT = "tgi"
    REASONING = False

    def test_reasoning_effort_is_refused_unless_none(self):
        for style, port in self.each():
            with self.subTest(style=style):
                r = post_json(port, "/v1/responses", {"model": MODEL, "input": "Why?",
                                                      "reasoning": {"effort": "low"}})
                self.assertEqual(r.status, 400, r.body[:300])
                err = r.json()["error"]
                self.assertEqual(err["param"], "reasoning.effort")
                self.assertIn("TGI has no thinking switch", err["message"])
                self.responses(port, {"input": "Why?", "max_output_tokens": 3,
                                      "reasoning": {"effort": "none"}})


class ResponsesOverOllama(_EmulatorBackend):
    DIALECT = "ollama"
    THINKING_SWITCH = True  # think

    def test_a_setting_ollama_lacks_is_named_as_the_client_wrote_it(self):
        for style, port in self.each():
            with self.subTest(style=style):
                r = post_json(port, "/v1/responses", {"model": MODEL, "input": "x",
                                                      "text": {"verbosity": "low"}})
                self.assertEqual(r.status, 400, r.body[:300])
                err = r.json()["error"]
                self.assertEqual(err["param"], "text.verbosity")
                self.assertIn("'text.verbosity' cannot be carried to an Ollama backend",
                              err["message"])


class ResponsesOverLlamacpp(_EmulatorBackend):
    DIALECT = "llamacpp"


class ResponsesOverAnthropic(_EmulatorBackend):
    DIALECT = "anthropic"
    # The Messages API needs max_tokens: a request without a budget is sent 4096, which the
    # emulator's default context (4096) cannot hold with any prompt.
    EMULATOR_ARGS = ["--max-model-len", "32768"]
    THINKING_SWITCH = True  # thinking: {"type": "enabled", "budget_tokens"}

    def test_a_thinking_budget_must_fit_the_output_budget(self):
        for style, port in self.each():
            with self.subTest(style=style):
                r = post_json(port, "/v1/responses", {"model": MODEL, "input": "Why?",
                                                      "max_output_tokens": 100,
                                                      "reasoning": {"effort": "low"}})
                self.assertEqual(r.status, 400, r.body[:300])
                err = r.json()["error"]
                self.assertEqual(err["param"], "reasoning.effort")
                self.assertIn("1024", err["message"])
                self.assertIn("max_output_tokens", err["message"])


del _EmulatorBackend


# ---------------------------------------------------------------------------------------------
# A scripted vLLM: exactly what the bridge sends, and answers in every style a server writes.

ARGS = '{"city": "Paris", "unit": "\\u00b0C"}'  # as a model wrote it: spaces, an escape


def chat_answer(style_args: str = ARGS) -> dict:
    return {"id": "chatcmpl-9", "object": "chat.completion", "created": 7, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.",
                "reasoning_content": "The user wants weather.",
                "tool_calls": [{"id": "call_9", "type": "function",
                                "function": {"name": "get_weather",
                                             "arguments": style_args}}]}}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 13, "total_tokens": 34,
                      "prompt_tokens_details": {"cached_tokens": 16},
                      "completion_tokens_details": {"reasoning_tokens": 5}}}


def chat_chunks(finish: bool = True) -> list[dict]:
    base = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 7, "model": MODEL}

    def chunk(delta, finish_reason=None, usage=None):
        c = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])
        if usage is not None:
            c = dict(base, choices=[], usage=usage)
        return c
    out = [chunk({"role": "assistant", "content": ""}),
           chunk({"reasoning_content": "The user "}), chunk({"reasoning_content": "wants weather."}),
           chunk({"content": "Let "}), chunk({"content": "me look."}),
           chunk({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                                  "function": {"name": "get_weather", "arguments": ""}}]}),
           chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS[:9]}}]}),
           chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGS[9:]}}]})]
    if finish:
        out += [chunk({}, "tool_calls"),
                chunk(None, usage=chat_answer()["usage"])]
    return out


class ScriptedVllm(unittest.TestCase):
    ROUTE = "/v1/chat/completions"

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.reply = None

        def answer(req):
            return cls.reply(req)
        cls.backend.route("POST", cls.ROUTE, answer)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "openai", "--model", MODEL], model=MODEL)

    def sent(self) -> dict:
        return json.loads(self.backend.requests_to(self.ROUTE)[-1].body)

    def test_what_the_backend_is_sent(self):
        type(self).reply = staticmethod(lambda _r: json_reply(chat_answer()))
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        image = "data:image/png;base64,iVBORw0KGgo="
        body = {"model": MODEL, "instructions": "Be kind.", "max_output_tokens": 50,
                "temperature": 0.5, "top_p": 0.9, "user": "u-1", "parallel_tool_calls": False,
                "metadata": {"team": "a"}, "store": False,
                "tools": [dict(WEATHER_TOOL, strict=True)],
                "tool_choice": {"type": "function", "name": "get_weather"},
                "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema,
                                    "strict": True}},
                "reasoning": {"effort": "low"},
                "input": [
                    {"role": "user", "content": [
                        {"type": "input_text", "text": "What is this?"},
                        {"type": "input_image", "image_url": image, "detail": "low"}]},
                    {"type": "reasoning", "id": "rs_1", "summary": [],
                     "content": [{"type": "reasoning_text", "text": "Look at it."}]},
                    {"type": "message", "role": "assistant", "id": "msg_1",
                     "content": [{"type": "output_text", "text": "A cat."}]},
                    {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                     "name": "get_weather", "arguments": ARGS},
                    {"type": "function_call_output", "call_id": "call_1", "output": "18C"}]}
        r = post_json(self.proxy.port, "/v1/responses", body)
        self.assertEqual(r.status, 200, r.body[:400])
        sent = self.sent()
        self.assertEqual(sent["model"], MODEL)
        self.assertEqual(sent["messages"], [
            {"role": "system", "content": "Be kind."},
            {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                         {"type": "image_url",
                                          "image_url": {"url": image, "detail": "low"}}]},
            {"role": "assistant", "content": "A cat.", "reasoning_content": "Look at it.",
             "tool_calls": [{"id": "call_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": ARGS}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"}])
        # The arguments string byte for byte.
        self.assertIn(json.dumps(ARGS).encode(), self.backend.requests_to(self.ROUTE)[-1].body)
        self.assertEqual(sent["tools"], [{"type": "function", "function": {
            "name": "get_weather", "description": "The weather now",
            "parameters": WEATHER_TOOL["parameters"], "strict": True}}])
        self.assertEqual(sent["tool_choice"], {"type": "function",
                                               "function": {"name": "get_weather"}})
        self.assertEqual(sent["response_format"], {"type": "json_schema", "json_schema": {
            "name": "answer", "schema": schema, "strict": True}})
        self.assertEqual(sent["reasoning_effort"], "low")
        self.assertEqual(sent.get("max_completion_tokens", sent.get("max_tokens")), 50)
        self.assertEqual((sent["temperature"], sent["top_p"], sent["user"],
                          sent["parallel_tool_calls"]), (0.5, 0.9, "u-1", False))
        self.assertNotIn("stream", sent)
        for k in ("input", "instructions", "text", "reasoning", "metadata", "store",
                  "max_output_tokens"):
            self.assertNotIn(k, sent)
        doc = r.json()
        # What the client sent comes back in the response object.
        self.assertEqual(doc["metadata"], {"team": "a"})
        self.assertEqual((doc["temperature"], doc["top_p"], doc["user"]), (0.5, 0.9, "u-1"))
        self.assertFalse(doc["parallel_tool_calls"])
        self.assertFalse(doc["store"])
        self.assertEqual(doc["text"]["format"]["name"], "answer")
        self.assertEqual(doc["reasoning"]["effort"], "low")
        self.assertEqual(doc["tool_choice"], {"type": "function", "name": "get_weather"})
        # Streamed. This backend is not identified as a server known to take stream_options (it
        # answers no probe), so it is not sent any (pairing.hpp, accepts_stream_options).
        type(self).reply = staticmethod(lambda _r: sse_reply(
            [json.dumps(c) for c in chat_chunks()] + ["[DONE]"]))
        stream(self.proxy.port, "/v1/responses", dict(body, stream=True))
        sent = self.sent()
        self.assertTrue(sent["stream"])
        self.assertNotIn("stream_options", sent)

    def expected_items(self, doc: dict) -> None:
        out = doc["output"]
        self.assertEqual([it["type"] for it in out], ["reasoning", "message", "function_call"])
        self.assertEqual(out[0]["content"], [{"type": "reasoning_text",
                                              "text": "The user wants weather."}])
        self.assertEqual(output_text(doc), "Let me look.")
        self.assertEqual((out[2]["call_id"], out[2]["name"], out[2]["arguments"]),
                         ("call_9", "get_weather", ARGS))
        self.assertEqual(doc["status"], "completed")
        self.assertEqual(doc["usage"], {
            "input_tokens": 21, "input_tokens_details": {"cached_tokens": 16},
            "output_tokens": 13, "output_tokens_details": {"reasoning_tokens": 5},
            "total_tokens": 34})

    def test_a_whole_answer_in_every_json_style(self):
        for style in ("compact", "spaced", "pretty", "ascii"):
            with self.subTest(style=style):
                type(self).reply = staticmethod(
                    lambda _r, s=style: json_reply(chat_answer(), style=s))
                r = post_json(self.proxy.port, "/v1/responses",
                              {"model": MODEL, "input": "Weather?", "tools": [WEATHER_TOOL]})
                self.assertEqual(r.status, 200, r.body[:400])
                self.expected_items(r.json())

    def test_a_stream_in_every_wire_style(self):
        styles = {"plain": {}, "crlf": {"crlf": True}, "nospace": {"space": False},
                  "comments": {"comments": True, "ids": True, "retry": True},
                  "split": {"split": 3}, "no-final-blank": {"last_blank": False}}
        seen = None
        for name, kw in styles.items():
            with self.subTest(style=name):
                payloads = [dumps(c, "spaced" if name == "plain" else "compact")
                            for c in chat_chunks()] + ["[DONE]"]
                type(self).reply = staticmethod(lambda _r, p=payloads, k=kw: sse_reply(p, **k))
                s = stream(self.proxy.port, "/v1/responses",
                           {"model": MODEL, "input": "Weather?", "stream": True,
                            "tools": [WEATHER_TOOL]})
                docs = check_event_stream(self, s)
                self.expected_items(docs[-1]["response"])
                types = [d["type"] for d in docs]
                self.assertEqual(types, [
                    "response.created", "response.in_progress",
                    "response.output_item.added", "response.content_part.added",
                    "response.reasoning_text.delta", "response.reasoning_text.delta",
                    "response.reasoning_text.done", "response.content_part.done",
                    "response.output_item.done",
                    "response.output_item.added", "response.content_part.added",
                    "response.output_text.delta", "response.output_text.delta",
                    "response.output_text.done", "response.content_part.done",
                    "response.output_item.done",
                    "response.output_item.added",
                    "response.function_call_arguments.delta",
                    "response.function_call_arguments.delta",
                    "response.function_call_arguments.done",
                    "response.output_item.done", "response.completed"])
                # The same events whatever the backend's bytes (ids and times aside).
                shape = [{k: v for k, v in d.items() if k not in ("response", "item_id", "item")}
                         for d in docs]
                if seen is None:
                    seen = shape
                self.assertEqual(shape, seen)

    def test_a_stream_that_breaks_midway_ends_failed(self):
        payloads = [json.dumps(c) for c in chat_chunks(finish=False)]
        type(self).reply = staticmethod(lambda _r: sse_reply(payloads, chunked=False))
        s = stream(self.proxy.port, "/v1/responses",
                   {"model": MODEL, "input": "Weather?", "stream": True})
        docs = [ev.json() for ev in s.events]
        self.assertEqual([d["sequence_number"] for d in docs], list(range(len(docs))))
        types = [d["type"] for d in docs]
        self.assertEqual(types[-1], "response.failed")
        self.assertEqual(types.count("error"), 1)
        at = types.index("error")
        self.assertGreater(at, max(i for i, t in enumerate(types) if t.endswith(".delta")))
        # After the error: the open items closed, then response.failed.
        self.assertTrue(all(t.endswith(".done") for t in types[at + 1:-1]), types[at:])
        self.assertTrue(docs[at]["message"])
        failed = docs[-1]["response"]
        self.assertEqual(failed["status"], "failed")
        self.assertTrue(failed["error"]["message"])
        self.assertTrue(failed["error"]["code"])
        # What had arrived is in the items, not lost.
        self.assertIn("Let me look.", json.dumps(failed["output"]))

    def test_a_backend_error_in_the_clients_shape(self):
        type(self).reply = staticmethod(lambda _r: json_reply(
            {"object": "error", "message": "This model's maximum context length is 4096 "
             "tokens.", "type": "BadRequestError", "param": None, "code": 400}, status=400))
        for streaming in (False, True):
            with self.subTest(stream=streaming):
                r = open_stream(self.proxy.port, "/v1/responses",
                                {"model": MODEL, "input": "x", "stream": streaming})
                self.assertEqual(r.status, 400)
                err = r.json()["error"]
                self.assertIn("maximum context length", err["message"])
                self.assertIn("type", err)
        type(self).reply = staticmethod(lambda _r: json_reply({"detail": "boom"}, status=500))
        r = post_json(self.proxy.port, "/v1/responses", {"model": MODEL, "input": "x"})
        self.assertIn(r.status, (500, 502), r.body[:300])
        self.assertIn("message", r.json()["error"])


class ScriptedLlamacpp(unittest.TestCase):
    """llama-server's chat route ignores response_format's json_schema (found against the real
    engine, test_real_engine.TestRealEngineResponses): it is sent its own json_schema too."""

    def test_text_format_reaches_llamacpp_as_its_json_schema(self):
        backend = ScriptedBackend()
        self.addCleanup(backend.stop)
        backend.route("POST", "/v1/chat/completions", lambda _r: json_reply(chat_answer()))
        proxy = Proxy(["--upstream", backend.url, "--upstream-dialect", "llamacpp", "--model",
                       MODEL], model=MODEL)
        self.addCleanup(proxy.stop)
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        for fmt, expected in (
                ({"type": "json_schema", "name": "w", "schema": schema}, schema),
                ({"type": "json_object"}, {"type": "object"})):
            with self.subTest(format=fmt["type"]):
                r = post_json(proxy.port, "/v1/responses",
                              {"model": MODEL, "input": "x", "text": {"format": fmt}})
                self.assertEqual(r.status, 200, r.body[:300])
                sent = backend.requests_to("/v1/chat/completions")[-1].json()
                self.assertEqual(sent["json_schema"], expected)
                self.assertEqual(sent["response_format"]["type"], fmt["type"])
        # reasoning.effort: llama.cpp's own effort (builds from b10434 read it), as it is.
        for effort in ("high", "none"):
            with self.subTest(effort=effort):
                r = post_json(proxy.port, "/v1/responses",
                              {"model": MODEL, "input": "x", "reasoning": {"effort": effort}})
                self.assertEqual(r.status, 200, r.body[:300])
                sent = backend.requests_to("/v1/chat/completions")[-1].json()
                self.assertEqual(sent["reasoning_effort"], effort)
                self.assertNotIn("chat_template_kwargs", sent)


# ---------------------------------------------------------------------------------------------
# The store: previous_response_id, item_reference, GET / DELETE, input_items, its limits.

class Store(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)
        cls.proxy = start(cls, Proxy, ["--access-log", "stderr"], model=MODEL, config_yaml=(
            f"backends:\n  - {{name: vllm, url: '{cls.emu.url}'}}\n"
            f"responses: {{store: {{max_entries: 3}}}}\n"))
        cls.port = cls.proxy.port

    def create(self, body: dict) -> dict:
        r = post_json(self.port, "/v1/responses", {"model": MODEL, "max_output_tokens": 3,
                                                   **body})
        self.assertEqual(r.status, 200, r.body[:400])
        return r.json()

    def get(self, path: str):
        return request(self.port, "GET", path)

    def test_get_returns_the_answer_and_delete_forgets_it(self):
        doc = self.create({"input": "Hello", "metadata": {"k": "v"}})
        self.assertTrue(doc["store"])
        r = self.get(f"/v1/responses/{doc['id']}")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), doc)
        r = request(self.port, "DELETE", f"/v1/responses/{doc['id']}")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), {"id": doc["id"], "object": "response", "deleted": True})
        for method in ("GET", "DELETE"):
            r = request(self.port, method, f"/v1/responses/{doc['id']}")
            self.assertEqual(r.status, 404)
            self.assertEqual(r.json()["error"]["param"], "response_id")
        r = post_json(self.port, "/v1/responses", {"model": MODEL, "input": "again",
                                                   "previous_response_id": doc["id"]})
        self.assertEqual(r.status, 400)
        err = r.json()["error"]
        self.assertEqual((err["param"], err["code"]),
                         ("previous_response_id", "previous_response_not_found"))

    def test_a_streamed_answer_is_stored_as_its_final_event(self):
        s = stream(self.port, "/v1/responses", {"model": MODEL, "input": "Hello",
                                                "max_output_tokens": 3, "stream": True})
        final = s.events[-1].json()["response"]
        r = self.get(f"/v1/responses/{final['id']}")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), final)

    def test_store_false_is_not_kept(self):
        doc = self.create({"input": "Hello", "store": False})
        self.assertFalse(doc["store"])
        self.assertEqual(self.get(f"/v1/responses/{doc['id']}").status, 404)

    def test_input_items_pages(self):
        items = [{"type": "message", "role": "user", "id": f"msg_in{i}",
                  "content": [{"type": "input_text", "text": f"part {i}"}]} for i in range(5)]
        doc = self.create({"input": items})
        base = f"/v1/responses/{doc['id']}/input_items"
        r = self.get(base)
        self.assertEqual(r.status, 200)
        page = r.json()
        self.assertEqual(page["object"], "list")
        self.assertEqual([it["id"] for it in page["data"]],
                         ["msg_in4", "msg_in3", "msg_in2", "msg_in1", "msg_in0"])
        self.assertEqual((page["first_id"], page["last_id"], page["has_more"]),
                         ("msg_in4", "msg_in0", False))
        self.assertEqual(page["data"][0]["content"], items[4]["content"])
        page = self.get(base + "?order=asc&limit=2").json()
        self.assertEqual([it["id"] for it in page["data"]], ["msg_in0", "msg_in1"])
        self.assertTrue(page["has_more"])
        page = self.get(base + "?order=asc&limit=2&after=msg_in1").json()
        self.assertEqual([it["id"] for it in page["data"]], ["msg_in2", "msg_in3"])
        page = self.get(base + "?order=asc&after=msg_in3").json()
        self.assertEqual([it["id"] for it in page["data"]], ["msg_in4"])
        self.assertFalse(page["has_more"])
        for q, param in (("?limit=0", "limit"), ("?limit=101", "limit"), ("?order=up", "order")):
            r = self.get(base + q)
            self.assertEqual(r.status, 400, q)
            self.assertEqual(r.json()["error"]["param"], param)
        r = request(self.port, "DELETE", base)
        self.assertEqual(r.status, 405)
        self.assertEqual(r.header("allow"), "GET, HEAD, OPTIONS")

    def test_item_reference_resolves_a_stored_item(self):
        tools = [WEATHER_TOOL]
        first = self.create({"input": "Weather?", "tools": tools, "max_output_tokens": 50})
        call = first["output"][0]
        self.assertEqual(call["type"], "function_call")
        second = self.create({"tools": tools, "max_output_tokens": 50, "input": [
            {"role": "user", "content": "Weather?"},
            {"type": "item_reference", "id": call["id"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}]})
        self.assertEqual(output_text(second), "tool said: sunny")
        r = post_json(self.port, "/v1/responses", {"model": MODEL, "input": [
            {"type": "item_reference", "id": "fc_nope"}]})
        self.assertEqual(r.status, 400)
        err = r.json()["error"]
        self.assertEqual((err["param"], err["code"]), ("input[0].id", "item_not_found"))

    def test_the_oldest_turns_go_past_max_entries(self):
        ids = [self.create({"input": f"turn {i}"})["id"] for i in range(4)]
        self.assertEqual(self.get(f"/v1/responses/{ids[0]}").status, 404)
        for rid in ids[1:]:
            self.assertEqual(self.get(f"/v1/responses/{rid}").status, 200)

    def test_metrics_and_access_log_as_for_chat(self):
        self.create({"input": "count me"})
        body = request(self.port, "GET", "/metrics").body.decode()
        self.assertRegex(body, r'infergate_requests_total\{[^}]*route="openai_responses"'
                               r'[^}]*outcome="ok"[^}]*\} [1-9]')
        self.assertRegex(body, r'infergate_completion_tokens_total\{[^}]*'
                               r'route="openai_responses"[^}]*\} [1-9]')
        self.assertRegex(body, r'gen_ai_operation_name="chat"[^}]*route="openai_responses"|'
                               r'route="openai_responses"[^}]*gen_ai_operation_name="chat"')
        lines = [json.loads(l) for l in self.proxy.stderr_text().splitlines()
                 if l.startswith("{") and "/v1/responses" in l]
        self.assertTrue(lines)
        self.assertTrue(any(l.get("route") == "openai_responses" or
                            l.get("path") == "/v1/responses" for l in lines), lines[-1])


class StoreOff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "ollama", MODEL)
        cls.proxy = start(cls, Proxy, ["--access-log", "off"], model=MODEL + ":latest",
                          config_yaml=(
            f"backends:\n  - {{name: ol, url: '{cls.emu.url}', dialect: ollama}}\n"
            f"responses: {{store: {{max_entries: 0}}}}\n"))

    def test_nothing_is_kept_and_the_answer_says_so(self):
        r = post_json(self.proxy.port, "/v1/responses", {"model": MODEL, "input": "Hi",
                                                         "max_output_tokens": 2})
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        self.assertFalse(doc["store"])
        self.assertEqual(request(self.proxy.port, "GET", f"/v1/responses/{doc['id']}").status,
                         404)
        r = post_json(self.proxy.port, "/v1/responses", {"model": MODEL, "input": "Hi",
                                                         "previous_response_id": doc["id"]})
        self.assertEqual(r.status, 400)
        self.assertIn("max_entries", r.json()["error"]["message"])


# ---------------------------------------------------------------------------------------------
# Refusals: the Responses API's own 400s, naming the field.

class Refusals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--upstream-dialect", "openai",
                                       "--model", MODEL, "--access-log", "off"], model=MODEL)

    def test_each_refusal_names_its_field(self):
        cases = [
            ({"input": "x", "frobnicate": 1}, "frobnicate", "unknown_parameter"),
            ({"input": "x", "background": True}, "background", None),
            ({"input": "x", "truncation": "auto"}, "truncation", None),
            ({"input": "x", "max_tool_calls": 2}, "max_tool_calls", None),
            ({"input": "x", "prompt": {"id": "pmpt_1"}}, "prompt", None),
            ({"input": "x", "conversation": "conv_1"}, "conversation", None),
            ({"input": "x", "include": ["file_search_call.results"]}, "include", None),
            ({"input": 5}, "input", None),
            ({}, "input", None),
            ({"input": [{"role": "user", "content": [{"type": "input_file",
                                                      "file_id": "file_1"}]}]},
             "input[0].content[0].type", None),
            ({"input": "x", "max_output_tokens": 0}, "max_output_tokens", None),
        ]
        for body, param, code in cases:
            with self.subTest(param=param):
                r = post_json(self.proxy.port, "/v1/responses", {"model": MODEL, **body})
                self.assertEqual(r.status, 400, r.body[:300])
                err = r.json()["error"]
                self.assertEqual(err["param"], param, err)
                self.assertEqual(err["type"], "invalid_request_error")
                self.assertIn(param.split("[")[0].split(".")[0], err["message"])
                if code:
                    self.assertEqual(err["code"], code)
        # Nothing reached the backend: it has had no POST in this class (only the proxy's
        # probes and health checks, which may be logged at any time).
        self.assertEqual([l for l in self.emu.request_log() if l.startswith("POST ")], [])

    def test_an_unknown_model_and_bad_json(self):
        r = post_json(self.proxy.port, "/v1/responses", {"model": "nope", "input": "x"})
        self.assertEqual(r.status, 404, r.body[:300])
        self.assertIn("nope", r.json()["error"]["message"])
        r = request(self.proxy.port, "POST", "/v1/responses", b"{not json",
                    headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400)
        self.assertIn("error", r.json())


class StorePerClientKey(unittest.TestCase):
    """With client keys (auth:), a stored turn belongs to the key that made it: to another key it
    does not exist (GET, DELETE, input_items, previous_response_id, item_reference), as OpenAI
    scopes stored responses to a project."""

    KEY_A = "sk-resp-a-0123456789abcdef"
    KEY_B = "sk-resp-b-0123456789abcdef"

    @classmethod
    def setUpClass(cls):
        path = keys_file(f"- name: a\n  key: {cls.KEY_A}\n- name: b\n  key: {cls.KEY_B}\n")
        cls.addClassCleanup(os.unlink, path)
        cls.emu = start(cls, Emulator, "openai", MODEL)
        cls.proxy = start(cls, Proxy, ["--access-log", "off"], wait_ready=False, config_yaml=(
            f"auth:\n  keys_file: {path}\n"
            f"backends:\n  - {{url: '{cls.emu.url}', dialect: openai, model: {MODEL}}}\n"))

    def as_key(self, key: str) -> dict:
        return {"Authorization": f"Bearer {key}"}

    def test_another_key_cannot_see_a_turn(self):
        a, b = self.as_key(self.KEY_A), self.as_key(self.KEY_B)
        r = post_json(self.proxy.port, "/v1/responses",
                      {"model": MODEL, "input": "secret plans", "max_output_tokens": 3}, a)
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        rid, item = doc["id"], doc["output"][0]["id"]
        for method, path in (("GET", f"/v1/responses/{rid}"),
                             ("GET", f"/v1/responses/{rid}/input_items"),
                             ("DELETE", f"/v1/responses/{rid}")):
            with self.subTest(method=method, path=path):
                self.assertEqual(request(self.proxy.port, method, path, headers=b).status, 404)
        r = post_json(self.proxy.port, "/v1/responses",
                      {"model": MODEL, "input": "go on", "previous_response_id": rid}, b)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], "previous_response_not_found")
        r = post_json(self.proxy.port, "/v1/responses",
                      {"model": MODEL, "input": [{"type": "item_reference", "id": item}]}, b)
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], "item_not_found")
        # The key that made it still has it all.
        self.assertEqual(request(self.proxy.port, "GET", f"/v1/responses/{rid}",
                                 headers=a).json(), doc)
        r = post_json(self.proxy.port, "/v1/responses",
                      {"model": MODEL, "input": "go on", "previous_response_id": rid,
                       "max_output_tokens": 3}, a)
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(request(self.proxy.port, "DELETE", f"/v1/responses/{rid}",
                                 headers=a).status, 200)
