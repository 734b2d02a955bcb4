"""Errors: the client's mistakes, the backend's failures and time-outs, each in the client's
dialect with a message that says what to fix, and the proxy still healthy afterwards."""

from __future__ import annotations

import re
import time
import unittest

from checks import StreamChecks, make_body, reference_text, stream_text, text_of
from harness import (Emulator, Proxy, Response, closed_port, open_stream, post_json, request,
                     run_in_thread, start, wait_until)

GEN = "/generate"
CMPL = "/v1/completions"
CHAT = "/v1/chat/completions"
ROUTES = (GEN, CMPL, CHAT)

FAULT_MESSAGE = r"emulated fault"


class _ClientErrors(StreamChecks):
    """Requests the proxy must refuse before any backend work."""

    DIALECT = ""
    MODEL = ""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=cls.MODEL)
        cls.port = cls.proxy.port

    def tearDown(self):
        # Every refusal leaves the proxy able to serve.
        r = post_json(self.port, CMPL, make_body(CMPL, "still fine", 3, self.MODEL))
        self.assertEqual(r.status, 200, r.body[:300])

    def test_unknown_route_lists_routes(self):
        for method, path in (("GET", "/nope"), ("POST", "/v1/audio/speech"),
                             ("POST", "/v2/generate")):
            r = request(self.port, method, path, {} if method == "POST" else None)
            err = self.assert_openai_error(r, 404)
            for route in ("/generate", "/v1/completions", "/v1/chat/completions", "/v1/models",
                          "/health"):
                self.assertIn(route, err["message"], f"{method} {path}: {err['message']}")

    def test_wrong_method(self):
        for method, path, allowed in (("GET", GEN, "POST"), ("GET", CMPL, "POST"),
                                      ("DELETE", CHAT, "POST"), ("POST", "/v1/models", "GET"),
                                      ("POST", "/health", "GET")):
            r = request(self.port, method, path, {} if method == "POST" else None)
            err = self.assert_error_for(path, r, 405, method, allowed)
            self.assertIn(allowed, r.header("allow") or "",
                          f"{method} {path}: a 405 must carry an Allow header: {r.headers}")

    def test_malformed_json_mentions_offset(self):
        for path in ROUTES:
            r = post_json(self.port, path, b'{"text": "x", "prompt": }')
            self.assert_error_for(path, r, 400, r"offset \d+|position \d+")

    def test_deeply_nested_body(self):
        # Half a million '[' once crashed the proxy (a recursive parse of POST /generate's body
        # to tell its dialect); every route answers with the depth limit instead.
        for path in ROUTES:
            r = post_json(self.port, path, b"[" * 500000)
            self.assert_error_for(path, r, 400, r"nested deeper than")

    def test_body_not_an_object(self):
        for path in ROUTES:
            r = post_json(self.port, path, b'[1, 2, 3]')
            self.assert_error_for(path, r, 400, r"object")

    def test_generate_wrong_type(self):
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"temperature": "hot"}})
        self.assert_generate_error(r, 400, "temperature")
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"max_new_tokens": "5"}})
        self.assert_generate_error(r, 400, "max_new_tokens")
        r = post_json(self.port, GEN, {"text": 42})
        self.assert_generate_error(r, 400, "text")

    def test_generate_out_of_range(self):
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"top_p": 2}})
        self.assert_generate_error(r, 400, "top_p")
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"temperature": -1}})
        self.assert_generate_error(r, 400, "temperature")
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"max_new_tokens": -1}})
        self.assert_generate_error(r, 400, "max_new_tokens")

    def test_generate_seed_suggests_sampling_seed(self):
        r = post_json(self.port, GEN, {"text": "x", "sampling_params": {"seed": 7}})
        self.assert_generate_error(r, 400, "seed", "sampling_seed")

    def test_generate_missing_prompt(self):
        r = post_json(self.port, GEN, {"sampling_params": {"max_new_tokens": 3}})
        self.assert_generate_error(r, 400, "text", "input_ids")

    def test_openai_wrong_type(self):
        for path in (CMPL, CHAT):
            r = post_json(self.port, path, make_body(path, "x", 3, self.MODEL,
                                                     extra={"temperature": "hot"}))
            err = self.assert_openai_error(r, 400, "temperature")
            self.assertIn(err["param"], (None, "temperature"))

    def test_openai_out_of_range(self):
        cases = (("top_p", 2, r"top_p"), ("n", 0, r"\bn\b"), ("max_tokens", -1, "max_tokens"),
                 ("temperature", 5, "temperature"))
        for path in (CMPL, CHAT):
            for field, value, needle in cases:
                with self.subTest(path=path, field=field):
                    r = post_json(self.port, path, make_body(path, "x", 3, self.MODEL,
                                                             extra={field: value}))
                    err = self.assert_openai_error(r, 400, needle)
                    self.assertIn(err["param"], (None, field), err)

    def test_openai_missing_fields(self):
        r = post_json(self.port, CMPL, {"model": self.MODEL, "max_tokens": 3})
        self.assert_openai_error(r, 400, "prompt")
        r = post_json(self.port, CHAT, {"model": self.MODEL, "max_tokens": 3})
        self.assert_openai_error(r, 400, "messages")

    def test_stream_options_without_stream(self):
        # Harmless for the client; must not reach a vLLM backend (which answers 400).
        body = make_body(CMPL, "options without stream", 3, self.MODEL,
                         extra={"stream_options": {"include_usage": True}})
        r = post_json(self.port, CMPL, body)
        if r.status == 200:
            self.assertEqual(r.json()["choices"][0]["text"],
                             reference_text(self.emu, CMPL, "options without stream", 3))
        else:
            self.assert_openai_error(r, 400, "stream_options")


class TestClientErrorsOpenAIBackend(_ClientErrors, unittest.TestCase):
    DIALECT = "openai"
    MODEL = "emu-vllm"


class TestClientErrorsSGLangBackend(_ClientErrors, unittest.TestCase):
    DIALECT = "sglang"
    MODEL = "emu-sglang"


class TestBodyLimit(StreamChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", "emu-limit", ["--quiet"])
        cls.proxy = start(cls, Proxy, config_yaml=(
            "limits:\n  max_body_bytes: 2048\n"
            f"backends:\n  - url: \"{cls.emu.url}\"\n    dialect: openai\n"), model="emu-limit")
        cls.port = cls.proxy.port

    def test_body_over_limit_is_413(self):
        big = "word " * 1000  # 5000 bytes of prompt
        for path in ROUTES:
            body = make_body(path, big, 3, "emu-limit")
            try:
                r = post_json(self.port, path, body)
            except ConnectionError as e:
                self.fail(f"{path}: the proxy dropped the connection instead of answering "
                          f"413: {e!r}")
            err = self.assert_error_for(path, r, 413, "2048|limit|max_body_bytes")
        # Under the limit still works.
        r = post_json(self.port, CMPL, make_body(CMPL, "small", 3, "emu-limit"))
        self.assertEqual(r.status, 200, r.body[:300])

    def test_much_larger_body_still_gets_413(self):
        # A client that writes its whole body before reading (http.client, requests) must be
        # able to read the 413: the proxy has to drain (or linger on) the rest of the body
        # instead of closing a socket with unread data, which resets the connection.
        body = make_body(CMPL, "word " * 800_000, 3, "emu-limit")  # ~4 MB
        try:
            r = post_json(self.port, CMPL, body)
        except ConnectionError as e:
            self.fail(f"4 MB body over a 2048-byte limit: connection error instead of a 413: "
                      f"{e!r}")
        self.assert_openai_error(r, 413, "2048")


class TestBackendRefused(StreamChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        port = closed_port()
        cls.backend_url = f"http://127.0.0.1:{port}"
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend_url, "--upstream-dialect",
                                       "openai", "--model", "gone"], model="gone")
        cls.port = cls.proxy.port

    def test_refused_is_502(self):
        for path in ROUTES:
            for streaming in (False, True):
                with self.subTest(path=path, stream=streaming):
                    r = open_stream(self.port, path, make_body(path, "anyone there", 3, "gone",
                                                               stream=streaming))
                    self.assertIsInstance(r, Response, "expected an HTTP error, got a stream")
                    self.assert_error_for(path, r, 502, "refused")
        self.assertTrue(self.proxy.alive())

    def test_failure_is_logged_with_the_request_id_and_the_reason(self):
        # The reason reached the client only; operators saw a status code. Every failed
        # request now gives one warn line with the id the client got and the reason.
        for path in ROUTES:
            with self.subTest(path=path):
                r = post_json(self.port, path, make_body(path, "who is there", 3, "gone"))
                self.assertEqual(r.status, 502, r.body[:300])
                rid = r.headers.get("x-request-id")
                self.assertTrue(rid, r.headers)
                lines = wait_until(
                    lambda: [l for l in self.proxy.stderr_text().splitlines()
                             if " warn " in l and f'id="{rid}"' in l],
                    timeout=2, what="the warn line of the failed request")
                self.assertEqual(len(lines), 1, lines)
                line = lines[0]
                self.assertIn("request failed:", line)
                self.assertIn("status=502", line)
                self.assertIn("outcome=upstream_error", line)
                self.assertIn('stage="connecting"', line)
                self.assertIn("refused the connection", line)
                # The operator's line names the backend's address; the client's body does not.
                self.assertIn(f'backend="{self.backend_url}"', line)
                self.assertNotIn(self.backend_url.split("//")[1], r.body.decode())


class TestBackendNotIdentified(StreamChecks, unittest.TestCase):
    """Dialect auto-detection that cannot reach the backend: requests get a 503 that says why."""

    @classmethod
    def setUpClass(cls):
        cls.backend_url = f"http://127.0.0.1:{closed_port()}"
        cls.proxy = start(cls, Proxy, ["--upstream", cls.backend_url], wait_ready=False)
        cls.port = cls.proxy.port

    def test_requests_get_503_with_the_reason(self):
        for path in ROUTES:
            r = post_json(self.port, path, make_body(path, "too early", 3, "any"))
            err = self.assert_error_for(path, r, 503, "not ready yet")
            # The probe knows why ("Connection refused"); "not ready yet ()" does not help.
            self.assert_mentions(err["message"], r"refused|no answer|unreachable")
            # The backend's address is the operator's business (issue 12): in the log, never
            # in an error body.
            self.assertNotIn(self.backend_url.split("//")[1], r.body.decode())
        self.assertIn(f'backend="{self.backend_url}"', self.proxy.stderr_text())
        r = request(self.port, "GET", "/health")
        self.assertEqual(r.status, 503)


class _BackendFaults(StreamChecks):
    """Faults injected by the emulator; short time-outs from the config."""

    DIALECT = ""
    MODEL = ""
    FIRST_BYTE_MS = 700
    IDLE_MS = 700

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, config_yaml=(
            f"backends:\n  - url: \"{cls.emu.url}\"\n    dialect: {cls.DIALECT}\n"
            f"    timeouts: {{connect_ms: 2000, first_byte_ms: {cls.FIRST_BYTE_MS}, "
            f"idle_ms: {cls.IDLE_MS}}}\n"), model=cls.MODEL)
        cls.port = cls.proxy.port
        cls.refs: dict = {}

    # ---- helpers -----------------------------------------------------------------------------

    def ref(self, path, prompt, max_tokens):
        key = (path, prompt, max_tokens)
        if key not in self.refs:
            self.refs[key] = reference_text(self.emu, path, prompt, max_tokens)
        return self.refs[key]

    def fault(self, mode, after=None):
        h = {"X-Emulator-Fault": mode}
        if after is not None:
            h["X-Emulator-Fault-After"] = str(after)
        return h

    def start_bystander(self, path=CMPL, tokens=60):
        """A long stream on another connection (20 ms per token), running while the faults
        happen."""
        prompt = f"bystander stream on {path}"
        want = self.ref(path, prompt, tokens)
        body = make_body(path, prompt, tokens, self.MODEL, stream=True)
        s = open_stream(self.port, path, body, {"X-Emulator-ITL-Ms": "20"}, timeout=20)
        self.assertNotIsInstance(s, Response, f"bystander refused: {getattr(s, 'body', b'')}")
        s.next_events()  # it is flowing before the fault starts

        def finish():
            s.read_all()
            return s

        join = run_in_thread(finish)

        def check():
            done = join(20)
            self.assert_sse(done)
            docs = self.json_events(done)
            self.assertFalse(any("error" in d for d in docs), f"bystander got an error: {docs}")
            self.assertEqual(stream_text(path, docs), want, "bystander text")

        return check

    def assert_still_serving(self):
        for path in ROUTES:
            prompt = f"normal request after a fault {path}"
            r = post_json(self.port, path, make_body(path, prompt, 5, self.MODEL))
            self.assertEqual(r.status, 200, f"{path} after a fault: {r.body[:300]!r}")
            self.assertEqual(text_of(path, r.json()), self.ref(path, prompt, 5))
        s = open_stream(self.port, GEN, make_body(GEN, "stream after a fault", 5, None, True))
        self.assertNotIsInstance(s, Response)
        s.read_all()
        last = self.check_sglang_stream(s)
        self.assertEqual(last[0]["text"], self.ref(GEN, "stream after a fault", 5))

    def run_fault(self, body_fn, bystander_tokens=60):
        check = self.start_bystander(tokens=bystander_tokens)
        body_fn()
        check()
        self.assert_still_serving()

    def backend_message(self, path, status):
        """What the backend says in its error body for an X-Emulator-Fault status."""
        native = self.DIALECT == "sglang" and path != CHAT
        if native and status == 500:
            return "Internal Server Error"  # SGLang's uncaught exception: plain text
        return FAULT_MESSAGE

    # ---- status faults -------------------------------------------------------------------------

    def test_backend_status_is_relayed(self):
        def body():
            for status in (500, 503, 429):
                for path in ROUTES:
                    for streaming in (False, True):
                        with self.subTest(status=status, path=path, stream=streaming):
                            r = open_stream(self.port, path,
                                            make_body(path, "status fault", 4, self.MODEL,
                                                      stream=streaming),
                                            self.fault(f"status:{status}"))
                            self.assertIsInstance(r, Response,
                                                  "a status before the first byte must stay "
                                                  "an HTTP error")
                            self.assert_error_for(path, r, status,
                                                  self.backend_message(path, status))
        self.run_fault(body)

    # ---- connection faults ---------------------------------------------------------------------

    def test_reset_before_answer_is_502(self):
        def body():
            for path in ROUTES:
                for streaming in (False, True):
                    with self.subTest(path=path, stream=streaming):
                        r = open_stream(self.port, path,
                                        make_body(path, "reset", 4, self.MODEL, stream=streaming),
                                        self.fault("reset"))
                        self.assertIsInstance(r, Response)
                        self.assert_error_for(path, r, 502, "backend")
        self.run_fault(body)

    def _midstream(self, mode, *needles):
        def body():
            for path in ROUTES:
                with self.subTest(path=path, stream=True):
                    r = open_stream(self.port, path,
                                    make_body(path, f"midstream {mode}", 12, self.MODEL, True),
                                    self.fault(mode, 3))
                    if isinstance(r, Response):
                        self.fail(f"expected a 200 stream, got {r.status} {r.body[:300]!r}")
                    r.read_all()
                    err = self.inband_error(r)
                    for n in needles:
                        self.assert_mentions(err["message"], n)
                    docs = self.json_events(r)
                    self.assertGreaterEqual(len(docs), 2, "some output before the error")
                with self.subTest(path=path, stream=False):
                    r = post_json(self.port, path,
                                  make_body(path, f"midstream {mode}", 12, self.MODEL),
                                  self.fault(mode))
                    self.assert_error_for(path, r, 502, *needles)
        self.run_fault(body)

    # What to fix is on the backend's side: the message must say it broke off the answer.
    BROKE_OFF = r"backend.*(closed|ended|before it finished|incomplete|cut off)"

    def test_reset_midstream(self):
        self._midstream("reset_midstream", self.BROKE_OFF)

    def test_close_midstream(self):
        self._midstream("close_midstream", self.BROKE_OFF)

    def test_error_event_relayed(self):
        def body():
            for path in ROUTES:
                with self.subTest(path=path):
                    r = open_stream(self.port, path,
                                    make_body(path, "error event", 12, self.MODEL, True),
                                    self.fault("error_event", 2))
                    self.assertNotIsInstance(r, Response)
                    r.read_all()
                    err = self.inband_error(r)
                    self.assert_mentions(err["message"], FAULT_MESSAGE)
        self.run_fault(body)

    def test_garbage(self):
        def body():
            for path in ROUTES:
                with self.subTest(path=path, stream=False):
                    r = post_json(self.port, path, make_body(path, "garbage", 4, self.MODEL),
                                  self.fault("garbage"))
                    self.assert_error_for(path, r, 502, "backend")
                with self.subTest(path=path, stream=True):
                    r = open_stream(self.port, path,
                                    make_body(path, "garbage", 4, self.MODEL, True),
                                    self.fault("garbage"))
                    if isinstance(r, Response):
                        self.assert_error_for(path, r, 502, "backend")
                    else:
                        r.read_all()
                        self.inband_error(r)
        self.run_fault(body)

    # ---- time-outs -----------------------------------------------------------------------------

    def test_stall_before_headers_is_504(self):
        def body():
            for path in ROUTES:
                for streaming in (False, True):
                    with self.subTest(path=path, stream=streaming):
                        t0 = time.monotonic()
                        r = open_stream(self.port, path,
                                        make_body(path, "stall", 4, self.MODEL, stream=streaming),
                                        self.fault("stall"), timeout=10)
                        took = time.monotonic() - t0
                        self.assertIsInstance(r, Response)
                        self.assert_error_for(path, r, 504, "time")
                        self.assertGreaterEqual(took, self.FIRST_BYTE_MS / 1000 * 0.9)
                        self.assertLess(took, self.FIRST_BYTE_MS / 1000 + 2.0,
                                        f"504 took {took:.2f}s")
        self.run_fault(body, bystander_tokens=200)

    def test_stall_midstream_is_inband_timeout(self):
        def body():
            for path in ROUTES:
                with self.subTest(path=path):
                    t0 = time.monotonic()
                    r = open_stream(self.port, path,
                                    make_body(path, "stall midstream", 12, self.MODEL, True),
                                    self.fault("stall_midstream", 3), timeout=10)
                    self.assertNotIsInstance(r, Response)
                    r.read_all()
                    took = time.monotonic() - t0
                    err = self.inband_error(r)
                    self.assert_mentions(err["message"], "time")
                    self.assertLess(took, self.IDLE_MS / 1000 + 2.0, f"took {took:.2f}s")
                with self.subTest(path=path, stream=False):
                    # Half the body, then silence.
                    t0 = time.monotonic()
                    r = post_json(self.port, path,
                                  make_body(path, "stall midstream", 12, self.MODEL),
                                  self.fault("stall_midstream"), timeout=10)
                    took = time.monotonic() - t0
                    self.assert_error_for(path, r, 504, "time")
                    self.assertLess(took, self.IDLE_MS / 1000 + 2.0, f"took {took:.2f}s")
        self.run_fault(body, bystander_tokens=200)


class TestFaultsOpenAIBackend(_BackendFaults, unittest.TestCase):
    DIALECT = "openai"
    MODEL = "emu-vllm"


class TestFaultsSGLangBackend(_BackendFaults, unittest.TestCase):
    DIALECT = "sglang"
    MODEL = "emu-sglang"


if __name__ == "__main__":
    unittest.main()
