"""A scripted-bytes backend for integration tests: it answers each request with exactly the bytes
a test gives it, so any response shape a real server may write (recorded captures, spacing, key
order, CRLF, multi-line `data:`, 1xx responses, odd framing) can be tested without teaching the
emulator every variation.

    backend = ScriptedBackend()
    backend.route("POST", "/v1/completions", sse_reply(['{"id": "x", ...}', "[DONE]"], crlf=True))
    proxy = Proxy(["--upstream", backend.url, "--upstream-dialect", "openai", "--model", "m"])
    ...
    backend.requests  # every request received: method, path, headers, body

A route's answer is a `Reply` (or a function of the `Request` returning one). A `Reply` is raw
bytes written in pieces: the head, then each body piece as a separate write (TCP_NODELAY), so a
test can choose where reads split. Unknown routes answer 404 with a JSON body. Connections are
kept alive unless a reply says otherwise. Python stdlib only; one thread per connection.
"""

from __future__ import annotations

import json
import random
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


@dataclass
class Request:
    method: str
    path: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """Raw response bytes. `pieces` are written one write each, in order, after `head`."""
    head: bytes
    pieces: list[bytes] = field(default_factory=list)
    close: bool = False  # close the connection after the reply


def split_random(data: bytes, seed: int = 0, max_piece: int = 7) -> list[bytes]:
    """`data` cut at random points into pieces of 1..max_piece bytes (deterministic per seed)."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, max_piece)
        out.append(data[i:i + n])
        i += n
    return out


def _head(status: int, reason: str, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunk(piece: bytes) -> bytes:
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


def raw_reply(status: int, body: bytes, content_type: str = "application/json", *,
              reason: str = "OK", extra_headers: Iterable[tuple[str, str]] = (),
              chunked: bool = False, pieces: list[bytes] | None = None,
              interim: bytes = b"", close: bool = False) -> Reply:
    """A whole response. `pieces` (default: the body as one piece) are each sent as one write;
    with `chunked` each piece is one HTTP chunk. `interim`: raw 1xx responses sent first."""
    headers = [("Content-Type", content_type), *extra_headers]
    if close:
        headers.append(("Connection", "close"))
    parts = pieces if pieces is not None else [body]
    assert b"".join(parts) == body, "pieces must add up to the body"
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
        wire = [_chunk(p) for p in parts if p] + [b"0\r\n\r\n"]
    else:
        headers.append(("Content-Length", str(len(body))))
        wire = list(parts)
    return Reply(interim + _head(status, reason, headers), wire, close)


def json_reply(obj: Any, status: int = 200, *, style: str = "spaced", **kw) -> Reply:
    return raw_reply(status, dumps(obj, style).encode(), **kw)


def dumps(obj: Any, style: str = "compact") -> str:
    """JSON in one of the styles real servers write: `compact` (no spaces), `spaced` (Python's
    json.dumps default: ", " and ": "), `pretty` (indented, multi-line), `ascii` (spaced, with
    every non-ASCII character and '/' escaped)."""
    if style == "compact":
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    if style == "spaced":
        return json.dumps(obj, ensure_ascii=False)
    if style == "pretty":
        return json.dumps(obj, indent=2, ensure_ascii=False)
    if style == "ascii":
        return json.dumps(obj).replace("/", "\\/")
    raise ValueError(style)


def sse_bytes(payloads: Iterable[str], *, crlf: bool = False, space: bool = True,
              multiline: bool = False, comments: bool = False, event: str | None = None,
              ids: bool = False, retry: bool = False, last_blank: bool = True) -> bytes:
    """SSE events with the given `data` payloads, written in a chosen style: CRLF line ends,
    `data:` with or without its space, a payload that holds newlines split over several `data:`
    lines (`multiline`; always, since a raw newline cannot be in one data line), a `: ping`
    comment before each event, an `event:` name, `id:` lines and a `retry:` line in the first
    event, and no blank line after the
    last event (`last_blank=False`: the stream ends at EOF, as the spec allows)."""
    nl = "\r\n" if crlf else "\n"
    prefix = "data: " if space else "data:"
    out = []
    items = list(payloads)
    for i, p in enumerate(items):
        lines = []
        if comments:
            lines.append(": ping")
        if event:
            lines.append(f"event: {event}")
        if ids:
            lines.append(f"id: {i}")
        if retry and i == 0:
            lines.append("retry: 1000")
        lines.extend(prefix + part for part in (p.split("\n") if (multiline or "\n" in p) else [p]))
        text = nl.join(lines) + nl
        if last_blank or i + 1 < len(items):
            text += nl
        out.append(text)
    return "".join(out).encode()


def sse_reply(payloads: Iterable[str], *, split: int | None = None, chunked: bool = True,
              interim: bytes = b"", **style) -> Reply:
    """A 200 text/event-stream answer; `split=SEED` cuts the bytes into random small writes."""
    body = sse_bytes(payloads, **style)
    pieces = split_random(body, split) if split is not None else None
    return raw_reply(200, body, "text/event-stream", chunked=chunked, pieces=pieces,
                     interim=interim)


def ndjson_reply(lines: Iterable[str], *, crlf: bool = False, blank_lines: bool = False,
                 split: int | None = None, chunked: bool = True) -> Reply:
    nl = "\r\n" if crlf else "\n"
    body = "".join(line + nl + (nl if blank_lines else "") for line in lines).encode()
    pieces = split_random(body, split) if split is not None else None
    return raw_reply(200, body, "application/x-ndjson", chunked=chunked, pieces=pieces)


Handler = Reply | Callable[[Request], Reply]


class ScriptedBackend:
    def __init__(self, host: str = "127.0.0.1"):
        self._routes: dict[tuple[str, str], Handler] = {}
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.connections = 0
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(64)
        self.host = host
        self.port = self._sock.getsockname()[1]
        self._closed = False
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def route(self, method: str, path: str, handler: Handler) -> "ScriptedBackend":
        with self._lock:
            self._routes[(method, path)] = handler
        return self

    def requests_to(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def stop(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass
        drop_connections(self)

    # ---- internals ------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, version = lines[0].split(" ", 2)
                headers = []
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers.append((k.strip(), v.strip()))
                length = 0
                for k, v in headers:
                    if k.lower() == "content-length":
                        length = int(v)
                while len(buf) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                req = Request(method, path, version, headers, body)
                with self._lock:
                    self.requests.append(req)
                    handler = self._routes.get((method, path.split("?", 1)[0]))
                if handler is None:
                    reply = json_reply({"error": f"no scripted route {method} {path}"}, 404,
                                       reason="Not Found")
                else:
                    reply = handler(req) if callable(handler) else handler
                conn.sendall(reply.head)
                for piece in reply.pieces:
                    conn.sendall(piece)
                if reply.close:
                    conn.shutdown(socket.SHUT_WR)
                    return
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass


# ---- added for tests/integration/test_http_rfc.py -------------------------------------------

def in_pieces(reply: Reply, seed: int = 0, max_piece: int = 7) -> Reply:
    """The same reply with its whole bytes (the head too, not only the body) cut into random
    small writes: a response head split at any byte."""
    wire = reply.head + b"".join(reply.pieces)
    return Reply(b"", split_random(wire, seed, max_piece), reply.close)


def hang_up() -> Reply:
    """No answer at all: the backend reads the whole request, then closes the connection."""
    return Reply(b"", [], close=True)


def drop_connections(backend: ScriptedBackend) -> int:
    """Closes every connection `backend` holds open, as a server closes idle keep-alive
    connections (or a restarted one has lost them); it keeps listening. Returns how many."""
    with backend._lock:
        conns, backend._conns = backend._conns, []
    for c in conns:
        try:
            c.shutdown(socket.SHUT_RDWR)
            c.close()
        except OSError:
            pass
    return len(conns)


def exact_reply(status: int, reason: str, headers: Iterable[tuple[str, str | None]],
                body: bytes = b"", *, close: bool = False) -> Reply:
    """A response with exactly these header lines, in this order and spelling, as a given server
    writes them (raw_reply writes its own); nothing is added. A header whose value is None gets
    the body's length: put Content-Length where that server puts it."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    for name, value in headers:
        lines.append(f"{name}: {len(body) if value is None else value}")
    return Reply(("\r\n".join(lines) + "\r\n\r\n").encode(), [body] if body else [], close)
