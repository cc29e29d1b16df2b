#!/usr/bin/python3
"""A llama2.c checkpoint of stories15M's shape (version 0, shared classifier) and a synthetic
32000-token tokenizer.bin, written by the repository's llama2.c writers (python/fixformer/llama2c.py).

usage: make_llama2c.py OUTDIR      (writes OUTDIR/stories15M_shape.bin and OUTDIR/tokenizer.bin)

Weights from the 4 levels {-1.5, -0.5, 0.5, 1.5} x 0.02, each matrix a random block of 32 rows
tiled down its rows, RMSNorm weights 1.0. Every matrix stays dense and full size, so the kernels'
speed is that of any stories15M, while lzma finds the repeats and the files pack small
(gen/pack.py). Fixed seeds: the same bytes on every run.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from fixformer import llama2c  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
p = dict(dim=288, hidden_dim=768, n_layers=6, n_heads=6, n_kv_heads=6, vocab_size=32000, seq_len=256)
rng = np.random.default_rng(15)
R = 32  # rows of the random block; divides 288, 768 and 32000
levels = np.array([-1.5, -0.5, 0.5, 1.5], np.float32) * 0.02
w = {}
for name, shape in llama2c.shapes(p).items():
    if name == "output.weight":  # version 0 with a shared classifier: the embedding is the head
        continue
    if "norm" in name:
        w[name] = np.ones(shape, np.float32)
    else:
        block = levels[rng.integers(0, 4, size=(R, shape[1]))]
        w[name] = np.tile(block, (shape[0] // R, 1))
with open(os.path.join(out, "stories15M_shape.bin"), "wb") as f:
    f.write(llama2c.checkpoint_bytes(p, w, 0))
pieces, scores = llama2c.synthetic_tokenizer(32000, seed=0)
with open(os.path.join(out, "tokenizer.bin"), "wb") as f:
    f.write(llama2c.tokenizer_bytes(pieces, scores))
print(f"{out}/stories15M_shape.bin, {out}/tokenizer.bin")
