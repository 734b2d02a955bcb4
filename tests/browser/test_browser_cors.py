"""A real browser calls infergate from another origin (issue 17, items 4 and 5; docs/security.md,
"Browsers"): Debian's headless Chromium loads stream_page.html from a page server on one origin,
and the page calls infergate on another with a bearer client key, streaming a
/v1/chat/completions answer with fetch and ReadableStream. The page reports the text, the chunks
it read and any error to its own server, which the test waits on with a deadline. The text must
be what the same request gets without a browser, read in several chunks; a page from an origin
not in cors.allowed_origins must be blocked (a TypeError), and infergate must have refused its
preflight without the request ever reaching the backend.

Chromium comes from Debian's `chromium` package (scripts/setup.sh). Without it the test fails
under CI (CI set) and is skipped elsewhere, naming the package. Chromium is killed at the end,
whatever happens (its whole process group)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from harness import Emulator, Proxy, read_text, request, start, stream, wait_until  # noqa: E402

MODEL = "browser-model"
KEY = "sk-browser-0123456789abcdef"
PAGE = (HERE / "stream_page.html").read_bytes()
REPORT_TIMEOUT_S = 60.0
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me about harbours"}],
        "max_tokens": 12, "stream": True}


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class PageServer:
    """Serves stream_page.html and collects the page's reports (POST /report), by run name."""

    def __init__(self):
        self.reports: dict[str, dict] = {}
        self.cond = threading.Condition()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                if urllib.parse.urlsplit(self.path).path != "/stream_page.html":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(204)
                self.end_headers()
                report = json.loads(body)
                with owner.cond:
                    owner.reports[report.get("run") or "?"] = report
                    owner.cond.notify_all()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait_report(self, run: str, timeout: float) -> dict | None:
        with self.cond:
            self.cond.wait_for(lambda: run in self.reports, timeout)
            return self.reports.get(run)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Chromium:
    """chromium --headless=new on one URL, in its own process group and profile."""

    def __init__(self, binary: str, url: str):
        self.profile = tempfile.mkdtemp(prefix="infergate-chromium-")
        self.log = tempfile.NamedTemporaryFile(prefix="infergate-chromium-", suffix=".log",
                                               delete=False)
        argv = [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                f"--user-data-dir={self.profile}", url]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "HOME": self.profile})

    def output(self) -> str:
        return read_text(self.log.name)[-3000:]

    def kill(self):
        """SIGTERM to the whole group (browser, zygote, renderers), SIGKILL after 5 s."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # renderers that outlived the browser
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=5)
        # Until the group is empty (its last members are reaped by init).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"chromium's processes (group {self.proc.pid}) outlived it")
        self.log.close()
        os.unlink(self.log.name)
        shutil.rmtree(self.profile, ignore_errors=True)


class BrowserCors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.chromium = chromium_binary()
        if cls.chromium is None:
            if os.environ.get("CI"):
                # Worded so that ctest's skip pattern (tests/CMakeLists.txt) does not match.
                raise RuntimeError("CI needs a browser for this test, and no chromium binary is "
                                   "on PATH: scripts/setup.sh installs Debian's `chromium`")
            raise unittest.SkipTest("chromium is not installed: install Debian's `chromium` "
                                    "package (apt-get install chromium; scripts/setup.sh does)")
        cls.pages = PageServer()
        cls.addClassCleanup(cls.pages.stop)
        cls.allowed_origin = f"http://127.0.0.1:{cls.pages.port}"
        keys = tempfile.NamedTemporaryFile("w", prefix="infergate-browser-keys-", delete=False)
        keys.write(f"- name: browser\n  key: {KEY}\n")
        keys.close()
        cls.addClassCleanup(os.unlink, keys.name)
        # 40 ms between tokens: the answer reaches the page over about half a second, in pieces.
        cls.emu = start(cls, Emulator, "openai", MODEL, ["--itl-ms", "40"])
        cls.proxy = start(cls, Proxy, config_yaml=(
            f"cors:\n  allowed_origins: ['{cls.allowed_origin}']\n"
            f"auth:\n  keys_file: {keys.name}\n"
            f"backends:\n  - {{url: '{cls.emu.url}', dialect: openai, model: {MODEL}}}\n"),
            wait_ready=False)
        wait_until(lambda: request(cls.proxy.port, "GET", "/v1/models",
                                   headers={"Authorization": f"Bearer {KEY}"}).status == 200,
                   10, what="the proxy to serve")

    def open_page(self, page_host: str, run: str) -> dict:
        """Loads the page from http://PAGE_HOST:<page port> in Chromium; returns its report."""
        query = urllib.parse.urlencode({
            "run": run, "target": f"http://localhost:{self.proxy.port}", "key": KEY,
            "body": json.dumps(CHAT)})
        url = f"http://{page_host}:{self.pages.port}/stream_page.html?{query}"
        browser = Chromium(self.chromium, url)
        try:
            report = self.pages.wait_report(run, REPORT_TIMEOUT_S)
            if report is None:
                self.fail(f"the page ({url}) reported nothing within {REPORT_TIMEOUT_S} s; "
                          f"chromium's output:\n{browser.output()}\n"
                          f"infergate's log:\n{self.proxy.stderr_text()[-2000:]}")
            return report
        finally:
            browser.kill()

    def access_log(self) -> list[dict]:
        lines = []
        for line in self.proxy.stderr_text().splitlines():
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass
        return lines

    def test_1_a_page_from_an_allowed_origin_streams_the_answer(self):
        reference = stream(self.proxy.port, "/v1/chat/completions", CHAT,
                           headers={"Authorization": f"Bearer {KEY}"})
        expected = "".join(e.json()["choices"][0]["delta"].get("content", "")
                           for e in reference.events if not e.done and e.json()["choices"])
        self.assertTrue(expected.strip())
        report = self.open_page("127.0.0.1", "allowed")
        self.assertIsNone(report["error"], report)
        self.assertEqual(report["origin"], self.allowed_origin)
        self.assertEqual(report["status"], 200, report)
        self.assertEqual(report["text"], expected, report)
        self.assertTrue(report["done"], report)
        self.assertGreater(report["chunks"], 2, report)  # streamed, not one buffered body
        self.assertRegex(report["requestId"] or "", r"^[0-9a-f]{32}$")  # an exposed header
        self.assertIsNone(report["server"])  # not exposed: the browser hides it from the page
        # The browser's preflight went through without a key; the request it cleared had one.
        log = self.access_log()
        preflights = [l for l in log if l["method"] == "OPTIONS"]
        self.assertTrue(preflights, log)
        self.assertEqual(preflights[-1]["status"], 204)
        self.assertNotIn("key", preflights[-1])
        posts = [l for l in log if l["method"] == "POST"]
        self.assertEqual(posts[-1]["status"], 200)
        self.assertEqual(posts[-1]["key"], "browser")

    def test_2_a_page_from_another_origin_is_blocked(self):
        report = self.open_page("localhost", "blocked")
        self.assertEqual(report["origin"], f"http://localhost:{self.pages.port}")
        self.assertIsNotNone(report["error"], report)
        self.assertTrue(report["error"].startswith("TypeError"), report)
        self.assertIsNone(report["status"], report)
        self.assertEqual(report["text"], "")
        # infergate refused the preflight (403; its line is written as the exchange ends), and
        # the request itself, which could only follow a preflight that passed, never came.
        log = wait_until(lambda: (lambda log: log if any(
            l["method"] == "OPTIONS" and l["status"] == 403 for l in log) else None)(
            self.access_log()), 5, what="the refused preflight in the access log")
        refused = max(i for i, l in enumerate(log)
                      if l["method"] == "OPTIONS" and l["status"] == 403)
        self.assertFalse([l for l in log[refused:] if l["method"] == "POST"], log)

if __name__ == "__main__":
    unittest.main()
