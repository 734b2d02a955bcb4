"""A real llama.cpp server (llama-server) for the integration tests (stdlib only).

scripts/real_engine.sh builds llama-server from llama.cpp's source and writes the tiny
deterministic model (scripts/make_tiny_model.py) into <build>/engine/. The paths come from
INFERGATE_LLAMA_SERVER and INFERGATE_TINY_MODEL (ctest sets both), else from <repo>/build/engine/.
When either file is missing the tests that need it are skipped with a message that says what is
missing and how to get it (docs/testing.md).
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import harness
from harness import REPO, request

ALIAS = "tiny-llama"
EOS_ID = 32000  # <|im_end|> in the tiny model (scripts/make_tiny_model.py)
STARTUP_TIMEOUT_S = 60.0  # loading 35 MB and warming up takes well under a second; a loaded CI
                          # machine may be much slower


def _path(env_var: str, default: Path) -> Path:
    value = os.environ.get(env_var)
    return Path(value) if value else default


def engine_files() -> tuple[str, str]:
    """(llama-server, model), or unittest.SkipTest naming what is missing."""
    server = _path("INFERGATE_LLAMA_SERVER", REPO / "build" / "engine" / "llama-server")
    model = _path("INFERGATE_TINY_MODEL", REPO / "build" / "engine" / "tiny-llama-chatml.gguf")
    missing = []
    if not (server.is_file() and os.access(server, os.X_OK)):
        missing.append(f"no llama-server at {server}")
    if not model.is_file():
        missing.append(f"no tiny model at {model}")
    if missing:
        raise unittest.SkipTest(
            "the real llama.cpp engine is not built (" + "; ".join(missing) + "): run "
            "scripts/real_engine.sh, which needs llama.cpp's source (LLAMA_CPP_SRC, "
            "../shared/engines/llama.cpp-c392e509.tar.xz or network access); docs/testing.md")
    return str(server), str(model)


def _free_port() -> int:
    # llama-server takes an explicit port: one the kernel just handed out is almost surely
    # still free; start() retries on the rare bind race.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LlamaServer:
    """llama-server with the tiny model on a free port: 4 slots of 1,024 tokens, one thread,
    /metrics and /slots on. stop() ends it; the harness's atexit stops it too."""

    def __init__(self, alias: str = ALIAS, extra: list[str] | None = None):
        binary, model = engine_files()
        self.alias = alias
        last_error = ""
        for _ in range(3):
            self.port = _free_port()
            self.argv = [binary, "--host", "127.0.0.1", "--port", str(self.port), "-m", model,
                         "--alias", alias, "-c", "4096", "-np", "4", "-t", "1", "--metrics",
                         "--slots", *(extra or [])]
            self._log = tempfile.NamedTemporaryFile(prefix="infergate-itest-llama-server-",
                                                    suffix=".log", delete=False)
            self.log_path = self._log.name
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         preexec_fn=harness._die_with_parent)
            with harness._LIVE_LOCK:
                harness._LIVE.add(self)
            try:
                self._await_health()
                return
            except RuntimeError as e:
                last_error = str(e)
                bind_race = "bind" in self.log_text().lower() and self.proc.poll() is not None
                self.stop()
                self.cleanup_files()
                if not bind_race:
                    break
        raise RuntimeError(last_error)

    def _await_health(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                r = request(self.port, "GET", "/health", timeout=2)
                if r.status == 200:
                    return
                last = (r.status, r.body[:200])  # 503 while the model loads
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.05)
        raise RuntimeError(f"llama-server did not answer GET /health with 200 within "
                           f"{STARTUP_TIMEOUT_S}s (exit code {self.proc.poll()}, last: {last}); "
                           f"argv={self.argv}\nlog: {self.log_text()[-3000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return harness.read_text(self.log_path)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        harness.terminate(self.proc, grace_s=10)
        try:
            self._log.close()
        except OSError:
            pass
        with harness._LIVE_LOCK:
            harness._LIVE.discard(self)

    def cleanup_files(self) -> None:
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

    # ---- what the engine itself reports -------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """GET /metrics: every `llamacpp:*` sample by name."""
        r = request(self.port, "GET", "/metrics", timeout=10)
        if r.status != 200:
            raise AssertionError(f"llama-server /metrics: {r.status} {r.body[:200]!r}")
        out = {}
        for line in r.body.decode().splitlines():
            m = re.match(r"^(llamacpp:\w+)(?:\{[^}]*\})?\s+(\S+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def tokens_predicted_total(self) -> int:
        """Tokens of every task that finished normally (a cancelled task's are not added)."""
        return int(self.metrics()["llamacpp:tokens_predicted_total"])

    def slots(self) -> list[dict]:
        r = request(self.port, "GET", "/slots", timeout=10)
        if r.status != 200:
            raise AssertionError(f"llama-server /slots: {r.status} {r.body[:200]!r}")
        return r.json()

    def busy_slots(self) -> int:
        return sum(1 for s in self.slots() if s.get("is_processing"))


def start_engine(testcase_cls: type[unittest.TestCase], **kwargs) -> LlamaServer:
    """Starts llama-server inside setUpClass (SkipTest when it is not built) and registers its
    stop as a class cleanup."""
    engine = LlamaServer(**kwargs)
    testcase_cls.addClassCleanup(engine.cleanup_files)
    testcase_cls.addClassCleanup(engine.stop)
    return engine
