"""Keep-alive connections to the backend: a backend that closed them (here: restarted on the
same port) costs the client nothing, even right after they went back to the pool."""

from __future__ import annotations

import unittest

from checks import make_body
from harness import Emulator, Process, Proxy, emulator_binary, post_json, run_in_thread

CMPL = "/v1/completions"
MODEL = "pool-model"


class PooledConnectionsTest(unittest.TestCase):
    def test_backend_restarted_behind_pooled_connections(self):
        emu = Emulator("openai", MODEL, ["--quiet"])
        self.addCleanup(emu.stop)
        proxy = Proxy(["--upstream", emu.url, "--upstream-dialect", "openai", "--model", MODEL],
                      model=MODEL)
        self.addCleanup(proxy.stop)
        body = make_body(CMPL, "fill the pool", 4, MODEL)
        slow = {"X-Emulator-ITL-Ms": "30"}  # concurrent requests: one connection each
        joins = [run_in_thread(post_json, proxy.port, CMPL, body, slow) for _ in range(6)]
        for join in joins:
            self.assertEqual(join(30).status, 200)

        # The backend goes away and comes back on the same port: every pooled connection is
        # closed, and they went back to the pool only moments ago.
        port = emu.port
        emu.stop()
        again = Process([emulator_binary(), "--listen", f"127.0.0.1:{port}", "--dialect", "openai",
                         "--model", MODEL, "--quiet"], "emulator-restarted")
        self.addCleanup(again.stop)
        for i in range(8):
            r = post_json(proxy.port, CMPL, make_body(CMPL, f"after the restart {i}", 3, MODEL))
            self.assertEqual(r.status, 200, f"request {i} after the restart: {r.body[:300]!r}")


if __name__ == "__main__":
    unittest.main()
