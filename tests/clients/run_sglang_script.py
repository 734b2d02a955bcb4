#!/usr/bin/env python3
"""Runs sglang_script.py, unchanged, against infergate in front of a vLLM-flavoured (openai
dialect) emulator and checks that what the script reports matches what the backend itself says
for the same requests (asked directly over /v1/completions).

    INFERGATE_BIN=... INFERGATE_EMULATOR_BIN=... python3 tests/clients/run_sglang_script.py -v
"""
import json
import math
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Stack, http_json  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_script.py")
MODEL = "vllm-emulated/Llama-3.1-8B-Instruct"
MAX_NEW_TOKENS = 32  # the script's default
CONCURRENCY = [1, 4, 16]  # the script's default sweep
WARMUP_PROMPT = "Hello, my name is"  # the script's warm-up prompt
FAST = {"X-Emulator-TTFT-Ms": "0", "X-Emulator-ITL-Ms": "0"}  # reference requests skip the delays

REQ_LINE = re.compile(
    r"^req c=(?P<c>\d+) i=(?P<i>\d+) tokens=(?P<tokens>\d+) events=(?P<events>\d+) "
    r"first_tokens=(?P<first>\d+) itl_samples=(?P<itl_n>\d+) ttft_ms=(?P<ttft>[\d.]+) "
    r"mean_itl_ms=(?P<itl>[\d.]+|nan) finish=(?P<finish>\S+) "
    r"prompt=(?P<prompt>\".*?(?<!\\)\") text=(?P<text>\".*\")$")


def run_script(url, *extra, timeout=60):
    return subprocess.run([sys.executable, SCRIPT, "--url", url, *extra], capture_output=True,
                          text=True, timeout=timeout)


class SglangScriptThroughProxy(unittest.TestCase):
    def backend_truth(self, stack, prompt, ignore_eos):
        """What the backend generates for this request, asked in its own dialect."""
        status, body = http_json("POST", stack.emulator.base + "/v1/completions", {
            "model": MODEL, "prompt": prompt, "max_tokens": MAX_NEW_TOKENS,
            "ignore_eos": ignore_eos, "temperature": 0}, headers=FAST)
        self.assertEqual(status, 200, body)
        choice = body["choices"][0]
        return (body["usage"]["completion_tokens"], choice["text"], choice["finish_reason"],
                choice.get("stop_reason"))

    def check(self, emulator_args, script_args=(), tokens_per_chunk=1, ttft_ms=0, itl_ms=0,
              ignore_eos=True):
        with Stack("openai", MODEL, emulator_args=emulator_args) as stack:
            proc = run_script(stack.proxy.base, *script_args)
            out = proc.stdout
            ctx = f"\nstdout:\n{out}\nstderr:\n{proc.stderr}\n{stack.logs()}"
            self.assertEqual(proc.returncode, 0, "script failed" + ctx)

            warm_tokens, _, _, _ = self.backend_truth(stack, WARMUP_PROMPT, ignore_eos)
            self.assertIn(f"Warmup: {warm_tokens} tokens, ok=True\n", out, ctx)

            reqs = [m.groupdict() for m in map(REQ_LINE.match, out.splitlines()) if m]
            seen = sorted((int(r["c"]), int(r["i"])) for r in reqs)
            self.assertEqual(seen, [(c, i) for c in CONCURRENCY for i in range(c)],
                             "one req line per request" + ctx)

            totals = {c: 0 for c in CONCURRENCY}
            for r in reqs:
                prompt, text = json.loads(r["prompt"]), json.loads(r["text"])
                tokens = int(r["tokens"])
                want_tokens, want_text, want_finish, want_stop_reason = self.backend_truth(
                    stack, prompt, ignore_eos)
                where = f" for {prompt!r}" + ctx
                # Token counts the script read from meta_info equal the backend's usage.
                self.assertEqual(tokens, want_tokens, "completion_tokens" + where)
                self.assertEqual(text, want_text, "final cumulative text" + where)
                finish = json.loads(r["finish"])
                if want_finish == "length":
                    self.assertEqual(finish, {"type": "length", "length": MAX_NEW_TOKENS},
                                     "finish_reason" + where)
                else:
                    # docs/dialects.md: vLLM "stop" -> {"type":"stop","matched":<stop_reason>},
                    # where stop_reason is null for EOS.
                    self.assertEqual(want_finish, "stop")
                    self.assertEqual(finish, {"type": "stop", "matched": want_stop_reason},
                                     "finish_reason" + where)
                # Event granularity follows the backend's chunks; counts are not 1 per event.
                self.assertEqual(int(r["events"]), math.ceil(tokens / tokens_per_chunk),
                                 "events" + where)
                self.assertEqual(int(r["first"]), min(tokens_per_chunk, tokens),
                                 "tokens in the first event" + where)
                self.assertEqual(int(r["itl_n"]), tokens - min(tokens_per_chunk, tokens),
                                 "ITL samples" + where)
                # Timing lower bounds the emulator guarantees (sleeps), never upper bounds.
                # Per-token ITLs add up to the time between the first and the last event, so
                # TTFT + sum(ITL) is the stream's duration, which cannot be shorter than the
                # emulator's delays (per-request means are not robust to client-side jitter).
                ttft = float(r["ttft"])
                self.assertGreaterEqual(ttft, ttft_ms * 0.95, "TTFT" + where)
                if itl_ms:
                    duration = ttft + float(r["itl"]) * int(r["itl_n"])
                    floor = ttft_ms + (int(r["events"]) - 1) * itl_ms
                    self.assertGreaterEqual(duration, floor * 0.95,
                                            "TTFT + sum of per-token ITLs" + where)
                totals[int(r["c"])] += want_tokens
            for c in CONCURRENCY:
                self.assertRegex(out, rf"(?m)^Concurrency {c}: {c}/{c} ok, {totals[c]} output "
                                      r"tokens ", ctx)
            self.assertIn("All requests succeeded", out, ctx)
            self.assertNotIn("ERROR", out, ctx)

    def test_one_token_per_chunk(self):
        self.check(["--ttft-ms", "20", "--itl-ms", "4"], ttft_ms=20, itl_ms=4)

    def test_three_tokens_per_chunk(self):
        # 32 = 10 x 3 + 2: the script must take the count from meta_info, not count events.
        self.check(["--tokens-per-chunk", "3", "--itl-ms", "6"], tokens_per_chunk=3, itl_ms=6)

    def test_eos_before_budget(self):
        # The backend stops at EOS after 20 words (21 tokens counting EOS), not at max_tokens, so
        # the counts can only be right if they come from the backend.
        self.check(["--eos-after", "20", "--tokens-per-chunk", "3"], ["--no-ignore-eos"],
                   tokens_per_chunk=3, ignore_eos=False)

    def test_script_detects_a_non_sglang_server(self):
        # Self-check that the script can fail: the vLLM-style backend itself has no /generate.
        with Stack("openai", MODEL) as stack:
            proc = run_script(stack.emulator.base)
            self.assertNotEqual(proc.returncode, 0, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
