"""Clients that go away mid-stream, and many streams at once through one proxy."""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import unittest

from checks import StreamChecks, make_body, reference_text, stream_text, text_of
from harness import (Emulator, Proxy, Response, open_stream, post_json, request, run_in_thread,
                     start, strict_framing_problem, wait_until)

GEN = "/generate"
CMPL = "/v1/completions"
CHAT = "/v1/chat/completions"
ROUTES = (GEN, CMPL, CHAT)


class _Disconnect(StreamChecks):
    DIALECT = ""
    MODEL = ""
    TOKENS = 300
    ITL_MS = 20  # the whole stream would take TOKENS * ITL_MS = 6 s

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL)  # not --quiet: its log is read
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=cls.MODEL)
        cls.port = cls.proxy.port

    def generation_log(self):
        return [l for l in self.emu.request_log() if l.startswith("POST ")]

    def assert_serving(self):
        self.assertTrue(self.proxy.alive(), "the proxy died")
        for path in ROUTES:
            prompt = f"after a disconnect {path}"
            r = post_json(self.port, path, make_body(path, prompt, 4, self.MODEL))
            self.assertEqual(r.status, 200, r.body[:300])
            self.assertEqual(text_of(path, r.json()), reference_text(self.emu, path, prompt, 4))

    def test_disconnect_midstream_closes_upstream(self):
        for path in ROUTES:
            with self.subTest(path=path):
                before = len(self.generation_log())
                s = open_stream(self.port, path,
                                make_body(path, f"long stream {path}", self.TOKENS, self.MODEL,
                                          stream=True),
                                {"X-Emulator-ITL-Ms": str(self.ITL_MS)})
                self.assertNotIsInstance(s, Response)
                got = 0
                while got < 3:
                    new = s.next_events()
                    self.assertTrue(new, "stream ended early")
                    got += len(new)
                t_close = time.monotonic()
                s.close()
                # The emulator logs a request when it ends: it must end long before the 6 s the
                # whole generation would take, i.e. the proxy closed the upstream connection.
                lines = wait_until(lambda: self.generation_log()[before:], timeout=3.0,
                                   what="the backend to see the upstream connection close")
                noticed = time.monotonic() - t_close
                self.assertLess(noticed, 2.0)
                ms = float(re.search(r"([0-9.]+)ms$", lines[-1]).group(1))
                self.assertLess(ms, self.TOKENS * self.ITL_MS / 2,
                                f"upstream generation ran {ms}ms after the client left")
        self.assert_serving()

    def test_disconnect_while_waiting_for_first_byte(self):
        for path in ROUTES:
            for streaming in (False, True):
                with self.subTest(path=path, stream=streaming):
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                    body = make_body(path, "slow start", 4, self.MODEL, stream=streaming)
                    conn.request("POST", path, body=json.dumps(body),
                                 headers={"Content-Type": "application/json",
                                          "X-Emulator-TTFT-Ms": "1500"})
                    time.sleep(0.1)  # let the request reach the backend
                    conn.close()
        self.assert_serving()


class TestConnections(StreamChecks, unittest.TestCase):
    """Connection handling towards clients: keep-alive across streams, HTTP/1.0 streams."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", "emu-conn", ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model="emu-conn")
        cls.port = cls.proxy.port

    def test_keep_alive_across_streams(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for i in range(3):
                for path in ROUTES:
                    prompt = f"keep-alive {i} {path}"
                    want = reference_text(self.emu, path, prompt, 5)
                    for streaming in (True, False):
                        conn.request("POST", path, json.dumps(
                            make_body(path, prompt, 5, "emu-conn", stream=streaming)),
                            {"Content-Type": "application/json"})
                        resp = conn.getresponse()
                        body = resp.read()
                        self.assertEqual(resp.status, 200, body[:300])
                        self.assertFalse(resp.will_close, "the proxy closed a keep-alive "
                                                           "connection")
                        if streaming:
                            docs = [json.loads(line[6:]) for line in body.decode().split("\n\n")
                                    if line.startswith("data: {")]
                            self.assertTrue(body.endswith(b"data: [DONE]\n\n"), body[-200:])
                            self.assertEqual(stream_text(path, docs), want)
                        else:
                            self.assertEqual(text_of(path, json.loads(body)), want)
        finally:
            conn.close()

    def test_expect_100_continue(self):
        # curl sends "Expect: 100-continue" for bodies over 1 KiB and waits a second for the
        # interim answer before sending the body: a proxy that never sends it adds that second.
        body = json.dumps(make_body(CMPL, "expect continue " + "x " * 600, 3,
                                    "emu-conn")).encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
            sock.settimeout(1.0)
            try:
                interim = sock.recv(4096)
            except TimeoutError:
                interim = b""
            sock.settimeout(5)
            sock.sendall(body)
            rest = b""
            while b"\r\n\r\n" not in rest or len(rest) < 200:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        self.assertTrue(interim.startswith(b"HTTP/1.1 100"),
                        f"no '100 Continue' within 1 s of the headers (got {interim[:80]!r}); "
                        f"then: {rest[:120]!r}")
        final = (interim + rest).split(b"\r\n\r\n", 1)[1]
        self.assertTrue(final.startswith(b"HTTP/1.1 200 "), final[:120])

    def test_http10_stream_ends_with_close(self):
        want = reference_text(self.emu, CMPL, "old client", 5)
        body = json.dumps(make_body(CMPL, "old client", 5, "emu-conn", stream=True)).encode()
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.0\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\n\r\n" + body)
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, payload = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1."), head[:100])
        self.assertIn(b" 200 ", head.split(b"\r\n")[0])
        self.assertNotIn(b"chunked", head.lower(), "HTTP/1.0 has no chunked encoding")
        self.assertIsNone(strict_framing_problem(payload), payload[:500])
        docs = [json.loads(e[6:]) for e in payload.decode().split("\n\n")
                if e.startswith("data: {")]
        self.assertEqual(stream_text(CMPL, docs), want)
        self.assertTrue(payload.endswith(b"data: [DONE]\n\n"))


class TestDisconnectOpenAIBackend(_Disconnect, unittest.TestCase):
    DIALECT = "openai"
    MODEL = "emu-vllm"


class TestDisconnectSGLangBackend(_Disconnect, unittest.TestCase):
    DIALECT = "sglang"
    MODEL = "emu-sglang"


class TestDisconnectWholeAnswer(unittest.TestCase):
    """A client that leaves while its non-streaming answer is being generated: nothing was
    answered, so the access log and the metrics must say client_disconnect (no status line
    went out: the log says nginx's 499, the metrics status_class="none"), never `200 ok`."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", "emu-leave", ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model="emu-leave")
        cls.port = cls.proxy.port

    def metric(self, name: str, **labels: str) -> float:
        body = request(self.port, "GET", "/metrics").body.decode()
        total = 0.0
        for line in body.splitlines():
            if line.startswith(name + " "):
                got = {}
            elif line.startswith(name + "{"):
                got = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.rindex("}")]))
            else:
                continue
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def log_line(self, request_id: str):
        for line in self.proxy.stderr_text().splitlines():
            if line.startswith("{") and f'"request_id":"{request_id}"' in line:
                return json.loads(line)
        return None

    def test_client_leaves_before_the_answer(self):
        for path, route in ((CMPL, "openai_completions"), (GEN, "sglang_generate")):
            with self.subTest(path=path):
                rid = f"leave-{route}"
                before = self.metric("infergate_requests_total", route=route,
                                     outcome="client_disconnect", status_class="none")
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("POST", path,
                             body=json.dumps(make_body(path, "leave early", 4, "emu-leave")),
                             headers={"Content-Type": "application/json", "X-Request-Id": rid,
                                      "X-Emulator-TTFT-Ms": "3000"})
                # The request is in the proxy (and at the backend) once it is in flight.
                wait_until(lambda: self.metric("infergate_requests_in_flight") >= 1,
                           timeout=3, what="the request to be in flight")
                conn.close()
                line = wait_until(lambda: self.log_line(rid), timeout=2.5,
                                  what="the access-log line of the abandoned request")
                self.assertEqual(line["outcome"], "client_disconnect", line)
                self.assertEqual(line["status"], 499, line)
                self.assertEqual(line["bytes_out"], 0, line)
                self.assertEqual(self.metric("infergate_requests_total", route=route,
                                             outcome="client_disconnect",
                                             status_class="none"), before + 1)
                self.assertEqual(self.metric("infergate_requests_total", route=route,
                                             outcome="ok"), 0)

    def test_client_leaves_after_pipelining_a_request(self):
        # The bytes of a pipelined second request arrive while the backend works on the first;
        # the client then closes. The watch must keep those bytes and watch on: before, it
        # fired once (on the bytes) and the disconnect went unnoticed until the answer was
        # written, 3 s later, to nobody.
        rid = "leave-after-pipelining"
        body = json.dumps(make_body(CMPL, "pipelined then gone", 4, "emu-leave")).encode()

        def req(request_id: str, ttft_ms: str) -> bytes:
            return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Type: application/json\r\nX-Request-Id: " + request_id.encode() +
                    b"\r\nX-Emulator-TTFT-Ms: " + ttft_ms.encode() +
                    b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

        in_flight = self.metric("infergate_requests_in_flight")
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        try:
            sock.sendall(req(rid, "3000"))
            wait_until(lambda: self.metric("infergate_requests_in_flight") >= in_flight + 1,
                       timeout=3, what="the request to be in flight")
            sock.sendall(req(rid + "-next", "0"))
            time.sleep(0.3)  # the proxy sees the second request's bytes while the first runs
        finally:
            sock.close()
        t_close = time.monotonic()
        line = wait_until(lambda: self.log_line(rid), timeout=2.5,
                          what="the access-log line of the request abandoned after pipelining")
        self.assertLess(time.monotonic() - t_close, 2.0)
        self.assertEqual(line["outcome"], "client_disconnect", line)
        self.assertEqual(line["status"], 499, line)
        self.assertEqual(line["bytes_out"], 0, line)
        # The pipelined request had no connection to be answered on.
        time.sleep(0.2)
        self.assertIsNone(self.log_line(rid + "-next"))

    def test_pipelined_requests_are_answered_in_order(self):
        # The watch reads a pipelined request while the first runs; it must reach the session.
        bodies = [json.dumps(make_body(CMPL, f"pipelined {i}", 3, "emu-leave")).encode()
                  for i in range(3)]
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            for i, body in enumerate(bodies):
                sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Type: application/json\r\nX-Emulator-TTFT-Ms: 300\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                time.sleep(0.1)
            data = b""
            answers = []
            while len(answers) < 3:
                head_end = data.find(b"\r\n\r\n")
                if head_end >= 0:
                    head = data[:head_end].decode()
                    length = int(re.search(r"(?i)content-length: *(\d+)", head).group(1))
                    if len(data) >= head_end + 4 + length:
                        self.assertIn(" 200 ", head.split("\r\n")[0], head)
                        answers.append(json.loads(data[head_end + 4:head_end + 4 + length]))
                        data = data[head_end + 4 + length:]
                        continue
                chunk = sock.recv(65536)
                self.assertTrue(chunk, f"connection closed after {len(answers)} answers")
                data += chunk
        for i, got in enumerate(answers):
            self.assertEqual(text_of(CMPL, got),
                             reference_text(self.emu, CMPL, f"pipelined {i}", 3))

class _Concurrency(StreamChecks):
    DIALECT = ""
    MODEL = ""
    STREAMS = 50
    TOKENS = 20
    ITL_MS = 20  # one stream alone takes ~0.4 s; 50 in sequence would take ~20 s

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=cls.MODEL)
        cls.port = cls.proxy.port

    def test_50_concurrent_streams(self):
        jobs = []
        for i in range(self.STREAMS):
            path = ROUTES[i % 3]
            prompt = f"concurrent stream number {i}"
            jobs.append((path, prompt, reference_text(self.emu, path, prompt, self.TOKENS)))
        barrier = threading.Barrier(self.STREAMS)

        def one(path, prompt):
            barrier.wait(10)
            s = open_stream(self.port, path,
                            make_body(path, prompt, self.TOKENS, self.MODEL, stream=True),
                            {"X-Emulator-ITL-Ms": str(self.ITL_MS)}, timeout=30)
            if isinstance(s, Response):
                raise AssertionError(f"{path} {prompt}: {s.status} {s.body[:300]!r}")
            s.read_all()
            return s

        t0 = time.monotonic()
        joins = [run_in_thread(one, path, prompt) for path, prompt, _ in jobs]
        for (path, prompt, want), join in zip(jobs, joins):
            s = join(60)
            self.assert_sse(s)
            docs = self.json_events(s)
            self.assertFalse(any("error" in d for d in docs), f"{path} {prompt}: {docs[-2:]}")
            self.assertEqual(stream_text(path, docs), want, f"{path} {prompt}")
        wall = time.monotonic() - t0
        sequential = self.STREAMS * self.TOKENS * self.ITL_MS / 1000
        self.assertLess(wall, sequential / 2,
                        f"50 streams took {wall:.1f}s (one after another: {sequential:.0f}s): "
                        f"they did not run concurrently")


class TestConcurrencyOpenAIBackend(_Concurrency, unittest.TestCase):
    DIALECT = "openai"
    MODEL = "emu-vllm"


class TestConcurrencySGLangBackend(_Concurrency, unittest.TestCase):
    DIALECT = "sglang"
    MODEL = "emu-sglang"


if __name__ == "__main__":
    unittest.main()
