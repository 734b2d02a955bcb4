"""CORS (issue 17, item 4; docs/security.md "Browsers"): with `cors.allowed_origins` set, a
preflight from an allowed origin gets 204 with the policy and needs no client key; one from any
other origin (or with CORS off) gets 403 without a CORS header; every answer to an allowed origin
carries Access-Control-Allow-Origin, Vary: Origin and Access-Control-Expose-Headers: whole answers,
SSE and NDJSON streams, errors of every kind, the session's own refusals, info routes, /metrics
and /health. Client keys still apply to the actual request. A reload changes the policy. A plain
OPTIONS gets 204 with Allow (RFC 9110 §9.3.7), CORS on or off.

The streams run against two backends: the emulator's own bytes and a wire style (CRLF, no space
after `data:`, comments, pretty JSON, writes cut into pieces)."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import unittest

from harness import (REPO, Emulator, Proxy, closed_port, keys_file, open_stream, post_json,
                     read_raw_response, request, start, wait_until)
from scripted import ScriptedBackend, json_reply

MODEL = "cors-model"
STYLED = "cors-styled"
DEAD = "cors-dead"
ORIGIN = "http://app.cors.test:5173"
SUBDOMAIN_ORIGIN = "https://a.b.example.org"
EVIL = "http://evil.cors.test"
KEY = "sk-cors-0123456789abcdef"
LIMITED = "sk-cors-limited-0123456789"
STYLE = ["--sse-style", "crlf,nospace,comments", "--ndjson-style", "crlf",
         "--json-style", "pretty", "--split-writes=5"]
EXPOSED = ["x-request-id", "retry-after", "www-authenticate", "allow", "x-prompt-tokens",
           "x-generated-tokens"]


def bearer(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def preflight(port: int, path: str, origin: str, method: str = "POST",
              headers: str | None = "authorization,content-type") -> "Response":
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        h["Access-Control-Request-Headers"] = headers
    return request(port, "OPTIONS", path, headers=h)


def raw_exchange(port: int, wire: bytes, *, then: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Sends `wire` on a new connection, reads one Content-Length framed answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(wire)
        if then:
            s.sendall(then)
        return read_raw_response(s)
    finally:
        s.close()


class _Checks:
    def assert_cors(self, headers: dict[str, str], origin: str = ORIGIN, what: str = ""):
        """The lines every answer to an allowed origin carries."""
        h = {k.lower(): v for k, v in headers.items()}
        self.assertEqual(h.get("access-control-allow-origin"), origin, f"{what}: {h}")
        self.assertIn("Origin", h.get("vary", ""), f"{what}: {h}")
        exposed = [x.strip() for x in h.get("access-control-expose-headers", "").split(",")]
        self.assertEqual(exposed, EXPOSED, f"{what}: {h}")
        self.assertNotIn("access-control-allow-credentials", h, what)

    def assert_no_cors(self, headers: dict[str, str], what: str = ""):
        h = {k.lower(): v for k, v in headers.items()}
        self.assertFalse([k for k in h if k.startswith("access-control-")], f"{what}: {h}")


class CorsOn(_Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.keys = keys_file(
            f"- name: app\n  key: {KEY}\n- name: limited\n  key: {LIMITED}\n  rps: 0.01\n")
        cls.addClassCleanup(os.unlink, cls.keys)
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.styled = start(cls, Emulator, "openai", STYLED, ["--quiet", *STYLE])
        yaml = (
            f"cors:\n  allowed_origins: ['{ORIGIN}', 'https://*.example.org']\n"
            f"auth:\n  keys_file: {cls.keys}\n"
            "limits:\n  max_body_bytes: 4096\n"
            "client_body_ms: 300\n"
            "backends:\n"
            f"  - {{name: a, url: '{cls.emu.url}', dialect: openai, model: {MODEL},\n"
            "      timeouts: {first_byte_ms: 1000}}\n"
            f"  - {{name: b, url: '{cls.styled.url}', dialect: openai, model: {STYLED}}}\n"
            f"  - {{name: dead, url: 'http://127.0.0.1:{closed_port()}', dialect: openai,\n"
            f"      model: {DEAD}}}\n")
        cls.proxy = start(cls, Proxy, config_yaml=yaml, wait_ready=False)
        cls.port = cls.proxy.port

        def ready():
            r = request(cls.port, "GET", "/v1/models", headers=bearer())
            return r.status == 200 and {MODEL, STYLED} <= {m["id"] for m in r.json()["data"]}
        wait_until(ready, 10, what="the proxy to list both models")

    def hdrs(self, **extra) -> dict[str, str]:
        return {"Origin": ORIGIN, **bearer(), **extra}

    # ---- preflight ----

    def test_preflight_from_an_allowed_origin_needs_no_key(self):
        r = preflight(self.port, "/v1/chat/completions", ORIGIN,
                      headers="authorization,content-type,x-stainless-os,x-stainless-retry-count")
        self.assertEqual(r.status, 204, r.body)
        self.assertEqual(r.body, b"")
        self.assertIsNone(r.header("content-length"))  # RFC 9110 §8.6
        self.assert_cors(r.headers, what="preflight")
        methods = [m.strip() for m in r.header("access-control-allow-methods").split(",")]
        self.assertIn("POST", methods)
        allowed = [h.strip() for h in r.header("access-control-allow-headers").split(",")]
        for h in ("authorization", "content-type", "x-stainless-os", "x-stainless-retry-count",
                  "x-api-key", "anthropic-version"):
            self.assertIn(h, allowed)
        self.assertEqual(r.header("access-control-max-age"), "600")
        self.assertEqual(r.header("allow"), "POST, OPTIONS")
        self.assertIsNone(r.header("www-authenticate"))

    def test_preflight_on_every_kind_of_route(self):
        for path, method in (("/generate", "POST"), ("/api/chat", "POST"),
                             ("/v1/messages", "POST"), ("/v1/completions", "POST"),
                             ("/v1/models", "GET"), ("/v1/models/x", "GET"), ("/health", "GET"),
                             ("/metrics", "GET"), ("/api/tags", "GET"), ("/", "POST")):
            with self.subTest(path=path):
                r = preflight(self.port, path, ORIGIN, method)
                self.assertEqual(r.status, 204, r.body)
                self.assert_cors(r.headers, what=path)
                self.assertIn("OPTIONS", r.header("allow"))

    def test_every_header_the_js_sdks_send_passes_the_preflight(self):
        # The OpenAI and Anthropic JS SDKs (tests/clients/node_modules, pinned by its
        # package-lock.json) name their headers in their sources; an SDK update that adds one
        # must show up here, not as a blocked request in someone's browser.
        modules = REPO / "tests" / "clients" / "node_modules"
        sources = [f for d in ("openai", "@anthropic-ai/sdk") if (modules / d).is_dir()
                   for f in (modules / d).rglob("*.mjs")]
        if not sources:
            if os.environ.get("CI"):
                self.fail(f"no SDK sources under {modules}: scripts/setup.sh runs npm ci there")
            self.skipTest(f"no SDK sources under {modules} (npm ci in tests/clients)")
        sent = set()
        pattern = re.compile(r"""['"]((?:x-stainless-[a-z-]+)|openai-organization|"""
                             r"""openai-project|anthropic-version|anthropic-beta|"""
                             r"""anthropic-dangerous-direct-browser-access)['"]""", re.I)
        for f in sources:
            sent.update(m.lower() for m in pattern.findall(f.read_text(errors="replace")))
        self.assertIn("x-stainless-retry-count", sent)  # the scan found what it looks for
        r = preflight(self.port, "/v1/chat/completions", ORIGIN, headers=",".join(sorted(sent)))
        self.assertEqual(r.status, 204)
        allowed = {h.strip() for h in r.header("access-control-allow-headers").split(",")}
        self.assertEqual(sent - allowed, set())

    def test_a_subdomain_wildcard_echoes_the_origin(self):
        r = preflight(self.port, "/v1/chat/completions", SUBDOMAIN_ORIGIN)
        self.assertEqual(r.status, 204, r.body)
        self.assert_cors(r.headers, SUBDOMAIN_ORIGIN)
        r = preflight(self.port, "/v1/chat/completions", "https://example.org")
        self.assertEqual(r.status, 403)

    def test_preflight_from_another_origin_is_refused_without_cors_headers(self):
        for origin in (EVIL, "http://app.cors.test:5174", "https://app.cors.test:5173", "null"):
            with self.subTest(origin=origin):
                r = preflight(self.port, "/v1/chat/completions", origin)
                self.assertEqual(r.status, 403, r.body)
                self.assert_no_cors(r.headers, origin)
                self.assertIn("Origin", r.header("vary") or "")
                err = r.json()["error"]
                self.assertEqual(err["code"], "cors_origin_not_allowed")
                self.assertIn(f"'{origin}'", err["message"])
                self.assertIn("cors.allowed_origins", err["message"])

    def test_preflight_to_an_unknown_path_is_404_with_the_routes(self):
        r = preflight(self.port, "/v1/nope", ORIGIN)
        self.assertEqual(r.status, 404)
        self.assert_cors(r.headers, what="404")
        self.assertIn("/v1/chat/completions", r.json()["error"]["message"])

    def test_plain_options_gets_204_with_allow(self):
        for path, allow in (("/v1/chat/completions", "POST, OPTIONS"),
                            ("/v1/models", "GET, HEAD, OPTIONS"),
                            ("/generate", "POST, PUT, OPTIONS")):
            with self.subTest(path=path):
                r = request(self.port, "OPTIONS", path)
                self.assertEqual(r.status, 204, r.body)
                self.assertEqual(r.header("allow"), allow)
                self.assert_no_cors(r.headers, path)
        r = request(self.port, "OPTIONS", "*")
        self.assertEqual(r.status, 204, r.body)
        allow = [m.strip() for m in r.header("allow").split(",")]
        self.assertEqual(len(allow), len(set(allow)), allow)
        self.assertLessEqual({"POST", "PUT", "GET", "HEAD"}, set(allow))
        self.assertEqual(allow[-1], "OPTIONS")

    # ---- the actual requests: keys ----

    def test_the_request_after_the_preflight_still_needs_its_key(self):
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
        self.assertEqual(preflight(self.port, "/v1/chat/completions", ORIGIN).status, 204)
        r = post_json(self.port, "/v1/chat/completions", body, headers={"Origin": ORIGIN})
        self.assertEqual(r.status, 401, r.body)
        self.assert_cors(r.headers, what="401")  # the page can read why
        self.assertEqual(r.header("www-authenticate"), 'Bearer realm="infergate"')
        r = post_json(self.port, "/v1/chat/completions", body, headers=self.hdrs())
        self.assertEqual(r.status, 200, r.body)
        self.assert_cors(r.headers, what="200")

    # ---- every kind of answer carries the lines ----

    def test_whole_answers_in_every_front(self):
        chat = [{"role": "user", "content": "hi"}]
        for path, body in (
                ("/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 3}),
                ("/v1/chat/completions", {"model": MODEL, "messages": chat, "max_tokens": 3}),
                ("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 3}}),
                ("/api/chat", {"model": MODEL, "messages": chat, "stream": False,
                               "options": {"num_predict": 3}}),
                ("/v1/messages", {"model": MODEL, "messages": chat, "max_tokens": 3})):
            with self.subTest(path=path):
                r = post_json(self.port, path, body, headers=self.hdrs())
                self.assertEqual(r.status, 200, r.body)
                self.assert_cors(r.headers, what=path)
                self.assertEqual(r.header("x-request-id") is not None, True)

    def test_streams_sse_and_ndjson_with_two_wire_styles(self):
        chat = [{"role": "user", "content": "hi"}]
        for model in (MODEL, STYLED):
            with self.subTest(model=model, front="sse"):
                s = open_stream(self.port, "/v1/chat/completions",
                                {"model": model, "messages": chat, "max_tokens": 6,
                                 "stream": True}, headers=self.hdrs())
                self.assertFalse(hasattr(s, "body"), getattr(s, "body", b"")[:300])
                self.assert_cors(s.headers, what=f"{model} SSE")
                events = s.read_all()
                self.assertTrue(events[-1].done)
                text = "".join(e.json()["choices"][0]["delta"].get("content", "")
                               for e in events[:-1] if e.json()["choices"])
                self.assertTrue(text.strip(), events)
            with self.subTest(model=model, front="ndjson"):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
                conn.request("POST", "/api/chat",
                             json.dumps({"model": model, "messages": chat,
                                         "options": {"num_predict": 6}}),
                             {"Content-Type": "application/json", **self.hdrs()})
                resp = conn.getresponse()
                headers = dict(resp.getheaders())
                lines = [json.loads(x) for x in resp.read().splitlines() if x.strip()]
                conn.close()
                self.assertEqual(resp.status, 200)
                self.assertEqual(headers.get("Content-Type"), "application/x-ndjson")
                self.assert_cors(headers, what=f"{model} NDJSON")
                self.assertGreater(len(lines), 2)
                self.assertTrue(lines[-1]["done"])

    def test_info_routes_metrics_and_health(self):
        for method, path, key in (("GET", "/v1/models", True), ("HEAD", "/v1/models", True),
                                  ("GET", f"/v1/models/{MODEL}", True), ("GET", "/api/tags", True),
                                  ("GET", "/info", True), ("GET", "/metrics", True),
                                  ("GET", "/health", False), ("GET", "/", False)):
            with self.subTest(path=path, method=method):
                h = self.hdrs() if key else {"Origin": ORIGIN}
                r = request(self.port, method, path, headers=h)
                self.assertEqual(r.status, 200, r.body[:300])
                self.assert_cors(r.headers, what=f"{method} {path}")

    def test_errors_of_every_kind(self):
        chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        cases = [
            ("malformed JSON", 400, lambda: post_json(self.port, "/v1/chat/completions",
                                                      b'{"model": ', headers=self.hdrs())),
            ("missing key", 401, lambda: post_json(self.port, "/api/chat", chat,
                                                   headers={"Origin": ORIGIN})),
            ("unknown path", 404, lambda: request(self.port, "GET", "/v2/x", headers=self.hdrs())),
            ("unknown model", 404, lambda: post_json(
                self.port, "/v1/chat/completions", {**chat, "model": "nope"},
                headers=self.hdrs())),
            ("wrong method", 405, lambda: request(self.port, "DELETE", "/v1/chat/completions",
                                                  headers=self.hdrs())),
            ("backend refused", 502, lambda: post_json(
                self.port, "/v1/chat/completions", {**chat, "model": DEAD},
                headers=self.hdrs())),
            ("backend reset", 502, lambda: post_json(
                self.port, "/v1/chat/completions", chat,
                headers=self.hdrs(**{"X-Emulator-Fault": "reset"}))),
            ("backend stalled", 504, lambda: post_json(
                self.port, "/v1/chat/completions", chat,
                headers=self.hdrs(**{"X-Emulator-Fault": "stall"}))),
            ("backend error", 500, lambda: post_json(
                self.port, "/v1/chat/completions", chat,
                headers=self.hdrs(**{"X-Emulator-Fault": "error_event"}))),
        ]
        for what, status, send in cases:
            with self.subTest(what=what):
                r = send()
                self.assertEqual(r.status, status, r.body[:300])
                self.assert_cors(r.headers, what=what)
                self.assertIn("error", r.json())
        # A 405's Allow lists OPTIONS too.
        r = request(self.port, "DELETE", "/v1/chat/completions", headers=self.hdrs())
        self.assertEqual(r.header("allow"), "POST, OPTIONS")

    def test_429_over_a_key_limit(self):
        chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        h = {"Origin": ORIGIN, **bearer(LIMITED)}
        statuses = []
        for _ in range(2):
            r = post_json(self.port, "/v1/chat/completions", chat, headers=h)
            statuses.append(r.status)
            self.assert_cors(r.headers, what=f"status {r.status}")
        self.assertEqual(statuses, [200, 429])
        self.assertIsNotNone(r.header("retry-after"))

    def test_the_sessions_own_refusals_once_the_head_is_read(self):
        # A body over limits.max_body_bytes: refused from its Content-Length.
        status, headers, body = raw_exchange(self.port, (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: {ORIGIN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode())
        self.assertEqual(status, 413, body)
        self.assert_cors(headers, what="413")
        self.assertIn("limits.max_body_bytes", json.loads(body)["error"]["message"])
        # A body that stalls past client_body_ms.
        status, headers, body = raw_exchange(self.port, (
            f"POST /api/chat HTTP/1.1\r\nHost: x\r\nOrigin: {ORIGIN}\r\n"
            "Content-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"mo").encode())
        self.assertEqual(status, 408, body)
        self.assert_cors(headers, what="408")
        self.assertIsInstance(json.loads(body)["error"], str)  # Ollama's shape
        # A refused framing (the head is whole): 400.
        status, headers, body = raw_exchange(self.port, (
            f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: {ORIGIN}\r\n"
            "Transfer-Encoding: identity\r\nContent-Length: 2\r\n\r\n{}").encode())
        self.assertEqual(status, 400, body)
        # From another origin: Vary alone.
        status, headers, body = raw_exchange(self.port, (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: {EVIL}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode())
        self.assertEqual(status, 413, body)
        self.assert_no_cors(headers, "413 to another origin")
        self.assertEqual(headers.get("vary"), "Origin")

    def test_other_origins_and_no_origin_get_vary_only(self):
        body = {"model": MODEL, "prompt": "hi", "max_tokens": 2}
        for h in ({"Origin": EVIL, **bearer()}, bearer()):
            with self.subTest(headers=list(h)):
                r = post_json(self.port, "/v1/completions", body, headers=h)
                self.assertEqual(r.status, 200, r.body)  # served: the browser withholds it
                self.assert_no_cors(r.headers)
                self.assertEqual(r.header("vary"), "Origin")


class CorsOriginUpstream(_Checks, unittest.TestCase):
    """An Origin infergate allowed is not forwarded: a backend with its own origin check (Ollama
    answers 403 to any origin outside OLLAMA_ORIGINS) would veto what the operator allowed. Any
    other Origin goes through as before, for the backend's own policy to judge."""

    @classmethod
    def setUpClass(cls):
        cls.backend = ScriptedBackend()
        cls.addClassCleanup(cls.backend.stop)
        cls.backend.route("POST", "/v1/completions", json_reply({
            "id": "cmpl-1", "object": "text_completion", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "text": " ok", "finish_reason": "length",
                         "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}))
        cls.proxy = start(cls, Proxy, config_yaml=(
            f"cors:\n  allowed_origins: ['{ORIGIN}']\n"
            f"backends:\n  - {{url: '{cls.backend.url}', dialect: openai, model: {MODEL}}}\n"),
            model=MODEL)

    def test_origin_upstream(self):
        body = {"model": MODEL, "prompt": "hi", "max_tokens": 1}
        for origin, forwarded in ((ORIGIN, None), (EVIL, EVIL)):
            with self.subTest(origin=origin):
                r = post_json(self.proxy.port, "/v1/completions", body,
                              headers={"Origin": origin, "X-Trace": origin})
                self.assertEqual(r.status, 200, r.body)
                sent = [q for q in self.backend.requests_to("/v1/completions")
                        if q.header("X-Trace") == origin]
                self.assertEqual(len(sent), 1)
                self.assertEqual(sent[0].header("Origin"), forwarded)


class CorsAnyOrigin(_Checks, unittest.TestCase):
    """"*": Access-Control-Allow-Origin: * for every origin; "*" headers answer what was asked."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, config_yaml=(
            "cors:\n  allowed_origins: ['*']\n  allowed_headers: ['*']\n  max_age: 60\n"
            "  allow_private_network: true\n"
            f"backends:\n  - {{url: '{cls.emu.url}', dialect: openai, model: {MODEL}}}\n"),
            model=MODEL)

    def test_any_origin(self):
        r = preflight(self.port(), "/v1/chat/completions", "https://anyone.test",
                      headers="authorization,x-custom-header")
        self.assertEqual(r.status, 204, r.body)
        self.assert_cors(r.headers, "*")
        self.assertEqual(r.header("access-control-allow-headers"), "authorization,x-custom-header")
        self.assertEqual(r.header("access-control-max-age"), "60")
        r = post_json(self.port(), "/v1/completions",
                      {"model": MODEL, "prompt": "hi", "max_tokens": 2},
                      headers={"Origin": "https://anyone.test"})
        self.assertEqual(r.status, 200)
        self.assert_cors(r.headers, "*")

    def test_private_network_access(self):
        r = request(self.port(), "OPTIONS", "/v1/models", headers={
            "Origin": "https://public.test", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true"})
        self.assertEqual(r.status, 204)
        self.assertEqual(r.header("access-control-allow-private-network"), "true")

    def port(self) -> int:
        return self.proxy.port


class CorsOff(_Checks, unittest.TestCase):
    """The default: no CORS line on any answer; a preflight is refused saying CORS is off."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--upstream-dialect", "openai",
                                       "--model", MODEL], model=MODEL)

    def test_preflight_is_refused_saying_cors_is_off(self):
        r = preflight(self.proxy.port, "/v1/chat/completions", ORIGIN)
        self.assertEqual(r.status, 403, r.body)
        self.assert_no_cors(r.headers)
        self.assertIsNone(r.header("vary"))
        msg = r.json()["error"]["message"]
        self.assertIn("CORS is off", msg)
        self.assertIn(f"'{ORIGIN}'", msg)

    def test_answers_carry_no_cors_line(self):
        r = post_json(self.proxy.port, "/v1/completions",
                      {"model": MODEL, "prompt": "hi", "max_tokens": 2}, headers={"Origin": ORIGIN})
        self.assertEqual(r.status, 200)
        self.assert_no_cors(r.headers)
        self.assertIsNone(r.header("vary"))

    def test_plain_options_still_gets_allow(self):
        r = request(self.proxy.port, "OPTIONS", "/api/tags")
        self.assertEqual(r.status, 204, r.body)
        self.assertEqual(r.header("allow"), "GET, HEAD, OPTIONS")


class CorsReload(_Checks, unittest.TestCase):
    """POST /-/reload (and SIGHUP) applies a changed cors: section to the next request."""

    def test_reload_changes_the_policy(self):
        emu = Emulator("openai", MODEL, ["--quiet"])
        self.addCleanup(emu.stop)
        base = (f"admin_listen: 127.0.0.1:0\nbackends:\n"
                f"  - {{url: '{emu.url}', dialect: openai, model: {MODEL}}}\n")
        proxy = Proxy(config_yaml=base, model=MODEL)
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)

        def reload(text: str) -> dict:
            with open(proxy.config_path + ".new", "w") as f:
                f.write(text)
            os.replace(proxy.config_path + ".new", proxy.config_path)
            r = request(proxy.admin_port, "POST", "/-/reload")
            self.assertEqual(r.status, 200, r.body)
            return r.json()

        self.assertEqual(preflight(proxy.port, "/v1/models", ORIGIN, "GET").status, 403)
        changed = reload(base + f"cors:\n  allowed_origins: ['{ORIGIN}']\n")
        self.assertIn("cors", changed["changed"])
        r = preflight(proxy.port, "/v1/models", ORIGIN, "GET")
        self.assertEqual(r.status, 204, r.body)
        self.assert_cors(r.headers)
        self.assert_cors(request(proxy.port, "GET", "/v1/models",
                                 headers={"Origin": ORIGIN}).headers)
        reload(base + "cors:\n  allowed_origins: ['https://other.test']\n")
        self.assertEqual(preflight(proxy.port, "/v1/models", ORIGIN, "GET").status, 403)
        self.assert_no_cors(request(proxy.port, "GET", "/v1/models",
                                    headers={"Origin": ORIGIN}).headers)
        # A file with errors keeps the running policy.
        with open(proxy.config_path, "w") as f:
            f.write(base + "cors:\n  allowed_origins: ['*']\n  allow_credentials: true\n")
        r = request(proxy.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 400)
        self.assertIn("cors.allow_credentials", r.body.decode())
        self.assertEqual(preflight(proxy.port, "/v1/models", "https://other.test", "GET").status,
                         204)


if __name__ == "__main__":
    unittest.main()
