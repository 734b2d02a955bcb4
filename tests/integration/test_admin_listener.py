"""The admin listener (issue 12 item 2): with `admin_listen` set, /metrics and /get_server_info
(which shows the backend URL) are served on it only; the public listener answers them as unknown
routes, and its 404 does not name them; health routes are on both; the admin listener serves
nothing else. Without `admin_listen`, everything stays on the public listener as before."""

from __future__ import annotations

import socket
import subprocess
import unittest

from checks import make_body
from harness import Emulator, Proxy, Response, post_json, proxy_binary, request, start

MODEL = "admin-model"
CHAT = "/v1/chat/completions"
OPS = ("/metrics", "/get_server_info")
HEALTH = ("/health", "/health_generate")


def error_message(test: unittest.TestCase, r: Response, status: int) -> str:
    test.assertEqual(r.status, status, r.body[:300])
    err = r.json().get("error")
    test.assertIsInstance(err, dict, r.body[:300])
    return err["message"]


class AdminListenerFromConfig(unittest.TestCase):
    """admin_listen in the config file."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, config_yaml=(
            "admin_listen: 127.0.0.1:0\n"
            f"backends:\n  - url: {cls.emu.url}\n    dialect: openai\n    model: {MODEL}\n"),
            model=MODEL)
        cls.port = cls.proxy.port
        cls.admin = cls.proxy.admin_port

    def test_admin_port_printed(self):
        self.assertIsNotNone(self.admin, self.proxy.stdout_lines)
        self.assertNotEqual(self.admin, self.port)
        self.assertEqual(self.proxy.admin_host, "127.0.0.1")

    def test_ops_routes_are_unknown_on_the_public_listener(self):
        for path in OPS:
            for method in ("GET", "HEAD", "DELETE"):
                r = request(self.port, method, path)
                self.assertEqual(r.status, 404, f"{method} {path}: {r.body[:300]}")
            message = error_message(self, request(self.port, "GET", path), 404)
            # The list of what exists here names the API and health, never the ops routes.
            served = message.split("infergate serves:", 1)[1]  # the list, not the echoed path
            self.assertIn("POST /v1/chat/completions", served)
            self.assertIn("GET /health", served)
            self.assertNotIn("metrics", served)
            self.assertNotIn("get_server_info", served)
            self.assertNotIn(self.emu.url, request(self.port, "GET", path).body.decode())

    def test_ops_routes_on_the_admin_listener(self):
        # Traffic on the public port is what the admin port's /metrics counts.
        r = post_json(self.port, CHAT, make_body(CHAT, "counted on the admin port", 3, MODEL))
        self.assertEqual(r.status, 200, r.body[:300])
        metrics = request(self.admin, "GET", "/metrics")
        self.assertEqual(metrics.status, 200, metrics.body[:300])
        self.assertRegex(metrics.body.decode(),
                         r'infergate_requests_total\{[^}]*route="openai_chat"[^}]*\} [1-9]')
        info = request(self.admin, "GET", "/get_server_info")
        self.assertEqual(info.status, 200, info.body[:300])
        self.assertIn(self.emu.url.split("//")[1], info.body.decode())
        self.assertEqual(request(self.admin, "HEAD", "/metrics").status, 200)

    def test_health_on_both(self):
        for port in (self.port, self.admin):
            for path in HEALTH:
                r = request(port, "GET", path)
                self.assertEqual(r.status, 200, f"port {port} {path}: {r.body[:300]}")

    def test_admin_listener_serves_nothing_else(self):
        r = post_json(self.admin, CHAT, make_body(CHAT, "not here", 3, MODEL))
        message = error_message(self, r, 404).split("infergate serves:", 1)[1]
        self.assertIn("GET /metrics", message)
        self.assertIn("GET /health", message)
        self.assertNotIn("/v1/chat/completions", message)
        self.assertNotIn("POST /generate", message)
        for method, path in (("POST", "/generate"), ("GET", "/v1/models"),
                             ("POST", "/api/chat"), ("GET", "/v1/models/" + MODEL)):
            r = request(self.admin, method, path, {} if method == "POST" else None)
            self.assertEqual(r.status, 404, f"{method} {path}: {r.body[:300]}")

    def test_start_up_line_says_where_the_ops_routes_are(self):
        err = self.proxy.stderr_text()
        self.assertIn("/metrics and /get_server_info: on the admin listener only (127.0.0.1:"
                      f"{self.admin}", err)
        self.assertNotIn("admin listener is on a non-loopback address", err)


class AdminListenerFromCommandLine(unittest.TestCase):
    """--admin-listen on a non-loopback address: served, with a warning at start-up."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url, "--admin-listen", "0.0.0.0:0"],
                          model=MODEL)

    def test_served_on_the_admin_port_only(self):
        admin = self.proxy.admin_port
        self.assertIsNotNone(admin, self.proxy.stdout_lines)
        self.assertEqual(request(admin, "GET", "/metrics").status, 200)
        self.assertEqual(request(self.proxy.port, "GET", "/metrics").status, 404)
        self.assertEqual(request(self.proxy.port, "GET", "/health").status, 200)

    def test_non_loopback_admin_listener_warns(self):
        lines = [l for l in self.proxy.stderr_text().splitlines() if "exposed:" in l]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(" warn ", lines[0])
        self.assertIn("admin listener is on a non-loopback address and has no authentication",
                      lines[0])


class NoAdminListener(unittest.TestCase):
    """The default: every route on the public listener, as before."""

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--quiet"])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url], model=MODEL)

    def test_everything_on_the_public_listener(self):
        self.assertIsNone(self.proxy.admin_port)
        self.assertFalse([l for l in self.proxy.stdout_lines if l.startswith("admin")])
        for path in OPS + HEALTH:
            r = request(self.proxy.port, "GET", path)
            self.assertEqual(r.status, 200, f"{path}: {r.body[:300]}")
        message = error_message(self, request(self.proxy.port, "GET", "/nope"), 404)
        self.assertIn("GET /metrics", message)
        self.assertIn("GET /get_server_info", message)
        self.assertIn("/metrics and /get_server_info: on this listener",
                      self.proxy.stderr_text())


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([proxy_binary(), *args], capture_output=True, text=True, timeout=20,
                          stdin=subprocess.DEVNULL)


class AdminListenerErrors(unittest.TestCase):
    """A bad admin_listen fails the start with status 2 and says which setting and why."""

    def test_help_names_the_flag(self):
        self.assertIn("--admin-listen HOST:PORT", run("--help").stdout)

    def test_bad_address(self):
        r = run("--admin-listen", "localhost", "--check-config")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--admin-listen: must be HOST:PORT, got 'localhost'", r.stderr)

    def test_same_port_as_listen(self):
        r = run("--listen", "127.0.0.1:30000", "--admin-listen", "127.0.0.1:30000",
                "--check-config")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("admin_listen: port 30000 is the public listener's (listen)", r.stderr)

    def test_port_in_use(self):
        # A socket without SO_REUSEPORT holds the port: the admin bind fails, the start too.
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen()
            port = held.getsockname()[1]
            r = subprocess.run([proxy_binary(), "--upstream", "http://127.0.0.1:9",
                                "--listen", "127.0.0.1:0", "--admin-listen", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=20,
                               stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"admin_listen: cannot listen on 127.0.0.1:{port}", r.stderr)
        self.assertNotIn("listening on", r.stdout)


if __name__ == "__main__":
    unittest.main()
