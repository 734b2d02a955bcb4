"""The client side under a hostile network (issue 12, items 4 and 5): the file-descriptor limit
and the connection cap, the request-head and body deadlines, Host and absolute-form targets,
credentials in the backend URL, an HTTP/2 preface on the plain port, the listen addresses.

Every attack runs over raw sockets against a real infergate; none sleeps to let something
happen: a test waits for the proxy's answer (or its close) with a socket timeout.
"""

from __future__ import annotations

import json
import resource
import socket
import threading
import time
import unittest

from harness import Emulator, Proxy, post_json, read_raw_response, request, start

MODEL = "limits-model"
CMPL = "/v1/completions"


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def completion_request(path: str = CMPL, host: bool = True, version: str = "HTTP/1.1") -> bytes:
    body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 2}).encode()
    head = f"POST {path} {version}\r\n"
    if host:
        head += "Host: infergate\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


class FileDescriptorLimit(unittest.TestCase):
    """2,000 idle connections against a soft limit of 1,024 made every request time out."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)

    def test_idle_connections_beyond_the_fd_limit_do_not_starve_a_request(self):
        # Soft 40, hard 100: infergate raises the soft limit to 100 and derives its cap, 33.
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (40, 100))
        proxy = Proxy(["--upstream", self.emu.url, "--upstream-dialect", "openai", "--model",
                       MODEL], preexec=limit)
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        idle = []
        self.addCleanup(lambda: [s.close() for s in idle])
        for _ in range(80):  # beyond the soft limit it started with and beyond the cap
            idle.append(connect(proxy.port))
        s = connect(proxy.port)
        idle.append(s)
        s.sendall(completion_request())
        status, _, body = read_raw_response(s)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["model"], MODEL)
        log = proxy.stderr_text()
        self.assertIn("file descriptor limit 100 (raised from 40, the hard limit)", log)
        self.assertIn("connection limit of 33 reached (limits.max_connections): closed the "
                      "oldest idle connection", log)
        self.assertTrue(proxy.alive())


    def test_a_served_keep_alive_client_outlives_silent_connections(self):
        # At the cap, the connection shed was the oldest in accept order: a keep-alive client
        # between two requests went first, silent connections opened after it stayed. Now the
        # connections never served a request go first (the oldest of them), then keep-alive
        # ones by the time they have been idle.
        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))  # cap: 33 connections
        proxy = Proxy(["--upstream", self.emu.url, "--upstream-dialect", "openai", "--model",
                       MODEL], preexec=limit)
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        keep_alive = connect(proxy.port)
        self.addCleanup(keep_alive.close)
        keep_alive.sendall(completion_request())
        self.assertEqual(read_raw_response(keep_alive)[0], 200)
        silent = [connect(proxy.port) for _ in range(45)]  # 46 in all: 13 over the cap
        self.addCleanup(lambda: [s.close() for s in silent])
        silent[12].settimeout(10)
        self.assertEqual(silent[12].recv(1), b"", "the 13th silent connection was not shed")
        keep_alive.sendall(completion_request())
        status, _, body = read_raw_response(keep_alive)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["model"], MODEL)
        self.assertTrue(all(closed(s) for s in silent[:13]))
        self.assertFalse(any(closed(s) for s in silent[-20:]))


def closed(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class ConnectionCap(unittest.TestCase):
    """At the cap with every connection busy, a new one is answered 503, not left hanging."""

    def test_busy_connections_at_the_cap_get_a_503_naming_the_limit(self):
        from scripted import ScriptedBackend, json_reply
        release = threading.Event()
        arrived = threading.Semaphore(0)

        def stall(req):
            arrived.release()
            release.wait(30)
            return json_reply({"id": "c", "object": "text_completion", "created": 1,
                               "model": MODEL, "choices": [{"index": 0, "text": "ok",
                                                            "finish_reason": "length"}]})
        backend = ScriptedBackend()
        self.addCleanup(backend.stop)
        backend.route("POST", CMPL, stall)
        proxy = Proxy(config_yaml=f"""
limits:
  max_connections: 2
backends:
  - url: {backend.url}
    dialect: openai
    model: {MODEL}
""")
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        self.addCleanup(release.set)
        busy = [connect(proxy.port) for _ in range(2)]
        self.addCleanup(lambda: [s.close() for s in busy])
        for s in busy:
            s.sendall(completion_request())
        for _ in busy:
            self.assertTrue(arrived.acquire(timeout=10), "a request did not reach the backend")
        third = connect(proxy.port)
        self.addCleanup(third.close)
        third.sendall(completion_request())
        status, headers, body = read_raw_response(third)
        self.assertEqual(status, 503, body)
        self.assertEqual(headers.get("connection"), "close")
        err = json.loads(body)["error"]
        self.assertIn("limits.max_connections", err["message"])
        self.assertIn("connection limit of 2", err["message"])
        release.set()
        for s in busy:  # the busy ones still get their answers
            status, _, body = read_raw_response(s)
            self.assertEqual(status, 200, body)
        self.assertIn("no connection is idle: new connections get 503", proxy.stderr_text())


class RequestDeadlines(unittest.TestCase):
    """One 120 s deadline covered idle, head and body: a head sent a byte at a time held its
    connection for as long as the bytes kept coming."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)
        # The idle wait between requests stays long: only the head and body deadlines may fire.
        cls.proxy = start(cls, Proxy, config_yaml=f"""
client_idle_ms: 60000
client_header_ms: 400
client_body_ms: 400
client_body_min_rate: 40
backends:
  - url: {cls.emu.url}
    dialect: openai
    model: {MODEL}
""")

    def dribble(self, s: socket.socket, data: bytes, interval: float) -> threading.Event:
        """Sends `data` a byte every `interval` seconds from a thread (the attack itself, not
        a synchronisation); stops at the first failed send or when the returned event is set."""
        stop = threading.Event()

        def run():
            for i in range(len(data)):
                if stop.wait(interval):
                    return
                try:
                    s.sendall(data[i:i + 1])
                except OSError:
                    return
        threading.Thread(target=run, daemon=True).start()
        self.addCleanup(stop.set)
        return stop

    def test_a_dribbled_head_gets_408_in_the_clients_dialect(self):
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        # The request line arrives whole, so the route (Anthropic's) is known; the rest of the
        # head comes a byte every 50 ms: each byte is well within any per-read timeout.
        s.sendall(b"POST /v1/messages HTTP/1.1\r\n")
        started = time.monotonic()
        self.dribble(s, b"Host: infergate\r\nContent-Type: application/json\r\n" * 20, 0.05)
        status, headers, body = read_raw_response(s)
        elapsed = time.monotonic() - started
        self.assertEqual(status, 408, body)
        self.assertEqual(headers.get("connection"), "close")
        doc = json.loads(body)
        self.assertEqual(doc["type"], "error")  # Anthropic's error shape
        self.assertIn("client_header_ms", doc["error"]["message"])
        self.assertLess(elapsed, 5.0)

    def test_a_stalled_body_gets_408(self):
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: infergate\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\"")
        status, headers, body = read_raw_response(s)
        self.assertEqual(status, 408, body)
        self.assertEqual(headers.get("connection"), "close")
        self.assertIn("client_body_ms", json.loads(body)["error"]["message"])

    def test_a_body_that_keeps_coming_is_read_whole(self):
        # Longer in all than client_body_ms, but never a pause as long: it is a slow client,
        # not a stalled one.
        body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 2}).encode()
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: infergate\r\n"
                  b"Content-Type: application/json\r\nContent-Length: " +
                  str(len(body)).encode() + b"\r\n\r\n")
        pieces = [body[i:i + 5] for i in range(0, len(body), 5)]
        for piece in pieces:
            time.sleep(0.05)  # the client's pace (the total outlasts client_body_ms)
            s.sendall(piece)
        status, _, answer = read_raw_response(s)
        self.assertEqual(status, 200, answer)
        self.assertGreater(len(pieces) * 0.05, 0.4)

    def test_a_body_trickled_under_the_minimum_rate_gets_408(self):
        # A byte every 100 ms never pauses for client_body_ms (400), but averages 10 bytes/s,
        # under client_body_min_rate (40): after the 400 ms of grace each byte buys 25 ms, so
        # the body is refused about half a second in, long before its 10,000 bytes are sent.
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        s.sendall(b"POST /api/chat HTTP/1.1\r\nHost: infergate\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n")
        started = time.monotonic()
        self.dribble(s, b"{" + b" " * 9999, 0.1)
        status, headers, body = read_raw_response(s)
        elapsed = time.monotonic() - started
        self.assertEqual(status, 408, body)
        self.assertEqual(headers.get("connection"), "close")
        self.assertIn("client_body_min_rate", json.loads(body)["error"])  # Ollama's shape
        self.assertLess(elapsed, 5.0)

    def test_a_connection_that_sends_nothing_is_closed_without_an_answer(self):
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        self.assertEqual(s.recv(1024), b"")


class RequestTargetAndHost(unittest.TestCase):
    """HTTP/1.1 without Host got 200 (RFC 9112 §3.2: 400); an absolute-form target got 404."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--upstream-dialect", "openai",
                                       "--model", MODEL])

    def exchange(self, wire: bytes) -> tuple[int, dict[str, str], bytes]:
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        s.sendall(wire)
        return read_raw_response(s)

    def test_http11_without_host_gets_400_saying_to_send_it(self):
        status, headers, body = self.exchange(completion_request(host=False))
        self.assertEqual(status, 400, body)
        self.assertEqual(headers.get("connection"), "close")
        self.assertIn("send Host:", json.loads(body)["error"]["message"])

    def test_http10_without_host_is_served(self):
        status, _, body = self.exchange(completion_request(host=False, version="HTTP/1.0"))
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["model"], MODEL)

    def test_an_http2_preface_gets_505_and_a_close(self):
        # What `curl --http2-prior-knowledge` sends first (RFC 9113 §3.4), then a SETTINGS frame.
        s = connect(self.proxy.port)
        self.addCleanup(s.close)
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        status, headers, body = read_raw_response(s)
        self.assertEqual(status, 505, body)
        self.assertEqual(headers.get("connection"), "close")
        self.assertIn("not HTTP/2", json.loads(body)["error"]["message"])
        rest = b""
        while True:  # then the connection ends, with nothing more written
            data = s.recv(4096)
            if not data:
                break
            rest += data
        self.assertEqual(rest, b"")

    def test_an_absolute_form_target_is_routed_by_its_path(self):
        target = f"http://127.0.0.1:{self.proxy.port}/v1/completions"
        status, _, body = self.exchange(completion_request(path=target))
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["object"], "text_completion")


class ListenAddresses(unittest.TestCase):
    """--listen localhost:PORT ('localhost' is not an IP address) failed to start."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL)

    def proxy(self, listen: str) -> Proxy:
        p = Proxy(["--upstream", self.emu.url, "--upstream-dialect", "openai", "--model", MODEL,
                   "--listen", listen])
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p

    def health(self, host: str, port: int) -> int:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as s:
            s.settimeout(10)
            s.connect((host, port))
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return read_raw_response(s)[0]

    def test_localhost_is_resolved(self):
        p = self.proxy("localhost:0")
        self.assertEqual(p.host, "127.0.0.1")
        self.assertEqual(self.health("127.0.0.1", p.port), 200)
        self.assertIn("exposed: this host only (loopback); client auth: off", p.stderr_text())

    def test_every_ipv6_interface(self):
        if not socket.has_ipv6:
            self.skipTest("no IPv6 on this host")
        p = self.proxy("[::]:0")
        self.assertEqual(p.host, "[::]")
        self.assertEqual(self.health("::1", p.port), 200)
        self.assertIn("exposed: the network (a non-loopback address)", p.stderr_text())

    def test_an_injected_backend_key_on_the_network_is_warned_about(self):
        import os
        os.environ["INFERGATE_TEST_EXPOSURE_KEY"] = "sk-exposure"
        self.addCleanup(os.environ.pop, "INFERGATE_TEST_EXPOSURE_KEY", None)
        p = self.proxy("0.0.0.0:0")
        p2 = Proxy(["--upstream", self.emu.url, "--upstream-dialect", "openai", "--model", MODEL,
                    "--api-key-env", "INFERGATE_TEST_EXPOSURE_KEY", "--listen", "0.0.0.0:0"])
        self.addCleanup(p2.cleanup_files)
        self.addCleanup(p2.stop)
        log = p2.stderr_text()
        self.assertIn("backend key: injected from $INFERGATE_TEST_EXPOSURE_KEY", log)
        self.assertIn("anyone who can reach it uses the backend's credentials", log)
        self.assertNotIn("sk-exposure", log)
        self.assertIn("backend key: none", p.stderr_text())


class BackendUrlCredentials(unittest.TestCase):
    """http://user:secret@host was read as a host named 'user:secret@host' and shown in
    /get_server_info, logs and error bodies."""

    def test_userinfo_goes_upstream_as_basic_auth_and_is_never_shown(self):
        import base64
        from harness import wait_until
        from scripted import ScriptedBackend, json_reply
        backend = ScriptedBackend()
        self.addCleanup(backend.stop)
        backend.route("POST", CMPL, json_reply({"error": {"message": "backend says no"}}, 500,
                                               reason="Internal Server Error"))
        url = backend.url.replace("http://", "http://us%40er:s3cr3t-pw@")
        proxy = Proxy(["--upstream", url, "--upstream-dialect", "openai", "--model", MODEL])
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        expected = "Basic " + base64.b64encode(b"us@er:s3cr3t-pw").decode()
        # The start-up probe of the backend's info routes carries the credentials.
        wait_until(lambda: any(r.header("Authorization") == expected for r in backend.requests),
                   timeout=10, what="a probe request with Authorization: Basic")
        info = request(proxy.port, "GET", "/get_server_info")
        self.assertEqual(info.status, 200, info.body)
        self.assertIn(backend.url, info.body.decode())
        failed = post_json(proxy.port, CMPL, {"model": MODEL, "prompt": "x", "max_tokens": 1})
        self.assertGreaterEqual(failed.status, 400)
        # The generation request carries them too (an api key would win; none is set here).
        posts = [r for r in backend.requests if r.method == "POST"]
        self.assertTrue(posts, "the completion never reached the backend")
        self.assertTrue(all(r.header("Authorization") == expected for r in posts),
                        [r.header("Authorization") for r in posts])
        for where, text in (("/get_server_info", info.body.decode()),
                            ("an error body", failed.body.decode()),
                            ("the log", proxy.stderr_text())):
            self.assertNotIn("s3cr3t", where + text, where)
            self.assertNotIn("us@er", text, where)
        self.assertIn("backend credentials: Basic, from the backend URL", proxy.stderr_text())


if __name__ == "__main__":
    unittest.main()
