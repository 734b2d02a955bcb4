"""infergate in front of a real llama.cpp server: every front dialect, streaming and not.

The engine is llama-server built from llama.cpp's source with a tiny random-weight model
(scripts/real_engine.sh, docs/testing.md); the tests are skipped, saying why, when it is not
built. infergate detects it as llama.cpp by itself. Each cell asks llama-server directly for the
reference (raw prompts on /completion, chat turns on /v1/chat/completions, greedy, fixed seed)
and checks what a client of each dialect gets through the proxy:

- the text it assembles is the engine's, byte for byte;
- the token counts it is told are the engine's, and so is the engine's own count of what it
  generated for that request (the `llamacpp:tokens_predicted_total` delta of its /metrics);
- finish reasons for the budget, EOS (forced with a logit bias where the dialect has one) and a
  stop string, in the client's vocabulary;
- a budget of 16 gives at most 16 tokens on every route;
- a client that leaves cancels the engine's task (a cancelled task is not added to the metric);
- the engine's own errors reach the client in its dialect's shape, with the engine's message;
- every sampling setting a dialect expresses reaches the engine (its /slots show it) or is
  refused with a 400 that names it.

Cells that fail for a reason being fixed now carry @unittest.expectedFailure and the issue-16
item (KNOWN_FAILURES below): remove the entry when the fix lands, the run then reports an
unexpected success until it is gone.

Runs as its own ctest entry (`ctest -R real_engine`); the `integration` entry leaves it out.
"""

from __future__ import annotations

import http.client
import json
import os
import unittest
from typing import Any, Callable

from harness import Proxy, Response, closed_port, request, start, wait_until
from real_engine import ALIAS, EOS_ID, LlamaServer, start_engine
import test_dialects
from test_dialects import LLAMACPP_FINISH, Front, Input, Outcome, _openai_ref, mentions

SEED = 42
BUDGET = 16          # the budget of every generation cell: < 20 ms of engine time
EOS_BIAS = 7         # with the tiny model, ends a greedy generation after 1-6 tokens
CANCEL_BUDGET = 1000  # long enough (about a second) to leave in the middle of it
LONG_PROMPT_WORDS = 1100  # more tokens than a slot holds (1,024)
CONTEXT_ERROR = "exceeds the available context size"

# Fronts whose dialect can ask for a logit bias (llama.cpp's [[id, bias]], the others' {id: bias}).
EOS_FRONTS = {"sglang", "openai_completions", "openai_chat", "vllm_legacy", "llamacpp"}


def failing(reason: str):
    """expectedFailure, with the reason in the test's description."""
    def wrap(fn):
        fn.__doc__ = f"{(fn.__doc__ or fn.__name__).strip()} (expected to fail: {reason})"
        return unittest.expectedFailure(fn)
    return wrap


# =============================================================================================
# The clients: test_dialects' fronts (requests, strict wire checks), two of them widened for
# what a real llama.cpp answers correctly
# =============================================================================================

class SGLangFront(test_dialects.SGLangFront):
    def finish(self, tc, fr, budget):
        # A stop string is reported as SGLang does: {"type": "stop", "matched": "<the string>"}
        # (the emulator checks only EOS, matched by token id).
        if isinstance(fr, dict) and isinstance(fr.get("matched"), str):
            tc.assertEqual(fr, {"type": "stop", "matched": tc.stop_string})
            return "stop"
        return super().finish(tc, fr, budget)


class OpenAIChatFront(test_dialects.OpenAIChatFront):
    def streamed(self, tc, r, inp):
        # llama.cpp's chat chunks reach OpenAI clients as llama-server writes them (the
        # same-dialect fast path): no role on the first delta, and the usage on the finish chunk
        # instead of a chunk of its own with no choices. OpenAI's chunk schema allows both (role
        # and usage are optional members of any chunk). They are put in the emulator's shape,
        # and the rest is checked as usual.
        blocks = r.body.split(b"\n\n")
        docs = [(i, json.loads(b[6:])) for i, b in enumerate(blocks) if b.startswith(b"data: {")]
        out = list(blocks)
        if docs:
            first_i, first = docs[0]
            for ch in first.get("choices", []):
                ch["delta"].setdefault("role", "assistant")
            out[first_i] = b"data: " + json.dumps(first).encode()
            last_i, last = docs[-1]
            if last.get("choices") and last.get("usage"):
                usage_chunk = {**last, "choices": []}
                del last["usage"]
                out[last_i] = (b"data: " + json.dumps(last).encode() + b"\n\ndata: " +
                               json.dumps(usage_chunk).encode())
        return super().streamed(tc, Response(r.status, r.headers, b"\n\n".join(out)), inp)


FRONTS: list[Front] = [SGLangFront() if f.name == "sglang" else
                       OpenAIChatFront() if f.name == "openai_chat" else f
                       for f in test_dialects.FRONTS]
FRONT = {f.name: f for f in FRONTS}

# (cell, front) -> why it fails today. A cell is "<aspect>_<whole|stream>" or an aspect alone.
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}


# =============================================================================================
# What each dialect sends
# =============================================================================================

def sampling(front: Front, body: dict, *, stop: list[str] | None = None,
             eos: bool = False) -> dict:
    """Greedy sampling with a fixed seed, stop strings and the EOS bias, where and as the front's
    dialect spells them."""
    n = front.name
    if n == "sglang":
        sp = body["sampling_params"]
        sp["temperature"] = 0  # SGLang's greedy; it has no per-request seed
        if stop:
            sp["stop"] = stop
        if eos:
            sp["logit_bias"] = {str(EOS_ID): EOS_BIAS}
    elif n in ("openai_completions", "openai_chat", "vllm_legacy", "llamacpp"):
        body.update(temperature=0, seed=SEED)
        if stop:
            body["stop"] = stop
        if eos:
            body["logit_bias"] = ([[EOS_ID, EOS_BIAS]] if n == "llamacpp"
                                  else {str(EOS_ID): EOS_BIAS})
    elif n in ("tgi", "tgi_root"):
        body["parameters"]["seed"] = SEED  # do_sample false, TGI's default, is greedy
        if stop:
            body["parameters"]["stop"] = stop
    elif n.startswith("ollama"):
        body["options"].update(temperature=0, seed=SEED)
        if stop:
            body["options"]["stop"] = stop
    elif n == "anthropic":
        body.update(temperature=0, top_k=1)  # no seed in the Messages API
        if stop:
            body["stop_sequences"] = stop
    else:
        raise AssertionError(f"no sampling for {n}")
    return body


def long_input(front: Front) -> Input:
    words = "word " * LONG_PROMPT_WORDS
    return Input(prompt=words) if front.kind == "raw" else Input(user=words)


def pick_stop(text: str) -> str | None:
    """A stop string that first occurs after the third word of `text` (so that text comes
    before it in more than one piece)."""
    pos = 0
    for i, word in enumerate(text.split(" ")):
        if i >= 3 and len(word) >= 3 and text.find(word) == pos:
            return word
        pos += len(word) + 1
    return None


# =============================================================================================
# The matrix
# =============================================================================================

class _RealEngine(unittest.TestCase):
    ENGINE_ARGS: list[str] = []

    @classmethod
    def setUpClass(cls):
        cls.engine: LlamaServer = start_engine(cls, extra=cls.ENGINE_ARGS)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.engine.url, "--access-log", "off"],
                          model=ALIAS)
        cls.port = cls.proxy.port
        cls.served = ALIAS
        cls.counts_known = True  # read by test_dialects' fronts
        cls.budget = BUDGET
        cls.stop_string = None

    # ---- the engine asked directly -----------------------------------------------------------

    def direct(self, front: Front, inp: Input, budget: int, *, stop: list[str] | None = None,
               eos: bool = False) -> Outcome:
        """What llama-server answers for the request the proxy should send: a raw prompt on
        /completion, a chat turn (Ollama's templated generate and Anthropic included) on its
        OpenAI chat route."""
        if front.kind == "raw":
            path = "/completion"
            body: dict[str, Any] = {"prompt": inp.prompt, "n_predict": budget}
        else:
            path = "/v1/chat/completions"
            body = {"messages": inp.messages(), "max_tokens": budget}
        body.update(temperature=0, seed=SEED)
        if stop:
            body["stop"] = stop
        if eos:
            body["logit_bias"] = [[EOS_ID, EOS_BIAS]]  # llama.cpp's own form, on both routes
        r = request(self.engine.port, "POST", path, body, timeout=60)
        self.assertEqual(r.status, 200, f"direct POST {path}: {r.body[:300]!r}")
        doc = r.json()
        if front.kind == "raw":
            return Outcome(doc["content"], doc["tokens_evaluated"], doc["tokens_predicted"],
                           LLAMACPP_FINISH[doc["stop_type"]])
        return _openai_ref(doc, True)

    # ---- through the proxy -------------------------------------------------------------------

    def send(self, front: Front, inp: Input, budget: int, stream: bool,
             edit: Callable[[dict], Any]) -> tuple[Response, int]:
        """Sends the front's request (`edit` adds to its body); returns the answer and how many
        tokens the engine generated for it (its own metric)."""
        self.budget = budget
        path, body, headers = front.request(self, inp, budget, stream)
        edit(body)
        before = self.engine.tokens_predicted_total()
        r = request(self.port, "POST", path, body, headers, timeout=120)
        return r, self.engine.tokens_predicted_total() - before

    def ask(self, front: Front, inp: Input, budget: int, stream: bool, **kw) -> tuple[
            Outcome, int, Response]:
        r, generated = self.send(front, inp, budget, stream, lambda b: sampling(front, b, **kw))
        got = front.streamed(self, r, inp) if stream else front.whole(self, r, inp)
        return got, generated, r

    def compare(self, front: Front, got: Outcome, ref: Outcome, generated: int) -> None:
        self.assertLessEqual(generated, self.budget,
                             f"a budget of {self.budget} was not honoured: the engine generated "
                             f"{generated} tokens (its /metrics)")
        self.assertEqual(got.text, ref.text, "text")
        self.assertEqual(generated, ref.completion_tokens,
                         "tokens the engine generated for this request (its /metrics)")
        if not front.carries_counts:
            return  # vLLM's demo server tells its clients neither counts nor finish reasons
        self.assertEqual(got.completion_tokens, ref.completion_tokens, "completion tokens")
        self.assertEqual(got.prompt_tokens, ref.prompt_tokens, "prompt tokens")
        self.assertEqual(got.finish, ref.finish, "finish reason")

    def last_task(self) -> dict:
        """The slot of the engine's latest task: its id_task, and in `params` its sampling
        parameters as the engine understood them."""
        return max(self.engine.slots(), key=lambda s: s["id_task"])


class TestRealEngineMatrix(_RealEngine):
    DIALECT = "llamacpp"  # the backend, as test_dialects' client classes read it
    """The engine as the engines README starts it."""

    def test_detected_as_llamacpp(self):
        doc = request(self.port, "GET", "/get_server_info").json()
        self.assertEqual(doc["backend"]["dialect"], "llamacpp", doc)
        self.assertTrue(doc["backend"]["ready"], doc)

    # ---- cells (one test per front, made below) ----------------------------------------------

    def cell_length(self, front: Front, stream: bool) -> None:
        inp = front.input("llamacpp", "the budget")
        ref = self.direct(front, inp, BUDGET)
        self.assertEqual((ref.finish, ref.completion_tokens), ("length", BUDGET), ref)
        got, generated, _ = self.ask(front, inp, BUDGET, stream)
        self.compare(front, got, ref, generated)
        self.assertEqual(self.last_task()["params"]["n_predict"], BUDGET, "the engine's n_predict")

    def eos_input(self, front: Front) -> tuple[Input, Outcome]:
        """A prompt whose biased greedy generation meets EOS after a few tokens of text (the
        stream checks want text in more than one piece)."""
        for i in range(60):
            inp = front.input("llamacpp", f"an early end {i}")
            ref = self.direct(front, inp, BUDGET, eos=True)
            if ref.finish == "stop" and 5 <= ref.completion_tokens < BUDGET:
                return inp, ref
        self.fail("no prompt found whose EOS comes after 5 tokens")

    def cell_eos(self, front: Front, stream: bool) -> None:
        if front.name not in EOS_FRONTS:
            self.skipTest(f"the {front.name} dialect has no logit bias: EOS cannot be forced "
                          "through it (random weights practically never choose it)")
        inp, ref = self.eos_input(front)
        got, generated, _ = self.ask(front, inp, BUDGET, stream, eos=True)
        self.compare(front, got, ref, generated)

    def cell_stop(self, front: Front, stream: bool) -> None:
        inp = front.input("llamacpp", "a stop string")
        stop = pick_stop(self.direct(front, inp, BUDGET).text)
        self.assertIsNotNone(stop, "no word to stop at in the reference text")
        ref = self.direct(front, inp, BUDGET, stop=[stop])
        self.assertEqual(ref.finish, "stop", ref)
        self.assertLess(ref.completion_tokens, BUDGET, ref)
        self.stop_string = stop
        if front.name in ("tgi", "tgi_root"):
            # TGI keeps the matched stop string in the text; llama.cpp always cuts it, so the
            # pair is refused (docs/dialects.md).
            r, generated = self.send(front, inp, BUDGET, stream,
                                     lambda b: sampling(front, b, stop=[stop]))
            mentions(self, front.error(self, r, 400), r"stop")
            self.assertEqual(generated, 0, "a refused request reached the engine")
            return
        got, generated, r = self.ask(front, inp, BUDGET, stream, stop=[stop])
        self.compare(front, got, ref, generated)
        if front.name == "anthropic":
            # llama.cpp's chat route (where an Anthropic client's request goes) says "stop" for
            # EOS and for a matched stop string alike, and never which string: end_turn is the
            # least wrong valid answer (docs/dialects.md). Backends that name the match (vLLM's
            # stop_reason, SGLang's matched_stop, llama.cpp's own /completion) give
            # "stop_sequence" with the string (anthropic codec unit tests).
            self.assertEqual(self.anthropic_stop(r, stream), ("end_turn", None))

    def anthropic_stop(self, r: Response, stream: bool) -> tuple[Any, Any]:
        if not stream:
            doc = r.json()
            return doc.get("stop_reason"), doc.get("stop_sequence")
        for block in r.body.decode().split("\n\n"):
            if block.startswith("event: message_delta"):
                delta = json.loads(block.split("data: ", 1)[1])["delta"]
                return delta.get("stop_reason"), delta.get("stop_sequence")
        self.fail("no message_delta event")

    def cell_cancel(self, front: Front, stream: bool) -> None:
        """The client leaves in the middle of a generation: the engine's task is cancelled (it
        goes idle without adding the task's tokens to its metric)."""
        inp = front.input("llamacpp", "a client that leaves")
        path, body, headers = front.request(self, inp, CANCEL_BUDGET, stream)
        sampling(front, body)
        before = self.engine.tokens_predicted_total()
        disconnects_before = self.disconnects()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", path, body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json", **headers})
            if stream:
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                self.assertTrue(resp.read1(65536), "no first event")
            else:
                wait_until(lambda: self.engine.busy_slots() > 0, 30,
                           what="the engine to start the task")
        finally:
            conn.close()
        if not stream:
            # llama-server c392e509 does not cancel a non-streaming task when its client goes
            # away (measured: a direct client that closes mid-generation gets its task run to
            # the end, the engines README notwithstanding). What can be checked is infergate's
            # side: it saw the client leave, counted it, and closed its upstream connection
            # (the engine logs the cancel when the task ends).
            wait_until(lambda: self.disconnects() > disconnects_before, 30,
                       what="infergate to count the client's disconnect")
            wait_until(lambda: self.engine.busy_slots() == 0, 30,
                       what="the engine's slots to idle")
            return
        wait_until(lambda: self.engine.busy_slots() == 0, 30, what="the engine's slots to idle")
        self.assertEqual(self.engine.tokens_predicted_total() - before, 0,
                         "the engine finished the task: it was not cancelled")

    def disconnects(self) -> float:
        """infergate_requests_total with outcome client_disconnect, summed."""
        text = request(self.port, "GET", "/metrics").body.decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("infergate_requests_total{")
                   and 'outcome="client_disconnect"' in line)

    def cell_params(self, front: Front) -> None:
        """Every sampling setting the front's dialect has reaches the engine as the engine's
        own parameter with the same value (its /slots show the task's parameters), or is
        refused with a 400 that names it. Never dropped."""
        inp = front.input("llamacpp", "the settings")
        params = PARAMS[front.name]
        path, body, headers = front.request(self, inp, 4, False)
        for where, value, _ in params.values():
            where(body)[value[0]] = value[1]
        refused = []
        last_task = self.last_task()["id_task"]
        for _ in range(len(params) + 1):
            r = request(self.port, "POST", path, body, headers, timeout=120)
            if r.status == 200:
                break
            msg = front.error(self, r, 400)
            named = [p for p in params if p not in refused and p in msg]
            self.assertTrue(named, f"a 400 that names none of the settings: {msg!r}")
            refused.append(named[0])
            where, value, _ = params[named[0]]
            del where(body)[value[0]]
        self.assertEqual(r.status, 200, r.body[:300])
        task = self.last_task()
        self.assertGreater(task["id_task"], last_task, "the request reached no slot")
        got = task["params"]
        wrong = {}
        for name, (_, (key, value), (engine_key, engine_value)) in params.items():
            if name in refused:
                continue
            have = got.get(engine_key)
            same = (abs(have - engine_value) < 1e-6 if isinstance(engine_value, float)
                    and isinstance(have, (int, float)) else have == engine_value)
            if not same:
                wrong[name] = f"sent {value!r}, the engine has {engine_key} = {have!r}"
        self.assertEqual(wrong, {}, "settings that did not reach the engine")

    # ---- single cells ------------------------------------------------------------------------

    def test_budget_max_completion_tokens_openai_chat(self):
        """An OpenAI chat client that itself sends max_completion_tokens (the newer name)."""
        front = FRONT["openai_chat"]
        inp = front.input("llamacpp", "the newer budget")
        ref = self.direct(front, inp, BUDGET)

        def edit(body):
            body["max_completion_tokens"] = body.pop("max_tokens")
            sampling(front, body)
        r, generated = self.send(front, inp, BUDGET, False, edit)
        self.compare(front, front.whole(self, r, inp), ref, generated)

    def test_tgi_stream_token_ids(self):
        """TGI's token events are the engine's tokens: one per token, with the engine's ids."""
        front = FRONT["tgi"]
        inp = front.input("llamacpp", "the token ids")
        s = request(self.engine.port, "POST", "/completion",
                    {"prompt": inp.prompt, "n_predict": BUDGET, "temperature": 0,
                     "stream": True})
        ids = [t for block in s.body.decode().split("\n\n") if block.startswith("data: ")
               for t in json.loads(block[6:]).get("tokens", [])]
        self.assertEqual(len(ids), BUDGET, ids)
        r, _ = self.send(front, inp, BUDGET, True, lambda b: sampling(front, b))
        events = [json.loads(block[5:]) for block in r.body.decode().split("\n\n")
                  if block.startswith("data:")]
        self.assertEqual([e["token"]["id"] for e in events], ids)
        self.assertEqual(events[-1]["details"]["generated_tokens"], BUDGET)

    def test_llamacpp_completion_fields(self):
        """A llama.cpp client gets every field llama-server itself answers /completion with."""
        front = FRONT["llamacpp"]
        inp = front.input("llamacpp", "the fields")
        direct = request(self.engine.port, "POST", "/completion",
                         {"prompt": inp.prompt, "n_predict": 4, "temperature": 0}).json()
        r, _ = self.send(front, inp, 4, False, lambda b: sampling(front, b))
        doc = front.json_ok(self, r)
        self.assertEqual(sorted(set(direct) - set(doc)), [], "fields lost")
        for key in ("truncated", "tokens_evaluated", "tokens_predicted"):
            self.assertEqual(doc[key], direct[key], key)

    def test_props(self):
        """GET /props through the proxy says what the engine's own says."""
        engine = request(self.engine.port, "GET", "/props").json()
        doc = request(self.port, "GET", "/props").json()
        for key in ("total_slots", "model_path", "chat_template"):
            self.assertEqual(doc.get(key), engine[key], key)
        self.assertEqual(doc["default_generation_settings"]["n_ctx"],
                         engine["default_generation_settings"]["n_ctx"])


class TestRealEngineErrors(_RealEngine):
    """Without context shift, llama-server refuses a prompt longer than a slot (1,024 tokens)
    with a 400 of its own (a 200 stream with an `error:` line when streaming): every client must
    get that refusal in its own dialect, with the engine's message."""

    ENGINE_ARGS = ["--no-context-shift"]

    def test_engine_refuses_directly(self):
        r = request(self.engine.port, "POST", "/completion",
                    {"prompt": "word " * LONG_PROMPT_WORDS, "n_predict": 4})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn(CONTEXT_ERROR, r.json()["error"]["message"])

    def cell_engine_error(self, front: Front, stream: bool) -> None:
        r, generated = self.send(front, long_input(front), 4, stream,
                                 lambda b: sampling(front, b))
        if stream and r.status == 200:
            msg = front.stream_error(self, r)
        else:
            msg = front.error(self, r, 400)
        self.assertIn(CONTEXT_ERROR, msg, "the engine's message")
        self.assertEqual(generated, 0)


class TestRealEngineTools(_RealEngine):
    """Tool calls from the real engine (llama-server --jinja: with tool_choice "required" its
    grammar makes even the tiny model call the tool) reach clients of the other chat dialects
    in their shapes. What the engine itself does was found this way: it writes an empty `id`,
    it refuses a function without a `description` (a 500), and this build refuses tools in a
    stream ("Cannot use tools with stream"), which must reach the client as an error."""

    ENGINE_ARGS = ["--jinja"]
    TOOL = {"name": "set_flag", "description": "Set the flag",
            "input_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                             "required": ["ok"], "additionalProperties": False}}

    def anthropic(self, stream: bool = False):
        return request(self.port, "POST", "/v1/messages",
                       {"model": ALIAS, "max_tokens": 200, "stream": stream, "temperature": 0,
                        "tools": [self.TOOL], "tool_choice": {"type": "any"},
                        "messages": [{"role": "user", "content": "Set it."}]},
                       {"anthropic-version": "2023-06-01"}, timeout=120)

    def test_anthropic_client_gets_a_tool_use_block(self):
        direct = request(self.engine.port, "POST", "/v1/chat/completions",
                         {"model": ALIAS, "max_tokens": 200, "temperature": 0,
                          "tool_choice": "required",
                          "tools": [{"type": "function", "function": {
                              "name": "set_flag", "description": "Set the flag",
                              "parameters": self.TOOL["input_schema"]}}],
                          "messages": [{"role": "user", "content": "Set it."}]}, timeout=120)
        self.assertEqual(direct.status, 200, direct.body[:300])
        call = direct.json()["choices"][0]["message"]["tool_calls"][0]
        r = self.anthropic()
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        self.assertEqual(doc["stop_reason"], "tool_use")
        uses = [b for b in doc["content"] if b["type"] == "tool_use"]
        self.assertEqual(len(uses), 1, doc)
        self.assertEqual(uses[0]["name"], "set_flag")
        # The engine's own call, its arguments as Anthropic's input object.
        self.assertEqual(uses[0]["input"], json.loads(call["function"]["arguments"]))
        self.assertTrue(uses[0]["id"].startswith("toolu_"), uses[0])  # the engine gave ""
        self.assertIsInstance(uses[0]["input"]["ok"], bool)

    def test_tools_in_a_stream_are_the_engines_error_not_a_silent_answer(self):
        r = self.anthropic(stream=True)
        if r.status == 200:
            self.assertIn(b"event: error", r.body)
            self.assertIn(b"Cannot use tools with stream", r.body)
        else:
            self.assertIn("Cannot use tools with stream", r.json()["error"]["message"])


class TestRealEngineResponses(_RealEngine):
    """The Responses API (issue 17; docs/dialects.md, "Responses API") bridged onto the real
    engine's chat route: the engine's own text and counts, the budget (max_output_tokens) held
    by the engine, the typed stream carrying the same text, a turn continued by
    previous_response_id, the engine's own tool call as a function_call item, and a JSON schema
    (text.format) shaping the engine's output."""

    ENGINE_ARGS = ["--jinja"]
    USER = "Tell me a story about the sea."

    def responses(self, body: dict) -> dict:
        r = request(self.port, "POST", "/v1/responses",
                    {"model": ALIAS, "temperature": 0, **body}, timeout=120)
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()

    def direct_chat(self, messages: list[dict], budget: int) -> dict:
        r = request(self.engine.port, "POST", "/v1/chat/completions",
                    {"messages": messages, "max_tokens": budget, "temperature": 0}, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()

    @staticmethod
    def text(doc: dict) -> str:
        return "".join(p["text"] for it in doc["output"] if it["type"] == "message"
                       for p in it["content"] if p["type"] == "output_text")

    def test_the_engines_text_counts_and_budget(self):
        ref = self.direct_chat([{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": self.USER}], BUDGET)
        before = self.engine.tokens_predicted_total()
        doc = self.responses({"instructions": "Be brief.", "input": self.USER,
                              "max_output_tokens": BUDGET})
        generated = self.engine.tokens_predicted_total() - before
        self.assertLessEqual(generated, BUDGET, "max_output_tokens was not honoured")
        self.assertEqual(self.text(doc), ref["choices"][0]["message"]["content"])
        self.assertEqual(doc["usage"]["input_tokens"], ref["usage"]["prompt_tokens"])
        self.assertEqual(doc["usage"]["output_tokens"], generated)
        finish = ref["choices"][0]["finish_reason"]
        self.assertEqual(doc["status"], "incomplete" if finish == "length" else "completed")
        # Streamed: the same text in output_text deltas, the same counts at the end.
        r = request(self.port, "POST", "/v1/responses",
                    {"model": ALIAS, "temperature": 0, "instructions": "Be brief.",
                     "input": self.USER, "max_output_tokens": BUDGET, "stream": True},
                    timeout=120)
        self.assertEqual(r.status, 200, r.body[:300])
        events = [json.loads(line[6:]) for line in r.body.decode().split("\n")
                  if line.startswith("data: ")]
        self.assertEqual([e["sequence_number"] for e in events], list(range(len(events))))
        deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        self.assertEqual(deltas, self.text(doc))
        self.assertIn(events[-1]["type"], ("response.completed", "response.incomplete"))
        self.assertEqual(events[-1]["response"]["usage"], doc["usage"])

    def test_a_conversation_continued_by_id(self):
        first = self.responses({"input": "Hello.", "max_output_tokens": 8})
        second = self.responses({"input": "And then?", "max_output_tokens": 8,
                                 "previous_response_id": first["id"]})
        ref = self.direct_chat([{"role": "user", "content": "Hello."},
                                {"role": "assistant", "content": self.text(first)},
                                {"role": "user", "content": "And then?"}], 8)
        self.assertEqual(second["usage"]["input_tokens"], ref["usage"]["prompt_tokens"])
        self.assertEqual(self.text(second), ref["choices"][0]["message"]["content"])

    def test_the_engines_tool_call_and_a_schema(self):
        tool = {"type": "function", "name": "set_flag", "description": "Set the flag",
                "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                               "required": ["ok"], "additionalProperties": False}}
        doc = self.responses({"input": "Set it.", "tools": [tool], "tool_choice": "required",
                              "max_output_tokens": 200})
        calls = [it for it in doc["output"] if it["type"] == "function_call"]
        self.assertEqual(len(calls), 1, doc["output"])
        self.assertEqual(calls[0]["name"], "set_flag")
        self.assertIsInstance(json.loads(calls[0]["arguments"])["ok"], bool)
        self.assertTrue(calls[0]["call_id"])  # the engine writes an empty id
        schema = TestRealEngineStructuredOutput.SCHEMA
        doc = self.responses({"input": "The weather, as JSON.", "max_output_tokens": 64,
                              "text": {"format": {"type": "json_schema", "name": "weather",
                                                  "schema": schema}}})
        got = json.loads(self.text(doc))
        self.assertEqual(set(got), {"unit", "ok"})
        self.assertIn(got["unit"], ("celsius", "fahrenheit"))


class TestRealEngineStructuredOutput(_RealEngine):
    """A JSON schema from every front reaches llama-server where it reads one (json_schema on
    /completion and on its chat route), so the engine's grammar shapes the text: the tiny
    random-weight model writes an object of the schema only under that grammar (unconstrained,
    it writes word salad). Found against this engine: it ignores a response_format json_schema
    on its chat route (a shadowed variable in oaicompat_completion_params_parse at c392e509), so
    infergate writes json_schema, and the fast path adds it to an OpenAI client's request.
    The text is checked against the schema, not byte for byte against a direct request: the
    engine's greedy pick among near-equal logits varies with which slot's prompt cache served
    the request."""

    SCHEMA = {"type": "object", "properties": {
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "ok": {"type": "boolean"}}, "required": ["unit", "ok"], "additionalProperties": False}
    USER = [{"role": "user", "content": "The weather, as JSON."}]

    def reference(self, chat: bool) -> str:
        path = "/v1/chat/completions" if chat else "/completion"
        body = ({"messages": self.USER, "max_tokens": 64} if chat else
                {"prompt": "weather:", "n_predict": 64})
        body.update(temperature=0, json_schema=self.SCHEMA)
        r = request(self.engine.port, "POST", path, body, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        return doc["choices"][0]["message"]["content"] if chat else doc["content"]

    def fronts(self):
        schema = self.SCHEMA
        yield ("openai_chat", True, "/v1/chat/completions", {
            "model": ALIAS, "messages": self.USER, "max_tokens": 64, "temperature": 0,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "weather", "schema": schema}}},
            lambda d: d["choices"][0]["message"]["content"])
        yield ("ollama_chat", True, "/api/chat", {
            "model": ALIAS, "messages": self.USER, "stream": False, "format": schema,
            "options": {"num_predict": 64, "temperature": 0}},
            lambda d: d["message"]["content"])
        yield ("anthropic", True, "/v1/messages", {
            "model": ALIAS, "messages": self.USER, "max_tokens": 64, "temperature": 0,
            "output_config": {"format": {"type": "json_schema", "schema": schema}}},
            lambda d: "".join(b["text"] for b in d["content"] if b["type"] == "text"))
        yield ("sglang", False, "/generate", {
            "text": "weather:", "sampling_params": {"max_new_tokens": 64, "temperature": 0,
                                                    "json_schema": json.dumps(schema)}},
            lambda d: d["text"])
        yield ("tgi", False, "/generate", {
            "inputs": "weather:", "parameters": {"max_new_tokens": 64, "do_sample": False,
                                                 "grammar": {"type": "json", "value": schema}}},
            lambda d: d["generated_text"])
        yield ("ollama_generate", False, "/api/generate", {
            "model": ALIAS, "prompt": "weather:", "raw": True, "stream": False, "format": schema,
            "options": {"num_predict": 64, "temperature": 0}},
            lambda d: d["response"])

    def assert_of_schema(self, text: str) -> None:
        got = json.loads(text)
        self.assertEqual(set(got), {"unit", "ok"}, text)
        self.assertIn(got["unit"], ("celsius", "fahrenheit"))
        self.assertIsInstance(got["ok"], bool)

    def test_every_front_gets_the_engines_constrained_answer(self):
        for chat in (True, False):
            self.assert_of_schema(self.reference(chat))
        for name, _chat, path, body, text in self.fronts():
            with self.subTest(front=name):
                r = request(self.port, "POST", path, body,
                            {"anthropic-version": "2023-06-01"}, timeout=120)
                self.assertEqual(r.status, 200, r.body[:300])
                self.assert_of_schema(text(r.json()))

    def test_unconstrained_the_model_writes_no_json(self):
        """The control: the same request without the schema is not JSON."""
        r = request(self.port, "POST", "/v1/chat/completions", {
            "model": ALIAS, "messages": self.USER, "max_tokens": 64, "temperature": 0},
            timeout=120)
        self.assertEqual(r.status, 200, r.body[:300])
        with self.assertRaises(ValueError):
            self.assert_of_schema(r.json()["choices"][0]["message"]["content"])

    def test_streamed(self):
        body = {"model": ALIAS, "messages": self.USER, "max_tokens": 64, "temperature": 0,
                "stream": True, "format": self.SCHEMA}
        r = request(self.port, "POST", "/api/chat", body, timeout=120)
        self.assertEqual(r.status, 200, r.body[:300])
        lines = [json.loads(l) for l in r.body.decode().splitlines() if l.strip()]
        self.assertGreater(len(lines), 2)
        self.assert_of_schema("".join(l["message"]["content"] for l in lines))
        self.assertTrue(lines[-1]["done"])
        body = {"model": ALIAS, "messages": self.USER, "max_tokens": 64, "temperature": 0,
                "stream": True, "response_format": {
                    "type": "json_schema", "json_schema": {"name": "w", "schema": self.SCHEMA}}}
        r = request(self.port, "POST", "/v1/chat/completions", body, timeout=120)
        self.assertEqual(r.status, 200, r.body[:300])
        text = "".join(c["delta"].get("content") or ""
                       for line in r.body.decode().split("\n\n") if line.startswith("data: {")
                       for c in json.loads(line[6:])["choices"])
        self.assert_of_schema(text)

    def test_a_regex_is_refused_naming_it(self):
        r = request(self.port, "POST", "/generate", {
            "text": "x", "sampling_params": {"max_new_tokens": 4, "regex": "[0-9]+"}})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("sampling_params.regex", r.json()["error"]["message"])


class TestRealEngineLogprobs(_RealEngine):
    """Log probabilities from the real engine (n_probs, and its chat route's logprobs) reach every
    client in its dialect: the same tokens, and the engine's logprobs (to 1e-3: two runs of the
    engine differ in the last digits when the prompt comes from a slot's cache)."""

    PROMPT = "Hello world"
    CHAT = [{"role": "user", "content": "Hello world"}]
    N = 4
    TOP = 2

    def direct_raw(self) -> list[dict]:
        r = request(self.engine.port, "POST", "/completion",
                    {"prompt": self.PROMPT, "n_predict": self.N, "n_probs": self.TOP,
                     "temperature": 0, "seed": SEED})
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()["completion_probabilities"]

    def direct_chat(self) -> list[dict]:
        r = request(self.engine.port, "POST", "/v1/chat/completions",
                    {"messages": self.CHAT, "max_tokens": self.N, "logprobs": True,
                     "top_logprobs": self.TOP, "temperature": 0, "seed": SEED})
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()["choices"][0]["logprobs"]["content"]

    def same(self, got: list[tuple[str, float]], ref: list[dict]) -> None:
        self.assertEqual([t for t, _ in got], [e["token"] for e in ref], "tokens")
        for (t, lp), e in zip(got, ref):
            self.assertAlmostEqual(lp, e["logprob"], delta=1e-3, msg=t)

    def post(self, path: str, body: dict) -> dict:
        r = request(self.port, "POST", path, body, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()

    def test_raw_fronts(self):
        ref = self.direct_raw()
        self.assertEqual(len(ref), self.N)
        with self.subTest("llamacpp"):
            doc = self.post("/completion", {"prompt": self.PROMPT, "n_predict": self.N,
                                            "n_probs": self.TOP, "temperature": 0, "seed": SEED})
            got = doc["completion_probabilities"]
            self.same([(e["token"], e["logprob"]) for e in got], ref)
            self.assertEqual([e["id"] for e in got], [e["id"] for e in ref])
            self.assertEqual([[a["id"] for a in e["top_logprobs"]] for e in got],
                             [[a["id"] for a in e["top_logprobs"]] for e in ref])
        with self.subTest("openai_completions"):
            doc = self.post("/v1/completions", {"model": ALIAS, "prompt": self.PROMPT,
                                                "max_tokens": self.N, "logprobs": self.TOP,
                                                "temperature": 0, "seed": SEED})
            lp = doc["choices"][0]["logprobs"]
            self.same(list(zip(lp["tokens"], lp["token_logprobs"])), ref)
            for top, e in zip(lp["top_logprobs"], ref):
                self.assertTrue({a["token"] for a in e["top_logprobs"]} <= set(top), top)
        with self.subTest("ollama_generate"):
            doc = self.post("/api/generate", {"model": ALIAS, "prompt": self.PROMPT, "raw": True,
                                              "stream": False, "logprobs": True,
                                              "top_logprobs": self.TOP,
                                              "options": {"num_predict": self.N,
                                                          "temperature": 0, "seed": SEED}})
            self.same([(e["token"], e["logprob"]) for e in doc["logprobs"]], ref)
            self.assertEqual([len(e["top_logprobs"]) for e in doc["logprobs"]],
                             [self.TOP] * self.N)
        with self.subTest("sglang"):
            doc = self.post("/generate", {"text": self.PROMPT, "return_logprob": True,
                                          "top_logprobs_num": self.TOP,
                                          "return_text_in_logprobs": True,
                                          "sampling_params": {"max_new_tokens": self.N,
                                                              "temperature": 0,
                                                              "sampling_seed": SEED}})
            out = doc["meta_info"]["output_token_logprobs"]
            self.same([(t[2], t[0]) for t in out], ref)
            self.assertEqual([t[1] for t in out], [e["id"] for e in ref])
        with self.subTest("tgi"):
            doc = self.post("/generate", {"inputs": self.PROMPT,
                                          "parameters": {"max_new_tokens": self.N,
                                                         "details": True, "top_n_tokens": self.TOP,
                                                         "seed": SEED}})
            toks = doc["details"]["tokens"]
            self.same([(t["text"], t["logprob"]) for t in toks], ref)
            self.assertEqual([t["id"] for t in toks], [e["id"] for e in ref])

    def test_raw_fronts_streamed(self):
        ref = self.direct_raw()
        r = request(self.port, "POST", "/completion",
                    {"prompt": self.PROMPT, "n_predict": self.N, "n_probs": self.TOP,
                     "temperature": 0, "seed": SEED, "stream": True}, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        got = [e for line in r.body.decode().splitlines() if line.startswith("data: ")
               for e in json.loads(line[6:]).get("completion_probabilities", [])]
        self.same([(e["token"], e["logprob"]) for e in got], ref)
        r = request(self.port, "POST", "/api/generate",
                    {"model": ALIAS, "prompt": self.PROMPT, "raw": True, "logprobs": True,
                     "options": {"num_predict": self.N, "temperature": 0, "seed": SEED}},
                    timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        got = [e for line in r.body.decode().splitlines() if line.strip()
               for e in json.loads(line).get("logprobs", [])]
        self.same([(e["token"], e["logprob"]) for e in got], ref)

    def test_chat_fronts(self):
        ref = self.direct_chat()
        self.assertEqual(len(ref), self.N)
        with self.subTest("openai_chat"):
            doc = self.post("/v1/chat/completions",
                            {"model": ALIAS, "messages": self.CHAT, "max_tokens": self.N,
                             "logprobs": True, "top_logprobs": self.TOP, "temperature": 0,
                             "seed": SEED})
            got = doc["choices"][0]["logprobs"]["content"]
            self.same([(e["token"], e["logprob"]) for e in got], ref)
        with self.subTest("ollama_chat"):
            doc = self.post("/api/chat", {"model": ALIAS, "messages": self.CHAT, "stream": False,
                                          "logprobs": True, "top_logprobs": self.TOP,
                                          "options": {"num_predict": self.N, "temperature": 0,
                                                      "seed": SEED}})
            self.same([(e["token"], e["logprob"]) for e in doc["logprobs"]], ref)

    def test_loglikelihood_is_refused_naming_echo(self):
        # lm-evaluation-harness's request: this engine has no prompt logprobs.
        r = request(self.port, "POST", "/v1/completions",
                    {"model": ALIAS, "prompt": [self.PROMPT], "max_tokens": 1,
                     "temperature": 0, "logprobs": 1, "seed": 1234, "echo": True})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json()["error"]["param"], "echo")


# ---- the settings each front sends (cell_params) ---------------------------------------------
# name -> (where in the body, (key, value)), (the engine's parameter, its value). The values are
# exact in float32 or compared to 1e-6.

def _top(b):
    return b


def _sp(b):
    return b["sampling_params"]


def _params(b):
    return b["parameters"]


def _options(b):
    return b["options"]


def _settings(where, **pairs) -> dict:
    engine_name = {"repetition_penalty": "repeat_penalty", "max_new_tokens": "n_predict",
                   "max_tokens": "n_predict", "num_predict": "n_predict",
                   "max_completion_tokens": "n_predict"}
    return {k: (where, (k, v), (engine_name.get(k, k), v)) for k, v in pairs.items()}


_OPENAI = dict(temperature=0.5, top_p=0.75, seed=7, frequency_penalty=0.5,
               presence_penalty=0.25)
_OLLAMA = dict(temperature=0.5, top_p=0.75, top_k=7, min_p=0.125, seed=7, repeat_penalty=1.25,
               repeat_last_n=32, presence_penalty=0.25, frequency_penalty=0.5)
PARAMS: dict[str, dict] = {
    "sglang": _settings(_sp, temperature=0.5, top_p=0.75, top_k=7, min_p=0.125,
                        frequency_penalty=0.5, presence_penalty=0.25, repetition_penalty=1.25),
    "openai_completions": _settings(_top, **_OPENAI, top_k=7, min_p=0.125),
    "openai_chat": _settings(_top, **_OPENAI, top_k=7, min_p=0.125),
    "tgi": _settings(_params, temperature=0.5, top_p=0.75, top_k=7, seed=7,
                     repetition_penalty=1.25, frequency_penalty=0.5),
    "tgi_root": _settings(_params, temperature=0.5, top_p=0.75, top_k=7, seed=7,
                          repetition_penalty=1.25, frequency_penalty=0.5),
    "vllm_legacy": _settings(_top, **_OPENAI, top_k=7, min_p=0.125, repetition_penalty=1.25),
    "ollama_generate": _settings(_options, **_OLLAMA),
    "ollama_raw": _settings(_options, **_OLLAMA),
    "ollama_chat": _settings(_options, **_OLLAMA),
    "llamacpp": _settings(_top, **_OLLAMA),
    "anthropic": _settings(_top, temperature=0.5, top_p=0.75, top_k=7),
}
for _name in ("tgi", "tgi_root"):  # TGI samples only with do_sample
    PARAMS[_name]["do_sample"] = (_params, ("do_sample", True), ("temperature", 0.5))


# ---- one test method per cell and front --------------------------------------------------------

def _install(cls: type, cell: str, front: Front, run: Callable[[Any], None]) -> None:
    name = f"test_{cell}__{front.name}"
    reason = KNOWN_FAILURES.get((cell, front.name))

    def test(self):
        run(self)
    test.__name__ = name
    test.__qualname__ = f"{cls.__name__}.{name}"
    test.__doc__ = f"{cell}, {front.name} client"
    setattr(cls, name, failing(reason)(test) if reason else test)


for _front in FRONTS:
    for _mode, _stream in (("whole", False), ("stream", True)):
        for _aspect in ("length", "eos", "stop", "cancel"):
            _install(TestRealEngineMatrix, f"{_aspect}_{_mode}", _front,
                     lambda self, a=_aspect, f=_front, s=_stream:
                     getattr(self, f"cell_{a}")(f, s))
        _install(TestRealEngineErrors, f"engine_error_{_mode}", _front,
                 lambda self, f=_front, s=_stream: self.cell_engine_error(f, s))
    _install(TestRealEngineMatrix, "params", _front,
             lambda self, f=_front: self.cell_params(f))


def load_tests(loader, standard_tests, pattern):
    # The `integration` ctest entry discovers every test_*.py; this file has its own entry
    # (`real_engine`) so that its time shows on its own. Run by name, it always runs.
    if pattern is not None and os.environ.get("INFERGATE_REAL_ENGINE_SEPARATE"):
        return unittest.TestSuite()
    return standard_tests


if __name__ == "__main__":
    unittest.main()


class TestRealEngineRouting(unittest.TestCase):
    """Two llama-servers behind one endpoint (issue 14, docs/routing.md): prefix affinity keeps
    a shared prompt on the engine whose own prompt cache holds it (llama-server's
    timings.prompt_n says how much it evaluated), least outstanding spreads it over both; a model
    neither serves is a 404 where llama-server would have run its own; a dead replica of the
    pool costs no client an error."""

    @classmethod
    def setUpClass(cls):
        cls.engines = [start_engine(cls) for _ in range(2)]

    def proxy(self, yaml: str) -> Proxy:
        p = Proxy(["--access-log", "off"], config_yaml=yaml, model=ALIAS)
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p

    def both(self, balance: str) -> Proxy:
        yaml = "backends:\n" + "".join(f"  - {{name: e{i}, url: '{e.url}'}}\n"
                                       for i, e in enumerate(self.engines))
        return self.proxy(yaml + f"routing: {{balance: {balance}}}\n")

    def shared_prompt(self, p: Proxy, system: str, n: int) -> tuple[list[int], list[int]]:
        """n llama.cpp /completion requests sharing a long prefix: the tokens the engine
        evaluated for each, and which engine generated it (its /metrics)."""
        evaluated, which = [], []
        for i in range(n):
            before = [e.tokens_predicted_total() for e in self.engines]
            r = request(p.port, "POST", "/completion",
                        {"prompt": system + f" Question {i}?", "n_predict": 2}, timeout=60)
            self.assertEqual(r.status, 200, r.body[:300])
            evaluated.append(r.json()["timings"]["prompt_n"])
            grew = [i for i, e in enumerate(self.engines)
                    if e.tokens_predicted_total() > before[i]]
            self.assertEqual(len(grew), 1, grew)
            which.append(grew[0])
        return evaluated, which

    def test_prefix_affinity_hits_the_engines_prompt_cache(self):
        evaluated, which = self.shared_prompt(self.both("prefix"),
                                              "You answer in French. " * 50, 6)
        self.assertEqual(len(set(which)), 1, which)
        self.assertGreater(evaluated[0], 200, evaluated)  # the first: the whole prompt
        self.assertTrue(all(n < 20 for n in evaluated[1:]), evaluated)  # then only the question
        # Least outstanding on an idle pool takes turns: the other engine evaluates it whole.
        evaluated, which = self.shared_prompt(self.both("least_outstanding"),
                                              "You answer in German. " * 50, 4)
        self.assertEqual(set(which), {0, 1}, which)
        self.assertGreaterEqual(sum(n > 200 for n in evaluated), 2, evaluated)

    def test_unknown_model_is_404_not_the_engines_own_model(self):
        p = self.both("prefix")
        r = request(p.port, "POST", "/completion",
                    {"model": "not-" + ALIAS, "prompt": "Hello", "n_predict": 2})
        self.assertEqual(r.status, 404, r.body[:300])
        self.assertIn(ALIAS, r.json()["error"]["message"])
        # Directly, llama-server runs its one model whatever the name.
        direct = request(self.engines[0].port, "POST", "/completion",
                         {"model": "not-" + ALIAS, "prompt": "Hello", "n_predict": 2})
        self.assertEqual(direct.status, 200)
        ids = [m["id"] for m in request(p.port, "GET", "/v1/models").json()["data"]]
        self.assertEqual(ids, [ALIAS])

    def test_a_dead_replica_costs_no_client_an_error(self):
        yaml = ("backends:\n"
                f"  - {{name: live, url: '{self.engines[0].url}'}}\n"
                f"  - {{name: dead, url: 'http://127.0.0.1:{closed_port()}', dialect: llamacpp, "
                f"model: {ALIAS}}}\n"
                "routing: {balance: least_outstanding}\n")
        p = self.proxy(yaml)
        # The dead one is configured (ready at once); the live one is ready once probed.
        wait_until(lambda: 'infergate_backend_up{backend="live"} 1' in
                   request(p.port, "GET", "/metrics").body.decode(), 10,
                   what="the live engine identified")
        for i in range(6):
            r = request(p.port, "POST", "/v1/chat/completions",
                        {"model": ALIAS, "max_tokens": 2,
                         "messages": [{"role": "user", "content": f"Hello {i}"}]}, timeout=60)
            self.assertEqual(r.status, 200, r.body[:300])


# =============================================================================================
# Embeddings and the tokenizer's routes (issue 17 parts 2, 3)
# =============================================================================================

def _floats(b64: str) -> list[float]:
    """OpenAI's base64 embedding: little-endian float32 values."""
    import base64
    import struct
    raw = base64.b64decode(b64)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _metric(text: str, name: str, **labels: str) -> float:
    """The value of one series of a Prometheus text exposition (0 when absent)."""
    import re
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return 0.0


class TestRealEngineEmbeddings(unittest.TestCase):
    """llama-server started with --embeddings (mean pooling: the tiny model has no pooling of its
    own), infergate in front: every embeddings API a client speaks gets the engine's own vectors
    (the same floats its /v1/embeddings answers directly), its token count, and its errors."""

    TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog"]

    @classmethod
    def setUpClass(cls):
        cls.engine = start_engine(cls, extra=["--embeddings", "--pooling", "mean"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.engine.url, "--access-log", "off"],
                          model=ALIAS)
        cls.port = cls.proxy.port

    def direct(self, texts: Any) -> tuple[list[list[float]], int]:
        r = request(self.engine.port, "POST", "/v1/embeddings",
                    {"input": texts, "model": ALIAS}, timeout=60)
        self.assertEqual(r.status, 200, r.body[:300])
        doc = r.json()
        return [d["embedding"] for d in sorted(doc["data"], key=lambda d: d["index"])], \
            doc["usage"]["prompt_tokens"]

    def through(self, path: str, body: dict) -> Response:
        r = request(self.port, "POST", path, body, timeout=60)
        self.assertEqual(r.status, 200, f"POST {path}: {r.status} {r.body[:300]!r}")
        return r

    def test_openai_float_base64_and_token_ids(self):
        ref, tokens = self.direct(self.TEXTS)
        r = self.through("/v1/embeddings", {"model": ALIAS, "input": self.TEXTS})
        doc = r.json()
        self.assertEqual(doc["object"], "list")
        self.assertEqual(doc["model"], ALIAS)
        self.assertEqual([d["index"] for d in doc["data"]], [0, 1])
        self.assertEqual([d["embedding"] for d in doc["data"]], ref)  # the same floats
        self.assertEqual(doc["usage"], {"prompt_tokens": tokens, "total_tokens": tokens})
        b64 = self.through("/v1/embeddings", {"model": ALIAS, "input": self.TEXTS,
                                              "encoding_format": "base64"}).json()
        for d, want in zip(b64["data"], ref):
            self.assertEqual(_floats(d["embedding"]), want)  # float32 values, exactly
        # One input alone: the engine's floats differ in the last bits with the batch's size.
        ids = request(self.engine.port, "POST", "/tokenize", {"content": self.TEXTS[0],
                                                              "add_special": True}).json()["tokens"]
        one, _ = self.direct([ids])
        by_ids = self.through("/v1/embeddings", {"model": ALIAS, "input": [ids]}).json()
        self.assertEqual(by_ids["data"][0]["embedding"], one[0])

    def test_every_other_api_gets_the_same_vectors(self):
        ref, tokens = self.direct(self.TEXTS)
        ollama = self.through("/api/embed", {"model": ALIAS, "input": self.TEXTS}).json()
        self.assertEqual(ollama["embeddings"], ref)
        self.assertEqual(ollama["prompt_eval_count"], tokens)
        self.assertGreater(ollama["total_duration"], 0)
        tei = self.through("/embed", {"inputs": self.TEXTS})
        self.assertEqual(tei.json(), ref)
        self.assertEqual(tei.header("x-compute-tokens"), str(tokens))
        # One input alone: the engine's floats differ in the last bits with the batch's size.
        one, _ = self.direct(self.TEXTS[0])
        legacy = self.through("/api/embeddings", {"model": ALIAS, "prompt": self.TEXTS[0]})
        # llama-server normalises every pooled vector: Ollama's older route gets it as it is.
        self.assertEqual(legacy.json(), {"embedding": one[0]})
        self.assertEqual(self.through("/embed", {"inputs": self.TEXTS[0]}).json(), one)

    def test_llamacpp_native_route_is_the_engines_own_answer(self):
        for body in ({"content": self.TEXTS}, {"content": self.TEXTS[0]},
                     {"input": [12, "world", 34]}):  # mixed ids and text: llama.cpp's own
            with self.subTest(body=body):
                direct = request(self.engine.port, "POST", "/embedding", body, timeout=60)
                got = self.through("/embedding", body)
                self.assertEqual(got.body, direct.body)
        ref, _ = self.direct(self.TEXTS)
        native = self.through("/embeddings", {"content": self.TEXTS}).json()
        self.assertEqual([item["embedding"] for item in native], [[v] for v in ref])

    def test_what_llamacpp_cannot_do_is_refused_naming_it(self):
        r = request(self.port, "POST", "/v1/embeddings",
                    {"model": ALIAS, "input": "x", "dimensions": 8})
        self.assertEqual(r.status, 400, r.body[:300])
        err = r.json()["error"]
        self.assertEqual(err["param"], "dimensions")
        self.assertIn("llama.cpp", err["message"])
        r = request(self.port, "POST", "/embed", {"inputs": "x", "normalize": False})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("normalize", r.json()["error"])
        self.assertIn("error_type", r.json())
        # The engine's own refusal, in the client's shape: this server embeds only.
        r = request(self.port, "POST", "/api/generate",
                    {"model": ALIAS, "prompt": "Hi", "stream": False, "raw": True})
        self.assertEqual(r.status, 501, r.body[:300])
        self.assertIn("does not support completions", r.json()["error"])

    def test_metrics_count_the_engines_input_tokens(self):
        before = request(self.port, "GET", "/metrics").body.decode()
        _, tokens = self.direct(self.TEXTS)
        self.through("/v1/embeddings", {"model": ALIAS, "input": self.TEXTS})
        self.through("/api/embed", {"model": ALIAS, "input": self.TEXTS})
        after = request(self.port, "GET", "/metrics").body.decode()
        for route in ("openai_embeddings", "ollama_embed"):
            with self.subTest(route=route):
                grew = (_metric(after, "infergate_prompt_tokens_total", route=route)
                        - _metric(before, "infergate_prompt_tokens_total", route=route))
                self.assertEqual(grew, tokens)
                self.assertEqual(
                    _metric(after, "infergate_requests_total", route=route, outcome="ok")
                    - _metric(before, "infergate_requests_total", route=route, outcome="ok"), 1)
        self.assertEqual(_metric(after, "infergate_completion_tokens_total",
                                 route="openai_embeddings"), 0)
        self.assertIn('gen_ai_operation_name="embeddings"', after)


class TestRealEngineTokenizer(unittest.TestCase):
    """llama-server's /tokenize, /detokenize and /apply-template through infergate: its own
    answers for a llama.cpp client, and the same token ids for vLLM, SGLang, TGI and TEI clients
    (each with its server's default for special tokens), their texts and offsets from the
    engine's pieces."""

    TEXT = "Hello world <|im_start|>é"

    @classmethod
    def setUpClass(cls):
        cls.engine = start_engine(cls)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.engine.url, "--access-log", "off"],
                          model=ALIAS)
        cls.port = cls.proxy.port

    def engine_tokens(self, add_special: bool) -> list[dict]:
        r = request(self.engine.port, "POST", "/tokenize",
                    {"content": self.TEXT, "add_special": add_special, "with_pieces": True})
        self.assertEqual(r.status, 200, r.body[:300])
        return r.json()["tokens"]

    def through(self, path: str, body: dict) -> Response:
        r = request(self.port, "POST", path, body, timeout=60)
        self.assertEqual(r.status, 200, f"POST {path} {body}: {r.status} {r.body[:300]!r}")
        return r

    def test_llamacpp_clients_get_the_engines_bytes(self):
        for path, body in (("/tokenize", {"content": self.TEXT, "with_pieces": True}),
                           ("/tokenize", {"content": [1, " x", 15043]}),
                           ("/detokenize", {"tokens": [1, 15043, 3186]}),
                           ("/apply-template", {"messages": [{"role": "user", "content": "Hi"}]})):
            with self.subTest(path=path, body=body):
                direct = request(self.engine.port, "POST", path, body)
                self.assertEqual(direct.status, 200)
                self.assertEqual(self.through(path, body).body, direct.body)

    def test_other_apis_get_the_engines_token_ids(self):
        with_bos = self.engine_tokens(True)
        without = self.engine_tokens(False)
        ids = [t["id"] for t in with_bos]
        vllm = self.through("/tokenize", {"model": ALIAS, "prompt": self.TEXT}).json()
        self.assertEqual(vllm["tokens"], ids)  # vLLM adds BOS by default
        self.assertEqual(vllm["count"], len(ids))
        self.assertEqual(vllm["max_model_len"], 1024)  # a slot's context (-c 4096 -np 4)
        self.assertIsNone(vllm["token_strs"])
        sglang = self.through("/v1/tokenize", {"prompt": self.TEXT,
                                               "add_special_tokens": False}).json()
        self.assertEqual(sglang["tokens"], [t["id"] for t in without])
        self.assertEqual(sglang["count"], len(without))
        # llama.cpp tokenizes one text per request: SGLang's list is refused, naming it.
        r = request(self.port, "POST", "/v1/tokenize", {"prompt": [self.TEXT, "Hi"]})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertEqual(r.json()["error"]["param"], "prompt")
        # TGI and TEI: the ids, each token's text from the input and its byte offsets.
        tgi = self.through("/tokenize", {"inputs": self.TEXT, "parameters": {}}).json()
        self.assertEqual([t["id"] for t in tgi], ids)
        data = self.TEXT.encode()
        for t in tgi:
            self.assertEqual(t["text"].encode(), data[t["start"]:t["stop"]])
        self.assertEqual(b"".join(data[t["start"]:t["stop"]] for t in tgi), data)
        tei = self.through("/tokenize", {"inputs": [self.TEXT]}).json()
        self.assertEqual([t["id"] for t in tei[0]], ids)
        self.assertEqual(tei[0][0], {"id": 1, "text": "<s>", "special": True, "start": None,
                                     "stop": None})
        self.assertEqual("".join(t["text"] for t in tei[0][1:]), self.TEXT)

    def test_detokenize_in_each_api(self):
        ids = [t["id"] for t in self.engine_tokens(True)]
        direct = request(self.engine.port, "POST", "/detokenize", {"tokens": ids}).json()
        text = direct["content"]
        self.assertEqual(self.through("/detokenize", {"tokens": ids}).json(), {"content": text})
        self.assertEqual(self.through("/v1/detokenize", {"tokens": [ids]}).json(),
                         {"text": [text]})
        self.assertEqual(self.through("/decode", {"ids": ids, "skip_special_tokens": False})
                         .json(), [text])
        # TEI skips special tokens by default; llama.cpp cannot: refused, naming the setting.
        r = request(self.port, "POST", "/decode", {"ids": ids, "skip_special_tokens": True})
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("skip_special_tokens", r.json()["error"])
