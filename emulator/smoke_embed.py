#!/usr/bin/env python3
"""Check of infergate-emulator's embedding and tokenizer routes (docs/emulator.md, "Embeddings and
tokenizer routes").

usage: smoke_embed.py PATH/TO/infergate-emulator

Every new route of every dialect, in the dialect's own bytes and in two wire styles (the decoded
values must be equal), and their errors; the tokenizer's round trip on arbitrary text and its
agreement with the generation routes' counts; the vectors against a reference implementation of
the documented model (exact float32 values), the same in every dialect, and every number printed
the way its server's JSON writer prints it. Standard library only; exits non-zero on failure.
"""
import base64
import json
import math
import os
import random
import re
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_styles import exchange, normalize  # noqa: E402
from smoke_test import FAILURES, check, start  # noqa: E402

DIM = 16
STYLES = {
    "spaced": {"X-Emulator-Json-Style": "spaced", "X-Emulator-Interim": "100"},
    "pretty": {"X-Emulator-Json-Style": "pretty", "X-Emulator-Json-Escape": "ascii",
               "X-Emulator-Split-Writes": "5"},
}
VOLATILE = {"id", "created", "e2e_latency", "total_duration", "load_duration"}


# --- the documented model, written again ----------------------------------------------------------

M64 = (1 << 64) - 1
SALT = 0x656d62656464696e  # "embeddin"


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def token_vector(tid, dim):
    seed = splitmix64((tid & M64) ^ SALT)
    return [f32(float(splitmix64((seed + d) & M64) >> 11) * 2.0 ** -53 * 2.0 - 1.0)
            for d in range(dim)]


def reference(ids, dim=DIM, dims=0, norm=True, pooling="mean"):
    if pooling == "cls":
        v = token_vector(ids[0], dim)
    elif pooling == "last":
        v = token_vector(ids[-1], dim)
    else:
        sums = [0.0] * dim
        for t in ids:
            for d, x in enumerate(token_vector(t, dim)):
                sums[d] += x
        v = [f32(s / len(ids)) for s in sums]
    if 0 < dims < len(v):
        v = v[:dims]
    if norm:
        n = math.sqrt(sum(x * x for x in v))
        v = [f32(x / n) for x in v] if n > 0 else v
    return v


def count_words(text):
    return max(1, len(text.split()))


# --- how each server prints a float ---------------------------------------------------------------

def shortest(value, single):
    """Shortest round-trip digits (as a float32 or a double) and the decimal exponent."""
    for p in range(1, 18):
        s = "%.*e" % (p - 1, value)
        if (f32(float(s)) if single else float(s)) == value:
            mantissa, exp = s.split("e")
            digits = mantissa.replace("-", "").replace(".", "").rstrip("0") or "0"
            return digits, int(exp)
    raise AssertionError(value)


def fixed(digits, exp, dot_zero):
    n = len(digits)
    if exp >= 0:
        if n - 1 <= exp:
            return digits + "0" * (exp - (n - 1)) + (".0" if dot_zero else "")
        return digits[:exp + 1] + "." + digits[exp + 1:]
    return "0." + "0" * (-exp - 1) + digits


def exponent_form(digits, exp, plus, width):
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sign = "-" if exp < 0 else ("+" if plus else "")
    return mant + "e" + sign + str(abs(exp)).rjust(width, "0")


def printed(value, style):
    """`value` (a float32 value) as the style's writer prints it."""
    go = style in ("go32", "go64")
    if value == 0:
        return ("-0" if math.copysign(1, value) < 0 else "0") + ("" if go else ".0")
    single = style in ("go32", "rust")
    digits, exp = shortest(value, single)
    sign = "-" if value < 0 else ""
    a = abs(value)
    is_fixed = {
        "python": -4 <= exp < 16,
        "orjson": -5 <= exp <= 15,
        "nlohmann": -4 <= exp <= 14,
        "go32": not (a < f32(1e-6) or a >= 1e21),
        "go64": not (a < 1e-6 or a >= 1e21),
        "rust": -6 <= exp <= 12,
    }[style]
    if is_fixed:
        return sign + fixed(digits, exp, not go)
    if style == "rust":
        return sign + exponent_form(digits, exp, False, 1)
    if go:
        return sign + exponent_form(digits, exp, True, 1 if exp < 0 else 2)
    return sign + exponent_form(digits, exp, True, 2)


class Num(str):
    """A number as written in the body."""


def load_raw(body):
    return json.loads(body, parse_float=Num, parse_int=Num)


def vector_numbers(value, out):
    """The numbers of every vector (a list of numbers) in a parsed body."""
    if isinstance(value, list) and len(value) > 1 and all(isinstance(v, Num) for v in value):
        out.extend(str(v) for v in value)
    elif isinstance(value, list):
        for v in value:
            vector_numbers(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            vector_numbers(v, out)
    return out


def check_printing(name, vectors_raw, style):
    """Every number of the raw vectors is its float32 value as `style` prints it."""
    bad, small = [], 0
    for token in vectors_raw:
        value = f32(float(token))
        small += "e" in token
        if printed(value, style) != token or float(token) != float(printed(value, style)):
            bad.append((token, printed(value, style)))
    check(f"{name}: {len(vectors_raw)} numbers printed as {style} prints a float32", not bad,
          bad[:5])
    return small


# --- HTTP ----------------------------------------------------------------------------------------

def post(port, path, body=None, headers=None, raw=None, method="POST"):
    a = exchange(port, method, path, body, headers, raw)
    return a.status, a.headers, a.body


def jpost(port, path, body=None, headers=None, raw=None, method="POST"):
    st, hd, raw_body = post(port, path, body, headers, raw, method)
    try:
        return st, hd, json.loads(raw_body) if raw_body else None, raw_body
    except ValueError:
        return st, hd, raw_body.decode("utf-8", "replace"), raw_body


def floats_b64(text, fmt="<f"):
    data = base64.b64decode(text)
    size = struct.calcsize(fmt)
    return [struct.unpack(fmt, data[i:i + size])[0] for i in range(0, len(data), size)]


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def styled_equal(name, port, path, body):
    """The answer in each style decodes to the same values as the compact one."""
    base = exchange(port, "POST", path, body)
    want = strip(normalize(json.loads(base.body)))
    for style, headers in STYLES.items():
        a = exchange(port, "POST", path, body, headers)
        got = strip(normalize(json.loads(a.body)))
        text = a.body.decode("ascii" if style == "pretty" else "utf-8")
        shows = (", " in text or ": " in text) if style == "spaced" else "\n" in text
        check(f"{name}: {style} style, same values", a.status == base.status and got == want,
              (a.status, base.status))
        check(f"{name}: {style} style on the wire", shows and
              (style != "spaced" or [s for s, _ in a.interim] == [100]) and
              (style != "pretty" or (a.chunks is None and a.recvs >= 1)))


class Emulator:
    def __init__(self, binary, *args):
        self.proc, self.port = start(binary, *args)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def ids_of(port, text):
    st, _, d, _ = jpost(port, "/tokenize", {"prompt": text})
    assert st == 200, (st, d)
    return d["tokens"]


# --- tokenizer -----------------------------------------------------------------------------------

TEXTS = ["", " ", "  \n\t ", "Hello  world", "hello world\n", "  leading and trailing  ",
         "m\u00e9/x\U0001f600 \u65e5\u672c\u8a9e  caf\u00e9", "The capital of France is",
         "<|im_start|>user\nhi<|im_end|><|im_start|>assistant", "<s>x</s> <unk> <|im_end|>",
         "tabs\tand\r\nnewlines\n\n", "the a of and"]


def random_texts(n, seed=7):
    rng = random.Random(seed)
    pieces = ["a", "word", " ", "  ", "\n", "\t", "\r\n", "\u00e9", "\U0001f600", "\u65e5",
              "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<", "|", "x<s", " the", "0.5"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 24))) for _ in range(n)]


def test_tokenizer(binary):
    vllm = Emulator(binary, "--model", "m")
    sgl = Emulator(binary, "--dialect", "sglang", "--model", "m")
    llama = Emulator(binary, "--dialect", "llamacpp", "--model", "m")
    tei = Emulator(binary, "--dialect", "tei", "--model", "m")
    tgi = Emulator(binary, "--dialect", "tgi", "--model", "m")
    try:
        texts = TEXTS + random_texts(60)
        broken = []
        for text in texts:
            st, _, tok, _ = jpost(vllm.port, "/tokenize", {"prompt": text,
                                                           "return_token_strs": True})
            st2, _, det, _ = jpost(vllm.port, "/detokenize", {"tokens": tok["tokens"]})
            if st != 200 or st2 != 200 or det["prompt"] != text or \
                    "".join(tok["token_strs"]) != text or tok["count"] != len(tok["tokens"]):
                broken.append((text, tok, det))
        check(f"vLLM /tokenize + /detokenize give back {len(texts)} texts byte for byte",
              not broken, broken[:3])

        specials = ("<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>")
        plain = [t for t in texts if not any(s in t for s in specials)]
        counts = []
        for text in plain:
            got = len(ids_of(vllm.port, text))
            if got != count_words(text):
                counts.append((text, got))
        check(f"tokenizer counts = the generation routes' word counts ({len(plain)} texts)",
              not counts, counts[:3])
        for text in ["The capital of France is", "  spaced   out words  ", "x"]:
            st, _, d, _ = jpost(vllm.port, "/v1/completions", {"prompt": text, "max_tokens": 1})
            check(f"/tokenize count = /v1/completions prompt_tokens for {text!r}",
                  d["usage"]["prompt_tokens"] == len(ids_of(vllm.port, text)), d["usage"])

        # The same tokenizer in every dialect: ids and round trips.
        sample = [TEXTS[3], TEXTS[6], TEXTS[8], TEXTS[10]]
        for text in sample:
            ids = ids_of(vllm.port, text)
            _, _, s, _ = jpost(sgl.port, "/v1/tokenize", {"prompt": text})
            _, _, s2, _ = jpost(sgl.port, "/tokenize", {"prompt": [text, "a"]})
            _, _, sd, _ = jpost(sgl.port, "/detokenize", {"tokens": ids,
                                                          "skip_special_tokens": False})
            _, _, sd2, _ = jpost(sgl.port, "/v1/detokenize", {"tokens": [ids, [100]]})
            check(f"SGLang tokenize/detokenize of {text!r}",
                  s == {"tokens": ids, "count": len(ids), "max_model_len": 4096} and
                  s2["tokens"][0] == ids and s2["count"] == [len(ids), 1] and
                  sd == {"text": text} and sd2["text"][1] == " the" and
                  not any(x in sd2["text"][0] for x in specials), (s, s2, sd, sd2))
            _, _, lt, _ = jpost(llama.port, "/tokenize", {"content": text, "with_pieces": True})
            _, _, ld, _ = jpost(llama.port, "/detokenize", {"tokens": ids})
            check(f"llama.cpp tokenize/detokenize of {text!r}",
                  [t["id"] for t in lt["tokens"]] == ids and
                  "".join(t["piece"] for t in lt["tokens"]) == text and ld == {"content": text},
                  (lt, ld))
            _, _, tt, _ = jpost(tei.port, "/tokenize", {"inputs": text})
            _, _, td, _ = jpost(tei.port, "/decode", {"ids": ids, "skip_special_tokens": False})
            ok = [t["id"] for t in tt[0]] == ids and td == [text] and all(
                (t["special"] and t["start"] is None) or
                (not t["special"] and text.encode()[t["start"]:t["stop"]].decode() == t["text"])
                for t in tt[0])
            check(f"TEI tokenize/decode of {text!r}", ok, (tt, td))
            _, _, gt, _ = jpost(tgi.port, "/tokenize", {"inputs": text})
            check(f"TGI tokenize of {text!r}",
                  [t["id"] for t in gt] == ids and
                  b"".join(text.encode()[t["start"]:t["stop"]] for t in gt) == text.encode() and
                  all(text.encode()[t["start"]:t["stop"]].decode() == t["text"] for t in gt), gt)

        # Chat: vLLM's messages, and llama.cpp's template rendered then tokenized.
        msgs = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi there"}]}]
        _, _, chat, _ = jpost(vllm.port, "/tokenize", {"messages": msgs})
        _, _, gen, _ = jpost(vllm.port, "/v1/chat/completions", {"messages": msgs,
                                                                  "max_tokens": 1})
        _, _, tmpl, _ = jpost(llama.port, "/apply-template", {"messages": msgs})
        _, _, again, _ = jpost(llama.port, "/tokenize", {"content": tmpl["prompt"]})
        check("chat tokens: vLLM messages count = chat completion prompt_tokens",
              chat["count"] == gen["usage"]["prompt_tokens"], (chat, gen["usage"]))
        check("chat tokens: llama.cpp tokenize(apply-template) = vLLM's messages tokens",
              again["tokens"] == chat["tokens"] and tmpl["prompt"] ==
              "<|im_start|>system\nbe brief<|im_end|><|im_start|>user\nhi there<|im_end|>"
              "<|im_start|>assistant", (tmpl, again, chat))
        _, _, nogen, _ = jpost(vllm.port, "/tokenize", {"messages": msgs,
                                                        "add_generation_prompt": False})
        _, _, cont, _ = jpost(vllm.port, "/tokenize", {"messages": msgs,
                                                       "add_generation_prompt": False,
                                                       "continue_final_message": True})
        check("chat tokens: add_generation_prompt false drops <|im_start|>assistant, "
              "continue_final_message the last <|im_end|>",
              nogen["tokens"] == chat["tokens"][:-2] and cont["tokens"] == chat["tokens"][:-3],
              (nogen, cont))
        st, _, both, _ = jpost(vllm.port, "/tokenize", {"messages": msgs,
                                                        "continue_final_message": True})
        check("vLLM: continue_final_message with add_generation_prompt is a 400",
              st == 400 and "Cannot set both" in both["error"]["message"], both)

        # Byte tokens and unknown ids.
        _, _, bt, _ = jpost(llama.port, "/tokenize", {"content": ["hi", 256 + 0xE2, " x"],
                                                      "with_pieces": True})
        check("llama.cpp with_pieces: a byte token's piece is a byte list",
              bt["tokens"][1] == {"id": 256 + 0xE2, "piece": [0xE2]} and
              bt["tokens"][0]["piece"] == "hi", bt)
        _, _, bd, raw = jpost(llama.port, "/detokenize", {"tokens": [256 + 0xE2, 100]})
        check("llama.cpp /detokenize: an invalid byte becomes U+FFFD",
              bd == {"content": "\ufffd the"}, raw)
        seq = [256 + b for b in "\u00e9".encode()]
        _, _, ok8, _ = jpost(vllm.port, "/detokenize", {"tokens": seq + [100]})
        check("byte tokens forming UTF-8 decode to the character", ok8 == {"prompt": "\u00e9 the"},
              ok8)
        _, _, unk, _ = jpost(vllm.port, "/detokenize", {"tokens": [100, 2000000001, 101]})
        check("an id the tokenizer does not know decodes to nothing",
              unk == {"prompt": " the a"}, unk)
        _, _, strs, _ = jpost(vllm.port, "/tokenize", {"prompt": "<s>a",
                                                       "return_token_strs": True})
        check("vLLM token_strs: special tokens by their strings",
              strs["tokens"][0] == 1 and strs["token_strs"] == ["<s>", "a"], strs)

        # Errors, each in its server's shape.
        st, _, e, _ = jpost(vllm.port, "/tokenize", {"model": "other", "prompt": "x"})
        check("vLLM /tokenize: unknown model 404 NotFoundError",
              st == 404 and e["error"]["type"] == "NotFoundError", (st, e))
        st, _, e, _ = jpost(vllm.port, "/tokenize", {})
        check("vLLM /tokenize: no prompt is a 400 Bad Request",
              st == 400 and e["error"]["type"] == "Bad Request" and
              "prompt" in e["error"]["message"], (st, e))
        st, _, e, _ = jpost(vllm.port, "/detokenize", {"tokens": [-1]})
        check("vLLM /detokenize: a negative id is a 400 (OverflowError)",
              st == 400 and e["error"]["type"] == "Bad Request", (st, e))
        st, _, e, _ = jpost(vllm.port, "/tokenize", {"prompt": "x"}, method="GET")
        check("vLLM /tokenize: GET is a 405", st == 405, st)
        st, _, e, _ = jpost(sgl.port, "/detokenize", {"tokens": [-1]})
        check("SGLang /detokenize: a negative id is its 500",
              st == 500 and e["type"] == "InternalServerError", (st, e))
        st, _, e, _ = jpost(tei.port, "/tokenize", {"inputs": ""})
        check("TEI /tokenize: empty input 400 Empty",
              st == 400 and e == {"error": "Input validation error: `inputs` cannot be empty",
                                  "error_type": "Empty"}, (st, e))
        st, _, e, _ = jpost(tei.port, "/decode", {"ids": []})
        check("TEI /decode: no ids 400 Empty",
              st == 400 and e["error_type"] == "Empty" and "input_ids" in e["error"], (st, e))
        st, hd, e, _ = jpost(tei.port, "/tokenize", {"input": "x"})
        check("TEI /tokenize: no `inputs` is axum's 422 plain text",
              st == 422 and hd.get("content-type", "").startswith("text/plain") and
              "missing field `inputs`" in e, (st, e))
        st, _, e, _ = jpost(tgi.port, "/tokenize", {"parameters": {}})
        check("TGI /tokenize: no `inputs` is axum's 422 plain text",
              st == 422 and "missing field `inputs`" in e, (st, e))
        st, _, e, _ = jpost(llama.port, "/apply-template", {"messages": "hi"})
        check("llama.cpp /apply-template: messages not a list is its 500",
              st == 500 and e["error"]["message"].startswith("Failed to parse messages"), e)
        st, _, e, _ = jpost(llama.port, "/tokenize", {"content": 5})
        check("llama.cpp /tokenize: a number is nlohmann's type error",
              st == 500 and "type must be string, but is number" in e["error"]["message"], e)
        st, _, e, _ = jpost(llama.port, "/tokenize", {})
        check("llama.cpp /tokenize: no content, no tokens", (st, e) == (200, {"tokens": []}), e)

        # Styles.
        styled_equal("vLLM /tokenize", vllm.port, "/tokenize", {"prompt": TEXTS[6],
                                                                "return_token_strs": True})
        styled_equal("SGLang /v1/detokenize", sgl.port, "/v1/detokenize",
                     {"tokens": ids_of(vllm.port, TEXTS[6])})
        styled_equal("llama.cpp /tokenize", llama.port, "/tokenize", {"content": TEXTS[6],
                                                                       "with_pieces": True})
        styled_equal("TEI /tokenize", tei.port, "/tokenize", {"inputs": [TEXTS[6], "a"]})
        styled_equal("TGI /tokenize", tgi.port, "/tokenize", {"inputs": TEXTS[6]})
    finally:
        for e in (vllm, sgl, llama, tei, tgi):
            e.stop()


# --- embeddings ----------------------------------------------------------------------------------

HELLO = "hello world"
BATCH = ["hello world", "The capital of France is", "  caf\u00e9 \U0001f600  "]


def vectors_of(dialect, d):
    """The float vectors of an answer, whatever its shape."""
    if dialect in ("openai", "sglang", "tei-openai", "llamacpp-openai"):
        return [x["embedding"] for x in d["data"]]
    if dialect == "ollama":
        return d["embeddings"]
    if dialect == "llamacpp":
        return [x["embedding"][0] for x in d]
    if dialect == "sglang-encode":
        return [x["embedding"] for x in (d if isinstance(d, list) else [d])]
    return d  # tei


class Tokens(dict):
    """Token ids of a text, asked of an emulator's /tokenize once."""

    def __init__(self, port):
        super().__init__()
        self.port = port

    def __missing__(self, text):
        self[text] = ids_of(self.port, text)
        return self[text]


def close(a, b):
    return len(a) == len(b) and all(f32(x) == f32(y) for x, y in zip(a, b))


def test_embeddings(binary):
    ref_emu = Emulator(binary, "--model", "m")  # the tokenizer's ids
    emus = {
        "openai": Emulator(binary, "--model", "m", "--embeddings", "--embedding-dim", str(DIM)),
        "sglang": Emulator(binary, "--dialect", "sglang", "--model", "m", "--embeddings",
                           "--embedding-dim", str(DIM)),
        "ollama": Emulator(binary, "--dialect", "ollama", "--model", "m", "--embeddings",
                           "--embedding-dim", str(DIM)),
        "llamacpp": Emulator(binary, "--dialect", "llamacpp", "--model", "m", "--embeddings",
                             "--embedding-dim", str(DIM)),
        "tei": Emulator(binary, "--dialect", "tei", "--model", "m", "--embedding-dim", str(DIM),
                        "--st-prompt", "query=query: ", "--st-prompt", "doc=passage: "),
    }
    try:
        port = {k: e.port for k, e in emus.items()}
        ids = Tokens(ref_emu.port)
        want = [reference(ids[t]) for t in BATCH]
        tokens = sum(len(ids[t]) for t in BATCH)

        # The same vectors everywhere, equal to the documented model's.
        answers = {
            "openai": jpost(port["openai"], "/v1/embeddings", {"input": BATCH, "model": "m"}),
            "sglang": jpost(port["sglang"], "/v1/embeddings", {"input": BATCH}),
            "sglang-encode": jpost(port["sglang"], "/encode", {"text": BATCH}),
            "ollama": jpost(port["ollama"], "/api/embed", {"model": "m", "input": BATCH}),
            "llamacpp": jpost(port["llamacpp"], "/embedding", {"content": BATCH}),
            "llamacpp-openai": jpost(port["llamacpp"], "/v1/embeddings", {"input": BATCH}),
            "tei": jpost(port["tei"], "/embed", {"inputs": BATCH}),
            "tei-openai": jpost(port["tei"], "/v1/embeddings", {"input": BATCH}),
        }
        for name, (st, _, d, raw) in answers.items():
            got = vectors_of(name, d) if st == 200 else None
            check(f"{name}: the documented model's vectors, normalised",
                  st == 200 and all(close(g, w) for g, w in zip(got, want)) and
                  len(got) == len(want), (st, d if st != 200 else got[0][:3], want[0][:3]))
        d = answers["openai"][2]
        check("vLLM: its response shape", d["object"] == "list" and d["id"].startswith("embd-") and
              d["model"] == "m" and [x["index"] for x in d["data"]] == [0, 1, 2] and
              list(d["data"][0]) == ["index", "object", "embedding"] and
              d["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens,
                             "completion_tokens": 0, "prompt_tokens_details": None}, d)
        d = answers["sglang"][2]
        check("SGLang: its response shape (the model path, reasoning_tokens)",
              list(d) == ["data", "model", "object", "usage"] and d["model"] == "m" and
              d["usage"]["prompt_tokens"] == tokens and d["usage"]["reasoning_tokens"] == 0, d)
        d = answers["sglang-encode"][2]
        check("SGLang /encode: a list of {embedding, meta_info}",
              isinstance(d, list) and d[1]["meta_info"]["prompt_tokens"] == len(ids[BATCH[1]]) and
              d[0]["meta_info"]["finish_reason"] == {"type": "length", "length": 0}, d)
        d = answers["ollama"][2]
        check("Ollama /api/embed: its response shape",
              d["model"] == "m" and d["prompt_eval_count"] == tokens and
              d["total_duration"] > 0 and d["load_duration"] > 0, d)
        d = answers["llamacpp-openai"][2]
        check("llama.cpp /v1/embeddings: its response shape",
              list(d) == ["model", "object", "usage", "data"] and d["model"] == "gpt-3.5-turbo" and
              d["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens} and
              list(d["data"][0]) == ["embedding", "index", "object"], d)
        d = answers["tei-openai"][2]
        check("TEI /v1/embeddings: its response shape",
              list(d) == ["object", "data", "model", "usage"] and d["model"] == "m" and
              list(d["data"][0]) == ["object", "embedding", "index"], d)
        st, hd, _, _ = answers["tei"]
        check("TEI /embed: x-compute headers",
              hd.get("x-compute-tokens") == str(tokens) and hd.get("x-compute-type") and
              hd.get("x-compute-characters") == str(sum(len(t) for t in BATCH)), hd)

        # Deterministic: again the same bytes of vectors; another text another vector.
        again = jpost(port["openai"], "/v1/embeddings", {"input": BATCH})[2]
        check("vectors are deterministic", vectors_of("openai", again) ==
              vectors_of("openai", answers["openai"][2]))
        check("different texts, different vectors", len({tuple(v) for v in want}) == len(want))
        one = jpost(port["openai"], "/v1/embeddings", {"input": ids[HELLO]})[2]
        check("token ids embed as their text does",
              close(vectors_of("openai", one)[0], want[0]), one)
        lists = jpost(port["openai"], "/v1/embeddings", {"input": [ids[t] for t in BATCH]})[2]
        check("lists of token ids embed as their texts do",
              all(close(g, w) for g, w in zip(vectors_of("openai", lists), want)))

        # Numbers as each server prints them (a wide vector, to reach the exponent forms).
        wide = Emulator(binary, "--model", "m", "--embeddings", "--embedding-dim", "2048")
        wide_sgl = Emulator(binary, "--dialect", "sglang", "--model", "m", "--embeddings",
                            "--embedding-dim", "2048")
        wide_ol = Emulator(binary, "--dialect", "ollama", "--model", "m", "--embeddings",
                           "--embedding-dim", "2048")
        wide_ll = Emulator(binary, "--dialect", "llamacpp", "--model", "m", "--embedding-dim",
                           "2048")
        wide_tei = Emulator(binary, "--dialect", "tei", "--model", "m", "--embedding-dim", "2048")
        try:
            texts = [f"sample {i} of the wide vectors" for i in range(8)]
            cases = [
                ("vLLM", wide.port, "/v1/embeddings", {"input": texts}, "python"),
                ("SGLang /v1/embeddings", wide_sgl.port, "/v1/embeddings", {"input": texts},
                 "orjson"),
                ("SGLang /encode", wide_sgl.port, "/encode", {"text": texts}, "python"),
                ("Ollama /api/embed", wide_ol.port, "/api/embed", {"model": "m", "input": texts},
                 "go32"),
                ("Ollama /api/embeddings", wide_ol.port, "/api/embeddings",
                 {"model": "m", "prompt": texts[0]}, "go64"),
                ("llama.cpp /embedding", wide_ll.port, "/embedding", {"content": texts},
                 "nlohmann"),
                ("TEI /embed", wide_tei.port, "/embed", {"inputs": texts}, "rust"),
            ]
            exponent_forms = 0
            for name, p, path, body, style in cases:
                st, _, raw = post(p, path, body)
                exponent_forms += check_printing(name, vector_numbers(load_raw(raw), []), style)
            check("the wide vectors reach the exponent forms", exponent_forms > 0, exponent_forms)
        finally:
            for e in (wide, wide_sgl, wide_ol, wide_ll, wide_tei):
                e.stop()

        test_vllm_embeddings(binary, port["openai"], ids)
        test_sglang_embeddings(binary, port["sglang"], ids)
        test_ollama_embeddings(binary, port["ollama"], ids)
        test_llamacpp_embeddings(binary, port["llamacpp"], ids)
        test_tei(binary, port["tei"], ids)

        # Faults: the non-stream ones, in each server's error shape.
        routes = [("openai", "/v1/embeddings", {"input": HELLO}, lambda d: d["error"]["code"]),
                  ("sglang", "/v1/embeddings", {"input": HELLO}, lambda d: d["code"]),
                  ("sglang", "/encode", {"text": HELLO}, lambda d: 503),
                  ("ollama", "/api/embed", {"model": "m", "input": HELLO},
                   lambda d: 503 if "error" in d else 0),
                  ("llamacpp", "/v1/embeddings", {"input": HELLO},
                   lambda d: d["error"]["code"]),
                  ("tei", "/embed", {"inputs": HELLO}, lambda d: 503 if "error_type" in d else 0)]
        for dialect, path, body, code in routes:
            st, _, d, _ = jpost(port[dialect], path, body, {"X-Emulator-Fault": "status:503"})
            check(f"{dialect} {path}: a status fault answers in the server's shape",
                  st == 503 and code(d) == 503, (st, d))
            got, how = cut_answer(port[dialect], path, body, "close_midstream")
            head, _, rest = got.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: (\d+)", head).group(1))
            check(f"{dialect} {path}: close_midstream sends half the body, then FIN",
                  how == "eof" and 0 < len(rest) < length, (how, len(rest), length))

        # Wire styles: the same values in other layouts.
        styled_equal("vLLM /v1/embeddings", port["openai"], "/v1/embeddings", {"input": BATCH})
        styled_equal("SGLang /v1/embeddings", port["sglang"], "/v1/embeddings", {"input": BATCH})
        styled_equal("SGLang /encode", port["sglang"], "/encode", {"text": HELLO})
        styled_equal("Ollama /api/embed", port["ollama"], "/api/embed", {"model": "m",
                                                                         "input": BATCH})
        styled_equal("Ollama /api/embeddings", port["ollama"], "/api/embeddings",
                     {"model": "m", "prompt": HELLO})
        styled_equal("llama.cpp /embeddings", port["llamacpp"], "/embeddings", {"input": BATCH})
        styled_equal("llama.cpp /v1/embeddings", port["llamacpp"], "/v1/embeddings",
                     {"input": BATCH, "encoding_format": "base64"})
        styled_equal("TEI /embed", port["tei"], "/embed", {"inputs": BATCH})
        styled_equal("TEI /v1/embeddings", port["tei"], "/v1/embeddings", {"input": BATCH})
    finally:
        ref_emu.stop()
        for e in emus.values():
            e.stop()


def cut_answer(port, path, body, fault):
    """A request with a mid-answer fault on a raw socket: (bytes received, how it ended)."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
              f"X-Emulator-Fault: {fault}\r\n\r\n".encode() + data)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got, "eof"
            got += chunk
    except ConnectionResetError:
        return got, "reset"
    except socket.timeout:
        return got, "timeout"
    finally:
        s.close()


def error_of(d):
    return d["error"]["message"] if isinstance(d, dict) and isinstance(d.get("error"), dict) \
        else d


def test_vllm_embeddings(binary, port, ids):
    want = reference(ids[HELLO])
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "encoding_format": "base64"})
    check("vLLM base64: little-endian float32 of the same values",
          st == 200 and close(floats_b64(d["data"][0]["embedding"]), want), d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "encoding_format": "base64",
                                                 "endianness": "big"})
    check("vLLM base64 big-endian", close(floats_b64(d["data"][0]["embedding"], ">f"), want), d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "encoding_format": "base64",
                                                 "embed_dtype": "float16"})
    halves = floats_b64(d["data"][0]["embedding"], "<e")
    check("vLLM base64 float16", len(halves) == DIM and all(
        abs(h - w) <= 1e-3 for h, w in zip(halves, want)), (halves[:3], want[:3]))
    st, hd, raw = post(port, "/v1/embeddings", {"input": [HELLO, "a"],
                                                "encoding_format": "bytes"})
    meta = json.loads(hd.get("metadata", "{}"))
    values = [struct.unpack("<f", raw[i:i + 4])[0] for i in range(0, len(raw), 4)]
    check("vLLM encoding_format bytes: octet-stream and its metadata header",
          st == 200 and hd.get("content-type") == "application/octet-stream" and
          meta["data"][1] == {"index": 1, "embed_dtype": "float32", "endianness": "native",
                              "start": DIM * 4, "end": DIM * 8, "shape": [DIM]} and
          close(values[:DIM], want), (st, hd, meta))
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "normalize": False})
    check("vLLM normalize false: the pooled vector as it is",
          close(d["data"][0]["embedding"], reference(ids[HELLO], norm=False)), d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "truncate_prompt_tokens": 1})
    check("vLLM truncate_prompt_tokens keeps the last tokens",
          close(d["data"][0]["embedding"], reference(ids[HELLO][-1:])) and
          d["usage"]["prompt_tokens"] == 1, d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"messages": [{"role": "user",
                                                               "content": "hi there"}]})
    _, _, chat, _ = jpost(port, "/tokenize", {"messages": [{"role": "user", "content": "hi there"}],
                                              "add_generation_prompt": False})
    check("vLLM chat embeddings: the template's tokens (no generation prompt)",
          st == 200 and d["usage"]["prompt_tokens"] == chat["count"] and
          close(d["data"][0]["embedding"], reference(chat["tokens"])), (d, chat))
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "request_id": "abc"})
    check("vLLM: request_id names the answer", d["id"] == "embd-abc", d)
    errors = [
        ({"input": []}, 400, "please provide at least one prompt"),
        ({"input": [[]]}, 400, "please provide at least one prompt"),
        ({"input": HELLO, "model": "nope"}, 404, "The model `nope` does not exist."),
        ({"input": HELLO, "dimensions": 4}, 400, "does not support matryoshka representation"),
        ({"input": HELLO, "encoding_format": "hex"}, 400, "encoding_format"),
        ({"model": "m"}, 400, "input"),
        ({"input": HELLO, "truncate_prompt_tokens": 9999}, 400,
         "truncate_prompt_tokens value is greater than max_model_len"),
    ]
    for body, status, text in errors:
        st, _, d, _ = jpost(port, "/v1/embeddings", body)
        check(f"vLLM /v1/embeddings {json.dumps(body)}: {status} {text!r}",
              st == status and text in error_of(d), (st, d))
    st, _, d, _ = jpost(port, "/v1/completions", {"prompt": "x"})
    check("vLLM: a pooling model refuses completions",
          st == 400 and error_of(d) == "The model does not support Completions API", d)
    st, _, d, _ = jpost(port, "/v1/chat/completions", {"messages": [{"role": "user",
                                                                      "content": "x"}]})
    check("vLLM: ... and chat completions",
          st == 400 and error_of(d) == "The model does not support Chat Completions API", d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO},
                        {"X-Emulator-Fault": "status:503"})
    check("vLLM /v1/embeddings: status fault in vLLM's shape",
          st == 503 and d["error"]["code"] == 503, (st, d))

    short = Emulator(binary, "--model", "m", "--embeddings", "--max-model-len", "3",
                     "--matryoshka=4,8")
    gen = Emulator(binary, "--model", "m")
    try:
        st, _, d, _ = jpost(short.port, "/v1/embeddings", {"input": "a b c d"})
        check("vLLM: an input over the context is a 400",
              st == 400 and error_of(d) == "This model's maximum context length is 3 tokens. "
              "However, your request has 4 input tokens. Please reduce the length of the input "
              "messages.", d)
        st, _, d, _ = jpost(short.port, "/v1/embeddings", {"input": "a b", "dimensions": 4})
        check("vLLM --matryoshka: dimensions cut then normalise",
              st == 200 and close(d["data"][0]["embedding"],
                                  reference(ids["a b"], dims=4)), d)
        st, _, d, _ = jpost(short.port, "/v1/embeddings", {"input": "a", "dimensions": 5})
        check("vLLM --matryoshka=4,8: other dimensions refused",
              st == 400 and "only supports [4, 8] matryoshka dimensions" in error_of(d), d)
        st, _, d, _ = jpost(gen.port, "/v1/embeddings", {"input": HELLO})
        check("vLLM: a generative model has no Embeddings API",
              st == 400 and error_of(d) == "The model does not support Embeddings API" and
              d["error"]["type"] == "BadRequestError", d)
    finally:
        short.stop()
        gen.stop()


def test_sglang_embeddings(binary, port, ids):
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "encoding_format": "base64"})
    check("SGLang ignores encoding_format: floats",
          st == 200 and close(d["data"][0]["embedding"], reference(ids[HELLO])), d)
    errors = [
        ({"input": ""}, "Input cannot be empty"),
        ({"input": "   "}, "Input cannot be empty or whitespace only"),
        ({"input": ["a", " "]}, "Input at index 1 cannot be empty or whitespace only"),
        ({"input": [1, -2]}, "Token ID at index 1 must be non-negative"),
        ({"input": HELLO, "dimensions": 4}, "does not support matryoshka representation"),
    ]
    for body, text in errors:
        st, _, d, _ = jpost(port, "/v1/embeddings", body)
        check(f"SGLang /v1/embeddings {json.dumps(body)}: 400 {text!r}",
              st == 400 and text in d["message"] and d["object"] == "error" and
              d["type"] == "BadRequestError", (st, d))
    st, _, d, _ = jpost(port, "/v1/embeddings", {"model": "m"})
    check("SGLang /v1/embeddings: no input is FastAPI's 400", st == 400 and
          d["type"] == "Bad Request", (st, d))
    st, _, d, _ = jpost(port, "/encode", {"input_ids": ids[HELLO], "rid": "r1"})
    check("SGLang /encode: one input, one dict, its rid",
          st == 200 and d["meta_info"]["id"] == "r1" and
          close(d["embedding"], reference(ids[HELLO])), d)
    st, _, d, _ = jpost(port, "/encode", {"text": "x", "input_ids": [1]})
    check("SGLang /encode: text and input_ids together is its 400",
          st == 400 and d == {"error": {"message":
                                        "text and input_ids cannot be provided at the same time"}},
          (st, d))
    gen = Emulator(binary, "--dialect", "sglang", "--model", "m")
    try:
        for path, body in (("/v1/embeddings", {"input": HELLO}), ("/encode", {"text": HELLO})):
            st, _, d, _ = jpost(gen.port, path, body)
            msg = d["message"] if path == "/v1/embeddings" else d["error"]["message"]
            check(f"SGLang {path}: a generative model is a 400 naming --is-embedding",
                  st == 400 and "--is-embedding" in msg, (st, d))
        _, _, info, _ = jpost(gen.port, "/get_model_info", method="GET")
        check("SGLang: is_generation follows --embeddings", info["is_generation"] is True)
    finally:
        gen.stop()
    _, _, info, _ = jpost(port, "/get_model_info", method="GET")
    check("SGLang --embeddings: is_generation false", info["is_generation"] is False, info)


def test_ollama_embeddings(binary, port, ids):
    st, _, d, _ = jpost(port, "/api/embed", {"model": "m:latest", "input": HELLO,
                                             "dimensions": 4})
    check("Ollama dimensions: the first values, normalised again",
          st == 200 and close(d["embeddings"][0], reference(ids[HELLO], dims=4)), d)
    st, _, d, _ = jpost(port, "/api/embed", {"model": "m", "input": []})
    check("Ollama: no input only loads the model", (st, d) == (200, {"model": "m",
                                                                     "embeddings": []}), d)
    st, _, d, _ = jpost(port, "/api/embed", {"model": "m", "input": "a b c d e",
                                             "options": {"num_ctx": 3}})
    check("Ollama: truncated to the context (less one for BOS)",
          st == 200 and d["prompt_eval_count"] == 2 and
          close(d["embeddings"][0], reference(ids["a b c d e"][:2])), d)
    st, _, d, _ = jpost(port, "/api/embeddings", {"model": "m", "prompt": HELLO})
    check("Ollama /api/embeddings: the pooled vector, not normalised, as float64",
          st == 200 and close(d["embedding"], reference(ids[HELLO], norm=False)), d)
    st, _, d, _ = jpost(port, "/api/embeddings", {"model": "m", "prompt": ""})
    check("Ollama /api/embeddings: empty prompt", (st, d) == (200, {"embedding": []}), d)
    errors = [
        ("/api/embed", {"model": "m", "input": "a b c", "truncate": False,
                        "options": {"num_ctx": 2}}, 400, "input exceeds maximum context length"),
        ("/api/embed", {"model": "m", "input": [1]}, 400, "invalid input type"),
        ("/api/embed", {"model": "x", "input": "a"}, 404, "model 'x' not found"),
        ("/api/embed", {"model": "m", "input": "a", "dimensions": "4"}, 400,
         "json: cannot unmarshal string into Go struct field EmbedRequest.dimensions of type "
         "int"),
        ("/api/embed", {"model": "m", "input": "a", "keep_alive": "5 minutes"}, 400,
         "time: unknown unit \" minutes\" in duration \"5 minutes\""),
        ("/api/embeddings", {"prompt": "a"}, 400, "model is required"),
        ("/api/embeddings", {"model": "x", "prompt": "a"}, 404,
         "model \"x\" not found, try pulling it first"),
    ]
    for path, body, status, text in errors:
        st, _, d, _ = jpost(port, path, body)
        check(f"Ollama {path} {json.dumps(body)}: {status} {text!r}",
              st == status and d == {"error": text}, (st, d))
    st, _, d, _ = jpost(port, "/api/embed", raw=b"")
    check("Ollama: no body", (st, d) == (400, {"error": "missing request body"}), d)
    st, _, d, _ = jpost(port, "/api/generate", {"model": "m", "prompt": "hi", "stream": False})
    check("Ollama: an embedding model does not generate",
          (st, d) == (400, {"error": "\"m\" does not support generate"}), d)
    st, _, d, _ = jpost(port, "/api/show", {"model": "m"})
    check("Ollama /api/show: capabilities [embedding]", d["capabilities"] == ["embedding"], d)
    gen = Emulator(binary, "--dialect", "ollama", "--model", "m")
    try:
        for path, body in (("/api/embed", {"model": "m", "input": "a"}),
                           ("/api/embeddings", {"model": "m", "prompt": "a"})):
            st, _, d, _ = jpost(gen.port, path, body)
            check(f"Ollama {path}: a model without pooling is the runner's 500",
                  (st, d) == (500, {"error": "this model does not support embeddings"}), d)
    finally:
        gen.stop()


def test_llamacpp_embeddings(binary, port, ids):
    st, _, d, _ = jpost(port, "/embeddings", {"input": HELLO})
    check("llama.cpp /embeddings: its native array",
          st == 200 and d[0]["index"] == 0 and close(d[0]["embedding"][0],
                                                     reference(ids[HELLO])), d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"content": HELLO})
    check("llama.cpp /v1/embeddings with `content`: the native answer",
          st == 200 and isinstance(d, list), d)
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": HELLO, "encoding_format": "base64",
                                                 "model": "x"})
    item = d["data"][0]
    check("llama.cpp base64: the float32 bytes, encoding_format in the item",
          close(floats_b64(item["embedding"]), reference(ids[HELLO])) and
          list(item) == ["embedding", "index", "object", "encoding_format"] and
          d["model"] == "x", d)
    st, _, d, _ = jpost(port, "/embedding", {"content": ["hi", ids[HELLO][0]]})
    check("llama.cpp: strings and ids mixed are one prompt",
          st == 200 and len(d) == 1, d)
    errors = [
        ({}, 400, "\"input\" or \"content\" must be provided"),
        ({"content": []}, 400, "Input content cannot be empty"),
        ({"input": "x", "encoding_format": "hex"}, 400,
         "The format to return the embeddings in. Can be either float or base64"),
        ({"input": "x", "encoding_format": 3}, 500,
         "[json.exception.type_error.302] type must be string, but is number"),
        ({"input": " ".join(["a"] * 600)}, 500,
         "input is too large to process. increase the physical batch size"),
        ({"input": {"a": 1}}, 500, "\"prompt\" must be a string"),
    ]
    for body, status, text in errors:
        st, _, d, _ = jpost(port, "/embedding", body)
        check(f"llama.cpp /embedding {json.dumps(body)[:60]}: {status} {text!r}",
              st == status and text in d["error"]["message"] and d["error"]["code"] == status,
              (st, d))
    st, _, d, _ = jpost(port, "/completion", {"prompt": "hi"})
    check("llama.cpp --embeddings: completions are its 501",
          st == 501 and d["error"]["type"] == "not_supported_error" and
          "Start it without `--embeddings`" in d["error"]["message"], d)
    none = Emulator(binary, "--dialect", "llamacpp", "--model", "m", "--pooling", "none",
                    "--embedding-dim", str(DIM))
    try:
        st, _, d, _ = jpost(none.port, "/embedding", {"content": HELLO})
        check("llama.cpp --pooling none: a raw vector per token",
              st == 200 and [close(v, token_vector(t, DIM)) for v, t in
                             zip(d[0]["embedding"], ids[HELLO])] == [True] * len(ids[HELLO]),
              d)
        st, _, d, _ = jpost(none.port, "/v1/embeddings", {"input": HELLO})
        check("llama.cpp --pooling none: /v1/embeddings refused",
              st == 400 and d["error"]["message"].startswith("Pooling type 'none' is not OAI"), d)
        st, _, d, _ = jpost(none.port, "/completion", {"prompt": "hi", "n_predict": 1})
        check("llama.cpp without --embeddings still completes", st == 200, st)
    finally:
        none.stop()


def test_tei(binary, port, ids):
    st, _, d, _ = jpost(port, "/embed", {"inputs": HELLO, "normalize": False})
    check("TEI normalize false", close(d[0], reference(ids[HELLO], norm=False)), d)
    st, _, d, _ = jpost(port, "/embed", {"inputs": [ids[HELLO]]})
    check("TEI: token ids in", st == 200 and close(d[0], reference(ids[HELLO])), d)
    st, _, d, _ = jpost(port, "/embed", {"inputs": HELLO, "dimensions": 4})
    check("TEI dimensions", close(d[0], reference(ids[HELLO], dims=4)), d)
    st, _, q, _ = jpost(port, "/embed", {"inputs": HELLO, "prompt_name": "query"})
    st2, _, tok, _ = jpost(port, "/tokenize", {"inputs": HELLO, "prompt_name": "query"})
    check("TEI prompt_name: the prompt's text in front",
          st == 200 and close(q[0], reference([t["id"] for t in tok[0]])) and
          tok[0][0]["text"] == "query:", (q, tok))
    st, _, d, _ = jpost(port, "/v1/embeddings", {"input": [HELLO], "encoding_format": "base64"})
    check("TEI /v1/embeddings base64",
          close(floats_b64(d["data"][0]["embedding"]), reference(ids[HELLO])), d)
    for path in ("/", "/invocations"):
        st, _, d, _ = jpost(port, path, {"inputs": HELLO})
        check(f"TEI POST {path}: the embedding model's route", st == 200 and
              close(d[0], reference(ids[HELLO])), (st, d))
    st, _, info, _ = jpost(port, "/info", method="GET")
    check("TEI /info: its fields and model_type",
          list(info) == ["model_id", "model_sha", "model_dtype", "served_model_name",
                         "model_type", "max_concurrent_requests", "max_input_length",
                         "max_batch_tokens", "max_batch_requests", "max_client_batch_size",
                         "auto_truncate", "tokenization_workers", "version", "sha",
                         "docker_label"] and
          info["model_type"] == {"embedding": {"pooling": "mean"}} and info["model_id"] == "m",
          info)
    for path in ("/health", "/", "/ping"):
        st, _, _, raw = jpost(port, path, method="GET")
        check(f"TEI GET {path}: 200, empty", st == 200 and raw == b"", (st, raw))
    for path in ("/generate", "/v1/chat/completions", "/v1/completions", "/api/embed"):
        st, hd, _, raw = jpost(port, path, {"inputs": "x"})
        check(f"TEI {path}: axum's empty 404", st == 404 and raw == b"" and
              "content-type" not in hd, (st, raw))
    errors = [
        ("/embed", {"inputs": []}, 400, {"error": "Input validation error: `inputs` cannot be "
                                                  "empty", "error_type": "Empty"}),
        ("/embed", {"inputs": [""]}, 400, {"error": "Input validation error: `inputs` cannot be "
                                                    "empty", "error_type": "Empty"}),
        ("/embed", {"inputs": ["a", []]}, 400, {"error": "Input validation error: `inputs` "
                                                         "cannot be empty", "error_type": "Empty"}),
        ("/embed", {"inputs": ["a"] * 33}, 422, {"error": "batch size 33 > maximum allowed batch "
                                                          "size 32", "error_type": "Validation"}),
        ("/embed", {"inputs": "a", "dimensions": 0}, 422,
         {"error": "Input validation error: `dimensions` should be positive",
          "error_type": "Validation"}),
        ("/embed", {"inputs": "a", "dimensions": 99}, 422,
         {"error": "Input validation error: `dimensions` should be smaller than the maximum "
                   "embedding dimension.", "error_type": "Validation"}),
        ("/embed", {"inputs": "a", "prompt_name": "nope"}, 422,
         {"error": "Input validation error: `default-prompt-name` is set to `nope` but it was "
                   "not found in the Sentence Transformers prompts. Available prompts: "
                   "[\"query\", \"doc\"]", "error_type": "Validation"}),
        # [] is Input::Single(InputType::Ids([])) to serde: the tokenizer's check answers.
        ("/v1/embeddings", {"input": []}, 400,
         {"message": "Input validation error: `inputs` cannot be empty", "code": 400,
          "type": "Empty"}),
        ("/v1/embeddings", {"input": [""]}, 400,
         {"message": "Input validation error: `inputs` cannot be empty", "code": 400,
          "type": "Empty"}),
    ]
    for path, body, status, want in errors:
        st, _, d, _ = jpost(port, path, body)
        check(f"TEI {path} {json.dumps(body)[:50]}: {status}", (st, d) == (status, want),
              (st, d))
    for body, status, text in (({"input": "x"}, 422, "missing field `inputs`"),
                               ({"inputs": 5}, 422, "untagged enum Input"),
                               ({"inputs": "a", "truncation_direction": "up"}, 422,
                                "unknown variant `up`, expected `Left` or `Right`")):
        st, hd, d, _ = jpost(port, "/embed", body)
        check(f"TEI /embed {json.dumps(body)}: axum's {status} plain text",
              st == status and text in d and hd.get("content-type", "").startswith("text/plain"),
              (st, d))
    st, _, d, _ = jpost(port, "/embed", raw=b"{bad")
    check("TEI /embed: bad JSON is axum's 400", st == 400 and
          d.startswith("Failed to parse the request body as JSON"), d)
    short = Emulator(binary, "--dialect", "tei", "--model", "m", "--max-model-len", "3",
                     "--embedding-dim", str(DIM))
    try:
        text = "one two three four five"
        st, _, d, _ = jpost(short.port, "/embed", {"inputs": text, "truncate": False})
        check("TEI truncate false: over max_input_length is a 422",
              st == 422 and d["error"] == "Input validation error: `inputs` must have less "
              "than 3 tokens. Given: 5", d)
        st, _, right, _ = jpost(short.port, "/embed", {"inputs": text})
        st2, _, left, _ = jpost(short.port, "/embed", {"inputs": text,
                                                       "truncation_direction": "Left"})
        tids = [t["id"] for t in jpost(short.port, "/tokenize", {"inputs": text})[2][0]]
        check("TEI truncation: right keeps the first tokens, left the last",
              close(right[0], reference(tids[:3])) and close(left[0], reference(tids[-3:])),
              (right, left))
    finally:
        short.stop()


def test_generation_only(binary):
    """Servers without embeddings answer their own 404; --embeddings is refused for them."""
    cases = [("tgi", "/v1/embeddings", 404, b""), ("tgi", "/embed", 404, b""),
             ("vllm_legacy", "/v1/embeddings", 404, b'{"detail":"Not Found"}'),
             ("anthropic", "/v1/embeddings", 404, None)]
    for dialect, path, status, body in cases:
        emu = Emulator(binary, "--dialect", dialect)
        try:
            st, _, raw = post(emu.port, path, {"input": "x"})
            check(f"{dialect} {path}: {status} as the server answers",
                  st == status and (body is None or raw == body), (st, raw))
        finally:
            emu.stop()
    for dialect in ("tgi", "vllm_legacy", "anthropic"):
        proc = subprocess.run([binary, "--dialect", dialect, "--embeddings"],
                              capture_output=True, text=True, timeout=10)
        check(f"--embeddings refused for {dialect}", proc.returncode == 2 and
              "no embedding routes" in proc.stderr, proc.stderr)
    proc = subprocess.run([binary, "--pooling", "none"], capture_output=True, text=True,
                          timeout=10)
    check("--pooling none refused outside llamacpp", proc.returncode == 2, proc.stderr)


def test_generic(binary):
    """--openai-flavor generic: the OpenAI API's own /v1/models and /v1/embeddings."""
    ref = Emulator(binary, "--model", "m")
    emu = Emulator(binary, "--openai-flavor", "generic", "--model", "m", "--embedding-dim",
                   str(DIM))
    mat = Emulator(binary, "--openai-flavor", "generic", "--model", "m", "--embedding-dim",
                   str(DIM), "--matryoshka")
    try:
        ids = Tokens(ref.port)
        st, _, d, _ = jpost(emu.port, "/v1/models", method="GET")
        check("generic /v1/models: the OpenAI API's model object",
              d["data"] == [{"id": "m", "object": "model", "created": 1705948997,
                             "owned_by": "system"}], d)
        st, _, d, raw = jpost(emu.port, "/v1/embeddings", {"model": "m", "input": BATCH})
        check("generic /v1/embeddings: the OpenAI API's shape, the model's vectors",
              st == 200 and list(d) == ["object", "data", "model", "usage"] and
              list(d["data"][0]) == ["object", "index", "embedding"] and
              d["usage"] == {"prompt_tokens": sum(len(ids[t]) for t in BATCH),
                             "total_tokens": sum(len(ids[t]) for t in BATCH)} and
              all(close(x["embedding"], reference(ids[t])) for x, t in zip(d["data"], BATCH)),
              d)
        check_printing("generic /v1/embeddings", vector_numbers(load_raw(raw), []), "python")
        st, _, d, _ = jpost(emu.port, "/v1/embeddings", {"model": "m", "input": HELLO,
                                                         "encoding_format": "base64"})
        check("generic base64", close(floats_b64(d["data"][0]["embedding"]),
                                      reference(ids[HELLO])), d)
        st, _, d, _ = jpost(mat.port, "/v1/embeddings", {"model": "m", "input": HELLO,
                                                         "dimensions": 4})
        check("generic --matryoshka: dimensions", close(d["data"][0]["embedding"],
                                                        reference(ids[HELLO], dims=4)), d)
        invalid_input = ("'$.input' is invalid. Please check the API reference: "
                         "https://platform.openai.com/docs/api-reference.")
        errors = [
            ({"input": "a"}, 400, "you must provide a model parameter", None),
            ({"model": "x", "input": "a"}, 404,
             "The model `x` does not exist or you do not have access to it.", "model_not_found"),
            ({"model": "m", "input": ["a", ""]}, 400, invalid_input, None),
            ({"model": "m", "input": []}, 400, invalid_input, None),
            ({"model": "m", "input": "a", "dimensions": 4}, 400,
             "This model does not support specifying dimensions.", None),
        ]
        for body, status, message, code in errors:
            st, _, d, _ = jpost(emu.port, "/v1/embeddings", body)
            check(f"generic /v1/embeddings {json.dumps(body)}: {status}",
                  st == status and d == {"error": {"message": message,
                                                   "type": "invalid_request_error",
                                                   "param": None, "code": code}}, (st, d))
        for method, path in (("POST", "/tokenize"), ("GET", "/version")):
            st, _, d, _ = jpost(emu.port, path, {"prompt": "x"} if method == "POST" else None,
                                method=method)
            check(f"generic {method} {path}: the API's 404",
                  st == 404 and d["error"]["message"] == f"Invalid URL ({method} {path})", d)
        st, _, _, raw = jpost(emu.port, "/health", method="GET")
        check("generic /health: 200", st == 200, st)
        st, _, d, _ = jpost(emu.port, "/v1/completions", {"model": "m", "prompt": "hi",
                                                          "max_tokens": 2})
        check("generic: generation answered", st == 200 and d["usage"]["completion_tokens"] == 2,
              d)
        styled_equal("generic /v1/embeddings", emu.port, "/v1/embeddings",
                     {"model": "m", "input": BATCH})
        proc = subprocess.run([binary, "--dialect", "sglang", "--openai-flavor", "generic"],
                              capture_output=True, text=True, timeout=10)
        check("--openai-flavor refused outside the openai dialect", proc.returncode == 2,
              proc.stderr)
    finally:
        for e in (ref, emu, mat):
            e.stop()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    test_tokenizer(binary)
    test_embeddings(binary)
    test_generic(binary)
    test_generation_only(binary)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
