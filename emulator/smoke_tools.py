#!/usr/bin/env python3
"""Smoke test of infergate-emulator's chat extras (emulator/chat_extras.hpp): tool calls, the
tool-result follow-up, parallel calls (X-Emulator-Tool-Calls), reasoning (X-Emulator-Reasoning,
Anthropic `thinking`, Ollama `think`) and image echo, in every dialect's chat route.

usage: smoke_tools.py PATH/TO/infergate-emulator

Each case is asked whole and streamed, in the dialect's own bytes and in a non-default wire style
(pretty JSON with ASCII escapes, CRLF multi-line SSE or CRLF NDJSON with blank records, split
writes). The bytes are read the way a client reads them (chunked HTTP, WHATWG SSE, NDJSON),
streamed argument fragments are assembled, and both answers must say the same and what the plan
promises. Standard library only; exits non-zero on failure.
"""
import base64
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_styles import Sse, exchange, records  # noqa: E402
from smoke_test import FAILURES, check, start  # noqa: E402

WEATHER = {"type": "object", "properties": {
    "city": {"type": "string"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"},
    "lat": {"type": "number"},
    "metric": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "object"},
    "note": {"type": ["string", "null"]},
    "citt\u00e0/\u00e9": {"type": "string"},
}}
LOOKUP = {"type": "object", "properties": {"q": {"type": "string"}}}
# name -> (schema, the arguments the plan gives it, in schema order)
TOOLS = {
    "get_weather": (WEATHER, [("city", "ytic"), ("unit", "celsius"), ("days", 7), ("lat", 1.5),
                              ("metric", True), ("tags", []), ("opts", {}), ("note", "eton"),
                              ("citt\u00e0/\u00e9", "\u00e9/\u00e0ttic")]),
    "get_time": (None, []),
    "lookup": (LOOKUP, [("q", "q")]),
}
NAMES = list(TOOLS)
CHAT = [{"role": "user", "content": "what is the weather in Paris?"}]
REASONING = "Let me think \u00e9 / \"twice\""
DEFAULT_REASONING = "Thinking about it."
PNG = bytes(range(100))
GIF = bytes(range(37))

STYLES = {
    "own bytes": {},
    "styled": {"X-Emulator-Json-Style": "pretty", "X-Emulator-Json-Escape": "ascii",
               "X-Emulator-Style-Seed": "11", "X-Emulator-Sse-Style": "crlf,multiline,comments",
               "X-Emulator-Ndjson-Style": "crlf,blank", "X-Emulator-Split-Writes": "3"},
}

ROUTES = {"openai": "/v1/chat/completions", "sglang": "/v1/chat/completions",
          "tgi": "/v1/chat/completions", "llamacpp": "/v1/chat/completions",
          "ollama": "/api/chat", "anthropic": "/v1/messages"}
IDS = {"openai": r"chatcmpl-tool-[0-9a-f]{32}", "sglang": r"call_[0-9a-f]{24}",
       "tgi": r"[0-9]+", "llamacpp": r"[A-Za-z0-9]{32}", "ollama": r"call_[a-z0-9]{8}",
       "anthropic": r"toolu_[A-Za-z0-9]{24}"}
FRAGMENTED = {"openai", "sglang", "tgi", "llamacpp", "anthropic"}  # argument text streamed


def b64(data):
    return base64.b64encode(data).decode()


# --- requests ------------------------------------------------------------------------------------

def tools_for(dialect):
    if dialect == "anthropic":
        return [dict({"name": n}, **({"input_schema": s} if s else {}))
                for n, (s, _) in TOOLS.items()]
    return [{"type": "function", "function": dict({"name": n, "description": n},
                                                   **({"parameters": s} if s else {}))}
            for n, (s, _) in TOOLS.items()]


def body_for(dialect, messages, **extra):
    body = {"messages": messages}
    if dialect == "ollama":
        body.update(model="m", options={"num_predict": 40})
    elif dialect == "anthropic":
        body.update(model="m", max_tokens=40)
    else:
        body.update(max_tokens=40)
    body.update(extra)
    return body


def named_choice(dialect, name):
    if dialect == "anthropic":
        return {"type": "tool", "name": name}
    return {"type": "function", "function": {"name": name}}


def assistant_turn(dialect, calls):
    """The assistant message a client puts back into the history."""
    if dialect == "anthropic":
        return {"role": "assistant", "content": [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
            for c in calls]}
    if dialect == "ollama":
        return {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": c["name"], "arguments": c["args"]}} for c in calls]}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": c["id"], "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["args"])}} for c in calls]}


def result_turns(dialect, calls, texts):
    if dialect == "anthropic":
        # One result as a string, the others as text blocks.
        return [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c["id"],
             "content": t if i == 0 else [{"type": "text", "text": t}]}
            for i, (c, t) in enumerate(zip(calls, texts))]}]
    if dialect == "ollama":
        return [{"role": "tool", "content": t, "tool_name": c["name"]}
                for c, t in zip(calls, texts)]
    return [{"role": "tool", "tool_call_id": c["id"], "content": t} for c, t in zip(calls, texts)]


def image_turn(dialect):
    if dialect == "ollama":
        return [{"role": "user", "content": "what are these?", "images": [b64(PNG), b64(GIF)]}], \
            "images: 2, bytes: 137"
    if dialect == "anthropic":
        return [{"role": "user", "content": [
            {"type": "text", "text": "what are these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": b64(PNG)}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}], \
            "images: 2, bytes: 100"
    return [{"role": "user", "content": [
        {"type": "text", "text": "what are these?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(PNG)}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/gif;base64," + b64(GIF)}}]}], \
        "images: 3, bytes: 137"


# --- reading answers -----------------------------------------------------------------------------

class Reply:
    """One answer as a client understands it."""

    def __init__(self):
        self.reasoning = ""
        self.text = ""
        self.calls = []          # [{"id", "name", "args", "fragments"}]
        self.finish = None
        self.completion = None   # completion / output / eval tokens
        self.reasoning_tokens = None
        self.first_deltas = []   # the first streamed delta of each call, as written
        self.raw = None


def call(cid, name, args, fragments=0):
    return {"id": cid, "name": name, "args": args, "fragments": fragments}


class Pairs(list):
    """A JSON object as its [key, value] pairs, in the order written."""


def pairs(value):
    if isinstance(value, dict):
        return Pairs([[k, pairs(v)] for k, v in value.items()])
    if isinstance(value, list):
        return [pairs(v) for v in value]
    return value


def parse_args(text):
    return json.loads(text, object_pairs_hook=lambda p: Pairs([list(kv) for kv in p]))


def sse_values(answer):
    return [(t, json.loads(d)) for t, d in Sse(answer.body).events if d != "[DONE]"]


def read_openai_whole(dialect, body):
    r = Reply()
    r.raw = body
    choice = body["choices"][0]
    msg = choice["message"]
    r.text = msg.get("content") or ""
    r.reasoning = msg.get("reasoning_content") or ""
    if dialect == "openai" and msg.get("reasoning") is not None:
        check("vllm: reasoning and reasoning_content agree", msg["reasoning"] == r.reasoning)
    for tc in msg.get("tool_calls") or []:
        r.calls.append(call(tc["id"], tc["function"]["name"],
                            parse_args(tc["function"]["arguments"])))
    r.finish = choice["finish_reason"]
    r.completion = body["usage"]["completion_tokens"]
    r.reasoning_tokens = body["usage"].get("reasoning_tokens")
    return r


def read_openai_stream(dialect, answer):
    r = Reply()
    by_index = {}
    for _, chunk in sse_values(answer):
        if chunk.get("usage"):
            r.completion = chunk["usage"]["completion_tokens"]
            r.reasoning_tokens = chunk["usage"].get("reasoning_tokens")
        for choice in chunk["choices"]:
            delta = choice["delta"]
            r.reasoning += delta.get("reasoning_content") or ""
            if dialect == "openai" and "reasoning" in delta:
                check("vllm: delta.reasoning = delta.reasoning_content",
                      delta["reasoning"] == delta.get("reasoning_content"), delta)
            r.text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                i = tc["index"]
                if i not in by_index:
                    by_index[i] = {"id": tc.get("id"), "name": tc["function"].get("name"),
                                   "args": "", "fragments": 0}
                    r.first_deltas.append(tc)
                piece = tc["function"].get("arguments") or ""
                by_index[i]["args"] += piece
                by_index[i]["fragments"] += 1 if piece else 0
            if choice.get("finish_reason"):
                r.finish = choice["finish_reason"]
    for i in sorted(by_index):
        c = by_index[i]
        r.calls.append(call(c["id"], c["name"], parse_args(c["args"]), c["fragments"]))
    return r


def read_ollama_whole(body):
    r = Reply()
    r.raw = body
    msg = body["message"]
    r.text = msg["content"]
    r.reasoning = msg.get("thinking", "")
    for tc in msg.get("tool_calls", []):
        r.calls.append(call(tc["id"], tc["function"]["name"],
                            pairs(tc["function"]["arguments"])))
    r.finish = body["done_reason"]
    r.completion = body["eval_count"]
    return r


def read_ollama_stream(answer):
    r = Reply()
    lines = records(answer.body, b"\n")
    for i, line in enumerate(lines):
        msg = line["message"]
        r.reasoning += msg.get("thinking", "")
        r.text += msg["content"]
        for tc in msg.get("tool_calls", []):
            check("ollama: calls on a done:false line of their own",
                  not line["done"] and i < len(lines) - 1 and msg["content"] == "", line)
            r.first_deltas.append(tc)
            r.calls.append(call(tc["id"], tc["function"]["name"],
                                pairs(tc["function"]["arguments"])))
        if line["done"]:
            r.finish = line["done_reason"]
            r.completion = line["eval_count"]
    return r


def read_anthropic_whole(body):
    r = Reply()
    r.raw = body
    for block in body["content"]:
        if block["type"] == "thinking":
            r.reasoning += block["thinking"]
            check("anthropic: thinking block signed", len(block["signature"]) > 20, block)
        elif block["type"] == "text":
            r.text += block["text"]
        elif block["type"] == "tool_use":
            r.calls.append(call(block["id"], block["name"], pairs(block["input"])))
    r.finish = body["stop_reason"]
    r.completion = body["usage"]["output_tokens"]
    return r


def read_anthropic_stream(answer):
    r = Reply()
    blocks = {}
    order = []
    for etype, ev in sse_values(answer):
        check("anthropic: event name = data type", etype == ev["type"], (etype, ev))
        if ev["type"] == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"], _json="", _fragments=0, _sig="")
            order.append(ev["index"])
            if ev["content_block"]["type"] == "tool_use":
                r.first_deltas.append(ev["content_block"])
        elif ev["type"] == "content_block_delta":
            b, d = blocks[ev["index"]], ev["delta"]
            if d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["_sig"] += d["signature"]
            elif d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                b["_json"] += d["partial_json"]
                b["_fragments"] += 1 if d["partial_json"] else 0
        elif ev["type"] == "message_delta":
            r.finish = ev["delta"]["stop_reason"]
            r.completion = ev["usage"]["output_tokens"]
    check("anthropic: block indices 0, 1, ...", order == list(range(len(order))), order)
    for i in order:
        b = blocks[i]
        if b["type"] == "thinking":
            r.reasoning += b["thinking"]
            check("anthropic: streamed thinking signed", len(b["_sig"]) > 20, b)
        elif b["type"] == "text":
            r.text += b["text"]
        else:
            r.calls.append(call(b["id"], b["name"], parse_args(b["_json"] or "{}"),
                                b["_fragments"]))
    return r


def ask(port, dialect, body, headers):
    """(whole Reply, streamed Reply) for the same request."""
    headers = dict(headers)
    if dialect == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
    path = ROUTES[dialect]
    out = []
    for stream in (False, True):
        b = dict(body, stream=stream)
        if stream and dialect not in ("ollama", "anthropic"):
            b["stream_options"] = {"include_usage": True}  # usage to compare with the whole
        answer = exchange(port, "POST", path, b, headers)
        check(f"{dialect}: 200", answer.status == 200, (answer.status, answer.body[:300]))
        if not stream:
            value = json.loads(answer.body)
            out.append(read_ollama_whole(value) if dialect == "ollama" else
                       read_anthropic_whole(value) if dialect == "anthropic" else
                       read_openai_whole(dialect, value))
        else:
            out.append(read_ollama_stream(answer) if dialect == "ollama" else
                       read_anthropic_stream(answer) if dialect == "anthropic" else
                       read_openai_stream(dialect, answer))
    return out


# --- checks --------------------------------------------------------------------------------------

def expected_calls(dialect, names):
    return [(n, Pairs([[k, pairs(v)] for k, v in TOOLS[n][1]])) for n in names]


def canonical(value):
    """Arguments compared without order (a pretty style shuffles an object's keys)."""
    if isinstance(value, Pairs):
        return {k: canonical(v) for k, v in value}
    if isinstance(value, list):
        return ["list"] + [canonical(v) for v in value]
    return value


def check_calls(label, dialect, replies, names, ordered):
    want = expected_calls(dialect, names)
    for kind, r in zip(("whole", "stream"), replies):
        got = [(c["name"], c["args"]) for c in r.calls]
        check(f"{label} [{kind}]: calls {names}",
              [(n, canonical(a)) for n, a in got] == [(n, canonical(a)) for n, a in want],
              got)
        if ordered:
            check(f"{label} [{kind}]: arguments in schema order",
                  [[k for k, _ in a] for _, a in got] == [[k for k, _ in a] for _, a in want],
                  got)
        check(f"{label} [{kind}]: {dialect} call ids",
              all(re.fullmatch(IDS[dialect], c["id"] or "") for c in r.calls),
              [c["id"] for c in r.calls])
        check(f"{label} [{kind}]: no text", r.text == "", r.text)
    whole, stream = replies
    check(f"{label}: stream usage = whole usage", whole.completion == stream.completion and
          whole.completion >= sum(1 + (len(a) > 0) for _, a in want),
          (whole.completion, stream.completion))
    if dialect in FRAGMENTED:
        long_calls = [c for c in stream.calls if len(json.dumps(c["args"])) > 16]
        check(f"{label}: arguments streamed in several fragments",
              long_calls == [] or all(c["fragments"] >= 2 for c in long_calls),
              [c["fragments"] for c in stream.calls])


def finish_for_calls(dialect, named):
    return {"openai": "stop" if named else "tool_calls", "sglang": "tool_calls",
            "tgi": "stop", "llamacpp": "tool_calls", "ollama": "stop",
            "anthropic": "tool_use"}[dialect]


def check_first_deltas(label, dialect, stream, named):
    """The first streamed piece of each call, key by key as the real server writes it."""
    for k, d in enumerate(stream.first_deltas):
        name = stream.calls[k]["name"]
        if dialect == "openai":
            want = {"id": d.get("id"), "type": "function", "index": k,
                    "function": {"name": name, "arguments": ""} if named else {"name": name}}
        elif dialect == "sglang":
            want = {"id": d.get("id"), "index": k, "type": "function",
                    "function": {"name": name, "arguments": ""}}
        elif dialect == "tgi":
            want = {"index": 0, "id": d.get("id"), "type": "function",
                    "function": {"name": name, "arguments": "{"}}
        elif dialect == "llamacpp":
            want = {"index": k, "id": d.get("id"), "type": "function",
                    "function": {"name": name, "arguments": ""}}
        elif dialect == "anthropic":
            want = {"type": "tool_use", "id": d.get("id"), "name": name, "input": {}}
        else:
            want = d
        check(f"{label}: first streamed delta of call {k}", d == want, d)
    if dialect == "tgi":
        check(f"{label}: TGI streams no finish for a call", stream.finish is None, stream.finish)
    else:
        check(f"{label}: streamed finish", stream.finish == finish_for_calls(dialect, named),
              stream.finish)


def run_dialect(binary, dialect):
    proc, port = start(binary, "--dialect", dialect, "--model", "m")
    try:
        for style_name, style in STYLES.items():
            own = not style
            label = f"{dialect} [{style_name}]"
            tools = tools_for(dialect)

            # Plain text first: what the model says without extras.
            plain = ask(port, dialect, body_for(dialect, CHAT), style)
            check(f"{label}: plain answer whole = stream", plain[0].text == plain[1].text and
                  plain[0].text != "" and not plain[0].calls and plain[0].reasoning == "",
                  (plain[0].text, plain[1].text))

            # One call to the first tool.
            one = ask(port, dialect, body_for(dialect, CHAT, tools=tools), style)
            check_calls(f"{label} tool call", dialect, one, NAMES[:1], own)
            check(f"{label} tool call: whole finish", one[0].finish ==
                  finish_for_calls(dialect, False), one[0].finish)
            check_first_deltas(f"{label} tool call", dialect, one[1], False)
            if dialect in ("openai", "sglang", "tgi") and own:
                # Whole answers as written: content null (TGI: absent), arguments a string.
                msg = one[0].raw["choices"][0]["message"]
                check(f"{label} tool call: content", msg.get("content", "absent") ==
                      ("absent" if dialect == "tgi" else None), msg)
            if dialect == "tgi":
                fn = one[0].raw["choices"][0]["message"]["tool_calls"][0]["function"]
                check(f"{label} tool call: TGI description null, id 0", fn["description"] is None
                      and one[0].calls[0]["id"] == "0" and one[1].calls[0]["id"] == "0", fn)

            # The tool named by tool_choice; "none" turns tools off (Ollama has no tool_choice).
            none = {"type": "none"} if dialect == "anthropic" else "none"
            if dialect != "ollama":
                named = ask(port, dialect, body_for(dialect, CHAT, tools=tools,
                                                    tool_choice=named_choice(dialect, "lookup")),
                            style)
                check_calls(f"{label} named tool", dialect, named, ["lookup"], own)
                check(f"{label} named tool: whole finish",
                      named[0].finish == finish_for_calls(dialect, True), named[0].finish)
                check_first_deltas(f"{label} named tool", dialect, named[1], True)
                off = ask(port, dialect, body_for(dialect, CHAT, tools=tools,
                                                  tool_choice=none), style)
                check(f"{label} tool_choice none: the plain text",
                      [r.text for r in off] == [plain[0].text] * 2 and not off[0].calls and
                      not off[1].calls, off[0].text)

            # Parallel calls: the first N tools, cycling.
            para = ask(port, dialect, body_for(dialect, CHAT, tools=tools),
                       dict(style, **{"X-Emulator-Tool-Calls": "4"}))
            want = ["get_weather"] if dialect == "tgi" else NAMES + NAMES[:1]
            check_calls(f"{label} 4 parallel calls", dialect, para, want, own)
            check_first_deltas(f"{label} 4 parallel calls", dialect, para[1], False)
            check(f"{label} 4 parallel calls: distinct ids",
                  dialect == "tgi" or len({c["id"] for c in para[1].calls}) == len(want))

            if dialect not in ("ollama", "tgi"):
                off_switch = ({"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}
                              if dialect == "anthropic" else {"parallel_tool_calls": False})
                single = ask(port, dialect, body_for(dialect, CHAT, tools=tools, **off_switch),
                             dict(style, **{"X-Emulator-Tool-Calls": "4"}))
                check_calls(f"{label} parallel calls off", dialect, single, NAMES[:1], own)

            # The tool results go back; the answer says what they said.
            calls = para[0].calls
            texts = ["sunny, 21\u00b0C / \"dry\"", "12:00", "found it", "still sunny"][:len(calls)]
            history = CHAT + [assistant_turn(dialect, calls)] + result_turns(dialect, calls, texts)
            follow = ask(port, dialect, body_for(dialect, history, tools=tools), style)
            said = "tool said: " + "; ".join(texts)
            check(f"{label} tool results: '{said}'", [r.text for r in follow] == [said, said] and
                  not follow[0].calls and not follow[1].calls, [r.text for r in follow])
            check(f"{label} tool results: finish", follow[0].finish == follow[1].finish ==
                  {"anthropic": "end_turn"}.get(dialect, "stop"), follow[0].finish)
            if dialect == "tgi":
                again = ask(port, dialect, body_for(dialect, history + [
                    {"role": "user", "content": "and tomorrow?"}], tools=tools), style)
                check(f"{label}: TGI's next call id follows the history's",
                      [c["id"] for r in again for c in r.calls] == ["1", "1"],
                      [c["id"] for r in again for c in r.calls])

            # Reasoning, asked by header (every dialect but TGI has a reasoning output).
            think = ask(port, dialect, body_for(dialect, CHAT),
                        dict(style, **{"X-Emulator-Reasoning": REASONING}))
            want_reasoning = "" if dialect == "tgi" else REASONING
            check(f"{label} reasoning: text first, then the plain answer",
                  [r.reasoning for r in think] == [want_reasoning] * 2 and
                  [r.text for r in think] == [plain[0].text] * 2,
                  [(r.reasoning, r.text) for r in think])
            words = len(REASONING.split())
            check(f"{label} reasoning: usage counts it",
                  think[0].completion == think[1].completion ==
                  plain[0].completion + (0 if dialect == "tgi" else words),
                  (think[0].completion, think[1].completion, plain[0].completion))
            if dialect == "sglang":
                check(f"{label} reasoning: usage.reasoning_tokens",
                      think[0].reasoning_tokens == think[1].reasoning_tokens == words,
                      (think[0].reasoning_tokens, think[1].reasoning_tokens))
            # ... or by the request's own switch, with the default text.
            switch = {"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                      "ollama": {"think": True}}.get(dialect)
            if switch:
                own_switch = ask(port, dialect, body_for(dialect, CHAT, **switch), style)
                check(f"{label} reasoning switch: '{DEFAULT_REASONING}'",
                      [r.reasoning for r in own_switch] == [DEFAULT_REASONING] * 2 and
                      [r.text for r in own_switch] == [plain[0].text] * 2,
                      [(r.reasoning, r.text) for r in own_switch])
            # Reasoning, then calls.
            both = ask(port, dialect, body_for(dialect, CHAT, tools=tools),
                       dict(style, **{"X-Emulator-Reasoning": "", "X-Emulator-Tool-Calls": "2"}))
            check_calls(f"{label} reasoning + calls", dialect, both,
                        NAMES[:1] if dialect == "tgi" else NAMES[:2], own)
            check(f"{label} reasoning + calls: reasoning",
                  [r.reasoning for r in both] ==
                  [DEFAULT_REASONING if dialect != "tgi" else ""] * 2,
                  [r.reasoning for r in both])

            # Images: counted and measured.
            turn, want_text = image_turn(dialect)
            seen = ask(port, dialect, body_for(dialect, turn), style)
            check(f"{label} images: '{want_text}'", [r.text for r in seen] == [want_text] * 2,
                  [r.text for r in seen])
    finally:
        proc.terminate()
        proc.wait()


def test_headers(binary):
    proc, port = start(binary, "--model", "m")
    try:
        for value in ("0", "5", "x"):
            r = exchange(port, "POST", "/v1/chat/completions", {"messages": CHAT},
                         {"X-Emulator-Tool-Calls": value})
            detail = json.loads(r.body).get("detail", "") if r.status == 400 else ""
            check(f"bad X-Emulator-Tool-Calls {value!r} -> 400 naming it",
                  r.status == 400 and "X-Emulator-Tool-Calls" in detail, r.body)
        # Completions and other routes stay as they were.
        r = exchange(port, "POST", "/v1/completions", {"prompt": "a b", "max_tokens": 3},
                     {"X-Emulator-Reasoning": "x", "X-Emulator-Tool-Calls": "2"})
        c = json.loads(r.body)["choices"][0]
        check("completions ignore the chat extras", r.status == 200 and "reasoning" not in c and
              c["finish_reason"] == "length", c)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    binary = sys.argv[1]
    for dialect in ROUTES:
        run_dialect(binary, dialect)
    test_headers(binary)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
