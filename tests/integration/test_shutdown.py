"""SIGTERM (issue 12, item 6): infergate stops accepting, lets requests in flight finish within
shutdown_grace_ms, then ends the rest with an error their clients can see (a stream's in-band
error event and its terminator; a 503 for a request still waiting for the backend), and exits 0.
Before, the rest were cut when the process stopped: a stream ended without a word."""

from __future__ import annotations

import signal
import unittest

from harness import Emulator, Proxy, open_stream, post_json, request, run_in_thread, wait_until

MODEL = "drain-model"


def config(upstream: str, grace_ms: int) -> str:
    return (f"shutdown_grace_ms: {grace_ms}\nbackends:\n  - url: {upstream}\n    dialect: openai\n"
            f"    model: {MODEL}\n")


class Drain(unittest.TestCase):
    def proxy(self, emu: Emulator, grace_ms: int) -> Proxy:
        p = Proxy(config_yaml=config(emu.url, grace_ms), model=MODEL)
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p

    def emulator(self, *extra: str) -> Emulator:
        emu = Emulator("openai", MODEL, ["--quiet", *extra])
        self.addCleanup(emu.stop)
        return emu

    def stream(self, port: int, tokens: int):
        s = open_stream(port, "/v1/completions",
                        {"model": MODEL, "prompt": "hi", "max_tokens": tokens, "stream": True})
        first = s.next_events()  # the stream is running before the signal
        self.assertTrue(first)
        return s

    def terminate_and_wait(self, proxy: Proxy) -> int:
        proxy.proc.send_signal(signal.SIGTERM)
        return proxy.proc.wait(timeout=20)

    def test_a_stream_that_outlasts_the_grace_period_ends_with_an_error_event(self):
        emu = self.emulator("--itl-ms", "100")
        proxy = self.proxy(emu, grace_ms=300)
        s = self.stream(proxy.port, 200)  # 20 s of tokens: far beyond the grace period
        self.assertEqual(self.terminate_and_wait(proxy), 0)
        events = s.read_all()
        data = [e.data for e in events]
        self.assertEqual(data[-1], "[DONE]", data[-3:])
        self.assertIn("shutting down", data[-2])
        self.assertIn('"error"', data[-2])
        self.assertIn("grace period over", proxy.stderr_text())

    def test_a_stream_within_the_grace_period_finishes(self):
        emu = self.emulator("--itl-ms", "20")
        proxy = self.proxy(emu, grace_ms=10000)
        s = self.stream(proxy.port, 20)  # about 0.4 s
        self.assertEqual(self.terminate_and_wait(proxy), 0)
        data = [e.data for e in s.read_all()]
        self.assertEqual(data[-1], "[DONE]")
        self.assertFalse(any("error" in d for d in data), data[-3:])
        self.assertNotIn("grace period over", proxy.stderr_text())

    def test_a_request_still_waiting_for_the_backend_gets_a_503(self):
        emu = self.emulator("--ttft-ms", "20000")
        proxy = self.proxy(emu, grace_ms=300)
        answer = run_in_thread(post_json, proxy.port, "/v1/completions",
                               {"model": MODEL, "prompt": "hi", "max_tokens": 2}, timeout=15)
        # Wait until the proxy counts it in flight (bounded poll of /metrics).
        wait_until(lambda: "infergate_requests_in_flight 1" in
                   request(proxy.port, "GET", "/metrics").body.decode(),
                   timeout=5, what="the request in flight")
        self.assertEqual(self.terminate_and_wait(proxy), 0)
        r = answer(timeout=15)
        self.assertEqual(r.status, 503, r.body)
        self.assertIn("shutting down", r.json()["error"]["message"])


if __name__ == "__main__":
    unittest.main()
