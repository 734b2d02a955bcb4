"""HTTP as RFC 9110 and RFC 9112 require, on both sides of the proxy (issue 10, section 3).

Backend side, through a scripted-bytes backend: interim 1xx responses before the real one (the
real one must not be left in a pooled connection for the next request to read), a request that
may have been processed is never sent twice, compressed responses are refused by name, and the
framing variations the RFCs allow (a head split at any byte, obs-fold, odd whitespace,
Content-Length lists and leading zeros, chunk extensions and trailers) are read as they say.

Client side, over raw sockets: Transfer-Encoding other than a final `chunked` (a request-smuggling
vector) is refused and the connection closed, HEAD has the real Content-Length and no body, no
`100 Continue` goes to an HTTP/1.0 client, and headers named in `Connection:` stay on this hop.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import unittest

from checks import StreamChecks
from harness import (Proxy, Response, post_json, request, start, strict_framing_problem,
                     wait_until)
from scripted import (Reply, ScriptedBackend, drop_connections, hang_up, in_pieces, json_reply,
                      raw_reply, sse_reply, dumps)

MODEL = "rfc-model"
CMPL = "/v1/completions"
GEN = "/generate"
EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def completion(text: str, *, style: str = "compact") -> bytes:
    """A whole OpenAI /v1/completions answer carrying `text`."""
    return dumps({"id": "cmpl-rfc", "object": "text_completion", "created": 1, "model": MODEL,
                  "choices": [{"index": 0, "text": text, "logprobs": None,
                               "finish_reason": "length"}],
                  "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}},
                 style).encode()


def completion_chunks(text: str) -> list[str]:
    """The events of an OpenAI completions stream carrying `text` in two pieces."""
    half = len(text) // 2

    def chunk(piece, finish):
        return dumps({"id": "cmpl-rfc", "object": "text_completion", "created": 1,
                      "model": MODEL, "choices": [{"index": 0, "text": piece, "logprobs": None,
                                                   "finish_reason": finish}]})
    usage = dumps({"id": "cmpl-rfc", "object": "text_completion", "created": 1, "model": MODEL,
                   "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 2,
                                            "total_tokens": 4}})
    return [chunk(text[:half], None), chunk(text[half:], "length"), usage, "[DONE]"]


def answer_for(req) -> str:
    """Each request's own answer: a request that reads another's shows it at once."""
    return "answer to " + req.json()["prompt"]


def cmpl_body(prompt: str, stream: bool = False) -> dict:
    body = {"model": MODEL, "prompt": prompt, "max_tokens": 3}
    if stream:
        body["stream"] = True
    return body


def raw(port: int, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Sends `data` on a new connection and reads until the proxy closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        out = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
    return out


def read_response(sock: socket.socket, buf: bytes = b"", head_only: bool = False
                  ) -> tuple[bytes, bytes, bytes]:
    """One response with a Content-Length from `sock`: (head, body, bytes after it)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed inside a response head: {buf[:300]!r}")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if head_only:
        return head, b"", rest
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed inside a response body")
        rest += chunk
    return head, rest[:length], rest[length:]


def header_of(head: bytes, name: str) -> str | None:
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name.lower().encode():
            return v.strip().decode()
    return None


def http_responses(data: bytes) -> int:
    """How many status lines a byte stream holds (a smuggled request shows as a second one)."""
    return data.count(b"HTTP/1.1 ") + data.count(b"HTTP/1.0 ")


class _Scripted(StreamChecks):
    """A proxy in front of a scripted OpenAI-compatible backend that identifies as vLLM."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("GET", "/v1/models", json_reply(
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "vllm"}]}))
        cls.backend.route("GET", "/health", raw_reply(200, b"", "text/plain"))
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend.url, "--upstream-dialect",
                                       "openai", "--model", MODEL], model=MODEL)
        cls.port = cls.proxy.port
        # The probe's own connection is not the worker's pool: let it finish its round (it logs
        # what it found) so that connection counts below are the exchanges' only.
        wait_until(lambda: f"({cls.backend.url}): " in cls.proxy.stderr_text(), 5.0,
                   what="the probe's round")

    def setUp(self):
        self.addCleanup(drop_connections, self.backend)  # no pooled connection leaks across

    def route(self, path: str, handler) -> None:
        self.backend.route("POST", path, handler)

    def assert_own_answers(self, stream: bool, prompts=("one", "two", "three")) -> None:
        """Sequential requests, each must get its own answer, over one pooled connection. They
        go over one client connection: the proxy reads the next request only once the previous
        exchange has given its backend connection back."""
        drop_connections(self.backend)  # a connection pooled by an earlier case is not counted
        before = self.backend.connections
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for p in prompts:
                conn.request("POST", CMPL, json.dumps(cmpl_body(p, stream)),
                             {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                self.assertEqual(resp.status, 200, data[:300])
                if stream:
                    self.assertIsNone(strict_framing_problem(data), data[:600])
                    docs = [json.loads(e[6:]) for e in data.decode().split("\n\n")
                            if e.startswith("data: {")]
                    text = "".join(d["choices"][0]["text"] for d in docs if d.get("choices"))
                    self.assertTrue(data.endswith(b"data: [DONE]\n\n"), data[-200:])
                else:
                    text = json.loads(data)["choices"][0]["text"]
                self.assertEqual(text, "answer to " + p)
        finally:
            conn.close()
        self.assertEqual(self.backend.connections - before, 1,
                         "the requests did not share one pooled connection")


class UpstreamInterimResponses(_Scripted, unittest.TestCase):
    """RFC 9110 §15.2: a client must be able to parse 1xx responses before the final one."""

    def test_103_early_hints_then_the_answer_keep_alive(self):
        for interim in (EARLY_HINTS, CONTINUE + EARLY_HINTS + EARLY_HINTS):
            with self.subTest(interim=interim[:40]):
                self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req)),
                                                       interim=interim))
                self.assert_own_answers(stream=False)

    def test_103_before_a_stream_keep_alive(self):
        for interim in (EARLY_HINTS, CONTINUE + EARLY_HINTS):
            with self.subTest(interim=interim[:40]):
                self.route(CMPL, lambda req: sse_reply(completion_chunks(answer_for(req)),
                                                       interim=interim))
                self.assert_own_answers(stream=True)

    def test_interim_and_head_split_at_random_bytes(self):
        for seed in range(6):
            with self.subTest(seed=seed):
                self.route(CMPL, lambda req: in_pieces(
                    raw_reply(200, completion(answer_for(req)), interim=EARLY_HINTS), seed, 3))
                self.assert_own_answers(stream=False, prompts=("a", "b"))
                self.route(CMPL, lambda req: in_pieces(
                    sse_reply(completion_chunks(answer_for(req)), interim=EARLY_HINTS), seed, 3))
                self.assert_own_answers(stream=True, prompts=("c", "d"))

    def test_the_backend_probe_skips_them_too(self):
        # No dialect or model given: the proxy is ready only once its probe has read the real
        # GET /v1/models answer behind a 100 and a 103.
        backend = ScriptedBackend()
        self.addCleanup(backend.stop)
        backend.route("GET", "/v1/models", json_reply(
            {"object": "list", "data": [{"id": "probed", "object": "model", "owned_by": "vllm"}]},
            interim=CONTINUE + EARLY_HINTS))
        proxy = Proxy(["--upstream", backend.url], model="probed")
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        info = request(proxy.port, "GET", "/get_server_info").json()
        self.assertEqual(info["backend"]["dialect"], "openai", info)
        self.assertIn("vllm", info["backend"]["detected"], info)

    def test_101_switching_protocols_is_a_502(self):
        self.route(CMPL, Reply(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                               b"Connection: Upgrade\r\n\r\n"))
        for stream in (False, True):
            r = post_json(self.port, CMPL, cmpl_body("upgrade?", stream))
            self.assert_openai_error(r, 502, "101", "switching protocols")


class NoDuplicateGeneration(_Scripted, unittest.TestCase):
    """A request whose bytes all reached the backend may have been processed: never sent again."""

    def test_backend_closes_after_reading_a_request_on_a_reused_connection(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                calls = []

                def handler(req):
                    calls.append(req)
                    if len(calls) == 2:
                        return hang_up()
                    return raw_reply(200, completion(answer_for(req)))
                self.route(CMPL, handler)
                before = self.backend.connections
                r = post_json(self.port, CMPL, cmpl_body("first"))
                self.assertEqual(r.status, 200, r.body[:300])
                r = post_json(self.port, CMPL, cmpl_body("second", stream))
                self.assert_openai_error(r, 502, "closed the connection", "not retried",
                                         "may (already )?have processed")
                self.assertEqual([c.json()["prompt"] for c in calls], ["first", "second"],
                                 "the backend saw the request twice")
                self.assertEqual(self.backend.connections - before, 1, "one connection, reused")
                drop_connections(self.backend)

    def test_pooled_connection_closed_by_the_backend_is_not_used(self):
        # A server closes idle keep-alive connections; the proxy must see that before it writes
        # (it may no longer retry after a failed read).
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        before = len(self.backend.requests_to(CMPL))
        for i in range(3):
            r = post_json(self.port, CMPL, cmpl_body(f"before {i}"))
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertGreaterEqual(drop_connections(self.backend), 1)
            r = post_json(self.port, CMPL, cmpl_body(f"after {i}"))
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertEqual(r.json()["choices"][0]["text"], f"answer to after {i}")
        self.assertEqual(len(self.backend.requests_to(CMPL)) - before, 6,
                         "a request was sent twice")

    def test_an_idempotent_get_is_tried_again(self):
        # GET /health is safe to repeat (RFC 9110 §9.2.2): a reused connection that closes
        # without an answer costs the client nothing.
        calls = []

        def handler(req):
            calls.append(req)
            return hang_up() if len(calls) == 2 else raw_reply(200, b"", "text/plain")
        self.backend.route("GET", "/health", handler)
        self.addCleanup(self.backend.route, "GET", "/health", raw_reply(200, b"", "text/plain"))
        for _ in range(2):
            r = request(self.port, "GET", "/health")
            self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(len(calls), 3)


class ContentEncoding(_Scripted, unittest.TestCase):
    """The proxy translates bytes it must read: it asks for identity and refuses anything else."""

    def test_accept_encoding_identity_upstream_and_the_clients_own_not_forwarded(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        r = post_json(self.port, CMPL, cmpl_body("enc"), {"Accept-Encoding": "gzip, br"})
        self.assertEqual(r.status, 200, r.body[:300])
        sent = self.backend.requests_to(CMPL)[-1]
        self.assertEqual([v for k, v in sent.headers if k.lower() == "accept-encoding"],
                         ["identity"])
        self.assertIsNone(r.header("content-encoding"))

    def test_compressed_response_is_a_502_naming_the_encoding(self):
        body = completion("compressed")
        cases = (("gzip", gzip.compress(body), CMPL, False),
                 ("br", b"\x8b\x02\x80fake", CMPL, True),
                 ("gzip", gzip.compress(body), GEN, False),
                 ("deflate, gzip", b"\x00\x01", CMPL, False))
        for coding, payload, path, stream in cases:
            with self.subTest(coding=coding, path=path, stream=stream):
                ctype = "text/event-stream" if stream else "application/json"
                self.route(CMPL, raw_reply(200, payload, ctype,
                                           extra_headers=[("Content-Encoding", coding)],
                                           chunked=stream))
                req = ({"text": "x", "sampling_params": {"max_new_tokens": 3}, "stream": stream}
                       if path == GEN else cmpl_body("x", stream))
                r = post_json(self.port, path, req)
                self.assert_error_for(path, r, 502, "Content-Encoding", coding.split(",")[0],
                                      "identity")
                self.assertNotIn(payload, r.body)

    def test_identity_content_encoding_is_plain(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req)),
                                               extra_headers=[("Content-Encoding", "identity")]))
        self.assert_own_answers(stream=False, prompts=("plain",))


class ResponseFraming(_Scripted, unittest.TestCase):
    """RFC 9112 §5 and §6: what a backend may legally write, read as the RFC says."""

    def test_obs_fold_and_odd_whitespace_in_header_values(self):
        text = "folded"
        for head in (b"Content-Type: application/json;\r\n charset=utf-8\r\n",
                     b"Content-Type:\t application/json \t\r\n",
                     b"Content-Type:application/json\r\nX-Folded: a\r\n\t b\r\n"):
            with self.subTest(head=head):
                body = completion(text)
                self.route(CMPL, Reply(b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: " +
                                       str(len(body)).encode() + b"\r\n\r\n", [body]))
                r = post_json(self.port, CMPL, cmpl_body("x"))
                self.assertEqual(r.status, 200, r.body[:300])
                self.assertEqual(r.json()["choices"][0]["text"], text)
                ctype = r.header("content-type")
                self.assertTrue(ctype.startswith("application/json"), ctype)
                self.assertNotIn("\r", ctype)
                self.assertNotIn("\n", ctype)

    def test_content_length_leading_zeros_and_equal_lists(self):
        body = completion("counted")
        n = str(len(body))
        for lines in ([f"Content-Length: 000{n}"], [f"Content-Length: {n}, {n}"],
                      [f"Content-Length: {n}", f"Content-Length: {n}"]):
            with self.subTest(lines=lines):
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + \
                    "".join(line + "\r\n" for line in lines) + "\r\n"
                self.route(CMPL, Reply(head.encode(), [body]))
                for _ in range(2):  # the connection stays in step for the next request
                    r = post_json(self.port, CMPL, cmpl_body("x"))
                    self.assertEqual(r.status, 200, r.body[:300])
                    self.assertEqual(r.json()["choices"][0]["text"], "counted")

    def test_conflicting_content_lengths_are_a_502(self):
        body = completion("conflict")
        self.route(CMPL, Reply(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                               b"Content-Length: 5\r\n\r\n", [body]))
        r = post_json(self.port, CMPL, cmpl_body("x"))
        self.assert_openai_error(r, 502, "Content-Length")

    def test_chunk_extensions_and_trailers(self):
        def chunked(payload: bytes) -> list[bytes]:
            half = len(payload) // 2
            return [f"{half:x};name=value;quoted=\"a b\"\r\n".encode() + payload[:half] + b"\r\n",
                    f"{len(payload) - half:X} ; ext\r\n".encode() + payload[half:] + b"\r\n",
                    b"0;last=1\r\nX-Trailer: done\r\nX-Other: 1\r\n\r\n"]

        def whole(req):
            return Reply(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n",
                         chunked(completion(answer_for(req))))

        def streamed(req):
            events = "".join(f"data: {p}\n\n" for p in completion_chunks(answer_for(req)))
            return Reply(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n", chunked(events.encode()))
        self.route(CMPL, whole)
        self.assert_own_answers(stream=False)
        self.route(CMPL, streamed)
        self.assert_own_answers(stream=True)


class ConnectionNamedHeaders(_Scripted, unittest.TestCase):
    """RFC 9110 §7.6.1: the headers a client names in Connection are for this hop only."""

    def test_not_forwarded(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        for connection in ("X-Hop, keep-alive", "close, x-hop", "X-HOP"):
            with self.subTest(connection=connection):
                r = post_json(self.port, CMPL, cmpl_body("hop"),
                              {"Connection": connection, "X-Hop": "secret", "X-Kept": "yes",
                               "Keep-Alive": "timeout=5", "Proxy-Connection": "keep-alive"})
                self.assertEqual(r.status, 200, r.body[:300])
                sent = self.backend.requests_to(CMPL)[-1]
                names = {k.lower() for k, _ in sent.headers}
                self.assertNotIn("x-hop", names)
                self.assertNotIn("connection", names)
                self.assertNotIn("keep-alive", names)
                self.assertNotIn("proxy-connection", names)
                self.assertEqual(sent.header("X-Kept"), "yes")


class ClientTransferEncoding(_Scripted, unittest.TestCase):
    """RFC 9112 §6.1 and §6.3: a request body framed any other way than by a final `chunked` or
    by Content-Length alone is refused, and the connection closed (request smuggling)."""

    SMUGGLED = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"

    def send(self, headers: bytes, body: bytes, version: bytes = b"HTTP/1.1") -> bytes:
        return raw(self.port, b"POST /v1/completions " + version + b"\r\nHost: x\r\n"
                   b"Content-Type: application/json\r\n" + headers + b"\r\n" + body)

    def assert_refused(self, data: bytes, status: int, *needles: str) -> dict:
        self.assertEqual(http_responses(data), 1, f"more than one response: {data[:600]!r}")
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertIn(f" {status} ".encode(), head.split(b"\r\n")[0], data[:300])
        self.assertEqual(header_of(head, "Connection"), "close", head)
        self.assertEqual(int(header_of(head, "Content-Length")), len(body))
        r = Response(status, {"content-type": header_of(head, "Content-Type")}, body)
        return self.assert_openai_error(r, status, *needles)

    def test_not_chunked_last_is_a_400_and_a_close(self):
        json_body = json.dumps(cmpl_body("smuggle")).encode()
        for te in (b"identity", b"chunked, identity", b"gzip", b"x-unknown", b"chunked;q=1",
                   b"chunked, chunked", b"chunked\r\nTransfer-Encoding: chunked"):
            with self.subTest(te=te):
                before = len(self.backend.requests)
                data = self.send(b"Transfer-Encoding: " + te + b"\r\n",
                                 f"{len(json_body):x}\r\n".encode() + json_body + b"\r\n0\r\n\r\n" +
                                 self.SMUGGLED)
                err = self.assert_refused(data, 400, "Transfer-Encoding", "chunked",
                                          "Content-Length")
                self.assertEqual(len(self.backend.requests), before, "the request went on")
                self.assertNotIn("\n", err["message"])

    def test_content_length_and_transfer_encoding_together(self):
        json_body = json.dumps(cmpl_body("both")).encode()
        chunked = f"{len(json_body):x}\r\n".encode() + json_body + b"\r\n0\r\n\r\n"
        for headers in (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                        b"Transfer-Encoding: identity\r\nContent-Length: " +
                        str(len(json_body)).encode() + b"\r\n"):
            with self.subTest(headers=headers):
                before = len(self.backend.requests)
                data = self.send(headers, chunked + self.SMUGGLED)
                self.assert_refused(data, 400, "Transfer-Encoding", "Content-Length")
                self.assertEqual(len(self.backend.requests), before, "the request went on")

    def test_transfer_encoding_in_http10(self):
        json_body = json.dumps(cmpl_body("old")).encode()
        data = self.send(b"Transfer-Encoding: chunked\r\n",
                         f"{len(json_body):x}\r\n".encode() + json_body + b"\r\n0\r\n\r\n",
                         b"HTTP/1.0")
        self.assert_refused(data, 400, "Transfer-Encoding", "HTTP/1.0", "Content-Length")

    def test_a_bare_lf_in_the_head_is_a_400_naming_it(self):
        # RFC 9112 §2.2 allows a server to accept a bare LF (nginx does); refused here, since a
        # front proxy that reads it differently would let the rest through as another request.
        # It used to be a 505 "HTTP version" (in the request line) or "bad value" (in a field).
        json_body = json.dumps(cmpl_body("lf")).encode()
        for wire in (b"POST /v1/completions HTTP/1.1\nHost: x\nContent-Length: " +
                     str(len(json_body)).encode() + b"\n\n" + json_body,
                     b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                     str(len(json_body)).encode() + b"\nX-Smuggled: 1\r\n\r\n" + json_body):
            with self.subTest(wire=wire[:40]):
                before = len(self.backend.requests)
                data = raw(self.port, wire + self.SMUGGLED)
                self.assert_refused(data, 400, "bare LF", "CRLF")
                self.assertEqual(len(self.backend.requests), before, "the request went on")

    def test_other_codings_before_chunked_are_not_implemented(self):
        data = self.send(b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n")
        self.assert_refused(data, 501, "gzip", "Transfer-Encoding", "chunked")

    def test_control_characters_in_the_message_are_escaped(self):
        # The refused value is quoted in the message: a tab (legal in a field value) must be
        # written as \t, or the body is not JSON (Python's json rejects raw control characters).
        data = self.send(b"Transfer-Encoding: gzip\tfoo\r\n", b"")
        err = self.assert_refused(data, 400, "Transfer-Encoding")
        self.assertIn("gzip\tfoo", err["message"])
        self.assertIn(b"gzip\\tfoo", data)

    def test_invalid_utf8_in_the_message_is_replaced(self):
        # A field value may hold any byte from 0x80 up (obs-text, RFC 9110 §5.5); quoted as it
        # is, a lone \xff or a cut-off sequence made the body invalid UTF-8, which strict JSON
        # parsers refuse (RFC 8259 §8.1). Each such byte becomes U+FFFD.
        data = self.send(b"Transfer-Encoding: gz\xffip\t\xc3, chunked\r\n", b"0\r\n\r\n")
        _, _, body = data.partition(b"\r\n\r\n")
        body.decode("utf-8")  # strict: raises on invalid UTF-8
        err = self.assert_refused(data, 501, "Transfer-Encoding")
        self.assertIn("gz\ufffdip\t\ufffd", err["message"])
        # The operator sees the refusal too: one warn line with the reason (no id: no exchange
        # began).
        wait_until(lambda: 'status=501 outcome=rejected message="the transfer coding gz\ufffdip'
                           in self.proxy.stderr_text(), 2.0,
                   what="the warn line of the refusal")

    def test_a_refusal_on_a_known_route_is_in_the_clients_dialect(self):
        # The request line names the route, so its client reads its own dialect's error shape.
        def send(path: bytes) -> bytes:
            return raw(self.port, b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Type: application/json\r\n"
                       b"Transfer-Encoding: gz\xffip, chunked\r\n\r\n0\r\n\r\n")
        for path, check in ((b"/api/chat", lambda e: e["error"]),
                            (b"/v1/messages", lambda e: e["error"]["message"]),
                            (b"/generate_stream", lambda e: e["error"])):
            with self.subTest(path=path):
                data = send(path)
                head, _, body = data.partition(b"\r\n\r\n")
                self.assertIn(b" 501 ", head.split(b"\r\n")[0], data[:300])
                self.assertIn("gz\ufffdip", check(json.loads(body.decode("utf-8"))))

    def test_chunked_with_extensions_and_trailers_still_works(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        json_body = json.dumps(cmpl_body("chunked request")).encode()
        half = len(json_body) // 2
        body = (f"{half:x};a=b\r\n".encode() + json_body[:half] + b"\r\n" +
                f"{len(json_body) - half:x}\r\n".encode() + json_body[half:] + b"\r\n" +
                b"0\r\nX-Trailer: t\r\n\r\n")
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\n" +
                         body)
            head, payload, _ = read_response(sock)
        self.assertIn(b" 200 ", head.split(b"\r\n")[0], head)
        self.assertEqual(json.loads(payload)["choices"][0]["text"], "answer to chunked request")


class HeadRequests(_Scripted, unittest.TestCase):
    """RFC 9110 §9.3.2: HEAD is GET without the content, with the headers GET would send."""

    GET_ROUTES = ("/", "/health", "/v1/models", f"/v1/models/{MODEL}", "/get_model_info",
                  "/get_server_info", "/api/tags", "/api/version", "/api/ps", "/info", "/props")

    def test_head_has_gets_length_and_no_body(self):
        for path in self.GET_ROUTES + ("/metrics",):
            with self.subTest(path=path):
                get = request(self.port, "GET", path)
                self.assertEqual(get.status, 200, get.body[:300])
                with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
                    # HEAD then GET on one connection: a body after the HEAD answer would be
                    # read as the start of the next response.
                    sock.sendall(f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n"
                                 f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                    head, _, rest = read_response(sock, head_only=True)
                    head2, body2, _ = read_response(sock, rest)
                self.assertIn(b" 200 ", head.split(b"\r\n")[0], head)
                self.assertTrue(head2.startswith(b"HTTP/1.1 200 "), (head2 + body2)[:300])
                length = header_of(head, "Content-Length")
                self.assertIsNotNone(length, head)
                if path != "/metrics":  # the metrics text changes with every request
                    self.assertEqual(int(length), len(get.body), head)
                    self.assertEqual(len(body2), len(get.body))

    def test_head_is_allowed_wherever_get_is(self):
        for path in self.GET_ROUTES + ("/metrics",):
            with self.subTest(path=path):
                r = request(self.port, "DELETE", path)
                self.assert_openai_error(r, 405, "DELETE")
                allow = [m.strip() for m in (r.header("allow") or "").split(",")]
                self.assertIn("GET", allow)
                self.assertIn("HEAD", allow)


class Http10Continue(_Scripted, unittest.TestCase):
    """RFC 9110 §10.1.1: a server must not send a 100 Continue to an HTTP/1.0 client."""

    def test_no_100_continue_for_http10(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        body = json.dumps(cmpl_body("old and expecting")).encode()
        data = raw(self.port, b"POST /v1/completions HTTP/1.0\r\nHost: x\r\n"
                   b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        self.assertTrue(data.startswith(b"HTTP/1.0 200 "), data[:200])
        self.assertEqual(http_responses(data), 1, data[:300])

    def test_http11_still_gets_it(self):
        self.route(CMPL, lambda req: raw_reply(200, completion(answer_for(req))))
        body = json.dumps(cmpl_body("expecting")).encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            interim, _, rest = read_response(sock, head_only=True)  # blocks until it comes
            self.assertTrue(interim.startswith(b"HTTP/1.1 100 "), interim)
            sock.sendall(body)
            head, payload, _ = read_response(sock, rest)
        self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head)
        self.assertEqual(json.loads(payload)["choices"][0]["text"], "answer to expecting")


if __name__ == "__main__":
    unittest.main()
