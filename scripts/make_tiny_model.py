#!/usr/bin/env python3
"""Writes the tiny deterministic model the real-engine tests serve with llama-server.

A LLaMA-architecture model with random weights from a fixed seed: 2 layers, n_embd 128, 4 heads
/ 2 KV heads, n_ff 352, n_ctx_train 4096, all F32 (8,561,792 parameters, 35 MB). Its text is
gibberish, but the tokenizer is LLaMA's real 32,000-token SentencePiece vocabulary (copied from
llama.cpp's models/ggml-vocab-llama-spm.gguf) plus two ChatML control tokens, <|im_end|> (32000,
also EOS) and <|im_start|> (32001), and a ChatML chat template: the server's tokenizer, chat
templating, slots, KV cache, sampling, UTF-8 hold-back, SSE framing, errors and metrics are all
its own.

It uses llama.cpp's own gguf-py (put <llama.cpp>/gguf-py on PYTHONPATH), which imports numpy,
sentencepiece and yaml (Debian: python3-numpy, python3-sentencepiece, python3-yaml).
scripts/real_engine.sh runs it; docs/testing.md says how it is used.

    PYTHONPATH=SRC/gguf-py python3 scripts/make_tiny_model.py \\
        --vocab SRC/models/ggml-vocab-llama-spm.gguf --out tiny-llama-chatml.gguf
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

try:
    import numpy as np
    import gguf
except ImportError as e:  # say which package, not a bare traceback
    sys.exit(f"make_tiny_model: {e}; it needs llama.cpp's gguf-py on PYTHONPATH and numpy, "
             "sentencepiece and yaml (Debian: python3-numpy python3-sentencepiece python3-yaml)")

N_LAYER = 2
N_EMBD = 128
N_HEAD = 4
N_HEAD_KV = 2
N_FF = 352
N_CTX_TRAIN = 4096
RMS_EPS = 1e-5
SEED = 16
# Standard deviation of every weight matrix. It sets the logits' scale (about 0.17 * sqrt(128)),
# which decides how an EOS bias acts: greedy, `"logit_bias": [[32000, 7]]` ends a generation
# after 1-6 tokens and `[[32000, 3]]` after 10-200, as the engines README says; without a bias
# EOS is practically never chosen, so a generation runs to its budget.
WEIGHT_STD = 0.17

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
IM_END = "<|im_end|>"
IM_START = "<|im_start|>"


def field_values(field) -> list:
    """The values of a GGUFReader field: strings decoded, numbers as Python scalars."""
    vals = [field.parts[i] for i in field.data]
    if field.types[-1] == gguf.GGUFValueType.STRING:
        return [bytes(v).decode("utf-8") for v in vals]
    return [v.tolist()[0] for v in vals]


def copy_tokenizer(reader, writer) -> int:
    """Copies every tokenizer.ggml.* key, adding the two ChatML tokens; returns the vocab size."""
    tokens = scores = types = None
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer.ggml."):
            continue
        vals = field_values(field)
        if name == "tokenizer.ggml.tokens":
            tokens = vals
        elif name == "tokenizer.ggml.scores":
            scores = vals
        elif name == "tokenizer.ggml.token_type":
            types = vals
        elif name == "tokenizer.ggml.eos_token_id":
            continue  # <|im_end|> below
        elif field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_array(name, vals)
        else:
            writer.add_key_value(name, vals[0], field.types[0])
    if tokens is None or scores is None or types is None or len(tokens) != 32000:
        sys.exit("make_tiny_model: the vocabulary file lacks LLaMA's 32,000 tokens")
    control = int(gguf.TokenType.CONTROL)
    tokens += [IM_END, IM_START]
    scores += [0.0, 0.0]
    types += [control, control]
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_eos_token_id(tokens.index(IM_END))
    writer.add_chat_template(CHATML_TEMPLATE)
    return len(tokens)


def add_weights(writer, n_vocab: int) -> None:
    # The legacy RandomState stream is fixed across numpy versions: the same file everywhere.
    rng = np.random.RandomState(SEED)
    head_dim = N_EMBD // N_HEAD

    def matrix(rows: int, cols: int) -> np.ndarray:
        # numpy's shape is ggml's ne reversed: (out, in).
        return (rng.standard_normal((rows, cols)) * WEIGHT_STD).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    writer.add_tensor("token_embd.weight", matrix(n_vocab, N_EMBD))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        writer.add_tensor(p + "attn_norm.weight", ones(N_EMBD))
        writer.add_tensor(p + "attn_q.weight", matrix(N_EMBD, N_EMBD))
        writer.add_tensor(p + "attn_k.weight", matrix(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(p + "attn_v.weight", matrix(N_HEAD_KV * head_dim, N_EMBD))
        writer.add_tensor(p + "attn_output.weight", matrix(N_EMBD, N_EMBD))
        writer.add_tensor(p + "ffn_norm.weight", ones(N_EMBD))
        writer.add_tensor(p + "ffn_gate.weight", matrix(N_FF, N_EMBD))
        writer.add_tensor(p + "ffn_up.weight", matrix(N_FF, N_EMBD))
        writer.add_tensor(p + "ffn_down.weight", matrix(N_EMBD, N_FF))
    writer.add_tensor("output_norm.weight", ones(N_EMBD))
    writer.add_tensor("output.weight", matrix(n_vocab, N_EMBD))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", required=True, type=Path,
                    help="llama.cpp's models/ggml-vocab-llama-spm.gguf")
    ap.add_argument("--out", required=True, type=Path, help="the .gguf file to write")
    args = ap.parse_args()

    reader = gguf.GGUFReader(args.vocab)
    tmp = args.out.with_name(args.out.name + ".tmp")
    writer = gguf.GGUFWriter(tmp, "llama")
    writer.add_name("tiny-llama-chatml")
    writer.add_context_length(N_CTX_TRAIN)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    n_vocab = copy_tokenizer(reader, writer)
    writer.add_vocab_size(n_vocab)
    add_weights(writer, n_vocab)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, args.out)
    print(f"make_tiny_model: wrote {args.out} ({args.out.stat().st_size} bytes, "
          f"{n_vocab} tokens)")


if __name__ == "__main__":
    main()
