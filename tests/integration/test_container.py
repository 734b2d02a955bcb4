"""The container image's files (docker/): what can be checked without a Docker daemon.

The image itself is built by `docker build -f docker/Dockerfile .` (not in CI: the CI machine has
no daemon and no registry access). These tests hold the files to what the image promises: it runs
as a non-root user, ships no build tree or git history, its HEALTHCHECK command really tells a
live proxy from a dead one, and its default config loads and points at a backend that is not the
container itself.
"""
import json
import os
import re
import subprocess
import unittest

from harness import Proxy, closed_port, start

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCKERFILE = os.path.join(ROOT, "docker", "Dockerfile")
CONFIG = os.path.join(ROOT, "docker", "infergate.yaml")


def runtime_stage() -> list[str]:
    """The Dockerfile's instructions after its last FROM, continuation lines joined."""
    with open(DOCKERFILE) as f:
        text = f.read().replace("\\\n", " ")
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    last_from = max(i for i, l in enumerate(lines) if l.upper().startswith("FROM "))
    return lines[last_from:]


def healthcheck_argv(port: int) -> list[str]:
    """The HEALTHCHECK's exec-form command, aimed at `port` instead of the image's 30000."""
    [line] = [l for l in runtime_stage() if l.upper().startswith("HEALTHCHECK ")]
    argv = json.loads(line[line.index("CMD") + 3:].strip())
    return [a.replace("/30000", f"/{port}") for a in argv]


class TestDockerfile(unittest.TestCase):
    def test_runs_as_a_non_root_user(self):
        users = [l.split(None, 1)[1] for l in runtime_stage() if l.upper().startswith("USER ")]
        self.assertTrue(users, "the runtime stage has no USER: the proxy would run as root")
        self.assertNotIn(users[-1].split(":")[0], ("root", "0"))

    def test_the_build_context_leaves_out_build_trees_and_git(self):
        with open(os.path.join(ROOT, ".dockerignore")) as f:
            ignored = f.read().split()
        for entry in (".git", "build", "tests/clients/node_modules"):
            self.assertIn(entry, ignored)

    def test_default_config_is_not_the_container_itself(self):
        with open(CONFIG) as f:
            text = f.read()
        urls = re.findall(r"url:\s*(\S+)", text)
        self.assertEqual(len(urls), 1, text)
        self.assertNotRegex(urls[0], r"//(127\.|localhost|\[::1\]|0\.0\.0\.0)",
                            "inside the container that address is infergate itself")
        self.assertRegex(text, r"listen:\s*0\.0\.0\.0:30000",
                         "the container must listen on every interface for -p to reach it")


class TestImageConfigAndHealthcheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The image's own config (its backend does not resolve here: the proxy still starts and
        # answers /v1/models from what it knows, which is what the health check asks).
        cls.proxy = start(cls, Proxy, ["--config", CONFIG, "--listen", "127.0.0.1:0"],
                          wait_ready=False)

    def test_healthcheck_passes_on_a_live_proxy(self):
        r = subprocess.run(healthcheck_argv(self.proxy.port), capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_healthcheck_fails_when_nothing_listens(self):
        r = subprocess.run(healthcheck_argv(closed_port()), capture_output=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)


if __name__ == "__main__":
    unittest.main()
