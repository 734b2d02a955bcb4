"""Backend discovery that never guesses silently (issue 10, section 4), and IPv6 backends.

Each real server is mimicked by a scripted backend that answers the probe's routes with the bytes
that server writes: its own header lines (spelling and order), its JSON (compact, in its key
order), its own 404. Where each shape comes from is cited above its builder. The probe must name
the engine from that engine's own fingerprints, refuse to pick one from weak or conflicting
evidence (a 503 naming every URL it probed and what each answered, and the flag to set), take
`--upstream http://h:8000/v1` as the OpenAI base-URL habit it is, probe again when the backend
comes back after refusing connections, and reach IPv6 backends with `Host: [::1]:PORT`.
"""
from __future__ import annotations

import json
import re
import unittest

from harness import (Emulator, Process, Proxy, closed_port, emulator_binary, post_json, request,
                     wait_until)
from scripted import Reply, ScriptedBackend, exact_reply

DATE = "Thu, 03 Dec 2026 06:43:51 GMT"

# Every route the probe may GET (proxy/backend_probe.cpp).
PROBED = ["/v1/models", "/version", "/get_model_info", "/info", "/", "/api/version",
          "/api/tags", "/props", "/health"]


def compact(obj) -> bytes:
    """JSON as Starlette's JSONResponse, orjson, serde_json, Go's encoding/json and nlohmann::json
    write it: no spaces, keys in the order the server builds them."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# ---- uvicorn + FastAPI/Starlette (vLLM, SGLang, vLLM's demo server, llama-cpp-python) ---------
# uvicorn writes its default `date` and `server: uvicorn` first, then Starlette's headers
# (`content-length` before `content-type`), all lower case. A bare Response(status_code=200) has
# no content-type. An unknown route is FastAPI's 404 {"detail":"Not Found"}.

def uvicorn(status: int, reason: str, body: bytes, content_type: str | None = "application/json"
            ) -> Reply:
    headers = [("date", DATE), ("server", "uvicorn"), ("content-length", None)]
    if content_type:
        headers.append(("content-type", content_type))
    return exact_reply(status, reason, headers, body)


FASTAPI_404 = uvicorn(404, "Not Found", b'{"detail":"Not Found"}')
UVICORN_EMPTY_200 = uvicorn(200, "OK", b"", None)

# ---- vLLM's OpenAI server --------------------------------------------------------------------
# vllm/entrypoints/openai/api_server.py (Prowindy/vllm @d48b1ce0): GET /v1/models returns
# JSONResponse(ModelList.model_dump()), GET /version JSONResponse({"version": VLLM_VERSION});
# serve/instrumentator/health.py: GET /health is Response(status_code=200). ModelCard,
# ModelPermission in openai/protocol.py (owned_by "vllm"). With --api-key, AuthenticationMiddleware
# answers /v1/* with 401 {"error":"Unauthorized"} and leaves /version and /health open.

VLLM_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"


def vllm_models(model: str = VLLM_MODEL) -> bytes:
    return compact({"object": "list", "data": [{
        "id": model, "object": "model", "created": 1796280231, "owned_by": "vllm", "root": model,
        "parent": None, "max_model_len": 32768,
        "permission": [{"id": "modelperm-5f0c6f2b8f0e4b6c9a3d2e1f0a9b8c7d",
                        "object": "model_permission", "created": 1796280231,
                        "allow_create_engine": False, "allow_sampling": True,
                        "allow_logprobs": True, "allow_search_indices": False,
                        "allow_view": True, "allow_fine_tuning": False, "organization": "*",
                        "group": None, "is_blocking": False}]}]})


def vllm_routes(model: str = VLLM_MODEL) -> dict[str, Reply]:
    return {"/v1/models": uvicorn(200, "OK", vllm_models(model)),
            "/version": uvicorn(200, "OK", b'{"version":"0.13.0"}'),
            "/health": UVICORN_EMPTY_200}


def vllm_completion(model: str = VLLM_MODEL) -> Reply:
    # completion/protocol.py CompletionResponse (api-dialects §3.1), as JSONResponse writes it.
    return uvicorn(200, "OK", compact({
        "id": "cmpl-8d1f0c2e5b7a4c39", "object": "text_completion", "created": 1796280232,
        "model": model, "choices": [{"index": 0, "text": " Paris.", "logprobs": None,
                                     "finish_reason": "stop", "stop_reason": None,
                                     "prompt_logprobs": None}],
        "usage": {"prompt_tokens": 6, "total_tokens": 9, "completion_tokens": 3,
                  "prompt_tokens_details": None}}))


# ---- vLLM's demo server ----------------------------------------------------------------------
# vllm/entrypoints/api_server.py: GET /health (Response(status_code=200)) and POST /generate
# (JSONResponse({"text": [prompt + output]})); nothing else (api-dialects §3.2).

def vllm_demo_routes() -> dict[str, Reply]:
    return {"/health": UVICORN_EMPTY_200}


# ---- SGLang ----------------------------------------------------------------------------------
# python/sglang/srt/entrypoints/http_server.py (bzhng-development/sglang @8471c9eb): /v1/models
# is an ORJSONResponse of ModelList (ModelCard: owned_by "sglang", root, parent, max_model_len);
# /get_model_info returns a dict (FastAPI's JSONResponse) starting with model_path; GET / returns
# the JSON string "SGLang is running", or "Ollama is running" (still a JSON string, quotes
# included) when SGLANG_OLLAMA_ROOT_ROUTE=/ mounts its Ollama layer there; /api/tags is its
# Ollama layer's list (ollama/serving.py get_tags).

SGLANG_MODEL = "Qwen/Qwen2.5-7B-Instruct"


def sglang_routes(model: str = SGLANG_MODEL, root_text: str = "SGLang is running"
                  ) -> dict[str, Reply]:
    return {
        "/v1/models": uvicorn(200, "OK", compact({"object": "list", "data": [{
            "id": model, "object": "model", "created": 1796280231, "owned_by": "sglang",
            "root": model, "parent": None, "max_model_len": 32768}]})),
        "/get_model_info": uvicorn(200, "OK", compact({
            "model_path": model, "tokenizer_path": model, "is_generation": True,
            "preferred_sampling_params": None, "weight_version": "default",
            "has_image_understanding": False, "has_audio_understanding": False,
            "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]})),
        "/": uvicorn(200, "OK", compact(root_text)),
        "/api/tags": uvicorn(200, "OK", compact({"models": [{
            "name": model, "model": model, "modified_at": "2026-12-03T06:43:51.123Z", "size": 0,
            "digest": "sha256:sglang0000000000000000000000000000000000000000000000000000000000",
            "details": {"format": "sglang", "family": model.split("/")[-1],
                        "parameter_size": "unknown"}}]})),
        "/health": UVICORN_EMPTY_200,
    }


# ---- TGI -------------------------------------------------------------------------------------
# router/src/server.rs (huggingface/text-generation-inference @db931fcf): GET /info is
# Json<Info> (lib.rs field order; router = env!("CARGO_PKG_NAME") = "text-generation-router"),
# GET /v1/models lists model_id with created 0 and owned_by = model_id, GET / and /health answer
# () (200, empty). axum on hyper writes lower-case headers; tower-http's CorsLayer (AllowOrigin
# any) adds vary and access-control-allow-origin; an unknown route is axum's empty 404.

TGI_MODEL = "bigscience/bloom-560m"


def axum(status: int, reason: str, body: bytes, content_type: str | None = "application/json"
         ) -> Reply:
    headers = [("content-type", content_type)] if content_type else []
    headers += [("content-length", None),
                ("vary", "origin, access-control-request-method, access-control-request-headers"),
                ("access-control-allow-origin", "*"), ("date", DATE)]
    return exact_reply(status, reason, headers, body)


def tgi_routes() -> dict[str, Reply]:
    return {
        "/info": axum(200, "OK", compact({
            "model_id": TGI_MODEL, "model_sha": "ac2ae5fab2ce3f9f40dc79b5ca9f637430d24971",
            "model_pipeline_tag": "text-generation", "max_concurrent_requests": 128,
            "max_best_of": 2, "max_stop_sequences": 4, "max_input_tokens": 1024,
            "max_total_tokens": 2048, "validation_workers": 2, "max_client_batch_size": 4,
            "router": "text-generation-router", "version": "3.3.6-dev0",
            "sha": "db931fcf42da018a3657580c64bf2720f167f9ab", "docker_label": "sha-db931fc"})),
        "/v1/models": axum(200, "OK", compact({"object": "list", "data": [{
            "id": TGI_MODEL, "object": "model", "created": 0, "owned_by": TGI_MODEL}]})),
        "/": axum(200, "OK", b"", None),
        "/health": axum(200, "OK", b"", None),
    }


TGI_404 = axum(404, "Not Found", b"", None)

# ---- Ollama ----------------------------------------------------------------------------------
# server/routes.go (ollama/ollama @fb307609): GET / is c.String(200, "Ollama is running"),
# /api/version c.JSON {"version"}, /api/tags api.ListResponse, /v1/models openai.ListCompletion
# (owned_by = the model's namespace, "library"). Go's net/http writes Content-Type, Date,
# Content-Length; gin's unknown route is a text/plain "404 page not found".

OLLAMA_MODEL = "llama3.2:latest"


def gin(status: int, reason: str, body: bytes, content_type: str) -> Reply:
    return exact_reply(status, reason, [("Content-Type", content_type), ("Date", DATE),
                                        ("Content-Length", None)], body)


def ollama_routes() -> dict[str, Reply]:
    js = "application/json; charset=utf-8"
    return {
        "/": gin(200, "OK", b"Ollama is running", "text/plain; charset=utf-8"),
        "/api/version": gin(200, "OK", b'{"version":"0.12.3"}', js),
        "/api/tags": gin(200, "OK", compact({"models": [{
            "name": OLLAMA_MODEL, "model": OLLAMA_MODEL,
            "modified_at": "2026-11-30T10:12:03.123456789+01:00", "size": 2019393189,
            "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
            "details": {"parent_model": "", "format": "gguf", "family": "llama",
                        "families": ["llama"], "parameter_size": "3.2B",
                        "quantization_level": "Q4_K_M"}}]}), js),
        "/v1/models": gin(200, "OK", compact({"object": "list", "data": [{
            "id": OLLAMA_MODEL, "object": "model", "created": 1796202723,
            "owned_by": "library"}]}), js),
    }


OLLAMA_404 = gin(404, "Not Found", b"404 page not found", "text/plain")

# ---- llama.cpp -------------------------------------------------------------------------------
# Observed from the real llama-server built from ../shared/engines/llama.cpp-c392e509 (its
# README.md, "What this build answers"): header lines and their order, /v1/models and /props
# (the props' `params` and chat template shortened here), the JSON 404. GET / without gzip in
# Accept-Encoding is the web UI's text/plain refusal (examples/server/server.cpp).

LLAMACPP_MODEL = "tiny-llama"


def httplib(status: int, reason: str, body: bytes,
            content_type: str = "application/json; charset=utf-8") -> Reply:
    return exact_reply(status, reason, [
        ("Keep-Alive", "timeout=5, max=100"), ("Content-Type", content_type),
        ("Server", "llama.cpp"), ("Content-Length", None), ("Access-Control-Allow-Origin", "")],
        body)


def llamacpp_routes() -> dict[str, Reply]:
    return {
        "/v1/models": httplib(200, "OK", compact({"object": "list", "data": [{
            "id": LLAMACPP_MODEL, "object": "model", "created": 1796267998,
            "owned_by": "llamacpp", "meta": {"vocab_type": 1, "n_vocab": 32002,
                                             "n_ctx_train": 4096, "n_embd": 128,
                                             "n_params": 8561792, "size": 34247168}}]})),
        "/props": httplib(200, "OK", compact({
            "default_generation_settings": {
                "id": 0, "id_task": -1, "n_ctx": 1024, "speculative": False,
                "is_processing": False, "non_causal": False,
                "params": {"n_predict": -1, "seed": 4294967295,
                           "temperature": 0.800000011920929},
                "prompt": "", "next_token": {"has_next_token": True, "has_new_line": False,
                                             "n_remain": -1, "n_decoded": 0,
                                             "stopping_word": ""}},
            "total_slots": 4, "model_path": "models/tiny-llama-chatml.gguf",
            "chat_template": "{% for message in messages %}...", "bos_token": "<s>",
            "eos_token": "<|im_end|>", "build_info": "b0-unknown"})),
        "/health": httplib(200, "OK", b'{"status":"ok"}'),
        "/": httplib(200, "OK", b"Error: gzip is not supported by this browser", "text/plain"),
    }


LLAMACPP_404 = httplib(404, "Not Found",
                       b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}')

# ---- Anthropic -------------------------------------------------------------------------------
# GET /v1/models as documented (docs.anthropic.com "List Models"; anthropic-sdk-python
# types/model_info.py: type "model", id, display_name, created_at; the page's has_more,
# first_id, last_id). Header lines and the 404 envelope are illustrative (the API's error shape,
# api-dialects §8.5).

ANTHROPIC_MODEL = "claude-sonnet-4-20250514"


def anthropic(status: int, reason: str, body: bytes) -> Reply:
    return exact_reply(status, reason, [
        ("Date", DATE), ("Content-Type", "application/json"), ("Content-Length", None),
        ("Connection", "keep-alive"), ("request-id", "req_011CVgRdvTn8vWJ4m1Xe2Zqa")], body)


def anthropic_routes() -> dict[str, Reply]:
    return {"/v1/models": anthropic(200, "OK", compact({
        "data": [{"type": "model", "id": ANTHROPIC_MODEL, "display_name": "Claude Sonnet 4",
                  "created_at": "2025-05-22T00:00:00Z"}],
        "has_more": False, "first_id": ANTHROPIC_MODEL, "last_id": ANTHROPIC_MODEL}))}


ANTHROPIC_404 = anthropic(404, "Not Found", compact({
    "type": "error", "error": {"type": "not_found_error", "message": "Not Found"},
    "request_id": "req_011CVgRdvTn8vWJ4m1Xe2Zqb"}))

# ---- llama-cpp-python (a generic OpenAI-compatible server) -----------------------------------
# abetlen/llama-cpp-python llama_cpp/server/app.py get_models: owned_by "me", a `permissions`
# list; FastAPI's JSONResponse and 404. No engine fingerprint of its own.

GENERIC_MODEL = "models/qwen2.5-0.5b-instruct-q4_k_m.gguf"


def generic_routes() -> dict[str, Reply]:
    return {"/v1/models": uvicorn(200, "OK", compact({"object": "list", "data": [{
        "id": GENERIC_MODEL, "object": "model", "owned_by": "me", "permissions": []}]}))}


# ---------------------------------------------------------------------------------------------

def scripted(routes: dict[str, Reply], not_found: Reply, host: str = "127.0.0.1",
             prefix: str = "") -> ScriptedBackend:
    """A backend answering every probed route as `routes` say, the server's own 404 otherwise."""
    backend = ScriptedBackend(host)
    for path in PROBED:
        backend.route("GET", prefix + path, routes.get(path, not_found))
    return backend


IDENTIFIED = re.compile(r" info backend '[^']*' \((\S+)\): (\w+) via (.*), model '([^']*)'(?: and \d+ more)?$", re.M)


class DiscoveryCase(unittest.TestCase):
    def backend(self, routes: dict[str, Reply], not_found: Reply, **kw) -> ScriptedBackend:
        b = scripted(routes, not_found, **kw)
        self.addCleanup(b.stop)
        return b

    def proxy(self, args: list[str], **kw) -> Proxy:
        p = Proxy(["--access-log", "off", *args], **kw)
        self.addCleanup(p.cleanup_files)
        self.addCleanup(p.stop)
        return p

    def identified(self, proxy: Proxy) -> tuple[str, str, str]:
        """(dialect, how, model) from the proxy's log line once its probe has identified the
        backend (polled, bounded)."""
        m = wait_until(lambda: IDENTIFIED.search(proxy.stderr_text()), 10,
                       what=f"the backend probe's answer; stderr: {proxy.stderr_text()[-1500:]}")
        return m.group(2), m.group(3), m.group(4)

    def not_identified(self, proxy: Proxy) -> str:
        """The 503 message a generation request gets while the probe has no answer (polled until
        the probe's first round is in, bounded)."""
        body = {"model": "any", "prompt": "hello", "max_tokens": 3}

        def probed():
            r = post_json(proxy.port, "/v1/completions", body, timeout=5)
            self.assertEqual(r.status, 503, r.body[:500])
            message = r.json()["error"]["message"]
            return message if "GET " in message else None
        message = wait_until(probed, 10, what="a 503 with the probe's findings")
        self.assertTrue(proxy.alive())
        self.assertIsNone(IDENTIFIED.search(proxy.stderr_text()), "no dialect may be picked")
        return message

    def assert_answers(self, message: str, base: str, answers: dict[str, str]) -> None:
        """Each probed route is named with what it answered; the backend's address is not in a
        client's error body (issue 12: the operator's log has it)."""
        for path, answer in answers.items():
            self.assertIn(f"GET {path}: {answer}", message)
        self.assertNotIn(base.split("//", 1)[1], message)


class TestRealServers(DiscoveryCase):
    """Each engine is named from its own fingerprints, whatever else it answers."""

    def detect(self, routes, not_found, *args) -> tuple[str, str, str]:
        b = self.backend(routes, not_found)
        return self.identified(self.proxy(["--upstream", b.url, *args], wait_ready=False))

    def test_vllm(self):
        dialect, how, model = self.detect(vllm_routes(), FASTAPI_404)
        self.assertEqual((dialect, model), ("openai", VLLM_MODEL))
        self.assertIn('/v1/models owned_by "vllm"', how)
        self.assertIn("/version answered like vLLM", how)

    def test_sglang(self):
        dialect, how, model = self.detect(sglang_routes(), FASTAPI_404)
        self.assertEqual((dialect, model), ("sglang", SGLANG_MODEL))
        self.assertIn('owned_by "sglang"', how)
        self.assertIn("/get_model_info has model_path", how)

    def test_sglang_with_its_ollama_layer_on_the_root_is_still_sglang(self):
        # SGLANG_OLLAMA_ROOT_ROUTE=/ answers "Ollama is running" as a JSON string: not Ollama.
        dialect, how, _ = self.detect(sglang_routes(root_text="Ollama is running"), FASTAPI_404)
        self.assertEqual(dialect, "sglang")
        self.assertNotIn("Ollama", how)

    def test_tgi(self):
        dialect, how, model = self.detect(tgi_routes(), TGI_404)
        self.assertEqual((dialect, model), ("tgi", TGI_MODEL))
        self.assertIn('/info router "text-generation-router"', how)

    def test_ollama(self):
        dialect, how, model = self.detect(ollama_routes(), OLLAMA_404)
        self.assertEqual((dialect, model), ("ollama", OLLAMA_MODEL))
        self.assertIn('/ "Ollama is running"', how)

    def test_llamacpp(self):
        dialect, how, model = self.detect(llamacpp_routes(), LLAMACPP_404)
        self.assertEqual((dialect, model), ("llamacpp", LLAMACPP_MODEL))
        self.assertIn("Server: llama.cpp", how)
        self.assertIn("/props has default_generation_settings", how)

    def test_llamacpp_props_are_the_engines_own(self):
        # Issue 16 item 4: a llama.cpp client asking GET /props gets the engine's answer (its 4
        # slots, model file, chat template), not a synthesized one with total_slots 1.
        routes = llamacpp_routes()
        b = self.backend(routes, LLAMACPP_404)
        p = self.proxy(["--upstream", b.url], wait_ready=False)
        self.identified(p)
        r = request(p.port, "GET", "/props")
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertEqual(r.json(), json.loads(b"".join(routes["/props"].pieces)))
        self.assertEqual(r.json()["total_slots"], 4)
        # Another engine's props are synthesized from what infergate knows: no slot count or
        # chat template it cannot know.
        other = self.backend(vllm_routes(), FASTAPI_404)
        q = self.proxy(["--upstream", other.url], wait_ready=False)
        self.identified(q)
        props = request(q.port, "GET", "/props").json()
        self.assertEqual(props["model_path"], VLLM_MODEL)
        self.assertNotIn("total_slots", props)
        self.assertNotIn("chat_template", props)

    def test_anthropic(self):
        dialect, how, model = self.detect(anthropic_routes(), ANTHROPIC_404)
        self.assertEqual((dialect, model), ("anthropic", ANTHROPIC_MODEL))
        self.assertIn("Anthropic's shape", how)

    def test_a_model_list_and_nothing_else_is_a_generic_openai_server(self):
        dialect, how, model = self.detect(generic_routes(), FASTAPI_404)
        self.assertEqual((dialect, model), ("openai", GENERIC_MODEL))
        self.assertIn('owned_by "me"', how)
        self.assertIn("generic OpenAI-compatible server", how)


class TestNoGuess(DiscoveryCase):
    """Weak or conflicting evidence: a 503 that names every probed URL, what it answered and the
    flag to set; never a dialect picked silently."""

    def test_only_health_is_not_taken_for_vllms_demo_server(self):
        b = self.backend(vllm_demo_routes(), FASTAPI_404)
        message = self.not_identified(self.proxy(["--upstream", b.url], wait_ready=False))
        self.assert_answers(message, b.url, {
            "/v1/models": "HTTP 404", "/version": "HTTP 404", "/get_model_info": "HTTP 404",
            "/info": "HTTP 404", "/": "HTTP 404", "/api/version": "HTTP 404",
            "/props": "HTTP 404", "/health": "200"})
        self.assertIn("only GET /health answered", message)
        self.assertIn("--upstream-dialect vllm_legacy and --model NAME", message)
        self.assertIn("backends[].dialect", message)

    def test_vllms_demo_server_when_configured_serves_at_once(self):
        b = self.backend(vllm_demo_routes(), FASTAPI_404)
        # api_server.py: JSONResponse({"text": [prompt + output]}).
        b.route("POST", "/generate", uvicorn(200, "OK", compact(
            {"text": ["San Francisco is a city in Northern California"]})))
        proxy = self.proxy(["--upstream", b.url, "--upstream-dialect", "vllm_legacy",
                            "--model", "demo"], model="demo")
        r = post_json(proxy.port, "/generate", {"prompt": "San Francisco is a", "max_tokens": 8})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["text"], ["San Francisco is a city in Northern California"])

    def test_two_engines_fingerprints_at_once(self):
        # vLLM's model list next to TGI's /info (say, a path-routing gateway that mixes two
        # engines): the first fingerprint must not simply win.
        routes = {**vllm_routes(), "/info": tgi_routes()["/info"]}
        b = self.backend(routes, FASTAPI_404)
        message = self.not_identified(self.proxy(["--upstream", b.url], wait_ready=False))
        self.assertIn("more than one engine", message)
        self.assertIn('GET /v1/models owned_by "vllm" (vLLM)', message)
        self.assertIn('GET /info router "text-generation-router" (TGI)', message)
        self.assertIn("answer at the backend:", message)
        self.assertNotIn(b.url.split("//", 1)[1], message)
        self.assertIn("--upstream-dialect", message)

    def test_a_key_is_needed(self):
        # vLLM started with --api-key: /v1/* answers 401, /version and /health stay open.
        routes = {**vllm_routes(),
                  "/v1/models": uvicorn(401, "Unauthorized", b'{"error":"Unauthorized"}')}
        b = self.backend(routes, FASTAPI_404)
        message = self.not_identified(self.proxy(["--upstream", b.url], wait_ready=False))
        self.assert_answers(message, b.url, {
            "/v1/models": "HTTP 401 (it wants a key: --api-key-env, backends[].api_key_env)",
            "/version": "vLLM's {\"version\": \"0.13.0\"}"})

    def test_answers_unlike_any_engine_are_named(self):
        # A web server's HTML page on every route: "answered, but not like X" for each.
        page = uvicorn(200, "OK", b"<!doctype html><title>Sign in</title>",
                       "text/html; charset=utf-8")
        b = self.backend({p: page for p in PROBED}, FASTAPI_404)
        message = self.not_identified(self.proxy(["--upstream", b.url], wait_ready=False))
        self.assert_answers(message, b.url, {
            "/v1/models": "200 but neither an OpenAI nor an Anthropic model list",
            "/version": "200 but not vLLM's",
            "/get_model_info": "200 but not SGLang's (no model_path)",
            "/info": "200 but not TGI's",
            "/": "200 but not Ollama's \"Ollama is running\"",
            "/api/version": "200 but not Ollama's",
            "/props": "200 but not llama.cpp's"})
        self.assertIn("set --upstream-dialect (backends[].dialect", message)

    def test_an_empty_model_list_has_no_model_to_serve(self):
        b = self.backend({"/v1/models": uvicorn(200, "OK", b'{"object":"list","data":[]}')},
                         FASTAPI_404)
        message = self.not_identified(self.proxy(["--upstream", b.url], wait_ready=False))
        self.assert_answers(message, b.url, {"/v1/models": "an OpenAI model list with no model"})
        self.assertIn("--model NAME", message)

    def test_nothing_listening_names_the_url(self):
        url = f"http://127.0.0.1:{closed_port()}"
        message = self.not_identified(self.proxy(["--upstream", url], wait_ready=False))
        self.assertRegex(message, re.escape("GET /v1/models: ") + "Connection refused")
        self.assertNotIn(url.split("//", 1)[1], message)


class TestBaseUrl(DiscoveryCase):
    """`--upstream http://h:8000/v1` (OPENAI_BASE_URL's habit) reaches the server's root routes."""

    def complete(self, proxy: Proxy) -> None:
        r = post_json(proxy.port, "/v1/completions",
                      {"model": VLLM_MODEL, "prompt": "The capital of France is", "max_tokens": 3})
        self.assertEqual(r.status, 200, r.body[:500])
        self.assertEqual(r.json()["choices"][0]["text"], " Paris.")

    def test_trailing_v1_is_the_openai_base_url(self):
        b = self.backend(vllm_routes(), FASTAPI_404)
        b.route("POST", "/v1/completions", vllm_completion())
        proxy = self.proxy(["--upstream", b.url + "/v1/"], wait_ready=False)
        self.assertEqual(self.identified(proxy)[0], "openai")
        self.complete(proxy)
        self.assertEqual(len(b.requests_to("/v1/completions")), 1)
        self.assertEqual([r.path for r in b.requests if r.path.startswith("/v1/v1")], [])
        self.assertIn(f"'{b.url}/v1/' ends in /v1, the OpenAI base-URL habit", proxy.stderr_text())
        self.assertIn(f"({b.url}):", proxy.stderr_text())

    def test_a_gateway_prefix_before_v1_stays(self):
        b = self.backend(vllm_routes(), FASTAPI_404, prefix="/llm")
        b.route("POST", "/llm/v1/completions", vllm_completion())
        proxy = self.proxy(["--upstream", b.url + "/llm/v1"], wait_ready=False)
        self.assertEqual(self.identified(proxy)[0], "openai")
        self.complete(proxy)
        self.assertEqual(len(b.requests_to("/llm/v1/completions")), 1)
        self.assertEqual(len(b.requests_to("/llm/v1/models")), 1)


class TestReprobe(DiscoveryCase):
    """A backend that went away (connections refused) and came back, as another engine serving
    another model on the same port, is probed again without restarting the proxy."""

    def test_backend_restarted_with_another_engine_and_model(self):
        a = Emulator("openai", "m1", ["--quiet"])
        self.addCleanup(a.cleanup_files)
        self.addCleanup(a.stop)
        proxy = self.proxy(["--upstream", a.url], model="m1")
        a.stop()
        body = {"model": "m1", "prompt": "hello", "max_tokens": 3}
        for _ in range(12):  # many refusals, one re-probe
            r = post_json(proxy.port, "/v1/completions", body)
            self.assertEqual(r.status, 502, r.body[:300])
            self.assertIn("refused", r.json()["error"]["message"])

        b = Process([emulator_binary(), "--listen", f"127.0.0.1:{a.port}", "--dialect", "sglang",
                     "--model", "m2"], "emulator-b")
        self.addCleanup(b.cleanup_files)
        self.addCleanup(b.stop)

        def listed():
            r = request(proxy.port, "GET", "/v1/models", timeout=2)
            return r.status == 200 and [m["id"] for m in r.json()["data"]] == ["m2"]
        wait_until(listed, 10, what="the proxy to list the restarted backend's model m2")
        r = post_json(proxy.port, "/v1/completions", {**body, "model": "m2"})
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertTrue(r.json()["choices"][0]["text"])
        log = proxy.stderr_text()
        self.assertIn("it was openai, model 'm1', it is now sglang, model 'm2'", log)
        self.assertEqual(log.count("went away: probing it again"), 1, log[-3000:])
        # One probe round reached the new backend: no probing per refused request, and none
        # once it was identified.
        probes = [line for line in b.stderr_text().splitlines()
                  if line.startswith("GET /v1/models ")]
        self.assertEqual(len(probes), 1, b.stderr_text()[-2000:])
        self.assertTrue(proxy.alive())


class TestIPv6Backend(DiscoveryCase):
    def test_host_header_brackets_the_address(self):
        try:
            b = self.backend(vllm_routes(), FASTAPI_404, host="::1")
        except OSError as e:
            self.skipTest(f"this machine has no IPv6 loopback (binding [::1] failed: {e})")
        b.route("POST", "/v1/completions", vllm_completion())
        self.assertEqual(b.url, f"http://[::1]:{b.port}")
        proxy = self.proxy(["--upstream", b.url], wait_ready=False)
        self.assertEqual(self.identified(proxy)[0], "openai")
        r = post_json(proxy.port, "/v1/completions",
                      {"model": VLLM_MODEL, "prompt": "The capital of France is", "max_tokens": 3})
        self.assertEqual(r.status, 200, r.body[:500])
        hosts = {(r.path, r.header("Host")) for r in b.requests}
        self.assertIn(("/v1/models", f"[::1]:{b.port}"), hosts)  # the probe
        self.assertIn(("/v1/completions", f"[::1]:{b.port}"), hosts)  # a request
        self.assertEqual({h for _, h in hosts}, {f"[::1]:{b.port}"})


if __name__ == "__main__":
    unittest.main()
