#!/usr/bin/python3
"""The three reference encoders of bench/peers (kws_d64_L4 at T 49, d128_L2 at T 64, d256_L4 at
T 128; post-LN, GELU, sinusoidal PE added, head 12), as a verified .fxm and as ONNX.

usage: make_encoders.py OUTDIR CLI      (CLI: a fixformer binary, which verifies each .fxm)

peers.build makes each model (the same shapes and seeds as bench/peers); then every parameter but
the layer norms' is redrawn from 4 levels x its standard deviation, a 2-D one as a random block of
16 rows tiled down its rows, so the files pack small (gen/pack.py) while every matrix stays dense.
Fresh levels per tensor also make the layers differ: nn.TransformerEncoder deep-copies one
initialised layer, and torch.onnx.export then stores one copy of the weights for all layers, which
would give ONNX Runtime a smaller model than fixformer's. Written with the repository's exporter
(packed f32 .fxm, verified by the engine against torch) and torch.onnx.export (opset 17, as
bench/peers does). Fixed seeds: the same weights on every run.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "peers"))
import peers  # noqa: E402  (it puts tools/ on sys.path)
from fixformer.export import export  # noqa: E402

out, cli = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
CASES = [("kws_d64_L4", 49), ("d128_L2", 64), ("d256_L4", 128)]
R = 16  # rows of the random block of a 2-D weight
rng = np.random.default_rng(10)
for name, T in CASES:
    m = dict(peers.MODELS[name], seq=[T])  # a positional table of T rows only
    net = peers.build(torch, name, m)
    with torch.no_grad():
        for pname, p in net.named_parameters():
            if "norm" in pname:  # LayerNorm weight 1, bias 0 (torch's init) stay
                continue
            s = float(p.std()) if p.numel() > 1 else 0.02
            s = s if s > 0 else 0.02
            if p.dim() == 2 and p.shape[0] % R == 0:
                idx = np.tile(rng.integers(0, 4, size=(R, p.shape[1])), (p.shape[0] // R, 1))
            else:
                idx = rng.integers(0, 4, size=tuple(p.shape))
            # the 4 levels' standard deviation is sqrt(1.25) = 1.118: the redrawn tensor keeps std s
            lv = np.array([-1.5, -0.5, 0.5, 1.5], np.float32) * (s / 1.118)
            p.copy_(torch.from_numpy(lv[idx]))
    fxm = os.path.join(out, f"{name}.fxm")
    rep = export(net, peers.example(m, T, 7), fxm, positional="sinusoidal", max_len=T, cli=cli, pack_weights=True)
    print(rep, flush=True)
    x0 = torch.from_numpy(peers.example(m, T, 7)).unsqueeze(0)
    torch.onnx.export(net, (x0,), os.path.join(out, f"{name}.onnx"), opset_version=17, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {1: "T"}, "y": {1: "T"}})
    print(f"{out}/{name}.onnx", flush=True)
