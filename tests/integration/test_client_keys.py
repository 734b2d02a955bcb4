"""Client keys (issue 12, item 1): with `auth:` set, every route but the health checks needs a
configured key, sent as each dialect's official clients send one; a missing or wrong key gets 401
in the client's own dialect; a key's limits answer 429 with Retry-After; the key never reaches the
backend, the logs or the metrics (its configured name does)."""

from __future__ import annotations

import json
import os
import unittest

from harness import Emulator, Proxy, keys_file, post_json, request, start, wait_until
from scripted import ScriptedBackend, json_reply

MODEL = "keys-model"
KEY_A = "sk-team-a-0123456789abcdef"
KEY_B = "sk-team-b-0123456789abcdef"
KEY_ENV = "sk-from-env-0123456789abcdef"
CMPL_BODY = {"model": MODEL, "prompt": "hello", "max_tokens": 2}


def config(keys_path: str, upstream: str, env: str | None = None) -> str:
    auth = f"auth:\n  keys_file: {keys_path}\n" + (f"  keys_env: {env}\n" if env else "")
    return auth + (f"backends:\n  - url: {upstream}\n    dialect: openai\n    model: {MODEL}\n")


class ClientKeys(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.keys_path = keys_file(
            f"- name: team-a\n  key: {KEY_A}\n"
            f"- name: team-b\n  key: {KEY_B}\n  rps: 1\n")
        cls.addClassCleanup(os.unlink, cls.keys_path)
        os.environ["INFERGATE_TEST_CLIENT_KEYS"] = KEY_ENV
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, config_yaml=config(cls.keys_path, cls.emu.url,
                                                         "INFERGATE_TEST_CLIENT_KEYS"),
                          wait_ready=False)
        cls.port = cls.proxy.port

    def test_no_key_gets_401_in_each_dialect(self):
        cases = [
            ("/v1/completions", CMPL_BODY, lambda d: d["error"]["code"] == "invalid_api_key"),
            ("/v1/messages", {"model": MODEL, "max_tokens": 2,
                              "messages": [{"role": "user", "content": "x"}]},
             lambda d: d["type"] == "error" and d["error"]["type"] == "authentication_error"),
            ("/api/chat", {"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
             lambda d: isinstance(d["error"], str)),
            ("/generate", {"inputs": "x", "parameters": {"max_new_tokens": 2}},
             lambda d: isinstance(d["error"], str) and d.get("error_type") is not None),
        ]
        for path, body, shape in cases:
            r = post_json(self.port, path, body)
            self.assertEqual(r.status, 401, (path, r.body))
            doc = r.json()
            self.assertTrue(shape(doc), (path, doc))
            self.assertIn("Authorization: Bearer", r.body.decode(), path)
            self.assertEqual(r.header("WWW-Authenticate"), 'Bearer realm="infergate"')
        # Info routes too, in their dialect's shape.
        r = request(self.port, "GET", "/api/tags")
        self.assertEqual(r.status, 401)
        self.assertIsInstance(r.json()["error"], str)
        self.assertEqual(request(self.port, "GET", "/v1/models").status, 401)
        self.assertEqual(request(self.port, "GET", "/metrics").status, 401)

    def test_a_wrong_key_gets_401_saying_so(self):
        r = post_json(self.port, "/v1/completions", CMPL_BODY,
                      headers={"Authorization": "Bearer sk-not-a-key-0123456789"})
        self.assertEqual(r.status, 401)
        self.assertIn("not one this server accepts", r.json()["error"]["message"])
        self.assertNotIn("sk-not-a-key", r.body.decode())

    def test_each_clients_header_is_accepted(self):
        for headers in ({"Authorization": f"Bearer {KEY_A}"}, {"x-api-key": KEY_A},
                        {"api-key": KEY_A}, {"Authorization": f"Bearer {KEY_ENV}"}):
            r = post_json(self.port, "/v1/completions", CMPL_BODY, headers=headers)
            self.assertEqual(r.status, 200, (headers, r.body))
        r = request(self.port, "GET", "/api/tags", headers={"Authorization": f"Bearer {KEY_A}"})
        self.assertEqual(r.status, 200)

    def test_health_checks_need_no_key(self):
        self.assertEqual(request(self.port, "GET", "/health").status, 200)
        self.assertEqual(request(self.port, "GET", "/").status, 200)

    def test_a_key_over_its_rate_gets_429_with_retry_after(self):
        headers = {"x-api-key": KEY_B}
        statuses = []
        for _ in range(3):
            r = post_json(self.port, "/v1/completions", CMPL_BODY, headers=headers)
            statuses.append(r.status)
            if r.status == 429:
                self.assertGreaterEqual(int(r.header("Retry-After")), 1)
                self.assertIn("team-b", r.json()["error"]["message"])
                self.assertEqual(r.json()["error"]["type"], "rate_limit_error")
        self.assertEqual(statuses[0], 200)
        self.assertIn(429, statuses)

    def test_metrics_and_logs_name_the_key_never_show_it(self):
        post_json(self.port, "/v1/completions", CMPL_BODY,
                  headers={"Authorization": f"Bearer {KEY_A}"})
        post_json(self.port, "/v1/completions", CMPL_BODY,
                  headers={"Authorization": "Bearer sk-wrong-0123456789abcdef"})
        text = request(self.port, "GET", "/metrics", headers={"x-api-key": KEY_A}).body.decode()
        self.assertRegex(text, r'infergate_client_key_requests_total\{key="team-a"\} [1-9]')
        self.assertRegex(text, r'infergate_auth_failures_total\{reason="invalid"\} [1-9]')
        log = wait_until(lambda: '"key":"team-a"' in self.proxy.stderr_text()
                         and self.proxy.stderr_text(), timeout=5, what="an access-log line")
        for secret in (KEY_A, KEY_B, KEY_ENV, "sk-wrong"):
            self.assertNotIn(secret, text)
            self.assertNotIn(secret, log)
        self.assertIn("client auth: on (3 keys)", log)


class ClientKeyNeverGoesUpstream(unittest.TestCase):
    def test_the_backend_never_sees_the_client_key(self):
        backend = ScriptedBackend()
        self.addCleanup(backend.stop)
        backend.route("POST", "/v1/completions", json_reply(
            {"id": "c", "object": "text_completion", "model": MODEL,
             "choices": [{"index": 0, "text": "hi", "finish_reason": "length"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}))
        path = keys_file(f"{KEY_A}\n")
        self.addCleanup(os.unlink, path)
        proxy = Proxy(config_yaml=config(path, backend.url), wait_ready=False)
        self.addCleanup(proxy.cleanup_files)
        self.addCleanup(proxy.stop)
        for headers in ({"Authorization": f"Bearer {KEY_A}"}, {"x-api-key": KEY_A}):
            r = post_json(proxy.port, "/v1/completions", CMPL_BODY, headers=headers)
            self.assertEqual(r.status, 200, r.body)
        posts = [r for r in backend.requests if r.method == "POST"]
        self.assertEqual(len(posts), 2)
        for p in posts:
            self.assertIsNone(p.header("Authorization"))
            self.assertIsNone(p.header("x-api-key"))
            self.assertNotIn(KEY_A.encode(), p.body)


class BadKeyConfig(unittest.TestCase):
    def test_a_config_without_usable_keys_does_not_start(self):
        path = keys_file("short\n")
        self.addCleanup(os.unlink, path)
        with self.assertRaises(RuntimeError) as caught:
            Proxy(config_yaml=config(path, "http://127.0.0.1:9"), wait_ready=False)
        self.assertIn("auth.keys_file line 1", str(caught.exception))
        self.assertNotIn("short\n", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
