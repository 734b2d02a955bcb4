"""What bench/hostile.py and bench/soak.py share: starting the emulator and infergate on port 0
and writing the config that puts one in front of the other. Standard library only."""

from __future__ import annotations

import os
import subprocess


def start(argv: list[str], **popen) -> tuple[subprocess.Popen, int]:
    """Runs `argv` (the emulator or infergate, both print "listening on HOST:PORT" first) and
    returns the process and its port."""
    popen.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **popen)
    for line in p.stdout:
        if line.startswith("listening on "):
            return p, int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"{argv[0]} did not start")


def start_emulator(binary: str, model: str) -> tuple[subprocess.Popen, int]:
    """The emulator as an OpenAI-compatible backend serving `model`."""
    return start([binary, "--listen", "127.0.0.1:0", "--dialect", "openai", "--model", model,
                  "--quiet"])


def write_config(name: str, emu_port: int, model: str, settings: str) -> str:
    """A config file in /tmp: `settings` (YAML lines) and the emulator as the one backend."""
    path = os.path.join("/tmp", f"infergate-{name}-{os.getpid()}.yaml")
    with open(path, "w") as f:
        f.write(f"listen: 127.0.0.1:0\naccess_log: off\n{settings}"
                f"backends:\n  - url: http://127.0.0.1:{emu_port}\n    dialect: openai\n"
                f"    model: {model}\n")
    return path
