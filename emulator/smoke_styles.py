#!/usr/bin/env python3
"""Check of infergate-emulator's wire styles (docs/emulator.md, "Wire styles").

usage: smoke_styles.py PATH/TO/infergate-emulator

For every dialect, streaming and not, each style's answer is read with a raw HTTP/1.1 client
(1xx responses, Content-Length, chunked) and decoded with spec-correct parsers (the WHATWG
event-stream rules, NDJSON, NUL-delimited records). The decoded values must equal those of the
dialect's own layout (objects compared without order; ids, timestamps and durations left out),
and the raw bytes must really carry the style (spaces, CRLF, several data: lines, pieces, 103).
Standard library only; exits non-zero on failure.
"""
import json
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_test import FAILURES, check, start  # noqa: E402

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "hi there"}]
ODD = "m\u00e9/x\U0001f600"  # non-ASCII (one above the BMP) and '/': what ascii escapes
BOM = "\ufeff"

# Values that differ between two identical requests.
VOLATILE = {"id", "created", "created_at", "e2e_latency", "response_sent_to_client_ts",
            "total_duration", "load_duration", "prompt_eval_duration", "eval_duration",
            "timings", "request_id", "expires_at", "modified_at", "seed"}


# --- HTTP ---------------------------------------------------------------------------------------

class Answer:
    """One exchange as a strict HTTP/1.1 client sees it."""
    status = 0
    headers = None    # final response, lower-case names
    interim = None    # [(status, headers)] of the 1xx responses before it
    body = b""
    chunks = None     # sizes of the body's chunks (chunked answers)
    recvs = 0         # recv() calls that returned data


def read_head(data, pos):
    end = data.index(b"\r\n\r\n", pos)
    lines = data[pos:end].decode("latin-1").split("\r\n")
    version, status = lines[0].split(" ")[:2]
    assert version == "HTTP/1.1", lines[0]
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    return int(status), headers, end + 4


def exchange(port, method, path, body=None, headers=None, raw=None):
    """`raw`: the body's bytes as they are (not JSON-encoded)."""
    payload = raw if raw is not None else b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: emulator\r\nConnection: close\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items()) + "\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(head.encode() + payload)
    answer, data = Answer(), b""
    while True:
        piece = s.recv(65536)
        if not piece:
            break
        data += piece
        answer.recvs += 1
    s.close()
    answer.interim, pos = [], 0
    while True:  # RFC 9110 15.2: any number of 1xx before the final response
        status, hd, pos = read_head(data, pos)
        if status >= 200:
            break
        answer.interim.append((status, hd))
    answer.status, answer.headers = status, hd
    if hd.get("transfer-encoding") == "chunked":
        answer.chunks, body = [], b""
        while True:
            eol = data.index(b"\r\n", pos)
            size = int(data[pos:eol], 16)
            pos = eol + 2
            if size == 0:
                assert data[pos:] == b"\r\n", data[pos:]  # no trailers, nothing after
                break
            body += data[pos:pos + size]
            assert data[pos + size:pos + size + 2] == b"\r\n"
            pos += size + 2
            answer.chunks.append(size)
        answer.body = body
    else:
        length = int(hd["content-length"])
        answer.body = data[pos:]
        assert len(answer.body) == length, (len(answer.body), length)
    return answer


# --- stream parsers ------------------------------------------------------------------------------

class Sse:
    """A WHATWG event-stream parser. At EOF a pending event is dispatched too (`eof_event`): the
    spec drops it, but issue 10 asks clients to accept a last event without its blank line."""

    def __init__(self, body):
        text = body.decode("utf-8")
        self.bom = text.startswith(BOM)
        text = text[1:] if self.bom else text
        self.events = []        # [(type, data)]
        self.data_lines = []    # data: lines per event
        self.ids = []           # last event id at each dispatch
        self.retry = None
        self.comments = 0
        self.eof_event = False
        lines = re.split(r"\r\n|\r|\n", text)
        complete = lines[:-1]   # the last piece has no line end: incomplete at EOF
        etype, data, count, last_id = "", [], 0, ""
        for line in complete:
            if line == "":
                if data:
                    self.events.append((etype or "message", "\n".join(data)))
                    self.data_lines.append(count)
                    self.ids.append(last_id)
                etype, data, count = "", [], 0
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
                count += 1
            elif name == "event":
                etype = value
            elif name == "id" and "\0" not in value:
                last_id = value
            elif name == "retry" and value.isdigit():
                self.retry = int(value)
        assert lines[-1] == "", f"an incomplete line at EOF: {lines[-1]!r}"
        if data:
            self.eof_event = True
            self.events.append((etype or "message", "\n".join(data)))
            self.data_lines.append(count)
            self.ids.append(last_id)

    def values(self):
        return [(t, decode(d)) for t, d in self.events]


def decode(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def records(body, delimiter):
    """NDJSON (or NUL-delimited) records; empty records are skipped as the clients do."""
    out = []
    for rec in body.split(delimiter):
        rec = rec[:-1] if delimiter == b"\n" and rec.endswith(b"\r") else rec
        if rec.strip():
            out.append(decode(rec.decode("utf-8")))
    return out


def normalize(value):
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def decoded(kind, answer):
    body = answer.body
    if kind == "sse":
        parsed = Sse(body)
        return [(t, normalize(v)) for t, v in parsed.values()]
    if kind == "ndjson":
        return normalize(records(body, b"\n"))
    if kind == "nul":
        return normalize(records(body, b"\0"))
    return normalize(decode(body.decode("utf-8"))) if body else None


def json_texts(kind, answer):
    """Every JSON text of an answer as written (joined data: lines for SSE)."""
    if kind == "sse":
        texts = [d for _, d in Sse(answer.body).events]
    elif kind in ("ndjson", "nul"):
        delim = b"\n" if kind == "ndjson" else b"\0"
        texts = [r.decode().rstrip("\r") for r in answer.body.split(delim) if r.strip()]
    else:
        texts = [answer.body.decode("utf-8")] if answer.body else []
    out = []
    for t in texts:
        try:
            json.loads(t)
            out.append(t)
        except ValueError:
            pass
    return out


def separators(text):
    """The whitespace after every ':' and ',' outside strings."""
    after = {":": set(), ",": set()}
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in ":,":
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            after[c].add(text[i + 1:j])
        i += 1
    return after


def key_orders(value, out):
    """The key order of every object, keyed by its sorted keys."""
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        keys = tuple(k for k, _ in value)
        if len(keys) > 1:
            out.setdefault(tuple(sorted(keys)), set()).add(keys)
        for _, v in value:
            key_orders(v, out)
    elif isinstance(value, list):
        for v in value:
            key_orders(v, out)
    return out


def orders_of(texts):
    out = {}
    for t in texts:
        key_orders(json.loads(t, object_pairs_hook=list), out)
    return out


# --- the matrix ----------------------------------------------------------------------------------

def requests_for(dialect):
    """(name, kind, method, path, body, headers) per dialect: generation streaming and not, an
    error body, an info route, and something that echoes non-ASCII and '/' text."""
    if dialect == "openai":
        return [
            ("completion", "json", "POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 4}),
            ("chat", "json", "POST", "/v1/chat/completions", {"messages": CHAT, "max_tokens": 3}),
            ("completion stream", "sse", "POST", "/v1/completions",
             {"prompt": PROMPT, "max_tokens": 4, "stream": True,
              "stream_options": {"include_usage": True}}),
            ("chat stream n=2", "sse", "POST", "/v1/chat/completions",
             {"messages": CHAT, "max_tokens": 3, "n": 2, "stream": True}),
            ("in-band error", "sse", "POST", "/v1/completions",
             {"prompt": PROMPT, "max_tokens": 4, "stream": True},
             {"X-Emulator-Fault": "error_event"}),
            ("404 echo", "json", "POST", "/v1/completions", {"model": ODD, "prompt": "a"}),
            ("models", "json", "GET", "/v1/models", None),
        ]
    if dialect == "sglang":
        return [
            ("generate", "json", "POST", "/generate",
             {"text": PROMPT, "sampling_params": {"max_new_tokens": 4}}),
            ("generate stream", "sse", "POST", "/generate",
             {"text": PROMPT, "sampling_params": {"max_new_tokens": 4}, "stream": True}),
            ("chat stream echo", "sse", "POST", "/v1/chat/completions",
             {"model": ODD, "messages": CHAT, "max_tokens": 3, "stream": True}),
            ("stream error", "sse", "POST", "/generate",
             {"text": "a", "sampling_params": {"temperature": -1}, "stream": True}),
            ("model info", "json", "GET", "/get_model_info", None),
        ]
    if dialect == "tgi":
        return [
            ("generate", "json", "POST", "/generate",
             {"inputs": PROMPT, "parameters": {"max_new_tokens": 4, "details": True}}),
            ("generate_stream", "sse", "POST", "/generate_stream",
             {"inputs": PROMPT, "parameters": {"max_new_tokens": 4, "details": True}}),
            ("chat stream", "sse", "POST", "/v1/chat/completions",
             {"messages": CHAT, "max_tokens": 3, "stream": True,
              "stream_options": {"include_usage": True}}),
            ("full text echo", "json", "POST", "/",
             {"inputs": ODD + " a", "parameters": {"max_new_tokens": 2}}),
            ("info", "json", "GET", "/info", None),
        ]
    if dialect == "ollama":
        return [
            ("generate", "json", "POST", "/api/generate",
             {"model": "m", "prompt": PROMPT, "raw": True, "stream": False,
              "options": {"num_predict": 4}}),
            ("generate stream", "ndjson", "POST", "/api/generate",
             {"model": "m", "prompt": PROMPT, "raw": True, "options": {"num_predict": 4}}),
            ("chat stream", "ndjson", "POST", "/api/chat",
             {"model": "m", "messages": CHAT, "options": {"num_predict": 3}}),
            ("show", "json", "POST", "/api/show", {"model": "m"}),
            ("404 echo", "json", "POST", "/api/generate", {"model": ODD, "prompt": "a"}),
            ("tags", "json", "GET", "/api/tags", None),
        ]
    if dialect == "llamacpp":
        return [
            ("completion", "json", "POST", "/completion", {"prompt": PROMPT, "n_predict": 4}),
            ("completion stream", "sse", "POST", "/completion",
             {"prompt": PROMPT, "n_predict": 4, "stream": True}),
            ("chat stream", "sse", "POST", "/v1/chat/completions",
             {"messages": CHAT, "max_tokens": 3, "stream": True}),
            ("prompt echo", "json", "POST", "/completion", {"prompt": ODD + " a", "n_predict": 2}),
            ("props", "json", "GET", "/props", None),
        ]
    if dialect == "vllm_legacy":
        return [
            ("generate echo", "json", "POST", "/generate", {"prompt": ODD + " a", "max_tokens": 3}),
            ("stream n=2", "ndjson", "POST", "/generate",
             {"prompt": PROMPT, "max_tokens": 3, "n": 2, "stream": True}),
            ("stream nul", "nul", "POST", "/generate",
             {"prompt": ODD, "max_tokens": 3, "stream": True},
             {"X-Emulator-Legacy-Delimiter": "nul"}),
        ]
    version = {"anthropic-version": "2023-06-01"}
    return [
        ("messages", "json", "POST", "/v1/messages",
         {"model": "m", "max_tokens": 4, "messages": CHAT}, version),
        ("messages stream", "sse", "POST", "/v1/messages",
         {"model": "m", "max_tokens": 4, "messages": CHAT, "stream": True}, version),
        ("error event", "sse", "POST", "/v1/messages",
         {"model": "m", "max_tokens": 8, "messages": CHAT, "stream": True},
         dict(version, **{"X-Emulator-Fault": "error_event"})),
        ("404 echo", "json", "POST", "/v1/messages",
         {"model": ODD, "max_tokens": 4, "messages": CHAT}, version),
        ("models", "json", "GET", "/v1/models", None),
    ]


DIALECTS = ["openai", "sglang", "tgi", "ollama", "llamacpp", "vllm_legacy", "anthropic"]

# name -> per-request headers
STYLES = {
    "spaced": {"X-Emulator-Json-Style": "spaced"},
    "pretty": {"X-Emulator-Json-Style": "pretty", "X-Emulator-Style-Seed": "7"},
    "ascii": {"X-Emulator-Json-Style": "spaced", "X-Emulator-Json-Escape": "ascii"},
    "framing": {"X-Emulator-Sse-Style": "crlf,nospace,comments,fields,bom,noblank-end",
                "X-Emulator-Ndjson-Style": "crlf,blank,noeol-end"},
    "cr multiline": {"X-Emulator-Sse-Style": "cr,multiline"},
    "split": {"X-Emulator-Split-Writes": "5", "X-Emulator-Early-Hints": "1",
              "X-Emulator-Interim": "100,103"},
    "all": {"X-Emulator-Json-Style": "pretty", "X-Emulator-Json-Escape": "ascii",
            "X-Emulator-Sse-Style": "crlf,multiline,comments,fields,noblank-end",
            "X-Emulator-Ndjson-Style": "crlf,blank", "X-Emulator-Split-Writes": "3",
            "X-Emulator-Early-Hints": "1", "X-Emulator-Style-Seed": "99"},
}


class Tally:
    """Evidence that only shows over several answers."""

    def __init__(self):
        self.reordered = set()  # dialects with an object whose key order changed
        self.ascii_seen = set()  # dialects with \\u00e9 and \\/ in an answer
        self.recvs = 0
        self.split_answers = 0


def check_style(dialect, name, style, req, compact, answer, tally):
    label = f"{dialect} {req[0]} [{name}]"
    kind = req[1]
    sse = style.get("X-Emulator-Sse-Style", "")
    nd = style.get("X-Emulator-Ndjson-Style", "")
    js = style.get("X-Emulator-Json-Style", "compact")
    body = answer.body

    check(f"{label}: status and values as compact",
          answer.status == compact.status and decoded(kind, answer) == decoded(kind, compact),
          (answer.status, body[:300]))
    texts = json_texts(kind, answer)
    if js == "spaced" and texts:
        seps = [separators(t) for t in texts]
        check(f"{label}: json.dumps spacing",
              all(s[":"] <= {" "} and s[","] <= {" "} for s in seps) and
              any(s[":"] == {" "} for s in seps), texts[0][:200])
    if js == "pretty" and texts and "multiline" not in sse:
        one_line = kind in ("ndjson", "nul")
        big = [t for t in texts if len(json.loads(t) or "") > 1 and
               isinstance(json.loads(t), (dict, list))]
        if one_line:
            check(f"{label}: pretty NDJSON on one line, spaced",
                  all("\n" not in t and separators(t)[":"] <= {" "} for t in texts), texts[0])
        elif big:
            check(f"{label}: pretty, indented", all("\n  " in t for t in big), big[0][:200])
        mine, theirs = orders_of(texts), orders_of(json_texts(kind, compact))
        if any(mine.get(k, v) != v for k, v in theirs.items()):
            tally.reordered.add(dialect)
    if style.get("X-Emulator-Json-Escape") == "ascii":
        raw = body[len(BOM.encode()):] if body.startswith(BOM.encode()) else body
        check(f"{label}: ASCII only", all(b < 0x80 for b in raw), raw[:200])
        if b"\\u00e9" in raw and b"\\/" in raw and b"\\ud83d\\ude00" in raw:
            tally.ascii_seen.add(dialect)

    if kind == "sse":
        parsed = Sse(body)
        n = len(parsed.events)
        if "crlf" in sse:
            check(f"{label}: CRLF line ends",
                  body.count(b"\n") == body.count(b"\r\n") > 0, body[:120])
        if "cr" in sse.split(","):
            check(f"{label}: CR line ends", b"\n" not in body and b"\r" in body, body[:120])
        if "nospace" in sse:
            check(f"{label}: no space after the colon",
                  b"data:" in body and not re.search(rb"(^|[\r\n])(data|event|id): ", body),
                  body[:120])
        if "multiline" in sse:
            multi = [c for (t, d), c in zip(parsed.events, parsed.data_lines)
                     if isinstance(decode(d), (dict, list))]
            check(f"{label}: every JSON payload on several data: lines",
                  multi and all(c >= 2 for c in multi), parsed.data_lines)
        if "comments" in sse:
            check(f"{label}: ': ping' comments between events", parsed.comments >= n - 1 > 0,
                  (parsed.comments, n))
        if "fields" in sse:
            check(f"{label}: id: and retry: on every event",
                  parsed.retry == 3000 and parsed.ids == [str(i + 1) for i in range(n)],
                  (parsed.ids, parsed.retry))
            check(f"{label}: event types as compact",
                  [t for t, _ in parsed.events] == [t for t, _ in Sse(compact.body).events])
        if "bom" in sse:
            check(f"{label}: BOM first", parsed.bom and body.startswith(BOM.encode()))
        if "noblank-end" in sse:
            check(f"{label}: last event ends at EOF without its blank line",
                  parsed.eof_event and not body.endswith((b"\n\n", b"\r\n\r\n", b"\r\r")),
                  body[-40:])
    if kind in ("ndjson", "nul"):
        delim = b"\n" if kind == "ndjson" else b"\0"
        if "crlf" in nd and kind == "ndjson":
            check(f"{label}: NDJSON CRLF", body.count(b"\n") == body.count(b"\r\n") > 0)
        if "blank" in nd:
            blank = b"\r\n\r\n" if ("crlf" in nd and kind == "ndjson") else delim * 2
            check(f"{label}: empty records between records", blank in body, body[:120])
        if "noeol-end" in nd:
            check(f"{label}: last record without its delimiter", not body.endswith(delim))
    split = style.get("X-Emulator-Split-Writes")
    if split:
        tally.recvs += answer.recvs
        tally.split_answers += 1
        if answer.chunks is not None and body:
            check(f"{label}: chunks of 1..{split} bytes",
                  max(answer.chunks) <= int(split) and len(answer.chunks) > 1, answer.chunks)
    codes = [s for s, _ in answer.interim]
    interim = style.get("X-Emulator-Interim", "")
    want = ([100] if "100" in interim else []) + \
        ([103] if "103" in interim or style.get("X-Emulator-Early-Hints") == "1" else [])
    check(f"{label}: 1xx before the answer {want}", codes == want and
          all("link" in h for s, h in answer.interim if s == 103), answer.interim)


def run_dialect(binary, dialect, tally):
    proc, port = start(binary, "--dialect", dialect, "--model", "m")
    try:
        for req in requests_for(dialect):
            name, kind, method, path, body = req[:5]
            extra = req[5] if len(req) > 5 else {}
            compact = exchange(port, method, path, body, extra)
            check(f"{dialect} {name}: compact has no 1xx, one piece per event",
                  compact.interim == [] and (compact.chunks is None or kind == "nul" or
                                             len(compact.chunks) >= 1))
            for style_name, style in STYLES.items():
                answer = exchange(port, method, path, body, dict(extra, **style))
                check_style(dialect, style_name, style, req, compact, answer, tally)
        if dialect == "vllm_legacy":
            return  # {"text": [...]} only: no key order to shuffle
        # Same seed, same layout; another seed, another one.
        req = requests_for(dialect)[0]
        hd = dict(req[5] if len(req) > 5 else {}, **{"X-Emulator-Json-Style": "pretty"})
        a = exchange(port, req[2], req[3], req[4], dict(hd, **{"X-Emulator-Style-Seed": "5"}))
        b = exchange(port, req[2], req[3], req[4], dict(hd, **{"X-Emulator-Style-Seed": "5"}))
        c = exchange(port, req[2], req[3], req[4], dict(hd, **{"X-Emulator-Style-Seed": "6"}))
        sig = [orders_of(json_texts(req[1], x)) for x in (a, b, c)]
        check(f"{dialect}: pretty key order deterministic per seed",
              sig[0] == sig[1] and sig[0] != sig[2], sig)
    finally:
        proc.terminate()
        proc.wait()


def test_reset_after_pieces(binary):
    """reset_midstream promises its events before the RST, also when they went out in pieces
    the kernel may still hold (an abortive close discards unsent bytes)."""
    proc, port = start(binary, "--model", "m")
    try:
        body = json.dumps({"prompt": PROMPT, "max_tokens": 16, "stream": True}).encode()
        for attempt in range(10):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                      b"X-Emulator-Fault: reset_midstream\r\nX-Emulator-Fault-After: 3\r\n"
                      b"X-Emulator-Split-Writes: 2\r\n\r\n%s" % (len(body), body))
            data, ended = b"", "eof"
            try:
                while True:
                    piece = s.recv(65536)
                    if not piece:
                        break
                    data += piece
            except ConnectionResetError:
                ended = "reset"
            s.close()
            pos = data.find(b"\r\n\r\n") + 4  # 3: not even the head arrived whole
            chunked, rest = b"", data[pos:] if pos > 3 else b""
            while b"\r\n" in rest:  # the chunks that arrived whole
                size, _, after = rest.partition(b"\r\n")
                n = int(size, 16)
                if len(after) < n + 2:
                    break
                chunked, rest = chunked + after[:n], after[n + 2:]
            events = chunked.count(b"\n\n")
            check(f"reset_midstream after split writes: 3 events, then RST (try {attempt})",
                  ended == "reset" and events == 3, (ended, events, data[:80]))
    finally:
        proc.terminate()
        proc.wait()


def test_cli_and_headers(binary):
    """CLI flags set the defaults; headers override them; bad values fail loudly."""
    proc, port = start(binary, "--model", "m", "--json-style", "spaced", "--sse-style",
                       "crlf,multiline", "--split-writes", "--early-hints", "--style-seed=3")
    try:
        req = {"prompt": PROMPT, "max_tokens": 3, "stream": True}
        a = exchange(port, "POST", "/v1/completions", req)
        parsed = Sse(a.body)
        check("cli: spaced, CRLF, multi-line, split, 103",
              b"\r\n" in a.body and b'": ' in a.body and max(parsed.data_lines) >= 2 and
              max(a.chunks) <= 7 and [s for s, _ in a.interim] == [103], a.body[:200])
        b = exchange(port, "POST", "/v1/completions", req,
                     {"X-Emulator-Json-Style": "compact", "X-Emulator-Sse-Style": "none",
                      "X-Emulator-Split-Writes": "0", "X-Emulator-Early-Hints": "0"})
        check("headers switch the CLI style off",
              b"\r" not in b.body and b'": ' not in b.body and b.interim == [] and
              len(b.chunks) == len(Sse(b.body).events) and
              decoded("sse", a) == decoded("sse", b), b.body[:200])
        c = exchange(port, "GET", "/v1/models", None, {"Connection": "close"})
        check("cli style on an info route", b'": ' in c.body and c.recvs >= 1, c.body[:100])
        for header, value in [("X-Emulator-Json-Style", "fancy"),
                              ("X-Emulator-Sse-Style", "crlf,cr"),
                              ("X-Emulator-Sse-Style", "crlf,bogus"),
                              ("X-Emulator-Ndjson-Style", "tabs"),
                              ("X-Emulator-Split-Writes", "-1"),
                              ("X-Emulator-Early-Hints", "maybe"),
                              ("X-Emulator-Interim", "101"),
                              ("X-Emulator-Style-Seed", "x\"y")]:
            r = exchange(port, "POST", "/v1/completions", req, {header: value})
            detail = json.loads(r.body).get("detail", "") if r.status == 400 else ""
            check(f"bad {header}: {value!r} -> 400 naming it",
                  r.status == 400 and header in detail and value in detail, r.body)
        # No 1xx to an HTTP/1.0 client (RFC 9110 15.2).
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            data += piece
        s.close()
        check("no 1xx to HTTP/1.0", data.startswith(b"HTTP/1.1 200 "), data[:40])
    finally:
        proc.terminate()
        proc.wait()
    for args in (["--json-style", "fancy"], ["--sse-style", "cr,crlf"], ["--split-writes=x"],
                 ["--interim", "199"]):
        r = subprocess.run([binary, "--listen", "127.0.0.1:0", *args], capture_output=True,
                           text=True, timeout=10)
        check(f"cli {' '.join(args)} -> exit 2", r.returncode == 2 and "bad value" in r.stderr,
              r.stderr)


if __name__ == "__main__":
    binary = sys.argv[1]
    tally = Tally()
    for dialect in DIALECTS:
        run_dialect(binary, dialect, tally)
    # vLLM legacy writes only {"text": [...]}: no object with two keys to reorder.
    check("pretty shuffles key order in every dialect",
          tally.reordered == set(DIALECTS) - {"vllm_legacy"}, sorted(tally.reordered))
    check("ascii escapes \\u00e9, \\ud83d\\ude00 and \\/ in every dialect",
          tally.ascii_seen == set(DIALECTS), sorted(tally.ascii_seen))
    check("split writes arrive in several recv()s",
          tally.recvs > tally.split_answers, (tally.recvs, tally.split_answers))
    test_reset_after_pieces(binary)
    test_cli_and_headers(binary)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
