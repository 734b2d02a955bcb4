"""Every cell of the front x back dialect matrix, with the real binaries on port 0.

Backends (one test class each, one emulator + one proxy per class, the dialect auto-detected;
vLLM's demo server, which has no fingerprint, configured): openai (vLLM), sglang, tgi, ollama,
llamacpp, vllm_legacy, anthropic.

Fronts (subTests inside each class): SGLang /generate, OpenAI /v1/completions, OpenAI
/v1/chat/completions, TGI /generate + /generate_stream, TGI POST /, vLLM legacy /generate,
Ollama /api/generate (templated, and raw: true), Ollama /api/chat, llama.cpp /completion,
Anthropic /v1/messages.

The reference for every cell is the backend emulator itself, asked directly in its OWN dialect
with the request the proxy should have sent (chat vs raw, and for an Ollama backend its
template: a templated /api/generate client is compared with the backend's templated
/api/generate, a chat client with /api/chat). Text must be equal byte for byte; token counts and
the finish reason must be the backend's, spelled in the client's vocabulary, wherever both
dialects carry them (vLLM's legacy demo server carries neither, so behind it only the text is
compared). Each cell runs twice per finish (budget reached, and EOS via X-Emulator-Eos-After),
whole and streamed, with the client dialect's wire framing checked exactly.
"""

from __future__ import annotations

import json
import re
import unittest
from dataclasses import dataclass
from typing import Any, Callable

from harness import OTHER_WIRE_STYLE, Emulator, Proxy, Response, request, start, wait_until

ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}
LENGTH_BUDGET = 5          # the "length" case: the budget ends the text
EOS_BUDGET, EOS_AFTER = 9, 3  # the "stop" case: EOS after 3 words (4 tokens, EOS counted)


@dataclass
class Outcome:
    """One answer, normalised: what the client was told (None: its dialect does not say)."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish: str | None  # "length" | "stop" | None


@dataclass
class Input:
    """What a front sends: a raw prompt, or a system + user turn."""

    prompt: str = ""
    system: str | None = None
    user: str = ""

    def messages(self) -> list[dict]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": self.user}]


# =============================================================================================
# Wire helpers
# =============================================================================================

def sse_blocks(tc: unittest.TestCase, raw: bytes,
               space: bool | None) -> list[tuple[str | None, str]]:
    """Splits an SSE body into (event name, data) pairs, checking every line strictly.
    `space`: True = `data: `, False = `data:` immediately followed by the payload (axum)."""
    text = raw.decode("utf-8")
    tc.assertTrue(text.endswith("\n\n"), f"stream does not end with a blank line: {text[-200:]!r}")
    out = []
    for block in text[:-2].split("\n\n"):
        if all(line.startswith(":") for line in block.split("\n")):
            continue  # a keep-alive comment (passed on from the backend): valid SSE, no event
        event, data = None, None
        for line in block.split("\n"):
            if line.startswith("event:"):
                tc.assertIsNone(event, f"two event lines: {block!r}")
                event = line[len("event:"):].strip()
            elif line.startswith("data:"):
                tc.assertIsNone(data, f"two data lines: {block!r}")
                v = line[len("data:"):]
                if space is True:
                    tc.assertTrue(v.startswith(" "), f"expected 'data: ': {line!r}")
                    v = v[1:]
                elif space is False:
                    tc.assertFalse(v.startswith(" "), f"expected 'data:' without space: {line!r}")
                data = v
            else:
                tc.fail(f"unexpected SSE line {line!r} in {block!r}")
        tc.assertIsNotNone(data, f"event without data: {block!r}")
        out.append((event, data))
    tc.assertTrue(out, "empty stream")
    return out


def ndjson_lines(tc: unittest.TestCase, raw: bytes) -> list[dict]:
    text = raw.decode("utf-8")
    tc.assertTrue(text.endswith("\n"), f"NDJSON body does not end with a newline: {text[-200:]!r}")
    lines = text[:-1].split("\n")
    docs = []
    for line in lines:
        tc.assertTrue(line, f"empty NDJSON line in {text[:500]!r}")
        docs.append(json.loads(line))
    return docs


def ctype(r: Response) -> str:
    return (r.header("content-type") or "").split(";")[0].strip()


def mentions(tc: unittest.TestCase, message: str, pattern: str) -> None:
    tc.assertTrue(re.search(pattern, message, re.I),
                  f"message does not say why (/{pattern}/): {message!r}")


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# =============================================================================================
# Fronts: how a client of each dialect asks, and what its answer must look like
# =============================================================================================

class Front:
    """One client dialect (a route family). Subclasses fill in the wire."""

    name = ""
    kind = "raw"           # raw | chat
    carries_counts = True  # token counts and a finish reason are on this dialect's wire
    generate_shaped = False  # an Ollama templated /api/generate (kept generate-shaped upstream)

    def input(self, backend: str, case: str) -> Input:
        words = f"the {self.name} client asks the {backend} backend for {case}"
        if self.kind == "raw":
            return Input(prompt=words)
        system = "you answer in a few words" if self.name in (
            "openai_chat", "ollama_generate", "anthropic") else None
        return Input(system=system, user=words)

    def request(self, tc, inp: Input, max_tokens: int, stream: bool) -> tuple[str, dict, dict]:
        raise NotImplementedError

    def whole(self, tc, r: Response, inp: Input) -> Outcome:
        raise NotImplementedError

    def streamed(self, tc, r: Response, inp: Input) -> Outcome:
        raise NotImplementedError

    def error(self, tc, r: Response, status: int) -> str:
        """Checks a non-streamed error body in the client's dialect; returns the message."""
        raise NotImplementedError

    def stream_error(self, tc, r: Response) -> str:
        """Checks that a 200 stream ends with the dialect's in-band error; returns its message."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------
    def json_ok(self, tc, r: Response) -> Any:
        tc.assertEqual(r.status, 200, r.body[:500])
        tc.assertEqual(ctype(r), "application/json", r.headers)
        return r.json()

    def sse_ok(self, tc, r: Response) -> None:
        tc.assertEqual(r.status, 200, r.body[:500])
        tc.assertEqual(ctype(r), "text/event-stream", r.headers)

    def json_error(self, tc, r: Response, status: int) -> Any:
        tc.assertEqual(r.status, status, r.body[:500])
        tc.assertEqual(ctype(r), "application/json", r.headers)
        return r.json()

    def string_error(self, tc, r: Response, status: int) -> str:
        """An error body that is {"error": "<message>"} and nothing else (Ollama, vLLM's demo
        server); returns the message."""
        doc = self.json_error(tc, r, status)
        tc.assertEqual(set(doc), {"error"}, doc)
        tc.assertIsInstance(doc["error"], str)
        return doc["error"]


class SGLangFront(Front):
    name, path = "sglang", "/generate"

    def request(self, tc, inp, max_tokens, stream):
        body = {"text": inp.prompt, "sampling_params": {"max_new_tokens": max_tokens}}
        if stream:
            body["stream"] = True
        return self.path, body, {}

    def finish(self, tc, fr, budget) -> str | None:
        if fr is None:
            return None
        tc.assertIsInstance(fr, dict, fr)
        if fr.get("type") == "length":
            tc.assertEqual(fr, {"type": "length", "length": budget})
            return "length"
        tc.assertEqual(fr.get("type"), "stop", fr)
        tc.assertTrue(fr.get("matched") is None or is_int(fr["matched"]), f"EOS matched: {fr}")
        return "stop"

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertIsInstance(doc, dict, doc)
        tc.assertIsInstance(doc.get("text"), str, doc)
        mi = doc["meta_info"]
        tc.assertIsInstance(mi.get("id"), str, doc)
        return Outcome(doc["text"], mi.get("prompt_tokens"), mi.get("completion_tokens"),
                       self.finish(tc, mi.get("finish_reason"), tc.budget))

    def streamed(self, tc, r, inp):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        tc.assertEqual([d for _, d in blocks].count("[DONE]"), 1, "one data: [DONE]")
        tc.assertEqual(blocks[-1], (None, "[DONE]"), "the stream ends with data: [DONE]")
        docs = [json.loads(d) for e, d in blocks[:-1]]
        tc.assertGreaterEqual(len(docs), 2, "more than one event expected")
        prev = ""
        for doc in docs:
            tc.assertNotIn("error", doc, doc)
            tc.assertNotIn("index", doc, "single prompt: no index")
            tc.assertTrue(doc["text"].startswith(prev), f"not cumulative: {prev!r} -> {doc}")
            prev = doc["text"]
        grew = sum(1 for a, b in zip([""] + [d["text"] for d in docs], [d["text"] for d in docs])
                   if len(b) > len(a))
        tc.assertGreaterEqual(grew, 2, "the text should grow over more than one event")
        for doc in docs[:-1]:
            tc.assertIsNone(doc["meta_info"]["finish_reason"], f"finish before the end: {doc}")
        mi = docs[-1]["meta_info"]
        return Outcome(docs[-1]["text"], mi.get("prompt_tokens"), mi.get("completion_tokens"),
                       self.finish(tc, mi.get("finish_reason"), tc.budget))

    def error(self, tc, r, status):
        doc = self.json_error(tc, r, status)
        tc.assertEqual(set(doc), {"error"}, doc)
        tc.assertIsInstance(doc["error"].get("message"), str, doc)
        return doc["error"]["message"]

    def stream_error(self, tc, r):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        tc.assertEqual(blocks[-1], (None, "[DONE]"), blocks[-3:])
        last = json.loads(blocks[-2][1])
        tc.assertIn("error", last, f"no in-band error before [DONE]: {blocks[-3:]}")
        tc.assertIsInstance(last["error"].get("message"), str, last)
        return last["error"]["message"]


class OpenAICompletionsFront(Front):
    name, path, chat = "openai_completions", "/v1/completions", False

    def request(self, tc, inp, max_tokens, stream):
        body = {"model": tc.served, "prompt": inp.prompt, "max_tokens": max_tokens}
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return self.path, body, {}

    def finish(self, tc, f) -> str | None:
        tc.assertIn(f, ("length", "stop", None), f"not an OpenAI finish_reason: {f!r}")
        return f

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertEqual(doc.get("object"), "chat.completion" if self.chat else "text_completion")
        tc.assertEqual(doc.get("model"), tc.served, doc)
        tc.assertEqual(len(doc["choices"]), 1, doc)
        ch = doc["choices"][0]
        text = ch["message"]["content"] if self.chat else ch["text"]
        if self.chat:
            tc.assertEqual(ch["message"]["role"], "assistant")
        u = doc.get("usage") or {}
        if u.get("prompt_tokens") is not None and u.get("completion_tokens") is not None:
            tc.assertEqual(u.get("total_tokens"), u["prompt_tokens"] + u["completion_tokens"], u)
        return Outcome(text, u.get("prompt_tokens"), u.get("completion_tokens"),
                       self.finish(tc, ch.get("finish_reason")))

    def streamed(self, tc, r, inp):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        tc.assertEqual([d for _, d in blocks].count("[DONE]"), 1, "one data: [DONE]")
        tc.assertEqual(blocks[-1], (None, "[DONE]"), "the stream ends with data: [DONE]")
        docs = [json.loads(d) for _, d in blocks[:-1]]
        text, finish, usage, pieces = "", None, None, 0
        for pos, doc in enumerate(docs):
            tc.assertNotIn("error", doc, doc)
            tc.assertEqual(doc.get("object"),
                           "chat.completion.chunk" if self.chat else "text_completion", doc)
            tc.assertEqual(doc.get("model"), tc.served, doc)
            if not doc["choices"]:
                tc.assertEqual(pos, len(docs) - 1, "the usage chunk comes last")
                usage = doc.get("usage")
                continue
            ch = doc["choices"][0]
            tc.assertIsNone(finish, f"a chunk after the finish: {doc}")
            piece = (ch["delta"].get("content") or "") if self.chat else ch["text"]
            if self.chat and pos == 0:
                tc.assertEqual(ch["delta"].get("role"), "assistant", "role on the first chunk")
            pieces += bool(piece)
            text += piece
            if ch.get("finish_reason") is not None:
                finish = ch["finish_reason"]
        tc.assertGreaterEqual(pieces, 2, "more than one content chunk expected")
        if tc.DIALECT == "vllm_legacy" and usage is None:
            # vLLM's demo server reports no prompt count, and OpenAI's usage object requires
            # all three counts (issue 16 item 5): the usage chunk is left out.
            usage = {}
        else:
            tc.assertIsInstance(usage, dict, "include_usage asked, no usage chunk")
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                tc.assertIsInstance(usage.get(key), int, f"usage.{key}: {usage}")
            tc.assertEqual(usage.get("total_tokens"),
                           usage["prompt_tokens"] + usage["completion_tokens"], usage)
        return Outcome(text, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                       self.finish(tc, finish))

    def error(self, tc, r, status):
        doc = self.json_error(tc, r, status)
        tc.assertEqual(set(doc), {"error"}, doc)
        for key in ("message", "type", "param", "code"):
            tc.assertIn(key, doc["error"], doc)
        return doc["error"]["message"]

    def stream_error(self, tc, r):
        return SGLangFront.stream_error(self, tc, r)


class OpenAIChatFront(OpenAICompletionsFront):
    name, path, chat, kind = "openai_chat", "/v1/chat/completions", True, "chat"

    def request(self, tc, inp, max_tokens, stream):
        path, body, h = super().request(tc, inp, max_tokens, stream)
        del body["prompt"]
        body["messages"] = inp.messages()
        return path, body, h


TGI_FINISH = {"length": "length", "eos_token": "stop", "stop_sequence": "stop"}


class TGIFront(Front):
    """TGI /generate (whole) and /generate_stream, with parameters.details."""

    name = "tgi"

    def route(self, stream: bool) -> str:
        return "/generate_stream" if stream else "/generate"

    def request(self, tc, inp, max_tokens, stream):
        return self.route(stream), {"inputs": inp.prompt, "parameters": {
            "max_new_tokens": max_tokens, "details": True}}, {}

    def unwrap(self, tc, doc):
        tc.assertIsInstance(doc, dict, doc)
        return doc

    def whole(self, tc, r, inp):
        doc = self.unwrap(tc, self.json_ok(tc, r))
        tc.assertIsInstance(doc.get("generated_text"), str, doc)
        d = doc.get("details")
        tc.assertIsInstance(d, dict, f"details asked for: {doc}")
        tc.assertIn(d.get("finish_reason"), TGI_FINISH, d)
        for key in ("generated_tokens", "seed", "prefill", "tokens"):
            tc.assertIn(key, d, d)
        # TGI's prompt count travels only in the x-prompt-tokens header (api-dialects §5.4).
        pt = r.header("x-prompt-tokens")
        return Outcome(doc["generated_text"], int(pt) if pt is not None else None,
                       d["generated_tokens"] if tc.counts_known else None,
                       TGI_FINISH[d["finish_reason"]] if tc.counts_known else None)

    def streamed(self, tc, r, inp):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=False)
        docs = []
        for event, data in blocks:
            tc.assertIsNone(event)
            tc.assertNotEqual(data, "[DONE]", "TGI streams have no terminator")
            docs.append(json.loads(data))
        text, pieces = "", 0
        for i, doc in enumerate(docs):
            tc.assertNotIn("error", doc, doc)
            tok = doc["token"]
            for key in ("id", "text", "logprob", "special"):
                tc.assertIn(key, tok, doc)
            if not tok["special"]:
                text += tok["text"]
                pieces += bool(tok["text"])
            last = i == len(docs) - 1
            if not last:
                tc.assertIsNone(doc["generated_text"], f"generated_text before the end: {doc}")
                tc.assertIsNone(doc["details"], doc)
        tc.assertGreaterEqual(pieces, 2, "more than one token event expected")
        final = docs[-1]
        tc.assertIsInstance(final["generated_text"], str, f"last event: {final}")
        tc.assertEqual(final["generated_text"], text, "generated_text = the streamed tokens")
        d = final["details"]
        tc.assertIsInstance(d, dict, f"details asked for: {final}")
        tc.assertIn(d.get("finish_reason"), TGI_FINISH, d)
        return Outcome(text, d.get("input_length"),
                       d["generated_tokens"] if tc.counts_known else None,
                       TGI_FINISH[d["finish_reason"]] if tc.counts_known else None)

    def error(self, tc, r, status):
        doc = self.json_error(tc, r, status)
        tc.assertEqual(set(doc), {"error", "error_type"}, doc)
        tc.assertIsInstance(doc["error"], str)
        tc.assertIsInstance(doc["error_type"], str)
        return doc["error"]

    def stream_error(self, tc, r):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=False)
        last = json.loads(blocks[-1][1])
        tc.assertEqual(set(last), {"error", "error_type"}, f"last event: {last}")
        return last["error"]


class TGIRootFront(TGIFront):
    """TGI's compat POST / (stream true/false); return_full_text false so that the text is the
    generation (its default on POST / is tested separately)."""

    name = "tgi_root"

    def request(self, tc, inp, max_tokens, stream):
        return "/", {"inputs": inp.prompt, "stream": stream, "parameters": {
            "max_new_tokens": max_tokens, "details": True, "return_full_text": False}}, {}

    def unwrap(self, tc, doc):
        tc.assertIsInstance(doc, list, "POST / answers a one-element list")
        tc.assertEqual(len(doc), 1, doc)
        return doc[0]


class VllmLegacyFront(Front):
    name, carries_counts = "vllm_legacy", False

    def request(self, tc, inp, max_tokens, stream):
        body = {"prompt": inp.prompt, "max_tokens": max_tokens}
        if stream:
            body["stream"] = True
        return "/generate", body, {}

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertEqual(set(doc), {"text"}, doc)
        tc.assertIsInstance(doc["text"], list)
        tc.assertEqual(len(doc["text"]), 1, doc)
        full = doc["text"][0]
        tc.assertTrue(full.startswith(inp.prompt), f"the prompt is echoed: {full!r}")
        return Outcome(full[len(inp.prompt):], None, None, None)

    def streamed(self, tc, r, inp):
        tc.assertEqual(r.status, 200, r.body[:500])
        # The demo server's StreamingResponse has no media type; never SSE.
        tc.assertIn(ctype(r), ("", "application/x-ndjson"), r.headers)
        raw = r.body.decode("utf-8")
        tc.assertTrue(raw.endswith("\n"), f"records end with \\n: {raw[-200:]!r}")
        records = raw[:-1].split("\n")
        tc.assertGreaterEqual(len(records), 2, "more than one record expected")
        prev = inp.prompt
        for rec in records:
            tc.assertFalse(rec.startswith("data:"), "no SSE framing")
            doc = json.loads(rec)
            tc.assertEqual(set(doc), {"text"}, doc)
            tc.assertEqual(len(doc["text"]), 1, doc)
            cur = doc["text"][0]
            tc.assertTrue(cur.startswith(prev), f"cumulative prompt+output: {prev!r} -> {cur!r}")
            prev = cur
        return Outcome(prev[len(inp.prompt):], None, None, None)

    def error(self, tc, r, status):
        return self.string_error(tc, r, status)

    def stream_error(self, tc, r):
        tc.assertEqual(r.status, 200, r.body[:500])
        raw = r.body.decode("utf-8")
        tc.assertTrue(raw.endswith("\n"), raw[-200:])
        last = json.loads(raw[:-1].split("\n")[-1])
        tc.assertEqual(set(last), {"error"}, f"last record: {last}")
        return last["error"]


OLLAMA_DURATIONS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


class OllamaGenerateFront(Front):
    """Ollama /api/generate without raw: Ollama templates it, so it is a chat turn."""

    name, kind, generate_shaped, chat = "ollama_generate", "chat", True, False

    def request(self, tc, inp, max_tokens, stream):
        body = {"model": tc.served, "prompt": inp.user, "stream": stream,
                "options": {"num_predict": max_tokens}}
        if inp.system:
            body["system"] = inp.system
        return "/api/generate", body, {}

    def piece(self, tc, doc) -> str:
        if self.chat:
            tc.assertEqual(doc["message"]["role"], "assistant", doc)
            return doc["message"]["content"]
        return doc["response"]

    def final(self, tc, doc, streamed: bool) -> Outcome:
        tc.assertIs(doc.get("done"), True, doc)
        tc.assertIsInstance(doc.get("created_at"), str, doc)
        tc.assertIn(doc.get("done_reason"), ("length", "stop", None), doc)
        for key in OLLAMA_DURATIONS:
            if key in doc:
                tc.assertTrue(is_int(doc[key]) and doc[key] >= 0,
                              f"{key} must be integer nanoseconds: {doc}")
        tc.assertTrue(is_int(doc.get("total_duration")), f"total_duration: {doc}")
        if streamed:
            for key in ("prompt_eval_duration", "eval_duration"):
                tc.assertTrue(is_int(doc.get(key)), f"{key} missing on the final line: {doc}")
        return Outcome("", doc.get("prompt_eval_count"), doc.get("eval_count"),
                       doc.get("done_reason"))

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertEqual(doc.get("model"), tc.served, doc)
        out = self.final(tc, doc, False)
        out.text = self.piece(tc, doc)
        return out

    def streamed(self, tc, r, inp):
        tc.assertEqual(r.status, 200, r.body[:500])
        tc.assertEqual(ctype(r), "application/x-ndjson", r.headers)
        docs = ndjson_lines(tc, r.body)
        text, pieces = "", 0
        for doc in docs[:-1]:
            tc.assertNotIn("error", doc, doc)
            tc.assertIs(doc.get("done"), False, doc)
            tc.assertEqual(doc.get("model"), tc.served, doc)
            p = self.piece(tc, doc)
            pieces += bool(p)
            text += p
        tc.assertGreaterEqual(pieces, 2, "more than one content line expected")
        out = self.final(tc, docs[-1], True)
        out.text = text + self.piece(tc, docs[-1])
        for key in ("done_reason", "eval_count", "prompt_eval_count"):
            if tc.counts_known:
                tc.assertIn(key, docs[-1], f"final line: {docs[-1]}")
        return out

    def error(self, tc, r, status):
        return self.string_error(tc, r, status)

    def stream_error(self, tc, r):
        tc.assertEqual(r.status, 200, r.body[:500])
        tc.assertEqual(ctype(r), "application/x-ndjson", r.headers)
        last = ndjson_lines(tc, r.body)[-1]
        tc.assertEqual(set(last), {"error"}, f"last line: {last}")
        return last["error"]


class OllamaRawFront(OllamaGenerateFront):
    name, kind, generate_shaped = "ollama_raw", "raw", False

    def request(self, tc, inp, max_tokens, stream):
        return "/api/generate", {"model": tc.served, "prompt": inp.prompt, "raw": True,
                                 "stream": stream, "options": {"num_predict": max_tokens}}, {}


class OllamaChatFront(OllamaGenerateFront):
    name, kind, generate_shaped, chat = "ollama_chat", "chat", False, True

    def request(self, tc, inp, max_tokens, stream):
        return "/api/chat", {"model": tc.served, "messages": inp.messages(), "stream": stream,
                             "options": {"num_predict": max_tokens}}, {}


LLAMACPP_FINISH = {"limit": "length", "eos": "stop", "word": "stop"}


class LlamaCppFront(Front):
    name = "llamacpp"

    def request(self, tc, inp, max_tokens, stream):
        body = {"prompt": inp.prompt, "n_predict": max_tokens}
        if stream:
            body["stream"] = True
        return "/completion", body, {}

    def final(self, tc, doc) -> Outcome:
        tc.assertIs(doc.get("stop"), True, doc)
        st = doc.get("stop_type")
        tc.assertIn(st, ("limit", "eos", "word", "none"), doc)
        return Outcome(doc["content"], doc.get("tokens_evaluated"), doc.get("tokens_predicted"),
                       LLAMACPP_FINISH.get(st))

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertIsInstance(doc, dict, doc)
        return self.final(tc, doc)

    def streamed(self, tc, r, inp):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        text, pieces = "", 0
        docs = []
        for event, data in blocks:
            tc.assertIsNone(event)
            tc.assertNotEqual(data, "[DONE]", "llama.cpp's native stream has no [DONE]")
            docs.append(json.loads(data))
        for doc in docs[:-1]:
            tc.assertNotIn("error", doc, doc)
            tc.assertIs(doc.get("stop"), False, doc)
            pieces += bool(doc["content"])
            text += doc["content"]
        tc.assertGreaterEqual(pieces, 2, "more than one content event expected")
        out = self.final(tc, docs[-1])
        out.text = text + out.text
        return out

    def error(self, tc, r, status):
        doc = self.json_error(tc, r, status)
        tc.assertEqual(set(doc), {"error"}, doc)
        err = doc["error"]
        tc.assertEqual(err.get("code"), status, doc)
        tc.assertIsInstance(err.get("type"), str, doc)
        return err["message"]

    def stream_error(self, tc, r):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        tc.assertNotEqual(blocks[-1][1], "[DONE]")
        last = json.loads(blocks[-1][1])
        tc.assertIn("error", last, f"last event: {last}")
        tc.assertIsInstance(last["error"].get("message"), str, last)
        tc.assertIsInstance(last["error"].get("type"), str, last)
        return last["error"]["message"]


ANTHROPIC_FINISH = {"max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}


class AnthropicFront(Front):
    name, kind = "anthropic", "chat"

    def request(self, tc, inp, max_tokens, stream):
        body = {"model": tc.served, "max_tokens": max_tokens,
                "messages": [{"role": "user", "content": inp.user}]}
        if inp.system:
            body["system"] = inp.system
        if stream:
            body["stream"] = True
        return "/v1/messages", body, dict(ANTHROPIC_HEADERS)

    def whole(self, tc, r, inp):
        doc = self.json_ok(tc, r)
        tc.assertEqual(doc.get("type"), "message", doc)
        tc.assertEqual(doc.get("role"), "assistant", doc)
        tc.assertEqual(doc.get("model"), tc.served, doc)
        tc.assertTrue(str(doc.get("id", "")).startswith("msg_"), doc)
        tc.assertEqual(len(doc["content"]), 1, doc)
        tc.assertEqual(doc["content"][0]["type"], "text", doc)
        tc.assertIn(doc.get("stop_reason"), ANTHROPIC_FINISH, doc)
        tc.assertIn("stop_sequence", doc)
        u = doc["usage"]
        return Outcome(doc["content"][0]["text"], u.get("input_tokens"), u.get("output_tokens"),
                       ANTHROPIC_FINISH[doc["stop_reason"]])

    def streamed(self, tc, r, inp):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        names = []
        docs = []
        for event, data in blocks:
            tc.assertIsNotNone(event, f"every Anthropic event is named: {data}")
            doc = json.loads(data)
            tc.assertEqual(doc.get("type"), event, f"event name vs data.type: {event} {doc}")
            if event != "ping":
                names.append(event)
                docs.append(doc)
        deltas = names.count("content_block_delta")
        tc.assertGreaterEqual(deltas, 2, f"more than one text delta expected: {names}")
        tc.assertEqual(names, ["message_start", "content_block_start"] +
                       ["content_block_delta"] * deltas +
                       ["content_block_stop", "message_delta", "message_stop"], names)
        start_msg = docs[0]["message"]
        tc.assertEqual(start_msg.get("model"), tc.served, start_msg)
        tc.assertEqual(start_msg.get("content"), [], start_msg)
        tc.assertEqual(docs[1]["content_block"], {"type": "text", "text": ""}, docs[1])
        text = ""
        for d in docs[2:2 + deltas]:
            tc.assertEqual(d["delta"]["type"], "text_delta", d)
            text += d["delta"]["text"]
        md = docs[-2]
        tc.assertIn(md["delta"].get("stop_reason"), ANTHROPIC_FINISH, md)
        # message_delta's usage is cumulative; input_tokens may be given there or at the start.
        pt = md["usage"].get("input_tokens", start_msg["usage"].get("input_tokens"))
        return Outcome(text, pt, md["usage"].get("output_tokens"),
                       ANTHROPIC_FINISH[md["delta"]["stop_reason"]])

    def error(self, tc, r, status):
        doc = self.json_error(tc, r, status)
        tc.assertEqual(doc.get("type"), "error", doc)
        tc.assertIsInstance(doc["error"].get("type"), str, doc)
        tc.assertIsInstance(doc["error"].get("message"), str, doc)
        return doc["error"]["message"]

    def stream_error(self, tc, r):
        self.sse_ok(tc, r)
        blocks = sse_blocks(tc, r.body, space=True)
        event, data = blocks[-1]
        tc.assertEqual(event, "error", f"last event: {blocks[-2:]}")
        doc = json.loads(data)
        tc.assertEqual(doc.get("type"), "error", doc)
        tc.assertIsInstance(doc["error"].get("type"), str, doc)
        return doc["error"]["message"]


FRONTS: list[Front] = [SGLangFront(), OpenAICompletionsFront(), OpenAIChatFront(), TGIFront(),
                       TGIRootFront(), VllmLegacyFront(), OllamaGenerateFront(),
                       OllamaRawFront(), OllamaChatFront(), LlamaCppFront(), AnthropicFront()]
FRONT = {f.name: f for f in FRONTS}


# =============================================================================================
# References: the backend asked directly, in its own dialect
# =============================================================================================

def _post(emu: Emulator, path: str, body: dict, headers: dict | None = None) -> Response:
    r = request(emu.port, "POST", path, body, headers)
    if r.status != 200:
        raise AssertionError(f"reference POST {path} to the {emu.dialect} emulator failed: "
                             f"{r.status} {r.body[:300]!r}")
    return r


def _openai_ref(doc: dict, chat: bool) -> Outcome:
    ch = doc["choices"][0]
    text = ch["message"]["content"] if chat else ch["text"]
    f = ch["finish_reason"]
    return Outcome(text, doc["usage"]["prompt_tokens"], doc["usage"]["completion_tokens"],
                   {"length": "length"}.get(f, "stop"))


def reference(emu: Emulator, front: Front, inp: Input, max_tokens: int,
              headers: dict) -> Outcome:
    d, m = emu.dialect, emu.model
    if front.kind == "raw":
        if d == "openai":
            return _openai_ref(_post(emu, "/v1/completions", {
                "model": m, "prompt": inp.prompt, "max_tokens": max_tokens}, headers).json(), False)
        if d == "sglang":
            doc = _post(emu, "/generate", {"text": inp.prompt, "sampling_params": {
                "max_new_tokens": max_tokens}}, headers).json()
            mi = doc["meta_info"]
            return Outcome(doc["text"], mi["prompt_tokens"], mi["completion_tokens"],
                           mi["finish_reason"]["type"])
        if d == "tgi":
            r = _post(emu, "/generate", {"inputs": inp.prompt, "parameters": {
                "max_new_tokens": max_tokens, "details": True}}, headers)
            doc = r.json()
            return Outcome(doc["generated_text"], int(r.header("x-prompt-tokens")),
                           doc["details"]["generated_tokens"],
                           TGI_FINISH[doc["details"]["finish_reason"]])
        if d == "ollama":
            doc = _post(emu, "/api/generate", {"model": m, "prompt": inp.prompt, "raw": True,
                                               "stream": False,
                                               "options": {"num_predict": max_tokens}},
                        headers).json()
            return Outcome(doc["response"], doc["prompt_eval_count"], doc["eval_count"],
                           doc["done_reason"])
        if d == "llamacpp":
            doc = _post(emu, "/completion", {"prompt": inp.prompt, "n_predict": max_tokens},
                        headers).json()
            return Outcome(doc["content"], doc["tokens_evaluated"], doc["tokens_predicted"],
                           LLAMACPP_FINISH[doc["stop_type"]])
        if d == "vllm_legacy":
            doc = _post(emu, "/generate", {"prompt": inp.prompt, "max_tokens": max_tokens},
                        headers).json()
            return Outcome(doc["text"][0][len(inp.prompt):], None, None, None)
        raise AssertionError(f"no raw route on {d}")
    # chat
    if d == "ollama":
        if front.generate_shaped:
            body = {"model": m, "prompt": inp.user, "stream": False,
                    "options": {"num_predict": max_tokens}}
            if inp.system:
                body["system"] = inp.system
            doc = _post(emu, "/api/generate", body, headers).json()
            text = doc["response"]
        else:
            doc = _post(emu, "/api/chat", {"model": m, "messages": inp.messages(),
                                           "stream": False,
                                           "options": {"num_predict": max_tokens}},
                        headers).json()
            text = doc["message"]["content"]
        return Outcome(text, doc["prompt_eval_count"], doc["eval_count"], doc["done_reason"])
    if d == "anthropic":
        body = {"model": m, "max_tokens": max_tokens,
                "messages": [{"role": "user", "content": inp.user}]}
        if inp.system:
            body["system"] = inp.system
        doc = _post(emu, "/v1/messages", body, {**ANTHROPIC_HEADERS, **headers}).json()
        return Outcome(doc["content"][0]["text"], doc["usage"]["input_tokens"],
                       doc["usage"]["output_tokens"], ANTHROPIC_FINISH[doc["stop_reason"]])
    if d in ("openai", "sglang", "tgi", "llamacpp"):
        # Their chat routes are OpenAI-shaped (SGLang's, TGI's and llama.cpp's own layers).
        return _openai_ref(_post(emu, "/v1/chat/completions", {
            "model": m, "messages": inp.messages(), "max_tokens": max_tokens}, headers).json(),
            True)
    raise AssertionError(f"no chat route on {d}")


# =============================================================================================
# The matrix
# =============================================================================================

CHAT_REFUSAL = r"legacy.*chat|chat.*legacy"
RAW_REFUSAL = r"raw.*completion|anthropic"


def refusal_for(backend: str, front: Front) -> str | None:
    """The pairing refusal (a regex its message must match), or None when the cell is served."""
    if front.kind == "chat" and backend == "vllm_legacy":
        return CHAT_REFUSAL
    if front.kind == "raw" and backend == "anthropic":
        return RAW_REFUSAL
    return None


class _DialectMatrix:
    DIALECT = ""
    MODEL = "emu-matrix"
    FAULT_AFTER = 3
    EMU_ARGS: list[str] = []  # the emulator's wire style (harness.OTHER_WIRE_STYLE)

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL, ["--quiet", *cls.EMU_ARGS])
        # vLLM's demo server has no fingerprint (only /health next to /generate) and names no
        # model: the proxy is told both, as its users must (every other dialect is probed).
        args = ["--upstream", cls.emu.url, "--access-log", "off"]
        if cls.DIALECT == "vllm_legacy":
            args += ["--upstream-dialect", "vllm_legacy", "--model", cls.MODEL]
        cls.proxy = start(cls, Proxy, args, wait_ready=False)
        cls.port = cls.proxy.port

        def identified():
            r = request(cls.port, "GET", "/get_server_info", timeout=2)
            if r.status != 200:
                return None
            doc = r.json()
            if "backend" in doc:  # synthesized by the proxy, naming what it detected
                # Until the probe has identified the backend the proxy reports "ready": false
                # (and in "detected" why not yet): only a ready backend is the probe's result.
                b = doc["backend"]
                return b.get("dialect") if b.get("ready") else None
            # Relayed as is only from an SGLang backend (SGLang's own server info).
            return "sglang" if "internal_states" in doc else None
        # Polls the proxy's own report until its backend probe has finished (bounded).
        cls.detected = wait_until(identified, 10, what="the backend probe")
        doc = request(cls.port, "GET", "/v1/models").json()
        cls.served = doc["data"][0]["id"]
        cls.counts_known = cls.DIALECT != "vllm_legacy"

    def test_backend_detected(self):
        self.assertEqual(self.detected, self.DIALECT)
        self.assertEqual(self.served,
                         self.MODEL + ":latest" if self.DIALECT == "ollama" else self.MODEL)

    # ---- helpers -----------------------------------------------------------------------------

    def ask(self, front: Front, inp: Input, budget: int, stream: bool,
            headers: dict | None = None) -> Response:
        self.budget = budget
        path, body, h = front.request(self, inp, budget, stream)
        return request(self.port, "POST", path, body, {**h, **(headers or {})})

    def compare(self, front: Front, got: Outcome, ref: Outcome, where: str) -> None:
        self.assertEqual(got.text, ref.text, f"{where}: text")
        if not front.carries_counts:
            return
        # Where the backend's dialect carries them (ref is None behind vLLM's demo server).
        if ref.completion_tokens is not None:
            self.assertEqual(got.completion_tokens, ref.completion_tokens,
                             f"{where}: completion tokens")
        if ref.finish is not None:
            self.assertEqual(got.finish, ref.finish, f"{where}: finish reason")
        if ref.prompt_tokens is not None:
            self.assertEqual(got.prompt_tokens, ref.prompt_tokens, f"{where}: prompt tokens")

    def served_fronts(self):
        return [f for f in FRONTS if refusal_for(self.DIALECT, f) is None]

    # ---- every cell: text, counts, finish, framing -------------------------------------------

    def test_matrix(self):
        cases = (("length", LENGTH_BUDGET, {}),
                 ("eos", EOS_BUDGET, {"X-Emulator-Eos-After": str(EOS_AFTER)}))
        for front in FRONTS:
            refusal = refusal_for(self.DIALECT, front)
            for case, budget, hdr in cases:
                inp = front.input(self.DIALECT, case)
                ref = None
                if refusal is None:
                    ref = reference(self.emu, front, inp, budget, hdr)
                    self.assertEqual(ref.finish, None if not self.counts_known else
                                     ("length" if case == "length" else "stop"), ref)
                for stream in (False, True):
                    where = f"{front.name} -> {self.DIALECT}, {case}, stream={stream}"
                    with self.subTest(front=front.name, case=case, stream=stream):
                        r = self.ask(front, inp, budget, stream, hdr)
                        if refusal is not None:
                            mentions(self, front.error(self, r, 400), refusal)
                            continue
                        got = front.streamed(self, r, inp) if stream else front.whole(self, r, inp)
                        self.compare(front, got, ref, where)

    # ---- a backend fault mid-stream reaches every client in its own dialect ------------------

    def test_midstream_fault(self):
        modes = ["reset_midstream"]
        if self.DIALECT != "vllm_legacy":  # its wire has no error; error_event just ends it
            modes.append("error_event")
        for front in self.served_fronts():
            for mode in modes:
                with self.subTest(front=front.name, fault=mode):
                    r = self.ask(front, front.input(self.DIALECT, "a fault"), 12, True,
                                 {"X-Emulator-Fault": mode,
                                  "X-Emulator-Fault-After": str(self.FAULT_AFTER)})
                    msg = front.stream_error(self, r)
                    self.assertTrue(msg, "empty error message")

    # ---- what a codec cannot translate is refused, saying why --------------------------------

    def refusal_probes(self) -> list[tuple[str, Front, Callable[[dict], None], str]]:
        d = self.DIALECT
        probes = []
        if d in ("tgi", "ollama", "llamacpp"):
            probes.append(("n>1", FRONT["openai_completions"], lambda b: b.update(n=2), r"\bn\b"))
            probes.append(("n>1", FRONT["sglang"],
                           lambda b: b["sampling_params"].update(n=2), r"\bn\b"))
        if d in ("tgi", "ollama", "llamacpp", "anthropic"):
            probes.append(("n>1", FRONT["openai_chat"], lambda b: b.update(n=2), r"\bn\b"))
        # llama.cpp's /completion takes a list of prompts itself (test_llamacpp_batch).
        if d in ("tgi", "ollama", "vllm_legacy"):
            probes.append(("batch", FRONT["openai_completions"],
                           lambda b: b.update(prompt=[b["prompt"], "second prompt"]),
                           r"batch|one prompt"))
            probes.append(("batch", FRONT["sglang"],
                           lambda b: b.update(text=[b["text"], "second prompt"]),
                           r"batch|one prompt"))
            probes.append(("token ids", FRONT["openai_completions"],
                           lambda b: b.update(prompt=[11, 12, 13]),
                           r"token|text (prompts )?only"))
            probes.append(("token ids", FRONT["sglang"],
                           lambda b: (b.pop("text"), b.update(input_ids=[11, 12, 13])),
                           r"token|text (prompts )?only"))
        if d in ("ollama", "llamacpp"):
            for name in ("tgi", "tgi_root"):
                probes.append(("stop strings", FRONT[name],
                               lambda b: b["parameters"].update(stop=[" the"]), r"stop"))
        if d == "anthropic":
            # A TGI client is a raw completion: refused before its stop strings matter.
            probes.append(("stop strings", FRONT["tgi"],
                           lambda b: b["parameters"].update(stop=[" the"]), RAW_REFUSAL))
        return probes

    def test_codec_refusals(self):
        probes = self.refusal_probes()
        for what, front, change, pattern in probes:
            for stream in (False, True):
                with self.subTest(what=what, front=front.name, stream=stream):
                    path, body, h = front.request(self, front.input(self.DIALECT, what), 4,
                                                  stream)
                    change(body)
                    r = request(self.port, "POST", path, body, h)
                    mentions(self, front.error(self, r, 400), pattern)

    def test_generate_mixed_body(self):
        for body in ({"inputs": "x", "text": "y"},
                     {"prompt": "x", "sampling_params": {"max_new_tokens": 2}},
                     {"inputs": "x", "prompt": "y", "max_tokens": 2}):
            with self.subTest(body=body):
                r = request(self.port, "POST", "/generate", body)
                # Which dialect the client meant is unknown: the error is SGLang's (and
                # OpenAI's) {"error": {"message": ...}}, the route's historical owner.
                msg = FRONT["sglang"].error(self, r, 400)
                for shape in ("SGLang", "TGI", "vLLM"):
                    self.assertIn(shape, msg, "the message names the three shapes")
                mentions(self, msg, r"mix|none of")

    def test_tgi_root_returns_full_text_by_default(self):
        """TGI's POST / defaults return_full_text to true for text-generation models (the
        emulator's TGI mode does the same): the answer is prompt + generation."""
        if refusal_for(self.DIALECT, FRONT["tgi_root"]) is not None:
            return  # raw completions are refused by this backend (checked in test_matrix)
        front = FRONT["tgi"]
        inp = front.input(self.DIALECT, "the full text")
        ref = reference(self.emu, front, inp, LENGTH_BUDGET, {})
        r = request(self.port, "POST", "/", {"inputs": inp.prompt, "parameters": {
            "max_new_tokens": LENGTH_BUDGET}})
        doc = front.json_ok(self, r)
        self.assertEqual(doc, [{"generated_text": inp.prompt + ref.text}])


class TestOpenAIBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "openai"


class TestSGLangBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "sglang"


class TestTGIBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "tgi"


class TestOllamaBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "ollama"


class TestLlamaCppBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "llamacpp"

    def test_llamacpp_batch(self):
        """llama.cpp's native /completion answers a list of prompts: a batch is served, each
        prompt as llama.cpp itself answers it."""
        prompts = ["first of a batch for llama.cpp", "second"]
        ref = request(self.emu.port, "POST", "/completion",
                      {"prompt": prompts, "n_predict": 4}).json()
        self.assertEqual(len(ref), 2, ref)
        ref.sort(key=lambda d: d["index"])
        doc = FRONT["openai_completions"].json_ok(self, request(
            self.port, "POST", "/v1/completions",
            {"model": self.served, "prompt": prompts, "max_tokens": 4}))
        got = sorted(doc["choices"], key=lambda c: c["index"])
        self.assertEqual([c["text"] for c in got], [d["content"] for d in ref])
        self.assertEqual(doc["usage"]["prompt_tokens"], sum(d["tokens_evaluated"] for d in ref))
        self.assertEqual(doc["usage"]["completion_tokens"],
                         sum(d["tokens_predicted"] for d in ref))


class TestVllmLegacyBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "vllm_legacy"


class TestAnthropicBackend(_DialectMatrix, unittest.TestCase):
    DIALECT = "anthropic"
    FAULT_AFTER = 5  # message_start, content_block_start and ping come before any text



# The whole matrix again against the other wire style (harness.OTHER_WIRE_STYLE).
class TestOpenAIBackendOtherStyle(TestOpenAIBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestSGLangBackendOtherStyle(TestSGLangBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestTGIBackendOtherStyle(TestTGIBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestOllamaBackendOtherStyle(TestOllamaBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestLlamaCppBackendOtherStyle(TestLlamaCppBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestVllmLegacyBackendOtherStyle(TestVllmLegacyBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestAnthropicBackendOtherStyle(TestAnthropicBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


if __name__ == "__main__":
    unittest.main()
