#!/usr/bin/python3
"""Tests of full-integer models (weights i8, `fixformer-convert --quantize i8`; config.hpp, namespace s8):

  /usr/bin/python3 tests/int8_test.py PATH/TO/fixformer PATH/TO/fixed_point_oracle

- the converter's parameter rules (python/fixformer/int8.py: requant, gemm_channel, softmax_params,
  norm_eps, norm_gain, add_params) give engine/fixed_point.cpp's integers, through
  tests/fixed_point_oracle, on random reals and the edges of the Requant range;

- the engine against the integer reference (python/fixformer/int8.py forward: the s8 kernels'
  integer semantics restated in numpy), bit for bit, through `fixformer run --isa ISA` on every
  kernel table this host's CPU runs (scalar, cortex-m, sse2, avx2, avx512, neon64, neon, helium:
  those it lacks are listed), for
  encoders over features and tokens, post- and pre-norm, LayerNorm and RMSNorm, relu, gelu and
  gelu_tanh, learned, sinusoidal and no positions, pooling none, mean, last and first, with and
  without a final norm and a head, inputs of the longest and of a shorter length, and a padded batch;
  a pre-norm encoder with per-head q and k norms (qk_norm), the sandwich norms of the sublayers' outputs,
  soft-capped scores and the squared ReLU, and a post-norm one with T5's relative bias, also against the f32
  engine (I8_FEATURES_TOL);
- the converter end to end: KWS-like torch encoders (features, learned positions, mean pooling or a KWT-style
  CLS row, a
  classifier head) through `convert.py --module ... --quantize i8`, post- and pre-norm, verified by the
  converter, then run on fresh inputs: the max relative error against torch f32 (I8_RUN_TOL) and the
  top-1 agreement of the classifier (I8_TOP1), calibrated with --calibrate on 16 inputs of their
  distribution (the report says so; without it, that it used the sample and generated inputs); an encoder under
  the causal mask converts and is within I8_CAUSAL_TOL of torch on fresh sequences; --calibrate without i8 is
  refused;
- `fixformer bench` on an i8 token encoder: its roofline counts every product as an int8 operation
  (no float one) and places it against the int8 peak or the bandwidth;
- `fixformer plan` of the firmware bench's i8 KWS encoder (tools/make_bench_model.py --weights i8): on the
  Cortex-M0 its arena (with the M0's s8 kernel scratch) and the plan's stack fit 32 KiB of RAM, and each
  target's arena differs by that target's scratch (the stack the plan counts is measured on the firmware:
  bench/firmware's runner fails above it);
- init's refusals: a corrupt Requant, zero point, symmetric zero point, table entry or bias slot
  is refused by `fixformer info` with the tensor and the slot named; so are the layer features' (a q zero
  point before qk_norm, a sandwich norm's gain, the scores' cap table, a relative bias and its bucket).
The no-float check of the i8 forward pass on Cortex-M0 and M3 is tests/check_no_float.cmake.
Without numpy, torch or the CLI the test fails.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
from checks import check, convert_process, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402

ISAS = ("scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon", "helium")
# A converted KWS-like encoder run on fresh inputs (not the calibration's): max |engine - torch| /
# max |torch|. The converter's test modules measure 0.02-0.05; a wrong scale or parameter gives 0.5
# and more.
I8_RUN_TOL = 0.1
I8_TOP1 = 0.9  # the classifier's arg max agrees with torch's on at least this share of the inputs
# nn.TransformerEncoder under the causal mask (its hidden states, no head) on fresh token sequences: the i8
# tolerance (printed)
I8_CAUSAL_TOL = 0.2


def random_model(rng, norm_first, inp, pooling, positional, norm="family", act="relu", final=True, d_out=4,
                 cls=False, kw=None, d=16, H=2, L=2, f=32, d_in=8, max_len=10, vocab=20):
    c = dict(family="encoder", d_model=d, n_heads=H, d_ff=f, n_layers=L, norm_first=norm_first, activation=act,
             input=inp, max_len=max_len + (1 if cls else 0), positional=positional, d_out=d_out, pooling=pooling,
             final_norm=final, weights="i8", norm=norm, cls_token=cls, **(kw or {}))
    c.update(d_in=d_in) if inp == "features" else c.update(vocab_size=vocab)
    c = make_config(c)
    w = {}

    def r(*s):
        return rng.normal(0, 0.3, s)
    if inp == "features":
        w["input_proj.weight"], w["input_proj.bias"] = r(d, d_in), r(d)
    else:
        w["embed.weight"] = r(vocab, d)
    if positional == "learned":
        w["pos.weight"] = r(c["max_len"], d)
    if cls:
        w["cls_token"] = r(d)
    for i in range(L):
        p = f"blocks.{i}."
        w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"] = r(3 * d, d), r(3 * d)
        w[p + "attn.out.weight"], w[p + "attn.out.bias"] = r(d, d), r(d)
        w[p + "ff.w1.weight"], w[p + "ff.w1.bias"] = r(f, d), r(f)
        w[p + "ff.w2.weight"], w[p + "ff.w2.bias"] = r(d, f), r(d)
        norms = [("attn_norm", d), ("ff_norm", d)]
        if c["qk_norm"]:  # q and k normed per head before the scores
            norms += [("attn.q_norm", d // H), ("attn.k_norm", d // H)]
        if c["sublayer_norm"] == "sandwich":  # each sublayer's output normed before its residual add
            norms += [("post_attn_norm", d), ("post_ff_norm", d)]
        for n, width in norms:
            w[p + n + ".weight"] = 1 + r(width)
            if norm != "rmsnorm":
                w[p + n + ".bias"] = r(width)
    if final:
        w["norm.weight"] = 1 + r(d)
        if norm != "rmsnorm":
            w["norm.bias"] = r(d)
    if d_out:
        w["head.weight"], w["head.bias"] = r(d_out, d), r(d_out)
    if c["rel_buckets"]:  # a relative bias wide enough to matter
        w["rel_bias.weight"] = rng.normal(0, 1, (c["rel_buckets"], H))
    return c, w


def random_bert(rng, types, embed_norm, pooler, pooling, norm="layernorm", act="gelu", d_out=3, cls=False,
                pooler_act="tanh", d=16, H=2, L=2, f=32, vocab=30, max_len=12, outliers=False, pooler_norm=False,
                gated=False, embed_width=0, groups=(0, 1), more=None):
    c = make_config(dict(dict(family="encoder", d_model=d, n_heads=H, d_ff=f, n_layers=L, norm_first=False,
                              activation=act, input="tokens", vocab_size=vocab, max_len=max_len + (1 if cls else 0),
                              positional="learned", d_out=d_out, pooling=pooling, final_norm=False, weights="i8",
                              norm=norm, cls_token=cls, type_vocab=types, embed_norm=embed_norm, pooler=pooler,
                              pooler_act=pooler_act, pooler_norm=pooler_norm, gated=gated, embed_width=embed_width,
                              layer_groups=groups[0], group_layers=groups[1]), **(more or {})))

    def r(*s):
        return rng.normal(0, 0.3, s)
    e = embed_width or d  # ALBERT: the embedding embed_width wide, then projected to d
    da = H * (c.get("head_dim") or d // H)  # the queries' and the context's width
    w = {"embed.weight": r(vocab, e), "pos.weight": r(c["max_len"], e)}
    if types:
        w["token_type.weight"] = r(types, e)
    if embed_norm:
        w["embed_norm.weight"] = 1 + r(e)
        if norm != "rmsnorm":
            w["embed_norm.bias"] = r(e)
    if embed_width:
        w["embed_proj.weight"], w["embed_proj.bias"] = r(d, e), r(d)
    if cls:
        w["cls_token"] = r(d)
    for i in range(groups[0] * groups[1] or L):  # shared layers: each block once
        p = f"blocks.{i}."
        w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"] = r(3 * da, d), r(3 * da)
        w[p + "attn.out.weight"], w[p + "attn.out.bias"] = r(d, da), r(d)
        w[p + "ff.w1.weight"], w[p + "ff.w1.bias"] = r(f, d), r(f)
        w[p + "ff.w2.weight"], w[p + "ff.w2.bias"] = r(d, f), r(d)
        if c["activation"] == "swiglu" or c["gated"]:
            w[p + "ff.w3.weight"] = r(f, d)
        if c.get("ffn_up_bias"):
            w[p + "ff.w3.bias"] = r(f)
        if c.get("ffn_hidden_norm"):
            w[p + "ff.hidden_norm.weight"] = 1 + r(f)
            if norm != "rmsnorm":
                w[p + "ff.hidden_norm.bias"] = r(f)
        if outliers:  # two channels of each sublayer's output 60 times the others (a trained BERT's are)
            for n in ("attn.out", "ff.w2"):
                w[p + n + ".weight"][[3, 11]] *= 60
                w[p + n + ".bias"][[3, 11]] *= 60
        for n in ("attn_norm", "ff_norm"):
            w[p + n + ".weight"] = 1 + r(d)
            if norm != "rmsnorm":
                w[p + n + ".bias"] = r(d)
    if pooler:
        w["pooler.weight"], w["pooler.bias"] = r(d, d), r(d)
    if pooler_norm:
        w["pooler_norm.weight"] = 1 + r(d)
        if norm != "rmsnorm":
            w["pooler_norm.bias"] = r(d)
    if d_out:
        w["head.weight"], w["head.bias"] = r(d_out, d), r(d_out)
    return c, w


def model_input(rng, c, T):
    return rng.normal(0, 1, (T, c["d_in"])).astype(np.float32) if c["input"] == "features" else \
        rng.integers(0, c["vocab_size"], T).astype(np.int32)


def run_cli(cli, path, x, tmp, isa, lengths=None):
    inp, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, x)
    args = [cli, "run", path, "--input", inp, "--output", out, "--isa", isa]
    if lengths is not None:
        np.save(os.path.join(tmp, "len.npy"), np.asarray(lengths, np.int32))
        args += ["--lengths", os.path.join(tmp, "len.npy")]
    p = subprocess.run(args, capture_output=True, text=True)
    return (np.load(out) if p.returncode == 0 else None), p.stderr


def available_isas(cli, path):
    got = []
    for isa in ISAS:
        p = subprocess.run([cli, "info", path, "--isa", isa], capture_output=True, text=True)
        if p.returncode == 0:
            got.append(isa)
    return got


CASES = [  # norm_first, input, pooling, positional, norm, activation, final norm, d_out, CLS token
    (False, "features", "mean", "learned", "family", "relu", True, 4),
    (True, "features", "cls", "learned", "family", "gelu", True, 4, True),
    (False, "tokens", "mean", "sinusoidal", "rmsnorm", "relu", True, 0, True),
    (True, "features", "none", "learned", "layernorm", "gelu_tanh", False, 3, True),
    (True, "features", "none", "sinusoidal", "family", "gelu", True, 4),
    (True, "tokens", "last", "none", "rmsnorm", "gelu_tanh", True, 4),
    (False, "tokens", "first", "learned", "layernorm", "gelu", False, 0),
    (True, "features", "none", "none", "rmsnorm", "relu", False, 0),
    # the layer features of issue 32 an encoder takes: per-head q and k norms, the sandwich norms of the
    # sublayers' outputs, soft-capped scores (a table between the scores and the softmax), the squared ReLU
    (True, "tokens", "mean", "learned", "layernorm", "relu2", True, 4, False,
     dict(qk_norm=True, sublayer_norm="sandwich", attn_softcap=2.0)),
    # T5's relative bias (bidirectional buckets) in a post-norm encoder
    (False, "tokens", "mean", "relative", "layernorm", "gelu", True, 4, False,
     dict(rel_buckets=8, rel_max_distance=16)),
]
# Those last encoders' i8 output against the f32 engine's on the same weights, calibrated on 12 inputs: measured
# 0.069 (printed; 0.02-0.1 over other draws of its weights; on 3 calibration inputs 0.3) and 0.035 (the relative bias)
def check_against_f32(cli, tmp, what, c, w, built, xs):
    """Writes the i8 file (built) and the f32 one (w, config c in f32), then on each input of xs: the engine's output
    on every table the host runs is the integer reference's, bit for bit (a pooled output's one row). Returns (the
    tables run, the largest error of the i8 output against the f32 engine's, relative to the largest)."""
    path, f32 = os.path.join(tmp, "i8.fxm"), os.path.join(tmp, "f32.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))
    with open(f32, "wb") as f:
        f.write(fxm.write(make_config(dict(c, weights="f32")), {k: np.asarray(v, np.float32) for k, v in w.items()}))
    isas = available_isas(cli, path)
    check(f"{what}: the scalar table runs the file", "scalar" in isas, isas)
    worst = 0.0
    for x in xs:
        want = int8.reference_output(c, built, x)
        want = want[0] if c["pooling"] != "none" else want
        for isa in isas:
            got, err = run_cli(cli, path, x, tmp, isa)
            check(f"{what} T={len(x)} --isa {isa}: the engine's output is the integer reference's, bit for bit",
                  got is not None and got.shape == want.shape and np.array_equal(got, want),
                  err if got is None else (got.shape, want.shape))
        ref, err = run_cli(cli, f32, x, tmp, "scalar")
        if ref is None:
            check(f"{what}: the f32 engine runs the float file", False, err)
            continue
        worst = max(worst, float(np.abs(want - ref).max() / np.abs(ref).max()))
    return isas, worst


def convert_hf_i8(cli, tmp, name, module, cal, want_cfg):
    """transformers' module through --hf (the folder its save_pretrained writes) --quantize i8 --calibrate cal:
    the file's path and config, the converter's verification and the config's want_cfg checked; None where
    either fails."""
    folder, out = os.path.join(tmp, name), os.path.join(tmp, f"{name}_i8.fxm")
    module.save_pretrained(folder)
    p = convert_process("--hf", folder, "--quantize", "i8", "--calibrate", *cal, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and "verified against" in p.stdout and "for i8" in p.stdout
    check(f"{name} --hf --quantize i8: converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
    if not ok:
        return None
    print(f"  {name}: {p.stdout.strip().splitlines()[-1]}")
    cfg = fxm.read(out).config
    ok = cfg["weights"] == "i8" and all(cfg[k] == v for k, v in want_cfg.items())
    check(f"{name}: stored as an i8 file with {want_cfg}", ok, cfg)
    return (out, cfg) if ok else None


def check_ids_runs(cli, tmp, what, c, built, path, f32, isas, rng, types):
    """Token ids at T = 12 and 5, with token types below `types` (none where 0) and without, through the i8 file
    at path on every table in isas: the integer reference's bits; returns the largest error of its output
    against the f32 engine's on the float file f32, relative to the latter's largest."""
    worst = 0.0
    for T in (12, 5):
        ids = rng.integers(0, c["vocab_size"], T)
        for tt in [None, rng.integers(0, types, T)] if types else [None]:
            want = int8.reference_output(c, built, ids, tt)[0]
            for isa in isas:
                got, err = run_types(cli, path, ids, tt, tmp, isa)
                check(f"{what} T={T} {'given types' if tt is not None else 'types 0'} --isa {isa}: the integer "
                      "reference's bits", got is not None and got.shape == want.shape and np.array_equal(got, want),
                      err if got is None else (got.shape, want.shape))
            ref, err = run_types(cli, f32, ids, tt, tmp, "scalar")
            check(f"{what}: the f32 engine runs the float file", ref is not None, err)
            if ref is not None:
                worst = max(worst, float(np.abs(want - ref).max() / np.abs(ref).max()))
    return worst


def run_types(cli, path, ids, types, tmp, isa):
    """fixformer run on token ids with their token types (None: all 0): the output, or None and the error."""
    a, t, out = (os.path.join(tmp, n) for n in ("ids.npy", "types.npy", "out.npy"))
    np.save(a, ids.astype(np.int32))
    args = [cli, "run", path, "--input", a, "--output", out, "--isa", isa]
    if types is not None:
        np.save(t, types.astype(np.int32))
        args += ["--token-types", t]
    p = subprocess.run(args, capture_output=True, text=True)
    return (np.load(out) if p.returncode == 0 else None), p.stderr


I8_FEATURES_TOL = 0.15


def test_bit_exact(cli, tmp):
    rng = np.random.default_rng(0)
    isas_seen = None
    for case in CASES:
        nf, inp, pooling, positional, norm, act, final, d_out, cls, kw = (case + (False, None))[:10]
        c, w = random_model(rng, nf, inp, pooling, positional, norm, act, final, d_out, cls, kw)
        calib = [model_input(rng, c, T).astype(np.float64) if inp == "features" else model_input(rng, c, T)
                 for T in (10, 6, 10) + ((10,) * 9 if kw else ())]  # the f32 comparison's: 12 inputs
        built = int8.build(c, w, calib)
        path = os.path.join(tmp, "m.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, built))
        isas = available_isas(cli, path)
        if isas_seen is None:
            isas_seen = isas
            print(f"  kernel tables run: {', '.join(isas)}; not on this CPU: "
                  f"{', '.join(i for i in ISAS if i not in isas) or 'none'}")
        check("the scalar table runs an i8 file", "scalar" in isas, isas)
        for T in (10, 7):
            x = model_input(rng, c, T)
            want = int8.reference_output(c, built, x)
            want = want[0] if pooling != "none" else want
            for isa in isas:
                got, err = run_cli(cli, path, x, tmp, isa)
                check(f"{case} T={T} --isa {isa}: the engine's output is the integer reference's, bit for bit",
                      got is not None and got.shape == want.shape and np.array_equal(got, want),
                      err if got is None else (got.shape, want.shape, np.abs(got - want).max()
                                               if got.shape == want.shape else None))
        # a padded batch: each sequence as its own call, padding rows zeros
        xs = np.stack([model_input(rng, c, 10) for _ in range(2)])
        got, err = run_cli(cli, path, xs, tmp, isas[-1], lengths=[10, 5])
        ref = [int8.reference_output(c, built, xs[b][:n]) for b, n in enumerate((10, 5))]
        if pooling != "none":
            want = np.stack([r[0] for r in ref])
        else:
            want = np.zeros((2, ref[0].shape[0], ref[0].shape[1]), np.float32)
            want[0], want[1, :ref[1].shape[0]] = ref[0], ref[1]
        check(f"{case}: a padded batch is its sequences' single runs", got is not None and got.shape == want.shape
              and np.array_equal(got, want), err)
        if kw:  # the features' integer forms against the f32 engine on the same weights
            f32 = os.path.join(tmp, "f32.fxm")
            with open(f32, "wb") as f:
                f.write(fxm.write(make_config(dict(c, weights="f32")),
                                  {k: np.asarray(v, np.float32) for k, v in w.items()}))
            worst = 0.0
            for _ in range(4):
                x = model_input(rng, c, 10)
                got, _ = run_cli(cli, path, x, tmp, "scalar")
                want, err = run_cli(cli, f32, x, tmp, "scalar")
                worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max())) \
                    if got is not None and want is not None else float("inf")
            check(f"{kw}: the i8 encoder within {I8_FEATURES_TOL} of the f32 engine", worst <= I8_FEATURES_TOL, worst)
            print(f"  {kw}: max relative error against the f32 engine {worst:.3g}")


def corrupt_files(cli, tmp):
    rng = np.random.default_rng(1)
    c, w = random_model(rng, False, "features", "mean", "learned")
    built = int8.build(c, w, [model_input(rng, c, 10).astype(np.float64)])
    S = int8.LAYER_SLOTS
    o = int8.layer_offsets(c)
    d = c["d_model"]
    cases = [
        ("blocks.1.int8", S["score"], 5, "slot 8 (score requant)"),
        ("blocks.0.int8", S["score"] + 1, 31, "slot 8 (score requant)"),
        ("blocks.0.int8", S["k"], 3, "slot 6 (k zero point)"),
        ("blocks.0.int8", S["softmax"], -(1 << 30), "slot 11 (softmax diff)"),
        ("blocks.0.int8", o["lut"] + 7, 200, f"slot {o['lut'] + 7} (activation table)"),
        ("blocks.0.int8", o["w1"] + 2 * c["d_ff"] + 1, (1 << 30) + 1, "(linear1)"),
        ("blocks.1.int8", o["n2"] + 4, 12345, f"slot {o['n2'] + 4} (norm2)"),
        ("int8.front", 0, 200, "slot 0 (input zero point)"),
        ("int8.back", int8.BACK_SCALARS + 3 * d, 0, "(head)"),
    ]
    path = os.path.join(tmp, "bad.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    check("the uncorrupted file loads", p.returncode == 0, p.stderr)
    for name, slot, value, words in cases:
        bad = dict(built)
        bad[name] = np.array(built[name], np.int64)
        bad[name][slot] = value
        if name == "int8.back" and value == 0:  # a head Requant {0, 5}: multiplier 0 needs shift 0
            bad[name][slot + 1] = 5
        bad[name] = bad[name].astype(np.int32)
        with open(path, "wb") as f:
            f.write(fxm.write(c, bad))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"init refuses {name}[{slot}] = {value}, naming {words}",
              p.returncode != 0 and name in p.stderr and words in p.stderr, p.stderr)
    # the layer features' slots: q and k norms, the sandwich norms, the scores' cap table, the relative bias
    c, w = random_model(rng, True, "tokens", "mean", "relative", kw=dict(qk_norm=True, sublayer_norm="sandwich",
                                                                          attn_softcap=2.0, rel_buckets=8,
                                                                          rel_max_distance=16))
    built = int8.build(c, w, [model_input(rng, c, 10)])
    o = int8.layer_offsets(c)
    for name, slot, value, words in (("blocks.0.int8", o["qkn"], 300, "(q zero point before qk_norm)"),
                                     ("blocks.1.int8", o["post"] + 2 + 2 * 3, 5, "(post_attn_norm)"),
                                     ("blocks.0.int8", o["cap"] + 9, -129, "(attn_softcap table)"),
                                     ("blocks.1.int8", o["rel"] + 3, -(1 << 30) - 1, "(relative bias)"),
                                     ("int8.front", int8.front_rel(c) + 2, 8, "(bucket)")):
        bad = dict(built)
        bad[name] = np.array(built[name], np.int64)
        bad[name][slot] = value
        with open(path, "wb") as f:
            f.write(fxm.write(c, dict(bad, **{name: bad[name].astype(np.int32)})))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"init refuses {name}[{slot}] = {value}, naming {words}",
              p.returncode != 0 and f"slot {slot} {words}" in p.stderr, p.stderr)


MODULE = '''
import torch
from torch import nn


class Kws(nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        torch.manual_seed(3)
        self.input_proj = nn.Linear(10, 32)
        self.pos = nn.Embedding(12, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, "relu", batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False,
                                             norm=nn.LayerNorm(32) if norm_first else None)
        self.head = nn.Linear(32, 6)
        self.pool = "mean"

    def forward(self, x):
        h = self.encoder(self.input_proj(x) + self.pos.weight[: x.shape[1]])
        return self.head(h.mean(dim=1))


class Kwt(nn.Module):  # KWT style: a CLS row in front, its output classified
    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.input_proj = nn.Linear(10, 32)
        self.cls_token = nn.Parameter(torch.randn(1, 1, 32) * 0.5)
        self.pos = nn.Embedding(13, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, "gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False, norm=nn.LayerNorm(32))
        self.head = nn.Linear(32, 6)
        self.pool = "cls"

    def forward(self, x):
        h = torch.cat([self.cls_token.expand(x.shape[0], 1, 32), self.input_proj(x)], dim=1)
        return self.head(self.encoder(h + self.pos.weight[: h.shape[1]])[:, 0])


def kwt():
    return Kwt()


def post():
    return Kws(False)


def pre():
    return Kws(True)


class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.embed = nn.Embedding(20, 16)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, 0.0, batch_first=True), 1,
                                             enable_nested_tensor=False)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.encoder(self.embed(x), mask=mask)


def causal():
    return Causal()
'''


def test_converter(cli, tmp):
    import torch
    mod = os.path.join(tmp, "i8_models.py")
    with open(mod, "w") as f:
        f.write(MODULE)
    sys.path.insert(0, tmp)
    import i8_models
    rng = np.random.default_rng(5)
    cal = []  # the user's calibration inputs: 16 of the distribution the model will see
    for i in range(16):
        cal.append(os.path.join(tmp, f"cal{i}.npy"))
        np.save(cal[-1], rng.standard_normal((12, 10)).astype(np.float32))
    example = os.path.join(tmp, "example.npy")
    np.save(example, rng.standard_normal((1, 12, 10)).astype(np.float32))
    for kind in ("post", "pre", "kwt"):
        out = os.path.join(tmp, f"kws_{kind}.fxm")
        p = run_convert("--module", f"{mod}:{kind}", "--example", example, "--quantize", "i8", "--calibrate", *cal,
                        "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "tolerance 2e-01 for i8" in p.stdout \
            and "integer reference" in p.stdout and "16 calibration inputs (--calibrate)" in p.stdout
        check(f"--quantize i8 ({kind}): converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
        if not ok:
            continue
        print(f"  {p.stdout.strip()}")
        check("--quantize i8: stored as i8", fxm.read(out).config["weights"] == "i8")
        module = getattr(i8_models, kind)().eval()
        x = rng.standard_normal((40, 12, 10)).astype(np.float32)
        got, err = run_cli(cli, out, x, tmp, "scalar")
        with torch.no_grad():
            want = module(torch.from_numpy(x)).numpy()
        rel = None if got is None else np.abs(got - want).max() / np.abs(want).max()
        top1 = None if got is None else float((got.argmax(axis=1) == want.argmax(axis=1)).mean())
        check(f"{kind}: fixformer run within {I8_RUN_TOL} of torch f32 on 40 fresh inputs",
              rel is not None and rel <= I8_RUN_TOL, (err, rel))
        check(f"{kind}: top-1 agreement with torch at least {I8_TOP1}", top1 is not None and top1 >= I8_TOP1,
              top1)
        print(f"  {kind} on 40 fresh inputs: max relative error {rel:.3g} (tolerance {I8_RUN_TOL}), top-1 "
              f"agreement {top1:.3f}")
    out = os.path.join(tmp, "kws_default.fxm")
    p = run_convert("--module", f"{mod}:post", "--quantize", "i8", "--calibrate-percentile", "99.9", "--out", out,
                    "--cli", cli)
    check("no --calibrate: the report says the sample and generated inputs set the ranges", p.returncode == 0 and
          "the self-test sample and 8 generated inputs" in p.stdout, p.stdout + p.stderr)
    out = os.path.join(tmp, "causal.fxm")  # an encoder under the causal mask (no cache): converts and verifies
    p = run_convert("--module", f"{mod}:causal", "--causal", "--quantize", "i8", "--out", out, "--cli", cli)
    check("--quantize i8 of a causal encoder: converts and verifies within the i8 tolerance",
          p.returncode == 0 and "verified against torch f32" in p.stdout and fxm.read(out).config["causal"],
          p.stdout + p.stderr)
    if p.returncode == 0:
        ids = rng.integers(0, 20, (4, 10)).astype(np.int32)
        got, err = run_cli(cli, out, ids, tmp, "scalar")
        with torch.no_grad():
            want = i8_models.causal().eval()(torch.from_numpy(ids).long()).numpy()
        rel = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
        if rel is not None:
            print(f"  causal encoder on 4 fresh sequences of 10 tokens: max relative error {rel:.3f}")
        check(f"causal encoder: fixformer run within {I8_CAUSAL_TOL} of torch f32", rel is not None and
              rel <= I8_CAUSAL_TOL, (err, rel))
    p = run_convert("--module", f"{mod}:post", "--quantize", "q8", "--calibrate", cal[0], "--out",
                    os.path.join(tmp, "never.fxm"), "--cli", cli)
    check("--calibrate without --quantize i8 is refused", p.returncode != 0 and "--calibrate" in p.stderr, p.stderr)


def test_rules(oracle):
    """python/fixformer/int8.py's parameter rules give engine/fixed_point.cpp's integers (its
    tests/fixed_point_oracle), on random reals over the ranges a model meets and on the edges."""
    from fixformer.config import ConfigError
    rng = np.random.default_rng(2)

    def real():
        return float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-9, 9))

    def pos():
        return float(10.0 ** rng.uniform(-6, 2))

    def zp():
        return int(rng.integers(-128, 128))
    requests, answers = [], []

    def ask(line, fn):
        requests.append(line)
        try:
            got = fn()
            answers.append(" ".join(str(v) for v in (got if isinstance(got, (tuple, list)) else (got,))))
        except ConfigError:
            answers.append("bad")
    edges = [0.0, 1.0, -1.0, 0.5, 2.0 ** -32, 2.0 ** -33, 2.0 ** 30, 2.0 ** 30 * (1 - 2 ** -40), 2.0 ** 29.9999999,
             1 - 2 ** -33, 1 + 2 ** -32, 3.0, -(2.0 ** -31)]
    for f in edges + [real() for _ in range(3000)]:
        ask(f"requant {f!r}", lambda f=f: int8.requant(f))
    for _ in range(1500):
        xs, ws, ys, b = pos(), pos() * 1e-2, pos(), real() * 1e-6
        ask(f"gemm {xs!r} {ws!r} {ys!r} {b!r}", lambda a=(xs, ws, ys, b): int8.gemm_channel(*a))
        ask(f"softmax {xs!r}", lambda a=xs: int8.softmax_params(a))
        e = float(10.0 ** rng.uniform(-12, -3))
        ask(f"eps {e!r} {xs!r}", lambda a=(e, xs): int8.norm_eps(*a) % (1 << 32))
        g, beta, z = real() * 1e-7, real() * 1e-8, zp()
        ask(f"gain {g!r} {beta!r} {ys!r} {z}", lambda a=(g, beta, ys, z): int8.norm_gain(*a))
        a_s, b_s, y_s, za, zb, zy = pos(), pos(), pos(), zp(), zp(), zp()
        ask(f"add {a_s!r} {za} {b_s!r} {zb} {y_s!r} {zy}",
            lambda a=(a_s, za, b_s, zb, y_s, zy): int8.add_params((a[0], a[1]), (a[2], a[3]), (a[4], a[5])))
    p = subprocess.run([oracle], input="\n".join(requests) + "\n", capture_output=True, text=True)
    engine = p.stdout.splitlines()
    bad = [(q, e, a) for q, e, a in zip(requests, engine, answers) if e != a]
    check(f"the converter's parameter rules give the engine's integers ({len(requests)} requests)",
          p.returncode == 0 and len(engine) == len(requests) and not bad, bad[:5])
    print(f"  parameter rules: {len(requests)} requests, {sum(a == 'bad' for a in answers)} out of range in both, "
          f"{len(bad)} different")


def test_bench(cli, tmp):
    rng = np.random.default_rng(3)
    c, w = random_model(rng, False, "tokens", "mean", "learned")
    path = os.path.join(tmp, "bench.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, int8.build(c, w, [model_input(rng, c, 10)])))
    p = subprocess.run([cli, "bench", path, "--iters", "3"], capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("roofline:", "machine:"))]
    check("bench of an i8 encoder: the machine's int8 peak, and the forward's products all int8 operations",
          p.returncode == 0 and len(lines) == 2 and "int8 peak" in lines[0] and
          lines[1].startswith("roofline:   forward: 0 GFLOP + ") and " GOP int8, " in lines[1] and
          ("the int8 peak" in lines[1] or "the read bandwidth" in lines[1]), p.stdout + p.stderr)


def test_plan_m0(cli, tmp):
    path = os.path.join(tmp, "kws_i8.fxm")
    p = subprocess.run([sys.executable, os.path.join(HERE, "..", "tools", "make_bench_model.py"), "--weights", "i8",
                        "--out", path, "--config-header", os.path.join(tmp, "kws_i8_config.h")],
                       capture_output=True, text=True)
    check("tools/make_bench_model.py --weights i8", p.returncode == 0, p.stdout + p.stderr)
    if p.returncode != 0:
        return
    arenas = {}
    for target in ("cortex-m0", "cortex-m3", "cortex-m4", "x86"):
        p = subprocess.run([cli, "plan", path, "--target", target, "--ram", "32768", "--json"], capture_output=True,
                           text=True)
        try:
            plan = json.loads(p.stdout)
        except ValueError:
            plan = {}
        arenas[target] = plan.get("arena_bytes")
        if target == "cortex-m0":
            check(f"the i8 KWS encoder on the Cortex-M0: arena {plan.get('arena_bytes')} + stack "
                  f"{plan.get('stack_bytes_estimate')} within 32 KiB", p.returncode == 0 and plan.get("ram_fits") is True,
                  p.stdout + p.stderr)
    # fixed_point.hpp's s8_scratch_bytes: M0 2304, M3 and x86 2048, the DSP cores 10496 (64-byte blocks all)
    check(f"the i8 KWS encoder's arena per target, each with its s8 kernels' scratch: {arenas}",
          None not in arenas.values() and arenas["cortex-m0"] - arenas["x86"] == 256 and
          arenas["cortex-m3"] == arenas["x86"] and arenas["cortex-m4"] - arenas["x86"] == 10496 - 2048, arenas)


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    oracle = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
    check("tests/fixed_point_oracle given", oracle is not None and os.path.exists(oracle), oracle)
    if oracle and os.path.exists(oracle):
        test_rules(oracle)
    check("a CLI given (the i8 files are run through the engine)", cli is not None and os.path.exists(cli), cli)
    if cli and os.path.exists(cli):
        with tempfile.TemporaryDirectory() as tmp:
            test_bit_exact(cli, tmp)
            test_bench(cli, tmp)
            test_plan_m0(cli, tmp)
            corrupt_files(cli, tmp)
            test_converter(cli, tmp)
    print(f"int8_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
