#!/usr/bin/env python3
"""Smoke test of infergate-emulator's structured output (emulator/format.hpp): a JSON schema, any
JSON object, a regular expression or a grammar, read where each dialect carries it, answered by
a text that shows which constraint arrived.

usage: smoke_format.py PATH/TO/infergate-emulator

Every route that takes a constraint is asked whole and streamed, in the dialect's own bytes and in
a non-default wire style (pretty JSON with ASCII escapes, CRLF multi-line SSE or CRLF NDJSON with
blank records, split writes). The streamed text is reassembled: it must equal the whole answer and
the expected text, arrive in its pieces (the first character, then at most 8 bytes each), and
usage must count a token per piece plus EOS. Then the rules around it: a small budget cuts the
text (finish length), tool calls win over a format, reasoning comes first, and each server's
refusals of a malformed constraint. Standard library only; exits non-zero on failure.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_styles import Sse, exchange, records  # noqa: E402
from smoke_test import FAILURES, check, request, start  # noqa: E402

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "what is the weather in Paris?"}]

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"},
    "lat": {"type": "number"},
    "ok": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "object"},
    "where": {"type": "object", "properties": {"zip": {"type": "string"},
                                               "n": {"type": "integer"}}},
    "note": {"type": ["string", "null"]},
    "citt\u00e0/\u00e9": {"type": "string"},
}}
SCHEMA_VALUE = {"city": "ytic", "unit": "celsius", "days": 7, "lat": 1.5, "ok": True, "tags": [],
                "opts": {}, "where": {"zip": "piz", "n": 7}, "note": "eton",
                "citt\u00e0/\u00e9": "\u00e9/\u00e0ttic"}
SCHEMA_TEXT = json.dumps(SCHEMA_VALUE, separators=(",", ":"), ensure_ascii=False)
SMALL = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}
SMALL_TEXT = '{"q":"q","n":7}'
REGEX = "[a-z]+ \\d{2}/\u00e9"
GBNF = 'root ::= "yes" | "no"\n'
EBNF = 'root ::= "a" "b"*'


def grammar_text(g):
    return f"grammar: {len(g.encode())} bytes"


def pieces(text):
    """The answer's tokens: the first character, then pieces of at most 8 bytes, never inside a
    UTF-8 sequence."""
    data = text.encode()
    if not data:
        return []
    first = 1
    while first < len(data) and data[first] & 0xC0 == 0x80:
        first += 1
    out, at = [data[:first]], first
    while at < len(data):
        end = min(len(data), at + 8)
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end += 1
        out.append(data[at:end])
        at = end
    return [p.decode() for p in out]


STYLES = {
    "own bytes": {},
    "styled": {"X-Emulator-Json-Style": "pretty", "X-Emulator-Json-Escape": "ascii",
               "X-Emulator-Style-Seed": "7", "X-Emulator-Sse-Style": "crlf,multiline,comments",
               "X-Emulator-Ndjson-Style": "crlf,blank", "X-Emulator-Split-Writes": "3"},
}

# What each route reports for the text ended by the model, and for the budget.
FINISH = {"oai": ("stop", "length"), "tgi_cmpl": ("eos_token", "length"),
          "sglang_gen": ("stop", "length"), "tgi_gen": ("eos_token", "length"),
          "ollama": ("stop", "length"), "llama_gen": ("eos", "limit"),
          "anthropic": ("end_turn", "max_tokens")}


def merge(base, extra):
    out = dict(base)
    for k, v in extra.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class Route:
    """One route: how to ask it (whole and streamed) and how to read its answer."""

    def __init__(self, dialect, kind, path, stream_path=None, finish=None):
        self.dialect, self.kind, self.path = dialect, kind, path
        self.stream_path = stream_path or path
        self.finish = FINISH[finish or ("anthropic" if kind == "anthropic" else
                                        "ollama" if kind.startswith("ollama") else
                                        kind if kind in FINISH else "oai")]

    def __str__(self):
        return f"{self.dialect} {self.path}"

    def body(self, budget, stream):
        k = self.kind
        if k == "oai_chat":
            b = {"messages": CHAT, "max_tokens": budget}
        elif k == "oai_cmpl":
            b = {"prompt": PROMPT, "max_tokens": budget}
        elif k == "sglang_gen":
            b = {"text": PROMPT, "sampling_params": {"max_new_tokens": budget}}
        elif k == "tgi_gen":
            b = {"inputs": PROMPT, "parameters": {"max_new_tokens": budget, "details": True,
                                                  "return_full_text": False}}
        elif k == "ollama_gen":
            b = {"model": "m", "prompt": PROMPT, "options": {"num_predict": budget}}
        elif k == "ollama_chat":
            b = {"model": "m", "messages": CHAT, "options": {"num_predict": budget}}
        elif k == "llama_gen":
            b = {"prompt": PROMPT, "n_predict": budget}
        else:
            b = {"model": "m", "messages": CHAT, "max_tokens": budget}
        if self.path != "/generate" or self.dialect != "tgi":  # /generate_stream streams anyway
            b["stream"] = stream
        if stream and k.startswith("oai"):
            b["stream_options"] = {"include_usage": True}
        return b

    def ask(self, port, extra, headers, budget=60):
        """(whole Reply, streamed Reply)."""
        headers = dict(headers)
        if self.kind == "anthropic":
            headers["anthropic-version"] = "2023-06-01"
        out = []
        for stream in (False, True):
            path = self.stream_path if stream else self.path
            answer = exchange(port, "POST", path, merge(self.body(budget, stream), extra), headers)
            check(f"{self}: 200", answer.status == 200, (answer.status, answer.body[:300]))
            if answer.status != 200:
                return None
            out.append(self.read_stream(answer) if stream else
                       self.read_whole(json.loads(answer.body)))
        return out

    # --- readers ---------------------------------------------------------------------------------

    def read_whole(self, v):
        r = Reply()
        k = self.kind
        if k.startswith("oai"):
            c = v["choices"][0]
            r.text = (c["message"]["content"] or "") if "message" in c else c["text"]
            r.reasoning = c.get("message", {}).get("reasoning_content") or ""
            r.calls = [tc["function"]["name"] for tc in
                       (c.get("message", {}).get("tool_calls") or [])]
            r.finish, r.tokens = c["finish_reason"], v["usage"]["completion_tokens"]
        elif k == "sglang_gen":
            r.text, m = v["text"], v["meta_info"]
            r.finish, r.tokens = m["finish_reason"]["type"], m["completion_tokens"]
        elif k == "tgi_gen":
            v = v[0] if isinstance(v, list) else v
            r.text, d = v["generated_text"], v["details"]
            r.finish, r.tokens = d["finish_reason"], d["generated_tokens"]
            r.deltas = [t["text"] for t in d["tokens"] if not t["special"]]
        elif k.startswith("ollama"):
            msg = v.get("message", {})
            r.text = msg["content"] if k == "ollama_chat" else v["response"]
            r.reasoning = msg.get("thinking", "")
            r.calls = [tc["function"]["name"] for tc in msg.get("tool_calls", [])]
            r.finish, r.tokens = v["done_reason"], v["eval_count"]
        elif k == "llama_gen":
            r.text, r.finish, r.tokens = v["content"], v["stop_type"], v["tokens_predicted"]
        else:
            for block in v["content"]:
                if block["type"] == "text":
                    r.text += block["text"]
                elif block["type"] == "thinking":
                    r.reasoning += block["thinking"]
                elif block["type"] == "tool_use":
                    r.calls.append(block["name"])
            r.finish, r.tokens = v["stop_reason"], v["usage"]["output_tokens"]
        return r

    def read_stream(self, answer):
        r = Reply()
        k = self.kind
        if k in ("ollama_gen", "ollama_chat"):
            for line in records(answer.body, b"\n"):
                msg = line.get("message", {})
                piece = msg.get("content", "") if k == "ollama_chat" else line["response"]
                r.add(piece)
                r.reasoning += msg.get("thinking", "")
                r.calls += [tc["function"]["name"] for tc in msg.get("tool_calls", [])]
                if line["done"]:
                    r.finish, r.tokens = line["done_reason"], line["eval_count"]
            return r
        events = [(t, json.loads(d)) for t, d in Sse(answer.body).events if d != "[DONE]"]
        for etype, ev in events:
            if k.startswith("oai"):
                if ev.get("usage"):
                    r.tokens = ev["usage"]["completion_tokens"]
                for c in ev["choices"]:
                    d = c.get("delta", {})
                    r.add(d.get("content") or "" if "delta" in c else c["text"])
                    r.reasoning += d.get("reasoning_content") or ""
                    r.calls += [tc["function"]["name"] for tc in d.get("tool_calls") or []
                                if tc["function"].get("name")]
                    if c.get("finish_reason"):
                        r.finish = c["finish_reason"]
            elif k == "sglang_gen":
                r.add(ev["text"][len(r.text):])
                m = ev["meta_info"]
                if m["finish_reason"]:
                    r.finish, r.tokens = m["finish_reason"]["type"], m["completion_tokens"]
            elif k == "tgi_gen":
                if not ev["token"]["special"]:
                    r.add(ev["token"]["text"])
                if ev["details"]:
                    r.finish, r.tokens = ev["details"]["finish_reason"], \
                        ev["details"]["generated_tokens"]
                    check(f"{self}: the last event's generated_text", ev["generated_text"] ==
                          r.text, ev)
            elif k == "llama_gen":
                r.add(ev["content"])
                if ev["stop"]:
                    r.finish, r.tokens = ev["stop_type"], ev["tokens_predicted"]
            else:
                if ev["type"] == "content_block_start" and \
                        ev["content_block"]["type"] == "tool_use":
                    r.calls.append(ev["content_block"]["name"])
                elif ev["type"] == "content_block_delta":
                    d = ev["delta"]
                    if d["type"] == "text_delta":
                        r.add(d["text"])
                    elif d["type"] == "thinking_delta":
                        r.reasoning += d["thinking"]
                elif ev["type"] == "message_delta":
                    r.finish, r.tokens = ev["delta"]["stop_reason"], ev["usage"]["output_tokens"]
        return r


class Reply:
    def __init__(self):
        self.text = ""
        self.deltas = []   # the text as streamed, one entry per event that brought some
        self.reasoning = ""
        self.calls = []
        self.finish = None
        self.tokens = None

    def add(self, piece):
        if piece:
            self.text += piece
            self.deltas.append(piece)


# --- the routes and where each carries a constraint -----------------------------------------------

def json_schema_rf(schema, name="weather"):
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": name, "schema": schema, "strict": True}}}


def tgi_grammar(kind, value, chat):
    g = {"type": kind, "value": value}
    return {"response_format": g} if chat else {"parameters": {"grammar": g}}


def cases_for(route):
    """[(label, extra body, expected text)] for a route: every shape it carries a constraint in."""
    d, k = route.dialect, route.kind
    out = []
    if k.startswith("oai") and d in ("openai", "sglang"):
        out += [("json_schema", json_schema_rf(SCHEMA), SCHEMA_TEXT),
                ("json_object", {"response_format": {"type": "json_object"}}, "{}"),
                ("text", {"response_format": {"type": "text"}}, None),
                ("json_schema without schema",
                 {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
                 "{}")]
    if k.startswith("oai") and d == "openai":
        out += [("structured_outputs.json", {"structured_outputs": {"json": SMALL}}, SMALL_TEXT),
                ("structured_outputs.json as text",
                 {"structured_outputs": {"json": json.dumps(SMALL)}}, SMALL_TEXT),
                ("structured_outputs.regex", {"structured_outputs": {"regex": REGEX}},
                 "regex: " + REGEX),
                ("structured_outputs.grammar", {"structured_outputs": {"grammar": GBNF}},
                 grammar_text(GBNF)),
                ("structured_outputs.json_object",
                 {"structured_outputs": {"json_object": True}}, "{}"),
                ("response_format over structured_outputs of its kind",
                 dict(json_schema_rf(SMALL), structured_outputs={"json": SCHEMA}), SMALL_TEXT)]
    if k.startswith("oai") and d == "sglang":
        out += [("regex", {"regex": REGEX}, "regex: " + REGEX),
                ("ebnf", {"ebnf": EBNF}, grammar_text(EBNF))]
    if k == "oai_chat" and d == "tgi":
        out += [("json", tgi_grammar("json", SCHEMA, True), SCHEMA_TEXT),
                ("json_object", tgi_grammar("json_object", SMALL, True), SMALL_TEXT),
                ("json as text", tgi_grammar("json", json.dumps(SMALL), True), SMALL_TEXT),
                ("json_schema", tgi_grammar("json_schema", {"name": "w", "schema": SCHEMA}, True),
                 SCHEMA_TEXT),
                ("regex", tgi_grammar("regex", REGEX, True), "regex: " + REGEX)]
    if k == "oai_cmpl" and d == "tgi":
        out += [("response_format (TGI's completions have none)",
                 tgi_grammar("regex", REGEX, True), None)]
    if k == "oai_chat" and d == "llamacpp":
        out += [("json_schema", json_schema_rf(SCHEMA), SCHEMA_TEXT),
                ("json_object with schema",
                 {"response_format": {"type": "json_object", "schema": SMALL}}, SMALL_TEXT),
                ("json_object", {"response_format": {"type": "json_object"}}, "{}"),
                ("text", {"response_format": {"type": "text"}}, None)]
    if d == "llamacpp" and k in ("oai_chat", "oai_cmpl", "llama_gen"):
        out += [("json_schema key", {"json_schema": SCHEMA}, SCHEMA_TEXT),
                ("grammar key", {"grammar": GBNF}, grammar_text(GBNF)),
                ("grammar wins over json_schema", {"grammar": GBNF, "json_schema": SMALL},
                 grammar_text(GBNF))]
    if k == "oai_cmpl" and d == "llamacpp":
        out += [("response_format (not read by llama.cpp's completions)",
                 {"response_format": {"type": "json_object"}}, None)]
    if k == "sglang_gen":
        out += [("json_schema", {"sampling_params": {"json_schema": json.dumps(SCHEMA)}},
                 SCHEMA_TEXT),
                ("regex", {"sampling_params": {"regex": REGEX}}, "regex: " + REGEX),
                ("ebnf", {"sampling_params": {"ebnf": EBNF}}, grammar_text(EBNF))]
    if k == "tgi_gen":
        out += [("json", tgi_grammar("json", SCHEMA, False), SCHEMA_TEXT),
                ("json_object", tgi_grammar("json_object", SMALL, False), SMALL_TEXT),
                ("json as text", tgi_grammar("json", json.dumps(SMALL), False), SMALL_TEXT),
                ("json_schema", tgi_grammar("json_schema", {"schema": SMALL}, False), SMALL_TEXT),
                ("regex", tgi_grammar("regex", REGEX, False), "regex: " + REGEX)]
    if k.startswith("ollama"):
        out += [("format json", {"format": "json"}, "{}"),
                ("format schema", {"format": SCHEMA}, SCHEMA_TEXT),
                ("format \"\"", {"format": ""}, None)]
    if k == "anthropic":
        out += [("output_config.format",
                 {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}},
                 SCHEMA_TEXT),
                ("output_format (beta)",
                 {"output_format": {"type": "json_schema", "schema": SMALL}}, SMALL_TEXT)]
    return out


ROUTES = [
    Route("openai", "oai_chat", "/v1/chat/completions"),
    Route("openai", "oai_cmpl", "/v1/completions"),
    Route("sglang", "oai_chat", "/v1/chat/completions"),
    Route("sglang", "oai_cmpl", "/v1/completions"),
    Route("sglang", "sglang_gen", "/generate"),
    Route("tgi", "oai_chat", "/v1/chat/completions"),
    Route("tgi", "oai_cmpl", "/v1/completions", finish="tgi_cmpl"),
    Route("tgi", "tgi_gen", "/generate", "/generate_stream"),
    Route("tgi", "tgi_gen", "/"),
    Route("ollama", "ollama_gen", "/api/generate"),
    Route("ollama", "ollama_chat", "/api/chat"),
    Route("llamacpp", "llama_gen", "/completion"),
    Route("llamacpp", "oai_chat", "/v1/chat/completions"),
    Route("llamacpp", "oai_cmpl", "/v1/completions"),
    Route("anthropic", "anthropic", "/v1/messages"),
]


# --- checks --------------------------------------------------------------------------------------

def check_answer(label, route, replies, want, budget=60):
    whole, stream = replies
    check(f"{label}: stream text = whole text", stream.text == whole.text,
          (whole.text, stream.text))
    if want is None:  # unconstrained: generated words
        check(f"{label}: generated text, no format", whole.text.startswith(" ") and
              "{" not in whole.text and "regex:" not in whole.text, whole.text)
        return
    want_pieces = pieces(want)
    cut = budget < len(want_pieces) + 1
    shown = "".join(want_pieces[:budget]) if cut else want
    check(f"{label}: text {shown!r}", whole.text == shown, whole.text)
    check(f"{label}: streamed in its pieces", stream.deltas == want_pieces[:budget] and
          (len(stream.deltas) >= 2 or len(shown) < 2), stream.deltas)
    if route.kind == "tgi_gen":
        check(f"{label}: details.tokens are the pieces", whole.deltas == want_pieces[:budget],
              whole.deltas)
    tokens = min(budget, len(want_pieces) + 1)
    check(f"{label}: usage {tokens} (a token per piece, then EOS)",
          whole.tokens == stream.tokens == tokens, (whole.tokens, stream.tokens))
    finish = route.finish[1 if cut else 0]
    check(f"{label}: finish {finish}", whole.finish == stream.finish == finish,
          (whole.finish, stream.finish))


def run_dialect(binary, dialect):
    proc, port = start(binary, "--dialect", dialect, "--model", "m")
    try:
        routes = [r for r in ROUTES if r.dialect == dialect]
        for style_name, style in STYLES.items():
            for route in routes:
                for name, extra, want in cases_for(route):
                    label = f"{route} {name} [{style_name}]"
                    replies = route.ask(port, extra, style)
                    if replies:
                        check_answer(label, route, replies, want)
                # A budget below the pieces: the first ones, finish length; exactly the pieces:
                # all of them, no room for EOS.
                name, extra, want = cases_for(route)[0]
                if want is None:
                    continue
                n = len(pieces(want))
                for budget in (3, n):
                    replies = route.ask(port, extra, style, budget=budget)
                    if replies:
                        check_answer(f"{route} {name}, budget {budget} [{style_name}]", route,
                                     replies, want, budget)
        check_rules(port, dialect, routes)
        check_refusals(port, dialect)
    finally:
        proc.terminate()
        proc.wait()


def check_rules(port, dialect, routes):
    """Tool calls win over a format; reasoning comes first; logprobs stay off."""
    chat = [r for r in routes if r.kind in ("oai_chat", "ollama_chat", "anthropic")]
    for route in chat:
        name, extra, want = cases_for(route)[0]
        if dialect != "tgi":  # TGI refuses tools with a response_format (check_refusals)
            if dialect == "anthropic":
                tools = [{"name": "lookup", "input_schema": SMALL}]
            else:
                tools = [{"type": "function", "function": {"name": "lookup",
                                                           "parameters": SMALL}}]
            both = route.ask(port, dict(extra, tools=tools), {})
            if both:
                check(f"{route} {name} + tools: the call wins",
                      [r.calls for r in both] == [["lookup"]] * 2 and
                      [r.text for r in both] == ["", ""], [(r.calls, r.text) for r in both])
            if dialect != "anthropic":
                # The format wins over a tool result's text.
                history = CHAT + [{"role": "tool", "content": "sunny", "tool_call_id": "0"}]
                body = dict(extra, messages=history, tools=tools)
                after = route.ask(port, body, {})
                if after:
                    check_answer(f"{route} {name} after a tool result", route, after, want)
        if dialect != "tgi":
            think = route.ask(port, extra, {"X-Emulator-Reasoning": "Let me see."})
            if think:
                check(f"{route} {name} + reasoning: reasoning first, then the format",
                      [(r.reasoning, r.text) for r in think] == [("Let me see.", want)] * 2,
                      [(r.reasoning, r.text) for r in think])
                check(f"{route} {name} + reasoning: usage",
                      [r.tokens for r in think] == [len(pieces(want)) + 4] * 2,
                      [r.tokens for r in think])
    if dialect == "openai":
        route = routes[0]
        for extra in ({"logprobs": True, "top_logprobs": 2}, {}):
            b = dict(route.body(60, False), **json_schema_rf(SMALL), **extra)
            r = exchange(port, "POST", route.path, dict(b, n=2))
            v = json.loads(r.body)
            check(f"{route}: n=2 {extra}: every choice the format, logprobs off",
                  r.status == 200 and [c["message"]["content"] for c in v["choices"]] ==
                  [SMALL_TEXT] * 2 and all(c["logprobs"] is None for c in v["choices"]), v)
    if dialect == "tgi":
        # Every token's text and logprob, top tokens too, from the format's pieces.
        route = next(r for r in routes if r.path == "/generate")
        body = merge(merge(route.body(60, False), tgi_grammar("json", SMALL, False)),
                     {"parameters": {"top_n_tokens": 3, "decoder_input_details": True}})
        r = exchange(port, "POST", "/generate", body)
        d = json.loads(r.body)["details"] if r.status == 200 else {}
        check("tgi /generate top_n_tokens: the pieces' own texts",
              [t["text"] for t in d.get("tokens", [])][:-1] == pieces(SMALL_TEXT) and
              len(d.get("top_tokens", [])) == len(pieces(SMALL_TEXT)) + 1, (r.status, d))


def expect_error(label, answer, status, text):
    body = answer.body.decode("utf-8", "replace")
    check(f"{label}: {status} saying {text!r}", answer.status == status and text in body,
          (answer.status, body[:400]))


def check_refusals(port, dialect):
    """Each server's refusal of a malformed constraint."""
    def post(path, body, headers=None):
        return exchange(port, "POST", path, body, headers)

    if dialect == "openai":
        expect_error("vllm: two kinds in structured_outputs",
                     post("/v1/completions", {"prompt": PROMPT, "structured_outputs":
                                              {"regex": "a", "grammar": "b"}}), 400,
                     "You can only use one kind of structured outputs constraint")
        expect_error("vllm: response_format beside another kind",
                     post("/v1/chat/completions", dict(
                         {"messages": CHAT, "structured_outputs": {"regex": "a"}},
                         response_format={"type": "json_object"})), 400,
                     "You can only use one kind of structured outputs constraint")
        expect_error("vllm: structured_outputs.json not JSON",
                     post("/v1/completions", {"prompt": PROMPT,
                                              "structured_outputs": {"json": "{bad"}}), 400,
                     "Invalid JSON grammar specification.")
    elif dialect == "sglang":
        expect_error("sglang /generate: json_schema not JSON",
                     post("/generate", {"text": PROMPT, "sampling_params": {"json_schema": "{x"}}),
                     400, "Invalid grammar request: req.grammar_key=('json', '{x')")
        expect_error("sglang /generate: two grammars",
                     post("/generate", {"text": PROMPT, "sampling_params": {"regex": "a",
                                                                            "ebnf": "b"}}),
                     400, "Only one of regex, json_schema, or ebnf can be set.")
        stream = post("/generate", {"text": PROMPT, "stream": True,
                                    "sampling_params": {"json_schema": "{x"}})
        expect_error("sglang /generate stream: in-band", stream, 200, "Invalid grammar request")
        expect_error("sglang completions: regex beside response_format",
                     post("/v1/completions", {"prompt": PROMPT, "regex": "a",
                                              "response_format": {"type": "json_object"}}),
                     400, "Only one of regex, json_schema, or ebnf can be set.")
        chat = post("/v1/chat/completions", {"messages": CHAT, "ebnf": "a", "regex": "b",
                                             "stream": True})
        expect_error("sglang chat stream: in-band", chat, 200,
                     "Only one of regex, json_schema, or ebnf can be set.")
    elif dialect == "tgi":
        no_props = {"type": "json", "value": {"type": "object"}}
        expect_error("tgi /generate: a schema without properties",
                     post("/generate", {"inputs": PROMPT, "parameters": {"grammar": no_props}}),
                     422, "Input validation error: grammar is not valid: Grammar must have a "
                     "'properties' field")
        expect_error("tgi /generate_stream: in-band",
                     post("/generate_stream", {"inputs": PROMPT,
                                               "parameters": {"grammar": no_props}}),
                     200, "Grammar must have a 'properties' field")
        expect_error("tgi /generate: a JSON text that is not JSON",
                     post("/generate", {"inputs": PROMPT, "parameters": {
                         "grammar": {"type": "json", "value": "{x"}}}), 422,
                     "grammar is not valid: ")
        expect_error("tgi /generate: an unknown grammar type",
                     post("/generate", {"inputs": PROMPT, "parameters": {
                         "grammar": {"type": "text"}}}), 422,
                     "parameters.grammar: unknown variant `text`")
        expect_error("tgi chat: no properties",
                     post("/v1/chat/completions", {"messages": CHAT, "response_format":
                                                   no_props}), 422,
                     "Grammar must have a 'properties' field")
        # TGI reads only its own GrammarType: OpenAI's shapes do not deserialize.
        expect_error("tgi chat: OpenAI's json_object",
                     post("/v1/chat/completions", {"messages": CHAT, "response_format":
                                                   {"type": "json_object"}}), 422,
                     "response_format: missing field `value`")
        expect_error("tgi chat: OpenAI's text",
                     post("/v1/chat/completions", {"messages": CHAT, "response_format":
                                                   {"type": "text"}}), 422,
                     "response_format: unknown variant `text`")
        expect_error("tgi chat: tools and a response_format",
                     post("/v1/chat/completions", {"messages": CHAT, "response_format":
                                                   {"type": "regex", "value": "a"},
                                                   "tools": []}), 422,
                     '"error":"Tool error: Grammar and tools are mutually exclusive",'
                     '"error_type":"tool_error"')
    elif dialect == "ollama":
        for path, body in (("/api/generate", {"prompt": PROMPT}), ("/api/chat",
                                                                   {"messages": CHAT})):
            for stream in (False, True):
                expect_error(f"ollama {path} stream={stream}: format \"xml\"",
                             post(path, dict(body, model="m", stream=stream, format="xml")), 500,
                             '{"error":"invalid format: \\"\\\\\\"xml\\\\\\"\\"; expected '
                             '\\"json\\" or a valid JSON Schema object"}')
        # Deep nesting is written without recursion: no stack overflow.
        deep = "[" * 100000 + "]" * 100000
        head = '{"model":"m","prompt":"hi","stream":false,"format":'
        status, _, raw = request(port, "POST", "/api/generate", head + deep + "}")
        check("ollama: a format nested 100000 deep -> 500 invalid format",
              status == 500 and b"invalid format: " in raw, (status, raw[:200]))
        status, _, raw = request(port, "POST", "/api/generate",
                                 head + '{"properties":{"a":{"enum":[' + deep + "]}}}}")
        check("ollama: a schema whose enum value nests 100000 deep",
              status == 200 and json.loads(raw)["response"].startswith('{"a":[[[['),
              (status, raw[:200]))
    elif dialect == "llamacpp":
        expect_error("llama.cpp chat: response_format type xml",
                     post("/v1/chat/completions", {"messages": CHAT, "response_format":
                                                   {"type": "xml"}}), 500,
                     'response_format type must be one of \\"text\\" or \\"json_object\\", '
                     'but got: xml')


def test_other_routes(binary):
    """Routes without a constraint field stay as they were: the vLLM demo server refuses unknown
    keys, and completions ignore chat extras."""
    proc, port = start(binary, "--dialect", "vllm_legacy", "--model", "m")
    try:
        r = exchange(port, "POST", "/generate", {"prompt": PROMPT,
                                                 "response_format": {"type": "json_object"}})
        check("vllm_legacy: response_format is an unknown SamplingParams key (500)",
              r.status == 500, (r.status, r.body[:200]))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    binary = sys.argv[1]
    for dialect in ("openai", "sglang", "tgi", "ollama", "llamacpp", "anthropic"):
        run_dialect(binary, dialect)
    test_other_routes(binary)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
