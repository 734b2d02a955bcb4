"""Assertions shared by the integration tests: SSE framing and the per-dialect stream rules."""

from __future__ import annotations

import re
from typing import Any

from harness import Ref, Response, Stream, strict_framing_problem


class StreamChecks:
    """Mixin for unittest.TestCase."""

    # ---- framing and headers -----------------------------------------------------------------

    def assert_sse(self, s: Stream) -> None:
        self.assertTrue((s.header("content-type") or "").startswith("text/event-stream"),
                        s.headers)
        self.assertEqual(s.header("cache-control"), "no-cache", s.headers)
        self.assertEqual(s.header("x-accel-buffering"), "no", s.headers)
        problem = strict_framing_problem(bytes(s.raw))
        self.assertIsNone(problem, f"{problem}\nwhole stream: {bytes(s.raw)[:3000]!r}")
        self.assertTrue(s.events, "empty stream")
        self.assertTrue(s.events[-1].done,
                        f"last event is not [DONE]: {s.events[-1].data[:300]}")
        self.assertEqual(sum(1 for e in s.events if e.done), 1, "more than one [DONE]")

    def json_events(self, s: Stream) -> list[dict]:
        return [e.json() for e in s.events if not e.done]

    # ---- SGLang native client ----------------------------------------------------------------

    def check_sglang_stream(self, s: Stream, batch: bool = False) -> dict[int, dict]:
        """Checks an SGLang /generate stream; returns the last event of every index."""
        self.assert_sse(s)
        last: dict[int, dict] = {}
        finished: set[int] = set()
        for doc in self.json_events(s):
            self.assertNotIn("error", doc, f"unexpected in-band error: {doc}")
            self.assertNotIn("model", doc, "SGLang /generate events carry no model")
            self.assertIsInstance(doc.get("text"), str, doc)
            if batch:
                self.assertIn("index", doc, f"batch event without index: {doc}")
                idx = doc["index"]
            else:
                self.assertNotIn("index", doc, f"single-prompt event with an index: {doc}")
                idx = 0
            self.assertNotIn(idx, finished, f"event for index {idx} after its finish: {doc}")
            mi = doc["meta_info"]
            for key in ("id", "prompt_tokens", "completion_tokens", "finish_reason"):
                self.assertIn(key, mi, f"meta_info without {key}: {doc}")
            prev = last.get(idx)
            if prev is not None:
                pt = prev["text"]
                self.assertTrue(doc["text"].startswith(pt),
                                f"index {idx}: text is not cumulative: {pt!r} -> {doc['text']!r}")
                self.assertGreaterEqual(mi["completion_tokens"],
                                        prev["meta_info"]["completion_tokens"],
                                        f"index {idx}: completion_tokens went down")
                self.assertEqual(mi["prompt_tokens"], prev["meta_info"]["prompt_tokens"])
                self.assertEqual(mi["id"], prev["meta_info"]["id"], "meta_info.id changed")
            if mi["finish_reason"] is not None:
                finished.add(idx)
            last[idx] = doc
        self.assertEqual(finished, set(last), "some index never got a finish_reason")
        return last

    def assert_sglang_item(self, item: dict, ref: Ref, where: str = "") -> None:
        mi = item["meta_info"]
        self.assertEqual(item["text"], ref.text, f"{where} text")
        self.assertEqual(mi["prompt_tokens"], ref.prompt_tokens, f"{where} prompt_tokens")
        self.assertEqual(mi["completion_tokens"], ref.completion_tokens,
                         f"{where} completion_tokens")
        fr = mi["finish_reason"]
        if ref.finish == "length":
            self.assertEqual(fr, {"type": "length", "length": ref.matched}, f"{where} finish")
        elif ref.matched is None:
            # An OpenAI backend does not say which EOS token ended the text.
            self.assertIsInstance(fr, dict, where)
            self.assertEqual(fr.get("type"), "stop", f"{where} finish {fr}")
        else:
            self.assertEqual(fr, {"type": "stop", "matched": ref.matched}, f"{where} finish")

    # ---- OpenAI client -----------------------------------------------------------------------

    def check_openai_stream(self, s: Stream, chat: bool, model: str, include_usage: bool):
        """Checks an OpenAI stream; returns (text per index, finish per index, usage or None)."""
        self.assert_sse(s)
        docs = self.json_events(s)
        self.assertTrue(docs, "no chunks before [DONE]")
        texts: dict[int, str] = {}
        finishes: dict[int, str] = {}
        usage = None
        ids = set()
        for pos, doc in enumerate(docs):
            self.assertNotIn("error", doc, f"unexpected in-band error: {doc}")
            self.assertEqual(doc.get("object"),
                             "chat.completion.chunk" if chat else "text_completion", doc)
            self.assertEqual(doc.get("model"), model, doc)
            self.assertIsInstance(doc.get("created"), int, doc)
            ids.add(doc.get("id"))
            choices = doc.get("choices")
            self.assertIsInstance(choices, list, doc)
            if not choices:
                self.assertTrue(include_usage, f"usage chunk the client did not ask for: {doc}")
                self.assertIsNone(usage, "two usage chunks")
                self.assertEqual(pos, len(docs) - 1, "the usage chunk is not the last chunk")
                usage = doc.get("usage")
                self.assertIsInstance(usage, dict, doc)
                continue
            self.assertIsNone(doc.get("usage"), f"usage on a choice chunk: {doc}")
            for ch in choices:
                idx = ch["index"]
                self.assertNotIn(idx, finishes, f"chunk for index {idx} after its finish: {doc}")
                if chat:
                    delta = ch["delta"]
                    if idx not in texts:
                        self.assertEqual(delta.get("role"), "assistant",
                                         f"first chunk of choice {idx} has no role: {doc}")
                    else:
                        self.assertIsNone(delta.get("role"), f"role repeated: {doc}")
                    piece = delta.get("content") or ""
                else:
                    piece = ch["text"]
                texts[idx] = texts.get(idx, "") + piece
                if ch.get("finish_reason") is not None:
                    finishes[idx] = ch["finish_reason"]
        self.assertEqual(len(ids), 1, f"chunk ids differ: {ids}")
        (the_id,) = ids
        self.assertTrue(isinstance(the_id, str) and the_id, f"bad chunk id {the_id!r}")
        self.assertEqual(set(finishes), set(texts), "a choice without exactly one finish")
        if include_usage:
            self.assertIsNotNone(usage, "asked for include_usage but got no usage chunk")
        return texts, finishes, usage

    def assert_usage(self, usage: dict, prompt: int, completion: int) -> None:
        self.assertEqual(
            {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
            {"prompt_tokens": prompt, "completion_tokens": completion,
             "total_tokens": prompt + completion}, usage)

    # ---- errors ------------------------------------------------------------------------------

    def assert_openai_error(self, r: Response, status: int, *needles: str) -> dict:
        self.assertEqual(r.status, status, r.body[:500])
        self.assertTrue((r.header("content-type") or "").startswith("application/json"),
                        r.headers)
        doc = r.json()
        self.assertEqual(set(doc), {"error"}, doc)
        err = doc["error"]
        self.assertIsInstance(err, dict, doc)
        for key in ("message", "type", "param", "code"):
            self.assertIn(key, err, f"OpenAI error without '{key}': {doc}")
        self.assertIsInstance(err["message"], str)
        self.assertTrue(err["message"], "empty message")
        self.assertIsInstance(err["type"], str)
        self.assertTrue(err["param"] is None or isinstance(err["param"], str), err)
        self.assertTrue(err["code"] is None or isinstance(err["code"], (str, int)), err)
        for n in needles:
            self.assert_mentions(err["message"], n)
        return err

    def assert_generate_error(self, r: Response, status: int, *needles: str) -> dict:
        self.assertEqual(r.status, status, r.body[:500])
        self.assertTrue((r.header("content-type") or "").startswith("application/json"),
                        r.headers)
        doc = r.json()
        self.assertEqual(set(doc), {"error"}, doc)
        err = doc["error"]
        self.assertIsInstance(err, dict, doc)
        self.assertIsInstance(err.get("message"), str, doc)
        self.assertTrue(err["message"], "empty message")
        for n in needles:
            self.assert_mentions(err["message"], n)
        return err

    def assert_error_for(self, path: str, r: Response, status: int, *needles: str) -> dict:
        if path == "/generate":
            return self.assert_generate_error(r, status, *needles)
        return self.assert_openai_error(r, status, *needles)

    def assert_mentions(self, message: str, needle: str) -> None:
        """`needle` is a regex (case-insensitive) the message must contain."""
        self.assertTrue(re.search(needle, message, re.I),
                        f"message does not mention /{needle}/: {message!r}")

    def inband_error(self, s: Stream) -> dict:
        """The stream must end with data: {"error": {...}} then data: [DONE]; returns the error."""
        self.assert_sse(s)
        docs = self.json_events(s)
        self.assertTrue(docs, "no events before [DONE]")
        last = docs[-1]
        self.assertIn("error", last, f"stream did not end with an in-band error: {docs[-3:]}")
        err = last["error"]
        self.assertIsInstance(err, dict, last)
        self.assertIsInstance(err.get("message"), str, last)
        self.assertTrue(err["message"], "empty message")
        for doc in docs[:-1]:
            self.assertNotIn("error", doc, "more than one error event")
        return err


def prompt_key(path: str) -> str:
    return {"/generate": "text", "/v1/completions": "prompt"}.get(path, "messages")


def make_body(path: str, prompt: str, max_tokens: int, model: str | None,
              stream: bool = False, extra: dict[str, Any] | None = None) -> dict:
    """A minimal generation request in the dialect of `path`."""
    if path == "/generate":
        body: dict[str, Any] = {"text": prompt, "sampling_params": {"max_new_tokens": max_tokens}}
    elif path == "/v1/completions":
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens}
    else:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens}
    if stream:
        body["stream"] = True
    body.update(extra or {})
    return body


def text_of(path: str, doc: Any) -> str:
    """The generated text of a non-streaming answer in the dialect of `path`."""
    if path == "/generate":
        return doc["text"]
    if path == "/v1/completions":
        return doc["choices"][0]["text"]
    return doc["choices"][0]["message"]["content"]


def stream_text(path: str, docs: list[dict]) -> str:
    """The text of a (valid) stream of `path`'s dialect, index 0."""
    if path == "/generate":
        texts = [d["text"] for d in docs if "text" in d]
        return texts[-1] if texts else ""
    out = ""
    for d in docs:
        for ch in d.get("choices", []):
            if ch.get("index", 0) != 0:
                continue
            out += ch["text"] if path == "/v1/completions" else (
                ch["delta"].get("content") or "")
    return out


def reference_text(emu, path: str, prompt: str, max_tokens: int,
                   headers: dict[str, str] | None = None) -> str:
    """What the backend itself generates for make_body(path, prompt, max_tokens, ...)."""
    from harness import direct_chat, direct_raw
    if path == "/v1/chat/completions":
        doc = direct_chat(emu, [{"role": "user", "content": prompt}], max_tokens,
                          headers=headers)
        return doc["choices"][0]["message"]["content"]
    return direct_raw(emu, prompt, max_tokens, headers=headers)[0].text
