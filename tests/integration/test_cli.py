"""The command line: --help, --version, bad flags and bad configs fail fast with a clear message
and exit status 2; a good config passes --check-config."""
import subprocess
import tempfile
import unittest

import harness


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([harness.proxy_binary(), *args], capture_output=True, text=True,
                          timeout=20, stdin=subprocess.DEVNULL)


class CliTest(unittest.TestCase):
    def test_help_lists_the_flags(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--config", "--upstream", "--listen", "--upstream-dialect", "--model",
                     "--alias", "--threads", "--version"):
            self.assertIn(flag, r.stdout)

    def test_version(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^infergate \d+\.\d+\.\d+ \(commit \S+\)\n$")

    def test_unknown_flag(self):
        r = run("--frobnicate", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option --frobnicate", r.stderr)
        self.assertIn("--help", r.stderr)

    def test_missing_value(self):
        r = run("--upstream")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--upstream needs a value", r.stderr)

    def test_bad_upstream_and_dialect_reported_together(self):
        r = run("--upstream", "ftp://x", "--upstream-dialect", "klingon", "--check-config")
        self.assertEqual(r.returncode, 2)
        self.assertIn("backends[0].url: 'ftp://x' is not an http:// or https:// URL", r.stderr)
        self.assertIn("backends[0].dialect: must be one of auto, openai (alias vllm), sglang, tgi", r.stderr)

    def test_flag_values_are_quoted_into_the_config(self):
        # The config-free start writes its YAML from the flags: a quote in a value must reach the
        # config's own check (which names it), not break the YAML.
        r = run("--upstream", "http://127.0.0.1:1", "--alias", 'a"b=c', "--check-config")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('models.aliases.a"b', r.stderr)
        self.assertNotIn("end of map", r.stderr)
        r = run("--upstream", "http://127.0.0.1:1", "--model", "m: x # y", "--alias",
                "n # z=m: x # y", "--check-config")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_bad_config_file_lists_every_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("threads: 0\nbackends:\n  - url: http://h:1\n    timeouts: {connect_ms: 0}\n"
                    "    surprise: 1\n")
            f.flush()
            r = run("--config", f.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("threads: must be between 1 and 256", r.stderr)
        self.assertIn("backends[0].timeouts.connect_ms: must be > 0", r.stderr)
        self.assertIn("backends[0].surprise: unknown key", r.stderr)

    def test_missing_config_file(self):
        r = run("--config", "/nonexistent/infergate.yaml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot open the config file", r.stderr)

    def test_config_and_backend_flags_conflict(self):
        r = run("--config", "x.yaml", "--upstream", "http://h:1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("use one or the other", r.stderr)

    def test_check_config_accepts_the_example(self):
        import os
        example = os.path.join(os.path.dirname(__file__), "..", "..", "config",
                               "infergate.example.yaml")
        r = run("--config", example, "--check-config")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stdout)

    def test_upstream_v1_is_the_openai_base_url(self):
        r = run("--upstream", "http://127.0.0.1:8000/v1", "--check-config")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("backends[0].url: 'http://127.0.0.1:8000/v1' ends in /v1, the OpenAI "
                      "base-URL habit", r.stderr)
        self.assertIn("so the backend is http://127.0.0.1:8000 ", r.stderr)

    def test_upstream_naming_an_api_route_says_what_to_give(self):
        r = run("--upstream", "http://127.0.0.1:8000/v1/chat/completions", "--check-config")
        self.assertEqual(r.returncode, 2)
        self.assertIn("backends[0].url: 'http://127.0.0.1:8000/v1/chat/completions' ends in the "
                      "API route /v1/chat/completions; give the server's base URL instead: "
                      "http://127.0.0.1:8000", r.stderr)

    def test_several_backends_check(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("backends:\n  - {name: a, url: 'http://h:1', model: m1}\n"
                    "  - {name: b, url: 'http://h:2', models: [m1, m2], weight: 2}\n"
                    "routing: {balance: least_outstanding}\n")
            f.flush()
            r = run("--config", f.name, "--check-config")
        self.assertEqual(r.returncode, 0, r.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("backends:\n  - {name: a, url: 'http://h:1'}\n"
                    "  - {name: a, url: 'http://h:2', weight: 0}\n")
            f.flush()
            r = run("--config", f.name, "--check-config")
        self.assertEqual(r.returncode, 2)
        self.assertIn("backends[1].name: 'a' is used twice", r.stderr)
        self.assertIn("backends[1].weight: must be between 1 and 1000", r.stderr)

    def test_bad_listen(self):
        r = run("--listen", "localhost", "--check-config")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--listen: must be HOST:PORT", r.stderr)


if __name__ == "__main__":
    unittest.main()
