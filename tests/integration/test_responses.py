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
import re
import unittest
from typing import Any

from harness import (OTHER_WIRE_STYLE, Emulator, Proxy, Stream, open_stream, post_json,
                     request, start, stream)
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


class ResponsesOverOllama(_EmulatorBackend):
    DIALECT = "ollama"


class ResponsesOverLlamacpp(_EmulatorBackend):
    DIALECT = "llamacpp"


class ResponsesOverAnthropic(_EmulatorBackend):
    DIALECT = "anthropic"
    # The Messages API needs max_tokens: a request without a budget is sent 4096, which the
    # emulator's default context (4096) cannot hold with any prompt.
    EMULATOR_ARGS = ["--max-model-len", "32768"]


del _EmulatorBackend
