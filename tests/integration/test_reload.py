"""Hot reload (issue 12, item 3): SIGHUP and POST /-/reload (admin listener only) re-read the
--config file, validate it and swap it on every worker; a file with errors keeps the running
config (logged, 400 with every error); requests in flight finish on the config they started with;
client keys reload with the config; infergate_config_reloads_total{result} counts them."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import unittest

from harness import Emulator, Proxy, Response, open_stream, post_json, request, start, wait_until

MODEL = "reload-model"
KEY_A = "sk-reload-a-0123456789abcdef"
KEY_B = "sk-reload-b-0123456789abcdef"
KEY_C = "sk-reload-c-0123456789abcdef"
CMPL_BODY = {"model": MODEL, "prompt": "hello", "max_tokens": 2}


def config(upstream: str, aliases: dict[str, str] | None = None, keys_path: str | None = None,
           extra: str = "", name: str = "default") -> str:
    text = "admin_listen: 127.0.0.1:0\n"
    text += (f"backends:\n  - name: {name}\n    url: {upstream}\n    dialect: openai\n"
             f"    model: {MODEL}\n")
    if aliases:
        text += "models:\n  aliases:\n" + "".join(f"    {a}: {t}\n" for a, t in aliases.items())
    if keys_path:
        text += f"auth:\n  keys_file: {keys_path}\n"
    return text + extra


def rewrite(path: str, text: str) -> None:
    # Written beside and renamed: the proxy never reads half a file.
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def model_ids(port: int, headers: dict[str, str] | None = None) -> list[str]:
    r = request(port, "GET", "/v1/models", headers=headers)
    return [m["id"] for m in r.json()["data"]] if r.status == 200 else []


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


class Reload(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])

    def proxy(self, yaml: str, args=()) -> Proxy:
        p = Proxy(args, config_yaml=yaml, wait_ready=False)
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p

    def wait_log(self, p: Proxy, text: str, count: int = 1) -> str:
        return wait_until(lambda: p.stderr_text().count(text) >= count and p.stderr_text(), 10,
                          what=f"{text!r} in the log")

    def reloads(self, p: Proxy, result: str) -> float:
        r = request(p.admin_port, "GET", "/metrics")
        self.assertEqual(r.status, 200)
        for line in r.body.decode().splitlines():
            if line.startswith(f'infergate_config_reloads_total{{result="{result}"}}'):
                return float(line.split()[-1])
        self.fail(f"no infergate_config_reloads_total{{result={result}}} in /metrics")

    def test_sighup_adds_an_alias(self):
        p = self.proxy(config(self.emu.url))
        p.wait_ready(model=MODEL)
        self.assertNotIn("fresh-alias", model_ids(p.port))
        self.assertEqual(post_json(p.port, "/v1/completions",
                                   dict(CMPL_BODY, model="fresh-alias")).status, 404)
        rewrite(p.config_path, config(self.emu.url, {"fresh-alias": MODEL}))
        p.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "fresh-alias" in model_ids(p.port), 10, what="the alias listed")
        r = post_json(p.port, "/v1/completions", dict(CMPL_BODY, model="fresh-alias"))
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(p.alive())
        log = self.wait_log(p, "reload (SIGHUP)")
        self.assertIn("changed: models.aliases", log)
        self.assertEqual(self.reloads(p, "ok"), 1)

    def test_keys_reload_added_works_removed_gets_401(self):
        keys = tempfile.NamedTemporaryFile("w", prefix="infergate-keys-", delete=False)
        keys.write(f"- name: a\n  key: {KEY_A}\n- name: b\n  key: {KEY_B}\n")
        keys.close()
        self.addCleanup(os.unlink, keys.name)
        p = self.proxy(config(self.emu.url, keys_path=keys.name))
        # Readiness needs a key: polled with one.
        wait_until(lambda: MODEL in model_ids(p.port, bearer(KEY_A)), 10, what="ready")
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY, bearer(KEY_B)).status, 200)
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY, bearer(KEY_C)).status, 401)
        rewrite(keys.name, f"- name: a\n  key: {KEY_A}\n- name: c\n  key: {KEY_C}\n")
        p.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: post_json(p.port, "/v1/completions", CMPL_BODY,
                                     bearer(KEY_C)).status == 200, 10, what="key c accepted")
        r = post_json(p.port, "/v1/completions", CMPL_BODY, bearer(KEY_B))
        self.assertEqual(r.status, 401, r.body)
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY, bearer(KEY_A)).status, 200)

    def test_broken_file_keeps_running_config(self):
        p = self.proxy(config(self.emu.url, {"kept-alias": MODEL}))
        p.wait_ready(model=MODEL)
        rewrite(p.config_path, config(self.emu.url, {"kept-alias": MODEL},
                                      extra="threads: -3\nclient_idle_ms: 0\n"))
        p.proc.send_signal(signal.SIGHUP)
        log = self.wait_log(p, "the running config is kept")
        # Every error, each with its path.
        self.assertIn("threads", log)
        self.assertIn("client_idle_ms: must be > 0", log)
        self.assertTrue(p.alive())
        self.assertIn("kept-alias", model_ids(p.port))
        r = post_json(p.port, "/v1/completions", dict(CMPL_BODY, model="kept-alias"))
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.reloads(p, "error"), 1)
        self.assertEqual(self.reloads(p, "ok"), 0)

    def test_post_reload_on_admin_listener(self):
        p = self.proxy(config(self.emu.url))
        p.wait_ready(model=MODEL)
        rewrite(p.config_path, config(self.emu.url, {"posted-alias": MODEL}))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 200, r.body)
        doc = r.json()
        self.assertEqual(doc["status"], "reloaded")
        self.assertEqual(doc["changed"], ["models.aliases"])
        self.assertEqual(doc["needs_restart"], [])
        # The answer comes after every worker was told: the next request sees the alias.
        self.assertIn("posted-alias", model_ids(p.port))

        rewrite(p.config_path, config(self.emu.url, extra="threads: 0\nlimits:\n  nope: 1\n"))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 400, r.body)
        err = r.json()["error"]
        self.assertEqual(err["code"], "invalid_config")
        self.assertEqual(len(err["errors"]), 2, err)
        for e in err["errors"]:
            self.assertIn(e, err["message"])
        self.assertTrue(any(e.startswith("threads") for e in err["errors"]), err)
        self.assertTrue(any(e.startswith("limits") for e in err["errors"]), err)
        self.assertIn("posted-alias", model_ids(p.port))

        # A setting bound at start: reported, the rest applies.
        rewrite(p.config_path, config(self.emu.url, {"third": MODEL}, extra="threads: 3\n"))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["needs_restart"], ["threads"])
        self.assertIn("third", model_ids(p.port))
        self.assertIn("threads changed: it needs a restart", p.stderr_text())

    def test_post_reload_answers_after_every_worker_has_it(self):
        p = self.proxy(config(self.emu.url), args=["--threads", "3"])
        p.wait_ready(model=MODEL)
        rewrite(p.config_path, config(self.emu.url, {"every-worker": MODEL}))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 200, r.body)
        # Fresh connections land on any of the three workers: each already has the alias.
        for _ in range(30):
            self.assertIn("every-worker", model_ids(p.port))
        # The command line's --threads is applied again: no "needs a restart" for it.
        self.assertEqual(r.json()["needs_restart"], [])

    def connects(self, p: Proxy) -> float:
        text = request(p.admin_port, "GET", "/metrics").body.decode()
        return sum(float(l.split()[-1]) for l in text.splitlines()
                   if l.startswith("infergate_upstream_connect_seconds_count"))

    def test_unchanged_backend_keeps_its_pool(self):
        p = self.proxy(config(self.emu.url))
        p.wait_ready(model=MODEL)
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY).status, 200)
        before = self.connects(p)
        self.assertGreaterEqual(before, 1)
        # An alias only: the pooled connection is reused, no new connect.
        rewrite(p.config_path, config(self.emu.url, {"pool-alias": MODEL}))
        self.assertEqual(request(p.admin_port, "POST", "/-/reload").status, 200)
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY).status, 200)
        self.assertEqual(self.connects(p), before)
        # A backend setting changed: a new pool, so a new connection.
        rewrite(p.config_path, config(self.emu.url, {"pool-alias": MODEL}).replace(
            f"model: {MODEL}\n", f"model: {MODEL}\n    max_idle_connections: 8\n", 1))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.json()["changed"], ["backends[0]"], r.body)
        self.assertEqual(post_json(p.port, "/v1/completions", CMPL_BODY).status, 200)
        self.assertEqual(self.connects(p), before + 1)

    def test_reload_route_not_on_public_listener(self):
        p = self.proxy(config(self.emu.url))
        p.wait_ready(model=MODEL)
        r = request(p.port, "POST", "/-/reload")
        self.assertEqual(r.status, 404, r.body)
        self.assertIn("admin listener only", r.json()["error"]["message"])
        # Nor on a combined listener (no admin_listen): POST there would let anyone reload.
        q = self.proxy(config(self.emu.url).replace("admin_listen: 127.0.0.1:0\n", ""))
        q.wait_ready(model=MODEL)
        self.assertEqual(request(q.port, "POST", "/-/reload").status, 404)

    def test_config_free_start_has_nothing_to_reload(self):
        p = Proxy(["--upstream", self.emu.url, "--upstream-dialect", "openai", "--model", MODEL,
                   "--admin-listen", "127.0.0.1:0"])
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 409, r.body)
        self.assertIn("without --config", r.json()["error"]["message"])
        p.proc.send_signal(signal.SIGHUP)
        self.wait_log(p, "nothing to re-read", 2)
        self.assertTrue(p.alive())


class ReloadDuringStream(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet", "--itl-ms", "40"])
        cls.other = start(cls, Emulator, "openai", MODEL, ["--quiet"])

    def test_stream_in_flight_finishes(self):
        p = Proxy(config_yaml=config(self.emu.url, name="first"), wait_ready=False)
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        p.wait_ready(model=MODEL)
        s = open_stream(p.port, "/v1/completions",
                        {"model": MODEL, "prompt": "x", "max_tokens": 25, "stream": True,
                         "ignore_eos": True})
        self.assertNotIsInstance(s, Response, getattr(s, "body", b"")[:300])
        first = s.next_events()
        self.assertTrue(first and not any(e.done for e in first))
        # Another backend (a new pool, the old one retired) and another alias, mid-stream.
        rewrite(p.config_path, config(self.other.url, {"mid-alias": MODEL}, name="second"))
        r = request(p.admin_port, "POST", "/-/reload")
        self.assertEqual(r.status, 200, r.body)
        # Backends are matched by name: "second" is a new one, "first" is gone.
        self.assertEqual(r.json()["changed"],
                         ["backends[0] (added)", "backends: 'first' removed", "models.aliases"])
        rest = s.read_all()
        self.assertTrue(rest and rest[-1].done, [e.data for e in rest[-3:]])
        self.assertGreaterEqual(len(first) + len(rest), 10)
        # Its access-log line names the backend it ran on, not the one configured since.
        log = wait_until(lambda: [json.loads(line) for line in p.stderr_text().splitlines()
                                  if line.startswith("{") and '"/v1/completions"' in line], 10,
                         what="the stream's access-log line")
        self.assertEqual(log[0]["backend"], "first", log[0])
        # New requests go to the new backend, which was probed again.
        r = post_json(p.port, "/v1/completions", dict(CMPL_BODY, model="mid-alias"))
        self.assertEqual(r.status, 200, r.body)
        info = request(p.admin_port, "GET", "/get_server_info")
        self.assertIn(self.other.url, info.body.decode())
        self.assertNotIn(self.emu.url + '"', info.body.decode())
        wait_until(lambda: f"({self.other.url}):" in p.stderr_text(), 10,
                   what="the new backend probed")


if __name__ == "__main__":
    unittest.main()
