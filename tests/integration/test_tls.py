"""An https backend with an API key: infergate verifies the backend's certificate (against a CA
bundle from the config), sends `Authorization: Bearer $KEY` from an environment variable, and
refuses a backend whose certificate it cannot verify.

The emulator speaks plain HTTP, so a small TLS terminator (stdlib ssl, one thread per
connection) sits in front of it and records the request headers it forwards.
"""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import unittest

import harness
from harness import Emulator, Proxy


class TlsFront:
    """Accepts TLS on an ephemeral port and pipes bytes to a plain-HTTP backend."""

    def __init__(self, cert: str, key: str, backend_port: int):
        self.backend_port = backend_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.seen = bytearray()  # decrypted client→backend bytes
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw):
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()  # a client that does not trust us: the handshake fails
            return
        back = socket.create_connection(("127.0.0.1", self.backend_port))

        def pump(src, dst, record):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    if record:
                        with self.lock:
                            self.seen += data
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        t = threading.Thread(target=pump, args=(back, tls, False), daemon=True)
        t.start()
        pump(tls, back, True)
        t.join(timeout=10)
        tls.close()
        back.close()

    def close(self):
        self.closed = True
        self.sock.close()


def make_cert(directory: str, name: str) -> tuple[str, str]:
    cert = os.path.join(directory, f"{name}.pem")
    key = os.path.join(directory, f"{name}.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", key, "-out", cert],
        check=True, capture_output=True)
    return cert, key


@unittest.skipUnless(shutil.which("openssl"), "needs the openssl command")
class TlsBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="infergate-tls-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.cert, cls.key = make_cert(cls.dir, "backend")
        cls.other_cert, _ = make_cert(cls.dir, "other")
        cls.emu = harness.start(cls, Emulator, "openai", "tls-model")
        cls.front = TlsFront(cls.cert, cls.key, cls.emu.port)
        cls.addClassCleanup(cls.front.close)
        os.environ["INFERGATE_TEST_BACKEND_KEY"] = "sk-test-123"
        cls.proxy = harness.start(
            cls, Proxy,
            config_yaml=(
                "backends:\n"
                f"  - url: https://localhost:{cls.front.port}\n"
                "    api_key_env: INFERGATE_TEST_BACKEND_KEY\n"
                f"    tls_ca_file: {cls.cert}\n"),
            model="tls-model")

    def test_generate_over_https_with_the_api_key(self):
        r = harness.post_json(self.proxy.port, "/generate",
                              {"text": "hello over tls", "sampling_params": {"max_new_tokens": 4}})
        self.assertEqual(r.status, 200, r.body)
        doc = r.json()
        ref = harness.direct_raw(self.emu, "hello over tls", 4)
        self.assertEqual(doc["text"], ref[0].text)
        self.assertEqual(doc["meta_info"]["completion_tokens"], 4)
        with self.front.lock:
            seen = bytes(self.front.seen)
        self.assertIn(b"authorization: bearer sk-test-123", seen.lower())

    def test_streaming_over_https(self):
        events = harness.stream(self.proxy.port, "/v1/completions",
                                {"model": "tls-model", "prompt": "stream tls", "max_tokens": 5,
                                 "stream": True}).events
        self.assertTrue(events[-1].done)
        text = "".join(e.json()["choices"][0]["text"] for e in events[:-1]
                       if e.json().get("choices"))
        self.assertEqual(text, harness.direct_raw(self.emu, "stream tls", 5)[0].text)

    def test_an_unverifiable_certificate_is_refused(self):
        proxy = Proxy(config_yaml=(
            "backends:\n"
            f"  - url: https://localhost:{self.front.port}\n"
            "    dialect: openai\n    model: tls-model\n"
            f"    tls_ca_file: {self.other_cert}\n"))
        try:
            r = harness.post_json(proxy.port, "/v1/completions",
                                  {"model": "tls-model", "prompt": "x", "max_tokens": 1})
            self.assertEqual(r.status, 502, r.body)
            self.assertIn("TLS", r.json()["error"]["message"])
        finally:
            proxy.stop()
            proxy.cleanup_files()


if __name__ == "__main__":
    unittest.main()
