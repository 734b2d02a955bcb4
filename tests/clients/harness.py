"""Process harness for the client-compatibility checks: starts infergate-emulator and infergate on
ephemeral ports, waits for them properly and always stops them. Standard library only.

Binaries come from $INFERGATE_BIN / $INFERGATE_EMULATOR_BIN, falling back to
<repo>/build/proxy/infergate and <repo>/build/emulator/infergate-emulator.
"""
import ctypes
import json
import os
import select
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

START_TIMEOUT_S = 10.0


def proxy_binary():
    return os.environ.get("INFERGATE_BIN") or os.path.join(REPO, "build", "proxy", "infergate")


def emulator_binary():
    return os.environ.get("INFERGATE_EMULATOR_BIN") or os.path.join(
        REPO, "build", "emulator", "infergate-emulator")


def _die_with_parent():
    # Runs in the child before exec: if this test process dies (even by SIGKILL, e.g. a ctest
    # timeout), the kernel sends the child SIGTERM, so no emulator or proxy outlives a run.
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class Process:
    """A child that prints `listening on HOST:PORT` on stdout once it accepts connections."""

    def __init__(self, name, argv):
        if not os.access(argv[0], os.X_OK):
            raise RuntimeError(f"{name}: binary not found or not executable: {argv[0]} "
                               "(set INFERGATE_BIN / INFERGATE_EMULATOR_BIN)")
        self.name = name
        self.argv = argv
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self.port = self._read_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def _read_port(self):
        # Bounded wait for the first stdout line; never a fixed sleep.
        deadline = time.monotonic() + START_TIMEOUT_S
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise RuntimeError(f"{self.name}: no 'listening on' line within "
                                   f"{START_TIMEOUT_S}s; stderr:\n{self.stderr_text()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self.stop()
                raise RuntimeError(f"{self.name} exited (rc={self.proc.poll()}) before listening; "
                                   f"stderr:\n{self.stderr_text()}")
            buf += chunk
        line = buf.split(b"\n", 1)[0].decode().strip()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"{self.name}: unexpected first line {line!r}")
        return int(line.rsplit(":", 1)[1])

    def stderr_text(self):
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode(errors="replace")
        except ValueError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout:
            self.proc.stdout.close()

    def close(self):
        self.stop()
        self.stderr.close()


def http_json(method, url, body=None, headers=None, timeout=10):
    """Returns (status, parsed JSON or raw text)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as e:
        raw = e.read()
        status = e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


class Stack:
    """Emulator + proxy in front of it. Use as a context manager."""

    def __init__(self, dialect, model, emulator_args=(), proxy_args=()):
        self.dialect = dialect
        self.model = model
        self.emulator_args = list(emulator_args)
        self.proxy_args = list(proxy_args)
        self.emulator = None
        self.proxy = None

    def __enter__(self):
        try:
            self.emulator = Process("emulator", [
                emulator_binary(), "--listen", "127.0.0.1:0", "--dialect", self.dialect,
                "--model", self.model, "--quiet", *self.emulator_args])
            self.proxy = Process("proxy", [
                proxy_binary(), "--listen", "127.0.0.1:0", "--upstream", self.emulator.base,
                *self.proxy_args])
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self):
        # The proxy probes its backend at start; it is ready once GET /v1/models lists the model.
        deadline = time.monotonic() + START_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if not self.proxy.alive():
                raise RuntimeError(f"proxy exited rc={self.proxy.proc.poll()}:\n"
                                   f"{self.proxy.stderr_text()}")
            try:
                status, body = http_json("GET", self.proxy.base + "/v1/models", timeout=2)
                last = (status, body)
                if status == 200 and any(m.get("id") == self.model for m in body.get("data", [])):
                    return
            except OSError as e:
                last = e
            time.sleep(0.05)  # poll interval, bounded by the deadline
        raise RuntimeError(f"proxy not ready within {START_TIMEOUT_S}s: last /v1/models {last!r}\n"
                           f"{self.proxy.stderr_text()}")

    def __exit__(self, *exc):
        for p in (self.proxy, self.emulator):
            if p is not None:
                p.close()
        return False

    def logs(self):
        out = []
        for p in (self.proxy, self.emulator):
            if p is not None:
                out.append(f"--- {p.name} stderr ---\n{p.stderr_text()}")
        return "\n".join(out)
