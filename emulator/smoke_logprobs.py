#!/usr/bin/env python3
"""Log probabilities in every dialect of infergate-emulator (docs/emulator.md, "Log
probabilities"): each server's request parameters and answer shapes, whole and streamed, and
numbers that hold together: logprobs <= 0, top lists ordered as the server orders them, the chosen
token's logprob equal to its entry in a top list, one entry per token the server lists, echo
covering the prompt, a stream's pieces adding up to the whole answer, and the same model behind
every dialect (the same prompt gives the same numbers everywhere).

usage: smoke_logprobs.py PATH/TO/infergate-emulator
Standard library only; exits non-zero on failure.
"""
import json
import math
import os
import struct
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smoke_test import FAILURES, check, request, start  # noqa: E402

PROMPT = "The capital of France is"
PROMPT_TOKENS = 5
CHAT = [{"role": "user", "content": "hi there"}]
VOCAB = ("the a of and to in is it that was for on are with as at be this from or one had by "
         "word but not what all were we when your can said there use an each which she do how "
         "their if will up other about out many then them these so some her would make like "
         "him into time has look").split()
WORDS = {" " + w for w in VOCAB}
EOS = {"id": 2}


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def sse(raw, sep="data: "):
    out = []
    for block in raw.decode().split("\n\n"):
        if block:
            assert block.startswith(sep), block
            data = block[len(sep):]
            if data != "[DONE]":
                out.append(json.loads(data))
    return out


def ndjson(raw):
    return [json.loads(line) for line in raw.decode().split("\n") if line]


def descending(values):
    return all(a >= b for a, b in zip(values, values[1:]))


def running(binary, dialect):
    return start(binary, "--dialect", dialect, "--model", "m")


def guarded(test):
    """Runs one dialect's checks; an exception (a key missing, a shape wrong) is a failure."""
    def run(*args):
        try:
            test(*args)
        except Exception:  # noqa: BLE001 - any surprise is a failed check
            check(test.__name__ + " raised", False, traceback.format_exc(limit=3))
    return run


def reference(binary):
    """The model's numbers, read from SGLang's /generate, which lists ids, logprobs and sorted
    top-5 lists for the prompt and the output: every other dialect must agree with them."""
    proc, port = running(binary, "sglang")
    try:
        body = {"text": PROMPT, "sampling_params": {"max_new_tokens": 4}, "return_logprob": True,
                "logprob_start_len": 0, "top_logprobs_num": 5, "return_text_in_logprobs": True}
        _, _, raw = request(port, "POST", "/generate", body)
        meta = json.loads(raw)["meta_info"]
        out = [{"logprob": lp, "id": i, "text": t} for lp, i, t in meta["output_token_logprobs"]]
        top = [[{"logprob": lp, "id": i, "text": t} for lp, i, t in pos]
               for pos in meta["output_top_logprobs"]]
        inp = [{"logprob": lp, "id": i, "text": t} for lp, i, t in meta["input_token_logprobs"]]
        itop = [None if pos is None else [{"logprob": lp, "id": i, "text": t} for lp, i, t in pos]
                for pos in meta["input_top_logprobs"]]
        return {"out": out, "top": top, "in": inp, "itop": itop}
    finally:
        proc.terminate()
        proc.wait()


def chat_reference(binary):
    """The chat prompt's output tokens with top-3 lists, from vLLM's chat route (its top lists
    put the chosen token first; sorted here)."""
    proc, port = running(binary, "openai")
    try:
        _, _, raw = request(port, "POST", "/v1/chat/completions",
                            {"messages": CHAT, "max_tokens": 3, "logprobs": True,
                             "top_logprobs": 3}, {"X-Emulator-Eos-After": "2"})
        return json.loads(raw)["choices"][0]["logprobs"]["content"]
    finally:
        proc.terminate()
        proc.wait()


def check_position(name, chosen_text, chosen_lp, top, sort_top=True):
    """One position: logprobs <= 0, the top list ordered, real tokens, the chosen's logprob equal
    to its entry where the list has it."""
    lps = [t[1] for t in top]
    ok = chosen_lp <= 0 and all(lp <= 0 for lp in lps)
    ok = ok and (descending(lps) if sort_top else True)
    ok = ok and all(t[0] in WORDS or t[0] in ("</s>", "", chosen_text) for t in top)
    for text, lp in top:
        if text == chosen_text:
            ok = ok and lp == chosen_lp
    check(name, ok, f"{chosen_text!r} {chosen_lp} {top}")


@guarded
def test_sglang(binary, ref):
    check("reference: 4 output tokens, 5 prompt tokens (first null)",
          len(ref["out"]) == 4 and len(ref["in"]) == PROMPT_TOKENS and
          ref["in"][0]["logprob"] is None and ref["itop"][0] is None and
          "".join(t["text"] for t in ref["in"]) == PROMPT, ref["in"])
    for k, (tok, top) in enumerate(zip(ref["out"], ref["top"])):
        check_position(f"sglang output position {k}", tok["text"], tok["logprob"],
                       [(t["text"], t["logprob"]) for t in top])
        check(f"sglang top-5 has 5 entries at {k}", len(top) == 5, top)
    for k in range(1, PROMPT_TOKENS):
        check_position(f"sglang prompt position {k}", ref["in"][k]["text"],
                       ref["in"][k]["logprob"], [(t["text"], t["logprob"]) for t in ref["itop"][k]])
    proc, port = running(binary, "sglang")
    try:
        base = {"text": PROMPT, "sampling_params": {"max_new_tokens": 4}, "return_logprob": True,
                "top_logprobs_num": 2}
        _, _, raw = request(port, "POST", "/generate", base)
        meta = json.loads(raw)["meta_info"]
        check("sglang logprob_start_len -1: no input listing, texts null",
              meta["input_token_logprobs"] == [] and meta["input_top_logprobs"] == [] and
              meta["output_token_logprobs_length"] == 4 and
              [e[:2] for e in meta["output_token_logprobs"]] ==
              [[t["logprob"], t["id"]] for t in ref["out"]] and
              all(e[2] is None for e in meta["output_token_logprobs"]), meta)
        check("sglang meta_info key order", list(meta)[:9] == [
            "id", "finish_reason", "prompt_tokens", "weight_version", "total_retractions",
            "input_token_logprobs", "output_token_logprobs", "output_token_logprobs_length",
            "input_top_logprobs"], list(meta))
        _, _, raw = request(port, "POST", "/generate", dict(base, logprob_start_len=3))
        meta = json.loads(raw)["meta_info"]
        check("sglang logprob_start_len 3: two input entries, the first null",
              [e[:2] for e in meta["input_token_logprobs"]] ==
              [[None, ref["in"][3]["id"]], [ref["in"][4]["logprob"], ref["in"][4]["id"]]] and
              meta["input_top_logprobs"][0] is None, meta["input_token_logprobs"])
        st, _, raw = request(port, "POST", "/generate", dict(base, logprob_start_len=6))
        check("sglang logprob_start_len beyond the prompt: 400", st == 400 and
              "is higher than the number of input tokens" in json.loads(raw)["error"]["message"],
              raw)
        _, _, raw = request(port, "POST", "/generate", dict(base, stream=True))
        events = sse(raw)
        lists = [e["meta_info"]["output_token_logprobs"] for e in events]
        check("sglang stream: cumulative lists, the last = the whole answer's",
              all(a == b[:len(a)] for a, b in zip(lists, lists[1:])) and
              [len(x) for x in lists] == [1, 2, 3, 4] and
              [e[:2] for e in lists[-1]] == [[t["logprob"], t["id"]] for t in ref["out"]], lists)
        _, _, raw = request(port, "POST", "/generate", {"text": PROMPT,
                                                         "sampling_params": {"max_new_tokens": 2}})
        check("sglang without return_logprob: no logprob keys",
              "input_token_logprobs" not in json.loads(raw)["meta_info"], raw)
        # The OpenAI layer.
        _, _, raw = request(port, "POST", "/v1/completions",
                            {"prompt": PROMPT, "max_tokens": 4, "logprobs": 2, "echo": True})
        lp = json.loads(raw)["choices"][0]["logprobs"]
        check("sglang oai echo: prompt tokens first (first null), offsets -1",
              lp["tokens"] == [t["text"] for t in ref["in"] + ref["out"]] and
              lp["token_logprobs"] == [t["logprob"] for t in ref["in"] + ref["out"]] and
              lp["text_offset"] == [-1] * 9 and lp["top_logprobs"][0] is None and
              lp["top_logprobs"][5] == {t["text"]: t["logprob"] for t in ref["top"][0][:2]}, lp)
        whole = json.loads(request(port, "POST", "/v1/completions",
                                   {"prompt": PROMPT, "max_tokens": 4, "logprobs": 2})[2])
        _, _, raw = request(port, "POST", "/v1/completions",
                            {"prompt": PROMPT, "max_tokens": 4, "logprobs": 2, "stream": True})
        joined = {k: [] for k in ("text_offset", "token_logprobs", "tokens", "top_logprobs")}
        for chunk in sse(raw):
            for k in joined:
                joined[k] += chunk["choices"][0]["logprobs"][k]
        check("sglang oai completions: stream pieces = whole", joined ==
              whole["choices"][0]["logprobs"], (joined, whole["choices"][0]["logprobs"]))
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": PROMPT, "max_tokens": 2, "logprobs": 0, "echo": True})
        check("sglang oai echo with logprobs 0: the KeyError 500", st == 500 and
              "'input_top_logprobs'" in json.loads(raw)["message"], raw)
        eos = {"X-Emulator-Eos-After": "2"}
        body = {"messages": CHAT, "max_tokens": 3, "logprobs": True, "top_logprobs": 3}
        whole = json.loads(request(port, "POST", "/v1/chat/completions", body, eos)[2])
        content = whole["choices"][0]["logprobs"]["content"]
        check("sglang oai chat: token, bytes, logprob, top_logprobs (EOS listed)",
              [list(e) for e in content[:1]] == [["token", "bytes", "logprob", "top_logprobs"]]
              and len(content) == 3 and content[2]["token"] == "</s>" and
              [e["logprob"] for e in content] == [e["logprob"] for e in CHAT_REF], content)
        _, _, raw = request(port, "POST", "/v1/chat/completions", dict(body, stream=True), eos)
        pieces = [e for c in sse(raw) if c["choices"] and c["choices"][0]["logprobs"]
                  for e in c["choices"][0]["logprobs"]["content"]]
        check("sglang oai chat stream: content chunks only, the EOS step's entry lost",
              pieces == content[:2], pieces)
    finally:
        proc.terminate()
        proc.wait()


@guarded
def test_vllm(binary, ref):
    proc, port = running(binary, "openai")
    try:
        body = {"prompt": PROMPT, "max_tokens": 4, "logprobs": 2}
        whole = json.loads(request(port, "POST", "/v1/completions", body)[2])["choices"][0]
        lp = whole["logprobs"]
        check("vllm completions: tokens and logprobs = the model's", lp["tokens"] ==
              [t["text"] for t in ref["out"]] and lp["token_logprobs"] ==
              [t["logprob"] for t in ref["out"]], lp)
        offsets = [0]
        for t in lp["tokens"][:-1]:
            offsets.append(offsets[-1] + len(t))
        check("vllm completions: text_offset counts the tokens", lp["text_offset"] == offsets, lp)
        for k, (tok, dct) in enumerate(zip(lp["tokens"], lp["top_logprobs"])):
            # The chosen token first, then the top 2 it does not repeat: at most 3 entries.
            want = {tok: lp["token_logprobs"][k]}
            for t in ref["top"][k][:2]:
                want.setdefault(t["text"], t["logprob"])
            check(f"vllm top dict {k}: chosen first, then the top 2", list(dct.items()) ==
                  list(want.items()) and len(dct) <= 3, (dct, want))
        _, _, raw = request(port, "POST", "/v1/completions", dict(body, stream=True))
        joined = {k: [] for k in lp}
        for chunk in sse(raw):
            for k in joined:
                joined[k] += chunk["choices"][0]["logprobs"][k]
        check("vllm completions: stream pieces = whole", joined == lp, (joined, lp))
        body = {"prompt": PROMPT, "max_tokens": 4, "logprobs": 1, "echo": True}
        whole = json.loads(request(port, "POST", "/v1/completions", body)[2])["choices"][0]
        lp = whole["logprobs"]
        check("vllm echo: text and tokens start with the prompt, its first logprob null",
              whole["text"] == PROMPT + "".join(t["text"] for t in ref["out"]) and
              lp["tokens"] == [t["text"] for t in ref["in"] + ref["out"]] and
              lp["token_logprobs"] == [t["logprob"] for t in ref["in"] + ref["out"]] and
              lp["top_logprobs"][0] is None and len(lp["text_offset"]) == 9, lp)
        pl = whole["prompt_logprobs"]
        check("vllm echo: prompt_logprobs {id: {logprob, rank, decoded_token}}, prompt first",
              pl[0] is None and len(pl) == PROMPT_TOKENS and all(
                  list(d)[0] == str(ref["in"][k]["id"]) and
                  d[str(ref["in"][k]["id"])]["logprob"] == ref["in"][k]["logprob"] and
                  list(d[str(ref["in"][k]["id"])]) == ["logprob", "rank", "decoded_token"]
                  for k, d in enumerate(pl) if k), pl)
        # lm-evaluation-harness's loglikelihood request: token ids, echo, max_tokens 1.
        ids = [[t["id"] for t in ref["in"]]]
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": ids, "max_tokens": 1, "logprobs": 1, "echo": True,
                              "temperature": 0, "seed": 1234})
        lp = json.loads(raw)["choices"][0]["logprobs"] if st == 200 else {}
        ctx = lp.get("token_logprobs", [])[1:PROMPT_TOKENS]
        greedy = [max(top, key=top.get) == tok for tok, top in
                  zip(lp.get("tokens", [])[1:PROMPT_TOKENS], lp.get("top_logprobs", [])[1:])]
        check("vllm loglikelihood request (ids, echo, max_tokens 1): prompt + 1 token",
              st == 200 and len(lp["tokens"]) == PROMPT_TOKENS + 1 and
              ctx == [t["logprob"] for t in ref["in"][1:]] and
              greedy == [t["logprob"] == max(x["logprob"] for x in ref["itop"][k + 1]) for k, t
                         in enumerate(ref["in"][1:])], raw)
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": PROMPT, "max_tokens": 0, "logprobs": 1, "echo": True})
        whole = json.loads(raw)
        check("vllm echo with max_tokens 0: the prompt only, one token counted",
              whole["choices"][0]["text"] == PROMPT and
              len(whole["choices"][0]["logprobs"]["tokens"]) == PROMPT_TOKENS and
              whole["usage"]["completion_tokens"] == 1, raw)
        _, _, raw = request(port, "POST", "/v1/completions",
                            {"prompt": PROMPT, "max_tokens": 4, "logprobs": 1, "echo": True,
                             "stream": True})
        chunks = sse(raw)
        check("vllm echo stream: the first chunk carries the prompt",
              chunks[0]["choices"][0]["text"] == PROMPT + ref["out"][0]["text"] and
              len(chunks[0]["choices"][0]["logprobs"]["tokens"]) == PROMPT_TOKENS + 1 and
              chunks[1]["choices"][0]["logprobs"]["text_offset"] == [len(ref["out"][0]["text"])],
              chunks[:2])
        eos = {"X-Emulator-Eos-After": "2"}
        body = {"messages": CHAT, "max_tokens": 3, "logprobs": True, "top_logprobs": 3}
        whole = json.loads(request(port, "POST", "/v1/chat/completions", body, eos)[2])
        content = whole["choices"][0]["logprobs"]["content"]
        check("vllm chat: token, logprob, bytes, top_logprobs; EOS listed; 3 alternatives",
              len(content) == 3 and content[2]["token"] == "</s>" and
              list(content[0]) == ["token", "logprob", "bytes", "top_logprobs"] and
              all(len(e["top_logprobs"]) == 3 and e["top_logprobs"][0]["token"] == e["token"] and
                  e["bytes"] == list(e["token"].encode()) for e in content), content)
        _, _, raw = request(port, "POST", "/v1/chat/completions", dict(body, stream=True), eos)
        pieces = [e for c in sse(raw) if c["choices"] and c["choices"][0]["logprobs"]
                  for e in c["choices"][0]["logprobs"]["content"]]
        check("vllm chat: stream pieces = whole", pieces == content, pieces)
        _, _, raw = request(port, "POST", "/v1/chat/completions",
                            {"messages": CHAT, "max_tokens": 2, "prompt_logprobs": 0})
        pl = json.loads(raw)["prompt_logprobs"]
        check("vllm chat prompt_logprobs: one entry per prompt token (8), the first null",
              len(pl) == 8 and pl[0] is None and all(len(d) == 1 for d in pl[1:]), pl)
        for name, req, want in [
                ("top_logprobs without logprobs", {"messages": CHAT, "top_logprobs": 2},
                 "`logprobs` must be set to true"),
                ("logprobs over 20", {"prompt": PROMPT, "logprobs": 21},
                 "Requested sample logprobs of 21, which is greater than max allowed: 20"),
                ("prompt_logprobs on a stream", {"prompt": PROMPT, "prompt_logprobs": 1,
                                                 "stream": True},
                 "`prompt_logprobs` are not available when `stream=True`")]:
            path = "/v1/chat/completions" if "messages" in req else "/v1/completions"
            st, _, raw = request(port, "POST", path, req)
            check(f"vllm 400: {name}", st == 400 and want in raw.decode(), raw)
    finally:
        proc.terminate()
        proc.wait()


@guarded
def test_tgi(binary, ref):
    proc, port = running(binary, "tgi")
    try:
        body = {"inputs": PROMPT, "parameters": {"max_new_tokens": 4, "details": True,
                                                 "decoder_input_details": True,
                                                 "top_n_tokens": 3}}
        d = json.loads(request(port, "POST", "/generate", body)[2])["details"]
        check("tgi tokens: the model's logprobs as f32",
              [(t["id"], f32(t["logprob"])) for t in d["tokens"]] ==
              [(t["id"], f32(t["logprob"])) for t in ref["out"]], d["tokens"])
        check("tgi top_tokens: the top 3 per token, sorted",
              [[(t["id"], f32(t["logprob"])) for t in pos] for pos in d["top_tokens"]] ==
              [[(t["id"], f32(t["logprob"])) for t in pos[:3]] for pos in ref["top"]] and
              list(d) == ["finish_reason", "generated_tokens", "seed", "prefill", "tokens",
                          "top_tokens"], d)
        check("tgi prefill: the prompt, the first logprob null",
              [(t["id"], t["logprob"] and f32(t["logprob"])) for t in d["prefill"]] ==
              [(t["id"], t["logprob"] and f32(t["logprob"])) for t in ref["in"]], d["prefill"])
        _, _, raw = request(port, "POST", "/generate_stream",
                            {"inputs": PROMPT, "parameters": {"max_new_tokens": 4,
                                                              "top_n_tokens": 3}})
        events = sse(raw, "data:")
        check("tgi stream: token and top_tokens per event = the whole answer's",
              [e["token"] for e in events] == d["tokens"] and
              [e["top_tokens"] for e in events] == d["top_tokens"] and
              list(events[0]) == ["index", "token", "top_tokens", "generated_text", "details"],
              events)
        _, _, raw = request(port, "POST", "/generate_stream",
                            {"inputs": PROMPT, "parameters": {"max_new_tokens": 2}})
        check("tgi stream without top_n_tokens: no top_tokens key",
              all("top_tokens" not in e for e in sse(raw, "data:")), raw)
        st, _, raw = request(port, "POST", "/generate",
                             {"inputs": PROMPT, "parameters": {"top_n_tokens": 6}})
        check("tgi top_n_tokens 6: 422", st == 422 and json.loads(raw)["error"] ==
              "Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 6", raw)
        eos = {"X-Emulator-Eos-After": "2"}
        body = {"messages": CHAT, "max_tokens": 3, "logprobs": True, "top_logprobs": 3}
        whole = json.loads(request(port, "POST", "/v1/chat/completions", body, eos)[2])
        content = whole["choices"][0]["logprobs"]["content"]
        check("tgi chat: token, logprob, top_logprobs (no bytes), f32 of the model",
              list(content[0]) == ["token", "logprob", "top_logprobs"] and
              [f32(e["logprob"]) for e in content] == [f32(e["logprob"]) for e in CHAT_REF] and
              content[2]["token"] == "</s>", content)
        _, _, raw = request(port, "POST", "/v1/chat/completions", dict(body, stream=True), eos)
        pieces = [e for c in sse(raw, "data:") if c["choices"]
                  for e in c["choices"][0]["logprobs"]["content"]]
        check("tgi chat: stream pieces = whole", pieces == content, pieces)
    finally:
        proc.terminate()
        proc.wait()


@guarded
def test_llamacpp(binary, ref):
    proc, port = running(binary, "llamacpp")
    try:
        body = {"prompt": PROMPT, "n_predict": 4, "n_probs": 3}
        whole = json.loads(request(port, "POST", "/completion", body)[2])
        probs = whole["completion_probabilities"]
        check("llamacpp completion_probabilities: id, token, bytes, logprob, top_logprobs",
              [(p["id"], p["token"], p["logprob"]) for p in probs] ==
              [(t["id"], t["text"], t["logprob"]) for t in ref["out"]] and
              list(probs[0]) == ["id", "token", "bytes", "logprob", "top_logprobs"] and
              [[(t["id"], t["logprob"]) for t in p["top_logprobs"]] for p in probs] ==
              [[(t["id"], t["logprob"]) for t in pos[:3]] for pos in ref["top"]], probs)
        _, _, raw = request(port, "POST", "/completion", dict(body, stream=True))
        events = sse(raw)
        pieces = [p for e in events[:-1] for p in e["completion_probabilities"]]
        check("llamacpp stream: one partial per token, pieces = whole, none on the final",
              pieces == probs and len(events) == 5 and
              "completion_probabilities" not in events[-1], events)
        stop = ref["out"][2]["text"]
        for stream in (False, True):
            _, _, raw = request(port, "POST", "/completion", dict(body, stop=[stop],
                                                                  stream=stream))
            got = ([p for e in sse(raw)[:-1] for p in e["completion_probabilities"]] if stream
                   else json.loads(raw)["completion_probabilities"])
            check(f"llamacpp stop word ({'stream' if stream else 'whole'}): "
                  f"{'every token' if stream else 'its tokens dropped'}",
                  len(got) == (3 if stream else 2) and
                  (not stream or got[2]["token"] == ""), got)
        _, _, raw = request(port, "POST", "/completion", dict(body, post_sampling_probs=True))
        probs2 = json.loads(raw)["completion_probabilities"]
        check("llamacpp post_sampling_probs: prob / top_probs = exp(logprob)",
              all(math.isclose(p["prob"], math.exp(q["logprob"]), rel_tol=1e-6) and
                  list(p) == ["id", "token", "bytes", "prob", "top_probs"]
                  for p, q in zip(probs2, probs)), probs2)
        _, _, raw = request(port, "POST", "/completion", {"prompt": PROMPT, "n_predict": 2})
        check("llamacpp without n_probs: no completion_probabilities",
              "completion_probabilities" not in json.loads(raw), raw)
        eos = {"X-Emulator-Eos-After": "2"}
        body = {"messages": CHAT, "max_tokens": 3, "logprobs": True, "top_logprobs": 3}
        whole = json.loads(request(port, "POST", "/v1/chat/completions", body, eos)[2])
        content = whole["choices"][0]["logprobs"]["content"]
        check("llamacpp chat: logprobs.content of completion_probabilities, EOS as ''",
              [e["logprob"] for e in content] == [e["logprob"] for e in CHAT_REF] and
              content[2]["token"] == "" and list(whole["choices"][0])[-1] == "logprobs", content)
        _, _, raw = request(port, "POST", "/v1/chat/completions", dict(body, stream=True), eos)
        pieces = [e for c in sse(raw) if c["choices"] and "logprobs" in c["choices"][0]
                  for e in c["choices"][0]["logprobs"]["content"]]
        check("llamacpp chat: stream pieces = whole", pieces == content, pieces)
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": PROMPT, "max_tokens": 2, "echo": True, "logprobs": 1})
        check("llamacpp /v1/completions echo: 500 Unsupported param", st == 500 and
              json.loads(raw)["error"]["message"] == "Unsupported param: echo", raw)
        st, _, raw = request(port, "POST", "/v1/completions",
                             {"prompt": PROMPT, "max_tokens": 4, "logprobs": 2})
        lp = json.loads(raw)["choices"][0]["logprobs"]["content"]
        check("llamacpp /v1/completions logprobs: 2 alternatives per token",
              [e["logprob"] for e in lp] == [t["logprob"] for t in ref["out"]] and
              all(len(e["top_logprobs"]) == 2 for e in lp), lp)
    finally:
        proc.terminate()
        proc.wait()


@guarded
def test_ollama(binary, ref):
    proc, port = running(binary, "ollama")
    try:
        body = {"model": "m", "prompt": PROMPT, "raw": True, "options": {"num_predict": 4},
                "logprobs": True, "top_logprobs": 2, "stream": False}
        whole = json.loads(request(port, "POST", "/api/generate", body)[2])
        lps = whole["logprobs"]
        check("ollama generate: token, logprob, bytes, top_logprobs at the end",
              [(e["token"], e["logprob"]) for e in lps] ==
              [(t["text"], t["logprob"]) for t in ref["out"]] and
              list(lps[0]) == ["token", "logprob", "bytes", "top_logprobs"] and
              list(whole)[-1] == "logprobs" and
              [[t["logprob"] for t in e["top_logprobs"]] for e in lps] ==
              [[t["logprob"] for t in pos[:2]] for pos in ref["top"]], whole)
        _, _, raw = request(port, "POST", "/api/generate", dict(body, stream=True))
        lines = ndjson(raw)
        pieces = [e for line in lines for e in line.get("logprobs", [])]
        check("ollama stream: each line its tokens', none on the final line, pieces = whole",
              pieces == lps and "logprobs" not in lines[-1], lines)
        eos = {"X-Emulator-Eos-After": "2"}
        body = {"model": "m", "messages": CHAT, "options": {"num_predict": 3}, "logprobs": True,
                "stream": False}
        whole = json.loads(request(port, "POST", "/api/chat", body, eos)[2])
        check("ollama chat: no entry for EOS, no top_logprobs key at 0, after done_reason",
              [e["logprob"] for e in whole["logprobs"]] ==
              [e["logprob"] for e in CHAT_REF[:2]] and whole["eval_count"] == 3 and
              all("top_logprobs" not in e for e in whole["logprobs"]) and
              list(whole).index("logprobs") == list(whole).index("done_reason") + 1, whole)
        st, _, raw = request(port, "POST", "/api/chat", dict(body, top_logprobs=21))
        check("ollama top_logprobs 21: 400", st == 400 and json.loads(raw) ==
              {"error": "top_logprobs must be between 0 and 20"}, raw)
    finally:
        proc.terminate()
        proc.wait()


@guarded
def test_others(binary, ref):
    proc, port = running(binary, "anthropic")
    try:
        st, _, raw = request(port, "POST", "/v1/messages",
                             {"model": "m", "max_tokens": 3, "messages": CHAT, "logprobs": True},
                             {"anthropic-version": "2023-06-01"})
        check("anthropic logprobs: 400 Extra inputs are not permitted", st == 400 and
              json.loads(raw)["error"]["message"] == "logprobs: Extra inputs are not permitted",
              raw)
    finally:
        proc.terminate()
        proc.wait()
    proc, port = running(binary, "vllm_legacy")
    try:
        st, _, raw = request(port, "POST", "/generate",
                             {"prompt": PROMPT, "max_tokens": 2, "logprobs": 2})
        check("vllm_legacy logprobs: accepted, the answer has only text", st == 200 and
              list(json.loads(raw)) == ["text"], raw)
        st, _, raw = request(port, "POST", "/generate",
                             {"prompt": PROMPT, "max_tokens": 2, "logprobs": 21})
        check("vllm_legacy logprobs 21: 500", st == 500, raw)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    binary = sys.argv[1]
    try:
        REF = reference(binary)
        CHAT_REF = chat_reference(binary)
    except Exception:  # noqa: BLE001
        check("reference listings", False, traceback.format_exc(limit=3))
        print("FAILED: " + ", ".join(FAILURES))
        sys.exit(1)
    for test in (test_sglang, test_vllm, test_tgi, test_llamacpp, test_ollama, test_others):
        test(binary, REF)
    print("FAILED: " + ", ".join(FAILURES) if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)
