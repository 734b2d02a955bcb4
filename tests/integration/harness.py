"""Shared harness for infergate's integration tests (Python 3.11, stdlib only).

Starts the real binaries on port 0 (the proxy and the deterministic emulator), talks HTTP to
them with http.client, and reads SSE streams incrementally, recording when each event arrived.

Binaries come from INFERGATE_BIN / INFERGATE_EMULATOR_BIN (ctest sets both); when unset, from
<repo>/build/proxy/infergate and <repo>/build/emulator/infergate-emulator.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 10.0
DEFAULT_HTTP_TIMEOUT_S = 15.0


# ---------------------------------------------------------------------------------------------
# Binaries
# ---------------------------------------------------------------------------------------------

def _binary(env_var: str, relative: str) -> str:
    value = os.environ.get(env_var)
    if value:
        if not os.access(value, os.X_OK):
            raise RuntimeError(f"{env_var}={value} is not an executable file")
        return value
    candidate = REPO / "build" / relative
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    raise RuntimeError(
        f"cannot find the {Path(relative).name} binary: set {env_var} to its path "
        f"(ctest does this) or build it into {candidate}")


def proxy_binary() -> str:
    return _binary("INFERGATE_BIN", "proxy/infergate")


def emulator_binary() -> str:
    return _binary("INFERGATE_EMULATOR_BIN", "emulator/infergate-emulator")


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------

_LIVE: set["Process"] = set()
_LIVE_LOCK = threading.Lock()


def _stop_all() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        p.stop()


atexit.register(_stop_all)


def _on_sigterm(signum, frame):
    # ctest's timeout (and most runners) send SIGTERM: exit through atexit so children stop.
    raise SystemExit(128 + signum)


if threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _on_sigterm)


def _die_with_parent() -> None:
    """preexec_fn: on Linux, the child gets SIGKILL if the test process dies (even by SIGKILL)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass

_LISTEN_RE = re.compile(r"listening on (\S+):(\d+)")
# The proxy with admin_listen prints this before its first "listening on" line.
_ADMIN_LISTEN_RE = re.compile(r"^admin listening on (\S+):(\d+)")


def read_text(path: str) -> str:
    """A log file's text so far ("" when it cannot be read)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def terminate(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM, then SIGKILL after `grace_s` seconds; nothing when it already ended."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


class Process:
    """A child process that prints `listening on HOST:PORT` on stdout once it serves.

    stderr goes to a temporary file (read it with stderr_text()); stdout after the first line is
    drained by a thread so the child never blocks on a full pipe.
    """

    def __init__(self, argv: list[str], name: str, preexec=None):
        """`preexec`: also run in the child before exec (resource limits, say)."""
        self.argv = argv
        self.name = name
        self._stderr_file = tempfile.NamedTemporaryFile(
            prefix=f"infergate-itest-{name}-", suffix=".log", delete=False)
        self.stderr_path = self._stderr_file.name
        self.stdout_lines: list[str] = []
        # The admin listener's address, when the process printed one (the proxy with
        # admin_listen / --admin-listen); None otherwise.
        self.admin_host: str | None = None
        self.admin_port: int | None = None
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr_file, start_new_session=True,
                                     preexec_fn=_die_with_parent if preexec is None
                                     else lambda: (_die_with_parent(), preexec()))
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self.host, self.port = self._await_listening()
        except BaseException:
            self.stop()
            raise
        threading.Thread(target=self._drain, daemon=True).start()

    def _await_listening(self) -> tuple[str, int]:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        buf = b""
        try:
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break  # EOF: the process exited
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    text = line.decode("utf-8", "replace")
                    self.stdout_lines.append(text)
                    admin = _ADMIN_LISTEN_RE.search(text)
                    if admin:
                        if self.admin_port is None:  # the first of several addresses
                            self.admin_host, self.admin_port = admin.group(1), int(admin.group(2))
                        continue
                    m = _LISTEN_RE.search(text)
                    if m:
                        return m.group(1), int(m.group(2))
        finally:
            sel.close()
        code = self.proc.poll()
        raise RuntimeError(
            f"{self.name} did not print 'listening on HOST:PORT' within {STARTUP_TIMEOUT_S}s "
            f"(exit code {code}); argv={self.argv}\nstdout: {self.stdout_lines}\n"
            f"stderr: {self.stderr_text()[-2000:]}")

    def _drain(self) -> None:
        try:
            for line in self.proc.stdout:
                self.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
        except (OSError, ValueError):
            pass

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stderr_text(self) -> str:
        return read_text(self.stderr_path)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        terminate(self.proc, grace_s=5)
        try:
            if self.proc.stdout:
                self.proc.stdout.close()
        except OSError:
            pass
        try:
            self._stderr_file.close()
        except OSError:
            pass
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def cleanup_files(self) -> None:
        try:
            os.unlink(self.stderr_path)
        except OSError:
            pass


# Another wire style than the emulator's default (compact JSON, `data: ` + LF, one write per
# event), equally valid and written by real servers: JSON with Python's spaces and every
# non-ASCII character and '/' escaped, CRLF line ends, `: ping` comments, `id:`/`retry:` lines and
# payloads over several `data:` lines in SSE, CRLF and blank lines between NDJSON records, and
# every write cut into pieces of 1-7 bytes. The integration matrices run against both.
OTHER_WIRE_STYLE = ["--json-style", "spaced", "--json-escape", "ascii",
                    "--sse-style", "crlf,comments,fields,multiline",
                    "--ndjson-style", "crlf,blank", "--split-writes", "7"]


class Emulator(Process):
    def __init__(self, dialect: str, model: str, extra: Iterable[str] = ()):
        self.dialect = dialect
        self.model = model
        argv = [emulator_binary(), "--listen", "127.0.0.1:0", "--dialect", dialect,
                "--model", model, *extra]
        super().__init__(argv, f"emulator-{dialect}")

    def request_log(self) -> list[str]:
        """The emulator's per-request lines: 'METHOD /path 12.3ms' (written when a request ends)."""
        return [l for l in self.stderr_text().splitlines()
                if re.match(r"^[A-Z]+ /\S* [0-9.]+ms$", l)]


class Proxy(Process):
    def __init__(self, args: Iterable[str] = (), config_yaml: str | None = None,
                 wait_ready: bool = True, model: str | None = None, preexec=None):
        """`model`: the backend's served name; readiness waits until /v1/models lists it
        (aliases are listed before the backend probe has finished)."""
        self.config_path = None
        argv = [proxy_binary(), "--listen", "127.0.0.1:0"]
        if config_yaml is not None:
            f = tempfile.NamedTemporaryFile("w", prefix="infergate-itest-", suffix=".yaml",
                                            delete=False)
            f.write(config_yaml)
            f.close()
            self.config_path = f.name
            argv += ["--config", f.name]
        argv += list(args)
        super().__init__(argv, "infergate", preexec)
        if wait_ready:
            try:
                self.wait_ready(model=model)
            except BaseException:
                self.stop()
                raise

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S, model: str | None = None) -> dict:
        """Polls GET /v1/models until it lists a model (`model` if given; bounded)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if not self.alive():
                break
            try:
                r = request(self.port, "GET", "/v1/models", timeout=2)
                last = (r.status, r.body[:300])
                if r.status == 200:
                    doc = r.json()
                    ids = [m.get("id") for m in doc.get("data", [])]
                    if ids and (model is None or model in ids):
                        return doc
            except (OSError, http.client.HTTPException, ValueError) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(f"proxy not ready within {timeout}s (last answer: {last}); "
                           f"stderr: {self.stderr_text()[-2000:]}")

    def cleanup_files(self) -> None:
        super().cleanup_files()
        if self.config_path:
            try:
                os.unlink(self.config_path)
            except OSError:
                pass


def start(testcase_cls: type[unittest.TestCase], factory, *args, **kwargs):
    """Starts a process inside setUpClass and registers its stop as a class cleanup (which runs
    even when setUpClass fails later)."""
    p = factory(*args, **kwargs)
    testcase_cls.addClassCleanup(p.cleanup_files)
    testcase_cls.addClassCleanup(p.stop)
    return p


def closed_port() -> int:
    """A port nothing listens on (bound then released; good enough on loopback)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------

@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    elapsed: float = 0.0

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def _encode_body(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def request(port: int, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None, timeout: float = DEFAULT_HTTP_TIMEOUT_S,
            host: str = "127.0.0.1") -> Response:
    """One request on a fresh connection; reads the whole body."""
    data = _encode_body(body)
    hdrs = {"Content-Type": "application/json"} if data is not None else {}
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.monotonic()
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload,
                        time.monotonic() - t0)
    finally:
        conn.close()


def post_json(port: int, path: str, body: Any, headers: dict[str, str] | None = None,
              timeout: float = DEFAULT_HTTP_TIMEOUT_S) -> Response:
    return request(port, "POST", path, body, headers, timeout)


# ---------------------------------------------------------------------------------------------
# SSE
# ---------------------------------------------------------------------------------------------

@dataclass
class SseEvent:
    data: str
    t: float  # seconds since the request was sent
    raw: bytes

    @property
    def done(self) -> bool:
        return self.data == "[DONE]"

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class Stream:
    """A streaming response read incrementally. Iterate it (or call read_all()) to get events."""

    status: int
    headers: dict[str, str]
    conn: http.client.HTTPConnection
    resp: http.client.HTTPResponse
    t0: float
    raw: bytearray = field(default_factory=bytearray)
    events: list[SseEvent] = field(default_factory=list)
    eof: bool = False
    _buf: bytes = b""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def _split(self) -> list[SseEvent]:
        out = []
        while True:
            m = re.search(rb"\r?\n\r?\n", self._buf)
            if not m:
                break
            block, self._buf = self._buf[:m.end()], self._buf[m.end():]
            lines = re.split(rb"\r?\n", block[:m.start()])
            data_lines = []
            for line in lines:
                if line.startswith(b":"):
                    continue
                if line.startswith(b"data:"):
                    v = line[5:]
                    if v.startswith(b" "):
                        v = v[1:]
                    data_lines.append(v)
            if not data_lines:
                continue
            ev = SseEvent(b"\n".join(data_lines).decode("utf-8", "replace"),
                          time.monotonic() - self.t0, block)
            self.events.append(ev)
            out.append(ev)
        return out

    def next_events(self) -> list[SseEvent]:
        """Blocks until at least one more event or EOF; returns the new events ([] at EOF)."""
        while not self.eof:
            chunk = self.resp.read1(65536)
            if not chunk:
                self.eof = True
                break
            self.raw += chunk
            self._buf += chunk
            got = self._split()
            if got:
                return got
        return []

    def __iter__(self) -> Iterator[SseEvent]:
        for ev in list(self.events):
            yield ev
        while True:
            got = self.next_events()
            if not got:
                return
            yield from got

    def read_all(self) -> list[SseEvent]:
        while self.next_events():
            pass
        self.close()
        return self.events

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass


def open_stream(port: int, path: str, body: Any, headers: dict[str, str] | None = None,
                timeout: float = DEFAULT_HTTP_TIMEOUT_S) -> Stream | Response:
    """POSTs `body` and returns a Stream for a 200 text/event-stream answer, else a Response
    with the whole body."""
    data = _encode_body(body)
    hdrs = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.monotonic()
    conn.request("POST", path, body=data, headers=hdrs)
    resp = conn.getresponse()
    hd = {k.lower(): v for k, v in resp.getheaders()}
    if resp.status != 200 or not hd.get("content-type", "").startswith("text/event-stream"):
        payload = resp.read()
        conn.close()
        return Response(resp.status, hd, payload, time.monotonic() - t0)
    return Stream(resp.status, hd, conn, resp, t0)


def stream(port: int, path: str, body: Any, headers: dict[str, str] | None = None,
           timeout: float = DEFAULT_HTTP_TIMEOUT_S) -> Stream:
    """Like open_stream, but fails unless the answer is a 200 event stream; reads it whole."""
    s = open_stream(port, path, body, headers, timeout)
    if isinstance(s, Response):
        raise AssertionError(f"expected a 200 event stream from POST {path}, got {s.status} "
                             f"{s.headers.get('content-type')}: {s.body[:500]!r}")
    s.read_all()
    return s


STRICT_EVENT_RE = re.compile(rb"data: (?:\[DONE\]|\{[^\n]*\})\n\n")
KEEPALIVE_RE = re.compile(rb":[^\r\n]*\n\n")


def strict_framing_problem(raw: bytes) -> str | None:
    """None if `raw` is exactly a sequence of `data: <one-line JSON or [DONE]>\\n\\n` events
    whose JSON parses, and keep-alive comments (`: ping\\n\\n`, passed on from the backend);
    else a description of the first problem."""
    pos = 0
    while pos < len(raw):
        m = KEEPALIVE_RE.match(raw, pos)
        if m:
            pos = m.end()
            continue
        m = STRICT_EVENT_RE.match(raw, pos)
        if not m:
            return f"bad framing at byte {pos}: {raw[pos:pos + 120]!r}"
        payload = m.group(0)[6:-2]
        if payload != b"[DONE]":
            try:
                json.loads(payload)
            except ValueError as e:
                return f"event at byte {pos} is not JSON ({e}): {payload[:120]!r}"
        pos = m.end()
    return None


# ---------------------------------------------------------------------------------------------
# Small utilities
# ---------------------------------------------------------------------------------------------

def keys_file(text: str) -> str:
    """A client keys file (config auth.keys_file) holding `text`; the caller deletes it."""
    f = tempfile.NamedTemporaryFile("w", prefix="infergate-keys-", delete=False)
    f.write(text)
    f.close()
    return f.name


def read_raw_response(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One whole response read from a raw socket (Content-Length framed), or what came before
    the close: (status, headers with lower-case names, body)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = s.recv(65536)
        if not data:
            raise ConnectionError(f"closed before a response head; got {buf!r}")
        buf += data
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        data = s.recv(65536)
        if not data:
            break
        body += data
    return status, headers, body[:length]


def wait_until(predicate, timeout: float, interval: float = 0.02, what: str = "condition"):
    """Polls `predicate` until it returns a truthy value (returned) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def run_in_thread(fn, *args, **kwargs):
    """Runs fn in a daemon thread; returns a join() function that returns fn's result or
    re-raises its exception."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in join
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()

    def join(timeout: float = 30.0):
        t.join(timeout)
        if t.is_alive():
            raise AssertionError(f"background call {fn.__name__} did not finish in {timeout}s")
        if "error" in box:
            raise box["error"]
        return box.get("result")

    return join


# ---------------------------------------------------------------------------------------------
# Reference answers: the backend asked directly, in its own dialect
# ---------------------------------------------------------------------------------------------

@dataclass
class Ref:
    """One choice as the backend itself reports it."""

    index: int
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish: str        # "length" or "stop"
    matched: Any       # length: the budget; stop: the matched string / token id, or None


def direct_raw(emu: Emulator, prompts: Any, max_tokens: int, *, stop: Any = None, n: int = 1,
               ids: bool = False, headers: dict[str, str] | None = None,
               extra: dict[str, Any] | None = None) -> list[Ref]:
    """A raw-prompt generation straight at the emulator, normalised per choice (index order).

    sglang: POST /generate. openai: a streamed POST /v1/completions with continuous usage, the
    only vLLM answer that reports per-choice completion_tokens.
    """
    if emu.dialect == "sglang":
        sp: dict[str, Any] = {"max_new_tokens": max_tokens}
        if stop is not None:
            sp["stop"] = stop
        if n != 1:
            sp["n"] = n
        sp.update(extra or {})
        body = {"input_ids" if ids else "text": prompts, "sampling_params": sp}
        r = post_json(emu.port, "/generate", body, headers)
        if r.status != 200:
            raise AssertionError(f"reference request failed: {r.status} {r.body[:300]!r}")
        doc = r.json()
        items = doc if isinstance(doc, list) else [doc]
        refs = []
        for i, it in enumerate(items):
            mi = it["meta_info"]
            fr = mi["finish_reason"]
            refs.append(Ref(i, it["text"], mi["prompt_tokens"], mi["completion_tokens"],
                            fr["type"], fr.get("length") if fr["type"] == "length"
                            else fr.get("matched")))
        return refs
    body = {"model": emu.model, "prompt": prompts, "max_tokens": max_tokens, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    if stop is not None:
        body["stop"] = stop
    if n != 1:
        body["n"] = n
    body.update(extra or {})
    s = stream(emu.port, "/v1/completions", body, headers)
    acc: dict[int, dict[str, Any]] = {}
    for ev in s.events:
        if ev.done:
            continue
        doc = ev.json()
        for ch in doc.get("choices", []):
            a = acc.setdefault(ch["index"], {"text": "", "pt": 0, "ct": 0, "fin": None,
                                             "sr": None})
            a["text"] += ch.get("text", "")
            if doc.get("usage"):
                a["pt"] = doc["usage"]["prompt_tokens"]
                a["ct"] = doc["usage"]["completion_tokens"]
            if ch.get("finish_reason"):
                a["fin"] = ch["finish_reason"]
                a["sr"] = ch.get("stop_reason")
    refs = []
    for i in sorted(acc):
        a = acc[i]
        refs.append(Ref(i, a["text"], a["pt"], a["ct"], a["fin"],
                        max_tokens if a["fin"] == "length" else a["sr"]))
    return refs


def direct_chat(emu: Emulator, messages: list[dict], max_tokens: int, *, stop: Any = None,
                n: int = 1, headers: dict[str, str] | None = None) -> dict:
    """A chat completion straight at the emulator (both dialects serve /v1/chat/completions)."""
    body: dict[str, Any] = {"model": emu.model, "messages": messages, "max_tokens": max_tokens}
    if stop is not None:
        body["stop"] = stop
    if n != 1:
        body["n"] = n
    r = post_json(emu.port, "/v1/chat/completions", body, headers)
    if r.status != 200:
        raise AssertionError(f"reference chat failed: {r.status} {r.body[:300]!r}")
    return r.json()


def sglang_finish(ref: Ref) -> dict:
    """The SGLang native finish_reason object equivalent to a reference choice."""
    if ref.finish == "length":
        return {"type": "length", "length": ref.matched}
    return {"type": "stop", "matched": ref.matched}


# The emulator's vocabulary (emulator/generator.cpp): word i is token id i + 100.
VOCABULARY = (
    "the a of and to in is it that was for on are with as at be this from or one had by word "
    "but not what all were we when your can said there use an each which she do how their if "
    "will up other about out many then them these so some her would make like him into time "
    "has look").split()


def token_id(word: str) -> int:
    return VOCABULARY.index(word) + 100


def words(text: str) -> int:
    return len(text.split())
