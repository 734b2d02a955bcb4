"""Every client dialect against every backend dialect, checked against the backend itself.

The emulator is deterministic, so for each case the backend is also asked directly, in its own
dialect, and the proxy's translated answer must carry the same text, token counts and the
equivalent finish reason.
"""

from __future__ import annotations

import unittest

from checks import StreamChecks, make_body
from harness import (OTHER_WIRE_STYLE, Emulator, Proxy, Ref, direct_chat, direct_raw, post_json,
                     request, start,
                     stream, token_id, words)

GEN = "/generate"
CMPL = "/v1/completions"
CHAT = "/v1/chat/completions"


class _Matrix(StreamChecks):
    DIALECT = ""
    MODEL = ""
    ALIAS = "foo"
    SLASH_ALIAS = "org/alias-two"  # model ids may contain '/'

    EMU_ARGS: list[str] = []  # the emulator's wire style (harness.OTHER_WIRE_STYLE)

    @classmethod
    def setUpClass(cls):
        cls.emu = start(cls, Emulator, cls.DIALECT, cls.MODEL, ["--quiet", *cls.EMU_ARGS])
        cls.proxy = start(cls, Proxy, ["--upstream", cls.emu.url,
                                       "--alias", f"{cls.ALIAS}={cls.MODEL}",
                                       "--alias", f"{cls.SLASH_ALIAS}={cls.MODEL}"],
                          model=cls.MODEL)
        cls.port = cls.proxy.port

    # ---- helpers -----------------------------------------------------------------------------

    def ok(self, path, body, headers=None):
        r = post_json(self.port, path, body, headers)
        self.assertEqual(r.status, 200, f"POST {path} {body} -> {r.status} {r.body[:500]!r}")
        self.assertTrue((r.header("content-type") or "").startswith("application/json"),
                        r.headers)
        return r.json()

    def stop_word(self, prompt: str, max_tokens: int = 12, position: int = 4) -> str:
        """A stop string the backend will hit: the word it generates at `position`."""
        full = direct_raw(self.emu, prompt, max_tokens)[0].text
        return " " + full.split()[position]

    def expected_usage(self, refs: list[Ref], n: int) -> tuple[int, int]:
        prompt = sum(refs[i].prompt_tokens for i in range(0, len(refs), n))
        return prompt, sum(r.completion_tokens for r in refs)

    def assert_completion(self, doc, refs: list[Ref], n: int = 1, model: str | None = None):
        self.assertEqual(doc.get("object"), "text_completion", doc)
        self.assertEqual(doc.get("model"), model or self.MODEL)
        self.assertIsInstance(doc.get("id"), str)
        self.assertTrue(doc["id"], "empty id")
        self.assertIsInstance(doc.get("created"), int)
        choices = sorted(doc["choices"], key=lambda c: c["index"])
        self.assertEqual([c["index"] for c in choices], list(range(len(refs))))
        for c, ref in zip(choices, refs):
            self.assertEqual(c["text"], ref.text, f"choice {c['index']}")
            self.assertEqual(c["finish_reason"], ref.finish, f"choice {c['index']}")
        self.assert_usage(doc["usage"], *self.expected_usage(refs, n))

    # ---- SGLang /generate, non-streaming -------------------------------------------------------

    def test_generate_length(self):
        prompt = "The quick brown fox jumps"
        (ref,) = direct_raw(self.emu, prompt, 7)
        self.assertEqual(ref.finish, "length")
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 7,
                                                                "temperature": 0}})
        self.assertIsInstance(doc, dict)
        self.assertNotIn("model", doc)
        self.assert_sglang_item(doc, ref)
        self.assertIsInstance(doc["meta_info"]["id"], str)
        self.assertTrue(doc["meta_info"]["id"])

    def test_generate_stop_string(self):
        prompt = "stop strings are reported back"
        stop = self.stop_word(prompt)
        (ref,) = direct_raw(self.emu, prompt, 12, stop=[stop])
        self.assertEqual((ref.finish, ref.matched), ("stop", stop))
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 12,
                                                                "stop": [stop]}})
        self.assert_sglang_item(doc, ref)

    def test_generate_eos(self):
        prompt = "end of sequence after three"
        hdr = {"X-Emulator-Eos-After": "3"}
        (ref,) = direct_raw(self.emu, prompt, 10, headers=hdr)
        self.assertEqual(ref.finish, "stop")
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 10}}, hdr)
        self.assert_sglang_item(doc, ref)

    def test_generate_batch_text(self):
        prompts = ["first prompt of the batch", "second one"]
        refs = direct_raw(self.emu, prompts, 5)
        doc = self.ok(GEN, {"text": prompts, "sampling_params": {"max_new_tokens": 5}})
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 2)
        for i, (item, ref) in enumerate(zip(doc, refs)):
            self.assert_sglang_item(item, ref, f"item {i}")
        self.assertNotEqual(doc[0]["meta_info"]["id"], doc[1]["meta_info"]["id"])

    def test_generate_input_ids_single(self):
        ids = [11, 12, 13, 14, 15]
        (ref,) = direct_raw(self.emu, ids, 6, ids=True)
        self.assertEqual(ref.prompt_tokens, 5)
        doc = self.ok(GEN, {"input_ids": ids, "sampling_params": {"max_new_tokens": 6}})
        self.assertIsInstance(doc, dict)
        self.assert_sglang_item(doc, ref)

    def test_generate_input_ids_batch(self):
        ids = [[21, 22, 23], [31, 32, 33, 34, 35, 36, 37]]
        refs = direct_raw(self.emu, ids, 4, ids=True)
        doc = self.ok(GEN, {"input_ids": ids, "sampling_params": {"max_new_tokens": 4}})
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 2)
        for i, (item, ref) in enumerate(zip(doc, refs)):
            self.assert_sglang_item(item, ref, f"item {i}")

    def test_generate_n_with_batch(self):
        prompts = ["sampling several choices", "of two prompts at once"]
        refs = direct_raw(self.emu, prompts, 5, n=2)
        self.assertEqual(len(refs), 4)
        doc = self.ok(GEN, {"text": prompts, "sampling_params": {"max_new_tokens": 5, "n": 2}})
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 4, "expected prompts x n items, in index order")
        for i, (item, ref) in enumerate(zip(doc, refs)):
            self.assert_sglang_item(item, ref, f"item {i} (prompt {i // 2}, sample {i % 2})")

    def test_generate_n_single_prompt(self):
        prompt = "one prompt three samples"
        refs = direct_raw(self.emu, prompt, 4, n=3)
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 4, "n": 3}})
        self.assertIsInstance(doc, list, "n > 1 turns a single prompt into a batch")
        self.assertEqual(len(doc), 3)
        for i, (item, ref) in enumerate(zip(doc, refs)):
            self.assert_sglang_item(item, ref, f"item {i}")
        self.assertEqual(len({d["text"] for d in doc}), 3, "the samples should differ")

    def test_generate_batch_of_one(self):
        # A list with one prompt is still a batch: the answer is a list.
        refs = direct_raw(self.emu, ["only one in the list"], 4)
        doc = self.ok(GEN, {"text": ["only one in the list"],
                            "sampling_params": {"max_new_tokens": 4}})
        self.assertIsInstance(doc, list)
        self.assertEqual(len(doc), 1)
        self.assert_sglang_item(doc[0], refs[0])

    def test_completions_prompt_list_of_one(self):
        refs = direct_raw(self.emu, ["a list of one"], 4)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": ["a list of one"], "max_tokens": 4})
        self.assert_completion(doc, refs)

    def test_generate_stream_n_single_prompt(self):
        prompt = "streamed samples of one prompt"
        refs = direct_raw(self.emu, prompt, 4, n=2)
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 4, "n": 2}})
        last = self.check_sglang_stream(s, batch=True)
        self.assertEqual(sorted(last), [0, 1])
        for i, ref in enumerate(refs):
            self.assert_sglang_item(last[i], ref, f"index {i}")

    def test_alias_with_slash(self):
        prompt = "slash alias"
        refs = direct_raw(self.emu, prompt, 3)
        doc = self.ok(CMPL, {"model": self.SLASH_ALIAS, "prompt": prompt, "max_tokens": 3})
        self.assert_completion(doc, refs, model=self.SLASH_ALIAS)

    def test_generate_stop_token_id(self):
        prompt = "stop on a token id"
        full = direct_raw(self.emu, prompt, 12)[0].text.split()
        stop_id = token_id(full[3])
        (ref,) = direct_raw(self.emu, prompt, 12, extra={"stop_token_ids": [stop_id]})
        self.assertEqual((ref.finish, ref.matched), ("stop", stop_id))
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 12,
                                                                "stop_token_ids": [stop_id]}})
        self.assert_sglang_item(doc, ref)

    def test_generate_default_max_new_tokens_is_128(self):
        # SGLang's default budget must reach the backend explicitly (vLLM's would be 16).
        prompt = "sglang default budget"
        (ref,) = direct_raw(self.emu, prompt, 128)
        doc = self.ok(GEN, {"text": prompt})
        self.assert_sglang_item(doc, ref)
        self.assertEqual(doc["meta_info"]["completion_tokens"], 128)

    def test_generate_rid_echoed(self):
        prompt = "client request id"
        (ref,) = direct_raw(self.emu, prompt, 3)
        doc = self.ok(GEN, {"text": prompt, "rid": "itest-rid-1",
                            "sampling_params": {"max_new_tokens": 3}})
        self.assert_sglang_item(doc, ref)
        self.assertEqual(doc["meta_info"]["id"], "itest-rid-1")
        s = stream(self.port, GEN, {"text": prompt, "rid": "itest-rid-2", "stream": True,
                                    "sampling_params": {"max_new_tokens": 3}})
        for d in self.check_sglang_stream(s).values():
            self.assertEqual(d["meta_info"]["id"], "itest-rid-2")
        doc = self.ok(GEN, {"text": ["a", "b"], "rid": ["itest-rid-3", "itest-rid-4"],
                            "sampling_params": {"max_new_tokens": 3}})
        self.assertEqual([d["meta_info"]["id"] for d in doc], ["itest-rid-3", "itest-rid-4"])

    # ---- SGLang /generate, streaming -----------------------------------------------------------

    def test_generate_stream(self):
        prompt = "a streamed generation of seven"
        (ref,) = direct_raw(self.emu, prompt, 7)
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 7}})
        last = self.check_sglang_stream(s)
        self.assertEqual(list(last), [0])
        self.assert_sglang_item(last[0], ref)
        for doc in self.json_events(s):
            self.assertEqual(doc["meta_info"]["prompt_tokens"], ref.prompt_tokens,
                             "prompt_tokens on every event")
        self.assertGreaterEqual(len(self.json_events(s)), 2, "one event per token expected")

    def test_generate_stream_stop_string(self):
        prompt = "streamed stop string test"
        stop = self.stop_word(prompt, position=3)
        (ref,) = direct_raw(self.emu, prompt, 12, stop=stop)
        self.assertEqual(ref.finish, "stop")
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 12, "stop": stop}})
        last = self.check_sglang_stream(s)
        self.assert_sglang_item(last[0], ref)

    def test_generate_stream_multi_token_chunks(self):
        # Three tokens per upstream event: completion_tokens must jump by 3, and always match
        # the text sent so far (every emulator token is one word).
        prompt = "chunks of three tokens"
        hdr = {"X-Emulator-Tokens-Per-Chunk": "3"}
        (ref,) = direct_raw(self.emu, prompt, 9, headers=hdr)
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 9}}, hdr)
        last = self.check_sglang_stream(s)
        self.assert_sglang_item(last[0], ref)
        seq = [d["meta_info"]["completion_tokens"] for d in self.json_events(s)]
        self.assertEqual(seq, [3, 6, 9], f"completion_tokens per event: {seq}")
        for d in self.json_events(s):
            self.assertEqual(d["meta_info"]["completion_tokens"], words(d["text"]), d)

    def test_generate_stream_batch_and_n(self):
        prompts = ["streamed batch one", "streamed batch number two"]
        refs = direct_raw(self.emu, prompts, 5, n=2)
        s = stream(self.port, GEN, {"text": prompts, "stream": True,
                                    "sampling_params": {"max_new_tokens": 5, "n": 2}})
        last = self.check_sglang_stream(s, batch=True)
        self.assertEqual(sorted(last), [0, 1, 2, 3])
        for i, ref in enumerate(refs):
            self.assert_sglang_item(last[i], ref, f"index {i}")

    def test_generate_stream_input_ids_batch(self):
        ids = [[41, 42, 43], [51, 52]]
        refs = direct_raw(self.emu, ids, 4, ids=True)
        s = stream(self.port, GEN, {"input_ids": ids, "stream": True,
                                    "sampling_params": {"max_new_tokens": 4}})
        last = self.check_sglang_stream(s, batch=True)
        self.assertEqual(sorted(last), [0, 1])
        for i, ref in enumerate(refs):
            self.assert_sglang_item(last[i], ref, f"index {i}")

    def test_generate_stream_eos(self):
        prompt = "eos in a stream"
        hdr = {"X-Emulator-Eos-After": "2"}
        (ref,) = direct_raw(self.emu, prompt, 10, headers=hdr)
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 10}}, hdr)
        last = self.check_sglang_stream(s)
        self.assert_sglang_item(last[0], ref)

    # ---- OpenAI completions --------------------------------------------------------------------

    def test_completions_length(self):
        prompt = "OpenAI completion client"
        refs = direct_raw(self.emu, prompt, 7)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 7})
        self.assert_completion(doc, refs)

    def test_completions_default_max_tokens_is_16(self):
        prompt = "no max tokens given"
        refs = direct_raw(self.emu, prompt, 16)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt})
        self.assert_completion(doc, refs)
        self.assertEqual(doc["usage"]["completion_tokens"], 16)

    def test_completions_stop_string(self):
        prompt = "completion that stops early"
        stop = self.stop_word(prompt)
        refs = direct_raw(self.emu, prompt, 12, stop=[stop])
        self.assertEqual(refs[0].finish, "stop")
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 12,
                             "stop": [stop]})
        self.assert_completion(doc, refs)

    def test_completions_token_ids(self):
        ids = [7, 8, 9, 10]
        refs = direct_raw(self.emu, ids, 5, ids=True)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": ids, "max_tokens": 5})
        self.assert_completion(doc, refs)

    def test_completions_token_id_batch(self):
        ids = [[7, 8, 9, 10], [60, 61]]
        refs = direct_raw(self.emu, ids, 5, ids=True)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": ids, "max_tokens": 5})
        self.assert_completion(doc, refs)

    def test_completions_batch_and_n(self):
        prompts = ["batch prompt alpha", "batch prompt beta gamma"]
        refs = direct_raw(self.emu, prompts, 4, n=2)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompts, "max_tokens": 4, "n": 2})
        self.assert_completion(doc, refs, n=2)

    def test_completions_stream(self):
        prompt = "streamed completion without usage"
        (ref,) = direct_raw(self.emu, prompt, 6)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 6,
                                     "stream": True})
        texts, fins, usage = self.check_openai_stream(s, False, self.MODEL, False)
        self.assertEqual(texts, {0: ref.text})
        self.assertEqual(fins, {0: "length"})

    def test_completions_stream_usage(self):
        prompt = "streamed completion with usage"
        (ref,) = direct_raw(self.emu, prompt, 6)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 6,
                                     "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, fins, usage = self.check_openai_stream(s, False, self.MODEL, True)
        self.assertEqual(texts, {0: ref.text})
        self.assertEqual(fins, {0: "length"})
        self.assert_usage(usage, ref.prompt_tokens, ref.completion_tokens)

    def test_completions_stream_stop_string(self):
        prompt = "streamed completion stop"
        stop = self.stop_word(prompt, position=2)
        (ref,) = direct_raw(self.emu, prompt, 12, stop=stop)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 12,
                                     "stop": stop, "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, fins, usage = self.check_openai_stream(s, False, self.MODEL, True)
        self.assertEqual(texts, {0: ref.text})
        self.assertEqual(fins, {0: "stop"})
        self.assert_usage(usage, ref.prompt_tokens, ref.completion_tokens)

    def test_completions_stream_multi_token_stop(self):
        # A stop string spanning two tokens: an OpenAI stream must never show any of it, even
        # when the backend (SGLang native) reveals the first token before the match completes.
        prompt = "two token stop string"
        full = direct_raw(self.emu, prompt, 12)[0].text.split()
        stop = f" {full[3]} {full[4]}"
        (ref,) = direct_raw(self.emu, prompt, 12, stop=[stop])
        self.assertEqual(ref.finish, "stop")
        self.assertNotIn(stop.split()[0], ref.text.split()[3:], ref.text)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 12,
                                     "stop": [stop], "stream": True})
        texts, fins, _ = self.check_openai_stream(s, False, self.MODEL, False)
        self.assertEqual(texts, {0: ref.text})
        self.assertEqual(fins, {0: "stop"})

    def test_completions_stream_batch_and_n(self):
        prompts = ["stream batch x", "stream batch y z"]
        refs = direct_raw(self.emu, prompts, 4, n=2)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompts, "max_tokens": 4,
                                     "n": 2, "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, fins, usage = self.check_openai_stream(s, False, self.MODEL, True)
        self.assertEqual(texts, {r.index: r.text for r in refs})
        self.assertEqual(fins, {r.index: r.finish for r in refs})
        self.assert_usage(usage, *self.expected_usage(refs, 2))

    def test_completions_stream_token_ids(self):
        ids = [[70, 71, 72], [80]]
        refs = direct_raw(self.emu, ids, 3, ids=True)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": ids, "max_tokens": 3,
                                     "stream": True})
        texts, fins, _ = self.check_openai_stream(s, False, self.MODEL, False)
        self.assertEqual(texts, {r.index: r.text for r in refs})

    # ---- OpenAI chat ---------------------------------------------------------------------------

    MESSAGES = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say something about translation"}]

    def assert_chat(self, doc, ref, model=None):
        self.assertEqual(doc.get("object"), "chat.completion", doc)
        self.assertEqual(doc.get("model"), model or self.MODEL)
        self.assertIsInstance(doc.get("id"), str)
        self.assertTrue(doc["id"], "empty id")
        got = sorted(doc["choices"], key=lambda c: c["index"])
        want = sorted(ref["choices"], key=lambda c: c["index"])
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual(g["index"], w["index"])
            self.assertEqual(g["message"]["role"], "assistant")
            self.assertEqual(g["message"]["content"], w["message"]["content"])
            self.assertEqual(g["finish_reason"], w["finish_reason"])
        u = ref["usage"]
        self.assert_usage(doc["usage"], u["prompt_tokens"], u["completion_tokens"])

    def test_chat(self):
        ref = direct_chat(self.emu, self.MESSAGES, 6)
        doc = self.ok(CHAT, {"model": self.MODEL, "messages": self.MESSAGES, "max_tokens": 6})
        self.assert_chat(doc, ref)
        self.assertEqual(doc["choices"][0]["finish_reason"], "length")

    def test_chat_max_completion_tokens(self):
        ref = direct_chat(self.emu, self.MESSAGES, 5)
        doc = self.ok(CHAT, {"model": self.MODEL, "messages": self.MESSAGES,
                             "max_completion_tokens": 5})
        self.assert_chat(doc, ref)
        self.assertEqual(doc["usage"]["completion_tokens"], 5)

    def test_chat_stop_string(self):
        msgs = [{"role": "user", "content": "chat stop string"}]
        full = direct_chat(self.emu, msgs, 12)["choices"][0]["message"]["content"]
        stop = " " + full.split()[4]
        ref = direct_chat(self.emu, msgs, 12, stop=[stop])
        self.assertEqual(ref["choices"][0]["finish_reason"], "stop")
        doc = self.ok(CHAT, {"model": self.MODEL, "messages": msgs, "max_tokens": 12,
                             "stop": [stop]})
        self.assert_chat(doc, ref)

    def test_chat_n(self):
        ref = direct_chat(self.emu, self.MESSAGES, 4, n=2)
        doc = self.ok(CHAT, {"model": self.MODEL, "messages": self.MESSAGES, "max_tokens": 4,
                             "n": 2})
        self.assert_chat(doc, ref)

    def test_chat_stream(self):
        ref = direct_chat(self.emu, self.MESSAGES, 6)
        s = stream(self.port, CHAT, {"model": self.MODEL, "messages": self.MESSAGES,
                                     "max_tokens": 6, "stream": True})
        texts, fins, _ = self.check_openai_stream(s, True, self.MODEL, False)
        self.assertEqual(texts, {0: ref["choices"][0]["message"]["content"]})
        self.assertEqual(fins, {0: "length"})
        first = self.json_events(s)[0]["choices"][0]["delta"]
        self.assertEqual(first.get("role"), "assistant", "the role chunk comes first")

    def test_chat_stream_usage(self):
        ref = direct_chat(self.emu, self.MESSAGES, 6)
        s = stream(self.port, CHAT, {"model": self.MODEL, "messages": self.MESSAGES,
                                     "max_tokens": 6, "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, fins, usage = self.check_openai_stream(s, True, self.MODEL, True)
        self.assertEqual(texts, {0: ref["choices"][0]["message"]["content"]})
        u = ref["usage"]
        self.assert_usage(usage, u["prompt_tokens"], u["completion_tokens"])

    def test_chat_stream_n(self):
        ref = direct_chat(self.emu, self.MESSAGES, 5, n=2)
        s = stream(self.port, CHAT, {"model": self.MODEL, "messages": self.MESSAGES,
                                     "max_tokens": 5, "n": 2, "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, fins, usage = self.check_openai_stream(s, True, self.MODEL, True)
        self.assertEqual(texts, {c["index"]: c["message"]["content"] for c in ref["choices"]})
        self.assertEqual(fins, {c["index"]: c["finish_reason"] for c in ref["choices"]})
        u = ref["usage"]
        self.assert_usage(usage, u["prompt_tokens"], u["completion_tokens"])

    def test_chat_stream_eos(self):
        hdr = {"X-Emulator-Eos-After": "3"}
        ref = direct_chat(self.emu, self.MESSAGES, 10, headers=hdr)
        s = stream(self.port, CHAT, {"model": self.MODEL, "messages": self.MESSAGES,
                                     "max_tokens": 10, "stream": True,
                                     "stream_options": {"include_usage": True}}, hdr)
        texts, fins, usage = self.check_openai_stream(s, True, self.MODEL, True)
        self.assertEqual(texts, {0: ref["choices"][0]["message"]["content"]})
        self.assertEqual(fins, {0: "stop"})
        u = ref["usage"]
        self.assert_usage(usage, u["prompt_tokens"], u["completion_tokens"])

    # ---- parameters that change the output: they must reach the backend, renamed -------------

    def native(self, **canonical):
        """Backend-dialect spelling of sampling options for direct_raw(extra=...)."""
        names = {"sglang": {"seed": "sampling_seed", "keep_stop": "no_stop_trim"},
                 "openai": {"seed": "seed", "keep_stop": "include_stop_str_in_output"}}
        return {names[self.DIALECT].get(k, k): v for k, v in canonical.items()}

    def test_generate_sampling_seed(self):
        prompt = "seeded generation"
        (unseeded,) = direct_raw(self.emu, prompt, 8)
        (ref,) = direct_raw(self.emu, prompt, 8, extra=self.native(seed=1234))
        self.assertNotEqual(ref.text, unseeded.text, "the emulator's output depends on the seed")
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 8,
                                                                "sampling_seed": 1234}})
        self.assert_sglang_item(doc, ref)

    def test_openai_seed(self):
        prompt = "seeded openai generation"
        refs = direct_raw(self.emu, prompt, 8, extra=self.native(seed=99))
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 8,
                             "seed": 99})
        self.assert_completion(doc, refs)

    def test_generate_ignore_eos(self):
        prompt = "ignore the end of sequence"
        hdr = {"X-Emulator-Eos-After": "2"}
        (ref,) = direct_raw(self.emu, prompt, 6, headers=hdr, extra={"ignore_eos": True})
        self.assertEqual(ref.finish, "length")
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 6,
                                                                "ignore_eos": True}}, hdr)
        self.assert_sglang_item(doc, ref)

    def test_openai_ignore_eos(self):
        prompt = "openai ignore eos"
        hdr = {"X-Emulator-Eos-After": "2"}
        refs = direct_raw(self.emu, prompt, 6, headers=hdr, extra={"ignore_eos": True})
        self.assertEqual(refs[0].finish, "length")
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 6,
                             "ignore_eos": True}, hdr)
        self.assert_completion(doc, refs)

    def test_generate_no_stop_trim(self):
        # SGLang's no_stop_trim is vLLM's include_stop_str_in_output: the stop string stays.
        prompt = "keep the stop string"
        stop = self.stop_word(prompt, position=3)
        (ref,) = direct_raw(self.emu, prompt, 12, stop=[stop], extra=self.native(keep_stop=True))
        self.assertTrue(ref.text.endswith(stop), ref.text)
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {
            "max_new_tokens": 12, "stop": [stop], "no_stop_trim": True}})
        self.assert_sglang_item(doc, ref)

    def test_openai_include_stop_str_in_output(self):
        # vLLM's include_stop_str_in_output is SGLang's no_stop_trim.
        prompt = "openai keeps the stop string"
        stop = self.stop_word(prompt, position=3)
        refs = direct_raw(self.emu, prompt, 12, stop=[stop], extra=self.native(keep_stop=True))
        self.assertTrue(refs[0].text.endswith(stop), refs[0].text)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 12,
                             "stop": [stop], "include_stop_str_in_output": True})
        self.assert_completion(doc, refs)

    def test_openai_stop_token_ids(self):
        prompt = "openai stop token ids"
        full = direct_raw(self.emu, prompt, 12)[0].text.split()
        stop_id = token_id(full[2])
        refs = direct_raw(self.emu, prompt, 12, extra={"stop_token_ids": [stop_id]})
        self.assertEqual(refs[0].finish, "stop")
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 12,
                             "stop_token_ids": [stop_id]})
        self.assert_completion(doc, refs)

    UNUSUAL = "He said \"h\u00e9llo\"\n\tthen \\ left \U0001F600 <b>&amp;</b> \u0000 end"

    def test_prompt_bytes_survive_translation(self):
        # The emulator hashes the exact prompt: any re-encoding damage changes the output.
        prompt = self.UNUSUAL
        (ref,) = direct_raw(self.emu, prompt, 6)
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 6}})
        self.assert_sglang_item(doc, ref)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 6})
        self.assert_completion(doc, [ref])
        msgs = [{"role": "user", "content": prompt}]
        self.assert_chat(self.ok(CHAT, {"model": self.MODEL, "messages": msgs,
                                        "max_tokens": 6}),
                         direct_chat(self.emu, msgs, 6))

    def test_large_token_ids(self):
        ids = [5, 2**33 + 7, 2**40]
        (ref,) = direct_raw(self.emu, ids, 4, ids=True)
        doc = self.ok(GEN, {"input_ids": ids, "sampling_params": {"max_new_tokens": 4}})
        self.assert_sglang_item(doc, ref)

    def test_long_output(self):
        prompt = "a long answer"
        (ref,) = direct_raw(self.emu, prompt, 4000)
        self.assertGreater(len(ref.text), 16 * 1024)
        doc = self.ok(GEN, {"text": prompt, "sampling_params": {"max_new_tokens": 4000}})
        self.assert_sglang_item(doc, ref)
        doc = self.ok(CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 4000})
        self.assert_completion(doc, [ref])
        (sref,) = direct_raw(self.emu, prompt, 800)
        s = stream(self.port, GEN, {"text": prompt, "stream": True,
                                    "sampling_params": {"max_new_tokens": 800}})
        self.assert_sglang_item(self.check_sglang_stream(s)[0], sref)

    def test_generate_batch_n_stop_string_stream(self):
        prompts = ["stop in a batch", "stop in a batch too"]
        stop = self.stop_word(prompts[0], position=2)
        refs = direct_raw(self.emu, prompts, 10, n=2, stop=stop)
        hdr = {"X-Emulator-Tokens-Per-Chunk": "3"}
        s = stream(self.port, GEN, {"text": prompts, "stream": True, "sampling_params": {
            "max_new_tokens": 10, "n": 2, "stop": stop}}, hdr)
        last = self.check_sglang_stream(s, batch=True)
        self.assertEqual(sorted(last), [0, 1, 2, 3])
        for i, ref in enumerate(refs):
            self.assert_sglang_item(last[i], ref, f"index {i}")
        doc = self.ok(GEN, {"text": prompts, "sampling_params": {
            "max_new_tokens": 10, "n": 2, "stop": stop}})
        for i, ref in enumerate(refs):
            self.assert_sglang_item(doc[i], ref, f"item {i}")

    def test_generate_batch_stream_multi_token_counts(self):
        prompts = ["counts per index", "counts per other index"]
        hdr = {"X-Emulator-Tokens-Per-Chunk": "3"}
        refs = direct_raw(self.emu, prompts, 7, n=2, headers=hdr)
        s = stream(self.port, GEN, {"text": prompts, "stream": True,
                                    "sampling_params": {"max_new_tokens": 7, "n": 2}}, hdr)
        last = self.check_sglang_stream(s, batch=True)
        for i, ref in enumerate(refs):
            self.assert_sglang_item(last[i], ref, f"index {i}")
        for d in self.json_events(s):
            self.assertEqual(d["meta_info"]["completion_tokens"], words(d["text"]), d)

    def test_include_usage_false(self):
        prompt = "explicitly no usage"
        (ref,) = direct_raw(self.emu, prompt, 4)
        s = stream(self.port, CMPL, {"model": self.MODEL, "prompt": prompt, "max_tokens": 4,
                                     "stream": True,
                                     "stream_options": {"include_usage": False}})
        texts, _, _ = self.check_openai_stream(s, False, self.MODEL, False)
        self.assertEqual(texts, {0: ref.text})

    # ---- model names ---------------------------------------------------------------------------

    def test_alias_completions(self):
        prompt = "alias model name"
        refs = direct_raw(self.emu, prompt, 5)
        doc = self.ok(CMPL, {"model": self.ALIAS, "prompt": prompt, "max_tokens": 5})
        self.assert_completion(doc, refs, model=self.ALIAS)

    def test_alias_chat(self):
        ref = direct_chat(self.emu, self.MESSAGES, 4)
        doc = self.ok(CHAT, {"model": self.ALIAS, "messages": self.MESSAGES, "max_tokens": 4})
        self.assert_chat(doc, ref, model=self.ALIAS)

    def test_alias_streams(self):
        ref = direct_chat(self.emu, self.MESSAGES, 4)
        s = stream(self.port, CHAT, {"model": self.ALIAS, "messages": self.MESSAGES,
                                     "max_tokens": 4, "stream": True,
                                     "stream_options": {"include_usage": True}})
        texts, _, _ = self.check_openai_stream(s, True, self.ALIAS, True)
        self.assertEqual(texts[0], ref["choices"][0]["message"]["content"])
        (cref,) = direct_raw(self.emu, "alias stream", 4)
        s = stream(self.port, CMPL, {"model": self.ALIAS, "prompt": "alias stream",
                                     "max_tokens": 4, "stream": True})
        texts, _, _ = self.check_openai_stream(s, False, self.ALIAS, False)
        self.assertEqual(texts[0], cref.text)

    def test_model_omitted_gets_served_name(self):
        prompt = "no model field"
        refs = direct_raw(self.emu, prompt, 3)
        doc = self.ok(CMPL, {"prompt": prompt, "max_tokens": 3})
        self.assert_completion(doc, refs, model=self.MODEL)

    def test_models_list(self):
        r = request(self.port, "GET", "/v1/models")
        self.assertEqual(r.status, 200)
        doc = r.json()
        self.assertEqual(doc["object"], "list")
        self.assertEqual([m["id"] for m in doc["data"]],
                         [self.MODEL, self.ALIAS, self.SLASH_ALIAS])
        for m in doc["data"]:
            self.assertEqual(m["object"], "model")

    def test_model_by_id(self):
        for name in (self.MODEL, self.ALIAS, self.SLASH_ALIAS):
            r = request(self.port, "GET", f"/v1/models/{name}")
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(r.json()["id"], name)
            self.assertEqual(r.json()["object"], "model")
        r = request(self.port, "GET", "/v1/models/no-such-model")
        err = self.assert_openai_error(r, 404, "no-such-model")
        self.assert_mentions(err["message"], self.MODEL)

    # ---- info routes and request ids -----------------------------------------------------------

    def test_health(self):
        for path in ("/health", "/health_generate"):
            r = request(self.port, "GET", path)
            self.assertEqual(r.status, 200, f"{path}: {r.body[:300]!r}")

    def test_model_info(self):
        r = request(self.port, "GET", "/get_model_info")
        self.assertEqual(r.status, 200, r.body)
        doc = r.json()
        self.assertEqual(doc["model_path"], self.MODEL)
        self.assertIs(doc["is_generation"], True)

    def test_server_info(self):
        r = request(self.port, "GET", "/get_server_info")
        self.assertEqual(r.status, 200, r.body)
        doc = r.json()
        self.assertIsInstance(doc, dict)
        self.assertEqual(doc.get("model_path"), self.MODEL, doc)
        self.assertIn("version", doc)

    def test_request_id_echoed(self):
        body = make_body(CMPL, "request ids", 2, self.MODEL)
        r = post_json(self.port, CMPL, body, {"X-Request-Id": "itest-req-42"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("x-request-id"), "itest-req-42")
        s = stream(self.port, GEN, make_body(GEN, "request ids", 2, None, stream=True),
                   {"X-Request-Id": "itest-req-43"})
        self.assertEqual(s.header("x-request-id"), "itest-req-43")

    def test_request_id_generated(self):
        seen = set()
        for path in (GEN, CMPL, CHAT):
            r = post_json(self.port, path, make_body(path, "generated id", 2, self.MODEL))
            self.assertEqual(r.status, 200)
            rid = r.header("x-request-id")
            self.assertTrue(rid, f"{path}: no X-Request-Id")
            seen.add(rid)
        r = request(self.port, "GET", "/nope")
        self.assertTrue(r.header("x-request-id"), "errors carry a request id too")
        seen.add(r.header("x-request-id"))
        self.assertEqual(len(seen), 4, f"request ids repeat: {seen}")


class TestViaOpenAIBackend(_Matrix, unittest.TestCase):
    """SGLang and OpenAI clients in front of a vLLM-flavoured OpenAI backend."""

    DIALECT = "openai"
    MODEL = "emu-vllm"


class TestViaSGLangBackend(_Matrix, unittest.TestCase):
    """SGLang and OpenAI clients in front of an SGLang native backend."""

    DIALECT = "sglang"
    MODEL = "emu-sglang"



# The whole matrix again against the other wire style (harness.OTHER_WIRE_STYLE).
class TestViaOpenAIBackendOtherStyle(TestViaOpenAIBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


class TestViaSGLangBackendOtherStyle(TestViaSGLangBackend):
    EMU_ARGS = OTHER_WIRE_STYLE


if __name__ == "__main__":
    unittest.main()
