"""Many backends behind one endpoint (issue 14, docs/routing.md): routing by model, the union of
the model lists, 404 for a model no backend serves, balancing inside a pool (least outstanding
requests, weights, a slow replica), failover before the first byte, outlier ejection and health
checks, a replica killed mid-run and brought back, a reload that adds and removes backends under
load, and DNS discovery of replicas. Several emulator processes, in two wire styles."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import socket
import tempfile
import threading
import time
import unittest

from harness import (Emulator, Process, Proxy, Response, closed_port, emulator_binary,
                     open_stream, post_json, request, start, wait_until)

ALPHA = "alpha-model"
BETA = "beta-model"
# Wire styles: a second emulator writes spaced JSON with CRLF SSE and comments.
SPACED = ["--json-style", "spaced", "--sse-style", "crlf,comments"]


def backend_yaml(name: str, url: str, dialect: str, model: str, extra: str = "") -> str:
    return (f"  - name: {name}\n    url: {url}\n    dialect: {dialect}\n    model: {model}\n"
            + extra)


def completions(port: int, model: str | None, prompt: str = "hello", max_tokens: int = 4,
                headers: dict[str, str] | None = None) -> Response:
    body = {"prompt": prompt, "max_tokens": max_tokens}
    if model is not None:
        body["model"] = model
    return post_json(port, "/v1/completions", body, headers)


def served_by(emus: dict[str, Emulator], path: str) -> collections.Counter:
    """How many requests for `path` each emulator has logged."""
    return collections.Counter({name: sum(1 for line in e.request_log()
                                          if line.split()[1] == path)
                                for name, e in emus.items()})


def settled(emus: dict[str, Emulator], path: str, before: collections.Counter,
            total: int) -> collections.Counter:
    """The requests each emulator logged since `before`, once `total` are in: an emulator writes
    its line when the request ends, which may be just after the client has the answer."""
    return wait_until(lambda: (lambda got: got if sum(got.values()) >= total else None)(
        served_by(emus, path) - before), 5, what=f"{total} requests logged")


def parallel(n: int, workers: int, fn) -> list:
    """fn(i) for i in range(n) on `workers` threads; the results in order."""
    out: list = [None] * n
    lock = threading.Lock()
    next_i = [0]

    def run():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= n:
                return
            try:
                out[i] = fn(i)
            except Exception as e:  # reported by the caller's assertions
                out[i] = e

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def metric(port: int, name: str, **labels: str) -> float:
    body = request(port, "GET", "/metrics").body.decode()
    total = 0.0
    for line in body.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.rfind("}") + 1]))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


class RoutingCase(unittest.TestCase):
    def proxy(self, yaml: str, model: str = ALPHA, env: dict[str, str] | None = None) -> Proxy:
        old = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            p = Proxy(["--access-log", "stderr"], config_yaml=yaml, model=model)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p


class TestModelRouting(RoutingCase):
    """Three replicas of one model (two wire styles) and one backend of another."""

    @classmethod
    def setUpClass(cls):
        cls.a = {f"a{i}": start(cls, Emulator, "openai", ALPHA, SPACED if i == 2 else [])
                 for i in range(3)}
        cls.b = start(cls, Emulator, "sglang", BETA)
        yaml = "backends:\n"
        for name, e in cls.a.items():
            yaml += backend_yaml(name, e.url, "openai", ALPHA)
        yaml += backend_yaml("b", cls.b.url, "sglang", BETA)
        yaml += ("models:\n  default: alpha-model\n  aliases: {fast: beta-model}\n"
                 "routing:\n  balance: least_outstanding\n")
        cls.p = start(cls, Proxy, ["--access-log", "off"], config_yaml=yaml, model=BETA)

    def test_requests_reach_their_model(self):
        before_a = served_by(self.a, "/v1/completions")
        before_b = sum(1 for l in self.b.request_log() if l.startswith("POST "))
        for model in (ALPHA, BETA, "fast"):
            for stream in (False, True):
                body = {"model": model, "prompt": "which model", "max_tokens": 3,
                        "stream": stream}
                r = post_json(self.p.port, "/v1/completions", body)
                self.assertEqual(r.status, 200, r.body[:300])
                if not stream:
                    # The client's name comes back, whichever backend answered.
                    self.assertEqual(r.json()["model"], model)
        got_a = settled(self.a, "/v1/completions", before_a, 2)
        self.assertEqual(sum(got_a.values()), 2, got_a)
        # Beta's backend speaks SGLang: the OpenAI client's requests reached its /v1 routes or
        # /generate, never an alpha replica.
        beta_lines = wait_until(lambda: (lambda ls: ls if len(ls) - before_b >= 4 else None)(
            [l for l in self.b.request_log() if l.startswith("POST ")]), 5, what="beta's lines")
        self.assertEqual(len(beta_lines) - before_b, 4, beta_lines)

    def test_a_request_without_model_goes_to_the_default(self):
        before = served_by(self.a, "/v1/completions")
        r = post_json(self.p.port, "/generate",
                      {"text": "no model named", "sampling_params": {"max_new_tokens": 3}})
        self.assertEqual(r.status, 200, r.body[:300])
        got = settled(self.a, "/v1/completions", before, 1)
        self.assertEqual(sum(got.values()), 1)

    def test_unknown_model_is_404_in_the_clients_dialect(self):
        r = completions(self.p.port, "alpah-model")
        self.assertEqual(r.status, 404, r.body)
        err = r.json()["error"]
        self.assertEqual(err["code"], "model_not_found")
        for name in (ALPHA, BETA, "fast"):
            self.assertIn(f"'{name}'", err["message"])
        r = post_json(self.p.port, "/api/chat",
                      {"model": "nope", "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(r.status, 404, r.body)
        self.assertIn("served models", r.json()["error"])  # Ollama's {"error": "..."}
        r = post_json(self.p.port, "/v1/messages",
                      {"model": "nope", "max_tokens": 5,
                       "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(r.status, 404, r.body)
        self.assertEqual(r.json()["type"], "error")

    def test_model_lists_show_the_union(self):
        ids = [m["id"] for m in request(self.p.port, "GET", "/v1/models").json()["data"]]
        self.assertEqual(ids[:2], [ALPHA, BETA])
        self.assertIn("fast", ids)
        tags = [m["name"] for m in request(self.p.port, "GET", "/api/tags").json()["models"]]
        for name in (ALPHA, BETA, "fast"):
            self.assertTrue(any(t.startswith(name) for t in tags), tags)

    def test_equal_replicas_share_the_load_within_10_percent(self):
        before = served_by(self.a, "/v1/completions")
        n = 300
        results = parallel(n, 6, lambda i: completions(self.p.port, ALPHA, f"spread {i}", 2,
                                                       {"X-Emulator-TTFT-Ms": "5"}))
        self.assertTrue(all(isinstance(r, Response) and r.status == 200 for r in results))
        got = settled(self.a, "/v1/completions", before, n)
        self.assertEqual(sum(got.values()), n, got)
        for name in self.a:
            self.assertLessEqual(abs(got[name] - n / 3), n / 3 * 0.10, got)

    def test_backend_metrics(self):
        completions(self.p.port, BETA)
        self.assertEqual(metric(self.p.port, "infergate_backend_up", backend="b"), 1)
        self.assertGreaterEqual(metric(self.p.port, "infergate_backend_requests_total",
                                       backend="b"), 1)
        self.assertEqual(metric(self.p.port, "infergate_backend_replicas", backend="a0",
                                state="available"), 1)


class TestSlowReplica(RoutingCase):
    def test_a_replica_3x_slower_gets_proportionally_fewer(self):
        emus = {"fast1": start(self.__class__, Emulator, "openai", ALPHA, ["--itl-ms", "10"]),
                "fast2": start(self.__class__, Emulator, "openai", ALPHA,
                               ["--itl-ms", "10", *SPACED]),
                "slow": start(self.__class__, Emulator, "openai", ALPHA, ["--itl-ms", "30"])}
        yaml = "backends:\n" + "".join(backend_yaml(n, e.url, "openai", ALPHA)
                                       for n, e in emus.items())
        yaml += "routing: {balance: least_outstanding}\n"
        p = self.proxy(yaml)
        n = 150
        results = parallel(n, 9, lambda i: completions(p.port, ALPHA, f"slow {i}", 16))
        self.assertTrue(all(isinstance(r, Response) and r.status == 200 for r in results))
        got = settled(emus, "/v1/completions", collections.Counter(), n)
        fast = (got["fast1"] + got["fast2"]) / 2
        # Least outstanding: a replica that holds each request 3x as long gets about a third.
        self.assertLess(got["slow"], 0.6 * fast, got)
        self.assertGreater(got["slow"], 0.15 * fast, got)


class TestFailover(RoutingCase):
    """A refused connection and an engine's 503 move the request to another replica before the
    client sees anything; the failing replicas are ejected."""

    def test_no_client_error_and_ejection(self):
        live = {"live1": start(self.__class__, Emulator, "openai", ALPHA),
                "live2": start(self.__class__, Emulator, "openai", ALPHA, SPACED)}
        busy = start(self.__class__, Emulator, "openai", ALPHA, ["--fault", "status:503"])
        yaml = "backends:\n" + "".join(backend_yaml(n, e.url, "openai", ALPHA)
                                       for n, e in live.items())
        yaml += backend_yaml("dead", f"http://127.0.0.1:{closed_port()}", "openai", ALPHA)
        yaml += backend_yaml("busy", busy.url, "openai", ALPHA)
        yaml += ("routing:\n  balance: least_outstanding\n  retries: {attempts: 3}\n"
                 "  outlier_ejection: {consecutive_failures: 2, ejection_ms: 60000}\n")
        p = self.proxy(yaml)
        for i in range(40):
            stream = i % 2 == 1
            r = post_json(p.port, "/v1/chat/completions",
                          {"model": ALPHA, "max_tokens": 3, "stream": stream,
                           "messages": [{"role": "user", "content": f"failover {i}"}]})
            self.assertEqual(r.status, 200, r.body[:300])
            if stream:
                self.assertIn(b"data: [DONE]", r.body)
        for name in ("dead", "busy"):
            self.assertEqual(metric(p.port, "infergate_backend_replicas", backend=name,
                                    state="ejected"), 1, name)
            self.assertGreaterEqual(metric(p.port, "infergate_backend_retries_total",
                                           backend=name), 1, name)
            self.assertEqual(metric(p.port, "infergate_backend_up", backend=name), 0)
        # Ejected, they get nothing more: 20 requests, all on the live ones.
        # (Counted by the proxy: an emulator's log line may come just after its answer.)
        busy_before = metric(p.port, "infergate_backend_requests_total", backend="busy")
        for i in range(20):
            self.assertEqual(completions(p.port, ALPHA, f"after {i}").status, 200)
        self.assertEqual(metric(p.port, "infergate_backend_requests_total", backend="busy"),
                         busy_before)
        log = p.stderr_text()
        self.assertIn("trying another replica", log)
        self.assertIn("ejected after 2 failures in a row", log)
        tries = [json.loads(l)["tries"] for l in log.splitlines()
                 if l.startswith("{") and '"tries"' in l]
        self.assertTrue(tries and all(t >= 2 for t in tries), tries)

    def test_one_replica_pool_still_answers_with_the_error(self):
        busy = start(self.__class__, Emulator, "openai", ALPHA, ["--fault", "status:503"])
        other = start(self.__class__, Emulator, "openai", BETA)
        yaml = "backends:\n" + backend_yaml("busy", busy.url, "openai", ALPHA)
        yaml += backend_yaml("other", other.url, "openai", BETA)
        p = self.proxy(yaml)
        r = completions(p.port, ALPHA)
        self.assertEqual(r.status, 503, r.body)  # nothing else serves alpha: the engine's answer


class TestKillReplica(RoutingCase):
    """A replica killed mid-run: its streams end with a visible error, nothing else fails, the
    health checks take it out, and bring it back when it returns on the same port."""

    def test_kill_and_return(self):
        cls = self.__class__
        keep = start(cls, Emulator, "openai", ALPHA, ["--itl-ms", "30"])
        victim = start(cls, Emulator, "openai", ALPHA, ["--itl-ms", "30", *SPACED])
        port = victim.port
        yaml = "backends:\n" + backend_yaml("keep", keep.url, "openai", ALPHA)
        yaml += backend_yaml("victim", victim.url, "openai", ALPHA,
                             "    health: {interval_ms: 200, timeout_ms: 500, "
                             "unhealthy_threshold: 2, healthy_threshold: 1}\n")
        yaml += "routing: {balance: least_outstanding}\n"
        p = self.proxy(yaml)
        streams = []
        for i in range(6):
            s = open_stream(p.port, "/v1/completions",
                            {"model": ALPHA, "prompt": f"long {i}", "max_tokens": 60,
                             "stream": True, "ignore_eos": True})
            self.assertNotIsInstance(s, Response)
            self.assertTrue(s.next_events())
            streams.append(s)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(5)
        done = errored = 0
        for s in streams:
            events = s.read_all()
            last = events[-1] if events else None
            if last is not None and last.done and not any(
                    "error" in (e.data or "") for e in events[-3:]):
                done += 1
            else:
                # The killed replica's streams: an error event the client can see.
                self.assertTrue(any('"error"' in (e.data or "") for e in events[-3:]),
                                [e.data for e in events[-3:]])
                errored += 1
        self.assertGreaterEqual(errored, 1)
        self.assertGreaterEqual(done, 1)
        # Requests not yet started: none fails (failover from the refused connection).
        for i in range(10):
            r = completions(p.port, ALPHA, f"after kill {i}")
            self.assertEqual(r.status, 200, r.body[:300])
        wait_until(lambda: metric(p.port, "infergate_backend_replicas", backend="victim",
                                  state="unhealthy") == 1, 5, what="the health checks to eject")
        # Back on the same port: re-admitted by its health checks.
        back = Process([emulator_binary(), "--listen", f"127.0.0.1:{port}", "--dialect",
                        "openai", "--model", ALPHA], "emulator-back")
        self.addCleanup(back.stop)
        wait_until(lambda: metric(p.port, "infergate_backend_replicas", backend="victim",
                                  state="available") == 1, 5, what="re-admission")
        before = len(back.stderr_text().splitlines())
        for i in range(10):
            self.assertEqual(completions(p.port, ALPHA, f"back {i}").status, 200)
        wait_until(lambda: len(back.stderr_text().splitlines()) > before, 5,
                   what="the returned replica to serve")


class TestReloadUnderLoad(RoutingCase):
    def test_add_and_remove_backends_with_no_failed_request(self):
        cls = self.__class__
        x1 = start(cls, Emulator, "openai", ALPHA)
        x2 = start(cls, Emulator, "openai", ALPHA, SPACED)
        y = start(cls, Emulator, "ollama", BETA)
        first = "backends:\n" + backend_yaml("x1", x1.url, "openai", ALPHA)
        p = self.proxy(first)
        stop = threading.Event()
        failures: list = []
        counts = collections.Counter()

        def load():
            i = 0
            while not stop.is_set():
                r = completions(p.port, ALPHA, f"under load {i}", 2)
                counts["sent"] += 1
                if r.status != 200:
                    failures.append((r.status, r.body[:200]))
                i += 1

        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: counts["sent"] > 20, 10, what="load")
            second = first + backend_yaml("x2", x2.url, "openai", ALPHA)
            second += backend_yaml("y", y.url, "ollama", BETA)
            with open(p.config_path + ".new", "w") as f:
                f.write(second)
            os.replace(p.config_path + ".new", p.config_path)
            p.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: completions(p.port, BETA).status == 200, 10,
                       what="the added backend's model")
            x2_before = len(x2.request_log())
            third = "backends:\n" + backend_yaml("x2", x2.url, "openai", ALPHA)
            third += backend_yaml("y", y.url, "ollama", BETA)
            with open(p.config_path + ".new", "w") as f:
                f.write(third)
            os.replace(p.config_path + ".new", p.config_path)
            p.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "'x1' removed" in p.stderr_text(), 10, what="the reload")
            sent = counts["sent"]
            wait_until(lambda: counts["sent"] > sent + 40, 20, what="load after the reload")
            x1_after = len(x1.request_log())
            sent = counts["sent"]
            wait_until(lambda: counts["sent"] > sent + 20, 20, what="more load")
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertEqual(failures, [])
        self.assertGreater(len(x2.request_log()), x2_before)
        # x1 is out of the config: it gets nothing new once the reload is in.
        self.assertEqual(len(x1.request_log()), x1_after)


def free_port_on(addresses: list[str]) -> int:
    """A port free on each of `addresses` (all in 127.0.0.0/8)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((addresses[0], 0))
            port = s.getsockname()[1]
        ok = True
        for a in addresses[1:]:
            with socket.socket() as t:
                try:
                    t.bind((a, port))
                except OSError:
                    ok = False
        if ok:
            return port
    raise RuntimeError("no common free port")


class TestDnsDiscovery(RoutingCase):
    """discovery: dns: every address the name resolves to is a replica, followed as it changes
    (INFERGATE_RESOLVE_FILE stands in for the DNS server of a Kubernetes headless Service)."""

    def test_replicas_follow_the_name(self):
        addrs = ["127.0.0.2", "127.0.0.3"]
        port = free_port_on(addrs)
        emus = {}
        for a in addrs:
            e = Process([emulator_binary(), "--listen", f"{a}:{port}", "--dialect", "openai",
                         "--model", ALPHA], f"emulator-{a}")
            self.addCleanup(e.stop)
            emus[a] = e
        hosts = tempfile.NamedTemporaryFile("w", suffix=".hosts", delete=False)
        self.addCleanup(os.unlink, hosts.name)

        def resolve_to(*ips: str) -> None:
            with open(hosts.name + ".new", "w") as f:
                f.write("# test resolver\nengines.test " + " ".join(ips) + "\n")
            os.replace(hosts.name + ".new", hosts.name)

        resolve_to(addrs[0])
        yaml = ("backends:\n  - name: engines\n    url: http://engines.test:%d\n"
                "    discovery: dns\n    resolve_interval_ms: 100\n"
                "routing: {balance: least_outstanding}\n" % port)
        p = self.proxy(yaml, env={"INFERGATE_RESOLVE_FILE": hosts.name})

        def lines(a: str) -> int:
            return sum(1 for l in emus[a].stderr_text().splitlines()
                       if l.startswith("POST /v1/completions "))

        def logged(total: int) -> None:  # a line comes when a request ends, maybe just after
            wait_until(lambda: sum(lines(a) for a in addrs) >= total, 5,
                       what=f"{total} requests logged")

        for i in range(6):
            self.assertEqual(completions(p.port, ALPHA, f"one {i}").status, 200)
        logged(6)
        self.assertEqual((lines(addrs[0]), lines(addrs[1])), (6, 0))
        resolve_to(*addrs)  # scaled up
        wait_until(lambda: metric(p.port, "infergate_backend_replicas", backend="engines",
                                  state="available") == 2, 5, what="the second address")
        for i in range(10):
            self.assertEqual(completions(p.port, ALPHA, f"two {i}").status, 200)
        logged(16)
        self.assertGreaterEqual(lines(addrs[1]), 3)
        resolve_to(addrs[1])  # scaled down
        wait_until(lambda: metric(p.port, "infergate_backend_replicas", backend="engines",
                                  state="available") == 1, 5, what="the first address gone")
        first = lines(addrs[0])
        for i in range(6):
            self.assertEqual(completions(p.port, ALPHA, f"down {i}").status, 200)
        logged(22)
        self.assertEqual(lines(addrs[0]), first)
        self.assertIn("resolves to 1 address(es): -127.0.0.2", p.stderr_text())


if __name__ == "__main__":
    unittest.main()


class TestCancellation(RoutingCase):
    """A client that goes away cancels its upstream request at once: the connection is closed
    (the emulator's request ends), and an SGLang backend is also sent POST /abort_request with
    the rid (issue 14, item 5)."""

    ITL_MS = 50
    TOKENS = 200

    def setUp(self):
        self.emu = start(self.__class__, Emulator, "sglang", ALPHA)
        self.p = self.proxy("backends:\n" + backend_yaml("s", self.emu.url, "sglang", ALPHA))

    def leave_midstream(self, path: str, body: dict) -> tuple[float, str]:
        """Opens a stream, reads a few events, closes; returns the seconds between sending and
        closing, and the path the backend saw."""
        before = len(self.emu.request_log())
        t_send = time.monotonic()
        s = open_stream(self.p.port, path, body, {"X-Emulator-ITL-Ms": str(self.ITL_MS)})
        self.assertNotIsInstance(s, Response, getattr(s, "body", b"")[:300])
        got = 0
        while got < 3:
            new = s.next_events()
            self.assertTrue(new, "stream ended early")
            got += len(new)
        held = time.monotonic() - t_send
        s.close()
        line = wait_until(lambda: [l for l in self.emu.request_log()[before:]
                                   if l.startswith("POST ") and l.split()[1] != "/abort_request"],
                          3,
                          what="the backend to see the connection close")[-1]
        ms = float(re.search(r"([0-9.]+)ms$", line).group(1))
        # The backend's request lasted at most what the client held it, plus the time it took
        # to notice the close.
        self.assertLess(ms - held * 1000, 100, f"the upstream ran {ms - held * 1000:.1f} ms "
                                               f"after the client left ({line})")
        return held, line.split()[1]

    def wait_abort(self, rid_prefix: str) -> str:
        t0 = time.monotonic()
        m = wait_until(lambda: re.search(r"^abort rid=(%s\S*) found=(\d)$" % re.escape(rid_prefix),
                                         self.emu.stderr_text(), re.M), 2,
                       what=f"POST /abort_request for {rid_prefix}")
        self.assertLess(time.monotonic() - t0, 0.5)
        return m.group(2)

    def test_sglang_client_rid_is_aborted(self):
        self.leave_midstream("/generate", {
            "text": "a long answer", "rid": "client-rid-1", "stream": True,
            "sampling_params": {"max_new_tokens": self.TOKENS, "ignore_eos": True}})
        self.wait_abort("client-rid-1")

    def test_translated_request_gets_a_rid_and_is_aborted(self):
        before = self.emu.stderr_text().count("abort rid=")
        # A TGI client (SSE), translated to SGLang's /generate.
        _, path = self.leave_midstream("/generate_stream", {
            "inputs": "a long answer", "parameters": {"max_new_tokens": self.TOKENS}})
        self.assertEqual(path, "/generate")
        wait_until(lambda: self.emu.stderr_text().count("abort rid=") > before, 2,
                   what="the abort of the proxy's rid")

    def test_openai_client_on_sglang_openai_route_closes_the_connection(self):
        # SGLang's OpenAI layer notices the close itself (its rid field is ignored there).
        self.leave_midstream("/v1/chat/completions", {
            "model": ALPHA, "stream": True, "max_tokens": self.TOKENS,
            "messages": [{"role": "user", "content": "a long answer"}]})
        wait_until(lambda: metric(self.p.port, "infergate_requests_in_flight") == 0, 2,
                   what="the in-flight gauge back to 0")


class TestPrefixAffinity(unittest.TestCase):
    """20 shared system prompts x many users over four replicas with bounded prefix caches:
    prefix-aware routing hits the engines' caches at least twice as often as least outstanding
    requests, without queueing worse (bench/prefix_affinity.py is the full measurement)."""

    def test_hit_ratio_and_queueing(self):
        import argparse
        import importlib.util
        path = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "prefix_affinity.py")
        spec = importlib.util.spec_from_file_location("prefix_affinity", path)
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        args = argparse.Namespace(replicas=4, cache_tokens=2400, prefill_us=200, slots=2,
                                  itl_ms=2, max_tokens=8, clients=12)
        chats = bench.workload(300, 20, 300, seed=11)
        lo = bench.run_mode("least_outstanding", chats, args)
        px = bench.run_mode("prefix", chats, args)
        self.assertEqual((lo["errors"], px["errors"]), (0, 0))
        self.assertGreaterEqual(px["hit_ratio"], 2 * lo["hit_ratio"], (lo, px))
        # Cache hits shorten prefills, so the queues are shorter, not longer (10 ms of slack for
        # a loaded machine's scheduling).
        self.assertLessEqual(px["queued_ms_p99"], 1.1 * lo["queued_ms_p99"] + 10, (lo, px))


class TestHedge(RoutingCase):
    """routing.retries.hedge_ms: a first try with no response head within hedge_ms is sent to a
    second replica too; the first answer wins and the other call is closed."""

    def test_a_slow_first_byte_is_hedged(self):
        cls = self.__class__
        slow = start(cls, Emulator, "openai", ALPHA, ["--ttft-ms", "3000"])
        fast = start(cls, Emulator, "openai", ALPHA, SPACED)
        yaml = "backends:\n" + backend_yaml("slow", slow.url, "openai", ALPHA)
        yaml += backend_yaml("fast", fast.url, "openai", ALPHA)
        yaml += "routing:\n  balance: least_outstanding\n  retries: {hedge_ms: 200}\n"
        p = self.proxy(yaml)
        # The proxy is ready once one replica serves the model; the other joins the pool when
        # its probe (the vLLM check) is done, and a hedge needs it. Without this wait a request
        # sent in between went to the slow replica alone (3 s; seen 2 times in ~10 runs).
        for name in ("slow", "fast"):
            wait_until(lambda n=name: metric(p.port, "infergate_backend_up", backend=n) == 1,
                       timeout=30, what=f"backend {name} identified")
        for i in range(4):
            stream = i % 2 == 1
            t0 = time.monotonic()
            r = post_json(p.port, "/v1/chat/completions",
                          {"model": ALPHA, "max_tokens": 4, "stream": stream,
                           "messages": [{"role": "user", "content": f"hedge {i}"}]})
            elapsed = time.monotonic() - t0
            self.assertEqual(r.status, 200, r.body[:300])
            if stream:
                self.assertIn(b"data: [DONE]", r.body)
            else:
                self.assertEqual(r.json()["choices"][0]["finish_reason"], "length")
            # The slow replica would have taken 3 s: the hedge answered (200 ms and a bit).
            self.assertLess(elapsed, 2.0, f"request {i} took {elapsed:.2f} s")
        self.assertGreaterEqual(metric(p.port, "infergate_backend_hedges_total",
                                       backend="fast"), 1)
        # The losing calls were let go at once (the emulator only notices the close when it
        # writes, after its 3 s): nothing is in flight on the slow replica any more.
        self.assertEqual(metric(p.port, "infergate_backend_requests_in_flight", backend="slow"),
                         0)
        self.assertGreaterEqual(metric(p.port, "infergate_backend_requests_total",
                                       backend="slow"), 1)
        log = [json.loads(l) for l in p.stderr_text().splitlines() if l.startswith("{")]
        self.assertTrue(all(l["status"] == 200 and l["outcome"] == "ok" for l in log), log)
        self.assertIn("fast", [l["backend"] for l in log])
        self.assertEqual(metric(p.port, "infergate_backend_requests_in_flight"), 0)
