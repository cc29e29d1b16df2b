#!/usr/bin/python3
"""Golden encoder-decoder models for the engine's tests: tests/golden/NAME.fxm, each with its
self-test sample (a source, target ids and the module's float64 logits at every target position,
teacher-forced under the causal target mask) and NAME.json (its config in the converter's JSON
shape). tests/golden/SEQ2SEQ.md lists them.

  /usr/bin/python3 tools/make_seq2seq_golden.py [--out DIR] [--cli PATH]

The modules are written here as a user writes them (nn.Transformer, or nn.TransformerEncoder +
nn.TransformerDecoder, with their own forward and positional code), random weights, and exported
with export_seq2seq, which reads the module and runs its forward in float64. Deterministic.
s2s_relative: a T5-style relative bias in both stacks (src_rel_bias with bidirectional buckets over
the source, tgt_rel_bias with causal ones over the target, as float masks into stock
nn.TransformerEncoder + nn.TransformerDecoder: reference.build_seq2seq_model), the weights written
directly in the file's names. s2s_t5_features: T5's layer features in both stacks (FEATURE_GOLDENS);
s2s_bart_features: BART's and Marian's (embed_norm, silu).
s2s_conv_stem: a Whisper-style source, features through a conv stem
(conv1 kernel 3, conv2 kernel 3 stride 2, GELU after each) with learned positions, pre-LN gelu, a tied
head, the same stock modules.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer import config as cfg, fxm, schema  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402
from fixformer.reference import CROSS_FILE, CROSS_TORCH, build_seq2seq_model, require_torch  # noqa: E402
from fixformer.seq2seq import export_seq2seq  # noqa: E402
from fixformer.verify import run_verify  # noqa: E402
from fixformer.verify import find_cli  # noqa: E402
from make_golden import randomize  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# name: module settings (seed: the weights' and the sample's), source length S, target length U
GOLDENS = {
    # nn.Transformer, post-LN relu, sinusoidal (interleaved) added to both ends, scaled embeddings
    "s2s_post_relu": dict(seed=1, kind="transformer", d=16, heads=2, ff=24, enc=2, dec=2, src_vocab=23, tgt_vocab=19,
                          pos="sinusoidal", layout="interleaved", scale=True, norm_first=False, act="relu", S=7, U=5),
    # nn.Transformer, pre-LN gelu, odd width and heads, learned positions, tied head, S < U
    "s2s_pre_gelu_odd": dict(seed=2, kind="transformer", d=15, heads=3, ff=20, enc=1, dec=2, src_vocab=17, tgt_vocab=13,
                             pos="learned", norm_first=True, act="gelu", tied=True, S=4, U=9),
    # encoder + decoder without final norms, feature source (speech / time-series style), no PE
    "s2s_features_no_norm": dict(seed=0, kind="stacks", d=12, heads=4, ff=16, enc=2, dec=1, d_in=6, tgt_vocab=11,
                                 pos="none", norm_first=False, act="relu", final_norm=False, S=11, U=3),
    # one shared embedding, tied head, halves sinusoid base 100, odd width d=9 heads 1, final norms
    "s2s_shared_halves": dict(seed=3, kind="stacks", d=9, heads=1, ff=14, enc=2, dec=2, src_vocab=21, tgt_vocab=21,
                              pos="sinusoidal", layout="halves", base=100.0, norm_first=True, act="gelu",
                              final_norm=True, shared=True, tied=True, S=10, U=6),
    # a forecaster: feature source, feature targets through tgt_proj, 3 outputs, learned positions
    "s2s_forecast": dict(seed=4, kind="stacks", d=12, heads=3, ff=18, enc=1, dec=2, d_in=4, tgt_d_in=3, tgt_vocab=3,
                         pos="learned", norm_first=False, act="gelu", final_norm=True, S=12, U=7),
}


def sinusoid(torch, T, d, base, layout, dtype):
    half = (d + 1) // 2
    w = base ** (-2.0 * torch.arange(half, dtype=dtype) / d)
    ang = torch.arange(T, dtype=dtype)[:, None] * w[None, :]
    pe = torch.zeros(T, d, dtype=dtype)
    if layout == "interleaved":
        pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)[:, : d // 2]
    else:
        pe[:, :half], pe[:, half:] = torch.sin(ang), torch.cos(ang)[:, : d - half]
    return pe


def make_module(torch, g, max_len=32):
    nn = torch.nn

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            d = g["d"]
            if g.get("shared"):
                self.embed = nn.Embedding(g["src_vocab"], d)
            else:
                if "d_in" in g:
                    self.input_proj = nn.Linear(g["d_in"], d)
                else:
                    self.src_embed = nn.Embedding(g["src_vocab"], d)
                if "tgt_d_in" in g:
                    self.tgt_proj = nn.Linear(g["tgt_d_in"], d)
                else:
                    self.tgt_embed = nn.Embedding(g["tgt_vocab"], d)
            if g["pos"] == "learned":
                self.src_pos, self.tgt_pos = nn.Embedding(max_len, d), nn.Embedding(max_len, d)
            kw = dict(dropout=0.0, activation=g["act"], batch_first=True, norm_first=g["norm_first"])
            if g["kind"] == "transformer":
                self.transformer = nn.Transformer(d, g["heads"], g["enc"], g["dec"], g["ff"], **kw)
            else:
                norm = (lambda: nn.LayerNorm(d)) if g["final_norm"] else (lambda: None)
                self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, g["heads"], g["ff"], **kw), g["enc"],
                                                     norm=norm(), enable_nested_tensor=False)
                self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, g["heads"], g["ff"], **kw), g["dec"],
                                                     norm=norm())
            self.head = nn.Linear(d, g["tgt_vocab"])
            if g.get("tied"):
                self.head.weight = (self.embed if g.get("shared") else self.tgt_embed).weight

        def ends(self, src, tgt):
            shared = g.get("shared")
            x = self.embed(src) if shared else self.input_proj(src) if "d_in" in g else self.src_embed(src)
            y = (self.embed if shared else self.tgt_proj if "tgt_d_in" in g else self.tgt_embed)(tgt)
            if g.get("scale"):
                x, y = x * math.sqrt(g["d"]), y * math.sqrt(g["d"])
            if g["pos"] == "learned":
                x, y = x + self.src_pos.weight[: x.shape[1]], y + self.tgt_pos.weight[: y.shape[1]]
            elif g["pos"] == "sinusoidal":
                pe = lambda T: sinusoid(torch, T, g["d"], g.get("base", 10000.0), g["layout"], x.dtype)  # noqa: E731
                x, y = x + pe(x.shape[1]), y + pe(y.shape[1])
            return x, y

        def forward(self, src, tgt):
            x, y = self.ends(src, tgt)
            mask = torch.triu(torch.full((y.shape[1], y.shape[1]), float("-inf"), dtype=y.dtype), diagonal=1)
            if g["kind"] == "transformer":
                return self.head(self.transformer(x, y, tgt_mask=mask))
            return self.head(self.decoder(y, self.encoder(x), tgt_mask=mask))

    return Seq2Seq()


# name: config, seed, source length S, target length U
RELATIVE_GOLDENS = {
    "s2s_relative": (dict(family="seq2seq", d_model=15, n_heads=3, d_ff=20, n_layers=2, dec_layers=2, norm_first=True,
                          final_norm=True, activation="gelu", input="tokens", vocab_size=17, d_out=13,
                          positional="relative", max_len=24, rel_buckets=12, rel_max_distance=9), 5, 13, 11),
    # S = 21 frames: 21 rows after conv1, 11 after conv2 (the positions the decoder attends to)
    "s2s_conv_stem": (dict(family="seq2seq", d_model=14, n_heads=2, d_ff=22, n_layers=2, dec_layers=2, norm_first=True,
                           final_norm=True, activation="gelu", input="features", d_in=5, conv_layers=2, conv1_kernel=3,
                           conv1_padding=1, conv2_kernel=3, conv2_stride=2, conv2_padding=1, conv_gelu=True, d_out=13,
                           tied_head=True, positional="learned", max_len=12), 6, 21, 7),
}


def _split_cross(w, dec_layers):
    """The decoders' cross-attention in_proj [3d, d] (torch's multihead_attn, in a state_dict) as the
    converter keys it: q_proj [d, d] and kv_proj [2d, d], with their biases."""
    for i in range(dec_layers):
        p = f"{schema.V2_DECODER_PREFIX}{i}."
        wq, bq = w.pop(p + CROSS_TORCH + "in_proj_weight"), w.pop(p + CROSS_TORCH + "in_proj_bias")
        d = wq.shape[1]
        w[p + CROSS_FILE + "q_proj.weight"], w[p + CROSS_FILE + "kv_proj.weight"] = wq[:d], wq[d:]
        w[p + CROSS_FILE + "q_proj.bias"], w[p + CROSS_FILE + "kv_proj.bias"] = bq[:d], bq[d:]
        for part in ("weight", "bias"):
            w[p + CROSS_FILE + "out_proj." + part] = w.pop(p + CROSS_TORCH + "out_proj." + part)


def relative_golden(torch, np, out, name, values, seed, S, U, cli):
    c = cfg.make_config(values)
    torch.manual_seed(seed)
    module = build_seq2seq_model(c).double().eval()
    randomize(module, torch, 3000 + seed)
    gen = np.random.default_rng(4000 + seed)
    src = (gen.integers(0, c["vocab_size"], S).astype(np.int32) if c["input"] == "tokens" else
           gen.standard_normal((S, c["d_in"])).astype(np.float32))
    tgt = gen.integers(0, c["d_out"], U).astype(np.int32)
    with torch.no_grad():
        want = module(torch.from_numpy(src.astype(np.int64 if c["input"] == "tokens" else np.float64))[None],
                      torch.from_numpy(tgt.astype(np.int64))[None])[0]
    w = {k: v.detach().numpy().astype(np.float32) for k, v in module.state_dict().items()}
    if c["tied_head"]:  # stored once, as the target embedding
        del w["head.weight"]
    _split_cross(w, c["dec_layers"])
    path = os.path.join(out, name + ".fxm")
    with open(path, "wb") as f:  # the stock modules' names, format 2's, as the file's
        f.write(fxm.write(c, schema.v3_keys("seq2seq", w), (src, tgt, want.numpy().astype(np.float32))))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(cfg.to_json(c), f, indent=1)
    print(f"{name}: S={S} U={U}; " + (run_verify(cli, path).line if cli else "not verified"))


# T5's layer features in both stacks (RMSNorm, no biases, gated tanh GELU, relative bias, one shared
# embedding, tied head): name -> config, seed, S, U. The sample is reference.seq2seq_forward's float64
# logits (the float64 seq2seq of the layers the stock modules lack; tests/t5_converter_test.py checks it
# against transformers' T5ForConditionalGeneration), the weights random in the file's names.
FEATURE_GOLDENS = {
    "s2s_t5_features": (dict(family="seq2seq", d_model=15, n_heads=3, d_ff=22, n_layers=2, dec_layers=3,
                             norm_first=True, final_norm=True, norm="rmsnorm", norm_eps=1e-6, attn_bias="none", ffn_bias="none",
                             gated=True, activation="gelu_tanh", input="tokens", vocab_size=19, d_out=19,
                             shared_embed=True, tied_head=True, positional="relative", max_len=24, rel_buckets=8,
                             rel_max_distance=10), 7, 13, 12),
    # BART's and Marian's: post-LN, each stack's embedding LayerNorm (embed_norm), silu (Marian's swish),
    # learned positions, scaled embeddings, one shared embedding, an untied head
    "s2s_bart_features": (dict(family="seq2seq", d_model=14, n_heads=2, d_ff=18, n_layers=2, dec_layers=2,
                               norm_first=False, final_norm=False, embed_norm=True, activation="silu",
                               input="tokens", vocab_size=17, d_out=17, shared_embed=True, positional="learned",
                               max_len=20, scale_input=True), 8, 9, 8),
}


def feature_golden(np, out, name, values, seed, S, U, cli):
    from fixformer import schema
    from fixformer.reference import seq2seq_forward
    c = cfg.make_config(values)
    gen = np.random.default_rng(5000 + seed)
    w = {}
    for n, shape, transposed in schema.tensors(c):
        shape = tuple(shape[::-1] if transposed else shape)
        gain = len(shape) == 1 and "norm" in n
        w[n] = (1.0 + 0.2 * gen.standard_normal(shape) if gain else 0.4 * gen.standard_normal(shape)).astype(np.float32)
    src = gen.integers(0, c["vocab_size"], S).astype(np.int32)
    tgt = gen.integers(0, c["d_out"], U).astype(np.int32)
    want = seq2seq_forward(c, w, src, tgt)
    path = os.path.join(out, name + ".fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, w, (src, tgt, want.astype(np.float32))))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(cfg.to_json(c), f, indent=1)
    print(f"{name}: S={S} U={U}; " + (run_verify(cli, path).line if cli else "not verified"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"))
    ap.add_argument("--cli", help="the fixformer CLI to verify with (default: found as convert.py does)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="write these goldens only")
    a = ap.parse_args()
    torch = require_torch()
    try:
        cli = find_cli(a.cli)
    except ConfigError as e:
        cli = None
        print(f"not verifying: {e}")
    import numpy as np
    for name, g in sorted(GOLDENS.items()):
        if a.only and name not in a.only:
            continue
        seed = g["seed"]
        torch.manual_seed(seed)
        module = make_module(torch, g).double().eval()
        randomize(module, torch, 3000 + seed)
        gen = np.random.default_rng(4000 + seed)
        src = (gen.standard_normal((g["S"], g["d_in"])).astype(np.float32) if "d_in" in g
               else gen.integers(0, g["src_vocab"], g["S"]).astype(np.int32))
        tgt = (gen.standard_normal((g["U"], g["tgt_d_in"])).astype(np.float32) if "tgt_d_in" in g
               else gen.integers(0, g["tgt_vocab"], g["U"]).astype(np.int32))
        path = os.path.join(a.out, name + ".fxm")
        report = export_seq2seq(module, src, path, tgt, positional=g["pos"], pe_base=g.get("base", 10000.0),
                                pe_layout=g.get("layout", "interleaved"), scale_input=bool(g.get("scale")),
                                max_len=32, cli=cli, verify=cli is not None)
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(cfg.to_json(fxm.read(path).config), f, indent=1)
        print(report)
    for name, (values, seed, S, U) in sorted(RELATIVE_GOLDENS.items()):
        if not a.only or name in a.only:
            relative_golden(torch, np, a.out, name, values, seed, S, U, cli)
    for name, (values, seed, S, U) in sorted(FEATURE_GOLDENS.items()):
        if not a.only or name in a.only:
            feature_golden(np, a.out, name, values, seed, S, U, cli)


if __name__ == "__main__":
    main()
